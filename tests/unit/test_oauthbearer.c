/* kc-test-label: threads */
/* SASL OAUTHBEARER without a broker: the RFC 7628 client message byte for byte, the token and
 * extension rules, the server's error JSON and the \x01 answer, the exchange over a token slot
 * (a re-authentication sends the slot's new token), the OIDC token response (JWT exp and sub,
 * expires_in), the refresh point, the token callback's answers, the OIDC configuration checks
 * (the secret read back redacted), and the refresher thread (refresh at 80%, a failure keeps the
 * old token and is retried). */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/log.h"
#include "conf.h"
#include "kconsume.h"
#include "oauth_refresh.h"
#include "oauth_token.h"
#include "oidc.h"
#include "proto/kafka_errors.h"
#include "sasl.h"
#include "sasl_kafka.h"
#include "sasl_oauthbearer.h"

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void expect_bytes(const uint8_t *got, size_t n, const char *want, size_t want_n)
{
    assert_int_equal(n, want_n);
    assert_memory_equal(got, want, want_n);
}

static void client_message_exact(void **state)
{
    (void)state;
    uint8_t *m;
    size_t n;
    kc_error_t e;
    assert_int_equal(kc_oauthbearer_client_message("eyJ.a-b_c~d+e/f==", NULL, 0, &m, &n, &e),
                     KC_OK);
    static const char want[] = "n,,\x01"
                               "auth=Bearer eyJ.a-b_c~d+e/f==\x01\x01";
    expect_bytes(m, n, want, sizeof want - 1);
    free(m);
    const char *kv[] = {"logicalCluster", "lkc-1", "traceId", "a b"};
    assert_int_equal(kc_oauthbearer_client_message("tok", kv, 4, &m, &n, &e), KC_OK);
    static const char want2[] = "n,,\x01"
                                "auth=Bearer tok\x01logicalCluster=lkc-1\x01traceId=a b\x01\x01";
    expect_bytes(m, n, want2, sizeof want2 - 1);
    free(m);
    /* an odd count is not pairs */
    assert_int_equal(kc_oauthbearer_client_message("tok", kv, 3, &m, &n, &e), KC_ERR_CONFIG);
}

static void token_and_extension_rules(void **state)
{
    (void)state;
    assert_true(kc_oauthbearer_token_ok("abc"));
    assert_true(kc_oauthbearer_token_ok("a.b.c=="));
    assert_false(kc_oauthbearer_token_ok(""));
    assert_false(kc_oauthbearer_token_ok(NULL));
    assert_false(kc_oauthbearer_token_ok("a b"));
    assert_false(kc_oauthbearer_token_ok("=abc"));
    assert_false(kc_oauthbearer_token_ok("ab=c"));
    assert_false(kc_oauthbearer_token_ok("ab\x01"));
    uint8_t *m = NULL;
    size_t n;
    kc_error_t e;
    /* a token with a space or \x01 would split the message: refused, and not echoed */
    assert_int_equal(kc_oauthbearer_client_message("sec ret", NULL, 0, &m, &n, &e), KC_ERR_AUTH);
    assert_null(strstr(e.msg, "sec ret"));
    assert_int_equal(kc_oauthbearer_extension_check("auth", "x", &e), KC_ERR_CONFIG);
    assert_int_equal(kc_oauthbearer_extension_check("a1", "x", &e), KC_ERR_CONFIG);
    assert_int_equal(kc_oauthbearer_extension_check("", "x", &e), KC_ERR_CONFIG);
    assert_int_equal(kc_oauthbearer_extension_check("key",
                                                    "a\x01"
                                                    "b",
                                                    &e),
                     KC_ERR_CONFIG);
    assert_int_equal(kc_oauthbearer_extension_check("key", "v a\tl", &e), KC_OK);
    char **kv;
    size_t nkv;
    assert_int_equal(kc_oauthbearer_extensions_parse("a=b,cD=e=f", &kv, &nkv, &e), KC_OK);
    assert_int_equal(nkv, 4);
    assert_string_equal(kv[0], "a");
    assert_string_equal(kv[1], "b");
    assert_string_equal(kv[2], "cD");
    assert_string_equal(kv[3], "e=f");
    kc_oauthbearer_kv_free(kv, nkv);
    assert_int_equal(kc_oauthbearer_extensions_parse("", &kv, &nkv, &e), KC_OK);
    assert_int_equal(nkv, 0);
    assert_int_equal(kc_oauthbearer_extensions_parse("a=b,novalue", &kv, &nkv, &e), KC_ERR_CONFIG);
    assert_int_equal(kc_oauthbearer_extensions_parse("auth=x", &kv, &nkv, &e), KC_ERR_CONFIG);
}

