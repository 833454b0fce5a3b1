/* kc-test-label: threads */
/* The dispatcher of a share group (kc_rt_opts_t.share, worker.c): the verdicts each callback
 * result turns into (KC_RT_CMPL_SHARE_ACK), pieces of a batch (a bref covering part of its
 * records) delivered without the records outside them, the delivery count on the view, an
 * undecodable batch rejected, what a revocation does to records never delivered, the verdict
 * barrier a commit of acknowledgements waits on (kc_rt_share_views / _posted), and the share
 * lanes that run one partition's records on several workers at once (dispatch.h). */
#include "kc_test.h"

#include <sched.h>
#include <unistd.h>

#include "base/clock.h"
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
    _Atomic int inside;  /* on_records running now */
    _Atomic int most;    /* the most on_records of the partition seen running at once */
    _Atomic int
        free_first; /* a view starting at this offset does not wait for `block` (-1: none) */
    _Atomic int pause_first; /* a view starting at this offset returns KC_CB_PAUSE (-1: none) */
    _Atomic int revokes, inside_at_revoke, assigns, records_before_assign;
} share_cb_t;

static void s_assign(void *opaque, kc_part_t *p)
{
    (void)p;
    share_cb_t *s = opaque;
    usleep(20 * 1000); /* a lane that ran ahead of on_assign would deliver meanwhile */
    atomic_fetch_add(&s->assigns, 1);
}

static void s_revoke(void *opaque, kc_part_t *p)
{
    (void)p;
    share_cb_t *s = opaque;
    atomic_store(&s->inside_at_revoke, atomic_load(&s->inside));
    atomic_fetch_add(&s->revokes, 1);
}

static kc_cb_result_t s_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)p;
    share_cb_t *s = opaque;
    if (!atomic_load(&s->assigns))
        atomic_fetch_add(&s->records_before_assign, 1);
    int now = atomic_fetch_add(&s->inside, 1) + 1, most = atomic_load(&s->most);
    while (now > most && !atomic_compare_exchange_weak(&s->most, &most, now))
        ;
    atomic_fetch_add(&s->entered, 1);
    const kc_record_t *r = kc_records_next(b);
    while (atomic_load(&s->block) && (!r || kc_record_offset(r) != atomic_load(&s->free_first)))
        usleep(1000);
    int64_t first = -1, last = -1;
    for (; r; r = kc_records_next(b)) {
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
    atomic_fetch_sub(&s->inside, 1);
    if (first >= 0 && first == atomic_load(&s->pause_first))
        return KC_CB_PAUSE;
    return (kc_cb_result_t)atomic_load(&s->result);
}

static harness_t *h;
static share_cb_t *cb;

/* Pull mode's hook (pull.c); with it set, views count at kc_poll (kc_rt_view_handed), not when
 * their callback starts. */
static void no_gate_hook(void *ctx, struct kc_rt_part *p)
{
    (void)ctx;
    (void)p;
}

static bool pull_like; /* the next start_workers sets no_gate_hook */

static void start_workers(unsigned workers, unsigned max_records)
{
    h = calloc(1, sizeof *h);
    cb = calloc(1, sizeof *cb);
    atomic_store(&cb->free_first, -1);
    atomic_store(&cb->pause_first, -1);
    kc_rt_opts_t o = h_opts(h, workers);
    o.share = true;
    o.max_records = max_records;
    if (pull_like)
        o.gate_closed = no_gate_hook;
    pull_like = false;
    o.cbs = (kc_callbacks_t){
        .on_records = s_records, .on_assign = s_assign, .on_revoke = s_revoke, .opaque = cb};
    h_start(h, &o, 1);
}

