/* kc-test-label: threads */
/* Against the suite's cluster: commits with one result per partition (kc_commit_results,
 * kc_commit_async_results).
 *  1. Manual assignment with group.id, after consuming every record of 3 partitions:
 *     - tps NULL: one result per partition, each the partition's end and committed (kc_committed
 *       reads the same back);
 *     - a commit where one partition's metadata is too large: that one refused with
 *       OFFSET_METADATA_TOO_LARGE (12), the other committed, with its metadata; 30 refused: every
 *       result says so, and the message names what fits and how many more;
 *     - the async form with metadata: the callback, on a worker, gets the result, and the
 *       metadata reads back; with tps NULL, every partition;
 *     - misuse refused before anything is sent.
 *  2. A group member under each protocol: tps NULL names exactly the partitions it holds, at
 *     their ends.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define NP      3
#define RECORDS 300

static _Atomic long delivered;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    while (kc_records_next(b))
        atomic_fetch_add(&delivered, 1);
    return KC_CB_CONTINUE;
}

static kc_consumer_t *consumer(const char *group, const char *protocol)
{
    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"));
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "group.protocol", protocol);
    kc_test_conf_set_all(
        conf, "enable.auto.commit=false;auto.offset.reset=earliest;fetch.max.wait.ms=100");
    kc_callbacks_t cbs = {.on_records = on_records};
    return kc_test_consumer(conf, &cbs);
}

static void wait_delivered(long want)
{
    int64_t end = kc_test_now_ms() + 30000 * kc_test_time_scale();
    while (atomic_load(&delivered) < want && kc_test_now_ms() < end)
        kc_test_sleep_ms(20);
    assert_int_equal(atomic_load(&delivered), want);
}

static int64_t high_of(kc_consumer_t *c, const char *topic, int32_t p)
{
    int64_t lo, hi;
    kc_error_t err;
    if (kc_query_watermarks(c, topic, p, &lo, &hi, 15000, &err) != KC_OK)
        fail_msg("kc_query_watermarks: %s", err.msg);
    return hi;
}

/* The async callback's view, copied for the test thread. */
typedef struct seen {
    pthread_mutex_t mu;
    int calls, on_worker;
    kc_err_t rc;
    size_t n;
    kc_commit_result_t r[NP];
    char topic[NP][64];
} seen_t;

static void on_results(void *opaque, kc_err_t rc, const kc_error_t *err,
                       const kc_commit_result_t *res, size_t n)
{
    (void)err;
    seen_t *s = opaque;
    pthread_mutex_lock(&s->mu);
    s->calls++;
    s->on_worker += kc_worker_id() >= 0;
    s->rc = rc;
    s->n = n;
    for (size_t i = 0; i < n && i < NP; i++) {
        s->r[i] = res[i];
        snprintf(s->topic[i], sizeof s->topic[i], "%s", res[i].topic);
        s->r[i].topic = s->topic[i];
    }
    pthread_mutex_unlock(&s->mu);
}

static void wait_call(seen_t *s, int calls)
{
    int64_t end = kc_test_now_ms() + 20000 * kc_test_time_scale();
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int n = s->calls;
        pthread_mutex_unlock(&s->mu);
        if (n >= calls || kc_test_now_ms() > end)
            break;
        kc_test_sleep_ms(20);
    }
    pthread_mutex_lock(&s->mu);
    assert_int_equal(s->calls, calls);
    pthread_mutex_unlock(&s->mu);
}

/* Every result: one per partition of `topic`, at its end, committed. */
static void expect_all_at_end(kc_consumer_t *c, const char *topic, const kc_commit_result_t *r,
                              size_t n, size_t want)
{
    assert_int_equal(n, want);
    unsigned seen = 0;
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(r[i].topic, topic);
        assert_int_equal(r[i].code, KC_OK);
        assert_int_equal(r[i].kafka_code, 0);
        assert_int_equal(r[i].offset, high_of(c, topic, r[i].partition));
        seen |= 1u << r[i].partition;
    }
    assert_int_equal(__builtin_popcount(seen), want);
}

