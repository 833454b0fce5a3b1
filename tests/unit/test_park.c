/* kc-test-label: threads */
/* Parking (dispatch.h) and the group-level rebalance callback's steps over it (rebalance.h):
 * an assigned partition runs on_assign and then nothing until it is unparked; a revoked one
 * waits for its record callback in flight and runs on_revoke only after the unpark; an unpark
 * that overtakes its PARKED completion does not strand the partition; on_rebalance runs between
 * the per-partition callbacks, one step at a time, in the order the steps were made. The test's
 * main thread plays the network thread. */
#include <stdio.h>
#include <string.h>

#include "rebalance.h"
#include "rt_harness.h"

/* ---- a log of callbacks, in the order they ran ---------------------------------------------- */

#define LOGN 4096
typedef struct ev {
    char what; /* 'A' on_assign, 'D' on_records, 'V' on_revoke, 'L' on_lost, 'R' on_rebalance */
    int partition;
    int kind;     /* 'R': kc_rebalance_t */
    int n;        /* 'R': the set's size */
    unsigned set; /* 'R': bit i = partition i named */
} ev_t;

static harness_t *H;
static ev_t LOG[LOGN];
static _Atomic int NLOG;
static _Atomic int REB_IN, REB_OVERLAP;
static _Atomic int REB_SLEEP_US;
static kc_rt_rebal_t *RB;
/* The KC_ERR_POLL_EXCEEDED message: written on the control worker before h_on_event counts it
 * (seq_cst), read by the main thread after it saw the count. */
static char POLL_MSG[256];
static int PARKED_SEEN[H_MAXP]; /* main thread */
static int REBALANCED;          /* main thread */

static void log_ev(char what, int partition, int kind, int n, unsigned set)
{
    int i = atomic_fetch_add(&NLOG, 1);
    if (i < LOGN)
        LOG[i] = (ev_t){what, partition, kind, n, set};
}

static void t_on_assign(void *opaque, kc_part_t *p)
{
    h_on_assign(opaque, p);
    log_ev('A', p->partition, 0, 0, 0);
}

static kc_cb_result_t t_on_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    log_ev('D', p->partition, 0, 0, 0);
    return h_on_records(opaque, p, b);
}

static void t_on_revoke(void *opaque, kc_part_t *p)
{
    log_ev('V', p->partition, 0, 0, 0);
    h_on_revoke(opaque, p);
}

static void t_on_lost(void *opaque, kc_part_t *p)
{
    log_ev('L', p->partition, 0, 0, 0);
    h_on_lost(opaque, p);
}

static void t_on_rebalance(void *opaque, kc_rebalance_t kind, const kc_topic_partition_t *tps,
                           size_t n)
{
    (void)opaque;
    if (atomic_fetch_add(&REB_IN, 1) != 0)
        atomic_fetch_add(&REB_OVERLAP, 1);
    int us = atomic_load(&REB_SLEEP_US);
    if (us)
        usleep((useconds_t)us);
    unsigned set = 0;
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(tps[i].topic, "t");
        assert_int_equal(tps[i].offset, -1);
        set |= 1u << tps[i].partition;
    }
    log_ev('R', -1, (int)kind, (int)n, set);
    atomic_fetch_sub(&REB_IN, 1);
}

static void t_on_event(void *opaque, const kc_event_t *ev)
{
    if (ev->type == KC_EVENT_ERROR && ev->error->code == KC_ERR_POLL_EXCEEDED)
        snprintf(POLL_MSG, sizeof POLL_MSG, "%s", ev->error->msg);
    h_on_event(opaque, ev);
}

static void t_cmpl(void *ctx, const kc_rt_cmpl_t *c)
{
    if (c->type == KC_RT_CMPL_PARKED) {
        PARKED_SEEN[c->part->pub.partition]++;
        if (RB)
            kc_rt_rebal_parked(RB, c->part);
    } else if (c->type == KC_RT_CMPL_REBALANCED) {
        REBALANCED++;
        if (RB)
            kc_rt_rebal_done(RB, c->offset);
    }
    h_cmpl(ctx, c);
}

static bool t_wait(bool (*cond)(harness_t *), int timeout_ms)
{
    return h_wait_fn(H, t_cmpl, cond, timeout_ms);
}

static kc_rt_opts_t t_opts(unsigned workers)
{
    kc_rt_opts_t o = h_opts(H, workers);
    o.cbs.size = sizeof o.cbs;
    o.cbs.on_assign = t_on_assign;
    o.cbs.on_records = t_on_records;
    o.cbs.on_revoke = t_on_revoke;
    o.cbs.on_lost = t_on_lost;
    o.cbs.on_rebalance = t_on_rebalance;
    o.cbs.on_event = t_on_event;
    return o;
}

