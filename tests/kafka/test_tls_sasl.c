/*
 * TLS and SASL against real brokers (the testkit's SSL and SASL_SSL listeners), without the event
 * loop: a blocking TCP socket, io/tls.c over it, and the generated codec for ApiVersions,
 * SaslHandshake and SaslAuthenticate. Checks: handshake with the right CA, a wrong CA and a wrong
 * host name fail with clear messages, SCRAM-SHA-256/512 succeed and the session is usable,
 * a wrong password fails with KC_ERR_AUTH naming mechanism and broker, an unenabled mechanism is
 * refused naming what the broker enables.
 *
 * Environment: KC_SSL_BOOTSTRAP, KC_SASL_SSL_BOOTSTRAP, KC_CA_FILE, KC_SCRAM_USER,
 * KC_SCRAM_PASSWORD (tests/run-suite sets them from `tests/testkit/cluster env`).
 */
#include "kc_test.h"

#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "proto/proto.h"
#include "sasl.h"
#include "sasl_kafka.h"
#include "tls.h"

struct tconn {
    int fd;
    kc_tls_t *tls;
    char broker[128];
    int32_t corr;
    kc_proto_versions_t v;
};

/* First "host:port" of a bootstrap list. */
static void split_bootstrap(const char *bs, char *host, size_t hcap, char *port, size_t pcap)
{
    const char *end = strchr(bs, ',');
    size_t len = end ? (size_t)(end - bs) : strlen(bs);
    const char *colon = memrchr(bs, ':', len);
    assert_non_null(colon);
    snprintf(host, hcap, "%.*s", (int)(colon - bs), bs);
    snprintf(port, pcap, "%.*s", (int)(len - (size_t)(colon - bs) - 1), colon + 1);
}

static int tcp_connect(const char *host, const char *port)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        fail_msg("cannot resolve %s:%s", host, port);
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct timeval tv = {.tv_sec = 15};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
        fail_msg("cannot connect to %s:%s", host, port);
    freeaddrinfo(ai);
    return fd;
}

static kc_err_t flush(struct tconn *c, kc_error_t *e)
{
    const uint8_t *p;
    size_t n;
    while ((n = kc_tls_out_peek(c->tls, &p)) > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return kc_fail(e, KC_ERR_TRANSPORT, "send to %s failed", c->broker);
        kc_tls_out_consume(c->tls, (size_t)w);
    }
    return KC_OK;
}

static kc_err_t pull(struct tconn *c, kc_error_t *e)
{
    uint8_t buf[65536];
    ssize_t r = recv(c->fd, buf, sizeof buf, 0);
    if (r <= 0)
        return kc_fail(e, KC_ERR_TRANSPORT, "connection to %s closed", c->broker);
    return kc_tls_feed(c->tls, buf, (size_t)r, e);
}

/* TCP connect + TLS handshake. `verify_name` is what the certificate is checked against. */
static kc_err_t open_tls(struct tconn *c, const char *bootstrap, const kc_tls_conf_t *conf,
                         const char *verify_name, kc_error_t *e)
{
    char host[96], port[16];
    split_bootstrap(bootstrap, host, sizeof host, port, sizeof port);
    memset(c, 0, sizeof *c);
    snprintf(c->broker, sizeof c->broker, "%s:%s", host, port);
    c->fd = tcp_connect(host, port);
    kc_tls_ctx_t *ctx = NULL;
    kc_err_t rc = kc_tls_ctx_new(conf, &ctx, e);
    if (rc != KC_OK)
        fail_msg("kc_tls_ctx_new: %s", e->msg);
    rc = kc_tls_new(ctx, verify_name ? verify_name : host, &c->tls, e);
    kc_tls_ctx_free(ctx); /* the session keeps its own reference to the SSL_CTX */
    assert_int_equal(rc, KC_OK);
    for (int i = 0; i < 50; i++) {
        rc = kc_tls_handshake(c->tls, e);
        kc_err_t frc = flush(c, e);
        if (rc == KC_OK)
            return frc;
        if (rc != KC_ERR_AGAIN)
            return rc;
        if (frc != KC_OK || (frc = pull(c, e)) != KC_OK)
            return frc;
    }
    return kc_fail(e, KC_ERR_TIMEOUT, "TLS handshake with %s did not finish", c->broker);
}

