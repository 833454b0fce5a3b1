#!/usr/bin/env bash
# `make demo`: boots a one-broker testkit cluster, fills a 12-partition topic with a million
# 100-byte records written by Kafka's own Java producer, consumes them with kconsume while a live
# per-partition table shows progress, checks that every record was printed exactly once, prints a
# summary, and stops the broker and every process it started whatever happens.
#
# Two modes:
#   group (default, KC_DEMO_GROUP=1): three kconsume processes join one group
#     (group.protocol=consumer, KIP-848; the broker assigns). Members a and b start together, c
#     joins once 15% of the topic is read, b leaves once half is read (SIGTERM: a clean close,
#     which revokes, commits what b printed and leaves). The live view (tools/demo_live.py,
#     from each member's stats JSON) shows per partition the owning member, position, end,
#     lag, records/s, worker and progress. When the union of the members' positions covers the
#     whole topic the demo stops a and c the same clean way. At the end: a summary over the group
#     and the check that no (partition, offset) was printed twice across the three outputs
#     (graceful rebalances must not re-deliver anything).
#     Members simulate processing (KC_DEMO_WORK_US per record, a sleep in the callback, no CPU)
#     so the rebalances happen while there is still data to read; KC_DEMO_WORK_US=0 runs them
#     flat out (then everything is read before c has joined).
#   single (KC_DEMO_GROUP=0): one kconsume with manual assignment of all 12 partitions and -e,
#     at full speed, with the CLI's own --live table and --summary.
#
#   tools/demo.sh BUILD_DIR      (the Makefile passes build/release)
#   KC_DEMO_PORT_BASE            broker ports (default 29092, away from the test suites' 19092)
#   KC_DEMO_RECORDS              records to produce (default 1000000)
#   KC_DEMO_WORKERS              kconsume --workers (default: the library's, one per CPU)
#   KC_DEMO_CLI                  the kconsume binary (default BUILD_DIR/kconsume)
#   KC_DEMO_GROUP                1 (default): the group of three; 0: one consumer
#   KC_DEMO_WORK_US              group mode: simulated work per record in µs (default 50)
#   KC_DEMO_TIMEOUT              group mode: seconds before giving up on the group (default 120)
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
    # Only what this script started: its background jobs and their children (kconsume members
    # run under a subshell that records their exit code).
    for pid in "${pids[@]}"; do
        for child in $(pgrep -P "$pid" 2>/dev/null); do kill "$child" 2>/dev/null || true; done
        kill "$pid" 2>/dev/null || true
    done
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

if [[ ${KC_DEMO_GROUP:-1} == 0 ]]; then
    echo "demo: consuming with kconsume (-e: to the end seen at start; table on stderr)"
    "$cli" -b "$BOOTSTRAP" -t "$topic" -o beginning -e -q --live --summary "${workers[@]}" \
        -f '%p %o\n' >"$dir/out"
    check_once "$dir/out"
    exit 0
fi

