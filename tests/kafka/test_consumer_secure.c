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
static _Atomic int64_t total, dups, auth_errors, other_errors;
static _Atomic int64_t next_off[NP];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char last_error[512]; /* under mu: written by on_event on a worker */

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        /* one worker at a time per partition: a plain compare-and-store is enough */
        if (off < atomic_load(&next_off[p->partition]))
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
    if (ev->error->code == KC_ERR_AUTH)
        atomic_fetch_add(&auth_errors, 1);
    else
        atomic_fetch_add(&other_errors, 1);
    pthread_mutex_lock(&mu);
    snprintf(last_error, sizeof last_error, "%s", ev->error->msg);
    pthread_mutex_unlock(&mu);
}

static void copy_last_error(char *out, size_t cap)
{
    pthread_mutex_lock(&mu);
    snprintf(out, cap, "%s", last_error);
    pthread_mutex_unlock(&mu);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

static int setup(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-secure-%d", (int)getpid());
    char cmd[256];
    snprintf(cmd, sizeof cmd, "topic create %s --partitions %d --replication 3", topic, NP);
    run(cmd);
    snprintf(cmd, sizeof cmd, "produce %s --records %d --size 100", topic, RECS);
    run(cmd);
    return 0;
}

static void reset_counts(void)
{
    atomic_store(&total, 0);
    atomic_store(&dups, 0);
    atomic_store(&auth_errors, 0);
    atomic_store(&other_errors, 0);
    for (int i = 0; i < NP; i++)
        atomic_store(&next_off[i], 0);
    pthread_mutex_lock(&mu);
    last_error[0] = 0;
    pthread_mutex_unlock(&mu);
}

static kc_conf_t *base_conf(int sasl, const char *password)
{
    kc_conf_t *c = kc_conf_new();
    set(c, "bootstrap.servers", kc_test_env(sasl ? "KC_SASL_SSL_BOOTSTRAP" : "KC_SSL_BOOTSTRAP"));
    set(c, "security.protocol", sasl ? "SASL_SSL" : "SSL");
    set(c, "ssl.ca.location", kc_test_env("KC_CA_FILE"));
    if (sasl) {
        set(c, "sasl.mechanism", "SCRAM-SHA-512");
        set(c, "sasl.username", kc_test_env("KC_SCRAM_USER"));
        set(c, "sasl.password", password ? password : kc_test_env("KC_SCRAM_PASSWORD"));
    }
    set(c, "worker.threads", "2");
    return c;
}

static kc_consumer_t *start(kc_conf_t *conf)
{
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c = NULL;
    kc_error_t err;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

static void wait_all(const char *what)
{
    for (int i = 0; i < 600 && atomic_load(&total) < RECS; i++)
        usleep(100 * 1000);
    usleep(300 * 1000);
    char le[512];
    copy_last_error(le, sizeof le);
    printf("# %s: delivered %lld of %d, dups %lld, errors %lld (%s)\n", what,
           (long long)atomic_load(&total), RECS, (long long)atomic_load(&dups),
           (long long)(atomic_load(&auth_errors) + atomic_load(&other_errors)), le);
    assert_int_equal(atomic_load(&total), RECS);
    assert_int_equal(atomic_load(&dups), 0);
    assert_int_equal(atomic_load(&auth_errors), 0);
}

/* kc_committed reads back what kc_commit(NULL) wrote: each partition at its end. */
static void commit_and_check(kc_consumer_t *c)
{
    kc_error_t err;
    if (kc_commit(c, NULL, 0, 30000, &err) != KC_OK)
        fail_msg("kc_commit: %s", err.msg);
    kc_topic_partition_t got[NP];
    for (int i = 0; i < NP; i++)
        got[i] = (kc_topic_partition_t){topic, i, 0};
    if (kc_committed(c, got, NP, 30000, &err) != KC_OK)
        fail_msg("kc_committed: %s", err.msg);
    int64_t sum = 0;
    for (int i = 0; i < NP; i++)
        sum += got[i].offset > 0 ? got[i].offset : 0;
    assert_int_equal(sum, RECS);
}

static void ssl_assign(void **state)
{
    (void)state;
    reset_counts();
    kc_conf_t *conf = base_conf(0, NULL);
    char group[80];
    snprintf(group, sizeof group, "%s-ssl", topic);
    set(conf, "group.id", group);
    set(conf, "enable.auto.commit", "false");
    kc_consumer_t *c = start(conf);
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){topic, i, KC_OFFSET_BEGINNING};
    kc_error_t err;
    assert_int_equal(kc_assign(c, tps, NP, &err), KC_OK);
    wait_all("SSL, manual assignment");
    commit_and_check(c);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

static void sasl_group(const char *protocol)
{
    reset_counts();
    kc_conf_t *conf = base_conf(1, NULL);
    char group[80];
    snprintf(group, sizeof group, "%s-sasl-%s", topic, protocol);
    set(conf, "group.id", group);
    set(conf, "group.protocol", protocol);
    set(conf, "auto.offset.reset", "earliest");
    set(conf, "enable.auto.commit", "false");
    kc_consumer_t *c = start(conf);
    const char *sub[] = {topic};
    kc_error_t err;
    if (kc_subscribe(c, sub, 1, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
    char what[64];
    snprintf(what, sizeof what, "SASL_SSL SCRAM-SHA-512, group.protocol=%s", protocol);
    wait_all(what);
    commit_and_check(c);
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
    reset_counts();
    const char *wrong = "kc-not-the-password-4711";
    kc_consumer_t *c = start(base_conf(1, wrong));
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){topic, i, KC_OFFSET_BEGINNING};
    kc_error_t err;
    assert_int_equal(kc_assign(c, tps, NP, &err), KC_OK);
    for (int i = 0; i < 150 && atomic_load(&auth_errors) == 0; i++)
        usleep(100 * 1000);
    char le[512];
    copy_last_error(le, sizeof le);
    printf("# wrong password: %lld auth error(s): %s\n", (long long)atomic_load(&auth_errors), le);
    assert_true(atomic_load(&auth_errors) > 0);
    assert_non_null(strstr(le, "SCRAM-SHA-512"));
    assert_null(strstr(le, wrong));
    assert_int_equal(atomic_load(&total), 0);
    int64_t t0 = now_ms();
    (void)kc_close(c, 3000, &err);
    kc_destroy(c);
    assert_true(now_ms() - t0 < 10000);
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