static void close_conn(struct tconn *c)
{
    kc_error_t e;
    if (c->tls) {
        kc_tls_shutdown(c->tls, &e);
        flush(c, &e);
    }
    kc_tls_free(c->tls);
    close(c->fd);
    memset(c, 0, sizeof *c);
}

static kc_err_t read_exact(struct tconn *c, uint8_t *buf, size_t n, kc_error_t *e)
{
    size_t have = 0, got;
    while (have < n) {
        kc_err_t rc = kc_tls_read(c->tls, buf + have, n - have, &got, e);
        if (rc == KC_OK) {
            have += got;
            continue;
        }
        if (rc != KC_ERR_AGAIN)
            return rc;
        if ((rc = flush(c, e)) != KC_OK || (rc = pull(c, e)) != KC_OK)
            return rc;
    }
    return flush(c, e);
}

/* One request/response with the generated codec. The response's views point into *frame, which
 * the caller frees after using `resp`. */
static kc_err_t request(struct tconn *c, int16_t key, int16_t ver, const void *req, void *resp,
                        kc_arena_t *arena, uint8_t **frame, kc_error_t *e)
{
    const kc_proto_api_t *api = kc_proto_api_find(key);
    assert_non_null(api);
    kc_wbuf_t w = {0};
    assert_int_equal(kc_wbuf_reserve(&w, 4), KC_OK);
    w.len = 4;
    kc_request_header_t h;
    kc_request_header_init(&h);
    h.request_api_key = key;
    h.request_api_version = ver;
    h.correlation_id = ++c->corr;
    h.client_id = kc_str("kc-test-tls-sasl");
    kc_err_t rc = kc_request_header_encode(&h, kc_proto_request_header_version(key, ver), &w, e);
    if (rc == KC_OK)
        rc = api->encode_request(req, ver, &w, e);
    assert_int_equal(rc, KC_OK);
    uint32_t size = (uint32_t)(w.len - 4);
    w.data[0] = (uint8_t)(size >> 24);
    w.data[1] = (uint8_t)(size >> 16);
    w.data[2] = (uint8_t)(size >> 8);
    w.data[3] = (uint8_t)size;
    rc = kc_tls_write(c->tls, w.data, w.len, e);
    kc_wbuf_free(&w);
    if (rc != KC_OK || (rc = flush(c, e)) != KC_OK)
        return rc;
    uint8_t sz[4];
    if ((rc = read_exact(c, sz, 4, e)) != KC_OK)
        return rc;
    size = (uint32_t)sz[0] << 24 | (uint32_t)sz[1] << 16 | (uint32_t)sz[2] << 8 | sz[3];
    assert_true(size > 0 && size < (64u << 20));
    *frame = malloc(size);
    if ((rc = read_exact(c, *frame, size, e)) != KC_OK)
        return rc;
    kc_rbuf_t r = kc_rbuf(*frame, size);
    kc_response_header_t rh;
    rc = kc_response_header_decode(&rh, kc_proto_response_header_version(key, ver), &r, arena, e);
    assert_int_equal(rc, KC_OK);
    assert_int_equal(rh.correlation_id, c->corr);
    return api->decode_response(resp, ver, &r, arena, e);
}

/* ApiVersions v3 (any 2.4+ broker) then negotiation; asserts the broker speaks what we need. */
static void api_versions(struct tconn *c)
{
    kc_api_versions_request_t req;
    kc_api_versions_request_init(&req);
    req.client_software_name = kc_str("kconsume-test");
    req.client_software_version = kc_str("0.1.0");
    kc_api_versions_response_t resp;
    kc_arena_t a = {0};
    uint8_t *frame = NULL;
    kc_error_t e;
    if (request(c, KC_API_VERSIONS_REQUEST_API_KEY, 3, &req, &resp, &a, &frame, &e) != KC_OK)
        fail_msg("ApiVersions to %s: %s", c->broker, e.msg);
    assert_int_equal(resp.error_code, 0);
    assert_int_equal(kc_proto_negotiate(&resp, &c->v, &e), KC_OK);
    assert_true(c->v.version[KC_FETCH_REQUEST_API_KEY] >= 12);
    assert_int_equal(c->v.version[KC_SASL_HANDSHAKE_REQUEST_API_KEY], 1);
    assert_int_equal(c->v.version[KC_SASL_AUTHENTICATE_REQUEST_API_KEY], 2);
    free(frame);
    kc_arena_free(&a);
}

