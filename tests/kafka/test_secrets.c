/*
 * Credentials never leak: distinctive probe values for sasl.password and
 * ssl.key.password go through every path that handles them — the configuration (set, get, the
 * printed reference, cross-key errors, kc_consumer_new), a SCRAM exchange with the wrong password
 * against the SASL_SSL listener, a good SCRAM exchange with the cluster's password, and an
 * encrypted client key opened with the wrong and the right password, a PKCS#12 keystore opened
 * with the wrong and the right ssl.keystore.password, the encrypted key given as ssl.key.pem text
 * — with logging at DEBUG
 * into a capture; and whole consumers (wrong password, then the cluster's) at log.level=debug
 * whose lines reach the same capture through their log callback (kc_conf_set_log_cb). Each failure
 * must still say what went wrong (mechanism, key file); no probe, nor the cluster's password, may
 * appear in any error message or log line. The captured log is also written to $KC_LEAK_DIR, which
 * tests/run-suite searches at the end with every other output of the suite. Environment:
 * KC_SASL_SSL_BOOTSTRAP, KC_CA_FILE, KC_SCRAM_USER, KC_SCRAM_PASSWORD (tests/run-suite).
 */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "conf.h"
#include "conn.h"
#include "conn_sasl.h"
#include "conn_tls.h"
#include "kconsume.h"
#include "loop.h"
#include "tls.h"

/* Also in tests/run-suite's check_secrets: keep the two lists in step. */
#define PROBE_SASL  "kc-leak-probe-sasl-4e1b9"
#define PROBE_KEYPW "kc-leak-probe-keypw-a73c"
#define PROBE_KSPW  "kc-leak-probe-kspw-5d2e"

static char *logbuf;
static size_t loglen, logcap;

static void capture(void *opaque, int level, const char *subsystem, const char *line)
{
    (void)opaque, (void)level;
    size_t n = strlen(subsystem) + strlen(line) + 4;
    if (loglen + n + 1 > logcap) {
        logcap = (loglen + n + 1) * 2;
        logbuf = realloc(logbuf, logcap);
        assert_non_null(logbuf);
    }
    loglen += (size_t)snprintf(logbuf + loglen, logcap - loglen, "[%s] %s\n", subsystem, line);
}

/* A consumer's log callback: the same capture, and a count of its lines. */
static int cb_lines;
static void capture_cb(void *opaque, int level, const char *subsystem, const char *name,
                       const char *message)
{
    (void)name;
    cb_lines++;
    capture(opaque, level, subsystem, message);
}

/* The text must not hold any credential. */
static void clean(const char *what, const char *text)
{
    const char *secrets[] = {PROBE_SASL, PROBE_KEYPW, PROBE_KSPW, kc_test_env("KC_SCRAM_PASSWORD")};
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
        if (text && strstr(text, secrets[i]))
            fail_msg("%s holds a credential (secret #%zu)", what, i);
}

static void has(const char *what, const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("%s \"%s\" does not say \"%s\"", what, text, needle);
}

static int setup(void **state)
{
    (void)state;
    kc_log_configure(capture, NULL, KC_LOG_DEBUG);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kc_log_configure(NULL, NULL, KC_LOG_INFO);
    clean("the captured DEBUG log", logbuf);
    const char *dir = getenv("KC_LEAK_DIR");
    if (dir && *dir && logbuf) {
        char path[512];
        snprintf(path, sizeof path, "%s/test_secrets.log", dir);
        FILE *f = fopen(path, "w");
        if (f) {
            fwrite(logbuf, 1, loglen, f);
            fclose(f);
        }
    }
    fprintf(stderr, "captured %zu bytes of DEBUG log, no credential in them\n", loglen);
    free(logbuf);
    return 0;
}

/* ---- configuration ------------------------------------------------------------------------ */

