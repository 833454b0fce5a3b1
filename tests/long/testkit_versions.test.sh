#!/usr/bin/env bash
# The testkit runs every Kafka release users run (tests/testkit/README.md, "Kafka versions"): for
# each version, a 1-broker cluster is booted with KAFKA_VERSION, a 3-partition topic gets 100
# keyed records (the console producer), and Kafka's own ConsoleConsumer of that version (`cluster
# tool ConsoleConsumer`: the class is picked per version) reads them back. Checked per version:
# `up` and `status` print VERSION=<the version> and the MODE the version runs in, the broker JVM
# runs that version's jars, ZooKeeper mode has its ZooKeeper server running (and KRaft none),
# every record comes back once with its key (key-<i mod 10>, value i), and `down` leaves no
# process of the cluster behind.
#   KC_TESTKIT_VERSIONS   the versions (default: every one the README lists)
#   KC_VERSIONS_PORT_BASE the clusters' port base (default: the suite cluster's first port + 600,
#                         or 39092 without a suite cluster); the clusters run one after another
set -euo pipefail
src=${KC_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
testkit=$src/tests/testkit/cluster
versions=${KC_TESTKIT_VERSIONS:-2.8.2 3.7.2 3.9.1 4.0.0 4.1.1 4.2.0 4.3.0 4.4.0}
base=${KC_VERSIONS_PORT_BASE:-}
if [[ -z $base ]]; then
    if [[ -n ${KC_BOOTSTRAP:-} ]]; then
        first=${KC_BOOTSTRAP%%,*}
        base=$((${first##*:} + 600))
    else
        base=39092
    fi
fi
fail() { echo "FAIL: $*" >&2; exit 1; }
for c in java mvn unzip pgrep; do
    command -v "$c" >/dev/null || fail "$c is missing (tests/testkit/install-deps installs it)"
done

tmp=$(mktemp -d /tmp/kc-versions.XXXXXX)
cleanup() {
    local d
    for d in "$tmp"/*/; do [[ -f $d/cluster.env ]] && "$testkit" down --dir "$d" >/dev/null 2>&1; done
    rm -rf "$tmp"
}
trap cleanup EXIT

# The processes whose command line names DIR (brokers, ZooKeeper, tools): none may outlive `down`.
# (pgrep never lists itself; it exits 1 when it finds none.)
procs_of() { { pgrep -f -- "$1/" || true; } | wc -l; }

for v in $versions; do
    d=$tmp/$v
    mkdir -p "$d"
    want_mode=kraft
    [[ $v == 2.* ]] && want_mode=zookeeper
    t0=$SECONDS
    KAFKA_VERSION=$v "$testkit" up --dir "$d" --brokers 1 --port-base "$base" >"$d.vars" 2>"$d.up.err" ||
        fail "$v: up failed: $(tail -n 20 "$d.up.err")"
    grep -qx "VERSION=$v" "$d.vars" || fail "$v: up printed no VERSION=$v ($(tr '\n' ' ' <"$d.vars"))"
    grep -qx "MODE=$want_mode" "$d.vars" || fail "$v: up printed no MODE=$want_mode ($(tr '\n' ' ' <"$d.vars"))"
    bootstrap=$(sed -n 's/^BOOTSTRAP=//p' "$d.vars")
    [[ $bootstrap == "127.0.0.1:$base" ]] || fail "$v: BOOTSTRAP=$bootstrap, expected 127.0.0.1:$base"

    # The broker runs this version's jars (fetch-kafka's folder is named after the version), and
    # the mode's processes are there: a ZooKeeper server in ZooKeeper mode, none in KRaft.
    pid=$(<"$d/node-1/pid")
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "/kafka-$v-" || fail "$v: the broker does not run Kafka $v's jars"
    if [[ $want_mode == zookeeper ]]; then
        [[ -f $d/zookeeper/pid ]] && kill -0 "$(<"$d/zookeeper/pid")" || fail "$v: no ZooKeeper server running"
    else
        [[ ! -e $d/zookeeper ]] || fail "$v: KRaft cluster with a ZooKeeper folder"
    fi

    # Any later KAFKA_VERSION is ignored: the subcommands use the version recorded by `up`.
    KAFKA_VERSION=4.1.1 "$testkit" status --dir "$d" >"$d.status" || fail "$v: status failed"
    grep -qx "VERSION=$v" "$d.status" || fail "$v: status printed no VERSION=$v"
    grep -qx "MODE=$want_mode" "$d.status" || fail "$v: status printed no MODE=$want_mode"

    "$testkit" topic create vt --partitions 3 --dir "$d" || fail "$v: topic create failed"
    "$testkit" produce vt --records 100 --size 4 --keys 10 --dir "$d" 2>"$d.produce.err" ||
        fail "$v: produce failed: $(tail -n 5 "$d.produce.err")"
    # --property is the one option name every version takes (4.2+ warns about it on stdout,
    # hence the filter on record lines: "key<TAB>value").
    timeout 120 "$testkit" tool ConsoleConsumer --dir "$d" --bootstrap-server "$bootstrap" \
        --topic vt --from-beginning --max-messages 100 --timeout-ms 30000 \
        --property print.key=true 2>"$d.consume.err" | grep $'\t' >"$d.records" ||
        fail "$v: ConsoleConsumer read nothing: $(tail -n 5 "$d.consume.err")"
    awk -F '\t' '
        { n++ }
        $1 != "key-" ($2 % 10) { print "record " NR ": key " $1 " with value " $2; bad = 1 }
        seen[$2 + 0]++ { print "value " $2 " read twice"; bad = 1 }
        END {
            if (n != 100) { print n " records read, 100 produced"; bad = 1 }
            for (i = 0; i < 100; i++) if (!(i in seen)) { print "value " i " never read"; bad = 1; exit }
            exit bad
        }' "$d.records" || fail "$v: the records read back are not the 100 produced"

    "$testkit" down --dir "$d" || fail "$v: down failed"
    left=$(procs_of "$d")
    ((left == 0)) || fail "$v: $left process(es) of $d left after down"
    echo "ok: Kafka $v ($want_mode): up, status, topic, 100 keyed records read back, down ($((SECONDS - t0)) s)"
done
