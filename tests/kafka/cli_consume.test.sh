#!/usr/bin/env bash
# The kconsume CLI against the suite's cluster (tests/run-suite sets KC_*): a 12-partition topic
# read to the end with -e is checked record by record (every offset of every partition exactly
# once, in order per partition, every produced value once, the same records kcat reads), then
# -o end, -p with -o OFFSET, -p with -o @MS (seek to timestamp), -c COUNT, SIGINT, a bad flag
# (exit 2) and an unknown -X key (exit 3).
set -euo pipefail
for v in KC_BOOTSTRAP KC_TESTKIT KC_CLUSTER_DIR KC_BUILD_DIR; do
    [[ -n ${!v:-} ]] || { echo "FAIL: $v is not set (run under tests/run-suite)" >&2; exit 1; }
done
cli=$KC_BUILD_DIR/kconsume
[[ -x $cli ]] || {
    echo "FAIL: $cli is not built" >&2
    exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

topic=cli-consume-$$-$RANDOM
records=20000
"$KC_TESTKIT" topic create "$topic" --partitions 12 --dir "$KC_CLUSTER_DIR"
# --keys: value = the record index zero-padded to 8 bytes, so each value identifies its record.
"$KC_TESTKIT" produce "$topic" --records "$records" --size 8 --keys 37 --dir "$KC_CLUSTER_DIR"

# --- 1. everything to the end, checked record by record ----------------------------------------
timeout 120 "$cli" -b "$KC_BOOTSTRAP" -t "$topic" -o beginning -e -f '%p %o %s\n' --workers 4 \
    >"$tmp/all" 2>"$tmp/all.err" || fail "-e run exited $? ($(cat "$tmp/all.err"))"
awk -v want="$records" '
    NF != 3 { print "malformed line " NR ": " $0; bad = 1; exit }
    {
        # offsets of a partition arrive in order, starting at 0, without gap or repeat
        if ($2 != next_off[$1] + 0) {
            printf "partition %s: offset %s where %d was due (line %d)\n", $1, $2, next_off[$1], NR
            bad = 1; exit
        }
        next_off[$1] = $2 + 1
        if (seen[$3]++) { print "value " $3 " printed twice"; bad = 1; exit }
        if ($3 + 0 < 0 || $3 + 0 >= want) { print "value " $3 " was never produced"; bad = 1; exit }
        n++
    }
    END {
        if (bad) exit 1
        if (n != want) { printf "%d records printed, %d produced\n", n, want; exit 1 }
        for (p in next_off) if (p + 0 < 0 || p + 0 > 11) { print "partition " p " does not exist"; exit 1 }
    }' "$tmp/all" || fail "record-by-record check of the -e output"
echo "ok: -e read $records records: every offset of every partition once, in order"

# The same (partition, offset, value) triples as an independent client reads.
kcat -b "$KC_BOOTSTRAP" -C -t "$topic" -o beginning -e -q -f '%p %o %s\n' >"$tmp/kcat"
sort "$tmp/all" >"$tmp/all.sorted"
sort "$tmp/kcat" | cmp -s - "$tmp/all.sorted" || fail "kconsume and kcat read different records"
echo "ok: identical to kcat's records"

# Partition 3's end offset, for the -p test (the highest offset printed + 1).
p3_end=$(awk '$1 == 3 { e = $2 + 1 } END { print e + 0 }' "$tmp/all")

# --- 2. -o end -e: nothing new, so nothing printed, and it exits -------------------------------
timeout 60 "$cli" -b "$KC_BOOTSTRAP" -t "$topic" -o end -e -f '%p %o\n' >"$tmp/end" 2>"$tmp/end.err" ||
    fail "-o end -e exited $? ($(cat "$tmp/end.err"))"
[[ ! -s $tmp/end ]] || fail "-o end -e printed $(wc -l <"$tmp/end") records"
echo "ok: -o end -e prints nothing and exits 0"

# --- 3. -p 3 -o OFFSET -e: exactly partition 3 from OFFSET to its end, same values -------------
(( p3_end >= 2 )) || fail "partition 3 holds $p3_end records; the keys should have spread more"
from=$(( p3_end / 2 ))
timeout 60 "$cli" -b "$KC_BOOTSTRAP" -t "$topic" -p 3 -o "$from" -e -f '%p %o %s\n' \
    >"$tmp/p3" 2>"$tmp/p3.err" || fail "-p 3 -o $from exited $? ($(cat "$tmp/p3.err"))"
awk -v from="$from" '$1 == 3 && $2 >= from' "$tmp/all" | cmp -s - "$tmp/p3" ||
    fail "-p 3 -o $from: not exactly partition 3's records $from..$((p3_end - 1)) in order"
echo "ok: -p 3 -o $from printed offsets $from..$((p3_end - 1)) of partition 3, nothing else"

# --- 3b. -p 3 -o @MS -e: from the first record whose timestamp is >= MS ------------------------
# The producer stamps CreateTime itself, so the times come from a run with %T; T is taken at a
# change of timestamp (offset k > 0 whose time exceeds its predecessor's) when there is one, so
# a seek that ignored MS and started at the beginning would print more.
timeout 60 "$cli" -b "$KC_BOOTSTRAP" -t "$topic" -p 3 -o beginning -e -f '%o %T\n' \
    >"$tmp/p3t" 2>"$tmp/p3t.err" || fail "-p 3 %T run exited $? ($(cat "$tmp/p3t.err"))"
read -r k ts < <(awk 'NR > 1 && $2 > prev { print $1, $2; found = 1; exit }
                      { prev = $2; if (NR == 1) { o0 = $1; t0 = $2 } }
                      END { if (!found) print o0, t0 }' "$tmp/p3t")
# The field as printed: awk's "m + 0" would print 13 digits as 1.8e+12.
last_ts=$(sort -k2,2n "$tmp/p3t" | tail -1 | awk '{ print $2 }')
timeout 60 "$cli" -b "$KC_BOOTSTRAP" -t "$topic" -p 3 -o "@$ts" -e -f '%o\n' \
    >"$tmp/p3at" 2>"$tmp/p3at.err" || fail "-o @$ts exited $? ($(cat "$tmp/p3at.err"))"
seq "$k" $((p3_end - 1)) | cmp -s - "$tmp/p3at" ||
    fail "-o @$ts: not exactly offsets $k..$((p3_end - 1)) (got $(head -1 "$tmp/p3at")..., $(wc -l <"$tmp/p3at") lines)"
timeout 60 "$cli" -b "$KC_BOOTSTRAP" -t "$topic" -p 3 -o "@$((last_ts + 1))" -e -f '%o\n' \
    >"$tmp/p3late" 2>"$tmp/p3late.err" || fail "-o @after-last exited $? ($(cat "$tmp/p3late.err"))"
[[ ! -s $tmp/p3late ]] || fail "-o @after-last printed $(wc -l <"$tmp/p3late") records"
echo "ok: -p 3 -o @$ts printed offsets $k..$((p3_end - 1)); a time after the last record prints nothing"

# --- 4. -c COUNT: exactly COUNT records, each a prefix of its partition ------------------------
timeout 60 "$cli" -b "$KC_BOOTSTRAP" -t "$topic" -o beginning -c 777 -f '%p %o %s\n' --workers 4 \
    >"$tmp/c" 2>"$tmp/c.err" || fail "-c 777 exited $? ($(cat "$tmp/c.err"))"
[[ $(wc -l <"$tmp/c") -eq 777 ]] || fail "-c 777 printed $(wc -l <"$tmp/c") records"
awk '{ if ($2 != next_off[$1] + 0) { print "partition " $1 ": offset " $2; exit 1 }
       next_off[$1] = $2 + 1 }' "$tmp/c" || fail "-c: a partition's records are not a prefix in order"
sort "$tmp/c" | comm -23 - "$tmp/all.sorted" | grep -q . && fail "-c printed a record that -e did not"
echo "ok: -c 777 printed exactly 777 records, in order per partition"

# --- 5. SIGINT: a clean close, exit 130 --------------------------------------------------------
"$cli" -b "$KC_BOOTSTRAP" -t "$topic" -o end -f '%o\n' >/dev/null 2>"$tmp/sig.err" &
pid=$!
sleep 3
kill -INT "$pid"
rc=0
timeout 30 tail --pid="$pid" -f /dev/null || fail "SIGINT: still running 30 s later"
wait "$pid" || rc=$?
[[ $rc -eq 130 ]] || fail "SIGINT: exit $rc, want 130 ($(cat "$tmp/sig.err"))"
echo "ok: SIGINT closes and exits 130"

# --- 6. usage and configuration errors ---------------------------------------------------------
rc=0
"$cli" -b "$KC_BOOTSTRAP" -t "$topic" --bogus >/dev/null 2>"$tmp/u.err" || rc=$?
[[ $rc -eq 2 ]] || fail "bad flag: exit $rc, want 2"
grep -q -- "--bogus" "$tmp/u.err" && grep -q -- "--help" "$tmp/u.err" ||
    fail "bad flag: message does not name it or point at --help: $(cat "$tmp/u.err")"
rc=0
"$cli" -b "$KC_BOOTSTRAP" -t "$topic" -X fetch.max.wiat.ms=5 >/dev/null 2>"$tmp/x.err" || rc=$?
[[ $rc -eq 3 ]] || fail "unknown -X key: exit $rc, want 3"
grep -q 'fetch.max.wait.ms' "$tmp/x.err" || fail "unknown -X key: no suggestion: $(cat "$tmp/x.err")"
echo "ok: bad flag exits 2 naming it; unknown -X key exits 3 suggesting fetch.max.wait.ms"

"$KC_TESTKIT" topic delete "$topic" --dir "$KC_CLUSTER_DIR" >/dev/null 2>&1 || true
echo "PASS"