/* np partitions "t"[0..np), added parked (or not) */
static void t_start(const kc_rt_opts_t *o, int np, bool park)
{
    kc_error_t e;
    assert_int_equal(kc_rt_new(o, &H->rt, &e), KC_OK);
    H->np = np;
    for (int i = 0; i < np; i++) {
        H->p[i] = kc_rt_part_add_held(H->rt, "t", i, 0, false, park);
        assert_non_null(H->p[i]);
    }
}

static int setup(void **state)
{
    (void)state;
    H = calloc(1, sizeof *H);
    memset(LOG, 0, sizeof LOG);
    atomic_store(&NLOG, 0);
    atomic_store(&REB_IN, 0);
    atomic_store(&REB_OVERLAP, 0);
    atomic_store(&REB_SLEEP_US, 0);
    memset(PARKED_SEEN, 0, sizeof PARKED_SEEN);
    REBALANCED = 0;
    RB = NULL;
    POLL_MSG[0] = 0;
    return H ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (H->rt) {
        kc_rt_shutdown(H->rt, false, 5000);
        kc_rt_free(H->rt);
    }
    kc_rt_rebal_free(RB);
    RB = NULL;
    free(H);
    return 0;
}

/* Index of the first log entry matching (what, partition), -1 if none. */
static int first(char what, int partition)
{
    int n = atomic_load(&NLOG);
    for (int i = 0; i < n && i < LOGN; i++)
        if (LOG[i].what == what && (what == 'R' || LOG[i].partition == partition))
            return i;
    return -1;
}

static int last(char what, int partition)
{
    int n = atomic_load(&NLOG), at = -1;
    for (int i = 0; i < n && i < LOGN; i++)
        if (LOG[i].what == what && LOG[i].partition == partition)
            at = i;
    return at;
}

static bool parked0(harness_t *h)
{
    (void)h;
    return PARKED_SEEN[0] >= 1;
}

static bool p0_all(harness_t *h)
{
    return atomic_load(&h->hp[0].records) >= 20;
}

/* Added parked: on_assign runs, PARKED comes, and no record is delivered until the unpark. */
static void parks_after_on_assign(void **state)
{
    (void)state;
    kc_rt_opts_t o = t_opts(2);
    t_start(&o, 1, true);
    assert_true(h_push(H, 0, 10, 4));
    assert_true(t_wait(parked0, 5000));
    assert_int_equal(atomic_load(&H->hp[0].assigned), 1);
    assert_true(h_push(H, 0, 10, 4)); /* a push's kick only marks it: still parked */
    usleep(50000);                    /* room for a (wrong) delivery */
    kc_rt_drain_completions(H->rt, t_cmpl, H);
    assert_int_equal(atomic_load(&H->hp[0].records), 0);
    assert_int_equal(PARKED_SEEN[0], 1);
    kc_rt_part_unpark(H->p[0]);
    assert_true(t_wait(p0_all, 5000));
    assert_int_equal(atomic_load(&H->violations), 0);
}

static bool inflight0(harness_t *h)
{
    return atomic_load(&h->hp[0].in_cb) == 1;
}

static bool revoked0(harness_t *h)
{
    return h->revoke_done[0] == 1;
}

/* Parked before a revoke: the record callback in flight finishes before PARKED, on_revoke waits
 * for the unpark, and nothing more is delivered after the park. */
static void parks_before_on_revoke(void **state)
{
    (void)state;
    kc_rt_opts_t o = t_opts(2);
    t_start(&o, 1, false);
    atomic_store(&H->hp[0].sleep_us, 200000);
    assert_true(h_push(H, 0, 10, 4));
    assert_true(h_push(H, 0, 10, 4));
    assert_true(t_wait(inflight0, 5000));
    kc_rt_part_park(H->p[0]);
    assert_true(kc_rt_part_revoke(H->p[0], false)); /* the callback was in flight */
    assert_true(t_wait(parked0, 5000));
    assert_int_equal(atomic_load(&H->hp[0].in_cb), 0); /* PARKED: it returned */
    assert_int_equal(atomic_load(&H->hp[0].batches), 1);
    usleep(50000);
    kc_rt_drain_completions(H->rt, t_cmpl, H);
    assert_int_equal(atomic_load(&H->hp[0].revoked), 0);
    assert_int_equal(H->revoke_done[0], 0);
    assert_int_equal(atomic_load(&H->hp[0].batches), 1); /* the queued batch was dropped */
    kc_rt_part_unpark(H->p[0]);
    assert_true(t_wait(revoked0, 5000));
    assert_int_equal(atomic_load(&H->hp[0].revoked), 1);
    assert_int_equal(atomic_load(&H->hp[0].revoke_saw_inflight), 0);
    assert_int_equal(kc_rt_buffered_bytes(H->rt), 0);
}