static void manual_results(void **state)
{
    (void)state;
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "cres-manual-%d", (int)getpid());
    snprintf(group, sizeof group, "cres-manual-g-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d", topic, NP);
    kc_test_cluster("produce %s --records %d --size 20 --keys 64", topic, RECORDS);
    atomic_store(&delivered, 0);
    kc_consumer_t *c = consumer(group, "classic");
    kc_error_t err;
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){topic, i, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, tps, NP, &err), KC_OK);
    wait_delivered(RECORDS);

    /* tps NULL: what was committed, per partition */
    kc_commit_result_t *r = NULL;
    size_t n = 0;
    if (kc_commit_results(c, NULL, 0, 15000, &r, &n, &err) != KC_OK)
        fail_msg("kc_commit_results: %s", err.msg);
    expect_all_at_end(c, topic, r, n, NP);
    for (size_t i = 0; i < n; i++) { /* every string lies in the one block */
        assert_true((const char *)r[i].topic > (const char *)r);
        kc_topic_partition_t q = {topic, r[i].partition, 0};
        assert_int_equal(kc_committed(c, &q, 1, 15000, &err), KC_OK);
        assert_int_equal(q.offset, r[i].offset);
    }
    free(r);

    /* one refused, one committed */
    char *huge = malloc(5001);
    memset(huge, 'm', 5000);
    huge[5000] = '\0';
    const kc_offset_meta_t mixed[] = {{topic, 0, 1, huge}, {topic, 1, 2, "kept"}};
    assert_int_equal(kc_commit_results(c, mixed, 2, 15000, &r, &n, &err), KC_ERR_BROKER);
    free(huge);
    assert_int_equal(n, 2);
    assert_int_equal(r[0].partition, 0);
    assert_int_equal(r[0].code, KC_ERR_BROKER);
    assert_int_equal(r[0].kafka_code, 12); /* OFFSET_METADATA_TOO_LARGE */
    assert_int_equal(r[0].offset, 1);
    assert_int_equal(r[1].partition, 1);
    assert_int_equal(r[1].code, KC_OK);
    assert_int_equal(r[1].offset, 2);
    free(r);
    kc_offset_meta_t q[] = {{topic, 0, 0, NULL}, {topic, 1, 0, NULL}};
    char *block;
    assert_int_equal(kc_committed_metadata(c, q, 2, 15000, &block, &err), KC_OK);
    assert_int_equal(q[0].offset, high_of(c, topic, 0)); /* unchanged */
    assert_int_equal(q[1].offset, 2);
    assert_string_equal(q[1].metadata, "kept");
    free(block);

    /* many refused: the message names what fits and says how many more; the results have all */
    char wide[64];
    snprintf(wide, sizeof wide, "cres-wide-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 30", wide);
    kc_offset_meta_t many[30];
    char *big = malloc(5001);
    memset(big, 'b', 5000);
    big[5000] = '\0';
    for (int i = 0; i < 30; i++)
        many[i] = (kc_offset_meta_t){wide, i, 1, big};
    assert_int_equal(kc_commit_results(c, many, 30, 15000, &r, &n, &err), KC_ERR_BROKER);
    free(big);
    assert_int_equal(n, 30);
    for (size_t i = 0; i < n; i++)
        assert_true(r[i].code == KC_ERR_BROKER && r[i].kafka_code == 12);
    free(r);
    printf("# %s\n", err.msg);
    assert_non_null(strstr(err.msg, "refused for 30 partition(s)"));
    assert_non_null(strstr(err.msg, " more (each: kc_commit_results)"));

    /* async, with metadata; then tps NULL */
    seen_t s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    const kc_offset_meta_t one[] = {{topic, 2, 7, "async-meta"}};
    assert_int_equal(kc_commit_async_results(c, one, 1, on_results, &s, &err), KC_OK);
    wait_call(&s, 1);
    pthread_mutex_lock(&s.mu);
    assert_int_equal(s.rc, KC_OK);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.r[0].partition, 2);
    assert_int_equal(s.r[0].offset, 7);
    assert_int_equal(s.r[0].code, KC_OK);
    assert_int_equal(s.on_worker, 1);
    pthread_mutex_unlock(&s.mu);
    kc_offset_meta_t q2[] = {{topic, 2, 0, NULL}};
    assert_int_equal(kc_committed_metadata(c, q2, 1, 15000, &block, &err), KC_OK);
    assert_int_equal(q2[0].offset, 7);
    assert_string_equal(q2[0].metadata, "async-meta");
    free(block);
    assert_int_equal(kc_commit_async_results(c, NULL, 0, on_results, &s, &err), KC_OK);
    wait_call(&s, 2);
    pthread_mutex_lock(&s.mu);
    assert_int_equal(s.rc, KC_OK);
    expect_all_at_end(c, topic, s.r, s.n, NP);
    pthread_mutex_unlock(&s.mu);

    /* misuse */
    assert_int_equal(kc_commit_results(c, NULL, 0, 1000, NULL, &n, &err), KC_ERR_INVALID_ARG);
    assert_int_equal(kc_commit_results(c, NULL, 2, 1000, &r, &n, &err), KC_ERR_INVALID_ARG);
    assert_null(r);
    assert_int_equal(n, 0);
    kc_offset_meta_t noname[] = {{NULL, 0, 0, NULL}};
    assert_int_equal(kc_commit_results(c, noname, 1, 1000, &r, &n, &err), KC_ERR_INVALID_ARG);
    assert_int_equal(kc_commit_async_results(c, NULL, 1, on_results, &s, &err), KC_ERR_INVALID_ARG);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static void member_results(const char *protocol)
{
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "cres-%s-%d", protocol, (int)getpid());
    snprintf(group, sizeof group, "cres-%s-g-%d", protocol, (int)getpid());
    kc_test_cluster("topic create %s --partitions %d", topic, NP);
    kc_test_cluster("produce %s --records %d --size 20 --keys 64", topic, RECORDS);
    atomic_store(&delivered, 0);
    kc_consumer_t *c = consumer(group, protocol);
    kc_error_t err;
    const char *topics[] = {topic};
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    wait_delivered(RECORDS);
    kc_commit_result_t *r = NULL;
    size_t n = 0;
    kc_err_t rc = KC_ERR_AGAIN;
    /* a classic member's first commit may meet the end of its rebalance: asked again */
    for (int i = 0; i < 50 && rc != KC_OK; i++) {
        free(r);
        rc = kc_commit_results(c, NULL, 0, 15000, &r, &n, &err);
        if (rc != KC_OK)
            kc_test_sleep_ms(200);
    }
    if (rc != KC_OK)
        fail_msg("%s: kc_commit_results: %s", protocol, err.msg);
    expect_all_at_end(c, topic, r, n, NP);
    free(r);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static void member_classic(void **state)
{
    (void)state;
    member_results("classic");
}

static void member_848(void **state)
{
    (void)state;
    member_results("consumer");
}

int main(void)
{
    if (getenv("KC_TEST_FILTER")) /* one case by name */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(manual_results),
        cmocka_unit_test(member_classic),
        cmocka_unit_test(member_848),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
