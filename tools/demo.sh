#!/usr/bin/env bash
# `make demo`: boots a one-broker testkit cluster, fills a 12-partition topic with a million
# 100-byte records written by Kafka's own Java producer, consumes them with kconsume, and stops
# the broker whatever happens.
#   tools/demo.sh BUILD_DIR      (the Makefile passes build/release)
#   KC_DEMO_PORT_BASE            broker ports (default 29092, away from the test suites' 19092)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build/release}
testkit=$root/tests/testkit/cluster
dir=$(mktemp -d /tmp/kconsume-demo.XXXXXX)
topic=demo
records=1000000

cleanup() {
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

# The consume step: a kconsume run from $build replaces this line once the runtime lands.
echo "demo: not yet: the consumer lands with the runtime issue (#6)"