/* The unpark overtakes the PARKED completion: the worker parked (its PARKED is in the ring, not
 * drained) when the network thread unparks, so unpark finds nothing to re-queue; the drain must
 * hand SCHED back. Without that the partition stays parked for ever. Then the other order, many
 * times: unpark at once after the add, racing the worker. */
static void unpark_before_parked_drained(void **state)
{
    (void)state;
    kc_rt_opts_t o = t_opts(2);
    t_start(&o, 1, true);
    assert_true(h_push(H, 0, 20, 4));
    usleep(100000); /* the worker ran on_assign and posted PARKED; nobody drained it */
    assert_int_equal(atomic_load(&H->hp[0].assigned), 1);
    kc_rt_part_unpark(H->p[0]);
    assert_true(t_wait(p0_all, 5000));
    assert_int_equal(PARKED_SEEN[0], 0); /* not passed on: it was not parked any more */

    for (int round = 0; round < 300; round++) {
        kc_rt_part_t *p = kc_rt_part_add_held(H->rt, "t", 1, 0, false, true);
        assert_non_null(p);
        H->p[1] = p;
        H->next_push[1] = 0;
        H->hp[1].expect = 0;
        atomic_store(&H->hp[1].records, 0);
        assert_true(h_push(H, 1, 3, 4));
        if (round % 3 == 1)
            usleep((useconds_t)(round % 7) * 50);
        kc_rt_part_unpark(p);
        int64_t end = h_now_ns() + 5000000000LL;
        while (atomic_load(&H->hp[1].records) < 3 && h_now_ns() < end) {
            kc_rt_drain_completions(H->rt, t_cmpl, H);
            usleep(100);
        }
        assert_int_equal(atomic_load(&H->hp[1].records), 3);
        int done = H->revoke_done[1];
        kc_rt_part_revoke(p, false);
        end = h_now_ns() + 5000000000LL;
        while (H->revoke_done[1] == done && h_now_ns() < end) {
            kc_rt_drain_completions(H->rt, t_cmpl, H);
            usleep(100);
        }
        assert_int_equal(H->revoke_done[1], done + 1);
        kc_rt_part_free(p);
    }
    assert_int_equal(atomic_load(&H->violations), 0);
}

static bool rebalanced(int n)
{
    return REBALANCED >= n;
}

static bool one_rebalance(harness_t *h)
{
    (void)h;
    return rebalanced(1);
}

static bool two_rebalances(harness_t *h)
{
    (void)h;
    return rebalanced(2);
}

static bool three_rebalances(harness_t *h)
{
    (void)h;
    return rebalanced(3);
}

static bool records_0_3(harness_t *h)
{
    for (int i = 0; i < 4; i++)
        if (atomic_load(&h->hp[i].records) < 10)
            return false;
    return true;
}

static bool revoked_0_1(harness_t *h)
{
    return h->revoke_done[0] == 1 && h->revoke_done[1] == 1;
}

/* Steps over the dispatcher: the assignment's callback after every on_assign and before any
 * record; a revocation's after the last record callback and before on_revoke; a partition that
 * two pending steps name stays parked until both ran, and the steps run in order. */
