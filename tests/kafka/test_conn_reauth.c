/* kc-test-label: background */
/*
 * KIP-368 re-authentication on a live SASL_SSL connection, on both backends, against a dedicated
 * 1-node cluster this test boots with connections.max.reauth.ms=10000 (the shared suite cluster
 * keeps its settings: a session lifetime there would change every other test). Ports: KC_PORT_BASE
 * + 500 when KC_PORT_BASE is set, else 24092. The cluster is torn down in the group teardown.
 *
 * Proof: one connection used continuously for 25 s (4 Metadata requests every 100 ms) with a 10 s
 * session lifetime re-authenticates at least twice (stats.reauths), every request succeeds, and
 * it is the same TCP connection throughout (connects == 1: without re-authentication the broker
 * closes it when the session expires). Each re-authentication is timed against the 85..95%
 * window io/sasl.c picks.
 */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "conn.h"
#include "conn_sasl.h"
#include "conn_tls.h"
#include "loop.h"

static char g_dir[64], g_plain[512], g_bootstrap[512], g_ca[512], g_user[512], g_pw[512];

static int group_up(void **st)
{
    (void)st;
    const char *pb = getenv("KC_PORT_BASE");
    int base = pb && *pb ? atoi(pb) + 500 : 24092;
    snprintf(g_dir, sizeof g_dir, "/tmp/kc-reauth-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "'%s/tests/testkit/cluster' up --dir '%s' --brokers 1 --listeners sasl_ssl "
             "--port-base %d --broker-config connections.max.reauth.ms=10000",
             kc_test_env("KC_SOURCE_DIR"), g_dir, base);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    char line[500];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "BOOTSTRAP=", 10))
            snprintf(g_plain, sizeof g_plain, "%s", line + 10);
        else if (!strncmp(line, "SASL_SSL_BOOTSTRAP=", 19))
            snprintf(g_bootstrap, sizeof g_bootstrap, "%s", line + 19);
        else if (!strncmp(line, "CA_FILE=", 8))
            snprintf(g_ca, sizeof g_ca, "%s", line + 8);
        else if (!strncmp(line, "SCRAM_USER=", 11))
            snprintf(g_user, sizeof g_user, "%s", line + 11);
        else if (!strncmp(line, "SCRAM_PASSWORD=", 15))
            snprintf(g_pw, sizeof g_pw, "%s", line + 15);
    }
    int rc = pclose(f);
    print_message("# dedicated cluster in %s: %s (up exit %d)\n", g_dir, g_bootstrap, rc);
    return rc == 0 && g_bootstrap[0] && g_ca[0] ? 0 : -1;
}

static int group_down(void **st)
{
    (void)st;
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "'%s/tests/testkit/cluster' down --dir '%s' >/dev/null && rm -rf '%s'",
             kc_test_env("KC_SOURCE_DIR"), g_dir, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

typedef struct tally {
    int sent, ok, failed;
    kc_err_t last_err;
    int64_t max_latency_ns; /* the longest a request took (one that waited out a re-auth) */
} tally;

typedef struct one {
    tally *t;
    int64_t sent_ns;
} one;

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
    (void)c, (void)off, (void)v;
    one *o = op;
    tally *t = o->t;
    int64_t lat = kc_now_ns() - o->sent_ns;
    if (lat > t->max_latency_ns)
        t->max_latency_ns = lat;
    if (err == KC_OK) {
        t->ok++;
        kc_buf_unref(f);
    } else {
        t->failed++;
        t->last_err = err;
    }
}

