/* kc-test-label: threads */
/* TLS material as users have it, through the public consumer, against the testkit's mTLS
 * listener (ssl.client.auth=required, TLS 1.3 only, AES-GCM suites only) and its listener that
 * presents a revoked broker certificate:
 *  - keystore_consume: a PKCS#12 keystore (ssl.keystore.location + password) with the CRL loaded
 *    (the good broker certificate passes the revocation check): every record once, commit and
 *    committed (the coordinator connection is mTLS too);
 *  - pem_consume: the client certificate and key as PEM text (ssl.certificate.pem, ssl.key.pem)
 *    and the CA as text under Java's name (ssl.truststore.certificates);
 *  - no_client_cert: the broker refuses a client without a certificate: KC_ERR_TLS naming the
 *    client certificate, nothing delivered, no reconnect storm;
 *  - wrong_keystore_password: kc_consumer_new fails with KC_ERR_CONFIG naming
 *    ssl.keystore.password and the file, never the password;
 *  - revoked_broker: with ssl.crl.location the revoked certificate fails with "revoked", the
 *    broker and the certificate subject; without it the same listener serves (the certificate is
 *    otherwise valid, so the CRL is what refuses it);
 *  - cipher_not_shared: a TLS 1.3 suite the broker does not enable fails the handshake with a
 *    message naming the cipher suites; a shared one works;
 *  - protocol_bounds: ssl.protocol=TLSv1.2 against the TLS 1.3-only listener is refused naming
 *    the TLS versions; ssl.enabled.protocols=TLSv1.2 against the SSL listener (both versions)
 *    negotiates TLS 1.2, TLSv1.3 negotiates TLS 1.3 (the DEBUG line of each handshake says).
 * Needs KC_MTLS_BOOTSTRAP, KC_REVOKED_BOOTSTRAP, KC_CLIENT_KEYSTORE, KC_CLIENT_KEYSTORE_PASSWORD,
 * KC_CLIENT_CERT_PEM, KC_CLIENT_KEY_PEM, KC_CRL_FILE, KC_CA_FILE, KC_SSL_BOOTSTRAP, KC_TESTKIT,
 * KC_CLUSTER_DIR (tests/run-suite, `cluster up --listeners ...,mtls`). Skipped (77) only when
 * KC_MTLS_BOOTSTRAP is unset: a cluster started without the mtls listener. */
#include "kc_test.h"
#include "tally.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   2
#define RECS 400

static char topic[64];
static kc_tally_t tally;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *logtext; /* under mu: the consumer's DEBUG lines of subsystem "tls" */
static size_t loglen;

static void on_log(void *o, int level, const char *subsystem, const char *name, const char *msg)
{
    (void)o, (void)level, (void)name;
    if (strcmp(subsystem, "tls") != 0)
        return;
    pthread_mutex_lock(&mu);
    size_t n = strlen(msg);
    char *nb = realloc(logtext, loglen + n + 2);
    if (nb) {
        logtext = nb;
        memcpy(logtext + loglen, msg, n);
        loglen += n;
        logtext[loglen++] = '\n';
        logtext[loglen] = '\0';
    }
    pthread_mutex_unlock(&mu);
}

