#!/usr/bin/env bash
# The programs of examples/ against the suite's cluster, each doing what its header says:
#  - consume_example: every record of a 3-partition topic printed once;
#  - group_at_least_once: two members of one group share the topic; the per-partition totals
#    they print at revocation add up to every record, and the group's committed offsets (read by
#    Kafka's own kafka-consumer-groups tool) are every partition's end: what was processed was
#    committed;
#  - poll_threads: 3 threads take every record, more than one thread takes some;
#  - from_timestamp: with a timestamp between two produce runs, exactly the second run's records;
#  - offsets_in_store: two members of one group with one store directory; afterwards each
#    partition's stored count equals its stored position (offsets start at 0; an empty partition
#    stores nothing) and the counts add up to every record, and a member was assigned a partition the other had stored (the store
#    moved with the partition through on_rebalance);
#  - tls_scram: over the SASL_SSL listener, every record; with a wrong password, a failure
#    (exit 1) naming the refused login;
#  - stats_metrics: its Prometheus text parses with the reference parser, labelled with its
#    client.id, the workers' records adding up to every record and no partition lagging.
set -euo pipefail
for v in KC_BOOTSTRAP KC_TESTKIT KC_CLUSTER_DIR KC_BUILD_DIR KC_SASL_SSL_BOOTSTRAP KC_CA_FILE \
    KC_SCRAM_USER KC_SCRAM_PASSWORD; do
    [[ -n ${!v:-} ]] || { echo "FAIL: $v is not set (run under tests/run-suite)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
kit() { "$KC_TESTKIT" "$@" --dir "$KC_CLUSTER_DIR" >/dev/null; }
bin=$KC_BUILD_DIR
for ex in consume_example group_at_least_once poll_threads from_timestamp offsets_in_store tls_scram \
    stats_metrics; do
    [[ -x $bin/$ex ]] || fail "$bin/$ex is not built"
done

topic=examples-$$-$RANDOM
kit topic create "$topic" --partitions 3
kit produce "$topic" --records 1500 --size 20 --keys 64
sleep 1
mid=$(($(date +%s%3N)))
sleep 1
kit produce "$topic" --records 700 --size 20 --keys 64
total=2200

# consume_example runs until a signal: stop it once it printed everything (or after 60 s).
"$bin/consume_example" "$KC_BOOTSTRAP" "$topic" 3 >"$tmp/ce.out" 2>"$tmp/ce.err" &
pid=$!
for _ in $(seq 600); do
    (($(wc -l <"$tmp/ce.out") >= total)) && break
    sleep 0.1
done
kill -INT "$pid"
wait "$pid" || fail "consume_example exited $? ($(cat "$tmp/ce.err"))"
n=$(sort -u "$tmp/ce.out" | grep -c '@')
((n == total)) || fail "consume_example printed $n distinct records of $total"
echo "consume_example: $n records"

group=examples-group-$$-$RANDOM
"$bin/group_at_least_once" "$KC_BOOTSTRAP" "$group" "$topic" 15 >"$tmp/g1.out" 2>"$tmp/g1.err" &
p1=$!
sleep 3
"$bin/group_at_least_once" "$KC_BOOTSTRAP" "$group" "$topic" 9 >"$tmp/g2.out" 2>"$tmp/g2.err" &
p2=$!
wait "$p1" || fail "member 1 exited $? ($(cat "$tmp/g1.err"))"
wait "$p2" || fail "member 2 exited $? ($(cat "$tmp/g2.err"))"
# Every revocation prints the partition's total since its assignment. Member 2 joined late, so
# partitions moved: a partition's records are split between the members, never counted twice,
# because each member starts from the other's commit of its stored offsets.
sum=$(cat "$tmp/g1.out" "$tmp/g2.out" | awk '{s += $2} END {print s + 0}')
((sum == total)) || fail "the members processed $sum records of $total: $(cat "$tmp/g1.out" "$tmp/g2.out")"
grep -q assigned "$tmp/g2.err" || fail "member 2 was never assigned a partition"
"$KC_TESTKIT" tool ConsumerGroupCommand --bootstrap-server "${KC_BOOTSTRAP%%,*}" --describe \
    --group "$group" --dir "$KC_CLUSTER_DIR" >"$tmp/desc" 2>/dev/null || fail "ConsumerGroupCommand failed"
committed=$(awk -v t="$topic" '$2 == t {c += $4} END {print c + 0}' "$tmp/desc")
((committed == total)) || fail "the group committed $committed of $total: $(cat "$tmp/desc")"
echo "group_at_least_once: 2 members processed $sum records, committed $committed"

"$bin/poll_threads" "$KC_BOOTSTRAP" "$topic" 3 3 "$total" >"$tmp/p.out" 2>"$tmp/p.err" ||
    fail "poll_threads exited $? ($(cat "$tmp/p.err"))"
grep -qx "total: $total records" "$tmp/p.out" || fail "poll_threads: $(cat "$tmp/p.out")"
busy=$(awk '/^thread/ && $3 > 0 {n++} END {print n + 0}' "$tmp/p.out")
((busy >= 2)) || fail "poll_threads: only $busy thread(s) took records: $(cat "$tmp/p.out")"
echo "poll_threads: $(tr '\n' ' ' <"$tmp/p.out")"

timeout 60 "$bin/from_timestamp" "$KC_BOOTSTRAP" "$topic" "$mid" >"$tmp/t.out" 2>"$tmp/t.err" ||
    fail "from_timestamp exited $? ($(cat "$tmp/t.err"))"
n=$(grep -c '@' "$tmp/t.out" || true)
((n == 700)) || fail "from_timestamp printed $n records, the 700 of the second run wanted"
awk -v mid="$mid" '{split($2, a, "="); if (a[2] + 0 < mid) {print "early: " $0; exit 1}}' \
    "$tmp/t.out" || fail "from_timestamp printed a record older than the timestamp"
echo "from_timestamp: $n records at or after $mid"

store=$tmp/store
mkdir "$store"
sgroup=examples-store-$$-$RANDOM
"$bin/offsets_in_store" "$KC_BOOTSTRAP" "$sgroup" "$topic" "$store" 14 2>"$tmp/s1.err" &
s1=$!
sleep 4
"$bin/offsets_in_store" "$KC_BOOTSTRAP" "$sgroup" "$topic" "$store" 8 2>"$tmp/s2.err" &
s2=$!
wait "$s1" || fail "offsets_in_store member 1 exited $? ($(cat "$tmp/s1.err"))"
wait "$s2" || fail "offsets_in_store member 2 exited $? ($(cat "$tmp/s2.err"))"
stored=0
for p in 0 1 2; do
    # A partition the producer left empty has nothing to store.
    count=0 next=0
    [[ -f $store/$topic-$p ]] && read -r count bytes next <"$store/$topic-$p"
    ((count == next)) || fail "offsets_in_store: partition $p stored $count records at position $next"
    stored=$((stored + count))
done
((stored == total)) || fail "offsets_in_store: the store counts $stored records of $total"
grep -hE 'assigned .* \([1-9][0-9]* stored\)' "$tmp/s1.err" "$tmp/s2.err" >/dev/null ||
    fail "offsets_in_store: no partition was ever assigned with a stored pair"
echo "offsets_in_store: 2 members, $stored records stored once each"

"$bin/tls_scram" "$KC_SASL_SSL_BOOTSTRAP" "$topic" "$KC_CA_FILE" "$KC_SCRAM_USER" \
    "$KC_SCRAM_PASSWORD" >"$tmp/tls.out" 2>"$tmp/tls.err" || fail "tls_scram exited $? ($(cat "$tmp/tls.err"))"
grep -qx "$total records" "$tmp/tls.out" || fail "tls_scram: $(cat "$tmp/tls.out")"
if timeout 60 "$bin/tls_scram" "$KC_SASL_SSL_BOOTSTRAP" "$topic" "$KC_CA_FILE" "$KC_SCRAM_USER" \
    not-the-password >/dev/null 2>"$tmp/tls-bad.err"; then
    fail "tls_scram with a wrong password succeeded"
fi
grep -q 'SASL_AUTHENTICATION_FAILED' "$tmp/tls-bad.err" ||
    fail "tls_scram with a wrong password: $(cat "$tmp/tls-bad.err")"
echo "tls_scram: $total records; a wrong password refused"

"$bin/stats_metrics" "$KC_BOOTSTRAP" "$topic" >"$tmp/metrics" 2>"$tmp/m.err" ||
    fail "stats_metrics exited $? ($(cat "$tmp/m.err"))"
# Debian's interpreter: python3-prometheus-client (tests/testkit/install-deps) is its module.
/usr/bin/python3 "$KC_SOURCE_DIR/tests/support/check_metrics.py" "$tmp/metrics" --records "$total" \
    --client-id-hex "$(printf 'stats-example' | od -An -tx1 | tr -d ' \n')" >"$tmp/m.check" ||
    fail "stats_metrics: $(cat "$tmp/m.check")"
echo "stats_metrics: $(cat "$tmp/m.check")"
echo "PASS"
