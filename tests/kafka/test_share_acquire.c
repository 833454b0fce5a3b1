/* share.acquire.mode against a real share-enabled broker (Kafka 4.2; its record lock is 10 s:
 * tests/testkit/cluster --share):
 * - record_limit_leaves_records_to_others: a 1-partition topic of 40 records, written before
 *   anyone reads (a batch or a few). Member A (record_limit, callback.batch.max.records=1, two
 *   workers) stalls its first callback. While it stalls, member B (the default mode) gets every
 *   other record: A holds one record awaiting its verdict and asks for no more although a worker
 *   is free, and the broker acquired for it only that one record of its batch. Then A's callback
 *   returns; no record is delivered twice. With batch_optimized, A's first ShareFetch acquires
 *   whole batches (the broker rounds up to them) and A fetches on while its callback stalls, so
 *   B gets what is left of them only after A's verdicts: KC_TEST_ACQUIRE_MODE=batch_optimized
 *   runs A so, and the case fails (measured: A had 21 records, B none).
 * Needs KC_SHARE_BOOTSTRAP, KC_SHARE_CLUSTER_DIR and KC_TESTKIT (tests/run-suite sets them).
 * kc-test-label: share */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "share_driver.h"

#define RECORDS 40

typedef struct tally {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int deliveries[RECORDS];
    int by[2];    /* records delivered to A, to B */
    int distinct; /* records delivered at least once */
    int bad;
    bool stalled, go; /* A's first callback: holding; may return */
} tally_t;

typedef struct member {
    tally_t *t;
    int id; /* 0: A, 1: B */
} member_t;

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    member_t *m = opaque;
    tally_t *t = m->t;
    const kc_record_t *r;
    pthread_mutex_lock(&t->mu);
    while ((r = kc_records_next(b))) {
        int64_t i = kc_test_record_index(r);
        if (i < 0 || i >= RECORDS) {
            t->bad++;
            continue;
        }
        if (!t->deliveries[i]++)
            t->distinct++;
        t->by[m->id]++;
    }
    if (m->id == 0 && !t->stalled) {
        t->stalled = true;
        pthread_cond_broadcast(&t->cv);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 9; /* inside the broker's 10 s lock */
        while (!t->go && pthread_cond_timedwait(&t->cv, &t->mu, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&t->mu);
    return KC_CB_CONTINUE;
}

static kc_consumer_t *member(member_t *m, const char *group, const char *more)
{
    kc_callbacks_t cbs = {.on_records = on_records, .opaque = m};
    return kc_sd_consumer(group, more, &cbs);
}

static void record_limit_leaves_records_to_others(void **state)
{
    (void)state;
    char group[64];
    snprintf(group, sizeof group, "kc-share-acq-g-%d", (int)getpid());
    kc_sd_setup("kc-share-acq", 1, group);
    kc_sd_produce(RECORDS);
    tally_t *t = calloc(1, sizeof *t);
    assert_non_null(t);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    member_t ma = {t, 0}, mb = {t, 1};
    const char *mode = getenv("KC_TEST_ACQUIRE_MODE"); /* batch_optimized shows the difference */
    char more[128];
    snprintf(more, sizeof more,
             "share.acquire.mode=%s;callback.batch.max.records=1;worker.threads=2",
             mode ? mode : "record_limit");
    kc_consumer_t *a = member(&ma, group, more);
    pthread_mutex_lock(&t->mu);
    for (int64_t end = kc_test_now_ms() + 30000; !t->stalled && kc_test_now_ms() < end;) {
        pthread_mutex_unlock(&t->mu);
        kc_test_sleep_ms(50);
        pthread_mutex_lock(&t->mu);
    }
    bool stalled = t->stalled;
    pthread_mutex_unlock(&t->mu);
    assert_true(stalled);
    kc_consumer_t *b = member(&mb, group, "worker.threads=2");
    /* B gets the other 39 while A's callback holds its one record. */
    int by_a = 0, by_b = 0;
    for (int64_t end = kc_test_now_ms() + 8000; kc_test_now_ms() < end; kc_test_sleep_ms(50)) {
        pthread_mutex_lock(&t->mu);
        by_a = t->by[0];
        by_b = t->by[1];
        pthread_mutex_unlock(&t->mu);
        if (by_b >= RECORDS - 1)
            break;
    }
    pthread_mutex_lock(&t->mu);
    t->go = true;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    printf("# while A's first callback stalled: A had %d record(s), B %d of %d\n", by_a, by_b,
           RECORDS - 1);
    kc_test_sleep_ms(1000); /* a redelivery, if any, would show up meanwhile */
    kc_test_close(a);
    kc_test_close(b);
    int twice = 0;
    for (int i = 0; i < RECORDS; i++)
        twice += t->deliveries[i] > 1;
    printf("# in all: %d distinct, %d delivered twice\n", t->distinct, twice);
    assert_int_equal(t->bad, 0);
    assert_int_equal(by_a, 1);
    assert_int_equal(by_b, RECORDS - 1);
    assert_int_equal(t->distinct, RECORDS);
    assert_int_equal(twice, 0);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(record_limit_leaves_records_to_others),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