/* A whole (small) file as a NUL-terminated string; the caller frees it. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *buf = calloc(1, 65536);
    assert_non_null(buf);
    size_t n = fread(buf, 1, 65535, f);
    fclose(f);
    assert_true(n > 0 && n < 65535);
    return buf;
}

static int setup(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-mtls-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 1", topic, NP);
    kc_test_cluster("produce %s --records %d --size 100", topic, RECS);
    return 0;
}

static void reset(void)
{
    kc_tally_reset(&tally);
    pthread_mutex_lock(&mu);
    free(logtext);
    logtext = NULL;
    loglen = 0;
    pthread_mutex_unlock(&mu);
}

static void copy_locked(char *out, size_t cap, const char *src)
{
    pthread_mutex_lock(&mu);
    snprintf(out, cap, "%s", src ? src : "");
    pthread_mutex_unlock(&mu);
}

/* SSL to `servers` trusting the testkit CA, DEBUG lines of "tls" captured; no client identity. */
static kc_conf_t *base_conf(const char *servers)
{
    reset();
    kc_conf_t *c = kc_conf_new();
    kc_test_conf_set(c, "bootstrap.servers", servers);
    kc_test_conf_set(c, "security.protocol", "SSL");
    kc_test_conf_set(c, "ssl.ca.location", kc_test_env("KC_CA_FILE"));
    kc_test_conf_set(c, "worker.threads", "2");
    kc_test_conf_set(c, "log.level", "debug");
    kc_test_conf_set(c, "reconnect.backoff.ms", "100");
    kc_error_t e;
    assert_int_equal(kc_conf_set_log_cb(c, on_log, NULL, &e), KC_OK);
    return c;
}

static void with_keystore(kc_conf_t *c)
{
    kc_test_conf_set(c, "ssl.keystore.location", kc_test_env("KC_CLIENT_KEYSTORE"));
    kc_test_conf_set(c, "ssl.keystore.password", kc_test_env("KC_CLIENT_KEYSTORE_PASSWORD"));
}

static kc_consumer_t *start_assigned(kc_conf_t *conf)
{
    kc_callbacks_t cbs = {
        .on_records = kc_tally_on_records, .on_event = kc_tally_on_event, .opaque = &tally};
    kc_consumer_t *c = kc_test_consumer(conf, &cbs);
    kc_test_assign_all(c, topic, NP, KC_OFFSET_BEGINNING);
    return c;
}

static void stop(kc_consumer_t *c)
{
    kc_error_t err;
    int64_t t0 = kc_test_now_ms();
    (void)kc_close(c, 5000, &err);
    kc_destroy(c);
    assert_true(kc_test_now_ms() - t0 < 10000);
}

static void expect_all(const char *what)
{
    kc_tally_expect(&tally, RECS, 60000, what);
    assert_int_equal(kc_tally_errors_of(&tally, KC_ERR_TLS), 0);
}

/* Waits for a TLS error event and returns its text in `out`; nothing may have been delivered. */
static void expect_tls_error(const char *what, char *out, size_t cap)
{
    for (int i = 0; i < 150 && kc_tally_errors_of(&tally, KC_ERR_TLS) == 0; i++)
        kc_test_sleep_ms(100);
    kc_test_sleep_ms(1000); /* room for a reconnect storm to show */
    kc_tally_last_error(&tally, out, cap);
    int64_t tls = kc_tally_errors_of(&tally, KC_ERR_TLS);
    printf("# %s: %lld TLS error(s), %lld other: %s\n", what, (long long)tls,
           (long long)(atomic_load(&tally.errors) - tls), out);
    assert_true(tls > 0);
    assert_int_equal(atomic_load(&tally.total), 0);
}

static void has(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("\"%s\" does not say \"%s\"", text, needle);
}

/* The message names one of the brokers of `servers` (host:port). */
static void names_a_broker(const char *text, const char *servers)
{
    char one[128];
    for (const char *p = servers; *p;) {
        size_t n = strcspn(p, ",");
        snprintf(one, sizeof one, "%.*s", (int)n, p);
        if (strstr(text, one))
            return;
        p += n + (p[n] == ',');
    }
    fail_msg("\"%s\" names none of the brokers %s", text, servers);
}

static void keystore_consume(void **state)
{
    (void)state;
    kc_conf_t *conf = base_conf(kc_test_env("KC_MTLS_BOOTSTRAP"));
    with_keystore(conf);
    kc_test_conf_set(conf, "ssl.crl.location", kc_test_env("KC_CRL_FILE"));
    char group[96];
    snprintf(group, sizeof group, "%s-ks", topic);
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "enable.auto.commit", "false");
    kc_consumer_t *c = start_assigned(conf);
    expect_all("mTLS, PKCS#12 keystore, CRL checked");
    kc_test_commit_check(c, topic, NP, RECS);
    stop(c);
}

