#!/usr/bin/env bash
# The kconsume CLI's kcat modes against the suite's cluster (tests/run-suite sets KC_*), each
# compared with kcat on the same records and the same cluster:
#  1. -J: records with headers (an empty value among them), null and empty keys, quotes,
#     backslashes, control characters and non-UTF-8 bytes in 3 partitions: kconsume's JSON lines
#     are byte for byte kcat's.
#  2. -L plain: the broker and partition lines are kcat's (the first line, and which broker KRaft
#     names controller, may differ); -L -J: kcat's fields (brokers id/name, partitions
#     leader/replicas/isrs) carry kcat's values; our cluster id, topic id and rack are extra.
#  3. -Q plain and -J: the offsets kcat answers for the same topic:partition:timestamp list.
#  4. Exit codes: an unknown topic (-L) and an unknown partition (-Q) exit 4; an unreachable
#     cluster exits 5 within the query timeout, with one line on stderr; -J with -f exits 2;
#     consuming with -e, a missing topic exits 4 (manual and -G) and an unreachable cluster 5.
set -euo pipefail
for v in KC_BOOTSTRAP KC_TESTKIT KC_CLUSTER_DIR KC_BUILD_DIR; do
    [[ -n ${!v:-} ]] || { echo "FAIL: $v is not set (run under tests/run-suite)" >&2; exit 1; }
