/* kc-test-label: threads */
/* security.protocol through the public consumer (io/conn_security.c): every connection the
 * consumer opens — bootstrap, brokers, the offsets coordinator, a group's coordinator — speaks
 * TLS (SSL listener) or TLS + SCRAM (SASL_SSL listener) as configured.
 *  - ssl_assign: manual assignment over SSL, every record exactly once, commit + committed (the
 *    coordinator connection is TLS too);
 *  - sasl_group_consumer / sasl_group_classic: a KIP-848 and a classic member over SASL_SSL with
 *    SCRAM-SHA-512 read everything and commit under their identity;
 *  - sasl_wrong_password: the login is refused, the error callback gets KC_ERR_AUTH naming the
 *    mechanism (never the password), nothing is delivered, and close returns in bounded time.
 * Needs KC_SSL_BOOTSTRAP, KC_SASL_SSL_BOOTSTRAP, KC_CA_FILE, KC_SCRAM_USER, KC_SCRAM_PASSWORD,
 * KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"
#include "tally.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   3
#define RECS 900

static char topic[64];
static kc_tally_t tally;

static int setup(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-secure-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 3", topic, NP);
    kc_test_cluster("produce %s --records %d --size 100", topic, RECS);
    return 0;
}

static kc_conf_t *base_conf(int sasl, const char *password)
{
    kc_conf_t *c = kc_conf_new();
    kc_test_conf_set(c, "bootstrap.servers",
                     kc_test_env(sasl ? "KC_SASL_SSL_BOOTSTRAP" : "KC_SSL_BOOTSTRAP"));
    kc_test_conf_set(c, "security.protocol", sasl ? "SASL_SSL" : "SSL");
    kc_test_conf_set(c, "ssl.ca.location", kc_test_env("KC_CA_FILE"));
    if (sasl) {
        kc_test_conf_set(c, "sasl.mechanism", "SCRAM-SHA-512");
        kc_test_conf_set(c, "sasl.username", kc_test_env("KC_SCRAM_USER"));
        kc_test_conf_set(c, "sasl.password",
                         password ? password : kc_test_env("KC_SCRAM_PASSWORD"));
    }
    kc_test_conf_set(c, "worker.threads", "2");
    return c;
}

static kc_consumer_t *start(kc_conf_t *conf)
{
    kc_tally_reset(&tally);
    kc_callbacks_t cbs = {
        .on_records = kc_tally_on_records, .on_event = kc_tally_on_event, .opaque = &tally};
    return kc_test_consumer(conf, &cbs);
}

static void wait_all(const char *what)
{
    kc_tally_expect(&tally, RECS, 60000, what);
    assert_int_equal(kc_tally_errors_of(&tally, KC_ERR_AUTH), 0);
}

static void ssl_assign(void **state)
{
    (void)state;
    kc_conf_t *conf = base_conf(0, NULL);
    char group[80];
    snprintf(group, sizeof group, "%s-ssl", topic);
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "enable.auto.commit", "false");
    kc_consumer_t *c = start(conf);
    kc_test_assign_all(c, topic, NP, KC_OFFSET_BEGINNING);
    wait_all("SSL, manual assignment");
    kc_test_commit_check(c, topic, NP, RECS);
    kc_error_t err;
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

static void sasl_group(const char *protocol)
{
    kc_conf_t *conf = base_conf(1, NULL);
    char group[80];
    snprintf(group, sizeof group, "%s-sasl-%s", topic, protocol);
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "group.protocol", protocol);
    kc_test_conf_set(conf, "auto.offset.reset", "earliest");
    kc_test_conf_set(conf, "enable.auto.commit", "false");
    kc_consumer_t *c = start(conf);
    const char *sub[] = {topic};
    kc_error_t err;
    if (kc_subscribe(c, sub, 1, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
    char what[64];
    snprintf(what, sizeof what, "SASL_SSL SCRAM-SHA-512, group.protocol=%s", protocol);
    wait_all(what);
    kc_test_commit_check(c, topic, NP, RECS);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static void sasl_group_consumer(void **state)
{
    (void)state;
    sasl_group("consumer");
}

static void sasl_group_classic(void **state)
{
    (void)state;
    sasl_group("classic");
}

static void sasl_wrong_password(void **state)
{
    (void)state;
    const char *wrong = "kc-not-the-password-4711";
    kc_consumer_t *c = start(base_conf(1, wrong));
    kc_test_assign_all(c, topic, NP, KC_OFFSET_BEGINNING);
    for (int i = 0; i < 150 && kc_tally_errors_of(&tally, KC_ERR_AUTH) == 0; i++)
        kc_test_sleep_ms(100);
    char le[512];
    kc_tally_last_error(&tally, le, sizeof le);
    int64_t auth = kc_tally_errors_of(&tally, KC_ERR_AUTH);
    printf("# wrong password: %lld auth error(s): %s\n", (long long)auth, le);
    assert_true(auth > 0);
    assert_non_null(strstr(le, "SCRAM-SHA-512"));
    assert_null(strstr(le, wrong));
    assert_int_equal(atomic_load(&tally.total), 0);
    int64_t t0 = kc_test_now_ms();
    kc_error_t err;
    (void)kc_close(c, 3000, &err);
    kc_destroy(c);
    assert_true(kc_test_now_ms() - t0 < 10000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ssl_assign),
        cmocka_unit_test(sasl_group_consumer),
        cmocka_unit_test(sasl_group_classic),
        cmocka_unit_test(sasl_wrong_password),
    };
    kc_test_filter();
    return cmocka_run_group_tests(tests, setup, NULL);
}
