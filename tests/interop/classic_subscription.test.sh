#!/usr/bin/env bash
# Interop: the JoinGroup protocol metadata of kconsume's classic member (subscription with each
# assignor's user data: cooperative-sticky's generation, eager sticky's previous assignment)
# equals, byte for byte, what Java's ConsumerCoordinator sends for the same member state.
# Needs: javac/java, the Kafka jars (tests/testkit/fetch-kafka), KC_BUILD_DIR with classic_sub.
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${KC_BUILD_DIR:?KC_BUILD_DIR must name the CMake build dir (ctest sets it)}
here="$src/tests/interop"
tool="$build/tests/interop/classic_sub"
[[ -x "$tool" ]] || { echo "missing $tool (build the tree first)" >&2; exit 1; }
libs=$("$src/tests/testkit/fetch-kafka")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

javac -d "$work/classes" -cp "$libs/*" "$here/ClassicSubscriptionInterop.java"
java -Xmx256m -cp "$work/classes:$libs/*" ClassicSubscriptionInterop \
    "$here/classic_subscription.cases" >"$work/java.hex"
"$tool" "$here/classic_subscription.cases" >"$work/c.hex"
cases=$(grep -cv -e '^#' -e '^$' "$here/classic_subscription.cases")
[[ $(wc -l <"$work/java.hex") -eq "$cases" ]] || { echo "Java printed the wrong count" >&2; exit 1; }
if ! diff -u "$work/java.hex" "$work/c.hex"; then
    echo "FAIL: kconsume's JoinGroup metadata differs from Java's (- Java, + kconsume)" >&2
    exit 1
fi
echo "classic subscription: $cases scenarios byte-identical to Java"
