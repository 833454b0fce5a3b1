/* kc-test-label: threads */
/* A callback that seeks (kc_seek from inside on_records) and returns KC_CB_PAUSE or KC_CB_STOP:
 * both hold, as Java's seek() and pause() on one partition do. The partition is paused at the
 * seek's target: nothing is delivered until kc_resume, the pause is reported to the network
 * thread (which stops fetching the partition), the batches queued from before the seek (the one
 * being delivered and one behind it) are not kept, and after the resume delivery starts at the
 * target. So too for a seek of a partition the application paused. The main thread plays the
 * network thread: it makes the seek the callback asked for and pushes the batch fetched from the
 * new position while the callback is still running, so the worker finds it queued when the callback
 * returns. */
#include <pthread.h>

#include "rt_harness.h"

#define VIEW   10   /* callback.batch.max.records */
#define TARGET 1000 /* the seek target */

static harness_t *H;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool asked, made; /* guarded by mu: the callback asked for the seek; it was made */

/* The first view's callback: kc_seek, which returns once the network thread made the seek. */
static void seek_in_callback(harness_t *h, kc_part_t *p)
{
    if (atomic_load(&h->hp[p->partition].batches) != 1)
        return;
    pthread_mutex_lock(&mu);
    asked = true;
    pthread_cond_broadcast(&cv);
    while (!made)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    h->hp[p->partition].expect = TARGET; /* the harness checks offset order from here */
}

static bool was_asked(harness_t *h)
{
    (void)h;
    pthread_mutex_lock(&mu);
    bool a = asked;
    pthread_mutex_unlock(&mu);
    return a;
}

static bool reported(harness_t *h)
{
    return h->paused_cmpl + h->stopped_cmpl > 0;
}

/* fake_batch's bytes for the batch fetched after the seek: only it stays counted */
#define FRESH (VIEW * (12 + 4))

static bool only_fresh_counted(harness_t *h)
{
    return atomic_load(&h->p[0]->buffered) == FRESH;
}

static bool got_first_view(harness_t *h)
{
    return atomic_load(&h->hp[0].batches) == 1;
}

static bool got_target_view(harness_t *h)
{
    return atomic_load(&h->hp[0].batches) == 2;
}

static void run_case(kc_cb_result_t result)
{
    asked = made = false;
    H = calloc(1, sizeof *H);
    kc_rt_opts_t o = h_opts(H, 2);
    o.max_records = VIEW;
    H->after_view = seek_in_callback;
    h_start(H, &o, 1);
    atomic_store(&H->hp[0].script, (int)result + 1); /* the first view's answer */
    assert_true(h_push(H, 0, 50, 4));
    assert_true(h_push(H, 0, 50, 4));
    assert_true(h_wait(H, was_asked, 10000));
    kc_rt_part_seek(H->p[0], TARGET);
    H->next_push[0] = TARGET;
    assert_true(h_push(H, 0, VIEW, 4));
    pthread_mutex_lock(&mu);
    made = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);

    assert_true(h_wait(H, reported, 5000));
    /* the batches from before the seek are not kept for the resume (released after the post) */
    assert_true(h_wait(H, only_fresh_counted, 5000));
    usleep(50000); /* a chance for a (wrong) delivery while paused */
    kc_rt_drain_completions(H->rt, h_cmpl, H);
    assert_int_equal(atomic_load(&H->hp[0].batches), 1);
    assert_int_equal(H->paused_cmpl, result == KC_CB_PAUSE);
    assert_int_equal(H->stopped_cmpl, result == KC_CB_STOP);
    assert_int_equal(atomic_load(&H->p[0]->buffered), FRESH);

    kc_rt_part_resume(H->p[0]);
    assert_true(h_wait(H, got_target_view, 10000));
    /* the first view's records count only when it was processed (PAUSE, not STOP) */
    assert_int_equal(atomic_load(&H->hp[0].records), (result == KC_CB_PAUSE ? VIEW : 0) + VIEW);
    assert_int_equal(atomic_load(&H->violations), 0); /* the target's view starts at TARGET */
    assert_int_equal(H->hp[0].expect, TARGET + VIEW);
    kc_rt_shutdown(H->rt, false, 5000);
    kc_rt_free(H->rt);
    free(H);
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

static bool nothing_counted(harness_t *h)
{
    return atomic_load(&h->p[0]->buffered) == 0;
}

/* kc_pause, then kc_seek from the application: the batches queued from before the seek go at the
 * seek, not at kc_resume, and the resume delivers from the target. */
static void pause_then_seek(void **state)
{
    (void)state;
    H = calloc(1, sizeof *H);
    kc_rt_opts_t o = h_opts(H, 2);
    o.max_records = VIEW;
    h_start(H, &o, 1);
    kc_rt_part_pause(H->p[0]);
    assert_true(h_push(H, 0, 50, 4));
    assert_true(h_push(H, 0, 50, 4));
    kc_rt_part_seek(H->p[0], TARGET);
    assert_true(h_wait(H, nothing_counted, 5000));
    H->next_push[0] = TARGET;
    assert_true(h_push(H, 0, VIEW, 4));
    usleep(50000); /* a chance for a (wrong) delivery while paused */
    assert_int_equal(atomic_load(&H->hp[0].batches), 0);
    assert_int_equal(atomic_load(&H->p[0]->buffered), FRESH);
    H->hp[0].expect = TARGET; /* published to the worker by the resume's kick */
    kc_rt_part_resume(H->p[0]);
    assert_true(h_wait(H, got_first_view, 10000));
    assert_int_equal(atomic_load(&H->hp[0].records), VIEW);
    assert_int_equal(atomic_load(&H->violations), 0);
    kc_rt_shutdown(H->rt, false, 5000);
    kc_rt_free(H->rt);
    free(H);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seek_then_pause),
        cmocka_unit_test(seek_then_stop),
        cmocka_unit_test(pause_then_seek),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
