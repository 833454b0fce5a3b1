#!/usr/bin/env bash
# kc-memory-broker's group coordinators against real clients (needs no cluster):
#  (a) the kconsume CLI in a KIP-848 group (its default) and in a classic group reads every
#      record once; its commits are kept per group (the same group again reads nothing, another
#      group everything);
#  (b) Java's ConsumerPerformance (classic, as make perf runs it), Java's console consumer with
#      group.protocol=consumer, and kcat's balanced consumer (librdkafka, classic) read it all;
#  (c) two kconsume members of one classic group starting together (initial rebalance delay):
#      each partition read by exactly one of them, every record exactly once;
#  (d) two kconsume members of one KIP-848 group, the second joining while the first reads:
#      partitions move by revocation, every record exactly once, both members read some.
# The broker's request counts prove which group APIs were used.
set -euo pipefail
SRC=${KC_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${KC_BUILD_DIR:-$SRC/build/asan}
MB=$BUILD/tests/testkit/kc-memory-broker
CLI=$BUILD/kconsume
for b in "$MB" "$CLI"; do [[ -x $b ]] || { echo "FAIL: $b not built"; exit 1; }; done
command -v kcat >/dev/null || { echo "SKIP: kcat not installed"; exit 77; }
KAFKA_LIBS=$("$SRC/tests/testkit/fetch-kafka")
# shellcheck source=../support/mb_harness.sh
source "$SRC/tests/support/mb_harness.sh"
# stop PID NAME: SIGTERM; the broker must exit 0 with no sanitizer report.
stop() {
    local rc=0
    kill -TERM "$1"
    wait "$1" || rc=$?
    grep -qE 'Sanitizer|runtime error' "$WORK/$2.err" && rc=sanitizer
    check "broker $2 exit" 0 "$rc"
}
# once FILES...: "partition offset" lines; prints "N DUPS" (distinct pairs, pairs seen twice).
once() { cat "$@" | awk '{ n[$1 " " $2]++ } END { d = 0; for (k in n) if (n[k] > 1) d++; print length(n), d }'; }
parts_of() { awk '{ print $1 }' "$1" | sort -un | tr '\n' ' ' | sed 's/ $//'; }
kc() { timeout 60 "$CLI" -b "$BS" -t G -f '%p %o\n' -q "$@"; }

ALL=$((4 * 2500))
# lz4 here: Java's reader accepts only independent LZ4 blocks (what Kafka's producer writes).
start mb --topic G --partitions 4 --records 2500 --size 20 --batch-records 100 --compression lz4 \
    --stats-file "$WORK/stats"
MB_PID=$PID

# (a) kconsume, KIP-848 then classic; commits per group.
# -c stops at the count; -e (below) stops at the ends learned before joining.
kc -G a848 -o beginning -c "$ALL" >"$WORK/a848" 2>"$WORK/a848.err" || echo "kconsume a848 exited $?"
check "kconsume KIP-848 group: distinct records, duplicates" "$ALL 0" "$(once "$WORK/a848")"
kc -G a848 -o beginning -e >"$WORK/a848-again" 2>"$WORK/a848-again.err" || echo "kconsume a848 (again) exited $?"
check "kconsume KIP-848 group again: committed at the end, nothing left" 0 "$(wc -l <"$WORK/a848-again")"
kc -G aclassic -o beginning -c "$ALL" -X group.protocol=classic >"$WORK/acl" 2>"$WORK/acl.err" ||
    echo "kconsume aclassic exited $?"
check "kconsume classic group (another group id: own offsets)" "$ALL 0" "$(once "$WORK/acl")"

# (b) Java (classic and KIP-848) and librdkafka (classic).
timeout 60 java -Xmx256m -cp "$KAFKA_LIBS/*" org.apache.kafka.tools.ConsumerPerformance \
    --bootstrap-server "$BS" --topic G --messages "$ALL" --timeout 30000 --group bjava \
    >"$WORK/cperf" 2>"$WORK/cperf.err" || echo "ConsumerPerformance exited $?"
# The data line follows the CSV header; Java 4.4 writes a deprecation warning to stdout first.
check "Java ConsumerPerformance --group: records" "$ALL" \
    "$(awk -F', ' 'hdr { print $5; exit } /^start\.time/ { hdr = 1 }' "$WORK/cperf")"
timeout 60 java -Xmx256m -cp "$KAFKA_LIBS/*" org.apache.kafka.tools.consumer.ConsoleConsumer \
    --bootstrap-server "$BS" --topic G --group b848 --from-beginning --max-messages "$ALL" \
    --timeout-ms 20000 --consumer-property group.protocol=consumer \
    --property print.partition=true --property print.offset=true >"$WORK/b848" 2>"$WORK/b848.err" ||
    echo "console consumer exited $?"
# Record lines only (Java 4.4 writes "Option --consumer-property is deprecated" to stdout).
sed -nE 's/^Partition:([0-9]+)\tOffset:([0-9]+).*/\1 \2/p' "$WORK/b848" >"$WORK/b848.po"
check "Java console consumer, group.protocol=consumer" "$ALL 0" "$(once "$WORK/b848.po")"
timeout 60 kcat -b "$BS" -G bkcat G -o beginning -e -q -f '%p %o\n' >"$WORK/bkcat" 2>"$WORK/bkcat.err" ||
    echo "kcat exited $?"
check "kcat balanced consumer (classic)" "$ALL 0" "$(once "$WORK/bkcat")"
stop "$MB_PID" mb
for api in JoinGroup SyncGroup LeaveGroup ConsumerGroupHeartbeat OffsetCommit; do
    grep -q "^requests api=$api key=[0-9]* count=[1-9]" "$WORK/stats" && r=yes || r=no
    check "the broker answered $api" yes "$r"
done

# (c) Two classic members starting together: one generation, disjoint partitions.
start mbc --topic G --partitions 4 --records 2500 --size 20 --batch-records 100 \
    --group-initial-delay-ms 2500
MBC=$PID
kc -G c2 -o beginning -e -X group.protocol=classic >"$WORK/c1" 2>"$WORK/c1.err" &
C1=$!
kc -G c2 -o beginning -e -X group.protocol=classic >"$WORK/c2" 2>"$WORK/c2.err" &
C2=$!
wait "$C1" || echo "member 1 exited $?"
wait "$C2" || echo "member 2 exited $?"
check "two classic members: distinct records, duplicates" "$ALL 0" "$(once "$WORK/c1" "$WORK/c2")"
p1=$(parts_of "$WORK/c1") p2=$(parts_of "$WORK/c2")
echo "     member 1 read partitions [$p1], member 2 [$p2]"
check "two classic members: each partition read by exactly one, both used" "4 0 yes" \
    "$(printf '%s\n%s\n' "$p1" "$p2" | tr ' ' '\n' | grep . | sort -n | uniq -c |
        awk -v a="$p1" -v b="$p2" '{ n++; if ($1 > 1) d++ } END { print n + 0, d + 0, (a != "" && b != "") ? "yes" : "no" }')"
