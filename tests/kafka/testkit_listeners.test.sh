#!/usr/bin/env bash
# The testkit's SSL and SASL_SSL listeners work with real peers, and SCRAM refuses a wrong
# password. Runs against the cluster tests/run-suite booted (KC_* variables).
#
# SSL is checked with kcat (librdkafka). SCRAM is checked with the Java client: Debian's
# librdkafka (2.0.x) computes a SCRAM client-final nonce that Kafka 4.x rejects (fixed in
# librdkafka 2.6.1), so kcat cannot authenticate to these brokers at all.
set -euo pipefail
for v in KC_BOOTSTRAP KC_SSL_BOOTSTRAP KC_SASL_SSL_BOOTSTRAP KC_CA_FILE KC_SCRAM_USER \
    KC_SCRAM_PASSWORD KC_TESTKIT; do
    [[ -n ${!v:-} ]] || { echo "FAIL: $v is not set (run under tests/run-suite)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nbrokers=$(tr ',' '\n' <<<"$KC_BOOTSTRAP" | wc -l)

# --- SSL: metadata over TLS, verifying the broker certificate against the testkit CA -----------
out=$(kcat -b "$KC_SSL_BOOTSTRAP" -X security.protocol=ssl -X ssl.ca.location="$KC_CA_FILE" \
    -m 15 -L)
grep -q "^ $nbrokers brokers:" <<<"$out" || { echo "FAIL: SSL metadata: $out" >&2; exit 1; }
echo "ok: SSL metadata lists $nbrokers brokers"

# Without the CA the handshake must fail: proves the listener really is TLS with our cert.
if kcat -b "$KC_SSL_BOOTSTRAP" -X security.protocol=ssl -m 5 -L >/dev/null 2>&1; then
    echo "FAIL: SSL accepted without trusting the testkit CA" >&2
    exit 1
fi
echo "ok: SSL refuses an untrusted certificate"

# --- SASL_SSL with SCRAM: Java AdminClient (via TopicCommand --list) ----------------------------
java_list() { # java_list MECHANISM PASSWORD; exit status of an admin call over SASL_SSL
    cat >"$tmp/client.properties" <<PROPS
security.protocol=SASL_SSL
sasl.mechanism=$1
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$KC_SCRAM_USER" password="$2";
ssl.truststore.type=PEM
ssl.truststore.location=$KC_CA_FILE
request.timeout.ms=10000
default.api.timeout.ms=15000
PROPS
    "$KC_TESTKIT" tool TopicCommand --bootstrap-server "$KC_SASL_SSL_BOOTSTRAP" \
        --command-config "$tmp/client.properties" --list --dir "${KC_CLUSTER_DIR:-$tmp}" >"$tmp/out" 2>&1
}
for mech in SCRAM-SHA-256 SCRAM-SHA-512; do
    if ! java_list "$mech" "$KC_SCRAM_PASSWORD"; then
        echo "FAIL: $mech with the right password:" >&2
        grep -v '^\s*at ' "$tmp/out" | head -20 >&2
        exit 1
    fi
    echo "ok: $mech authenticates"
done
if java_list SCRAM-SHA-256 "not-$KC_SCRAM_PASSWORD"; then
    echo "FAIL: SCRAM-SHA-256 accepted a wrong password" >&2
    exit 1
fi
grep -q "SaslAuthenticationException\|invalid credentials" "$tmp/out" ||
    { echo "FAIL: wrong password failed for another reason:" >&2; head -20 "$tmp/out" >&2; exit 1; }
echo "ok: a wrong SCRAM password is refused"

# --- mTLS (when the cluster has the mtls listener) ------------------------------------------------
# The client keystore is PKCS#12 from OpenSSL 3 (PBES2, AES-256): Java must read it as well, and
# the listener must refuse a client without a certificate.
if [[ -z ${KC_MTLS_BOOTSTRAP:-} ]]; then
    echo "ok: no mtls listener in this cluster (KC_MTLS_BOOTSTRAP unset): mTLS checks skipped"
    exit 0
fi
cat >"$tmp/mtls.properties" <<PROPS
security.protocol=SSL
ssl.truststore.type=PEM
ssl.truststore.location=$KC_CA_FILE
ssl.keystore.type=PKCS12
ssl.keystore.location=$KC_CLIENT_KEYSTORE
ssl.keystore.password=$KC_CLIENT_KEYSTORE_PASSWORD
request.timeout.ms=10000
default.api.timeout.ms=15000
PROPS
if ! "$KC_TESTKIT" tool TopicCommand --bootstrap-server "$KC_MTLS_BOOTSTRAP" \
    --command-config "$tmp/mtls.properties" --list --dir "${KC_CLUSTER_DIR:-$tmp}" >"$tmp/out" 2>&1; then
    echo "FAIL: the Java client with the PKCS#12 keystore over mTLS:" >&2
    grep -v '^\s*at ' "$tmp/out" | head -20 >&2
    exit 1
fi
echo "ok: Java reads the PKCS#12 keystore and logs in over mTLS"
out=$(kcat -b "$KC_MTLS_BOOTSTRAP" -X security.protocol=ssl -X ssl.ca.location="$KC_CA_FILE" \
    -X ssl.certificate.location="$KC_CLIENT_CERT_PEM" -X ssl.key.location="$KC_CLIENT_KEY_PEM" \
    -m 15 -L)
grep -q "^ $nbrokers brokers:" <<<"$out" || { echo "FAIL: mTLS metadata (kcat): $out" >&2; exit 1; }
echo "ok: kcat with the client PEM files lists $nbrokers brokers over mTLS"
if kcat -b "$KC_MTLS_BOOTSTRAP" -X security.protocol=ssl -X ssl.ca.location="$KC_CA_FILE" \
    -m 5 -L >/dev/null 2>&1; then
    echo "FAIL: the mtls listener accepted a client without a certificate" >&2
    exit 1
fi
echo "ok: the mtls listener refuses a client without a certificate"
