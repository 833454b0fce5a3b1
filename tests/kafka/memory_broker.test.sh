#!/usr/bin/env bash
# kc-memory-broker against real clients (needs no cluster): kcat (librdkafka) and Java's console
# consumer must read every record, for every codec, from one node and from two nodes that split
# the partitions; the stats file must count the requests; SIGTERM must end it with status 0.
# Then Java through kc-fault-proxy with fetch-session errors injected; last, kconsume's -e over
# 1,000 partitions asks their ends in a few requests.
set -euo pipefail
SRC=${KC_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${KC_BUILD_DIR:-$SRC/build/asan}
MB=$BUILD/tests/testkit/kc-memory-broker
[[ -x $MB ]] || { echo "FAIL: $MB not built"; exit 1; }
command -v kcat >/dev/null || { echo "SKIP: kcat not installed"; exit 77; }
# shellcheck source=../support/mb_harness.sh
source "$SRC/tests/support/mb_harness.sh"

for codec in none gzip snappy lz4 zstd; do
    start "mb-$codec" --topic T --partitions 3 --records 1000 --size 80 --batch-records 64 \
        --compression "$codec" --stats-file "$WORK/stats-$codec"
    n=$(timeout 60 kcat -b "$BS" -C -t T -e -o beginning -q | wc -l)
    check "kcat $codec 3x1000" 3000 "$n"
    kill -TERM "$PID"
    rc=0; wait "$PID" || rc=$?
    check "SIGTERM exit status ($codec)" 0 "$rc"
    grep -q '^requests api=Fetch key=1 count=[1-9]' "$WORK/stats-$codec" && r=yes || r=no
    check "stats file counts Fetch ($codec)" yes "$r"
    grep -q '^served records=3000 ' "$WORK/stats-$codec" && r=yes || r=no
    check "stats file: 3000 records served ($codec)" yes "$r"
done

# Small fetch.max.bytes: many rounds, nothing lost; a partial last batch (1000 % 64 != 0).
start mb-small --topic S --partitions 4 --records 1000 --size 200 --batch-records 64 --compression zstd
n=$(timeout 60 kcat -b "$BS" -C -t S -e -o beginning -q -X fetch.max.bytes=2000 -X message.max.bytes=1000 \
    -X fetch.message.max.bytes=1000 | wc -l)
check "kcat small fetch.max.bytes 4x1000" 4000 "$n"
kill -TERM "$PID"; wait "$PID" || true

# Two nodes: node i leads p % 2 == i; the client must follow Metadata to both.
read -r P0 P1 < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
peers=127.0.0.1:$P0,127.0.0.1:$P1
start node0 --node-id 0 --peers "$peers" --topic M --partitions 4 --records 500 --stats-file "$WORK/n0"
N0=$PID
start node1 --node-id 1 --peers "$peers" --topic M --partitions 4 --records 500 --stats-file "$WORK/n1"
N1=$PID
n=$(timeout 60 kcat -b "127.0.0.1:$P0" -C -t M -e -o beginning -q | wc -l)
check "kcat two nodes 4x500" 2000 "$n"
kill -TERM "$N0" "$N1"; wait "$N0" || true; wait "$N1" || true
grep -q '^served records=1000 ' "$WORK/n0" && grep -q '^served records=1000 ' "$WORK/n1" && r=yes || r=no
check "each node served its half (1000 records)" yes "$r"

# Java's consumer (Fetch v17, KIP-227 sessions: epoch 0 then incremental), one assigned
# partition per run (groups: memory_broker_groups.test.sh).
KAFKA_LIBS=$("$SRC/tests/testkit/fetch-kafka")
# The console consumer's record lines: Java 4.4 also writes "Option --consumer-property is
# deprecated ..." to stdout.
java_records() { grep -cv '^Option --[a-z-]* is deprecated' || true; }
start mb-java --topic J --partitions 2 --records 1500 --size 100 --batch-records 100 --compression zstd \
    --stats-file "$WORK/java"
for p in 0 1; do
    n=$(timeout 120 java -Xmx256m -cp "$KAFKA_LIBS/*" org.apache.kafka.tools.consumer.ConsoleConsumer \
        --bootstrap-server "$BS" --topic J --partition "$p" --offset earliest --max-messages 1500 \
        --timeout-ms 30000 2>"$WORK/java-$p.err" | java_records)
    check "java console consumer partition $p" 1500 "$n"
done
kill -TERM "$PID"; wait "$PID" || true

# Both tools together: Java's consumer through kc-fault-proxy, 5 fetch-session errors injected
# (FETCH_SESSION_ID_NOT_FOUND x3, INVALID_FETCH_SESSION_EPOCH x2); it must restart its session
# and still read every record.
FPX=$BUILD/tests/testkit/kc-fault-proxy
start mb-fp --topic F --partitions 1 --records 3000 --batch-records 50 --compression zstd
MB_PID=$PID
"$FPX" --listen 0 --upstream "$BS" --control "$WORK/fp.sock" >"$WORK/fp.out" 2>"$WORK/fp.err" &
FP_PID=$!
PIDS+=("$FP_PID")
for _ in $(seq 100); do
    PBS=$(sed -n 's/^BOOTSTRAP=//p' "$WORK/fp.out" 2>/dev/null || true)
    [[ -n $PBS ]] && break
    sleep 0.1
done
"$FPX" --ctl "$WORK/fp.sock" inject api=Fetch error=FETCH_SESSION_ID_NOT_FOUND count=3 >/dev/null
"$FPX" --ctl "$WORK/fp.sock" inject api=Fetch error=INVALID_FETCH_SESSION_EPOCH count=2 >/dev/null
n=$(timeout 120 java -Xmx256m -cp "$KAFKA_LIBS/*" org.apache.kafka.tools.consumer.ConsoleConsumer \
    --bootstrap-server "$PBS" --topic F --partition 0 --offset earliest --max-messages 3000 \
    --timeout-ms 30000 --consumer-property fetch.max.bytes=20000 \
    --consumer-property max.partition.fetch.bytes=20000 2>"$WORK/java-fp.err" | java_records)
check "java through the proxy with 5 session errors" 3000 "$n"
fired=$("$FPX" --ctl "$WORK/fp.sock" stats | grep -o 'fired.inject=[0-9]*')
check "proxy injected" fired.inject=5 "$fired"
kill -TERM "$FP_PID"
rc=0; wait "$FP_PID" || rc=$?
check "proxy SIGTERM exit status" 0 "$rc"
kill -TERM "$MB_PID"; wait "$MB_PID" || true

# kconsume -e over 1,000 partitions, by hand and in a group: the end marks come from one
# watermarks question for all of them (per leader, a ListOffsets round for the log starts and one
# for the ends), not two requests per partition; every record is read once.
for mode in assign group; do
    start "mb-ends-$mode" --topic E --partitions 1000 --records 2 --batch-records 2 \
        --stats-file "$WORK/ends-$mode"
    group=(); [[ $mode == group ]] && group=(-G "ends-$mode")
    timeout 120 "$BUILD/kconsume" -b "$BS" -t E ${group[@]+"${group[@]}"} -o beginning -e -q \
        -f '%p %o\n' >"$WORK/ends-$mode.out" 2>"$WORK/ends-$mode.err" ||
        echo "kconsume ($mode) exited $? ($(tail -1 "$WORK/ends-$mode.err"))"
    check "kconsume -e ($mode), 1000 partitions x 2 records: lines, distinct" "2000 2000" \
        "$(wc -l <"$WORK/ends-$mode.out") $(sort -u "$WORK/ends-$mode.out" | wc -l)"
    kill -TERM "$PID"; wait "$PID" || true
    # Two rounds per leader, and room for retries on a loaded machine; the build before asked
    # 2,001 times (a watermarks question per partition).
    lo=$(sed -nE 's/^requests api=ListOffsets key=2 count=([0-9]+).*/\1/p' "$WORK/ends-$mode")
    check "ListOffsets requests for the 1000 partitions' ends ($mode): 1 to 20" yes \
        "$([[ ${lo:-0} -ge 1 && ${lo:-0} -le 20 ]] && echo yes || echo "no (${lo:-none})")"
done

[[ $fails == 0 ]] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
