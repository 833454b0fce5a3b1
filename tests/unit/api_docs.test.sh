#!/usr/bin/env bash
# The API reference `make docs` builds (docs/api/Doxyfile) documents the whole public header:
#  - Doxygen reads include/kconsume.h through docs/api/doc-comments without a warning, and every
#    KC_API function, kc_ typedef and enum has a description (docs/api/check.py);
#  - the check can fail: the same header with the comment above kc_version removed is reported.
# Needs doxygen (tests/testkit/install-deps).
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v doxygen >/dev/null || fail "doxygen is missing (tests/testkit/install-deps installs it)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$src"

# build OUT HEADER: the reference of HEADER into OUT (Doxyfile's settings, this output).
build() {
    mkdir -p "$1"
    { cat docs/api/Doxyfile; echo "INPUT = $2"; echo "OUTPUT_DIRECTORY = $1"; echo "WARN_LOGFILE = $1/warnings.log"; } |
        doxygen - >"$1/doxygen.out" 2>&1 || { cat "$1/doxygen.out"; fail "doxygen failed on $2"; }
}

build "$work/ref" include/kconsume.h
python3 docs/api/check.py include/kconsume.h "$work/ref/xml" "$work/ref/warnings.log" ||
    fail "the API reference leaves something out (above)"
[[ -s $work/ref/html/index.html ]] || fail "no HTML index"
grep -q 'kc_subscribe' "$work/ref/html/kconsume_8h.html" || fail "kc_subscribe is not in the HTML reference"
echo "ok   the API reference documents every public function and type"

# The filter keeps every line where it was (Doxygen's line numbers are the header's).
[[ $(docs/api/doc-comments include/kconsume.h | wc -l) == $(wc -l <include/kconsume.h) ]] ||
    fail "docs/api/doc-comments changed the number of lines"
echo "ok   the filter keeps the header's line numbers"

mkdir -p "$work/bad"
awk '/^KC_API const char \*kc_version\(void\);/ { sub(/^.*$/, "", prev) } NR > 1 { print prev } { prev = $0 } END { print prev }' \
    include/kconsume.h >"$work/bad/kconsume.h"
! grep -q 'Library version as' "$work/bad/kconsume.h" || fail "the negative copy still documents kc_version"
build "$work/badref" "$work/bad/kconsume.h"
out=$(python3 docs/api/check.py "$work/bad/kconsume.h" "$work/badref/xml" "$work/badref/warnings.log") &&
    fail "check.py accepted a header with kc_version undocumented"
grep -q '^kc_version: in the API reference without a description' <<<"$out" ||
    fail "check.py did not name kc_version: $out"
echo "ok   an undocumented function is reported (kc_version)"
