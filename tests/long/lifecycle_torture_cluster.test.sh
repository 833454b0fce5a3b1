#!/usr/bin/env bash
# The lifecycle torture test (tests/kafka/test_lifecycle_torture.c) against the suite's real
# cluster instead of the memory broker (label long: make test-long): an 8-partition, 3-replica
# topic with a few thousand records per partition, then a seeded run (KC_TORTURE_ITERS, default
# 40; KC_TORTURE_SEED to replay). The checks are the test's own; on a real cluster the order
# check allows offset gaps (transaction markers, compaction), never a record from before a seek.
set -euo pipefail
for v in KC_BOOTSTRAP KC_TESTKIT KC_CLUSTER_DIR KC_BUILD_DIR; do
    [[ -n ${!v:-} ]] || { echo "FAIL: $v is not set (run under tests/run-suite)" >&2; exit 1; }
done
bin=$KC_BUILD_DIR/tests/kafka_test_lifecycle_torture
[[ -x $bin ]] || { echo "FAIL: $bin is not built" >&2; exit 1; }
topic=kc-torture-$$-$RANDOM
"$KC_TESTKIT" topic create "$topic" --partitions 8 --replication 3 --dir "$KC_CLUSTER_DIR" >/dev/null
"$KC_TESTKIT" produce "$topic" --records 24000 --size 20 --dir "$KC_CLUSTER_DIR" >/dev/null
KC_TORTURE_BOOTSTRAP=$KC_BOOTSTRAP KC_TORTURE_TOPIC=$topic \
    KC_TORTURE_ITERS=${KC_TORTURE_ITERS:-40} KC_TORTURE_SEED=${KC_TORTURE_SEED:-$RANDOM} \
    timeout 600 "$bin"
