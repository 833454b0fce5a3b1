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
static _Atomic int64_t total, dups, tls_errors, other_errors;
static _Atomic int64_t next_off[NP];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char last_error[1024]; /* under mu */
static char *logtext;         /* under mu: the consumer's DEBUG lines of subsystem "tls" */
static size_t loglen;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        if (off < atomic_load(&next_off[p->partition])) /* one worker per partition at a time */
            atomic_fetch_add(&dups, 1);
        atomic_store(&next_off[p->partition], off + 1);
        atomic_fetch_add(&total, 1);
    }
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type != KC_EVENT_ERROR || !ev->error)
        return;
    atomic_fetch_add(ev->error->code == KC_ERR_TLS ? &tls_errors : &other_errors, 1);
    pthread_mutex_lock(&mu);
    snprintf(last_error, sizeof last_error, "%s", ev->error->msg);
    pthread_mutex_unlock(&mu);
}

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

static void run(const char *cmd)
{
    char line[1024];
    snprintf(line, sizeof line, "%s %s --dir %s >/dev/null", kc_test_env("KC_TESTKIT"), cmd,
             kc_test_env("KC_CLUSTER_DIR"));
    if (system(line) != 0)
        fail_msg("failed: %s", line);
}

static void set(kc_conf_t *c, const char *k, const char *v)
{
    kc_error_t e;
    if (kc_conf_set(c, k, v, &e) != KC_OK)
        fail_msg("%s: %s", k, e.msg);
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
    char cmd[256];
    snprintf(cmd, sizeof cmd, "topic create %s --partitions %d --replication 1", topic, NP);
    run(cmd);
    snprintf(cmd, sizeof cmd, "produce %s --records %d --size 100", topic, RECS);
    run(cmd);
    return 0;
}

static void reset(void)
{
    atomic_store(&total, 0);
    atomic_store(&dups, 0);
    atomic_store(&tls_errors, 0);
    atomic_store(&other_errors, 0);
    for (int i = 0; i < NP; i++)
        atomic_store(&next_off[i], 0);
    pthread_mutex_lock(&mu);
    last_error[0] = 0;
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
    set(c, "bootstrap.servers", servers);
    set(c, "security.protocol", "SSL");
    set(c, "ssl.ca.location", kc_test_env("KC_CA_FILE"));
    set(c, "worker.threads", "2");
    set(c, "log.level", "debug");
    set(c, "reconnect.backoff.ms", "100");
    kc_error_t e;
    assert_int_equal(kc_conf_set_log_cb(c, on_log, NULL, &e), KC_OK);
    return c;
}

static void with_keystore(kc_conf_t *c)
{
    set(c, "ssl.keystore.location", kc_test_env("KC_CLIENT_KEYSTORE"));
    set(c, "ssl.keystore.password", kc_test_env("KC_CLIENT_KEYSTORE_PASSWORD"));
}

static kc_consumer_t *start_assigned(kc_conf_t *conf)
{
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c = NULL;
    kc_error_t err;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){topic, i, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, tps, NP, &err), KC_OK);
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
    for (int i = 0; i < 600 && atomic_load(&total) < RECS; i++)
        kc_test_sleep_ms(100);
    kc_test_sleep_ms(200);
    char le[1024];
    copy_locked(le, sizeof le, last_error);
    printf("# %s: delivered %lld of %d, dups %lld, errors %lld (%s)\n", what,
           (long long)atomic_load(&total), RECS, (long long)atomic_load(&dups),
           (long long)(atomic_load(&tls_errors) + atomic_load(&other_errors)), le);
    assert_int_equal(atomic_load(&total), RECS);
    assert_int_equal(atomic_load(&dups), 0);
    assert_int_equal(atomic_load(&tls_errors), 0);
}

/* Waits for a TLS error event and returns its text in `out`; nothing may have been delivered. */
static void expect_tls_error(const char *what, char *out, size_t cap)
{
    for (int i = 0; i < 150 && atomic_load(&tls_errors) == 0; i++)
        kc_test_sleep_ms(100);
    kc_test_sleep_ms(1000); /* room for a reconnect storm to show */
    copy_locked(out, cap, last_error);
    printf("# %s: %lld TLS error(s), %lld other: %s\n", what, (long long)atomic_load(&tls_errors),
           (long long)atomic_load(&other_errors), out);
    assert_true(atomic_load(&tls_errors) > 0);
    assert_int_equal(atomic_load(&total), 0);
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
    set(conf, "ssl.crl.location", kc_test_env("KC_CRL_FILE"));
    char group[96];
    snprintf(group, sizeof group, "%s-ks", topic);
    set(conf, "group.id", group);
    set(conf, "enable.auto.commit", "false");
    kc_consumer_t *c = start_assigned(conf);
    expect_all("mTLS, PKCS#12 keystore, CRL checked");
    kc_error_t err;
    if (kc_commit(c, NULL, 0, 30000, &err) != KC_OK)
        fail_msg("kc_commit: %s", err.msg);
    kc_topic_partition_t got[NP];
    for (int i = 0; i < NP; i++)
        got[i] = (kc_topic_partition_t){topic, i, 0};
    if (kc_committed(c, got, NP, 30000, &err) != KC_OK)
        fail_msg("kc_committed: %s", err.msg);
    int64_t sum = 0; /* a partition the producer left empty has no committed offset */
    for (int i = 0; i < NP; i++)
        sum += got[i].offset > 0 ? got[i].offset : 0;
    assert_int_equal(sum, RECS);
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
    set(conf, "ssl.truststore.certificates", ca); /* Java's name for ssl.ca.pem */
    set(conf, "ssl.certificate.pem", cert);
    set(conf, "ssl.key.pem", key);
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
    assert_true(atomic_load(&tls_errors) <= 3);
    stop(c);
}

static void wrong_keystore_password(void **state)
{
    (void)state;
    const char *wrong = "kc-not-the-keystore-pw-5521";
    kc_conf_t *conf = base_conf(kc_test_env("KC_MTLS_BOOTSTRAP"));
    set(conf, "ssl.keystore.location", kc_test_env("KC_CLIENT_KEYSTORE"));
    set(conf, "ssl.keystore.password", wrong);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
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
    set(conf, "ssl.crl.location", kc_test_env("KC_CRL_FILE"));
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
    set(conf, "ssl.cipher.suites", "TLS_CHACHA20_POLY1305_SHA256");
    kc_consumer_t *c = start_assigned(conf);
    char le[1024];
    expect_tls_error("cipher suite the broker does not enable", le, sizeof le);
    has(le, "refused by the broker");
    has(le, "cipher suite");
    has(le, "ssl.cipher.suites=TLS_CHACHA20_POLY1305_SHA256");
    stop(c);
    conf = base_conf(kc_test_env("KC_MTLS_BOOTSTRAP"));
    with_keystore(conf);
    set(conf, "ssl.cipher.suites", "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384");
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
    set(conf, "ssl.protocol", "TLSv1.2"); /* Java's cap */
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
        set(conf, "ssl.enabled.protocols", versions[i]);
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