static void run(kc_loop_backend_t b, kc_sasl_mech_t mech)
{
    kc_loop_t *loop = NULL;
    kc_error_t e = {0};
    if (kc_loop_new(&loop, b, &e) != KC_OK)
        skip();
    kc_tls_ctx_t *ctx = NULL;
    kc_tls_conf_t tc = {.ca_location = g_ca};
    if (kc_tls_ctx_new(&tc, &ctx, &e) != KC_OK)
        fail_msg("kc_tls_ctx_new: %s", e.msg);
    kc_conn_tls_t tls = {.ctx = ctx};
    kc_conn_sasl_t *sasl = NULL;
    if (kc_conn_sasl_new(mech, g_user, g_pw, &sasl, &e) != KC_OK)
        fail_msg("kc_conn_sasl_new: %s", e.msg);
    kc_conn_opts_t o = {.servers = g_bootstrap,
                        .client_id = "kc-test-conn-reauth",
                        .request_timeout_ms = 10000,
                        .transport_new = kc_conn_tls_transport_new,
                        .transport_opaque = &tls,
                        .authenticate = kc_conn_sasl_authenticate,
                        .auth_opaque = sasl};
    kc_conn_t *c = NULL;
    assert_int_equal(kc_conn_new(&c, loop, &o, NULL), KC_OK);
    kc_conn_start(c);
    int64_t end = kc_now_ns() + 20000000000LL;
    while (kc_conn_state(c) != KC_CONN_READY && kc_conn_state(c) != KC_CONN_FAILED &&
           kc_now_ns() < end)
        kc_loop_run_once(loop, 100);
    assert_int_equal(kc_conn_state(c), KC_CONN_READY);
    int64_t lifetime = kc_conn_sasl_session_lifetime_ms(sasl);
    print_message("# %s %s: session_lifetime_ms=%lld\n", kc_loop_backend_name(loop),
                  mech == KC_SASL_SCRAM_SHA_256 ? "SCRAM-SHA-256" : "SCRAM-SHA-512",
                  (long long)lifetime);
    assert_true(lifetime > 0 && lifetime <= 10000);

    tally t = {0};
    static one ones[1400];
    kc_conn_req_spec_t sp = {.api_key = 3,
                             .min_version = KC_METADATA_REQUEST_MIN_VERSION,
                             .max_version = KC_METADATA_REQUEST_MAX_VERSION,
                             .encode = enc_metadata,
                             .cb = on_metadata};
    int64_t t0 = kc_now_ns(), last_auth = t0, next_send = t0;
    uint64_t seen = 0;
    end = t0 + 25000000000LL;
    while (kc_now_ns() < end) {
        int64_t now = kc_now_ns();
        if (now >= next_send) {
            /* A burst of 4 every 100 ms: requests are in flight (or sent) while a
             * re-authentication starts, which the broker must answer before the handshake. */
            for (int k = 0; k < 4; k++) {
                assert_true(t.sent < 1400);
                ones[t.sent] = (one){.t = &t, .sent_ns = now};
                sp.opaque = &ones[t.sent];
                assert_int_equal(kc_conn_send(c, &sp, &e), KC_OK);
                t.sent++;
            }
            next_send += 100000000LL;
        }
        kc_loop_run_once(loop, 20);
        kc_conn_stats_t st;
        kc_conn_get_stats(c, &st);
        if (st.reauths != seen) {
            now = kc_now_ns();
            print_message("# re-authenticated #%llu at %.2f s (%.2f s after the previous, %.0f%% "
                          "of the lifetime)\n",
                          (unsigned long long)st.reauths, (now - t0) / 1e9, (now - last_auth) / 1e9,
                          100.0 * (now - last_auth) / 1e6 / lifetime);
            last_auth = now;
            seen = st.reauths;
        }
        assert_int_equal(kc_conn_state(c), KC_CONN_READY);
    }
    /* Let the last requests come back. */
    int64_t drain = kc_now_ns() + 10000000000LL;
    while (t.ok + t.failed < t.sent && kc_now_ns() < drain)
        kc_loop_run_once(loop, 50);
    kc_conn_stats_t st;
    kc_conn_get_stats(c, &st);
    print_message("# %s: %d requests, %d ok, %d failed, %llu re-authentications, %llu connects, "
                  "%llu resets, slowest request %.1f ms\n",
                  kc_loop_backend_name(loop), t.sent, t.ok, t.failed,
                  (unsigned long long)st.reauths, (unsigned long long)st.connects,
                  (unsigned long long)st.resets, t.max_latency_ns / 1e6);
    assert_int_equal(t.failed, 0);
    assert_int_equal(t.ok, t.sent);
    assert_true(t.sent >= 800);
    assert_true(st.reauths >= 2);
    assert_int_equal(st.connects, 1);
    assert_int_equal(st.resets, 0);
    kc_conn_close(c);
    for (int i = 0; i < 20; i++)
        kc_loop_run_once(loop, 5);
    kc_loop_free(loop);
    kc_conn_sasl_free(sasl);
    kc_tls_ctx_free(ctx);
}