static void config_paths_never_echo_secrets(void **state)
{
    (void)state;
    kc_conf_t *c = kc_conf_new();
    kc_error_t e;
    assert_int_equal(kc_conf_set(c, "bootstrap.servers", kc_test_env("KC_SASL_SSL_BOOTSTRAP"), &e),
                     KC_OK);
    assert_int_equal(kc_conf_set(c, "sasl.password", PROBE_SASL, &e), KC_OK);
    assert_int_equal(kc_conf_set(c, "ssl.key.password", PROBE_KEYPW, &e), KC_OK);
    char buf[128];
    size_t len = sizeof buf;
    assert_int_equal(kc_conf_get(c, "sasl.password", buf, &len), KC_OK);
    clean("kc_conf_get(sasl.password)", buf);
    len = sizeof buf;
    assert_int_equal(kc_conf_get(c, "ssl.key.password", buf, &len), KC_OK);
    clean("kc_conf_get(ssl.key.password)", buf);
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    kc_conf_print_reference(f, 0);
    kc_conf_print_reference(f, 1);
    fclose(f);
    clean("the printed reference", text);
    free(text);
    /* each conflict names the key, never its value */
    assert_int_equal(kc_conf_validate(c, &e), KC_ERR_CONFIG);
    clean("validate", e.msg);
    has("validate", e.msg, "sasl.password");
    assert_int_equal(kc_conf_set(c, "security.protocol", "SASL_SSL", &e), KC_OK);
    assert_int_equal(kc_conf_validate(c, &e), KC_ERR_CONFIG);
    clean("validate", e.msg);
    assert_int_equal(kc_conf_set(c, "sasl.username", "u", &e), KC_OK);
    assert_int_equal(kc_conf_validate(c, &e), KC_ERR_CONFIG);
    clean("validate", e.msg);
    has("validate", e.msg, "ssl.key.password is set but ssl.key.location is not");
    assert_int_equal(kc_conf_set(c, "ssl.key.password", "", &e), KC_OK);
    assert_int_equal(kc_conf_set(c, "ssl.ca.location", kc_test_env("KC_CA_FILE"), &e), KC_OK);
    assert_int_equal(kc_conf_validate(c, &e), KC_OK);
    /* a consumer with these settings: created, or refused with a reason, never an echo */
    kc_consumer_t *k = NULL;
    kc_err_t rc = kc_consumer_new(c, NULL, &k, &e);
    if (rc == KC_OK) {
        kc_destroy(k); /* took c */
    } else {
        clean("kc_consumer_new", e.msg);
        fprintf(stderr, "kc_consumer_new(SASL_SSL): %s\n", e.msg);
        kc_conf_destroy(c);
    }
}

/* ---- SASL over the SASL_SSL listener ------------------------------------------------------- */

typedef struct setup_t {
    kc_loop_t *loop;
    kc_tls_ctx_t *ctx;
    kc_conn_tls_t tls;
    kc_conn_sasl_t *sasl;
    kc_conn_t *c;
} setup_t;

static kc_conn_state_t open_sasl(setup_t *s, const char *pw)
{
    memset(s, 0, sizeof *s);
    kc_error_t e = {0};
    if (kc_loop_new(&s->loop, KC_LOOP_AUTO, &e) != KC_OK)
        fail_msg("loop: %s", e.msg);
    kc_tls_conf_t tc = {.ca_location = kc_test_env("KC_CA_FILE")};
    if (kc_tls_ctx_new(&tc, &s->ctx, &e) != KC_OK)
        fail_msg("kc_tls_ctx_new: %s", e.msg);
    s->tls = (kc_conn_tls_t){.ctx = s->ctx};
    if (kc_conn_sasl_new(KC_SASL_SCRAM_SHA_256, kc_test_env("KC_SCRAM_USER"), pw, &s->sasl, &e) !=
        KC_OK)
        fail_msg("kc_conn_sasl_new: %s", e.msg);
    kc_conn_opts_t o = {.servers = kc_test_env("KC_SASL_SSL_BOOTSTRAP"),
                        .client_id = "kc-test-secrets",
                        .transport_new = kc_conn_tls_transport_new,
                        .transport_opaque = &s->tls,
                        .authenticate = kc_conn_sasl_authenticate,
                        .auth_opaque = s->sasl};
    assert_int_equal(kc_conn_new(&s->c, s->loop, &o, NULL), KC_OK);
    kc_conn_start(s->c);
    int64_t end = kc_now_ns() + 20000000000LL;
    while (kc_conn_state(s->c) != KC_CONN_READY && kc_conn_state(s->c) != KC_CONN_FAILED &&
           kc_now_ns() < end)
        kc_loop_run_once(s->loop, 100);
    return kc_conn_state(s->c);
}