static void server_error_json(void **state)
{
    (void)state;
    char d[160];
    kc_error_t e;
    const char *ok = "{\"status\":\"invalid_token\",\"scope\":\"kafka\","
                     "\"openid-configuration\":\"https://idp/.well-known\"}";
    assert_int_equal(kc_oauthbearer_server_error((const uint8_t *)ok, strlen(ok), d, sizeof d, &e),
                     KC_OK);
    assert_string_equal(d, "status invalid_token, scope kafka, openid-configuration "
                           "https://idp/.well-known");
    const char *only = "{\"status\":\"invalid_token\"}";
    assert_int_equal(
        kc_oauthbearer_server_error((const uint8_t *)only, strlen(only), d, sizeof d, &e), KC_OK);
    assert_string_equal(d, "status invalid_token");
    static const char *const bad[] = {"",
                                      "not json",
                                      "[]",
                                      "{\"scope\":\"x\"}",
                                      "{\"status\":7}",
                                      "{\"status\":\"a\",\"status\":\"b\"}",
                                      "{\"status\":\"a\",\"scope\":[]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(
            kc_oauthbearer_server_error((const uint8_t *)bad[i], strlen(bad[i]), d, sizeof d, &e),
            KC_ERR_MALFORMED);
    /* control characters never reach a message */
    const char *ctl = "{\"status\":\"a\\nb\\u0001c\"}";
    assert_int_equal(
        kc_oauthbearer_server_error((const uint8_t *)ctl, strlen(ctl), d, sizeof d, &e), KC_OK);
    assert_string_equal(d, "status a?b?c");
}

static void put_token(kc_oauth_slot_t *slot, const char *tok, int64_t expiry)
{
    kc_oauth_token_t t = {.value = strdup(tok), .principal = strdup("p"), .expiry_ms = expiry};
    kc_oauth_slot_put(slot, &t);
    assert_null(t.value);
}