/* The password changes on the broker mid-session: the next re-authentication is refused and the
 * connection fails for good with KC_ERR_AUTH naming the mechanism (runs last: it changes the
 * dedicated cluster's credentials). */
static void t_reauth_refused(void **st)
{
    (void)st;
    kc_loop_t *loop = NULL;
    kc_error_t e = {0};
    assert_int_equal(kc_loop_new(&loop, KC_LOOP_AUTO, &e), KC_OK);
    kc_tls_ctx_t *ctx = NULL;
    kc_tls_conf_t tc = {.ca_location = g_ca};
    assert_int_equal(kc_tls_ctx_new(&tc, &ctx, &e), KC_OK);
    kc_conn_tls_t tls = {.ctx = ctx};
    kc_conn_sasl_t *sasl = NULL;
    assert_int_equal(kc_conn_sasl_new(KC_SASL_SCRAM_SHA_256, g_user, g_pw, &sasl, &e), KC_OK);
    kc_conn_opts_t o = {.servers = g_bootstrap,
                        .transport_new = kc_conn_tls_transport_new,
                        .transport_opaque = &tls,
                        .authenticate = kc_conn_sasl_authenticate,
                        .auth_opaque = sasl};
    kc_conn_t *c = NULL;
    assert_int_equal(kc_conn_new(&c, loop, &o, NULL), KC_OK);
    kc_conn_start(c);
    int64_t end = kc_now_ns() + 20000000000LL;
    while (kc_conn_state(c) != KC_CONN_READY && kc_now_ns() < end)
        kc_loop_run_once(loop, 100);
    assert_int_equal(kc_conn_state(c), KC_CONN_READY);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s/tests/testkit/cluster' tool ConfigCommand --dir '%s' "
             "--bootstrap-server '%s' --alter --entity-type users --entity-name '%s' "
             "--add-config 'SCRAM-SHA-256=[password=changed-under-the-session]' >/dev/null",
             kc_test_env("KC_SOURCE_DIR"), g_dir, g_plain, g_user);
    assert_int_equal(system(cmd), 0);
    end = kc_now_ns() + 20000000000LL;
    while (kc_conn_state(c) != KC_CONN_FAILED && kc_now_ns() < end)
        kc_loop_run_once(loop, 100);
    assert_int_equal(kc_conn_state(c), KC_CONN_FAILED);
    kc_conn_req_spec_t sp = {.api_key = 3,
                             .min_version = KC_METADATA_REQUEST_MIN_VERSION,
                             .max_version = KC_METADATA_REQUEST_MAX_VERSION,
                             .encode = enc_metadata,
                             .cb = on_metadata};
    assert_int_equal(kc_conn_send(c, &sp, &e), KC_ERR_AUTH);
    kc_conn_stats_t cs;
    kc_conn_get_stats(c, &cs);
    print_message("# refused re-authentication: %s (connects %llu, reauths %llu)\n", e.msg,
                  (unsigned long long)cs.connects, (unsigned long long)cs.reauths);
    assert_non_null(strstr(e.msg, "SCRAM-SHA-256"));
    assert_null(strstr(e.msg, g_pw));
    kc_conn_close(c);
    for (int i = 0; i < 20; i++)
        kc_loop_run_once(loop, 5);
    kc_loop_free(loop);
    kc_conn_sasl_free(sasl);
    kc_tls_ctx_free(ctx);
}

static void t_reauth_uring(void **st)
{
    (void)st;
    run(KC_LOOP_URING, KC_SASL_SCRAM_SHA_256);
}

static void t_reauth_epoll(void **st)
{
    (void)st;
    run(KC_LOOP_EPOLL, KC_SASL_SCRAM_SHA_512);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_reauth_uring),
        cmocka_unit_test(t_reauth_epoll),
        cmocka_unit_test(t_reauth_refused),
    };
    return cmocka_run_group_tests(tests, group_up, group_down);
}