static void close_sasl(setup_t *s)
{
    kc_conn_close(s->c);
    for (int i = 0; i < 20; i++)
        kc_loop_run_once(s->loop, 5);
    kc_loop_free(s->loop);
    kc_conn_sasl_free(s->sasl);
    kc_tls_ctx_free(s->ctx);
}

static kc_err_t enc_metadata(kc_wbuf_t *out, int16_t v, void *opaque)
{
    (void)opaque;
    kc_metadata_request_t m;
    kc_metadata_request_init(&m);
    m.topics.count = -1;
    return kc_metadata_request_encode(&m, v, out, NULL);
}

static void on_metadata(kc_conn_t *c, kc_err_t err, kc_buf_t *f, size_t off, int16_t v, void *op)
{
    (void)c, (void)err, (void)off, (void)v, (void)op;
    if (f)
        kc_buf_unref(f);
}

/* A FAILED connection refuses new requests with its final error: that is what the user sees. */
static kc_error_t final_error(setup_t *s)
{
    kc_error_t e = {0};
    kc_conn_req_spec_t sp = {.api_key = 3,
                             .min_version = 4,
                             .max_version = 12,
                             .encode = enc_metadata,
                             .cb = on_metadata};
    assert_int_not_equal(kc_conn_send(s->c, &sp, &e), KC_OK);
    return e;
}

static void wrong_sasl_password_fails_without_echo(void **state)
{
    (void)state;
    setup_t s;
    assert_int_equal(open_sasl(&s, PROBE_SASL), KC_CONN_FAILED);
    kc_error_t e = final_error(&s);
    fprintf(stderr, "wrong password: %s\n", e.msg);
    assert_int_equal(e.code, KC_ERR_AUTH);
    clean("the auth error", e.msg);
    has("the auth error", e.msg, "SCRAM-SHA-256");
    has("the auth error", e.msg, "authentication");
    close_sasl(&s);
}

static void right_sasl_password_is_not_logged_either(void **state)
{
    (void)state;
    setup_t s;
    assert_int_equal(open_sasl(&s, kc_test_env("KC_SCRAM_PASSWORD")), KC_CONN_READY);
    close_sasl(&s);
    assert_true(loglen > 0); /* DEBUG logging was really on */
    clean("the DEBUG log so far", logbuf);
}

/* A whole consumer over SASL_SSL with `password`, logging at DEBUG through its callback until
 * its connections have tried to log in (an error event for a refused login, or 3 s). */
static void consumer_logs_through_callback(const char *password)
{
    kc_conf_t *c = kc_conf_new();
    kc_error_t e;
    assert_int_equal(kc_conf_set(c, "bootstrap.servers", kc_test_env("KC_SASL_SSL_BOOTSTRAP"), &e),
                     KC_OK);
    assert_int_equal(kc_conf_set(c, "security.protocol", "SASL_SSL", &e), KC_OK);
    assert_int_equal(kc_conf_set(c, "ssl.ca.location", kc_test_env("KC_CA_FILE"), &e), KC_OK);
    assert_int_equal(kc_conf_set(c, "sasl.mechanism", "SCRAM-SHA-256", &e), KC_OK);
    assert_int_equal(kc_conf_set(c, "sasl.username", kc_test_env("KC_SCRAM_USER"), &e), KC_OK);
    assert_int_equal(kc_conf_set(c, "sasl.password", password, &e), KC_OK);
    assert_int_equal(kc_conf_set(c, "log.level", "debug", &e), KC_OK);
    assert_int_equal(kc_conf_set_log_cb(c, capture_cb, NULL, &e), KC_OK);
    kc_consumer_t *k;
    if (kc_consumer_new(c, NULL, &k, &e) != KC_OK)
        fail_msg("kc_consumer_new: %s", e.msg);
    int32_t n;
    kc_err_t rc = kc_topic_partitions(k, "kc-secrets-no-topic", &n, 3000, &e);
    clean("kc_topic_partitions", e.msg);
    fprintf(stderr, "consumer with %s password: kc_topic_partitions: %s\n",
            strcmp(password, PROBE_SASL) == 0 ? "a wrong" : "the cluster's",
            rc == KC_OK ? "ok" : e.msg);
    kc_destroy(k);
}

