/* TLS and SASL through the event loop and the connection layer (io/conn_tls.c, io/conn_sasl.c)
 * against the testkit's SSL and SASL_SSL listeners, on both backends: pipelined Metadata over
 * TLS, a wrong CA and a wrong host name end in a final KC_ERR_TLS naming the reason, SCRAM-256/512
 * succeed, a wrong password ends in a final KC_ERR_AUTH naming the mechanism (and not the
 * password). Environment: KC_SSL_BOOTSTRAP, KC_SASL_SSL_BOOTSTRAP, KC_CA_FILE, KC_SCRAM_USER,
 * KC_SCRAM_PASSWORD (tests/run-suite). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "conn.h"
#include "conn_sasl.h"
#include "conn_tls.h"
#include "loop.h"

typedef struct mreq {
    int idx, *order, *n;
    kc_err_t err;
    int brokers;
} mreq;

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
    (void)c;
    mreq *m = op;
    m->err = err;
    m->order[(*m->n)++] = m->idx;
    if (err == KC_OK) {
        kc_rbuf_t r = kc_rbuf(f->data + off, f->len - off);
        kc_arena_t a = {0};
        kc_metadata_response_t resp;
        m->brokers =
            kc_metadata_response_decode(&resp, v, &r, &a, NULL) == KC_OK ? resp.brokers.count : -1;
        kc_arena_free(&a);
        kc_buf_unref(f);
    }
}

typedef struct setup {
    kc_loop_t *loop;
    kc_tls_ctx_t *ctx;
    kc_conn_tls_t tls;
    kc_conn_sasl_t *sasl;
    kc_conn_t *c;
} setup;

/* Opens a connection and runs the loop until it is READY or FAILED. */
static kc_conn_state_t open_conn(setup *s, kc_loop_backend_t b, const char *servers, const char *ca,
                                 const char *server_name, kc_sasl_mech_t mech, const char *pw)
{
    memset(s, 0, sizeof *s);
    kc_error_t e = {0};
    if (kc_loop_new(&s->loop, b, &e) != KC_OK)
        skip();
    kc_tls_conf_t tc = {.ca_location = ca};
    if (kc_tls_ctx_new(&tc, &s->ctx, &e) != KC_OK)
        fail_msg("kc_tls_ctx_new: %s", e.msg);
    s->tls = (kc_conn_tls_t){.ctx = s->ctx, .server_name = server_name};
    kc_conn_opts_t o = {.servers = servers,
                        .client_id = "kc-test-conn-tls",
                        .transport_new = kc_conn_tls_transport_new,
                        .transport_opaque = &s->tls};
    if (pw) {
        if (kc_conn_sasl_new(mech, kc_test_env("KC_SCRAM_USER"), pw, &s->sasl, &e) != KC_OK)
            fail_msg("kc_conn_sasl_new: %s", e.msg);
        o.authenticate = kc_conn_sasl_authenticate;
        o.auth_opaque = s->sasl;
    }
    assert_int_equal(kc_conn_new(&s->c, s->loop, &o, NULL), KC_OK);
    kc_conn_start(s->c);
    int64_t end = kc_now_ns() + 20000000000LL;
    while (kc_conn_state(s->c) != KC_CONN_READY && kc_conn_state(s->c) != KC_CONN_FAILED &&
           kc_now_ns() < end)
        kc_loop_run_once(s->loop, 100);
    return kc_conn_state(s->c);
}

static void close_setup(setup *s)
{
    kc_loop_stats_t ls;
    kc_loop_get_stats(s->loop, &ls);
    if (!strcmp(kc_loop_backend_name(s->loop), "io_uring"))
        assert_true(ls.submissions > 0); /* the ring really carried this connection */
    kc_conn_close(s->c);
    for (int i = 0; i < 20; i++)
        kc_loop_run_once(s->loop, 5);
    kc_loop_free(s->loop);
    kc_conn_sasl_free(s->sasl);
    kc_tls_ctx_free(s->ctx);
}

static void pipelined_metadata(setup *s, int n_req)
{
    static mreq reqs[500];
    static int order[500];
    int n = 0;
    assert_true(n_req <= 500);
    for (int i = 0; i < n_req; i++) {
        reqs[i] = (mreq){.idx = i, .order = order, .n = &n, .err = KC_ERR_STATE};
        kc_conn_req_spec_t sp = {.api_key = 3,
                                 .min_version = KC_METADATA_REQUEST_MIN_VERSION,
                                 .max_version = KC_METADATA_REQUEST_MAX_VERSION,
                                 .encode = enc_metadata,
                                 .cb = on_metadata,
                                 .opaque = &reqs[i]};
        assert_int_equal(kc_conn_send(s->c, &sp, NULL), KC_OK);
    }
    int64_t end = kc_now_ns() + 30000000000LL;
    while (n < n_req && kc_now_ns() < end)
        kc_loop_run_once(s->loop, 100);
    assert_int_equal(n, n_req);
    for (int i = 0; i < n_req; i++) {
        assert_int_equal(order[i], i);
        assert_int_equal(reqs[i].err, KC_OK);
        assert_true(reqs[i].brokers >= 1);
    }
}

/* The final error a FAILED connection reports to new requests. */
static kc_error_t final_error(setup *s)
{
    kc_error_t e = {0};
    mreq m = {0};
    int order[1], n = 0;
    m.order = order;
    m.n = &n;
    kc_conn_req_spec_t sp = {.api_key = 3,
                             .min_version = 4,
                             .max_version = 12,
                             .encode = enc_metadata,
                             .cb = on_metadata,
                             .opaque = &m};
    assert_int_not_equal(kc_conn_send(s->c, &sp, &e), KC_OK);
    print_message("# final error: %s\n", e.msg);
    return e;
}

