#!/usr/bin/env bash
# The testkit's fault commands: with a replication-3 topic, kill-broker 2 (SIGKILL) leaves the
# data readable, and start-broker 2 brings the node back into every ISR. Leaves the cluster as
# it found it (all nodes up, the topic deleted), because later tests share it.
set -euo pipefail
for v in KC_BOOTSTRAP KC_CLUSTER_DIR KC_TESTKIT; do
    [[ -n ${!v:-} ]] || { echo "FAIL: $v is not set (run under tests/run-suite)" >&2; exit 1; }
done
tk() { "$KC_TESTKIT" "$@" --dir "$KC_CLUSTER_DIR"; }
nbrokers=$(tr ',' '\n' <<<"$KC_BOOTSTRAP" | wc -l)
((nbrokers >= 3)) || { echo "FAIL: needs a 3-node cluster (has $nbrokers)" >&2; exit 1; }

topic=faults-$$-$RANDOM
records=2000
restore() {
    # Whatever happened, node 2 must be running again for the tests after this one.
    tk status >/dev/null 2>&1 || tk start-broker 2 || true
    tk topic delete "$topic" >/dev/null 2>&1 || true
}
trap restore EXIT

count() { # records readable from the topic, end to end, through the given bootstrap
    kcat -b "$1" -C -t "$topic" -o beginning -e -q -m 20 -f '%o\n' | wc -l
}

# The surviving brokers only: with node 2 dead, a bootstrap list starting at it would still work
# with librdkafka, but reading through 1 and 3 says what we mean.
survivors=$(tr ',' '\n' <<<"$KC_BOOTSTRAP" | sed -n '1p;3p' | paste -sd,)

tk topic create "$topic" --partitions 3 --replication 3
tk produce "$topic" --records "$records" --size 100
n=$(count "$KC_BOOTSTRAP")
[[ $n -eq $records ]] || { echo "FAIL: read $n of $records before the fault" >&2; exit 1; }
echo "ok: $records records readable with all nodes up"

tk kill-broker 2
if tk status >/dev/null 2>&1; then echo "FAIL: status says up with node 2 killed" >&2; exit 1; fi
n=$(count "$survivors")
[[ $n -eq $records ]] || { echo "FAIL: read $n of $records with node 2 down" >&2; exit 1; }
echo "ok: $records records readable with node 2 killed"

tk start-broker 2
# Rejoined means: in the ISR of every partition again (it has caught up), as metadata says.
isr_full() {
    kcat -b "$KC_BOOTSTRAP" -L -t "$topic" -m 10 |
        awk -v want=3 '/partition [0-9]+,/ { total++; if ($0 ~ /isrs: [0-9]+,[0-9]+,[0-9]+/) ok++ }
                       END { exit !(total == want && ok == want) }'
}
for ((i = 0; i < 120; i++)); do
    isr_full && break
    sleep 0.5
done
isr_full || { echo "FAIL: node 2 did not rejoin every ISR within 60s" >&2;
              kcat -b "$KC_BOOTSTRAP" -L -t "$topic" >&2; exit 1; }
echo "ok: node 2 back in every ISR"

n=$(count "$(tr ',' '\n' <<<"$KC_BOOTSTRAP" | sed -n 2p)")
[[ $n -eq $records ]] || { echo "FAIL: read $n of $records after the restart" >&2; exit 1; }
tk status >/dev/null
echo "ok: $records records readable through the restarted node; cluster healthy"