static void consumer_log_callback_holds_no_secret(void **state)
{
    (void)state;
    int before = cb_lines;
    consumer_logs_through_callback(PROBE_SASL);
    consumer_logs_through_callback(kc_test_env("KC_SCRAM_PASSWORD"));
    fprintf(stderr, "%d lines through the consumers' log callback\n", cb_lines - before);
    assert_true(cb_lines - before > 0); /* the callback path was really exercised */
    clean("the consumers' callback log", logbuf);
}

/* ---- an encrypted client key -------------------------------------------------------------- */

static void bad_key_password_names_the_file_not_the_password(void **state)
{
    (void)state;
    /* The encrypted key is removed at exit whether the test passes or fails. */
    const char *dir = kc_test_tmpdir("secrets");
    char key[4096], crt[4096];
    kc_test_self_signed(dir, "client", "kc-test-client", 0, PROBE_KEYPW);
    kc_test_path(key, sizeof key, dir, "client.key");
    kc_test_path(crt, sizeof crt, dir, "client.pem");
    kc_tls_ctx_t *ctx = NULL;
    kc_error_t e = {0};
    const char *wrong[] = {"not-" PROBE_KEYPW, NULL};
    for (size_t i = 0; i < 2; i++) {
        kc_tls_conf_t tc = {.ca_location = kc_test_env("KC_CA_FILE"),
                            .cert_location = crt,
                            .key_location = key,
                            .key_password = wrong[i]};
        assert_int_not_equal(kc_tls_ctx_new(&tc, &ctx, &e), KC_OK);
        fprintf(stderr, "key password %s: %s\n", wrong[i] ? "wrong" : "missing", e.msg);
        clean("the key error", e.msg);
        assert_null(strstr(e.msg, "not-kc-leak")); /* nor the wrong one */
        has("the key error", e.msg, key);
        has("the key error", e.msg, "ssl.key.password missing or wrong");
    }
    kc_tls_conf_t tc = {.ca_location = kc_test_env("KC_CA_FILE"),
                        .cert_location = crt,
                        .key_location = key,
                        .key_password = PROBE_KEYPW};
    if (kc_tls_ctx_new(&tc, &ctx, &e) != KC_OK)
        fail_msg("the right key password: %s", e.msg);
    kc_tls_ctx_free(ctx);
}

/* ---- a PKCS#12 keystore and a key as PEM text ---------------------------------------------- */

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *buf = calloc(1, 16384);
    assert_non_null(buf);
    size_t n = fread(buf, 1, 16383, f);
    fclose(f);
    assert_true(n > 0);
    return buf;
}

/* Whole consumers at log.level=debug over SSL: a keystore with a wrong password (refused at
 * creation: the key and the file named, no password), the right one, and the encrypted key as
 * ssl.key.pem text. Neither password nor the key's text reaches an error, kc_conf_get or the
 * log. */
