/* kc-test-label: threads */
/* A callback that seeks (kc_seek from inside on_records) and returns KC_CB_PAUSE or KC_CB_STOP:
 * both hold, as Java's seek() and pause() on one partition do. The partition is paused at the
 * seek's target: nothing is delivered until kc_resume, the pause is reported to the network
 * thread (which stops fetching the partition), and after the resume delivery starts at the
 * target. The main thread plays the network thread: it performs the seek the callback asked for
 * and pushes the batch fetched from the new position while the callback is still running, so the
 * worker finds it queued when the callback returns. */
#include <pthread.h>
#include <stdio.h>

#include "rt_harness.h"

#define VIEW   10   /* callback.batch.max.records */
#define TARGET 1000 /* the seek target */

typedef struct sp {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool asked, done;      /* guarded by mu: the callback asked for the seek; it was made */
    kc_cb_result_t result; /* what the seeking callback returns */
    _Atomic int views, stale;
    _Atomic long after;
    _Atomic int64_t first_after;
    _Atomic int paused_cmpl, stopped_cmpl;
} sp_t;

static sp_t S;

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)opaque, (void)p;
    int view = atomic_fetch_add(&S.views, 1);
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        if (off >= TARGET) {
            int64_t none = -1;
            atomic_compare_exchange_strong(&S.first_after, &none, off);
            atomic_fetch_add(&S.after, 1);
        } else if (view > 0) {
            atomic_fetch_add(&S.stale, 1); /* from before the seek, after it */
        }
    }
    if (view > 0)
        return KC_CB_CONTINUE;
    /* kc_seek: the network thread makes the seek before the call returns */
    pthread_mutex_lock(&S.mu);
    S.asked = true;
    pthread_cond_broadcast(&S.cv);
    while (!S.done)
        pthread_cond_wait(&S.cv, &S.mu);
    pthread_mutex_unlock(&S.mu);
    return S.result;
}

static void noop_wake(void *ctx)
{
    (void)ctx;
}

static void drain_fn(void *ctx, const kc_rt_cmpl_t *c)
{
    (void)ctx;
    if (c->type == KC_RT_CMPL_PAUSED)
        atomic_fetch_add(&S.paused_cmpl, 1);
    if (c->type == KC_RT_CMPL_STOPPED)
        atomic_fetch_add(&S.stopped_cmpl, 1);
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

static bool asked(void)
{
    pthread_mutex_lock(&S.mu);
    bool a = S.asked;
    pthread_mutex_unlock(&S.mu);
    return a;
}

static bool reported(void)
{
    return atomic_load(&S.paused_cmpl) + atomic_load(&S.stopped_cmpl) > 0;
}

static bool all_after(void)
{
    return atomic_load(&S.after) >= VIEW;
}

static void run_case(kc_cb_result_t result)
{
    S = (sp_t){.result = result};
    pthread_mutex_init(&S.mu, NULL);
    pthread_cond_init(&S.cv, NULL);
    atomic_init(&S.first_after, -1);
    kc_rt_opts_t o = {
        .workers = 2,
        .ring_slots = 64,
        .max_records = VIEW,
        .queued_max_bytes = 1 << 30,
        .auto_store = true,
        .cbs = {.on_records = on_records},
        .decoder = {fake_ctx_new, fake_ctx_free, fake_open, fake_next, NULL},
        .wake = noop_wake,
    };
    kc_rt_t *rt;
    kc_error_t e;
    assert_int_equal(kc_rt_new(&o, &rt, &e), KC_OK);
    kc_rt_part_t *p = kc_rt_part_add(rt, "t", 0, 0);
    assert_non_null(p);
    kc_rt_bref_t b = fake_batch(0, 100, 4);
    assert_int_equal(kc_rt_part_push(p, &b), KC_OK);
    if (!wait_for(asked, rt, 10000))
        fail_msg("the first callback never ran");
    kc_rt_part_seek(p, TARGET);
    kc_rt_bref_t nb = fake_batch(TARGET, VIEW, 4);
    assert_int_equal(kc_rt_part_push(p, &nb), KC_OK);
    pthread_mutex_lock(&S.mu);
    S.done = true;
    pthread_cond_broadcast(&S.cv);
    pthread_mutex_unlock(&S.mu);

    assert_true(wait_for(reported, rt, 5000));
    usleep(50000); /* a chance for a (wrong) delivery while paused */
    kc_rt_drain_completions(rt, drain_fn, NULL);
    printf("%s: views %d, records past the seek while paused %ld\n",
           result == KC_CB_PAUSE ? "pause" : "stop", atomic_load(&S.views), atomic_load(&S.after));
    assert_int_equal(atomic_load(&S.after), 0);
    assert_int_equal(atomic_load(&S.views), 1);
    assert_int_equal(atomic_load(&S.paused_cmpl), result == KC_CB_PAUSE);
    assert_int_equal(atomic_load(&S.stopped_cmpl), result == KC_CB_STOP);
    /* the batch from before the seek is not kept for the resume */
    assert_int_equal(atomic_load(&p->buffered), (int64_t)nb.raw.len);

    kc_rt_part_resume(p);
    bool done = wait_for(all_after, rt, 10000);
    kc_rt_shutdown(rt, false, 5000);
    kc_rt_free(rt);
    assert_true(done);
    assert_int_equal(atomic_load(&S.first_after), TARGET);
    assert_int_equal(atomic_load(&S.after), VIEW);
    assert_int_equal(atomic_load(&S.stale), 0);
    pthread_mutex_destroy(&S.mu);
    pthread_cond_destroy(&S.cv);
}

static void seek_then_pause(void **state)
{
    (void)state;
    run_case(KC_CB_PAUSE);
}

static void seek_then_stop(void **state)
{
    (void)state;
    run_case(KC_CB_STOP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seek_then_pause),
        cmocka_unit_test(seek_then_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
