/* kc-test-label: threads */
/* A seek from outside the partition's callbacks (kc_rt_part_seek, as the network thread does for
 * kc_seek from an app thread) while the worker sits between two callbacks of one batch: no
 * callback that starts after the seek returned may see a record from before it. The worker is
 * held deterministically inside the decoder (a wrapper around the fake decoder that blocks on a
 * condition this test controls), i.e. after the previous callback returned and its seek check
 * passed, and before the next view is handed to on_records:
 *  - next_view: blocked decoding the first record of the batch's second view;
 *  - next_batch: blocked opening the partition's second batch.
 * The main thread plays the network thread (seek, push, drain). */
#include <pthread.h>
#include <stdio.h>

#include "rt_harness.h"

#define VIEW   10   /* callback.batch.max.records */
#define TARGET 1000 /* the seek target: every record below it is from before the seek */

typedef struct sv {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t block_next;        /* decoder: block when decoding this offset (-1: never) */
    int64_t block_open;        /* decoder: block when opening the batch based here (-1: never) */
    bool blocked, go;          /* guarded by mu */
    _Atomic int seek_returned; /* set by the main thread once kc_rt_part_seek returned */
    _Atomic int in_cb, overlap;
    _Atomic int stale;           /* records < TARGET in callbacks started after the seek */
    _Atomic long after;          /* records >= TARGET delivered */
    _Atomic int64_t first_after; /* first offset >= TARGET delivered, -1 before */
    _Atomic long views;
} sv_t;

static sv_t S;

static void hold(void)
{
    pthread_mutex_lock(&S.mu);
    S.blocked = true;
    pthread_cond_broadcast(&S.cv);
    while (!S.go)
        pthread_cond_wait(&S.cv, &S.mu);
    pthread_mutex_unlock(&S.mu);
}

static kc_err_t sv_open(void *ctx, const kc_part_t *p, const kc_rt_bref_t *b,
                        kc_rt_batch_facts_t *facts, kc_error_t *err)
{
    if (b->base_offset == S.block_open)
        hold();
    return fake_open(ctx, p, b, facts, err);
}

static int sv_next(void *ctx, kc_record_t *r, kc_error_t *err)
{
    int rc = fake_next(ctx, r, err);
    if (rc == 1 && r->offset == S.block_next)
        hold();
    return rc;
}

static kc_cb_result_t sv_on_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)opaque, (void)p;
    if (atomic_fetch_add(&S.in_cb, 1) != 0)
        atomic_fetch_add(&S.overlap, 1);
    /* Read at the callback's start: the main thread set it after the seek returned and before
     * it let the decoder go, so a callback of the held view sees it (the condition variable
     * orders the two). */
    int after_seek = atomic_load(&S.seek_returned);
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        if (off < TARGET && after_seek)
            atomic_fetch_add(&S.stale, 1);
        if (off >= TARGET) {
            int64_t none = -1;
            atomic_compare_exchange_strong(&S.first_after, &none, off);
            atomic_fetch_add(&S.after, 1);
        }
    }
    atomic_fetch_add(&S.views, 1);
    atomic_fetch_sub(&S.in_cb, 1);
    return KC_CB_CONTINUE;
}

static void noop_wake(void *ctx)
{
    (void)ctx;
}

static void drain_fn(void *ctx, const kc_rt_cmpl_t *c)
{
    (void)ctx, (void)c;
}

static bool wait_for(bool (*cond)(void), kc_rt_t *rt, int ms)
{
    int64_t end = h_now_ns() + (int64_t)ms * 1000000;
    while (!cond()) {
        kc_rt_drain_completions(rt, drain_fn, NULL);
        if (h_now_ns() > end)
            return false;
        usleep(1000);
    }
    return true;
}

static bool is_blocked(void)
{
    pthread_mutex_lock(&S.mu);
    bool b = S.blocked;
    pthread_mutex_unlock(&S.mu);
    return b;
}

static bool all_after(void)
{
    return atomic_load(&S.after) >= VIEW;
}

static void run_case(int64_t block_next, int64_t block_open, int batches)
{
    S = (sv_t){.block_next = block_next, .block_open = block_open};
    pthread_mutex_init(&S.mu, NULL);
    pthread_cond_init(&S.cv, NULL);
    atomic_init(&S.first_after, -1);
    kc_rt_opts_t o = {
        .workers = 2,
        .ring_slots = 64,
        .max_records = VIEW,
        .queued_max_bytes = 1 << 30,
        .auto_store = true,
        .cbs = {.on_records = sv_on_records},
        .decoder = {fake_ctx_new, fake_ctx_free, sv_open, sv_next, NULL},
        .wake = noop_wake,
    };
    kc_rt_t *rt;
    kc_error_t e;
    assert_int_equal(kc_rt_new(&o, &rt, &e), KC_OK);
    kc_rt_part_t *p = kc_rt_part_add(rt, "t", 0, 0);
    assert_non_null(p);
    int per = 100 / batches;
    for (int i = 0; i < batches; i++) {
        kc_rt_bref_t b = fake_batch(i * per, per, 4);
        assert_int_equal(kc_rt_part_push(p, &b), KC_OK);
    }
    if (!wait_for(is_blocked, rt, 10000))
        fail_msg("the worker never reached the held decoder step");
    /* The worker is between callbacks now. Seek as kc_seek's network-thread half does, then
     * push the batch the engine fetches from the new position. */
    kc_rt_part_seek(p, TARGET);
    atomic_store(&S.seek_returned, 1);
    kc_rt_bref_t nb = fake_batch(TARGET, VIEW, 4);
    assert_int_equal(kc_rt_part_push(p, &nb), KC_OK);
    pthread_mutex_lock(&S.mu);
    S.go = true;
    pthread_cond_broadcast(&S.cv);
    pthread_mutex_unlock(&S.mu);
    bool done = wait_for(all_after, rt, 10000);
    kc_rt_shutdown(rt, false, 5000);
    kc_rt_free(rt);
    printf("views %ld, stale records after the seek %d, first record after it %lld\n",
           atomic_load(&S.views), atomic_load(&S.stale), (long long)atomic_load(&S.first_after));
    assert_int_equal(atomic_load(&S.overlap), 0);
    assert_int_equal(atomic_load(&S.stale), 0);
    assert_true(done);
    assert_int_equal(atomic_load(&S.first_after), TARGET);
    assert_int_equal(atomic_load(&S.after), VIEW);
    pthread_mutex_destroy(&S.mu);
    pthread_cond_destroy(&S.cv);
}

/* One batch of 100: view [0, 10) delivered, the worker held decoding offset 10. */
static void seek_before_next_view(void **state)
{
    (void)state;
    run_case(VIEW, -1, 1);
}

/* Two batches of 50, views of 10: the worker held opening the second batch (base 50), after the
 * last view of the first returned. */
static void seek_before_next_batch(void **state)
{
    (void)state;
    run_case(-1, 50, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seek_before_next_view),
        cmocka_unit_test(seek_before_next_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
