/* kc-test-label: threads */
/* Pull mode against the suite's cluster: no on_records, so kc_poll hands batch views to the
 * app's threads. Two app threads poll a 4-partition topic to the end: every offset of every
 * partition exactly once and in order per partition (views of one partition never overlap: the
 * next one comes only after kc_records_release); one KC_CB_RETRY release redelivers the same
 * records; kc_position follows releases (the committable offset advances on release). kc_close
 * while a poller waits returns it KC_ERR_CLOSED. Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR. */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   4
#define RECS 4000

static kc_consumer_t *cons;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t next_off[NP];
static _Atomic int holding[NP];
static _Atomic int64_t total, disorder, overlap, views;
static _Atomic int retried, retry_first = -1, retry_part = -1, redelivered, stop;
static _Atomic int closed_seen;

static void *poller(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        kc_records_t *b;
        kc_error_t err;
        kc_err_t rc = kc_poll(cons, 100, &b, &err);
        if (rc == KC_ERR_CLOSED) {
            atomic_store(&closed_seen, 1);
            break;
        }
        if (rc != KC_OK || !b)
            continue;
        const kc_part_t *p = kc_records_partition(b);
        int pi = p->partition;
        if (atomic_exchange(&holding[pi], 1))
            atomic_fetch_add(&overlap, 1);
        atomic_fetch_add(&views, 1);
        int64_t first = kc_records_first_offset(b);
        /* the first view not at a partition's start (the producer spreads records unevenly, so
         * no particular partition is sure to have one) */
        if (first > 0 && !atomic_exchange(&retried, 1)) {
            /* not processed: the same records must come again */
            atomic_store(&retry_first, (int)first);
            atomic_store(&retry_part, pi);
            atomic_store(&holding[pi], 0);
            kc_records_release(cons, b, KC_CB_RETRY);
            continue;
        }
        if (pi == atomic_load(&retry_part) && first == atomic_load(&retry_first))
            atomic_store(&redelivered, 1);
        const kc_record_t *r;
        pthread_mutex_lock(&mu);
        while ((r = kc_records_next(b))) {
            if (kc_record_offset(r) != next_off[pi])
                atomic_fetch_add(&disorder, 1);
            next_off[pi] = kc_record_offset(r) + 1;
            atomic_fetch_add(&total, 1);
        }
        pthread_mutex_unlock(&mu);
        atomic_store(&holding[pi], 0);
        kc_records_release(cons, b, KC_CB_CONTINUE);
    }
    return NULL;
}

static void poll_to_end(void **state)
{
    (void)state;
    char topic[64];
    snprintf(topic, sizeof topic, "kc-poll-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 3", topic, NP);
    kc_test_cluster("produce %s --records %d --size 100", topic, RECS);
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"), &err),
                     KC_OK);
    assert_int_equal(kc_conf_set(conf, "worker.threads", "3", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "callback.batch.max.records", "64", &err), KC_OK);
    if (kc_consumer_new(conf, NULL, &cons, &err) != KC_OK)
        fail_msg("kc_consumer_new (pull): %s", err.msg);
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){topic, i, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(cons, tps, NP, &err), KC_OK);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, poller, NULL);
    for (int i = 0; i < 600 && atomic_load(&total) < RECS; i++)
        usleep(100 * 1000);
    usleep(300 * 1000);
    printf("# pulled %lld of %d in %lld views; disorder %lld, overlap %lld, retry at %d "
           "redelivered %d\n",
           (long long)atomic_load(&total), RECS, (long long)atomic_load(&views),
           (long long)atomic_load(&disorder), (long long)atomic_load(&overlap),
           atomic_load(&retry_first), atomic_load(&redelivered));
    assert_int_equal(atomic_load(&total), RECS);
    assert_int_equal(atomic_load(&disorder), 0);
    assert_int_equal(atomic_load(&overlap), 0);
    assert_int_equal(atomic_load(&redelivered), 1);
    for (int i = 0; i < NP; i++) {
        int64_t pos;
        assert_int_equal(kc_position(cons, topic, i, &pos, &err), KC_OK);
        pthread_mutex_lock(&mu);
        assert_int_equal(pos, next_off[i] ? next_off[i] : KC_OFFSET_INVALID);
        pthread_mutex_unlock(&mu);
    }
    assert_int_equal(kc_close(cons, 5000, &err), KC_OK); /* the pollers are still polling */
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&closed_seen), 1);
    kc_destroy(cons);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(poll_to_end)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
