/* kc-test-label: threads */
/* The dispatcher of a share group (kc_rt_opts_t.share, worker.c): the verdicts each callback
 * result turns into (KC_RT_CMPL_SHARE_ACK), pieces of a batch (a bref covering part of its
 * records) delivered without the records outside them, the delivery count on the view, an
 * undecodable batch rejected, what a revocation does to records never delivered, and the
 * verdict barrier a commit of acknowledgements waits on (kc_rt_share_views / _posted). */
#include "kc_test.h"

#include <sched.h>
#include <unistd.h>

#include "rt_harness.h"

typedef struct share_cb {
    _Atomic int result; /* kc_cb_result_t to return */
    _Atomic long records;
    _Atomic int64_t first, last; /* offsets of the last view */
    _Atomic int count;           /* delivery count of the last view */
    _Atomic int block;           /* while set, the callback waits (revocation test) */
    _Atomic int pick;            /* explicit verdicts: REJECT offset % 5 == 2, RELEASE % 5 == 4 */
    _Atomic int pick_errors;
    _Atomic int entered; /* callbacks started */
} share_cb_t;

static kc_cb_result_t s_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    share_cb_t *s = opaque;
    atomic_fetch_add(&s->entered, 1);
    while (atomic_load(&s->block))
        usleep(1000);
    const kc_record_t *r;
    int64_t first = -1, last = -1;
    while ((r = kc_records_next(b))) {
        if (first < 0)
            first = kc_record_offset(r);
        last = kc_record_offset(r);
        atomic_fetch_add(&s->records, 1);
        kc_error_t e;
        int64_t o = kc_record_offset(r);
        if (atomic_load(&s->pick) && o % 5 == 2) {
            if (kc_share_ack(b, r, KC_SHARE_REJECT, &e) != KC_OK)
                atomic_fetch_add(&s->pick_errors, 1);
            /* a second verdict on the same record is refused */
            if (kc_share_ack(b, r, KC_SHARE_ACCEPT, &e) != KC_ERR_STATE)
                atomic_fetch_add(&s->pick_errors, 1);
        }
        if (atomic_load(&s->pick) && o % 5 == 4 &&
            kc_share_ack(b, r, KC_SHARE_RELEASE, &e) != KC_OK)
            atomic_fetch_add(&s->pick_errors, 1);
    }
    atomic_store(&s->first, first);
    atomic_store(&s->last, last);
    atomic_store(&s->count, kc_records_delivery_count(b));
    return (kc_cb_result_t)atomic_load(&s->result);
}

static harness_t *h;
static share_cb_t *cb;

static void start(unsigned max_records)
{
    h = calloc(1, sizeof *h);
    cb = calloc(1, sizeof *cb);
    kc_rt_opts_t o = h_opts(h, 2);
    o.share = true;
    o.max_records = max_records;
    o.cbs = (kc_callbacks_t){.on_records = s_records, .opaque = cb};
    h_start(h, &o, 1);
}

static void stop(void)
{
    kc_rt_shutdown(h->rt, false, 5000);
    kc_rt_free(h->rt);
    free(h);
    free(cb);
}

/* Pushes offsets [first, last] of a fake batch starting at `base` with `n` records. */
static void push_piece(int64_t base, int n, int64_t first, int64_t last, int16_t count)
{
    kc_rt_bref_t b = fake_batch(base, n, 4);
    b.base_offset = first;
    b.last_offset = last;
    b.delivery_count = count;
    assert_int_equal(kc_rt_part_push(h->p[0], &b), KC_OK);
}

static int want_acked;
static bool acked_all(harness_t *x)
{
    return x->share_acked[0] + x->share_acked[1] + x->share_acked[2] + x->share_acked[3] >=
           want_acked;
}

static void wait_acked(int n)
{
    want_acked = n;
    assert_true(h_wait(h, acked_all, 5000));
}

static void continue_accepts(void **state)
{
    (void)state;
    start(1000);
    push_piece(0, 10, 0, 9, 1);
    wait_acked(10);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 10);
    assert_int_equal(atomic_load(&cb->records), 10);
    assert_int_equal(atomic_load(&cb->count), 1);
    stop();
}

static bool stopped(harness_t *x)
{
    return x->stopped_cmpl == 1;
}

static void retry_and_stop_release(void **state)
{
    (void)state;
    start(1000);
    atomic_store(&cb->result, KC_CB_RETRY);
    push_piece(0, 5, 0, 4, 1);
    wait_acked(5);
    assert_int_equal(h->share_acked[KC_SHARE_RELEASE], 5);
    /* not redelivered locally: the broker hands them out again */
    usleep(50 * 1000);
    assert_int_equal(atomic_load(&cb->records), 5);
    atomic_store(&cb->result, KC_CB_STOP);
    push_piece(5, 5, 5, 9, 3);
    wait_acked(10);
    assert_int_equal(h->share_acked[KC_SHARE_RELEASE], 10);
    assert_int_equal(atomic_load(&cb->count), 3);
    assert_true(h_wait(h, stopped, 5000));
    stop();
}

/* A piece of a batch: only its records, even from the middle, and the view says its count. */
static void pieces_deliver_only_their_records(void **state)
{
    (void)state;
    start(1000);
    push_piece(100, 10, 103, 105, 2);
    wait_acked(3);
    assert_int_equal(atomic_load(&cb->records), 3);
    assert_int_equal(atomic_load(&cb->first), 103);
    assert_int_equal(atomic_load(&cb->last), 105);
    assert_int_equal(atomic_load(&cb->count), 2);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 3);
    /* a piece before the last one (the broker's order for a redelivery) is delivered too */
    push_piece(100, 10, 100, 100, 3);
    wait_acked(4);
    assert_int_equal(atomic_load(&cb->first), 100);
    assert_int_equal(atomic_load(&cb->count), 3);
    stop();
}