static kc_tls_conf_t tls_conf(void)
{
    kc_tls_conf_t conf = {.ca_location = kc_test_env("KC_CA_FILE")};
    return conf;
}

static void ssl_listener_handshake_and_api_versions(void **state)
{
    (void)state;
    struct tconn c;
    kc_error_t e;
    kc_tls_conf_t conf = tls_conf();
    if (open_tls(&c, kc_test_env("KC_SSL_BOOTSTRAP"), &conf, NULL, &e) != KC_OK)
        fail_msg("TLS to SSL listener: %s", e.msg);
    fprintf(stderr, "%s: %s %s\n", c.broker, kc_tls_version(c.tls), kc_tls_cipher(c.tls));
    api_versions(&c);
    api_versions(&c); /* the session keeps working */
    close_conn(&c);
}

static void ssl_wrong_ca_is_a_clear_verify_error(void **state)
{
    (void)state;
    const char *dir = kc_test_tmpdir("wrongca"); /* removed at exit, pass or fail */
    char ca[4096];
    kc_test_self_signed(dir, "ca", "not-the-testkit-ca", 1, NULL);
    kc_test_path(ca, sizeof ca, dir, "ca.pem");
    kc_tls_conf_t conf = {.ca_location = ca};
    struct tconn c;
    kc_error_t e;
    kc_err_t rc = open_tls(&c, kc_test_env("KC_SSL_BOOTSTRAP"), &conf, NULL, &e);
    fprintf(stderr, "broker %s: %s\n", c.broker, e.msg);
    assert_int_equal(rc, KC_ERR_TLS);
    assert_non_null(strstr(e.msg, "certificate verify failed"));
    close_conn(&c);
}

static void ssl_wrong_hostname_fails_unless_identification_is_off(void **state)
{
    (void)state;
    struct tconn c;
    kc_error_t e;
    kc_tls_conf_t conf = tls_conf();
    kc_err_t rc = open_tls(&c, kc_test_env("KC_SSL_BOOTSTRAP"), &conf, "other.example", &e);
    fprintf(stderr, "broker %s: %s\n", c.broker, e.msg);
    assert_int_equal(rc, KC_ERR_TLS);
    assert_non_null(strstr(e.msg, "hostname mismatch"));
    assert_non_null(strstr(e.msg, "other.example"));
    close_conn(&c);
    conf.endpoint_identification = "";
    rc = open_tls(&c, kc_test_env("KC_SSL_BOOTSTRAP"), &conf, "other.example", &e);
    if (rc != KC_OK)
        fail_msg("identification \"\": %s", e.msg);
    api_versions(&c);
    close_conn(&c);
}

