/* kc-test-label: threads */
/* kc_seek from an app thread while a callback of the partition is held, end to end against
 * kc-memory-broker (started by the test, no cluster): topic K, one partition of RECS records in
 * batches of 100, views of 10. Three rounds: on_records is held at the first view reaching a
 * mark, the test seeks (backward 1000 -> 300, forward 2000 -> 3500, forward 3700 -> 3990) and
 * then lets the callback go. Asserted: the first callback that starts after kc_seek returned
 * (ordered after it: the test released the held callback after the return) begins exactly at
 * the target, no callback contains a record from before the seek, every view is contiguous with
 * the one before, never two callbacks at once, and delivery reaches the end.
 * (The window between two callbacks in which the old code let a stale view through is covered
 * deterministically by tests/unit/test_seek_view.c, which holds the worker in the decoder.)
 * Owner: the main thread drives; the callbacks run on the consumer's workers. */
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define RECS   4000
#define ROUNDS 3

static const int64_t hold_at[ROUNDS] = {1000, 2000, 3700};
static const int64_t target[ROUNDS + 1] = {0, 300, 3500, 3990}; /* [r]: after r seeks */

static pid_t g_pid;
static char g_bs[256];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
/* Guarded by mu: hold the first view reaching hold_at[hold_round] (-1: none); the round a
 * callback is held in (-1: none); rounds released. A held callback waits for its own round's
 * release, so arming the next round at the release cannot let a view through unheld. */
static int hold_round = -1, held_round = -1, released;
static _Atomic int returned; /* seeks that returned; published by the main thread after each */
static _Atomic int seen;     /* the callbacks' view of `returned` when they last started */
static _Atomic int64_t expect, last = -1;
static _Atomic int in_cb, overlap, stale, disorder;
static _Atomic int64_t first_after[ROUNDS + 1];

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    if (atomic_fetch_add(&in_cb, 1) != 0)
        atomic_fetch_add(&overlap, 1);
    int r = atomic_load(&returned); /* at the start: seeks ordered before this callback */
    bool fresh = r > atomic_load(&seen);
    atomic_store(&seen, r);
    bool first = true;
    const kc_record_t *rec;
    while ((rec = kc_records_next(b))) {
        int64_t off = kc_record_offset(rec);
        if (first && fresh) {
            atomic_store(&first_after[r], off);
            if (off != target[r])
                atomic_fetch_add(&stale, 1); /* a record from before seek r */
        } else if (off != atomic_load(&expect)) {
            atomic_fetch_add(&disorder, 1);
        }
        if (first) {
            first = false;
            pthread_mutex_lock(&mu);
            if (hold_round >= 0 && off >= hold_at[hold_round]) {
                int h = hold_round;
                hold_round = -1;
                held_round = h;
                pthread_cond_broadcast(&cv);
                while (released <= h)
                    pthread_cond_wait(&cv, &mu);
            }
            pthread_mutex_unlock(&mu);
        }
        atomic_store(&expect, off + 1);
        atomic_store(&last, off);
    }
    atomic_fetch_sub(&in_cb, 1);
    return KC_CB_CONTINUE;
}

static int setup(void **state)
{
    (void)state;
    const char *args[] = {"--topic", "K",  "--partitions",    "1",   "--records", "4000",
                          "--size",  "16", "--batch-records", "100", NULL};
    g_pid = kc_testkit_spawn("kc-memory-broker", args, g_bs, sizeof g_bs);
    return g_pid > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return kc_testkit_stop(g_pid);
}

static void seek_while_held(void **state)
{
    (void)state;
    for (int r = 0; r <= ROUNDS; r++)
        atomic_store(&first_after[r], -1);
    kc_error_t err;
    kc_conf_t *conf = kc_conf_new();
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", g_bs, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "worker.threads", "3", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "callback.batch.max.records", "10", &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    pthread_mutex_lock(&mu);
    hold_round = 0;
    pthread_mutex_unlock(&mu);
    kc_topic_partition_t tp = {"K", 0, 0};
    assert_int_equal(kc_assign(c, &tp, 1, &err), KC_OK);
    for (int r = 0; r < ROUNDS; r++) {
        int64_t end = kc_test_now_ms() + 20000;
        pthread_mutex_lock(&mu);
        while (held_round != r && kc_test_now_ms() < end) {
            pthread_mutex_unlock(&mu);
            usleep(1000);
            pthread_mutex_lock(&mu);
        }
        bool was_held = held_round == r;
        pthread_mutex_unlock(&mu);
        if (!was_held)
            fail_msg("round %d: no view reached %lld (last %lld)", r, (long long)hold_at[r],
                     (long long)atomic_load(&last));
        /* the callback is held: seek from this (app) thread, then let it go */
        assert_int_equal(kc_seek(c, "K", 0, KC_SEEK_OFFSET, target[r + 1], &err), KC_OK);
        atomic_store(&returned, r + 1);
        pthread_mutex_lock(&mu);
        held_round = -1;
        released = r + 1;
        hold_round = r + 1 < ROUNDS ? r + 1 : -1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    int64_t end = kc_test_now_ms() + 20000;
    while (atomic_load(&last) != RECS - 1 && kc_test_now_ms() < end)
        usleep(5000);
    printf("stale %d disorder %d overlap %d last %lld; first after each seek:", atomic_load(&stale),
           atomic_load(&disorder), atomic_load(&overlap), (long long)atomic_load(&last));
    for (int r = 1; r <= ROUNDS; r++)
        printf(" %lld (target %lld)", (long long)atomic_load(&first_after[r]),
               (long long)target[r]);
    printf("\n");
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
    assert_int_equal(atomic_load(&overlap), 0);
    assert_int_equal(atomic_load(&stale), 0);
    assert_int_equal(atomic_load(&disorder), 0);
    for (int r = 1; r <= ROUNDS; r++)
        assert_int_equal(atomic_load(&first_after[r]), target[r]);
    assert_int_equal(atomic_load(&last), RECS - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seek_while_held),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