# ---- group mode: three members of one group share the topic ------------------------------------
# How the members finish. The CLI's -e ("every partition I own reached the end seen when it was
# assigned") is a per-member rule, and in a group a member cannot know it is done: a partition
# another member still reads may be handed to it at the next heartbeat (b leaving does exactly
# that), and a member that quits because its own share is done takes no part in that handover.
# So the members run without -e, and the group's end is decided where the whole group is visible:
# demo_live.py takes, per partition, the highest position any member reported (position = the
# offset after the last record whose callback returned, i.e. was printed; a new owner starts at
# the offset the previous one committed at revocation) and says "complete" once every partition's
# reaches its high watermark. Production has finished before the members start, so that end is
# final. Then the demo stops the remaining members with SIGTERM: a clean close that lets in-flight
# callbacks finish, commits and leaves the group. Nothing is lost to timing: the stop comes only
# after everything was printed, and a member that is slow to close only delays the end.
group=kconsume-demo-$$
work_us=${KC_DEMO_WORK_US:-50}
timeout=${KC_DEMO_TIMEOUT:-120}
declare -A pid_of
member() { # member NAME
    (
        rc=0
        "$cli" -b "$BOOTSTRAP" -G "$group" -t "$topic" -o beginning -q --summary "${workers[@]}" \
            --work-us "$work_us" -f '%p %o\n' --stats "500:$dir/stats-$1.jsonl" \
            >"$dir/out-$1" 2>"$dir/err-$1" || rc=$?
        echo "$rc" >"$dir/rc-$1"
        touch "$dir/exited-$1"
    ) &
    pid_of[$1]=$!
    pids+=($!)
}
# Stops a member by the pid of the kconsume process itself (the only child of its subshell).
stop_member() { # stop_member NAME
    local cpid
    cpid=$(pgrep -P "${pid_of[$1]}" || true)
    [[ -n $cpid ]] && kill -TERM "$cpid" 2>/dev/null || true
}
progress() { # progress: prints "FRACTION COMPLETE OWNED..." from the live view, or "0 0"
    cat "$dir/progress" 2>/dev/null || echo "0 0"
}
# Events of the group run. On a terminal the live view redraws its table in place on stderr, so
# lines printed in between would tear it: there the events go to DIR/events, which the view
# shows above the table; otherwise they are printed as they happen.
say() {
    if [[ -t 2 ]]; then echo "$*" >>"$dir/events"; else echo "$*"; fi
}
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
# wait_for AWK_CONDITION: waits until the condition holds on the progress line ($1 fraction, $2
# complete, $3.. owned counts), or every member exited, or the timeout; 0 when the condition held.
wait_for() {
    while :; do
        progress | awk "{ exit !($1) }" && return 0
        [[ -e $dir/exited-a && -e $dir/exited-b && -e $dir/exited-c ]] && return 1
        if awk -v s="$(since "$tg")" -v t="$timeout" 'BEGIN { exit !(s > t) }'; then
            say "demo: timeout after ${timeout}s"
            return 1
        fi
        sleep 0.2
    done
}
echo "demo: group '$group' (KIP-848): members a and b start; c joins at 15% read; b leaves at" \
    "50%; each member's callback spends ${work_us} µs per record (simulated work)"
tg=$(date +%s.%N)
member a
member b
KC_DEMO_T0=$tg python3 "$root/tools/demo_live.py" --interval 0.5 "$dir" 12 a b c &
viewer=$!
pids+=("$viewer")
fail=
wait_for '$1 >= 0.15' || fail="the group stopped before 15% was read"
say "demo: $(since "$tg") s: member c joins"
member c
# b leaves once half is read and c owns partitions (so three members did share the topic), or
# at 70% read if c never got any (the summary then says so).
wait_for '$1 >= 0.5 && $0 ~ /c=[1-9]/ || $1 >= 0.7' || fail=${fail:-"the group stopped before b's leave"}
say "demo: $(since "$tg") s: member b leaves (SIGTERM: clean close, commits what it printed)"
stop_member b
wait_for '$2 == 1' || fail=${fail:-"the group did not read the whole topic"}
say "demo: $(since "$tg") s: every partition read to its end; stopping a and c (SIGTERM)"
stop_member a
stop_member c
for m in a b c; do wait "${pid_of[$m]}" || true; done
secs=$(since "$tg")
touch "$dir/members-done"
wait "$viewer" || true

# Summary over the group: each member's --summary line says records, MB, seconds, CPU seconds.
rc=0
for m in a b c; do
    mrc=$(cat "$dir/rc-$m" 2>/dev/null || echo "?")
    echo "demo: member $m (exit $mrc): $(grep '^kconsume: [0-9]* records' "$dir/err-$m" | tail -1 |
        sed 's/^kconsume: //')"
    [[ $mrc == 143 ]] || { rc=1; echo "demo: member $m: expected exit 143 (SIGTERM, clean close)"; }
    grep -v '^kconsume: [0-9]* records' "$dir/err-$m" | sed "s/^/demo: member $m: /" || true
done
cat "$dir"/err-{a,b,c} | awk -v secs="$secs" -v work="$work_us" '
    /^kconsume: [0-9]+ records/ {
        n += $2; mb += $4
        cpu += substr($(NF - 2), 2) # "(T CPU s)" is the last three fields
    }
    END {
        f = "demo: group: %d records, %.1f MB, %.2f s, %.0f records/s, %.2f CPU s per million"
        f = f " records (%.2f CPU s over the three members; the %d us/record of simulated work"
        f = f " is sleep, not CPU)\n"
        printf f, n, mb, secs, (secs > 0 ? n / secs : 0), (n ? cpu * 1e6 / n : 0), cpu, work
    }'
for m in a b c; do printf '%s ' "$m=$(wc -l <"$dir/out-$m")"; done | sed 's/^/demo: printed per member: /;s/ $/\n/'
[[ -z $fail ]] || { echo "demo: FAILED: $fail"; rc=1; }
check_once "$dir"/out-{a,b,c} || rc=1
exit "$rc"
