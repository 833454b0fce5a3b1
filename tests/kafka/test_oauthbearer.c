/* kc-test-label: threads-long */
/* SASL OAUTHBEARER (KIP-255) against the testkit's oauthbearer listener, whose broker validates
 * RS256 JWTs against the token endpoint's JWKS with Kafka's own
 * OAuthBearerValidatorCallbackHandler (tests/testkit/cluster, oauth_broker_config):
 *  - callback_consume: the application's token callback gets a token from the endpoint itself
 *    (libcurl, as an application would), with a SASL extension; every record exactly once; the
 *    callback runs first on the creating thread, later only on the refresher ("kc-oauth");
 *  - oidc_consume: sasl.oauthbearer.method=oidc (KIP-768), no scope, consumes, commits and
 *    reads back;
 *  - oidc_group_classic / oidc_group_consumer: group members over OIDC (their coordinator
 *    connections log in with the token as well) read everything;
 *  - oidc_expiry_reauth: 15 s tokens (the endpoint's "lifetime:15" scope) over a 40 s run with a
 *    second batch produced mid-run: the token is refreshed and every connection re-authenticates
 *    in place (KIP-368: stats reauths grow, connects stay 1), nothing lost, nothing twice;
 *  - idp_outage: the token source fails until the 15 s token expired and the broker refused the
 *    connection (KC_ERR_AUTH, final for that token); once the source answers again, the refreshed
 *    token is new credentials and the connection starts over: a batch produced during the outage
 *    is read, nothing lost, nothing twice;
 *  - oidc_wrong_secret: kc_consumer_new fails with KC_ERR_AUTH naming OAUTHBEARER and the token
 *    endpoint, never the secret (the message goes to the suite's credential scan);
 *  - callback_failure: the callback's failure fails kc_consumer_new with its reason.
 * Needs KC_OAUTHBEARER_BOOTSTRAP, KC_OIDC_TOKEN_URL, KC_OIDC_CLIENT_ID, KC_OIDC_CLIENT_SECRET,
 * KC_CA_FILE, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite, --listeners ...,oauthbearer); skips
 * (77) only when KC_OAUTHBEARER_BOOTSTRAP is absent: a cluster without that listener. */
#include "kc_test.h"
#include "tally.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   2
#define RECS 400

static char topic[64];
static kc_tally_t tally;
static pthread_t main_thread;
static _Atomic int cb_calls, cb_off_thread; /* token callback calls; calls on a wrong thread */
static _Atomic int idp_down;                /* idp_outage: the token callback fails while set */

static void reset_counts(void)
{
    kc_tally_reset(&tally);
    atomic_store(&cb_calls, 0);
    atomic_store(&cb_off_thread, 0);
}

static int setup(void **state)
{
    (void)state;
    main_thread = pthread_self();
    snprintf(topic, sizeof topic, "kc-oauth-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d", topic, NP);
    kc_test_cluster("produce %s --records %d --size 100", topic, RECS);
    return 0;
}

static kc_conf_t *base_conf(void)
{
    kc_conf_t *c = kc_conf_new();
    kc_test_conf_set(c, "bootstrap.servers", kc_test_env("KC_OAUTHBEARER_BOOTSTRAP"));
    kc_test_conf_set(c, "security.protocol", "SASL_SSL");
    kc_test_conf_set(c, "sasl.mechanism", "OAUTHBEARER");
    kc_test_conf_set(c, "ssl.ca.location", kc_test_env("KC_CA_FILE"));
    kc_test_conf_set(c, "worker.threads", "2");
    kc_test_conf_set(c, "statistics.interval.ms", "1000");
    return c;
}

static kc_conf_t *oidc_conf(const char *secret, const char *scope)
{
    kc_conf_t *c = base_conf();
    kc_test_conf_set(c, "sasl.oauthbearer.method", "oidc");
    kc_test_conf_set(c, "sasl.oauthbearer.token.endpoint.url", kc_test_env("KC_OIDC_TOKEN_URL"));
    kc_test_conf_set(c, "sasl.oauthbearer.client.id", kc_test_env("KC_OIDC_CLIENT_ID"));
    kc_test_conf_set(c, "sasl.oauthbearer.client.secret",
                     secret ? secret : kc_test_env("KC_OIDC_CLIENT_SECRET"));
    if (scope)
        kc_test_conf_set(c, "sasl.oauthbearer.scope", scope);
    return c;
}