static void start(unsigned max_records)
{
    start_workers(2, max_records);
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

static bool lapsed_all(harness_t *x)
{
    return x->share_lapsed >= want_acked;
}

/* A view that has not started when its records' lock has surely run out is not delivered: its
 * records come back as LAPSED (nothing sent), and the views started before are judged as usual. */
static void lapsed_views_not_delivered(void **state)
{
    (void)state;
    start_workers(1, 2); /* one worker: no lanes, the views run one after another */
    kc_rt_bref_t b = fake_batch(0, 10, 4);
    b.delivery_count = 1;
    b.lock_deadline = 1; /* long past */
    assert_int_equal(kc_rt_part_push(h->p[0], &b), KC_OK);
    want_acked = 10;
    assert_true(h_wait(h, lapsed_all, 5000));
    assert_int_equal(atomic_load(&cb->entered), 0);
    assert_int_equal(h->share_acked[0] + h->share_acked[1] + h->share_acked[2] + h->share_acked[3],
                     0);
    /* the lock runs out while the first view's callback runs: the next views lapse */
    atomic_store(&cb->block, 1);
    b = fake_batch(10, 10, 4);
    b.delivery_count = 2;
    int64_t deadline = kc_now_ms() + 2000; /* room for a slow start of the first view */
    b.lock_deadline = deadline;
    assert_int_equal(kc_rt_part_push(h->p[0], &b), KC_OK);
    for (int64_t end = kc_now_ms() + 2000; !atomic_load(&cb->entered) && kc_now_ms() < end;)
        usleep(1000);
    assert_int_equal(atomic_load(&cb->entered), 1);
    while (kc_now_ms() <= deadline) /* the first view outlasts the lock */
        usleep(10 * 1000);
    atomic_store(&cb->block, 0);
    wait_acked(2);
    want_acked = 18;
    assert_true(h_wait(h, lapsed_all, 5000));
    assert_int_equal(atomic_load(&cb->entered), 1);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 2); /* the view that ran: records 10, 11 */
    assert_int_equal(h->share_count, 2);
    stop();
}

/* Pull mode gives back a view whose lock ran out while it waited to be polled (its result
 * KC_RT_CB_LAPSED, with the dispatcher set up as pull mode sets it: views count when polled, and
 * these never were): its records are posted lapsed, never judged; the views after it run. */
static void view_given_back_lapsed(void **state)
{
    (void)state;
    pull_like = true;
    start_workers(1, 2);
    atomic_store(&cb->result, KC_RT_CB_LAPSED);
    kc_rt_bref_t b = fake_batch(0, 10, 4);
    b.delivery_count = 1;
    assert_int_equal(kc_rt_part_push(h->p[0], &b), KC_OK);
    want_acked = 10;
    assert_true(h_wait(h, lapsed_all, 5000));
    assert_int_equal(atomic_load(&cb->entered), 5); /* views of 2 records, each given back */
    assert_int_equal(h->share_acked[0] + h->share_acked[1] + h->share_acked[2] + h->share_acked[3],
                     0);
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
    assert_int_equal(h->share_count, 1); /* the verdict names the delivery it judges */
    /* not redelivered locally: the broker hands them out again */
    usleep(50 * 1000);
    assert_int_equal(atomic_load(&cb->records), 5);
    atomic_store(&cb->result, KC_CB_STOP);
    push_piece(5, 5, 5, 9, 3);
    wait_acked(10);
    assert_int_equal(h->share_acked[KC_SHARE_RELEASE], 10);
    assert_int_equal(atomic_load(&cb->count), 3);
    assert_int_equal(h->share_count, 3);
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

static int want_inside;
static bool inside_reached(harness_t *x)
{
    (void)x;
    return atomic_load(&cb->inside) >= want_inside;
}

/* Revoked with acquired records queued: they are released (for another member now), those in
 * flight (one per lane: two workers, two lanes) get their callback's verdict. */
static void revoke_releases_queued(void **state)
{
    (void)state;
    start(1000);
    atomic_store(&cb->block, 1);
    push_piece(0, 4, 0, 3, 1);
    push_piece(4, 4, 4, 7, 1);
    want_inside = 2;
    assert_true(h_wait(h, inside_reached, 5000)); /* both lanes are in a callback now */
    push_piece(8, 4, 8, 11, 1);                   /* queued behind one of them */
    kc_rt_part_revoke(h->p[0], false);
    atomic_store(&cb->block, 0);
    wait_acked(12);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 8);
    assert_int_equal(h->share_acked[KC_SHARE_RELEASE], 4);
    stop();
}

/* Share lanes: the pieces of one partition run on every worker at once, and none before
 * on_assign returned (it sleeps 20 ms while the pieces are already queued). A partition run on
 * one worker at a time stays at one callback. */