done
cli=$KC_BUILD_DIR/kconsume
[[ -x $cli ]] || { echo "FAIL: $cli is not built" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
b=$KC_BOOTSTRAP

topic=cli-json-$$-$RANDOM
"$KC_TESTKIT" topic create "$topic" --partitions 3 --dir "$KC_CLUSTER_DIR"
for p in 0 1 2; do
    printf 'k1:v1-%s\nk"2:v"2\\x\n:nokey\nk4:a\tb\001c\033\200\377\303\251\n' "$p" |
        kcat -b "$b" -P -t "$topic" -p "$p" -K: -H h1=x -H 'h2=y"z' -H empty=
    printf 'plain-%s\n' "$p" | kcat -b "$b" -P -t "$topic" -p "$p"
done

# --- 1. -J records -----------------------------------------------------------------------------
timeout 60 "$cli" -C -b "$b" -t "$topic" -o beginning -e -J >"$tmp/ours" 2>"$tmp/ours.err" ||
    fail "-J exited $? ($(cat "$tmp/ours.err"))"
kcat -b "$b" -C -t "$topic" -o beginning -e -J -q >"$tmp/kcat"
[[ $(wc -l <"$tmp/kcat") -eq 15 ]] || fail "kcat read $(wc -l <"$tmp/kcat") records, 15 produced"
sort "$tmp/ours" >"$tmp/ours.s"
sort "$tmp/kcat" >"$tmp/kcat.s"
cmp -s "$tmp/ours.s" "$tmp/kcat.s" || { diff "$tmp/ours.s" "$tmp/kcat.s" >&2; fail "-J differs from kcat -J"; }
echo "ok: -J: 15 records, byte for byte kcat's"

# --- 2. -L ------------------------------------------------------------------------------------
"$cli" -b "$b" -L -t "$topic" >"$tmp/L.ours" || fail "-L exited $?"
kcat -b "$b" -L -t "$topic" >"$tmp/L.kcat"
norm() { tail -n +2 "$1" | sed 's/ (controller)//'; }
diff <(norm "$tmp/L.ours") <(norm "$tmp/L.kcat") >&2 || fail "-L differs from kcat -L"
grep -q "^Metadata for $topic (cluster " "$tmp/L.ours" || fail "-L's first line: $(head -1 "$tmp/L.ours")"
"$cli" -b "$b" -L -t "$topic" -J >"$tmp/LJ.ours" || fail "-L -J exited $?"
kcat -b "$b" -L -t "$topic" -J >"$tmp/LJ.kcat"
python3 - "$tmp/LJ.ours" "$tmp/LJ.kcat" <<'PY' || fail "-L -J differs from kcat -L -J"
import json, sys
ours, theirs = (json.load(open(f)) for f in sys.argv[1:3])
brokers = lambda m: sorted((x["id"], x["name"]) for x in m["brokers"])
parts = lambda m: {(t["topic"], p["partition"]): (p["leader"], [r["id"] for r in p["replicas"]],
                   [r["id"] for r in p["isrs"]]) for t in m["topics"] for p in t["partitions"]}
assert brokers(ours) == brokers(theirs), (brokers(ours), brokers(theirs))
assert parts(ours) == parts(theirs), (parts(ours), parts(theirs))
assert ours["controllerid"] in [x["id"] for x in ours["brokers"]]
t = ours["topics"][0]
assert len(t["id"]) == 22 and ours["cluster_id"] and t["internal"] is False, ours
print("ok: -L -J: %d brokers, %d partitions as kcat's" % (len(brokers(ours)), len(parts(ours))))
PY
echo "ok: -L: broker and partition lines are kcat's"

# --- 3. -Q ------------------------------------------------------------------------------------
ts=$(head -1 "$tmp/kcat" | sed 's/.*"ts":\([0-9]*\).*/\1/')
args=(-t "$topic:0:0" -t "$topic:1:$ts" -t "$topic:2:$((ts + 3600000))")
"$cli" -b "$b" -Q "${args[@]}" >"$tmp/Q.ours" || fail "-Q exited $?"
kcat -b "$b" -Q "${args[@]}" >"$tmp/Q.kcat"
diff "$tmp/Q.ours" "$tmp/Q.kcat" >&2 || fail "-Q differs from kcat -Q"
"$cli" -b "$b" -Q -J "${args[@]}" >"$tmp/QJ.ours" || fail "-Q -J exited $?"
kcat -b "$b" -Q -J "${args[@]}" >"$tmp/QJ.kcat"
python3 - "$tmp/QJ.ours" "$tmp/QJ.kcat" "$topic" <<'PY' || fail "-Q -J differs from kcat -Q -J"
import json, sys
ours, theirs = (json.load(open(f)) for f in sys.argv[1:3])
t = sys.argv[3]
got = {k: v["offset"] for k, v in ours[t].items() if k != "topic"}
want = {k: v["offset"] for k, v in theirs[t].items() if k != "topic"}
assert got == want and len(got) == 3, (got, want)
print("ok: -Q -J: offsets", got)
PY
echo "ok: -Q: kcat's answers"

# --- 4. exit codes ----------------------------------------------------------------------------
set +e
"$cli" -b "$b" -L -t "$topic-missing" >/dev/null 2>&1; rc=$?
[[ $rc -eq 4 ]] || fail "-L of an unknown topic exited $rc, not 4"
"$cli" -b "$b" -Q -t "$topic:9:0" >/dev/null 2>"$tmp/q9.err"; rc=$?
[[ $rc -eq 4 ]] || fail "-Q of an unknown partition exited $rc, not 4"
grep -q "$topic\[9\]" "$tmp/q9.err" || fail "-Q's message does not name the partition: $(cat "$tmp/q9.err")"
start=$(date +%s)
timeout 60 "$cli" -b 127.0.0.1:1 -L -q >/dev/null 2>"$tmp/unreach.err"; rc=$?
took=$(($(date +%s) - start))
[[ $rc -eq 5 ]] || fail "-L on an unreachable cluster exited $rc, not 5 ($(cat "$tmp/unreach.err"))"
[[ $took -le 25 ]] || fail "-L on an unreachable cluster took ${took}s"
"$cli" -b "$b" -t "$topic" -J -f '%s' >/dev/null 2>&1; rc=$?
[[ $rc -eq 2 ]] || fail "-J with -f exited $rc, not 2"
# Consuming: a missing topic (manual and -G) and an unreachable cluster each say so once, and
# -e exits with its code instead of waiting for an end that cannot come.
timeout 60 "$cli" -b "$b" -t "$topic-missing" -e >/dev/null 2>"$tmp/m.err"; rc=$?
[[ $rc -eq 4 ]] || fail "-e on a missing topic exited $rc, not 4 ($(cat "$tmp/m.err"))"
timeout 60 "$cli" -b "$b" -G "g-$topic" -t "$topic-missing" -e >/dev/null 2>"$tmp/gm.err"; rc=$?
[[ $rc -eq 4 ]] || fail "-G -e on a missing topic exited $rc, not 4 ($(cat "$tmp/gm.err"))"
start=$(date +%s)
timeout 60 "$cli" -b 127.0.0.1:1 -t x -e >/dev/null 2>"$tmp/u.err"; rc=$?
took2=$(($(date +%s) - start))
[[ $rc -eq 5 && $took2 -le 25 ]] || fail "-e against an unreachable cluster: exit $rc after ${took2}s"
[[ $(wc -l <"$tmp/u.err") -le 2 ]] || fail "unreachable cluster: $(wc -l <"$tmp/u.err") lines: $(head -5 "$tmp/u.err")"
set -e
echo "ok: exit codes 4 (unknown topic, unknown partition), 5 (unreachable, ${took}s), 2 (-J with -f)"
echo "ok: consuming: missing topic exits 4 (manual, -G -e), unreachable exits 5 after ${took2}s: $(cat "$tmp/u.err")"