static void keystore_and_pem_key_never_echoed(void **state)
{
    (void)state;
    const char *dir = kc_test_tmpdir("secrets-ks");
    char key[4096], crt[4096], ks[4096], cmd[16384];
    kc_test_self_signed(dir, "client", "kc-test-client", 0, PROBE_KEYPW);
    kc_test_path(key, sizeof key, dir, "client.key");
    kc_test_path(crt, sizeof crt, dir, "client.pem");
    kc_test_path(ks, sizeof ks, dir, "client.p12");
    snprintf(cmd, sizeof cmd,
             "openssl pkcs12 -export -in '%s' -inkey '%s' -passin pass:" PROBE_KEYPW
             " -passout pass:" PROBE_KSPW " -out '%s' >/dev/null 2>&1",
             crt, key, ks);
    assert_int_equal(system(cmd), 0);
    char *key_text = read_text(key);
    /* a line of the key's base64 body: what a leak of the text would show */
    const char *body = strchr(key_text, '\n');
    assert_non_null(body);
    char line[65] = "";
    snprintf(line, sizeof line, "%.64s", body + 1);
    const char *pw[] = {"not-" PROBE_KSPW, PROBE_KSPW};
    for (int i = 0; i < 3; i++) {
        kc_conf_t *c = kc_conf_new();
        kc_error_t e;
        assert_int_equal(kc_conf_set(c, "bootstrap.servers", kc_test_env("KC_SSL_BOOTSTRAP"), &e),
                         KC_OK);
        assert_int_equal(kc_conf_set(c, "security.protocol", "SSL", &e), KC_OK);
        assert_int_equal(kc_conf_set(c, "ssl.ca.location", kc_test_env("KC_CA_FILE"), &e), KC_OK);
        assert_int_equal(kc_conf_set(c, "log.level", "debug", &e), KC_OK);
        assert_int_equal(kc_conf_set_log_cb(c, capture_cb, NULL, &e), KC_OK);
        if (i < 2) {
            assert_int_equal(kc_conf_set(c, "ssl.keystore.location", ks, &e), KC_OK);
            assert_int_equal(kc_conf_set(c, "ssl.keystore.password", pw[i], &e), KC_OK);
        } else {
            assert_int_equal(kc_conf_set(c, "ssl.certificate.location", crt, &e), KC_OK);
            assert_int_equal(kc_conf_set(c, "ssl.key.pem", key_text, &e), KC_OK);
            assert_int_equal(kc_conf_set(c, "ssl.key.password", PROBE_KEYPW, &e), KC_OK);
        }
        char shown[64];
        size_t len = sizeof shown;
        assert_int_equal(
            kc_conf_get(c, i < 2 ? "ssl.keystore.password" : "ssl.key.pem", shown, &len), KC_OK);
        assert_string_equal(shown, "[redacted]");
        kc_consumer_t *k = NULL;
        kc_err_t rc = kc_consumer_new(c, NULL, &k, &e);
        if (i == 0) {
            assert_int_equal(rc, KC_ERR_CONFIG);
            fprintf(stderr, "wrong keystore password: %s\n", e.msg);
            clean("the keystore error", e.msg);
            assert_null(strstr(e.msg, "not-kc-leak"));
            has("the keystore error", e.msg, "ssl.keystore.password is wrong");
            has("the keystore error", e.msg, ks);
            kc_conf_destroy(c);
            continue;
        }
        if (rc != KC_OK)
            fail_msg("kc_consumer_new (%s): %s", i == 1 ? "keystore" : "ssl.key.pem", e.msg);
        kc_metadata_t *md = NULL;
        if (kc_metadata(k, NULL, 0, 10000, &md, &e) != KC_OK)
            fail_msg("kc_metadata: %s", e.msg);
        kc_metadata_destroy(md);
        kc_destroy(k);
    }
    assert_non_null(logbuf);
    assert_null(strstr(logbuf, line));
    assert_null(strstr(logbuf, "PRIVATE KEY"));
    free(key_text);
}

int main(void)
{
    kc_test_env("KC_SASL_SSL_BOOTSTRAP"); /* fails loudly without the cluster */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_paths_never_echo_secrets),
        cmocka_unit_test(wrong_sasl_password_fails_without_echo),
        cmocka_unit_test(right_sasl_password_is_not_logged_either),
        cmocka_unit_test(consumer_log_callback_holds_no_secret),
        cmocka_unit_test(bad_key_password_names_the_file_not_the_password),
        cmocka_unit_test(keystore_and_pem_key_never_echoed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
