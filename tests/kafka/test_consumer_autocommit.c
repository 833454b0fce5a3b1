/* kc-test-label: threads */
/* Auto-commit and kc_commit_async against the suite's cluster (manual assignment, group.id set,
 * anonymous commits):
 *  1. enable.auto.commit with auto.commit.interval.ms=200 commits, while the consumer runs (no
 *     close yet), exactly the committable offsets: partition 1 is read to its end, partition 0's
 *     callback returns KC_CB_STOP at the first view starting at or after 100 (views end at
 *     batch boundaries too, so that is 100..149), and its committed offset is exactly that start,
 *     never beyond what a callback finished;
 *  2. kc_commit_async (explicit offsets, then the committable ones) calls back once per call, on
 *     a kconsume worker (not the app's thread), with KC_OK; the second's offsets read back.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR. */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define RECS 1000

static _Atomic int64_t total;
static _Atomic int cb_calls, cb_rc = 1, cb_on_app;
static pthread_t app;
static _Atomic int stop_part = -1;      /* the partition whose callback stops at 100 */
static _Atomic int64_t stopped_at = -1; /* the first offset of the view it stopped at */

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    if (p->partition == atomic_load(&stop_part) && kc_records_first_offset(b) >= 100) {
        /* views are cut at batch boundaries too: the first view at or past 100 may start at
         * 130 if a producer batch ended at 80 — that start is where commits must stop */
        int64_t none = -1;
        atomic_compare_exchange_strong(&stopped_at, &none, kc_records_first_offset(b));
        return KC_CB_STOP;
    }
    while (kc_records_next(b))
        atomic_fetch_add(&total, 1);
    return KC_CB_CONTINUE;
}

static void on_commit(void *opaque, kc_err_t rc, const kc_error_t *err)
{
    (void)opaque, (void)err;
    if (pthread_equal(pthread_self(), app))
        atomic_fetch_add(&cb_on_app, 1);
    atomic_store(&cb_rc, rc);
    atomic_fetch_add(&cb_calls, 1);
}

static void autocommit_and_async(void **state)
{
    (void)state;
    app = pthread_self();
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "kc-autocommit-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-autocommit-g-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 2 --replication 3", topic);
    kc_test_cluster("produce %s --records %d --size 100", topic, RECS);
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"), &err),
                     KC_OK);
    assert_int_equal(kc_conf_set(conf, "group.id", group, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "enable.auto.commit", "true", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "auto.commit.interval.ms", "200", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "callback.batch.max.records", "50", &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    /* The producer spreads records unevenly (sticky batches): the partition with more records
     * (>= 500 of the 1000) is the one that stops at 100; the other is read to its end. */
    int64_t hi[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(kc_query_watermarks(c, topic, i, NULL, &hi[i], 10000, &err), KC_OK);
    int sp = hi[0] >= hi[1] ? 0 : 1, op = 1 - sp;
    atomic_store(&stop_part, sp);
    int64_t hi1 = hi[op] > 0 ? hi[op] : KC_OFFSET_INVALID; /* nothing to commit when empty */
    assert_true(hi[sp] > 150);
    kc_topic_partition_t tps[2] = {{topic, 0, KC_OFFSET_BEGINNING},
                                   {topic, 1, KC_OFFSET_BEGINNING}};
    assert_int_equal(kc_assign(c, tps, 2, &err), KC_OK);
    kc_topic_partition_t got[2] = {{topic, 0, 0}, {topic, 1, 0}};
    int ok = 0;
    for (int i = 0; i < 100 && !ok; i++) {
        usleep(100 * 1000);
        if (kc_committed(c, got, 2, 10000, &err) != KC_OK)
            fail_msg("kc_committed: %s", err.msg);
        ok = atomic_load(&stopped_at) >= 100 && got[sp].offset == atomic_load(&stopped_at) &&
             got[op].offset == hi1;
    }
    int64_t stop = atomic_load(&stopped_at);
    printf("# auto-committed while running: p%d %lld (stopped at the view starting %lld), p%d "
           "%lld (end %lld)\n",
           sp, (long long)got[sp].offset, (long long)stop, op, (long long)got[op].offset,
           (long long)hi1);
    assert_true(stop >= 100 && stop < 150); /* views are at most 50 records */
    assert_int_equal(got[sp].offset, stop);
    assert_int_equal(got[op].offset, hi1);
    usleep(500 * 1000); /* more ticks: still never beyond */
    assert_int_equal(kc_committed(c, got, 2, 10000, &err), KC_OK);
    assert_int_equal(got[sp].offset, stop);

    /* async, explicit offset (not read back: the next auto-commit tick puts p1's end back) */
    kc_topic_partition_t one = {topic, op, 7};
    assert_int_equal(kc_commit_async(c, &one, 1, on_commit, NULL, &err), KC_OK);
    for (int i = 0; i < 100 && atomic_load(&cb_calls) == 0; i++)
        usleep(50 * 1000);
    assert_int_equal(atomic_load(&cb_calls), 1);
    assert_int_equal(atomic_load(&cb_rc), KC_OK);
    assert_int_equal(atomic_load(&cb_on_app), 0);
    /* no-argument async commit: the committable offsets again (p1 back at its end) */
    assert_int_equal(kc_commit_async(c, NULL, 0, on_commit, NULL, &err), KC_OK);
    for (int i = 0; i < 100 && atomic_load(&cb_calls) < 2; i++)
        usleep(50 * 1000);
    assert_int_equal(atomic_load(&cb_calls), 2);
    assert_int_equal(atomic_load(&cb_rc), KC_OK);
    assert_int_equal(kc_committed(c, got, 2, 10000, &err), KC_OK);
    assert_int_equal(got[op].offset, hi1 == KC_OFFSET_INVALID ? 7 : hi1);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(autocommit_and_async)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