static void rebalance_steps(void **state)
{
    (void)state;
    kc_rt_opts_t o = t_opts(3);
    t_start(&o, 4, true);
    RB = kc_rt_rebal_new(H->rt);
    assert_non_null(RB);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(kc_rt_rebal_add(RB, KC_REBALANCE_ASSIGN, H->p[i]), KC_OK);
        assert_true(h_push(H, i, 10, 4));
    }
    kc_rt_rebal_flush(RB);
    assert_true(t_wait(one_rebalance, 5000));
    assert_true(t_wait(records_0_3, 5000));
    int r = first('R', -1);
    assert_true(r >= 0);
    assert_int_equal(LOG[r].kind, KC_REBALANCE_ASSIGN);
    assert_int_equal(LOG[r].set, 0xf);
    for (int i = 0; i < 4; i++) {
        assert_true(first('A', i) < r);
        assert_true(first('D', i) > r);
    }

    /* Revoke 0 and 1 with a record callback of 0 in flight. */
    atomic_store(&H->hp[0].sleep_us, 100000);
    assert_true(h_push(H, 0, 10, 4));
    assert_true(t_wait(inflight0, 5000));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(kc_rt_rebal_add(RB, KC_REBALANCE_REVOKE, H->p[i]), KC_OK);
        kc_rt_part_revoke(H->p[i], false);
    }
    kc_rt_rebal_flush(RB);
    assert_true(t_wait(two_rebalances, 5000));
    assert_true(t_wait(revoked_0_1, 5000));
    int n = atomic_load(&NLOG);
    r = -1;
    for (int i = 0; i < n; i++)
        if (LOG[i].what == 'R' && LOG[i].kind == KC_REBALANCE_REVOKE)
            r = i;
    assert_true(r >= 0);
    assert_int_equal(LOG[r].set, 0x3);
    assert_true(last('D', 0) < r); /* the callback in flight ended before it */
    assert_true(first('V', 0) > r && first('V', 1) > r);

    /* Partition 4 assigned, then lost in the same drive pass (one flush), before the
     * assignment's callback ran: ASSIGN {4} then LOST {4}, in the order decided, and its on_lost
     * only after both. */
    atomic_store(&REB_SLEEP_US, 100000);
    H->p[4] = kc_rt_part_add_held(H->rt, "t", 4, 0, false, true);
    H->np = 5;
    assert_int_equal(kc_rt_rebal_add(RB, KC_REBALANCE_ASSIGN, H->p[4]), KC_OK);
    /* its on_assign ran (else it is revoked before it: no on_lost either); its PARKED is not
     * drained yet, so neither step has been posted */
    int64_t until = h_now_ns() + 5000000000LL;
    while (atomic_load(&H->hp[4].assigned) == 0 && h_now_ns() < until)
        usleep(1000);
    assert_int_equal(atomic_load(&H->hp[4].assigned), 1);
    assert_int_equal(kc_rt_rebal_add(RB, KC_REBALANCE_LOST, H->p[4]), KC_OK);
    kc_rt_part_revoke(H->p[4], true);
    kc_rt_rebal_flush(RB);
    assert_int_equal(kc_rt_rebal_pending(RB), 2);
    assert_true(t_wait(three_rebalances, 5000));
    int64_t end = h_now_ns() + 5000000000LL;
    while (H->revoke_done[4] == 0 && h_now_ns() < end) {
        kc_rt_drain_completions(H->rt, t_cmpl, H);
        usleep(1000);
    }
    assert_int_equal(H->revoke_done[4], 1);
    n = atomic_load(&NLOG);
    int ra = -1, rl = -1;
    for (int i = 0; i < n; i++) {
        if (LOG[i].what == 'R' && LOG[i].kind == KC_REBALANCE_ASSIGN && LOG[i].set == 0x10)
            ra = i;
        if (LOG[i].what == 'R' && LOG[i].kind == KC_REBALANCE_LOST && LOG[i].set == 0x10)
            rl = i;
    }
    assert_true(ra >= 0 && rl > ra);
    assert_true(first('L', 4) > rl);
    assert_int_equal(first('D', 4), -1);
    assert_int_equal(kc_rt_rebal_pending(RB), 0);
    assert_int_equal(atomic_load(&REB_OVERLAP), 0);
    assert_int_equal(atomic_load(&H->violations), 0);
}

/* An on_rebalance that runs past max.poll.interval.ms holds the whole rebalance, as a poll()
 * that does not come back would in Java: the watchdog counts it while it runs, raises
 * poll_exceeded, and one KC_EVENT_ERROR names it (after it returned: events run on the same
 * control worker). */
static void rebalance_watchdog(void **state)
{
    (void)state;
    kc_rt_opts_t o = t_opts(2);
    o.max_poll_interval_ms = 20;
    atomic_store(&REB_SLEEP_US, 150000);
    t_start(&o, 1, true);
    RB = kc_rt_rebal_new(H->rt);
    assert_non_null(RB);
    assert_int_equal(kc_rt_rebal_add(RB, KC_REBALANCE_ASSIGN, H->p[0]), KC_OK);
    kc_rt_rebal_flush(RB);
    unsigned max_over = 0;
    int64_t end = h_now_ns() + 5000000000LL;
    while (atomic_load(&H->poll_errors) == 0 && h_now_ns() < end) {
        kc_rt_drain_completions(H->rt, t_cmpl, H);
        unsigned n = kc_rt_watchdog_check(H->rt, h_now_ns());
        max_over = n > max_over ? n : max_over;
        usleep(2000);
    }
    assert_int_equal(max_over, 1);
    assert_true(kc_rt_poll_exceeded(H->rt));
    assert_int_equal(atomic_load(&H->poll_errors), 1);
    assert_non_null(strstr(POLL_MSG, "on_rebalance running for"));
    assert_true(t_wait(one_rebalance, 5000));
    assert_int_equal(atomic_load(&H->poll_errors), 1); /* once per call, not per check */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(parks_after_on_assign, setup, teardown),
        cmocka_unit_test_setup_teardown(parks_before_on_revoke, setup, teardown),
        cmocka_unit_test_setup_teardown(unpark_before_parked_drained, setup, teardown),
        cmocka_unit_test_setup_teardown(rebalance_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(rebalance_watchdog, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