static void exchange_over_slot(void **state)
{
    (void)state;
    kc_oauth_slot_t *slot;
    kc_error_t e;
    assert_int_equal(kc_oauth_slot_new(&slot, &e), KC_OK);
    kc_sasl_t *s;
    assert_int_equal(kc_sasl_new_oauthbearer(slot, &s, &e), KC_OK);
    assert_string_equal(kc_sasl_mech_name(kc_sasl_mech(s)), "OAUTHBEARER");
    const uint8_t *out;
    size_t n;
    /* no token yet */
    assert_int_equal(kc_sasl_step(s, NULL, 0, &out, &n, &e), KC_ERR_AUTH);
    assert_non_null(strstr(e.msg, "no token"));
    put_token(slot, "first", wall_ms() + 60000);
    kc_sasl_reset(s);
    assert_int_equal(kc_sasl_step(s, NULL, 0, &out, &n, &e), KC_OK);
    static const char m1[] = "n,,\x01"
                             "auth=Bearer first\x01\x01";
    expect_bytes(out, n, m1, sizeof m1 - 1);
    /* accepted: empty auth bytes */
    assert_int_equal(kc_sasl_step(s, (const uint8_t *)"", 0, &out, &n, &e), KC_OK);
    assert_true(kc_sasl_done(s));
    /* a re-authentication sends the slot's current token */
    put_token(slot, "second", wall_ms() + 60000);
    assert_int_equal(kc_oauth_slot_generation(slot), 2);
    kc_sasl_reset(s);
    assert_int_equal(kc_sasl_step(s, NULL, 0, &out, &n, &e), KC_OK);
    static const char m2[] = "n,,\x01"
                             "auth=Bearer second\x01\x01";
    expect_bytes(out, n, m2, sizeof m2 - 1);
    /* refused: the server's JSON is answered with \x01, the broker's failure then names it */
    const char *js = "{\"status\":\"invalid_token\"}";
    assert_int_equal(kc_sasl_step(s, (const uint8_t *)js, strlen(js), &out, &n, &e), KC_OK);
    expect_bytes(out, n, "\x01", 1);
    kc_sasl_authenticate_response_t resp;
    memset(&resp, 0, sizeof resp);
    resp.error_code = KC_KAFKA_SASL_AUTHENTICATION_FAILED;
    resp.error_message = (kc_str_t){"Authentication failed", 21};
    assert_int_equal(kc_sasl_authenticate_result(s, &resp, "127.0.0.1:9093", 0, 0, &out, &n, &e),
                     KC_ERR_AUTH);
    assert_non_null(strstr(e.msg, "SASL OAUTHBEARER authentication to broker 127.0.0.1:9093"));
    assert_non_null(strstr(e.msg, "status invalid_token"));
    assert_null(strstr(e.msg, "second"));
    /* an expired token is not sent; the last refresh failure is said */
    put_token(slot, "old", wall_ms() - 1000);
    kc_error_t why = {.code = KC_ERR_TRANSPORT};
    snprintf(why.msg, sizeof why.msg, "token endpoint unreachable");
    kc_oauth_slot_fail(slot, &why);
    kc_sasl_reset(s);
    assert_int_equal(kc_sasl_step(s, NULL, 0, &out, &n, &e), KC_ERR_AUTH);
    assert_non_null(strstr(e.msg, "expired"));
    assert_non_null(strstr(e.msg, "token endpoint unreachable"));
    kc_sasl_free(s);
    kc_oauth_slot_free(slot);
    /* PLAIN/SCRAM constructors refuse OAUTHBEARER, which has no password */
    assert_int_not_equal(kc_sasl_new(KC_SASL_OAUTHBEARER, "u", "p", &s, &e), KC_OK);
    kc_sasl_mech_t m;
    assert_int_equal(kc_sasl_mech_parse("OAUTHBEARER", &m, &e), KC_OK);
    assert_int_equal(m, KC_SASL_OAUTHBEARER);
}

static char *b64url(const char *s)
{
    size_t n = strlen(s);
    char *o = malloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)o, (const unsigned char *)s, (int)n);
    for (char *p = o; *p; p++)
        *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
    char *eq = strchr(o, '=');
    if (eq)
        *eq = '\0';
    return o;
}