static kc_consumer_t *start(kc_conf_t *conf)
{
    kc_callbacks_t cbs = {
        .on_records = kc_tally_on_records, .on_event = kc_tally_on_event, .opaque = &tally};
    return kc_test_consumer(conf, &cbs);
}

static void wait_total(int64_t want, const char *what)
{
    kc_tally_expect(&tally, want, 60000, what);
    assert_int_equal(kc_tally_errors_of(&tally, KC_ERR_AUTH), 0);
}

/* Sums a broker counter over brokers[] of the latest stats JSON. */
/* A per-broker counter of the last stats: the sum over brokers (max_out: the largest one). */
static int64_t broker_stat(const char *field, int64_t *max_out)
{
    static char stats[sizeof tally.last_stats];
    kc_tally_last_stats(&tally, stats, sizeof stats);
    json_t *o = json_loads(stats, 0, NULL);
    int64_t sum = -1, max = -1;
    json_t *bs = json_object_get(o, "brokers");
    size_t i;
    json_t *b;
    json_array_foreach(bs, i, b)
    {
        json_t *v = json_object_get(b, field);
        if (json_is_integer(v)) {
            sum = (sum < 0 ? 0 : sum) + json_integer_value(v);
            if (json_integer_value(v) > max)
                max = json_integer_value(v);
        }
    }
    json_decref(o);
    if (max_out)
        *max_out = max;
    return sum;
}

/* ---- the application's token source: the endpoint, over libcurl ---- */

typedef struct buf {
    char d[65536];
    size_t n;
} buf_t;

static size_t on_body(char *p, size_t s, size_t n, void *o)
{
    buf_t *b = o;
    size_t k = s * n;
    if (b->n + k >= sizeof b->d)
        return 0;
    memcpy(b->d + b->n, p, k);
    b->n += k;
    b->d[b->n] = 0;
    return k;
}

/* opaque: the token request's scope (NULL: "kafka") */
static void token_cb(void *opaque, kc_oauthbearer_req_t *req)
{
    atomic_fetch_add(&cb_calls, 1);
    if (atomic_load(&idp_down)) {
        kc_oauthbearer_set_token_failure(req, "the test's identity provider is down");
        return;
    }
    char fields[128];
    snprintf(fields, sizeof fields, "grant_type=client_credentials&scope=%s",
             opaque ? (const char *)opaque : "kafka");
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (!pthread_equal(pthread_self(), main_thread) && strcmp(name, "kc-oauth") != 0)
        atomic_fetch_add(&cb_off_thread, 1);
    CURL *h = curl_easy_init();
    buf_t *b = calloc(1, sizeof *b);
    char userpwd[256];
    snprintf(userpwd, sizeof userpwd, "%s:%s", kc_test_env("KC_OIDC_CLIENT_ID"),
             kc_test_env("KC_OIDC_CLIENT_SECRET"));
    curl_easy_setopt(h, CURLOPT_URL, kc_test_env("KC_OIDC_TOKEN_URL"));
    curl_easy_setopt(h, CURLOPT_CAINFO, kc_test_env("KC_CA_FILE"));
    curl_easy_setopt(h, CURLOPT_USERPWD, userpwd);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, fields);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(h);
    curl_easy_cleanup(h);
    json_t *o = cc == CURLE_OK ? json_loadb(b->d, b->n, 0, NULL) : NULL;
    const char *tok = json_string_value(json_object_get(o, "access_token"));
    json_int_t life = json_integer_value(json_object_get(o, "expires_in"));
    if (!tok || life <= 0) {
        kc_oauthbearer_set_token_failure(req, "the test's token request failed");
    } else {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        int64_t now = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
        const char *ext[] = {"traceId", "kconsume-test"};
        kc_error_t e;
        if (kc_oauthbearer_set_token(req, tok, now + life * 1000, kc_test_env("KC_OIDC_CLIENT_ID"),
                                     ext, 2, &e) != KC_OK)
            fprintf(stderr, "kc_oauthbearer_set_token: %s\n", e.msg);
    }
    json_decref(o);
    free(b);
}