static void lanes_run_side_by_side(void **state)
{
    (void)state;
    start_workers(4, 1000);
    atomic_store(&cb->block, 1);
    for (int i = 0; i < 4; i++)
        push_piece(10 * i, 10, 10 * i, 10 * i + 9, 1);
    want_inside = 4;
    assert_true(h_wait(h, inside_reached, 5000));
    assert_int_equal(atomic_load(&cb->most), 4);
    atomic_store(&cb->block, 0);
    wait_acked(40);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 40);
    assert_int_equal(atomic_load(&cb->records_before_assign), 0);
    assert_int_equal(atomic_load(&cb->assigns), 1);
    stop();
}

/* One batch of more records than a view holds is cut into pieces, one per lane, so its views run
 * side by side: 4 workers, views of 10, one batch of 40 records in four callbacks at once, every
 * record delivered once, and the bytes it was counted for all given back. */
static void big_batch_split_over_lanes(void **state)
{
    (void)state;
    start_workers(4, 10);
    atomic_store(&cb->block, 1);
    push_piece(0, 40, 0, 39, 1);
    want_inside = 4;
    assert_true(h_wait(h, inside_reached, 5000));
    atomic_store(&cb->block, 0);
    wait_acked(40);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 40);
    assert_int_equal(atomic_load(&cb->records), 40);
    assert_int_equal(atomic_load(&cb->most), 4);
    for (int i = 0; i < 5000 && kc_rt_buffered_bytes(h->rt); i++)
        usleep(1000); /* each piece's release follows its verdicts */
    assert_int_equal(kc_rt_buffered_bytes(h->rt), 0);
    stop();
}

static bool assigned(harness_t *x)
{
    (void)x;
    return atomic_load(&cb->assigns) > 0;
}

/* Pieces split after on_assign returned, each batch holding its only reference (as a caller may
 * hand it over): a worker may deliver and release the first piece while the others are still
 * being queued, so their references are taken first (ASan: no use after free). */
static void split_after_assign(void **state)
{
    (void)state;
    start_workers(4, 1);
    assert_true(h_wait(h, assigned, 5000));
    for (int i = 0; i < 1000; i++) {
        kc_rt_bref_t b = fake_batch(4 * i, 4, 4);
        b.delivery_count = 1;
        while (kc_rt_part_push(h->p[0], &b) != KC_OK) {
            kc_rt_drain_completions(h->rt, h_cmpl, h);
            usleep(1000);
        }
    }
    wait_acked(4000);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 4000);
    assert_int_equal(atomic_load(&cb->records), 4000);
    stop();
}

static bool paused_once(harness_t *x)
{
    return x->paused_cmpl > 0;
}

/* KC_CB_PAUSE on one lane stops the others: a lane whose callback was running when its sibling
 * paused the partition starts nothing more (not its queued piece) until kc_rt_part_resume. */
static void pause_stops_every_lane(void **state)
{
    (void)state;
    start_workers(2, 1000);
    assert_true(h_wait(h, assigned, 5000));
    atomic_store(&cb->block, 1);
    push_piece(0, 10, 0, 9, 1);    /* the head */
    push_piece(10, 10, 10, 19, 1); /* the lane */
    want_inside = 2;
    assert_true(h_wait(h, inside_reached, 5000));
    push_piece(20, 10, 20, 29, 1); /* queued: one behind each */
    push_piece(30, 10, 30, 39, 1);
    atomic_store(&cb->pause_first, 0);
    atomic_store(&cb->free_first, 0); /* the head's view returns PAUSE */
    assert_true(h_wait(h, paused_once, 5000));
    atomic_store(&cb->block, 0); /* the lane's view returns; its queued piece must wait */
    usleep(100 * 1000);
    kc_rt_drain_completions(h->rt, h_cmpl, h);
    assert_int_equal(atomic_load(&cb->entered), 2);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 20);
    kc_rt_part_resume(h->p[0]);
    wait_acked(40);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 40);
    stop();
}

static bool revoked(harness_t *x)
{
    return x->revoke_done[0] > 0;
}

/* on_revoke runs once, after every lane's callback returned: the head's own callback (the first
 * piece, which does not wait) is done long before the lanes', and the head's worker must wait
 * for them instead of running on_revoke. */