static void oidc_response(void **state)
{
    (void)state;
    const char *url = "https://idp.example/token";
    kc_oauth_token_t t;
    kc_error_t e;
    /* a JWT: exp and sub come from its payload, whatever expires_in says */
    char *h = b64url("{\"alg\":\"RS256\"}");
    char *p = b64url("{\"sub\":\"svc-a\",\"exp\":4102444800,\"iat\":1}");
    char jwt[512], body[1024];
    snprintf(jwt, sizeof jwt, "%s.%s.c2ln", h, p);
    snprintf(body, sizeof body,
             "{\"access_token\":\"%s\",\"token_type\":\"bearer\",\"expires_in\":60}", jwt);
    assert_int_equal(kc_oidc_parse_response(body, strlen(body), 1000, url, "cid", &t, &e), KC_OK);
    assert_string_equal(t.value, jwt);
    assert_string_equal(t.principal, "svc-a");
    assert_int_equal(t.expiry_ms, 4102444800000LL);
    kc_oauth_token_clear(&t);
    free(h);
    free(p);
    /* an opaque token: expires_in from now, the client id as principal */
    const char *op = "{\"access_token\":\"opaque-123\",\"expires_in\":30}";
    assert_int_equal(kc_oidc_parse_response(op, strlen(op), 1000, url, "cid", &t, &e), KC_OK);
    assert_int_equal(t.expiry_ms, 31000);
    assert_string_equal(t.principal, "cid");
    kc_oauth_token_clear(&t);
    static const char *const bad[] = {
        "",
        "[1]",
        "{\"expires_in\":30}",
        "{\"access_token\":5,\"expires_in\":30}",
        "{\"access_token\":\"a b\",\"expires_in\":30}",
        "{\"access_token\":\"abc\",\"token_type\":\"mac\",\"expires_in\":30}",
        "{\"access_token\":\"abc\",\"expires_in\":-1}",
        "{\"access_token\":\"abc\"}",
        "{\"access_token\":\"abc\",\"expires_in\":\"30\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_not_equal(
            kc_oidc_parse_response(bad[i], strlen(bad[i]), 1000, url, "cid", &t, &e), KC_OK);
        assert_non_null(strstr(e.msg, url));
        assert_non_null(strstr(e.msg, "OAUTHBEARER"));
        assert_null(t.value);
    }
    /* already expired: refused, never echoing the token */
    const char *old = "{\"access_token\":\"tok-secret-x\",\"expires_in\":1}";
    assert_int_equal(kc_oidc_parse_response(old, strlen(old), 1000 * 1000, url, "cid", &t, &e),
                     KC_OK); /* 1 s from "now" (1000 s): valid */
    kc_oauth_token_clear(&t);
    char *h2 = b64url("{}"), *p2 = b64url("{\"exp\":1}");
    snprintf(jwt, sizeof jwt, "%s.%s.c2ln", h2, p2);
    snprintf(body, sizeof body, "{\"access_token\":\"%s\",\"expires_in\":60}", jwt);
    assert_int_equal(kc_oidc_parse_response(body, strlen(body), 5000, url, "cid", &t, &e),
                     KC_ERR_AUTH);
    assert_null(strstr(e.msg, jwt));
    free(h2);
    free(p2);
}

/* Java's rule (the sasl.login.refresh.* defaults: 0.8, 0.05, 60 s, 300 s), case by case. */
static void refresh_point(void **state)
{
    (void)state;
    kc_oauth_refresh_conf_t d = {
        .factor = 0.8, .jitter = 0.05, .min_period_ms = 60000, .buffer_ms = 300000};
    const int64_t H = 3600000;
    /* an hour's token: 80% (48 min) with no jitter drawn, 85% with the most */
    assert_int_equal(kc_oauth_refresh_at_ms(&d, 0, 0, H, 0.0), 2880000);
    assert_int_equal(kc_oauth_refresh_at_ms(&d, 0, 0, H, 0.999999), 3059999);
    /* a day's token: 80% would leave 4.8 h, but no later than 5 min before the end either way */
    assert_int_equal(kc_oauth_refresh_at_ms(&d, 0, 0, 24 * H, 0.0), 69120000);
    d.factor = 0.99;
    assert_int_equal(kc_oauth_refresh_at_ms(&d, 0, 0, H, 0.0), H - 300000); /* the buffer */
    d.factor = 0.8;
    /* counted from when it arrived: 30 min into a 1 h token, 80% is 48 min after its start */
    assert_int_equal(kc_oauth_refresh_at_ms(&d, 1800000, 0, H, 0.0), 2880000);
    /* a refresh point in the past is moved to the minimum period from now */
    assert_int_equal(kc_oauth_refresh_at_ms(&d, 3000000, 0, H, 0.0), 3060000);
    /* shorter-lived than min period + buffer: the plain fraction (test tokens of seconds) */
    assert_int_equal(kc_oauth_refresh_at_ms(&d, 1000, 1000, 11000, 0.0), 9000);
    /* expired, or a start in the future (skew): now / counted from now */
    assert_int_equal(kc_oauth_refresh_at_ms(&d, 5000, 0, 1000, 0.0), 5000);
    assert_int_equal(kc_oauth_refresh_at_ms(&d, 1000, 9000, 11000, 0.0), 9000);
    /* factor + jitter past 1: no later than the expiry; a token that "never" expires */
    d.factor = 0.99, d.jitter = 0.25;
    assert_int_equal(kc_oauth_refresh_at_ms(&d, 1000, 1000, 11000, 0.999), 11000);
    assert_int_equal(kc_oauth_refresh_at_ms(&d, 0, 0, INT64_MAX, 0.999), INT64_MAX - 300000);
}