static void callback_consume(void **state)
{
    (void)state;
    reset_counts();
    kc_conf_t *conf = base_conf();
    kc_error_t err;
    assert_int_equal(kc_conf_set_oauthbearer_token_cb(conf, token_cb, NULL, &err), KC_OK);
    kc_consumer_t *c = start(conf);
    assert_int_equal(atomic_load(&cb_calls), 1); /* the first token, in kc_consumer_new */
    kc_test_assign_all(c, topic, NP, KC_OFFSET_BEGINNING);
    wait_total(RECS, "OAUTHBEARER, token callback");
    assert_int_equal(atomic_load(&cb_off_thread), 0);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

static void oidc_consume(void **state)
{
    (void)state;
    reset_counts();
    kc_conf_t *conf = oidc_conf(NULL, NULL); /* no scope: the request has none */
    char group[80];
    snprintf(group, sizeof group, "%s-oidc", topic);
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "enable.auto.commit", "false");
    kc_consumer_t *c = start(conf);
    kc_test_assign_all(c, topic, NP, KC_OFFSET_BEGINNING);
    wait_total(RECS, "OAUTHBEARER, OIDC");
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
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

/* Group members: the group coordinator's connections (a classic member's own, KIP-848's
 * through the engine) log in with the token too. */
static void oidc_group(const char *protocol)
{
    reset_counts();
    kc_conf_t *conf = oidc_conf(NULL, NULL);
    char group[80];
    snprintf(group, sizeof group, "%s-g-%s", topic, protocol);
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "group.protocol", protocol);
    kc_test_conf_set(conf, "auto.offset.reset", "earliest");
    kc_consumer_t *c = start(conf);
    const char *sub[] = {topic};
    kc_error_t err;
    if (kc_subscribe(c, sub, 1, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
    char what[64];
    snprintf(what, sizeof what, "OIDC, group.protocol=%s", protocol);
    wait_total(RECS, what);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static void oidc_group_classic(void **state)
{
    (void)state;
    oidc_group("classic");
}

static void oidc_group_consumer(void **state)
{
    (void)state;
    oidc_group("consumer");
}

static void oidc_expiry_reauth(void **state)
{
    (void)state;
    reset_counts();
    /* 15 s tokens: the broker's session lifetime is what is left of the token, so without a
     * refreshed token and a re-authentication it closes the connection after 15 s. */
    kc_conf_t *conf = oidc_conf(NULL, "kafka lifetime:15");
    if (getenv("KC_OAUTH_TEST_DEBUG"))
        kc_test_conf_set(conf, "log.level", "debug");
    kc_consumer_t *c = start(conf);
    kc_test_assign_all(c, topic, NP, KC_OFFSET_BEGINNING);
    wait_total(RECS, "OIDC 15 s tokens, first batch");
    sleep(18);
    kc_test_cluster("produce %s --records %d --size 100", topic, RECS);
    wait_total(2 * RECS, "OIDC 15 s tokens, second batch after an expiry");
    sleep(20); /* at least two more refreshes */
    int64_t most = 0;
    int64_t connects = broker_stat("connects", &most), reauths = broker_stat("reauths", NULL);
    printf("# 40+ s of 15 s tokens: brokers' connects %lld (at most %lld to one broker), reauths "
           "%lld\n",
           (long long)connects, (long long)most, (long long)reauths);
    assert_int_equal(atomic_load(&tally.total), 2 * RECS);
    assert_int_equal(atomic_load(&tally.dups), 0);
    assert_int_equal(kc_tally_errors_of(&tally, KC_ERR_AUTH), 0);
    assert_int_equal(most, 1); /* each broker: one connection, never reopened */
    assert_true(reauths >= 2);
    kc_error_t err;
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

static void idp_outage(void **state)
{
    (void)state;
    reset_counts();
    atomic_store(&idp_down, 0);
    kc_conf_t *conf = base_conf();
    kc_error_t err;
    assert_int_equal(
        kc_conf_set_oauthbearer_token_cb(conf, token_cb, (void *)"kafka%20lifetime:15", &err),
        KC_OK);
    /* a topic of its own: the other cases add records to the shared one */
    char own[80];
    snprintf(own, sizeof own, "%s-idp", topic);
    kc_test_cluster("topic create %s --partitions %d", own, NP);
    kc_test_cluster("produce %s --records %d --size 100", own, RECS);
    kc_consumer_t *c = start(conf);
    kc_test_assign_all(c, own, NP, KC_OFFSET_BEGINNING);
    kc_tally_expect(&tally, RECS, 60000, "first batch, before the outage");
    atomic_store(&idp_down, 1);
    /* The token runs out; its broker session ends, and the next login has no valid token. */
    int64_t end = kc_test_now_ms() + 60000 * kc_test_time_scale();
    while (kc_tally_errors_of(&tally, KC_ERR_AUTH) == 0 && kc_test_now_ms() < end)
        kc_test_sleep_ms(200);
    long refused = (long)kc_tally_errors_of(&tally, KC_ERR_AUTH);
    printf("# outage: %ld KC_ERR_AUTH event(s) once the token expired\n", refused);
    assert_true(refused >= 1);
    kc_test_cluster("produce %s --records %d --size 100", own, RECS);
    atomic_store(&idp_down, 0); /* the refresher, retrying, gets a token now */
    kc_tally_expect(&tally, 2 * RECS, 60000, "second batch, after the outage");
    assert_int_equal(atomic_load(&tally.dups), 0);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

static void oidc_wrong_secret(void **state)
{
    (void)state;
    const char *wrong = "kc-leak-probe-oidc-secret-5c2d";
    kc_conf_t *conf = oidc_conf(wrong, NULL);
    kc_callbacks_t cbs = {
        .on_records = kc_tally_on_records, .on_event = kc_tally_on_event, .opaque = &tally};
    kc_consumer_t *c = NULL;
    kc_error_t err;
    kc_err_t rc = kc_consumer_new(conf, &cbs, &c, &err);
    printf("# wrong client secret: %s (%s)\n", kc_err_name(rc), err.msg);
    assert_int_equal(rc, KC_ERR_AUTH);
    assert_null(c);
    assert_non_null(strstr(err.msg, "OAUTHBEARER"));
    assert_non_null(strstr(err.msg, kc_test_env("KC_OIDC_TOKEN_URL")));
    assert_null(strstr(err.msg, wrong));
    assert_null(strstr(err.msg, kc_test_env("KC_OIDC_CLIENT_SECRET")));
    kc_conf_destroy(conf); /* not taken on failure */
}

static void failing_cb(void *opaque, kc_oauthbearer_req_t *req)
{
    (void)opaque;
    kc_oauthbearer_set_token_failure(req, "identity provider unreachable (test)");
}

static void callback_failure(void **state)
{
    (void)state;
    kc_conf_t *conf = base_conf();
    kc_error_t err;
    assert_int_equal(kc_conf_set_oauthbearer_token_cb(conf, failing_cb, NULL, &err), KC_OK);
    kc_callbacks_t cbs = {
        .on_records = kc_tally_on_records, .on_event = kc_tally_on_event, .opaque = &tally};
    kc_consumer_t *c = NULL;
    kc_err_t rc = kc_consumer_new(conf, &cbs, &c, &err);
    printf("# failing callback: %s (%s)\n", kc_err_name(rc), err.msg);
    assert_int_equal(rc, KC_ERR_AUTH);
    assert_non_null(strstr(err.msg, "identity provider unreachable (test)"));
    kc_conf_destroy(conf);
}

int main(void)
{
    if (!getenv("KC_OAUTHBEARER_BOOTSTRAP") || !*getenv("KC_OAUTHBEARER_BOOTSTRAP")) {
        printf("skipped: KC_OAUTHBEARER_BOOTSTRAP is not set (the cluster has no oauthbearer "
               "listener: tests/testkit/cluster up --listeners ...,oauthbearer)\n");
        return 77;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(callback_consume),   cmocka_unit_test(oidc_consume),
        cmocka_unit_test(oidc_wrong_secret),  cmocka_unit_test(callback_failure),
        cmocka_unit_test(oidc_group_classic), cmocka_unit_test(oidc_group_consumer),
        cmocka_unit_test(oidc_expiry_reauth), cmocka_unit_test(idp_outage),
    };
    kc_test_filter();
    return cmocka_run_group_tests(tests, setup, NULL);
}
