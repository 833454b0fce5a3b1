/* kc-test-label: threads */
/* kc_seek through the runtime, against the suite's cluster (one partition, ~600 records per
 * Kafka batch, so offsets 150 and 777 fall inside batches):
 *  1. read everything from the beginning;
 *  2. a backward seek from the app thread to 150 re-delivers from exactly 150 (the delivery
 *     floor is reset; nothing below 150 is delivered although its batch is fetched whole);
 *  3. a seek from inside on_records (at the first view reaching 1000) back to 777: the rest of
 *     that view is not delivered, the next view starts at exactly 777, and everything after is
 *     delivered once, in order.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR. */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define RECS 2000

static char topic[64];
static kc_consumer_t *cons;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t *log_off; /* every delivered offset, in delivery order */
static size_t n_log;
static _Atomic int phase; /* 3: seek to 777 from the callback once */
static _Atomic int in_cb_seeked;
static _Atomic int64_t seek_rc = 1;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        pthread_mutex_lock(&mu);
        log_off[n_log++] = off;
        pthread_mutex_unlock(&mu);
        if (atomic_load(&phase) == 3 && off >= 1000 && !atomic_exchange(&in_cb_seeked, 1)) {
            kc_error_t e;
            atomic_store(&seek_rc, kc_seek(cons, p->topic, p->partition, KC_SEEK_OFFSET, 777, &e));
            break; /* and anything after it in this view must not come */
        }
    }
    return KC_CB_CONTINUE;
}

static size_t logged(void)
{
    pthread_mutex_lock(&mu);
    size_t n = n_log;
    pthread_mutex_unlock(&mu);
    return n;
}

static void wait_for(size_t n)
{
    for (int i = 0; i < 600 && logged() < n; i++)
        usleep(50 * 1000);
    usleep(300 * 1000); /* and nothing more arrives */
}

/* log_off[from..to) must be exactly start, start+1, ..., RECS-1 */
static void expect_run(size_t from, int64_t start)
{
    pthread_mutex_lock(&mu);
    size_t n = n_log;
    pthread_mutex_unlock(&mu);
    printf("# from log[%zu]: first %lld, want %lld..%d (%zu delivered)\n", from,
           (long long)(from < n ? log_off[from] : -1), (long long)start, RECS - 1, n - from);
    assert_int_equal(n - from, (size_t)(RECS - start));
    for (size_t i = from; i < n; i++)
        assert_int_equal(log_off[i], start + (int64_t)(i - from));
}

static void seek_redelivers(void **state)
{
    (void)state;
    log_off = calloc(8 * RECS, sizeof *log_off);
    snprintf(topic, sizeof topic, "kc-seek-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 1 --replication 3", topic);
    kc_test_cluster("produce %s --records %d --size 100", topic, RECS);
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"), &err),
                     KC_OK);
    assert_int_equal(kc_conf_set(conf, "callback.batch.max.records", "100", &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records};
    if (kc_consumer_new(conf, &cbs, &cons, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    kc_topic_partition_t tp = {topic, 0, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(cons, &tp, 1, &err), KC_OK);
    wait_for(RECS);
    expect_run(0, 0);

    size_t mark = logged();
    assert_int_equal(kc_seek(cons, topic, 0, KC_SEEK_OFFSET, 150, &err), KC_OK);
    wait_for(mark + RECS - 150);
    expect_run(mark, 150);
    int64_t pos;
    assert_int_equal(kc_position(cons, topic, 0, &pos, &err), KC_OK);
    assert_int_equal(pos, RECS);

    mark = logged();
    atomic_store(&phase, 3);
    assert_int_equal(kc_seek(cons, topic, 0, KC_SEEK_OFFSET, 0, &err), KC_OK);
    wait_for(mark + 1001 + (RECS - 777));
    assert_int_equal(atomic_load(&seek_rc), KC_OK);
    /* 0..1000 (the seek happened at the record 1000, which was delivered), then 777..end */
    pthread_mutex_lock(&mu);
    size_t n = n_log;
    pthread_mutex_unlock(&mu);
    size_t k = mark;
    for (int64_t o = 0; o <= 1000; o++, k++)
        assert_int_equal(log_off[k], o);
    printf("# in-callback seek: after 1000 came %lld\n", (long long)(k < n ? log_off[k] : -1));
    expect_run(k, 777);

    assert_int_equal(kc_close(cons, 5000, &err), KC_OK);
    kc_destroy(cons);
    free(log_off);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(seek_redelivers)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
