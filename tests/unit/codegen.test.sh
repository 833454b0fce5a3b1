#!/usr/bin/env bash
# The committed generated code (io/proto/*.gen.[ch], tests/unit/proto_fill.gen.inc) is exactly
# what io/proto/gen/generate.py makes from the pinned schemas: it regenerates into a scratch
# folder and compares, so a hand edit of a .gen. file, or a generator change committed without
# `make codegen`, fails here with the diff.
#
# Inputs: the schema release's kafka-clients jar (fetch-kafka --schemas) and the share-group
# release's (fetch-kafka --share), which `make test` resolves before the suites (cached in
# ~/.cache/kconsume), and java for the error table. This test never reaches the network itself:
# without a jar it fails and says how to get it.
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v java >/dev/null || fail "java is not installed (tests/testkit/install-deps installs it)"
libs=$("$src/tests/testkit/fetch-kafka" --schemas --cached) ||
    fail "the schema release's kafka-clients jar is missing: run tests/testkit/fetch-kafka --schemas (make test does)"
share_libs=$("$src/tests/testkit/fetch-kafka" --share --cached) ||
    fail "the share-group release's jar is missing: run tests/testkit/fetch-kafka --share (make test does)"

out=$(mktemp -d "${TMPDIR:-/tmp}/kc-codegen.XXXXXX")
trap 'rm -rf "$out"' EXIT
python3 "$src/io/proto/gen/generate.py" --out "$out" --libs "$libs" --share-libs "$share_libs" ||
    fail "io/proto/gen/generate.py failed"

# Compare the file sets first (a stale committed file the generator no longer makes is an error
# too), then every file's bytes.
list() { (cd "$1" && ls io/proto/*.gen.c io/proto/*.gen.h tests/unit/*.gen.inc 2>/dev/null | sort); }
if ! diff <(list "$src") <(list "$out") >"$out/files.diff"; then
    echo "FAIL: the generated file sets differ (< committed, > generator output):" >&2
    cat "$out/files.diff" >&2
    exit 1
fi
bad=0
for f in $(list "$out"); do
    if ! cmp -s "$src/$f" "$out/$f"; then
        echo "FAIL: $f differs from what the generator makes (run make codegen; never edit it):" >&2
        diff -u "$src/$f" "$out/$f" | head -40 >&2 || true
        bad=1
    fi
done
((bad == 0)) || exit 1
echo "codegen: $(list "$out" | wc -l) generated files match io/proto/gen/generate.py's output"