static int cb_mode;
static void cb(void *opaque, kc_oauthbearer_req_t *req)
{
    (void)opaque;
    kc_error_t e;
    const char *kv[] = {"logicalCluster", "lkc-9", "odd"};
    switch (cb_mode) {
    case 0:
        assert_int_equal(
            kc_oauthbearer_set_token(req, "cb-token", wall_ms() + 60000, "me", kv, 2, &e), KC_OK);
        /* the first answer stands */
        assert_int_equal(
            kc_oauthbearer_set_token(req, "other", wall_ms() + 60000, NULL, NULL, 0, &e),
            KC_ERR_INVALID_ARG);
        break;
    case 1:
        assert_int_equal(
            kc_oauthbearer_set_token(req, "cb-token", wall_ms() + 60000, "me", kv, 3, &e),
            KC_ERR_INVALID_ARG);
        break;
    case 2:
        assert_int_equal(
            kc_oauthbearer_set_token(req, "cb-token", wall_ms() - 1, "me", NULL, 0, &e),
            KC_ERR_INVALID_ARG);
        break;
    case 3:
        break; /* no answer */
    }
}

static kc_conf_t *oauth_conf(void)
{
    kc_conf_t *c = kc_conf_new();
    kc_error_t e;
    assert_int_equal(kc_conf_set(c, "security.protocol", "SASL_SSL", &e), KC_OK);
    assert_int_equal(kc_conf_set(c, "sasl.mechanism", "OAUTHBEARER", &e), KC_OK);
    return c;
}

static void token_callback_answers(void **state)
{
    (void)state;
    kc_conf_t *c = oauth_conf();
    kc_error_t e;
    kc_oauth_refresher_t *r = NULL;
    /* neither oidc nor a callback */
    assert_int_equal(kc_oauth_refresher_new(c, &r, &e), KC_ERR_CONFIG);
    assert_int_equal(kc_conf_set_oauthbearer_token_cb(c, cb, NULL, &e), KC_OK);
    cb_mode = 0;
    assert_int_equal(kc_oauth_refresher_new(c, &r, &e), KC_OK);
    uint8_t *m;
    size_t n;
    assert_int_equal(kc_oauth_slot_message(kc_oauth_refresher_slot(r), wall_ms(), &m, &n, &e),
                     KC_OK);
    static const char want[] = "n,,\x01"
                               "auth=Bearer cb-token\x01logicalCluster=lkc-9\x01\x01";
    expect_bytes(m, n, want, sizeof want - 1);
    free(m);
    kc_oauth_refresher_free(r);
    static const char *const says[] = {NULL, "extensions", "expiry_ms", "returned without"};
    for (cb_mode = 1; cb_mode <= 3; cb_mode++) {
        assert_int_equal(kc_oauth_refresher_new(c, &r, &e), KC_ERR_AUTH);
        assert_non_null(strstr(e.msg, says[cb_mode]));
        assert_null(strstr(e.msg, "cb-token"));
    }
    kc_conf_destroy(c);
}

/* The refresher calls the callback again at 80% of the lifetime, on its own thread; a failed
 * refresh keeps the old token in use and is retried. */
static _Atomic int rf_calls, rf_wrong_thread;
static void refresh_cb(void *opaque, kc_oauthbearer_req_t *req)
{
    (void)opaque;
    int n = atomic_fetch_add(&rf_calls, 1);
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (n > 0 && strcmp(name, "kc-oauth") != 0)
        atomic_fetch_add(&rf_wrong_thread, 1);
    if (n == 2) { /* the third call fails */
        kc_oauthbearer_set_token_failure(req, "idp down");
        return;
    }
    kc_error_t e;
    char tok[16];
    snprintf(tok, sizeof tok, "t%d", n);
    kc_oauthbearer_set_token(req, tok, wall_ms() + 2000, "me", NULL, 0, &e);
}

