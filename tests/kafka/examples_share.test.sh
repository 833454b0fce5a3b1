#!/usr/bin/env bash
# examples/share_work_queue against the suite's share cluster (tests/run-suite sets KC_SHARE_*):
# two members of one share group work through 300 jobs on a 2-partition topic (values 0..299,
# the group reading from the earliest record). Every job gets exactly the verdicts its value
# asks for, across both members:
#  - a multiple of 7 (43 jobs) is rejected once and never handed out again;
#  - another multiple of 10 (25 jobs) is released at its first delivery and done at its second
#    (delivery count 2), or done at once when its first delivery never reached a callback (the
#    library released it unseen);
#  - every other job (232) is done once.
# kc-test-label: share
set -euo pipefail
# shellcheck source=../support/share_harness.sh
source "${KC_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/support/share_harness.sh"
ex=$KC_BUILD_DIR/share_work_queue
[[ -x $ex ]] || fail "$ex is not built"
share_topic share-jobs 2 300 3 keyed # values 000..299

for m in 1 2; do
    "$ex" "$b" "$group" "$topic" 120 >"$tmp/m$m" 2>"$tmp/m$m.err" &
    pids+=($!)
done
# Every job settled: 232 + 25 done, 43 rejected (or 90 s).
for _ in $(seq 900); do
    (($(cat "$tmp/m1" "$tmp/m2" | grep -cE '^(done|reject) ') >= 300)) && break
    sleep 0.1
done
sleep 2 # anything delivered twice by mistake would show now
for p in "${pids[@]}"; do kill -INT "$p"; done
for m in 1 2; do wait "${pids[m - 1]}" || fail "member $m exited $? ($(cat "$tmp/m$m.err"))"; done
pids=()
cat "$tmp/m1" "$tmp/m2" >"$tmp/all"
echo "member 1: $(wc -l <"$tmp/m1") verdicts, member 2: $(wc -l <"$tmp/m2")"

# What each value saw, against its job's rule: verdicts in delivery order as VERDICT@COUNT. A
# record the library released without delivering it (revoked while queued) comes back with a
# higher count and no verdict for the lost delivery, so counts are checked as the rule allows.
awk '{ v = $5 + 0; print v, $1, $4 }' "$tmp/all" | sort -n -k1,1 -k3,3 |
    awk '{ seen[$1] = seen[$1] (seen[$1] == "" ? "" : ",") $2 "@" $3 }
         END {
             bad = 0
             for (v = 0; v < 300; v++) {
                 s = seen[v]
                 if (v % 7 == 0) ok = s ~ /^reject@[0-9]+$/
                 else if (v % 10 == 0) ok = s == "retry@1,done@2" || s ~ /^done@([2-9]|[1-9][0-9]+)$/
                 else ok = s ~ /^done@[0-9]+$/
                 if (!ok) { print "value " v ": " (s == "" ? "nothing" : s); bad++ }
             }
             for (v in seen) if (v + 0 < 0 || v + 0 >= 300) { print "unexpected value " v; bad++ }
             exit bad > 0
         }' >"$tmp/diff" || fail "verdicts differ from the jobs' values:
$(head -20 "$tmp/diff")"
later=$(awk '$1 != "retry" && $4 > 1' "$tmp/all" | wc -l)
retried=$(grep -c '^retry ' "$tmp/all" || true)
((retried > 0)) || fail "no job was released for another delivery"
echo "ok   43 rejected once, 257 done once ($retried after a release at delivery 1; $later verdicts at a delivery past the first)"
