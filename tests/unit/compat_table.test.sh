#!/usr/bin/env bash
# README.md's compatibility table is tests/compat/table.py's output from tests/compat/results.txt
# (the result lines of the last make test-compat), never edited by hand; and table.py itself:
# one column per version oldest first, FAIL for a failed feature, n/a kept, a later line for the
# same (version, feature) winning, the wall-time row, and a file without the markers refused.
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
gen=$src/tests/compat/table.py
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kc-compat-table.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The README's table against a regeneration from the committed results.
cp "$src/README.md" "$tmp/README.md"
python3 "$gen" "$src/tests/compat/results.txt" --readme "$tmp/README.md" || fail "table.py failed"
diff -u "$src/README.md" "$tmp/README.md" >&2 ||
    fail "README.md's compatibility table is not table.py's output from tests/compat/results.txt"

cat >"$tmp/r.txt" <<'R'
some ctest noise
compat version=4.4.0 feature=manual_assign_seek_commit result=pass seconds=10
compat version=4.4.0 feature=kip848_group result=pass seconds=50
compat version=4.4.0 feature=wall result=pass seconds=100
compat version=10.0.0 feature=manual_assign_seek_commit result=fail seconds=3
compat version=10.0.0 feature=kip848_group result=pass seconds=5
compat version=2.8.2 feature=manual_assign_seek_commit result=fail seconds=9
compat version=2.8.2 feature=kip848_group result=n/a seconds=0
compat version=2.8.2 feature=manual_assign_seek_commit result=pass seconds=11
compat version=2.8.2 feature=wall result=pass seconds=90
R
python3 "$gen" "$tmp/r.txt" >"$tmp/t.md" || fail "table.py failed on the sample"
cat >"$tmp/want.md" <<'W'
| feature | 2.8.2 | 4.4.0 | 10.0.0 |
|---|---|---|---|
| manual assignment, seek, commit, committed | pass | pass | FAIL |
| KIP-848 group (churn, kill -9) | n/a | pass | pass |
| wall time (boot, features, down) | 90 s | 100 s |  |
W
diff -u "$tmp/want.md" "$tmp/t.md" >&2 || fail "table.py's table of the sample differs"

printf 'no markers here\n' >"$tmp/plain.md"
rc=0
python3 "$gen" "$tmp/r.txt" --readme "$tmp/plain.md" 2>/dev/null || rc=$?
((rc == 2)) || fail "a file without the markers: exit $rc, expected 2"
printf 'x\n' >"$tmp/empty.txt"
rc=0
python3 "$gen" "$tmp/empty.txt" >/dev/null 2>&1 || rc=$?
((rc == 1)) || fail "results without a result line: exit $rc, expected 1"
echo "ok: README table regenerated from tests/compat/results.txt; sample table as expected"