static void refresher_thread(void **state)
{
    (void)state;
    kc_conf_t *c = oauth_conf();
    kc_error_t e;
    assert_int_equal(kc_conf_set_oauthbearer_token_cb(c, refresh_cb, NULL, &e), KC_OK);
    kc_oauth_refresher_t *r = NULL;
    assert_int_equal(kc_oauth_refresher_new(c, &r, &e), KC_OK);
    assert_int_equal(atomic_load(&rf_calls), 1); /* the first, on this thread */
    kc_logger_t lg;
    kc_logger_init(&lg, NULL, NULL, KC_LOG_ERROR, "test");
    assert_int_equal(kc_oauth_refresher_start(r, &lg, &e), KC_OK);
    kc_oauth_slot_t *slot = kc_oauth_refresher_slot(r);
    /* 2 s tokens: refreshed at 1.6 s, again 1.6 s later (that one fails: t1 stays, and is
     * retried 1 s later) */
    for (int i = 0; i < 100 && atomic_load(&rf_calls) < 4; i++)
        usleep(100 * 1000);
    assert_true(atomic_load(&rf_calls) >= 4);
    assert_int_equal(atomic_load(&rf_wrong_thread), 0);
    assert_true(kc_oauth_slot_generation(slot) >= 3); /* t0, t1, t3 */
    kc_oauth_refresher_free(r);
    kc_conf_destroy(c);
}

static void oidc_conf_checks(void **state)
{
    (void)state;
    kc_conf_t *c = oauth_conf();
    kc_error_t e;
    assert_int_equal(kc_conf_set(c, "sasl.oauthbearer.method", "oidc", &e), KC_OK);
    assert_int_equal(kc_conf_set(c, "bootstrap.servers", "127.0.0.1:1", &e), KC_OK);
    assert_int_equal(kc_conf_set(c, "sasl.oauthbearer.client.id", "cid", &e), KC_OK);
    assert_int_equal(kc_conf_validate(c, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "sasl.oauthbearer.client.secret"));
    assert_int_equal(kc_conf_set(c, "sasl.oauthbearer.client.secret", "kc-probe-secret-77", &e),
                     KC_OK);
    assert_int_equal(kc_conf_set(c, "sasl.oauthbearer.token.endpoint.url", "http://idp/t", &e),
                     KC_OK);
    assert_int_equal(kc_conf_validate(c, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "https://"));
    assert_int_equal(kc_conf_set(c, "sasl.oauthbearer.token.endpoint.url", "https://idp/t", &e),
                     KC_OK);
    assert_int_equal(kc_conf_validate(c, &e), KC_OK);
    char buf[64];
    assert_int_equal(kc_conf_get(c, "sasl.oauthbearer.client.secret", buf, NULL), KC_OK);
    assert_string_equal(buf, "[redacted]");
    /* a password makes no sense with a token */
    assert_int_equal(kc_conf_set(c, "sasl.password", "x", &e), KC_OK);
    assert_int_equal(kc_conf_validate(c, &e), KC_ERR_CONFIG);
    assert_null(strstr(e.msg, "kc-probe-secret-77"));
    kc_conf_destroy(c);
    /* OIDC keys without method=oidc are a mistake, said so */
    c = oauth_conf();
    assert_int_equal(kc_conf_set(c, "bootstrap.servers", "127.0.0.1:1", &e), KC_OK);
    assert_int_equal(kc_conf_set(c, "sasl.oauthbearer.client.id", "cid", &e), KC_OK);
    assert_int_equal(kc_conf_validate(c, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "sasl.oauthbearer.method"));
    kc_conf_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(client_message_exact),   cmocka_unit_test(token_and_extension_rules),
        cmocka_unit_test(server_error_json),      cmocka_unit_test(exchange_over_slot),
        cmocka_unit_test(oidc_response),          cmocka_unit_test(refresh_point),
        cmocka_unit_test(token_callback_answers), cmocka_unit_test(oidc_conf_checks),
        cmocka_unit_test(refresher_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
