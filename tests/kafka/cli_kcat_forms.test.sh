#!/usr/bin/env bash
# The kconsume CLI's kcat forms against a real cluster (tests/run-suite sets KC_*), each compared
# with what kcat prints on the same records where kcat has the form:
#  -o -N (N before each partition's end), -o s@MS -o e@MS (a time window; e@ exits by itself),
#  -o stored (group.id's committed offsets in manual assignment), -F FILE (a kcat.conf with a
#  librdkafka key; a bad line, an unknown key and a missing file exit 3 naming the place),
#  kcat's default file (~/.config/kcat.conf or KCAT_CONFIG) without -b, -X dump, -X list, and -s deserializers (pack formats, json, bytes that do not fit, with -J).
set -euo pipefail
for v in KC_BOOTSTRAP KC_TESTKIT KC_CLUSTER_DIR KC_BUILD_DIR; do
    [[ -n ${!v:-} ]] || { echo "FAIL: $v is not set (run under tests/run-suite)" >&2; exit 1; }
done
cli=$KC_BUILD_DIR/kconsume
[[ -x $cli ]] || { echo "FAIL: $cli is not built" >&2; exit 1; }
tmp=$(mktemp -d)
topic=cli-forms-$$-$RANDOM
sdtopic=cli-serdes-$$-$RANDOM
cleanup() {
    "$KC_TESTKIT" topic delete "$topic" --dir "$KC_CLUSTER_DIR" >/dev/null 2>&1 || true
    "$KC_TESTKIT" topic delete "$sdtopic" --dir "$KC_CLUSTER_DIR" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
B=$KC_BOOTSTRAP

"$KC_TESTKIT" topic create "$topic" --partitions 2 --dir "$KC_CLUSTER_DIR"
# Three bursts a second apart into both partitions, so each burst has its own timestamps.
for burst in a b c; do
    for p in 0 1; do
        seq 1 10 | sed "s/^/$burst$p-/" | kcat -P -b "$B" -t "$topic" -p "$p"
    done
    sleep 1.2
done
timeout 60 "$cli" -b "$B" -t "$topic" -o beginning -e -f '%p %o %T %s\n' >"$tmp/all" 2>"$tmp/all.err" ||
    fail "full read exited $? ($(cat "$tmp/all.err"))"
[[ $(wc -l <"$tmp/all") -eq 60 ]] || fail "full read printed $(wc -l <"$tmp/all") records, want 60"

# --- -o -N -----------------------------------------------------------------------------------
timeout 60 "$cli" -b "$B" -t "$topic" -o -3 -e -f '%p %o %s\n' >"$tmp/tail" 2>"$tmp/tail.err" ||
    fail "-o -3 exited $? ($(cat "$tmp/tail.err"))"
kcat -b "$B" -C -t "$topic" -o -3 -e -q -f '%p %o %s\n' >"$tmp/tail.kcat"
[[ $(wc -l <"$tmp/tail") -eq 6 ]] || fail "-o -3: $(wc -l <"$tmp/tail") records, want 3 per partition"
awk '{ print $1, $2, $4 }' "$tmp/all" | awk '$2 >= 27' | sort | cmp -s - <(sort "$tmp/tail") ||
    fail "-o -3: not offsets 27..29 of each partition: $(cat "$tmp/tail")"
sort "$tmp/tail.kcat" | cmp -s - <(sort "$tmp/tail") || fail "-o -3: kcat printed other records"
timeout 60 "$cli" -b "$B" -t "$topic" -o -1000 -e -f '%p %o\n' >"$tmp/tailbig" 2>&1 ||
    fail "-o -1000 exited $?"
[[ $(wc -l <"$tmp/tailbig") -eq 60 ]] || fail "-o -1000: $(wc -l <"$tmp/tailbig") records, want all 60"
echo "ok: -o -3 printed the last 3 of each partition, as kcat; -o -1000 starts at the log start"

# --- -o s@MS -o e@MS -------------------------------------------------------------------------
# s@ = the first timestamp of burst b, e@ = the first of burst c (the earliest over partitions).
s_ts=$(awk '$4 ~ /^b/ { if (!m || $3 < m) m = $3 } END { print m }' "$tmp/all")
e_ts=$(awk '$4 ~ /^c/ { if (!m || $3 < m) m = $3 } END { print m }' "$tmp/all")
(( s_ts < e_ts )) || fail "bursts b and c share timestamps ($s_ts, $e_ts)"
# No -e: e@ alone ends every partition (each has records past it) and exits 0.
timeout 60 "$cli" -b "$B" -t "$topic" -o "s@$s_ts" -o "e@$e_ts" -f '%p %o %s\n' >"$tmp/win" \
    2>"$tmp/win.err" || fail "-o s@ -o e@ exited $? ($(cat "$tmp/win.err"))"
awk -v s="$s_ts" -v e="$e_ts" '$3 >= s && $3 < e { print $1, $2, $4 }' "$tmp/all" | sort >"$tmp/win.want"
[[ -s $tmp/win.want ]] || fail "no record in the window"
sort "$tmp/win" | cmp -s - "$tmp/win.want" ||
    fail "-o s@$s_ts -o e@$e_ts: got $(wc -l <"$tmp/win") records, want $(wc -l <"$tmp/win.want")"
kcat -b "$B" -C -t "$topic" -o "s@$s_ts" -o "e@$e_ts" -e -q -f '%p %o %s\n' | sort |
    cmp -s - "$tmp/win.want" || fail "-o s@ -o e@: kcat printed other records"
# e@ before every record: nothing printed, exits at once; e@ with -G too.
timeout 60 "$cli" -b "$B" -t "$topic" -o beginning -o e@1 -f '%o\n' >"$tmp/none" 2>&1 ||
    fail "-o e@1 exited $?"
[[ ! -s $tmp/none ]] || fail "-o e@1 printed $(wc -l <"$tmp/none") records"
timeout 60 "$cli" -b "$B" -G "forms-$$" -t "$topic" -o beginning -o "e@$e_ts" -f '%p %o %s\n' \
    >"$tmp/gwin" 2>"$tmp/gwin.err" || fail "-G -o e@ exited $? ($(cat "$tmp/gwin.err"))"
awk -v e="$e_ts" '$3 < e { print $1, $2, $4 }' "$tmp/all" | sort | cmp -s - <(sort "$tmp/gwin") ||
    fail "-G -o e@$e_ts: not exactly the records before it ($(wc -l <"$tmp/gwin") lines)"
echo "ok: -o s@ -o e@ printed the $(wc -l <"$tmp/win.want") records of the window (as kcat) and exited; -G with e@ too"

# --- -o stored -------------------------------------------------------------------------------
# The group above committed what it printed (bursts a and b); manual assignment with its
# group.id starts there; a group.id without commits falls back to auto.offset.reset.
timeout 60 "$cli" -b "$B" -X "group.id=forms-$$" -t "$topic" -o stored -e -f '%p %o %s\n' \
    >"$tmp/stored" 2>"$tmp/stored.err" || fail "-o stored exited $? ($(cat "$tmp/stored.err"))"
awk -v e="$e_ts" '$3 >= e { print $1, $2, $4 }' "$tmp/all" | sort | cmp -s - <(sort "$tmp/stored") ||
    fail "-o stored: not exactly the records after the group's commit ($(wc -l <"$tmp/stored") lines)"
timeout 60 "$cli" -b "$B" -X "group.id=fresh-$$" -X auto.offset.reset=earliest -t "$topic" \
    -o stored -e -f '%o\n' >"$tmp/fresh" 2>&1 || fail "-o stored (no commits) exited $?"
[[ $(wc -l <"$tmp/fresh") -eq 60 ]] || fail "-o stored without commits: $(wc -l <"$tmp/fresh") records"
echo "ok: -o stored starts at the committed offsets (20 records left), else auto.offset.reset"

# --- -F FILE ---------------------------------------------------------------------------------
cat >"$tmp/kcat.conf" <<CONF
# a kcat.conf: librdkafka's names where kconsume takes them
metadata.broker.list = $B

client.id=from-file
CONF
timeout 60 "$cli" -F "$tmp/kcat.conf" -t "$topic" -p 1 -o beginning -e -f '%o\n' >"$tmp/f" \
    2>"$tmp/f.err" || fail "-F exited $? ($(cat "$tmp/f.err"))"
[[ $(wc -l <"$tmp/f") -eq 30 ]] || fail "-F: $(wc -l <"$tmp/f") records of partition 1, want 30"
printf 'bootstrap.servers=%s\nfetch.max.wiat.ms=5\n' "$B" >"$tmp/bad.conf"
rc=0; "$cli" -F "$tmp/bad.conf" -t "$topic" -e >/dev/null 2>"$tmp/fbad.err" || rc=$?
[[ $rc -eq 3 ]] || fail "-F unknown key: exit $rc, want 3"
grep -q "bad.conf:2" "$tmp/fbad.err" && grep -q "fetch.max.wait.ms" "$tmp/fbad.err" ||
    fail "-F unknown key: message lacks file:line or the suggestion: $(cat "$tmp/fbad.err")"
printf 'bootstrap.servers=%s\njunk line\n' "$B" >"$tmp/junk.conf"
rc=0; "$cli" -F "$tmp/junk.conf" -t "$topic" -e >/dev/null 2>"$tmp/fjunk.err" || rc=$?
[[ $rc -eq 3 ]] && grep -q "line 2: expected key=value" "$tmp/fjunk.err" ||
    fail "-F junk line: exit $rc, $(cat "$tmp/fjunk.err")"
rc=0; "$cli" -F "$tmp/missing.conf" -t "$topic" -e >/dev/null 2>"$tmp/fmiss.err" || rc=$?
[[ $rc -eq 3 ]] && grep -q "missing.conf: No such file" "$tmp/fmiss.err" ||
    fail "-F missing file: exit $rc, $(cat "$tmp/fmiss.err")"
printf 'client.id=x\n' >"$tmp/nob.conf"
rc=0; "$cli" -F "$tmp/nob.conf" -t "$topic" -e >/dev/null 2>"$tmp/fnob.err" || rc=$?
[[ $rc -eq 3 ]] && grep -q "bootstrap.servers is required" "$tmp/fnob.err" ||
    fail "-F without brokers: exit $rc, $(cat "$tmp/fnob.err")"
echo "ok: -F reads a kcat.conf (metadata.broker.list); a bad key, a bad line, a missing file exit 3"

# --- kcat's default file, and -X dump ----------------------------------------------------------
# (KCAT_CONFIG unset unless a case sets it: the caller's environment must not decide.)
nokc() { env -u KCAT_CONFIG "$@"; }
mkdir -p "$tmp/home/.config"
printf '# kcat: librdkafka keys kconsume does not take are skipped\nmetadata.broker.list=%s\nfetch.error.backoff.ms=10\n' \
    "$B" >"$tmp/home/.config/kcat.conf"
HOME=$tmp/home nokc timeout 60 "$cli" -t "$topic" -p 1 -o beginning -e -f '%o\n' >"$tmp/d" \
    2>"$tmp/d.err" || fail "~/.config/kcat.conf without -b: exited $? ($(cat "$tmp/d.err"))"
[[ $(wc -l <"$tmp/d") -eq 30 ]] || fail "~/.config/kcat.conf: $(wc -l <"$tmp/d") records, want 30"
grep -q 'kcat.conf:3: "fetch.error.backoff.ms" is not a kconsume key: skipped' "$tmp/d.err" ||
    fail "the default file's unknown key: $(cat "$tmp/d.err")"
HOME=/nonexistent KCAT_CONFIG=$tmp/kcat.conf timeout 60 "$cli" -t "$topic" -p 1 -o beginning -e \
    -f '%o\n' >"$tmp/k" 2>"$tmp/k.err" || fail "KCAT_CONFIG: exited $? ($(cat "$tmp/k.err"))"
[[ $(wc -l <"$tmp/k") -eq 30 ]] || fail "KCAT_CONFIG: $(wc -l <"$tmp/k") records, want 30"
printf 'metadata.broker.list=127.0.0.1:1\n' >"$tmp/home/.config/kcat.conf" # flags win over it
HOME=$tmp/home nokc timeout 60 "$cli" -b "$B" -t "$topic" -p 1 -o beginning -e -f '%o\n' \
    >"$tmp/bw" 2>"$tmp/bw.err" || fail "-b over the default file: exited $? ($(cat "$tmp/bw.err"))"
[[ $(wc -l <"$tmp/bw") -eq 30 ]] || fail "-b over the default file: $(wc -l <"$tmp/bw") records"
HOME=$tmp/home nokc timeout 60 "$cli" -F "$tmp/kcat.conf" -t "$topic" -p 1 -o beginning -e \
    -f '%o\n' >"$tmp/w" 2>"$tmp/w.err" || fail "-F instead of the default file: exited $?"
[[ $(wc -l <"$tmp/w") -eq 30 ]] || fail "-F instead of the default file: $(wc -l <"$tmp/w") records"
rc=0; HOME=$tmp/home nokc "$cli" -F none -t "$topic" -e >/dev/null 2>"$tmp/none.err" || rc=$?
[[ $rc -eq 2 ]] && grep -q "kcat.conf" "$tmp/none.err" ||
    fail "-F none reads no file: exit $rc, $(cat "$tmp/none.err")"
rc=0; HOME=/nonexistent nokc "$cli" -t "$topic" -e >/dev/null 2>"$tmp/nob.err" || rc=$?
[[ $rc -eq 2 ]] && grep -q "kcat.conf" "$tmp/nob.err" ||
    fail "no -b, no file: exit $rc, $(cat "$tmp/nob.err")"
HOME=/nonexistent nokc "$cli" -F "$tmp/kcat.conf" -X fetch.max.wait.ms=7 \
    -X sasl.password=kc-dump-pw-Q7 -X dump >"$tmp/dump" 2>"$tmp/dump.err" ||
    fail "-X dump exited $? ($(cat "$tmp/dump.err"))"
grep -qx "bootstrap.servers=$B" "$tmp/dump" && grep -qx "client.id=from-file" "$tmp/dump" &&
    grep -qx "fetch.max.wait.ms=7" "$tmp/dump" && grep -qx "sasl.password=\[redacted\]" "$tmp/dump" &&
    grep -qx "sasl.username=" "$tmp/dump" && grep -qx "auto.offset.reset=latest" "$tmp/dump" ||
    fail "-X dump: $(head -c 2000 "$tmp/dump")"
! grep -q "kc-dump-pw-Q7" "$tmp/dump" "$tmp/dump.err" || fail "-X dump printed the password"
grep -q "a run would refuse it" "$tmp/dump.err" || fail "-X dump: no word of the refused settings"
[[ $(wc -l <"$tmp/dump") -eq $("$cli" -X list | grep -c '^  [a-z]') ]] ||
    fail "-X dump: $(wc -l <"$tmp/dump") lines, not one per key"
echo "ok: kcat's default file (~/.config/kcat.conf, KCAT_CONFIG) without -b, its unknown keys skipped, flags and -F over it, -F none; -X dump"

# --- -X list ---------------------------------------------------------------------------------
"$cli" -X list >"$tmp/list" || fail "-X list exited $?"
for k in bootstrap.servers group.id fetch.max.wait.ms isolation.level; do
    grep -q "^$k\b\|^  *$k\b\|\b$k\b" "$tmp/list" || fail "-X list lacks $k"
done
cmp -s "$tmp/list" <("$cli" --help | sed -n '/^Configuration keys (-X):$/,$p' | tail -n +2) ||
    fail "-X list is not --help's key reference"
echo "ok: -X list prints the key reference ($(wc -l <"$tmp/list") lines) without a cluster"

# --- -s deserializers ------------------------------------------------------------------------
"$KC_TESTKIT" topic create "$sdtopic" --partitions 1 --dir "$KC_CLUSTER_DIR"
printf '%s\n' 'k1|ABCD' 'k2|{"n":1,"a":[true,null],"o":{}}' 'k3|AB' |
    kcat -P -b "$B" -t "$sdtopic" -p 0 -K '|'
timeout 60 "$cli" -b "$B" -t "$sdtopic" -o beginning -c 1 -s 'value=<I' -s key=s -f '%k=%s\n' \
    >"$tmp/s1" 2>&1 || fail "-s <I exited $?"
[[ $(cat "$tmp/s1") == "k1=1145258561" ]] || fail "-s value=<I: '$(cat "$tmp/s1")'"
timeout 60 "$cli" -b "$B" -t "$sdtopic" -o beginning -c 1 -s 'value=>hcc' -f '%s\n' >"$tmp/s2" 2>&1 ||
    fail "-s >hcc exited $?"
[[ $(cat "$tmp/s2") == "16706 C D" ]] || fail "-s value=>hcc: '$(cat "$tmp/s2")'"
timeout 60 "$cli" -b "$B" -t "$sdtopic" -o 1 -p 0 -c 1 -s value=json -f '%s\n' >"$tmp/s3" 2>&1 ||
    fail "-s json exited $?"
printf '{\n  "n": 1,\n  "a": [\n    true,\n    null\n  ],\n  "o": {}\n}\n' | cmp -s - "$tmp/s3" ||
    fail "-s value=json: $(cat "$tmp/s3")"
timeout 60 "$cli" -b "$B" -t "$sdtopic" -o 2 -p 0 -c 1 -s value=I -f '%s\n' >"$tmp/s4" \
    2>"$tmp/s4.err" || fail "-s I on 2 bytes exited $?"
[[ $(cat "$tmp/s4") == "AB" ]] || fail "-s on a short value: printed '$(cat "$tmp/s4")', want it raw"
grep -q "offset 2: value is not -s I: 'I' needs 4 bytes at byte 0, 2 left" "$tmp/s4.err" ||
    fail "-s on a short value: stderr '$(cat "$tmp/s4.err")'"
timeout 60 "$cli" -b "$B" -t "$sdtopic" -o beginning -c 1 -s '>i' -J >"$tmp/s5" 2>&1 ||
    fail "-s -J exited $?"
grep -q '"key":"k1","payload":"1094861636"}' "$tmp/s5" || fail "-s >i -J: $(cat "$tmp/s5")"
rc=0; "$cli" -b "$B" -t "$sdtopic" -s value=iz >/dev/null 2>"$tmp/s6.err" || rc=$?
[[ $rc -eq 2 ]] && grep -q "'z' at position 2" "$tmp/s6.err" || fail "-s iz: exit $rc, $(cat "$tmp/s6.err")"
echo "ok: -s pack formats, json, a short value printed raw with a reason, -J, a bad spec exits 2"
echo "PASS"