static void pem_consume(void **state)
{
    (void)state;
    char *cert = slurp(kc_test_env("KC_CLIENT_CERT_PEM"));
    char *key = slurp(kc_test_env("KC_CLIENT_KEY_PEM"));
    char *ca = slurp(kc_test_env("KC_CA_FILE"));
    kc_conf_t *conf = base_conf(kc_test_env("KC_MTLS_BOOTSTRAP"));
    kc_error_t e;
    assert_int_equal(kc_conf_set(conf, "ssl.ca.location", "", &e), KC_OK);
    kc_test_conf_set(conf, "ssl.truststore.certificates", ca); /* Java's name for ssl.ca.pem */
    kc_test_conf_set(conf, "ssl.certificate.pem", cert);
    kc_test_conf_set(conf, "ssl.key.pem", key);
    char shown[64];
    size_t len = sizeof shown;
    assert_int_equal(kc_conf_get(conf, "ssl.key.pem", shown, &len), KC_OK);
    assert_string_equal(shown, "[redacted]");
    kc_consumer_t *c = start_assigned(conf);
    expect_all("mTLS, PEM certificate, key and CA in memory");
    stop(c);
    char logs[4096];
    copy_locked(logs, sizeof logs, logtext);
    assert_null(strstr(logs, "PRIVATE KEY"));
    free(cert);
    free(key);
    free(ca);
}

static void no_client_cert(void **state)
{
    (void)state;
    kc_consumer_t *c = start_assigned(base_conf(kc_test_env("KC_MTLS_BOOTSTRAP")));
    char le[1024];
    expect_tls_error("no client certificate", le, sizeof le);
    has(le, "refused by the broker");
    has(le, "client certificate");
    names_a_broker(le, kc_test_env("KC_MTLS_BOOTSTRAP"));
    /* a refusal is final per connection: a handful of connections, not one per backoff */
    assert_true(kc_tally_errors_of(&tally, KC_ERR_TLS) <= 3);
    stop(c);
}

static void wrong_keystore_password(void **state)
{
    (void)state;
    const char *wrong = "kc-not-the-keystore-pw-5521";
    kc_conf_t *conf = base_conf(kc_test_env("KC_MTLS_BOOTSTRAP"));
    kc_test_conf_set(conf, "ssl.keystore.location", kc_test_env("KC_CLIENT_KEYSTORE"));
    kc_test_conf_set(conf, "ssl.keystore.password", wrong);
    kc_callbacks_t cbs = {
        .on_records = kc_tally_on_records, .on_event = kc_tally_on_event, .opaque = &tally};
    kc_consumer_t *c = NULL;
    kc_error_t err;
    assert_int_equal(kc_consumer_new(conf, &cbs, &c, &err), KC_ERR_CONFIG);
    printf("# wrong keystore password: %s\n", err.msg);
    has(err.msg, "ssl.keystore.password");
    has(err.msg, kc_test_env("KC_CLIENT_KEYSTORE"));
    assert_null(strstr(err.msg, wrong));
    assert_null(strstr(err.msg, kc_test_env("KC_CLIENT_KEYSTORE_PASSWORD")));
    kc_conf_destroy(conf); /* not taken on failure */
}

static void revoked_broker(void **state)
{
    (void)state;
    /* Control: the revoked certificate is otherwise valid, so without the CRL it serves. */
    kc_consumer_t *c = start_assigned(base_conf(kc_test_env("KC_REVOKED_BOOTSTRAP")));
    expect_all("revoked broker certificate, no CRL");
    stop(c);
    kc_conf_t *conf = base_conf(kc_test_env("KC_REVOKED_BOOTSTRAP"));
    kc_test_conf_set(conf, "ssl.crl.location", kc_test_env("KC_CRL_FILE"));
    c = start_assigned(conf);
    char le[1024];
    expect_tls_error("revoked broker certificate, CRL loaded", le, sizeof le);
    has(le, "revoked");
    has(le, "CN=kconsume-testkit-revoked-broker");
    names_a_broker(le, kc_test_env("KC_REVOKED_BOOTSTRAP"));
    has(le, kc_test_env("KC_CRL_FILE"));
    stop(c);
}

