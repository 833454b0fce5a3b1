#!/usr/bin/env bash
# abi/growth.py, the rule that lets a size-versioned public struct grow at its end, on four small
# libraries built here with the same dump as abi/ (abi/dump's abidw options):
#  - a member added at the end of a struct whose first member is `size`: cut back, abidiff finds
#    no change, and the growth is named;
#  - the same struct with two members swapped: left alone, abidiff reports the change;
#  - a member added at the end of a struct without a leading `size`: left alone, reported;
#  - a member added in the middle of a size-versioned struct: left alone, reported;
#  - a struct without `size` that the list of library-allocated structs names (abi/growable's
#    role): growth at the end accepted, a member inserted before the end still reported.
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v abidw >/dev/null || fail "abidw is missing (tests/testkit/install-deps installs abigail-tools)"
tmp=$(mktemp -d /tmp/kc-abigrowth.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

lib() { # lib NAME STRUCT-BODY: a library with one function taking the struct, and its dump
    mkdir -p "$tmp/$1"
    printf 'typedef struct cb { %s } cb_t;\nint kc_new(const cb_t *c);\n' "$2" >"$tmp/$1/k.h"
    printf '#include "k.h"\nint kc_new(const cb_t *c) { return c != 0; }\n' >"$tmp/$1/k.c"
    cc -g -shared -fPIC -o "$tmp/$1/lib.so" "$tmp/$1/k.c"
    abidw --headers-dir "$tmp/$1" --drop-private-types --no-corpus-path --no-show-locs \
        --drop-undefined-syms --no-elf-needed --out-file "$tmp/$1.abi" "$tmp/$1/lib.so"
}
verdict() { # verdict BASE NEW: "same <growth>" or "changed"
    local grown
    grown=$(python3 "$src/abi/growth.py" "$tmp/$1.abi" "$tmp/$2.abi" "$tmp/$2.cmp.abi" "${3:-$tmp/none}")
    if abidiff "$tmp/$1.abi" "$tmp/$2.cmp.abi" >/dev/null; then echo "same $grown"; else echo changed; fi
}

lib base 'unsigned long size; void (*a)(void *); void *opaque;'
lib grown 'unsigned long size; void (*a)(void *); void *opaque; void (*b)(void *);'
lib swapped 'unsigned long size; void *opaque; void (*a)(void *);'
lib middle 'unsigned long size; void (*b)(void *); void (*a)(void *); void *opaque;'
lib plain 'void (*a)(void *); void *opaque;'
lib plain_grown 'void (*a)(void *); void *opaque; void (*b)(void *);'

v=$(verdict base grown)
[[ $v == "same grown at the end: cb (+b)" ]] || fail "growth at the end: '$v'"
v=$(verdict base swapped)
[[ $v == changed ]] || fail "swapped members: '$v'"
v=$(verdict base middle)
[[ $v == changed ]] || fail "a member inserted in the middle: '$v'"
v=$(verdict plain plain_grown)
[[ $v == changed ]] || fail "growth of a struct without a leading size: '$v'"
echo "cb # listed" >"$tmp/listed"
lib plain_inserted 'void (*a)(void *); void (*b)(void *); void *opaque;'
v=$(verdict plain plain_grown "$tmp/listed")
[[ $v == "same grown at the end: cb (+b)" ]] || fail "growth of a listed struct: '$v'"
v=$(verdict plain plain_inserted "$tmp/listed")
[[ $v == changed ]] || fail "a member inserted into a listed struct: '$v'"
echo "abi growth rule: 6 cases as expected"