/* SaslHandshake + SaslAuthenticate rounds; returns the first failure. */
static kc_err_t authenticate(struct tconn *c, kc_sasl_mech_t mech, const char *user,
                             const char *password, int64_t *lifetime_ms, kc_error_t *e)
{
    kc_sasl_t *s = NULL;
    assert_int_equal(kc_sasl_new(mech, user, password, &s, e), KC_OK);
    kc_sasl_handshake_request_t hreq;
    kc_sasl_handshake_request_init(&hreq);
    hreq.mechanism = kc_str(kc_sasl_mech_name(mech));
    kc_sasl_handshake_response_t hresp;
    kc_arena_t a = {0};
    uint8_t *frame = NULL;
    kc_err_t rc =
        request(c, KC_SASL_HANDSHAKE_REQUEST_API_KEY,
                c->v.version[KC_SASL_HANDSHAKE_REQUEST_API_KEY], &hreq, &hresp, &a, &frame, e);
    if (rc == KC_OK)
        rc = kc_sasl_handshake_result(&hresp, mech, c->broker, e);
    free(frame);
    frame = NULL;
    const uint8_t *out;
    size_t out_len;
    if (rc == KC_OK)
        rc = kc_sasl_step(s, NULL, 0, &out, &out_len, e);
    int rounds = 0;
    while (rc == KC_OK && !kc_sasl_done(s) && rounds++ < 5) {
        kc_sasl_authenticate_request_t areq;
        kc_sasl_authenticate_request_init(&areq);
        areq.auth_bytes = (kc_bytes_t){out, (int32_t)out_len};
        kc_sasl_authenticate_response_t aresp;
        kc_arena_reset(&a);
        free(frame);
        frame = NULL;
        rc = request(c, KC_SASL_AUTHENTICATE_REQUEST_API_KEY,
                     c->v.version[KC_SASL_AUTHENTICATE_REQUEST_API_KEY], &areq, &aresp, &a, &frame,
                     e);
        if (rc == KC_OK)
            rc = kc_sasl_authenticate_result(s, &aresp, c->broker, 0, 0, &out, &out_len, e);
        if (rc == KC_OK && kc_sasl_done(s))
            *lifetime_ms = aresp.session_lifetime_ms;
    }
    if (rc == KC_OK && !kc_sasl_done(s))
        rc = kc_fail(e, KC_ERR_STATE, "SASL did not finish in %d rounds", rounds);
    free(frame);
    kc_arena_free(&a);
    kc_sasl_free(s);
    return rc;
}

static void scram_ok(kc_sasl_mech_t mech)
{
    struct tconn c;
    kc_error_t e;
    kc_tls_conf_t conf = tls_conf();
    if (open_tls(&c, kc_test_env("KC_SASL_SSL_BOOTSTRAP"), &conf, NULL, &e) != KC_OK)
        fail_msg("TLS to SASL_SSL listener: %s", e.msg);
    api_versions(&c);
    int64_t lifetime = -1;
    if (authenticate(&c, mech, kc_test_env("KC_SCRAM_USER"), kc_test_env("KC_SCRAM_PASSWORD"),
                     &lifetime, &e) != KC_OK)
        fail_msg("%s", e.msg);
    fprintf(stderr, "%s authenticated to %s, session_lifetime_ms=%lld\n", kc_sasl_mech_name(mech),
            c.broker, (long long)lifetime);
    assert_true(lifetime >= 0);
    /* An unauthenticated SASL_SSL connection only gets ApiVersions/SaslHandshake; after success,
     * requests keep being answered on the same connection. */
    api_versions(&c);
    close_conn(&c);
}

static void sasl_ssl_scram_sha_256(void **state)
{
    (void)state;
    scram_ok(KC_SASL_SCRAM_SHA_256);
}

static void sasl_ssl_scram_sha_512(void **state)
{
    (void)state;
    scram_ok(KC_SASL_SCRAM_SHA_512);
}

static void sasl_ssl_wrong_password_is_auth_error(void **state)
{
    (void)state;
    static const kc_sasl_mech_t mechs[] = {KC_SASL_SCRAM_SHA_256, KC_SASL_SCRAM_SHA_512};
    for (int i = 0; i < 2; i++) {
        struct tconn c;
        kc_error_t e;
        kc_tls_conf_t conf = tls_conf();
        if (open_tls(&c, kc_test_env("KC_SASL_SSL_BOOTSTRAP"), &conf, NULL, &e) != KC_OK)
            fail_msg("TLS to SASL_SSL listener: %s", e.msg);
        api_versions(&c);
        int64_t lifetime;
        kc_err_t rc = authenticate(&c, mechs[i], kc_test_env("KC_SCRAM_USER"),
                                   "definitely-wrong-pw", &lifetime, &e);
        fprintf(stderr, "%s\n", e.msg);
        assert_int_equal(rc, KC_ERR_AUTH);
        assert_non_null(strstr(e.msg, kc_sasl_mech_name(mechs[i])));
        assert_non_null(strstr(e.msg, c.broker));
        assert_null(strstr(e.msg, "definitely-wrong-pw"));
        close_conn(&c);
    }
}