static void revoke_waits_for_every_lane(void **state)
{
    (void)state;
    start_workers(4, 1000);
    want_inside = 0;
    atomic_store(&cb->block, 1);
    atomic_store(&cb->free_first, 0);
    for (int i = 0; i < 4; i++)
        push_piece(10 * i, 10, 10 * i, 10 * i + 9, 1);
    want_acked = 10; /* the free piece's verdicts */
    assert_true(h_wait(h, acked_all, 5000));
    want_inside = 3;
    assert_true(h_wait(h, inside_reached, 5000));
    assert_true(kc_rt_part_revoke(h->p[0], false)); /* callbacks in flight */
    usleep(100 * 1000);
    kc_rt_drain_completions(h->rt, h_cmpl, h);
    assert_int_equal(atomic_load(&cb->revokes), 0);
    assert_int_equal(h->revoke_done[0], 0);
    atomic_store(&cb->block, 0);
    assert_true(h_wait(h, revoked, 5000));
    assert_int_equal(atomic_load(&cb->revokes), 1);
    assert_int_equal(atomic_load(&cb->inside_at_revoke), 0);
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 40);
    kc_rt_part_free(h->p[0]);
    h->p[0] = NULL;
    stop();
}

static int parked_cmpl;
static kc_rt_part_t *parked_part;
static void park_cmpl(void *ctx, const kc_rt_cmpl_t *c)
{
    if (c->type == KC_RT_CMPL_PARKED) {
        parked_cmpl++;
        parked_part = c->part;
    }
    h_cmpl(ctx, c);
}

static bool parked_once(harness_t *x)
{
    (void)x;
    return parked_cmpl > 0;
}

/* Parking a partition with lanes: one PARKED, naming the partition, once no lane runs a callback
 * (the head's own is done early, the lanes' wait); after the unpark every lane delivers again. */
static void park_waits_for_every_lane(void **state)
{
    (void)state;
    start_workers(4, 1000);
    parked_cmpl = 0;
    parked_part = NULL;
    atomic_store(&cb->block, 1);
    atomic_store(&cb->free_first, 0);
    for (int i = 0; i < 4; i++)
        push_piece(10 * i, 10, 10 * i, 10 * i + 9, 1);
    want_acked = 10;
    assert_true(h_wait_fn(h, park_cmpl, acked_all, 5000));
    want_inside = 3;
    assert_true(h_wait_fn(h, park_cmpl, inside_reached, 5000));
    kc_rt_part_park(h->p[0]);
    usleep(100 * 1000);
    kc_rt_drain_completions(h->rt, park_cmpl, h);
    assert_int_equal(parked_cmpl, 0);
    atomic_store(&cb->block, 0);
    assert_true(h_wait_fn(h, park_cmpl, parked_once, 5000));
    usleep(50 * 1000);
    kc_rt_drain_completions(h->rt, park_cmpl, h);
    assert_int_equal(parked_cmpl, 1);
    assert_ptr_equal(parked_part, h->p[0]);
    assert_int_equal(atomic_load(&cb->inside), 0);
    want_acked = 40;
    assert_true(h_wait_fn(h, park_cmpl, acked_all, 5000));
    /* parked: nothing new starts */
    atomic_store(&cb->most, 0);
    for (int i = 4; i < 8; i++)
        push_piece(10 * i, 10, 10 * i, 10 * i + 9, 1);
    usleep(50 * 1000);
    assert_int_equal(atomic_load(&cb->entered), 4);
    kc_rt_part_unpark(h->p[0]);
    want_acked = 80;
    assert_true(h_wait_fn(h, park_cmpl, acked_all, 5000));
    assert_int_equal(h->share_acked[KC_SHARE_ACCEPT], 80);
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
        cmocka_unit_test(lapsed_views_not_delivered),
        cmocka_unit_test(view_given_back_lapsed),
        cmocka_unit_test(retry_and_stop_release),
        cmocka_unit_test(pieces_deliver_only_their_records),
        cmocka_unit_test(views_each_get_their_verdict),
        cmocka_unit_test(explicit_verdicts),
        cmocka_unit_test(not_share),
        cmocka_unit_test(corrupt_batch_rejected),
        cmocka_unit_test(revoke_releases_queued),
        cmocka_unit_test(lanes_run_side_by_side),
        cmocka_unit_test(big_batch_split_over_lanes),
        cmocka_unit_test(split_after_assign),
        cmocka_unit_test(pause_stops_every_lane),
        cmocka_unit_test(revoke_waits_for_every_lane),
        cmocka_unit_test(park_waits_for_every_lane),
        cmocka_unit_test(commit_barrier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
