#!/usr/bin/env bash
# `make demo`: boots a one-broker testkit cluster, fills a 12-partition topic with a million
# 100-byte records written by Kafka's own Java producer, consumes them with kconsume while a live
# per-partition table shows progress, checks that every record was printed exactly once, prints a
# summary, and stops the broker whatever happens.
#   tools/demo.sh BUILD_DIR      (the Makefile passes build/release)
#   KC_DEMO_PORT_BASE            broker ports (default 29092, away from the test suites' 19092)
#   KC_DEMO_RECORDS              records to produce (default 1000000)
#   KC_DEMO_WORKERS              kconsume --workers (default: the library's, one per CPU)
#   KC_DEMO_CLI                  the kconsume binary (default BUILD_DIR/kconsume)
#   KC_DEMO_GROUP=1              group mode (issue 7): three members share the topic, one joins
#                                late, one leaves early; needs group support in the library
#                                (kc_subscribe) and its stats events for the live view.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build/release}
testkit=$root/tests/testkit/cluster
cli=${KC_DEMO_CLI:-$build/kconsume}
dir=$(mktemp -d /tmp/kconsume-demo.XXXXXX)
topic=demo
records=${KC_DEMO_RECORDS:-1000000}
workers=()
[[ -n ${KC_DEMO_WORKERS:-} ]] && workers=(--workers "$KC_DEMO_WORKERS")
pids=()

cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    "$testkit" down --dir "$dir" || true
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "demo: booting one Kafka broker (${dir})"
# shellcheck disable=SC1090
source <("$testkit" up --dir "$dir" --brokers 1 --port-base "${KC_DEMO_PORT_BASE:-29092}")
echo "demo: broker up at $BOOTSTRAP"

"$testkit" topic create "$topic" --partitions 12 --dir "$dir"
echo "demo: producing $records records of 100 bytes into '$topic' (12 partitions)"
t0=$(date +%s.%N)
"$testkit" produce "$topic" --records "$records" --size 100 --dir "$dir"
t1=$(date +%s.%N)
echo "demo: produced in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s"

if [[ ! -x $cli ]]; then
    echo "demo: not yet: $cli is not built (CMake builds it once the library defines every" \
        "function the CLI calls; its configure output names the missing ones)"
    exit 0
fi

# Every (partition, offset) printed exactly once, and as many as were produced.
check_once() { # check_once FILE...
    awk -v want="$records" '
        seen[$1 " " $2]++ { dup++ }
        { n++ }
        END {
            if (dup || n != want) {
                printf "demo: FAILED: %d records printed, %d produced, %d printed twice\n", n, want, dup
                exit 1
            }
            printf "demo: checked: all %d records printed, each exactly once\n", n
        }' "$@"
}

if [[ ${KC_DEMO_GROUP:-0} != 1 ]]; then
    echo "demo: consuming with kconsume (-e: to the end seen at start; table on stderr)"
    "$cli" -b "$BOOTSTRAP" -t "$topic" -o beginning -e -q --live --summary "${workers[@]}" \
        -f '%p %o\n' >"$dir/out"
    check_once "$dir/out"
    exit 0
fi

# ---- group mode: three members of one group share the topic ------------------------------------
# Member a and b start together, c joins late, b leaves early (SIGTERM: a clean close that commits
# what it printed). Each writes what it printed and its stats; the live view reads the stats
# (partitions[].position/lag/high_watermark, group.member_id) of every member.
group=kconsume-demo-$$
member() { # member NAME
    "$cli" -b "$BOOTSTRAP" -G "$group" -t "$topic" -o beginning -e -q --summary "${workers[@]}" \
        -f '%p %o\n' --stats "500:$dir/stats-$1.jsonl" >"$dir/out-$1" 2>"$dir/err-$1" &
    pids+=($!)
}
echo "demo: group '$group': members a and b start, c joins after 3 s, b leaves after 6 s"
member a
member b
python3 "$root/tools/demo_live.py" --interval 0.5 "$dir/members-done" "$dir"/stats-{a,b,c}.jsonl &
viewer=$!
sleep 3
member c
sleep 3
kill -TERM "${pids[1]}" 2>/dev/null || true
rc=0
for pid in "${pids[@]}"; do
    wait "$pid" || { r=$?; [[ $r -eq 143 ]] || rc=$r; } # b's SIGTERM exit is expected
done
touch "$dir/members-done"
wait "$viewer" || true
for m in a b c; do
    echo "demo: member $m: $(tail -1 "$dir/err-$m")"
done
[[ $rc -eq 0 ]] || { echo "demo: FAILED: a member exited $rc"; cat "$dir"/err-*; exit 1; }
check_once "$dir"/out-*