stop "$MBC" mbc

# (d) KIP-848: the second member joins while the first reads (slowed by --work-us): once the
# first printed 2,000 of its 10,000 records, whatever the machine's speed; partitions are revoked
# from the first before the second gets them, and the commits on revocation hand over the exact
# position. On a failure the broker's group trace and both members' debug logs tell the sequence.
d_fails=$fails
start mbd --topic G --partitions 4 --records 2500 --size 20 --batch-records 100 --trace-groups
MBD=$PID
kc -G d2 -o beginning -e --work-us 400 -X log.level=debug >"$WORK/d1" 2>"$WORK/d1.err" &
D1=$!
for _ in $(seq 400); do
    [[ $(wc -l <"$WORK/d1" 2>/dev/null || echo 0) -ge 2000 ]] && break
    sleep 0.05
done
check "member 1 printed 2,000 records within 20 s" yes \
    "$([[ $(wc -l <"$WORK/d1") -ge 2000 ]] && echo yes || echo "no ($(wc -l <"$WORK/d1"))")"
kc -G d2 -o beginning -e --work-us 400 -X log.level=debug >"$WORK/d2" 2>"$WORK/d2.err" &
D2=$!
wait "$D1" || echo "member 1 exited $?"
wait "$D2" || echo "member 2 exited $?"
check "two KIP-848 members: distinct records, duplicates" "$ALL 0" "$(once "$WORK/d1" "$WORK/d2")"
n1=$(wc -l <"$WORK/d1") n2=$(wc -l <"$WORK/d2")
echo "     member 1 read $n1 records of partitions [$(parts_of "$WORK/d1")], member 2 $n2 of [$(parts_of "$WORK/d2")]"
check "two KIP-848 members: both read records" yes "$([[ $n1 -gt 0 && $n2 -gt 0 ]] && echo yes || echo no)"
if [[ $fails -gt $d_fails ]]; then
    for m in d1 d2; do
        echo "     $m per partition (first last count):"
        awk '{ if (!($1 in lo)) lo[$1] = $2; hi[$1] = $2; n[$1]++ } END { for (p in n) print "       " p, lo[p], hi[p], n[p] }' "$WORK/$m"
        echo "     $m log:"
        grep -E 'group|WARN|ERROR' "$WORK/$m.err" | sed 's/^/       /' | tail -40
    done
    echo "     broker group trace:"
    grep ' trace ' "$WORK/mbd.err" | sed 's/^/       /' | tail -80
fi
stop "$MBD" mbd

[[ $fails == 0 ]] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
