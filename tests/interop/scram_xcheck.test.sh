#!/usr/bin/env bash
# Cross-checks io/sasl.c's SCRAM-SHA-512 against Kafka's own ScramFormatter: Java computes the
# client-final and server-final messages for the fixed inputs of test_sasl.c's
# scram_sha512_matches_kafka_scram_formatter, and that test is rerun with them.
set -euo pipefail
src=${KC_SOURCE_DIR:?} build=${KC_BUILD_DIR:?}
jars=$("$src/tests/testkit/fetch-kafka")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
javac -d "$tmp" -cp "$jars/*" "$src/tests/interop/ScramXcheck.java"
# Same inputs as X_USER, X_PASS, X_CNONCE, X_SNONCE, X_SALT in tests/unit/test_sasl.c.
KC_SCRAM512_XCHECK=$(java -Xmx64m -cp "$tmp:$jars/*" ScramXcheck SCRAM-SHA-512 'al,ice=' \
    $'p@ss w\xc3\xb6rd' fyko+d2lbbFgONRv9qkxdawL 3rfcNHYJY1ZVvWVs7j 'QSXCR+Q6sek8bf92' 4096 2>/dev/null)
export KC_SCRAM512_XCHECK
echo "Kafka ScramFormatter says:"; echo "$KC_SCRAM512_XCHECK"
CMOCKA_TEST_ABORT=0 "$build/tests/unit_test_sasl" 2>&1 | tee "$tmp/out"
grep -q "using Kafka ScramFormatter values" "$tmp/out"
grep -q "PASSED" "$tmp/out" && ! grep -q FAILED "$tmp/out"