static void ssl_ok(kc_loop_backend_t b)
{
    setup s;
    assert_int_equal(open_conn(&s, b, kc_test_env("KC_SSL_BOOTSTRAP"), kc_test_env("KC_CA_FILE"),
                               NULL, KC_SASL_PLAIN, NULL),
                     KC_CONN_READY);
    pipelined_metadata(&s, 500);
    close_setup(&s);
}

static void ssl_wrong_ca(kc_loop_backend_t b)
{
    const char *dir = kc_test_tmpdir("conn-wrongca"); /* removed at exit, pass or fail */
    char ca[4096];
    kc_test_self_signed(dir, "ca", "not-the-testkit-ca", 1, NULL);
    kc_test_path(ca, sizeof ca, dir, "ca.pem");
    setup s;
    assert_int_equal(
        open_conn(&s, b, kc_test_env("KC_SSL_BOOTSTRAP"), ca, NULL, KC_SASL_PLAIN, NULL),
        KC_CONN_FAILED);
    kc_error_t e = final_error(&s);
    assert_int_equal(e.code, KC_ERR_TLS);
    assert_non_null(strstr(e.msg, "certificate verify failed"));
    kc_conn_stats_t st;
    kc_conn_get_stats(s.c, &st);
    assert_int_equal(st.connects, 1); /* final: no reconnect loop */
    close_setup(&s);
}

static void ssl_wrong_hostname(kc_loop_backend_t b)
{
    setup s;
    assert_int_equal(open_conn(&s, b, kc_test_env("KC_SSL_BOOTSTRAP"), kc_test_env("KC_CA_FILE"),
                               "other.example", KC_SASL_PLAIN, NULL),
                     KC_CONN_FAILED);
    kc_error_t e = final_error(&s);
    assert_int_equal(e.code, KC_ERR_TLS);
    assert_non_null(strstr(e.msg, "hostname mismatch"));
    close_setup(&s);
}

static void scram(kc_loop_backend_t b, kc_sasl_mech_t mech)
{
    setup s;
    assert_int_equal(open_conn(&s, b, kc_test_env("KC_SASL_SSL_BOOTSTRAP"),
                               kc_test_env("KC_CA_FILE"), NULL, mech,
                               kc_test_env("KC_SCRAM_PASSWORD")),
                     KC_CONN_READY);
    pipelined_metadata(&s, 100);
    close_setup(&s);
}

static void scram_wrong_password(kc_loop_backend_t b)
{
    setup s;
    static const char pw[] = "definitely-wrong-pw";
    assert_int_equal(open_conn(&s, b, kc_test_env("KC_SASL_SSL_BOOTSTRAP"),
                               kc_test_env("KC_CA_FILE"), NULL, KC_SASL_SCRAM_SHA_256, pw),
                     KC_CONN_FAILED);
    kc_error_t e = final_error(&s);
    assert_int_equal(e.code, KC_ERR_AUTH);
    assert_non_null(strstr(e.msg, "SCRAM-SHA-256"));
    assert_null(strstr(e.msg, pw));
    close_setup(&s);
}

static void t_ssl_ok_uring(void **st)
{
    (void)st;
    ssl_ok(KC_LOOP_URING);
}
static void t_ssl_ok_epoll(void **st)
{
    (void)st;
    ssl_ok(KC_LOOP_EPOLL);
}
static void t_wrong_ca_uring(void **st)
{
    (void)st;
    ssl_wrong_ca(KC_LOOP_URING);
}
static void t_wrong_ca_epoll(void **st)
{
    (void)st;
    ssl_wrong_ca(KC_LOOP_EPOLL);
}
static void t_wrong_host_uring(void **st)
{
    (void)st;
    ssl_wrong_hostname(KC_LOOP_URING);
}
static void t_wrong_host_epoll(void **st)
{
    (void)st;
    ssl_wrong_hostname(KC_LOOP_EPOLL);
}
static void t_scram256_uring(void **st)
{
    (void)st;
    scram(KC_LOOP_URING, KC_SASL_SCRAM_SHA_256);
}
static void t_scram512_uring(void **st)
{
    (void)st;
    scram(KC_LOOP_URING, KC_SASL_SCRAM_SHA_512);
}
static void t_scram256_epoll(void **st)
{
    (void)st;
    scram(KC_LOOP_EPOLL, KC_SASL_SCRAM_SHA_256);
}
static void t_scram512_epoll(void **st)
{
    (void)st;
    scram(KC_LOOP_EPOLL, KC_SASL_SCRAM_SHA_512);
}
static void t_badpw_uring(void **st)
{
    (void)st;
    scram_wrong_password(KC_LOOP_URING);
}
static void t_badpw_epoll(void **st)
{
    (void)st;
    scram_wrong_password(KC_LOOP_EPOLL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_ssl_ok_uring),     cmocka_unit_test(t_ssl_ok_epoll),
        cmocka_unit_test(t_wrong_ca_uring),   cmocka_unit_test(t_wrong_ca_epoll),
        cmocka_unit_test(t_wrong_host_uring), cmocka_unit_test(t_wrong_host_epoll),
        cmocka_unit_test(t_scram256_uring),   cmocka_unit_test(t_scram512_uring),
        cmocka_unit_test(t_scram256_epoll),   cmocka_unit_test(t_scram512_epoll),
        cmocka_unit_test(t_badpw_uring),      cmocka_unit_test(t_badpw_epoll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
