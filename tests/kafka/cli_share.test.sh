#!/usr/bin/env bash
# The kconsume CLI in a share group (--share GROUP, %D) against the suite's share cluster
# (tests/run-suite sets KC_SHARE_*): a 2-partition topic of 200 records.
#  1. --share G -c 40 --share-verdict release: 40 lines "partition offset 1"; every record
#     that member acquired and did not print is released too, not accepted;
#  2. --share G -c 200: all 200 records, each once; the 40 printed and released before come back
#     with %D 2, and nothing comes back with %D 1 that step 1 printed;
#  3. --share G again for 4 s: nothing left (step 2 accepted everything);
#  4. refusals: --share with -G, -e, -o, and --share-verdict without --share exit 2.
# kc-test-label: share
set -euo pipefail
# shellcheck source=../support/share_harness.sh
source "${KC_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/support/share_harness.sh"
cli=$KC_BUILD_DIR/kconsume
[[ -x $cli ]] || fail "$cli is not built"
share_topic cli-share 2 200 8

# --- 1. released ---------------------------------------------------------------------------
timeout 90 "$cli" -b "$b" --share "$group" -t "$topic" -c 40 --share-verdict release \
    -f '%p %o %D\n' >"$tmp/one" 2>"$tmp/one.err" || fail "step 1 exited $? ($(cat "$tmp/one.err"))"
[[ $(wc -l <"$tmp/one") -eq 40 ]] || fail "step 1 printed $(wc -l <"$tmp/one") lines, not 40"
awk '$3 != 1 { bad = 1 } END { exit bad }' "$tmp/one" || fail "step 1: a delivery count is not 1"

# --- 2. everything, the released ones with count 2 -----------------------------------------
timeout 90 "$cli" -b "$b" --share "$group" -t "$topic" -c 200 -f '%p %o %D\n' >"$tmp/two" \
    2>"$tmp/two.err" || fail "step 2 exited $? ($(cat "$tmp/two.err"))"
[[ $(wc -l <"$tmp/two") -eq 200 ]] || fail "step 2 printed $(wc -l <"$tmp/two") lines, not 200"
[[ $(awk '{ print $1, $2 }' "$tmp/two" | sort -u | wc -l) -eq 200 ]] ||
    fail "step 2 printed a record twice"
while read -r p o d; do
    grep -qx "$p $o 2" "$tmp/two" || fail "record $p/$o, released in step 1, is not back with %D 2"
done <"$tmp/one"
# step 1's member also released what it acquired and did not print: those come back with 2 too,
# so no record shows count 1 in step 2 that step 1 printed, and each count is 1 or 2
awk '$3 != 1 && $3 != 2 { bad = 1 } END { exit bad }' "$tmp/two" ||
    fail "step 2: a delivery count is neither 1 nor 2"

# --- 3. nothing left -----------------------------------------------------------------------
rc=0
timeout 4 "$cli" -b "$b" --share "$group" -t "$topic" -f '%p %o %D\n' >"$tmp/three" \
    2>"$tmp/three.err" || rc=$?
[[ $rc -eq 124 ]] || fail "step 3 exited $rc before the timeout ($(cat "$tmp/three.err"))"
[[ ! -s $tmp/three ]] || fail "step 3 got records back: $(head -3 "$tmp/three")"

# --- 4. refusals ---------------------------------------------------------------------------
for args in "--share $group -G $group" "--share $group -e" "--share $group -o beginning" \
    "-G $group --share-verdict reject"; do
    rc=0
    # shellcheck disable=SC2086
    "$cli" -b "$b" -t "$topic" $args >/dev/null 2>"$tmp/err" || rc=$?
    [[ $rc -eq 2 ]] || fail "'$args' exited $rc, not 2"
    [[ -s $tmp/err ]] || fail "'$args' said nothing on stderr"
done
echo "cli_share: ok"