static void cipher_not_shared(void **state)
{
    (void)state;
    kc_conf_t *conf = base_conf(kc_test_env("KC_MTLS_BOOTSTRAP"));
    with_keystore(conf);
    kc_test_conf_set(conf, "ssl.cipher.suites", "TLS_CHACHA20_POLY1305_SHA256");
    kc_consumer_t *c = start_assigned(conf);
    char le[1024];
    expect_tls_error("cipher suite the broker does not enable", le, sizeof le);
    has(le, "refused by the broker");
    has(le, "cipher suite");
    has(le, "ssl.cipher.suites=TLS_CHACHA20_POLY1305_SHA256");
    stop(c);
    conf = base_conf(kc_test_env("KC_MTLS_BOOTSTRAP"));
    with_keystore(conf);
    kc_test_conf_set(conf, "ssl.cipher.suites",
                     "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384");
    c = start_assigned(conf);
    expect_all("a cipher suite list with one the broker enables");
    stop(c);
    char logs[4096];
    copy_locked(logs, sizeof logs, logtext);
    has(logs, "TLS_AES_256_GCM_SHA384");
}

static void protocol_bounds(void **state)
{
    (void)state;
    kc_conf_t *conf = base_conf(kc_test_env("KC_MTLS_BOOTSTRAP"));
    with_keystore(conf);
    kc_test_conf_set(conf, "ssl.protocol", "TLSv1.2"); /* Java's cap */
    kc_consumer_t *c = start_assigned(conf);
    char le[1024];
    expect_tls_error("TLS 1.2 at most against a TLS 1.3-only broker", le, sizeof le);
    has(le, "refused by the broker");
    has(le, "TLS versions");
    has(le, "offered: TLSv1.2,");
    stop(c);
    const char *versions[] = {"TLSv1.2", "TLSv1.3"};
    for (int i = 0; i < 2; i++) {
        conf = base_conf(kc_test_env("KC_SSL_BOOTSTRAP"));
        kc_test_conf_set(conf, "ssl.enabled.protocols", versions[i]);
        c = start_assigned(conf);
        char what[64];
        snprintf(what, sizeof what, "ssl.enabled.protocols=%s", versions[i]);
        expect_all(what);
        stop(c);
        char logs[4096], want[32];
        copy_locked(logs, sizeof logs, logtext);
        snprintf(want, sizeof want, ": %s, ", versions[i]);
        has(logs, want);
        assert_null(strstr(logs, i == 0 ? ": TLSv1.3, " : ": TLSv1.2, "));
    }
}

static int teardown(void **state)
{
    (void)state;
    free(logtext);
    return 0;
}

int main(void)
{
    if (!getenv("KC_MTLS_BOOTSTRAP") || !*getenv("KC_MTLS_BOOTSTRAP")) {
        fprintf(stderr, "skipped: KC_MTLS_BOOTSTRAP is unset: this cluster has no mtls listener "
                        "(tests/testkit/cluster up --listeners ...,mtls; tests/run-suite starts "
                        "one)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keystore_consume), cmocka_unit_test(pem_consume),
        cmocka_unit_test(no_client_cert),   cmocka_unit_test(wrong_keystore_password),
        cmocka_unit_test(revoked_broker),   cmocka_unit_test(cipher_not_shared),
        cmocka_unit_test(protocol_bounds),
    };
    kc_test_filter();
    return cmocka_run_group_tests(tests, setup, teardown);
}
