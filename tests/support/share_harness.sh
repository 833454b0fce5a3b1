# Shared by the scripts that run against the suite's share cluster (tests/kafka/cli_share.test.sh,
# examples_share.test.sh); sourced after `set -euo pipefail`. Checks that tests/run-suite set
# KC_SHARE_BOOTSTRAP, KC_SHARE_CLUSTER_DIR, KC_TESTKIT and KC_BUILD_DIR, and gives: $tmp
# (removed on exit, with every process in $pids killed), fail MESSAGE, $b (the bootstrap),
# kit ARGS... (the testkit against the share cluster), and
# share_topic PREFIX PARTITIONS RECORDS SIZE [keyed]: a new $topic with RECORDS records of SIZE
# bytes (keyed: spread by 16 keys, values the record index, zero-padded; else the producer
# tool's) and a new $group reading it from the earliest.
for v in KC_SHARE_BOOTSTRAP KC_TESTKIT KC_SHARE_CLUSTER_DIR KC_BUILD_DIR; do
    [[ -n ${!v:-} ]] || { echo "FAIL: $v is not set (run under tests/run-suite)" >&2; exit 1; }
done
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
b=$KC_SHARE_BOOTSTRAP
kit() { "$KC_TESTKIT" "$@" --dir "$KC_SHARE_CLUSTER_DIR" >/dev/null; }
share_topic() {
    topic=$1-$$-$RANDOM
    group=$1-g-$$-$RANDOM
    kit topic create "$topic" --partitions "$2"
    kit tool ConfigCommand --bootstrap-server "$b" --entity-type groups --entity-name "$group" \
        --alter --add-config share.auto.offset.reset=earliest
    local keys=()
    [[ ${5:-} == keyed ]] && keys=(--keys 16)
    kit produce "$topic" --records "$3" --size "$4" "${keys[@]}"
}
