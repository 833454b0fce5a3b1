#!/usr/bin/env bash
# The CLI's --metrics-port against the suite's cluster (tests/run-suite sets KC_*): a group member
# whose client.id holds a double quote, a backslash and a newline reads a topic to its end while
# serving kc_metrics over HTTP; the listener is on 127.0.0.1 only; a GET answers 200 with the
# Prometheus text type, and the body parses with the Prometheus reference parser
# (tests/support/check_metrics.py), every sample labelled with that exact client.id, the workers'
# records adding up to what was produced and no partition lagging. SIGTERM then exits 143.
set -euo pipefail
for v in KC_BOOTSTRAP KC_TESTKIT KC_CLUSTER_DIR KC_BUILD_DIR KC_SOURCE_DIR; do
    [[ -n ${!v:-} ]] || { echo "FAIL: $v is not set (run under tests/run-suite)" >&2; exit 1; }
done
cli=$KC_BUILD_DIR/kconsume
[[ -x $cli ]] || { echo "FAIL: $cli is not built" >&2; exit 1; }
# Debian's interpreter: python3-prometheus-client (tests/testkit/install-deps) is its module.
py=/usr/bin/python3
tmp=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

topic=cli-metrics-$$-$RANDOM
records=150
client_id=$'kc"cli\\met\nrics'
"$KC_TESTKIT" topic create "$topic" --partitions 3 --replication 1 --dir "$KC_CLUSTER_DIR"
"$KC_TESTKIT" produce "$topic" --records "$records" --size 20 --dir "$KC_CLUSTER_DIR" >/dev/null

# A free port: bound and released by the kernel's choice (another process taking it in between
# makes the CLI fail to listen, which this test reports).
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$cli" -b "$KC_BOOTSTRAP" -G "cli-metrics-g-$$" -t "$topic" -o beginning -f '%o\n' \
    -X client.id="$client_id" -X fetch.max.wait.ms=100 --metrics-port "$port" \
    >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 300); do
    (($(wc -l <"$tmp/out") >= records)) && break
    kill -0 "$pid" 2>/dev/null || fail "kconsume exited early: $(cat "$tmp/err")"
    sleep 0.1
done
(($(wc -l <"$tmp/out") == records)) || fail "read $(wc -l <"$tmp/out") of $records records"
sleep 0.5 # the last callbacks' positions are published

ss -ltnH "sport = :$port" >"$tmp/listen"
grep -q "127.0.0.1:$port" "$tmp/listen" || fail "nothing listens on 127.0.0.1:$port: $(cat "$tmp/listen")"
if grep -v "127.0.0.1:$port" "$tmp/listen" | grep -q ":$port"; then
    fail "listening beyond loopback: $(cat "$tmp/listen")"
fi
"$py" - "$port" "$tmp/metrics" <<'PY'
import sys, urllib.request
r = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10)
ctype = r.headers["Content-Type"]
if r.status != 200 or not ctype.startswith("text/plain; version=0.0.4"):
    sys.exit(f"GET /metrics: {r.status} {ctype}")
open(sys.argv[2], "wb").write(r.read())
PY
hex=$(printf '%s' "$client_id" | od -An -tx1 | tr -d ' \n')
"$py" "$KC_SOURCE_DIR/tests/support/check_metrics.py" "$tmp/metrics" --client-id-hex "$hex" \
    --records "$records" || fail "the metrics text does not check"

kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
((rc == 143)) || fail "SIGTERM: exit $rc, want 143 ($(cat "$tmp/err"))"
echo "cli_metrics: $records records, metrics served on 127.0.0.1:$port and parsed"