static void sasl_ssl_unenabled_mechanism_is_refused(void **state)
{
    (void)state;
    struct tconn c;
    kc_error_t e;
    kc_tls_conf_t conf = tls_conf();
    if (open_tls(&c, kc_test_env("KC_SASL_SSL_BOOTSTRAP"), &conf, NULL, &e) != KC_OK)
        fail_msg("TLS to SASL_SSL listener: %s", e.msg);
    api_versions(&c);
    int64_t lifetime;
    kc_err_t rc = authenticate(&c, KC_SASL_PLAIN, "x", "y", &lifetime, &e);
    fprintf(stderr, "%s\n", e.msg);
    assert_int_equal(rc, KC_ERR_AUTH);
    assert_non_null(strstr(e.msg, "UNSUPPORTED_SASL_MECHANISM"));
    assert_non_null(strstr(e.msg, "SCRAM-SHA-512"));
    close_conn(&c);
}

/* KIP-368: re-authentication runs the same SaslHandshake + SaslAuthenticate sequence again on
 * the authenticated connection (what the connection layer does once kc_sasl_reauth_due()). A
 * broker only allows it when it set a session lifetime (connections.max.reauth.ms); without one
 * it refuses a second handshake, which is why kc_sasl_reauth_due() is never true for lifetime 0.
 * Both cases are asserted; which one runs depends on the broker's configuration (printed). */
static void sasl_ssl_reauthentication(void **state)
{
    (void)state;
    struct tconn c;
    kc_error_t e;
    kc_tls_conf_t conf = tls_conf();
    const char *user = kc_test_env("KC_SCRAM_USER"), *pw = kc_test_env("KC_SCRAM_PASSWORD");
    if (open_tls(&c, kc_test_env("KC_SASL_SSL_BOOTSTRAP"), &conf, NULL, &e) != KC_OK)
        fail_msg("TLS to SASL_SSL listener: %s", e.msg);
    api_versions(&c);
    int64_t lifetime = -1;
    if (authenticate(&c, KC_SASL_SCRAM_SHA_512, user, pw, &lifetime, &e) != KC_OK)
        fail_msg("%s", e.msg);
    fprintf(stderr, "session_lifetime_ms=%lld\n", (long long)lifetime);
    if (lifetime == 0) {
        assert_int_equal(kc_sasl_reauth_at_ms(0, lifetime, 0), INT64_MAX);
        assert_int_equal(authenticate(&c, KC_SASL_SCRAM_SHA_512, user, pw, &lifetime, &e),
                         KC_ERR_AUTH);
        fprintf(stderr, "no lifetime, second handshake refused: %s\n", e.msg);
        assert_non_null(strstr(e.msg, "ILLEGAL_SASL_STATE"));
        close_conn(&c);
        return;
    }
    for (int i = 0; i < 2; i++) {
        /* Brokers refuse re-authentication within 1 s of the previous one (KafkaChannel). */
        usleep(1100 * 1000);
        if (authenticate(&c, KC_SASL_SCRAM_SHA_512, user, pw, &lifetime, &e) != KC_OK)
            fail_msg("re-authentication %d: %s", i, e.msg);
        assert_true(lifetime > 0);
        api_versions(&c);
    }
    /* KIP-368 requires the same mechanism: a switch is refused, not silently accepted (Kafka 4.1
     * answers by closing the connection). */
    usleep(1100 * 1000);
    kc_err_t rc = authenticate(&c, KC_SASL_SCRAM_SHA_256, user, pw, &lifetime, &e);
    assert_true(rc == KC_ERR_AUTH || rc == KC_ERR_CLOSED || rc == KC_ERR_TRANSPORT);
    fprintf(stderr, "mechanism switch refused: %s\n", e.msg);
    close_conn(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ssl_listener_handshake_and_api_versions),
        cmocka_unit_test(ssl_wrong_ca_is_a_clear_verify_error),
        cmocka_unit_test(ssl_wrong_hostname_fails_unless_identification_is_off),
        cmocka_unit_test(sasl_ssl_scram_sha_256),
        cmocka_unit_test(sasl_ssl_scram_sha_512),
        cmocka_unit_test(sasl_ssl_wrong_password_is_auth_error),
        cmocka_unit_test(sasl_ssl_unenabled_mechanism_is_refused),
        cmocka_unit_test(sasl_ssl_reauthentication),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
