# Shared by the scripts that run kc-memory-broker against real clients
# (tests/kafka/memory_broker*.test.sh); sourced after `set -euo pipefail` with $MB set to the
# broker binary. Gives: $WORK (removed on exit, with every broker started here killed),
# check NAME EXPECTED ACTUAL (prints ok/FAIL, counts failures in $fails), and
# start NAME ARGS... (runs the broker, waits for its BOOTSTRAP line, sets $BS and $PID).
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
fails=0
check() { # name expected actual
    if [[ $2 == "$3" ]]; then echo "ok   $1: $3"; else echo "FAIL $1: expected $2, got $3"; fails=$((fails + 1)); fi
}
# The output file may not exist yet when the first sed runs: the background child opens it.
start() {
    local name=$1; shift
    "$MB" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 100); do
        BS=$(sed -n 's/^BOOTSTRAP=//p' "$WORK/$name.out" 2>/dev/null || true)
        [[ -n $BS ]] && return 0
        sleep 0.1
    done
    echo "FAIL: $name did not start"; cat "$WORK/$name.err"; exit 1
}