/* Views of max_records: each one's verdict covers its own records only. */
static void views_each_get_their_verdict(void **state)
{
    (void)state;
    start(2);
    push_piece(0, 6, 0, 5, 1);
    wait_acked(6);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 6);
    assert_int_equal(atomic_load(&cb->records), 6);
    stop();
}

/* kc_share_ack: its verdicts on single records, the callback result's on the rest. */
static void explicit_verdicts(void **state)
{
    (void)state;
    start(1000);
    atomic_store(&cb->pick, 1);
    push_piece(0, 10, 0, 9, 1);
    wait_acked(10);
    assert_int_equal(atomic_load(&cb->pick_errors), 0);
    assert_int_equal(h->share_acked[KC_SHARE_REJECT], 2);  /* 2, 7 */
    assert_int_equal(h->share_acked[KC_SHARE_RELEASE], 2); /* 4, 9 */
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 6);
    stop();
}

/* Outside share groups kc_share_ack refuses, and the delivery count is -1. */
static _Atomic int plain_rc, plain_count;
static kc_cb_result_t plain_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)opaque, (void)p;
    const kc_record_t *r = kc_records_next(b);
    kc_error_t e;
    atomic_store(&plain_rc, (int)kc_share_ack(b, r, KC_SHARE_ACCEPT, &e));
    atomic_store(&plain_count, kc_records_delivery_count(b));
    return KC_CB_CONTINUE;
}

static bool plain_done(harness_t *x)
{
    (void)x;
    return atomic_load(&plain_count) != 0;
}

static void not_share(void **state)
{
    (void)state;
    h = calloc(1, sizeof *h);
    cb = calloc(1, sizeof *cb);
    kc_rt_opts_t o = h_opts(h, 1);
    o.cbs = (kc_callbacks_t){.on_records = plain_records, .opaque = cb};
    h_start(h, &o, 1);
    assert_true(h_push(h, 0, 3, 4));
    assert_true(h_wait(h, plain_done, 5000));
    assert_int_equal(atomic_load(&plain_rc), KC_ERR_STATE);
    assert_int_equal(atomic_load(&plain_count), -1);
    assert_int_equal(h->share_acked[0] + h->share_acked[1] + h->share_acked[2], 0);
    stop();
}

static void corrupt_batch_rejected(void **state)
{
    (void)state;
    start(1000);
    kc_rt_bref_t b = fake_corrupt_batch(40, 5);
    b.delivery_count = 1;
    assert_int_equal(kc_rt_part_push(h->p[0], &b), KC_OK);
    wait_acked(5);
    assert_int_equal(h->share_acked[KC_SHARE_REJECT], 5);
    stop();
}

/* Revoked with acquired records queued: they are released (for another member now), the one in
 * flight gets its callback's verdict. */
static void revoke_releases_queued(void **state)
{
    (void)state;
    start(1000);
    atomic_store(&cb->block, 1);
    push_piece(0, 4, 0, 3, 1);
    push_piece(4, 4, 4, 7, 1);
    usleep(50 * 1000); /* the first is in its callback now */
    kc_rt_part_revoke(h->p[0], false);
    atomic_store(&cb->block, 0);
    wait_acked(8);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 4);
    assert_int_equal(h->share_acked[KC_SHARE_RELEASE], 4);
    stop();
}

/* The commit barrier: views taken while a callback runs are not posted until it returned and
 * its verdicts are in the completion ring, so the one drain after kc_rt_share_posted said so
 * hands every one of them over (the test drains nothing before). A view that started after the
 * views were taken is not waited for. */
static void commit_barrier(void **state)
{
    (void)state;
    start(1000);
    atomic_store(&cb->block, 1);
    push_piece(0, 10, 0, 9, 1);
    int64_t end = h_now_ns() + 5000 * 1000000LL;
    while (atomic_load(&cb->entered) < 1 && h_now_ns() < end)
        usleep(1000);
    assert_int_equal(atomic_load(&cb->entered), 1);
    uint64_t views[2];
    assert_int_equal(kc_rt_workers(h->rt), 2);
    kc_rt_share_views(h->rt, views);
    usleep(20 * 1000);
    assert_false(kc_rt_share_posted(h->rt, views)); /* still in the callback */
    atomic_store(&cb->block, 0);
    while (!kc_rt_share_posted(h->rt, views) && h_now_ns() < end)
        sched_yield();
    assert_true(kc_rt_share_posted(h->rt, views));
    kc_rt_drain_completions(h->rt, h_cmpl, h);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 10);
    /* nothing running: the barrier is passed at once */
    kc_rt_share_views(h->rt, views);
    assert_true(kc_rt_share_posted(h->rt, views));
    stop();
}

int main(void)
{
    kc_test_filter();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(continue_accepts),
        cmocka_unit_test(retry_and_stop_release),
        cmocka_unit_test(pieces_deliver_only_their_records),
        cmocka_unit_test(views_each_get_their_verdict),
        cmocka_unit_test(explicit_verdicts),
        cmocka_unit_test(not_share),
        cmocka_unit_test(corrupt_batch_rejected),
        cmocka_unit_test(revoke_releases_queued),
        cmocka_unit_test(commit_barrier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
