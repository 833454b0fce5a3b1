#!/usr/bin/env bash
# Interop: the consumer-protocol payloads kconsume's generated codec writes must equal, byte for
# byte, what Java's ConsumerProtocol (and StickyAssignor's user-data serializer) write for the
# same input, and the C decoder must read Java's bytes back to the same input.
# Needs: javac/java, the Kafka jars (tests/testkit/fetch-kafka), KC_BUILD_DIR with cp_encode.
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${KC_BUILD_DIR:?KC_BUILD_DIR must name the CMake build dir (ctest sets it)}
here="$src/tests/interop"
cp_encode="$build/tests/interop/cp_encode"
[[ -x "$cp_encode" ]] || { echo "missing $cp_encode (build the tree first)" >&2; exit 1; }
libs=$("$src/tests/testkit/fetch-kafka")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

javac -d "$work/classes" -cp "$libs/*" "$here/ConsumerProtocolInterop.java"
java -Xmx256m -cp "$work/classes:$libs/*" ConsumerProtocolInterop "$here/consumer_protocol.cases" \
    >"$work/java.hex"
"$cp_encode" encode "$here/consumer_protocol.cases" >"$work/c.hex"

cases=$(grep -cv -e '^#' -e '^$' "$here/consumer_protocol.cases")
java_lines=$(wc -l <"$work/java.hex")
if [[ "$java_lines" -ne "$cases" ]]; then
    echo "Java produced $java_lines lines for $cases cases" >&2
    exit 1
fi
if ! diff -u "$work/java.hex" "$work/c.hex"; then
    echo "FAIL: kconsume's encoding differs from Java's (- Java, + kconsume)" >&2
    exit 1
fi
echo "encode: $cases cases byte-identical to Java"

# Decode Java's bytes with the C decoder: must give back exactly the case lines.
"$cp_encode" decode <"$work/java.hex" >"$work/decoded"
grep -v -e '^#' -e '^$' "$here/consumer_protocol.cases" >"$work/expected"
if ! diff -u "$work/expected" "$work/decoded"; then
    echo "FAIL: decoding Java's bytes did not give the input back (- case, + decoded)" >&2
    exit 1
fi
echo "decode: $cases Java encodings decoded to their inputs"
