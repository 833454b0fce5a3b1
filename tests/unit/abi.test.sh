#!/usr/bin/env bash
# The shared library's ABI is the one kept in abi/libkconsume.so.<SOVERSION>.abi, and only the
# public API leaves the library:
#  - every symbol libkconsume.so exports is a kc_* function of include/kconsume.h, under the
#    version node of cmake/kconsume.map, and every KC_API function of the header is exported;
#  - abidiff (libabigail) finds no change against the baseline. An incompatible change (a struct
#    member moved, a parameter changed) fails with the advice to raise the SOVERSION; a
#    compatible one (a function added, a member added at the end of a struct whose first member
#    is `size`, abi/growth.py) fails until the baseline is regenerated with
#    `make abi-baseline` and committed, so every ABI change is a reviewed diff of abi/.
#    The structs kconsume allocates and the application only reads (kc_event_t, listed in
#    abi/growable) grow at the end the same way.
# Needs KC_BUILD_DIR (a build with -g: build/asan) and abidiff (tests/testkit/install-deps).
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${KC_BUILD_DIR:?KC_BUILD_DIR is required}
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v abidiff >/dev/null || fail "abidiff is missing (tests/testkit/install-deps installs abigail-tools)"

lib=$build/libkconsume.so
[[ -f $lib ]] || fail "$lib is missing"
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
[[ $soname =~ ^libkconsume\.so\.([0-9]+)$ ]] || fail "unexpected SONAME '$soname'"
sover=${BASH_REMATCH[1]}
node=$(sed -n 's/^\(KCONSUME_[0-9]*\) {.*/\1/p' "$src/cmake/kconsume.map" | tail -1)
[[ $node == "KCONSUME_$sover" ]] ||
    fail "cmake/kconsume.map's newest node is '$node', the SOVERSION is $sover: add KCONSUME_$sover"

# Exported symbols against the header.
# Every defined dynamic symbol but the version node itself; a variable (DO) is never public API.
defined=$(objdump -T "$lib" | awk '$4 != "*UND*" && $4 != "*ABS*" && ($2 == "g" || $2 == "w")')
data=$(awk '$3 != "DF" {print $NF}' <<<"$defined" || true)
[[ -z $data ]] || fail "exported data (only kc_* functions may leave the library): $data"
exported=$(awk '{print $(NF-1) " " $NF}' <<<"$defined" | sort)
bad=$(awk '$2 !~ /^kc_/ || $1 !~ /^KCONSUME_/' <<<"$exported" || true)
[[ -z $bad ]] || fail "exported outside kc_* or without a version node: $bad"
declared=$(sed -n 's/^KC_API[^(]*[ *]\(kc_[a-z0-9_]*\)(.*/\1/p' "$src/include/kconsume.h" | sort -u)
missing=$(comm -23 <(echo "$declared") <(awk '{print $2}' <<<"$exported" | sort -u))
[[ -z $missing ]] || fail "declared KC_API in kconsume.h but not exported: $missing"
extra=$(comm -13 <(echo "$declared") <(awk '{print $2}' <<<"$exported" | sort -u))
[[ -z $extra ]] || fail "exported but not declared KC_API in kconsume.h: $extra"
echo "exported: $(wc -l <<<"$exported") kc_* functions, all declared, node KCONSUME_$sover"

base=$src/abi/libkconsume.so.$sover.abi
[[ -f $base ]] || fail "no baseline $base for SOVERSION $sover: make abi-baseline writes it"
# The baseline holds the public types only (abi/dump); the library is dumped the same way, so
# the structs behind the opaque handles are declarations on both sides and only the public ABI
# can differ. Members added at the end of a size-versioned struct (first member `size`, e.g.
# kc_callbacks_t) or of one kconsume allocates (abi/growable) are compatible: abi/growth.py cuts
# them off before the comparison and names them.
tmp=$(mktemp -d /tmp/kc-abi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$src/abi/dump" "$lib" "$tmp/new.abi"
grown=$(python3 "$src/abi/growth.py" "$base" "$tmp/new.abi" "$tmp/cmp.abi")
set +e
report=$(abidiff "$base" "$tmp/cmp.abi" 2>&1)
rc=$?
set -e
if (( rc == 0 )); then
    [[ -z $grown ]] && { echo "abidiff: no change against ${base#$src/}"; exit 0; }
    fail "the ABI grew compatibly against ${base#$src/} ($grown): run make abi-baseline and" \
        "commit the new baseline with the change"
fi
echo "$report" >&2
(( rc & 3 )) && fail "abidiff failed (exit $rc)"
if (( rc & 8 )) || grep -qE '(^|[^0-9])[1-9][0-9]* (Changed|Removed)' <<<"$report"; then
    fail "an INCOMPATIBLE ABI change against ${base#$src/} (a function removed or changed, a" \
        "public struct's layout changed): raise the SOVERSION (project VERSION's major in" \
        "CMakeLists.txt), add its node to cmake/kconsume.map and run make abi-baseline; or undo it"
fi
fail "the ABI grew compatibly against ${base#$src/} (functions added${grown:+; $grown}): run" \
    "make abi-baseline and commit the new baseline with the change"
