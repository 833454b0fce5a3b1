/* kc-test-label: threads */
/* The dispatcher: ordering, exactly-once, per-partition serialisation, the callback contract,
 * decode errors, committable offsets, events and the watchdog. */
#include <stdio.h>
#include <string.h>

#include "rt_harness.h"

static harness_t *H;
static int64_t TOTAL;

static bool all_delivered(harness_t *h)
{
    for (int i = 0; i < h->np; i++)
        if (atomic_load(&h->hp[i].records) < TOTAL)
            return false;
    return true;
}

H_SETUP_TEARDOWN(H)

/* 8 partitions x 300 batches of 10 records on 4 workers, views of at most 4 records: every
 * record in order exactly once, no two callbacks of one partition at once, committable at end. */
static void ordering_exactly_once(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 4);
    o.max_records = 4;
    o.quantum = 2;
    h_start(H, &o, 8);
    TOTAL = 3000;
    int64_t end = h_now_ns() + 30LL * 1000000000;
    for (;;) {
        bool more = false;
        for (int i = 0; i < H->np; i++)
            if (H->next_push[i] < TOTAL) {
                more = true;
                h_push(H, i, 10, 8);
            }
        kc_rt_drain_completions(H->rt, h_cmpl, H);
        if (!more || h_now_ns() > end)
            break;
    }
    assert_true(h_wait(H, all_delivered, 20000));
    assert_int_equal(atomic_load(&H->violations), 0);
    for (int i = 0; i < H->np; i++) {
        assert_int_equal(atomic_load(&H->hp[i].records), TOTAL);
        assert_int_equal(H->hp[i].expect, TOTAL);
        assert_int_equal(atomic_load(&H->hp[i].assigned), 1);
        assert_int_equal(kc_rt_part_committable(H->p[i]), TOTAL);
        /* 10-record batches in views of 4: 3 callbacks per batch */
        assert_int_equal(atomic_load(&H->hp[i].batches), TOTAL / 10 * 3);
    }
    assert_int_equal(kc_rt_buffered_bytes(H->rt), 0);

    /* stats: the workers' counters add up to what the callbacks saw (+8 on_assign calls) */
    kc_json_t w;
    kc_json_init(&w, 0);
    kc_rt_stats_workers(H->rt, &w);
    char *js = kc_json_take(&w);
    assert_non_null(js);
    unsigned long long cbs = 0, recs = 0, c, r;
    const char *q = js;
    while ((q = strstr(q, "\"callbacks\":"))) {
        assert_int_equal(sscanf(q, "\"callbacks\":%llu,\"records\":%llu", &c, &r), 2);
        cbs += c;
        recs += r;
        q++;
    }
    assert_int_equal(recs, 8 * TOTAL);
    assert_int_equal(cbs, 8 * (TOTAL / 10 * 3) + 8);
    assert_int_equal(js[0], '[');
    free(js);
    for (int i = 0; i < H->np; i++)
        assert_true(atomic_load(&H->p[i]->last_worker) >= 0);
}

static bool p0_has(harness_t *h)
{
    return atomic_load(&h->hp[0].records) >= TOTAL;
}

static bool paused1(harness_t *h)
{
    return h->paused_cmpl >= 1;
}

static bool stopped1(harness_t *h)
{
    return h->stopped_cmpl >= 1 && atomic_load(&h->events) >= 1;
}

/* RETRY redelivers the same records; PAUSE advances and stops delivery until resume; STOP does
 * not advance and stops. */
static void callback_contract(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 2);
    h_start(H, &o, 1);
    atomic_store(&H->hp[0].script, KC_CB_RETRY + 1);
    h_push(H, 0, 5, 1);
    TOTAL = 5;
    assert_true(h_wait(H, p0_has, 5000));
    assert_int_equal(atomic_load(&H->hp[0].batches), 2); /* once retried, once accepted */
    assert_int_equal(kc_rt_part_committable(H->p[0]), 5);

    atomic_store(&H->hp[0].script, KC_CB_PAUSE + 1);
    h_push(H, 0, 5, 1);
    h_push(H, 0, 5, 1);
    TOTAL = 10;
    assert_true(h_wait(H, p0_has, 5000));
    assert_true(h_wait(H, paused1, 5000));
    usleep(50000); /* a chance for a (wrong) delivery of the second batch */
    kc_rt_drain_completions(H->rt, h_cmpl, H);
    assert_int_equal(H->paused_cmpl, 1);
    assert_int_equal(atomic_load(&H->hp[0].records), 10); /* paused: the second batch waits */
    assert_int_equal(kc_rt_part_committable(H->p[0]), 10);
    assert_false(kc_rt_may_fetch(H->rt, H->p[0]));
    kc_rt_part_resume(H->p[0]);
    TOTAL = 15;
    assert_true(h_wait(H, p0_has, 5000));
    assert_int_equal(kc_rt_part_committable(H->p[0]), 15);

    atomic_store(&H->hp[0].script, KC_CB_STOP + 1);
    h_push(H, 0, 5, 1);
    assert_true(h_wait(H, stopped1, 5000));
    assert_int_equal(H->stopped_cmpl, 1);
    assert_int_equal(atomic_load(&H->events), 1);          /* STOP is reported through on_event */
    assert_int_equal(kc_rt_part_committable(H->p[0]), 15); /* not advanced */
    kc_rt_part_resume(H->p[0]);                            /* redelivered after resume */
    TOTAL = 20;
    assert_true(h_wait(H, p0_has, 5000));
    assert_int_equal(kc_rt_part_committable(H->p[0]), 20);
    assert_int_equal(atomic_load(&H->violations), 0);
}

/* A batch that fails to decode is skipped and reported; a batch whose header says it ends past
 * its last record (compaction) moves the committable offset to its end. */
static void decode_error_and_compaction(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 2);
    h_start(H, &o, 1);
    kc_rt_bref_t b = fake_batch(0, 5, 1);
    b.last_offset = 9; /* records 0..4, batch covers 0..9 */
    assert_int_equal(kc_rt_part_push(H->p[0], &b), KC_OK);
    b = fake_corrupt_batch(10, 5);
    assert_int_equal(kc_rt_part_push(H->p[0], &b), KC_OK);
    b = fake_batch(15, 5, 1);
    assert_int_equal(kc_rt_part_push(H->p[0], &b), KC_OK);
    TOTAL = 10;
    /* expectation inside the callback is contiguous offsets; the gaps are deliberate here, so
     * check the delivered count and the final offsets instead */
    bool ok = false;
    for (int i = 0; i < 2500 && !ok; i++) {
        kc_rt_drain_completions(H->rt, h_cmpl, H);
        ok = kc_rt_part_committable(H->p[0]) == 20;
        usleep(2000);
    }
    kc_rt_drain_completions(H->rt, h_cmpl, H);
    assert_true(ok);
    assert_int_equal(atomic_load(&H->hp[0].records), 10);
    assert_int_equal(H->error_cmpl, 1);
    int64_t t_end = h_now_ns() + 2000000000LL;
    while (atomic_load(&H->events) < 1 && h_now_ns() < t_end)
        usleep(1000);
    assert_int_equal(atomic_load(&H->events), 1);     /* and as an error event */
    assert_int_equal(atomic_load(&H->violations), 1); /* exactly the one gap 4 -> 15 */
}

/* Events from two threads: on_event never overlaps; the watchdog reports a long callback once. */
static void *post_events(void *arg)
{
    harness_t *h = arg;
    for (int i = 0; i < 100; i++) {
        kc_error_t e;
        kc_fail(&e, KC_ERR_TRANSPORT, "event %d", i);
        kc_event_t ev = {.type = KC_EVENT_ERROR, .error = &e};
        while (kc_rt_post_event(h->rt, &ev) == KC_ERR_QUEUE_FULL)
            usleep(100);
    }
    return NULL;
}

static bool events_200(harness_t *h)
{
    return atomic_load(&h->events) >= 200;
}

static bool poll_reported(harness_t *h)
{
    return atomic_load(&h->poll_errors) >= 1 && atomic_load(&h->hp[0].records) >= 1;
}

static void events_and_watchdog(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 3);
    o.max_poll_interval_ms = 20;
    h_start(H, &o, 1);
    pthread_t a, b;
    pthread_create(&a, NULL, post_events, H);
    pthread_create(&b, NULL, post_events, H);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    assert_true(h_wait(H, events_200, 5000));
    assert_int_equal(atomic_load(&H->event_overlap), 0);

    atomic_store(&H->hp[0].sleep_us, 120000);
    h_push(H, 0, 1, 1);
    unsigned max_over = 0;
    int64_t end = h_now_ns() + 3000000000LL;
    while (!poll_reported(H) && h_now_ns() < end) {
        unsigned n = kc_rt_watchdog_check(H->rt, h_now_ns());
        max_over = n > max_over ? n : max_over;
        usleep(5000);
    }
    assert_true(poll_reported(H));
    assert_int_equal(max_over, 1);
    assert_true(kc_rt_poll_exceeded(H->rt));
    usleep(20000);
    assert_int_equal(atomic_load(&H->poll_errors), 1); /* once per callback, not per check */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(ordering_exactly_once, setup, teardown),
        cmocka_unit_test_setup_teardown(callback_contract, setup, teardown),
        cmocka_unit_test_setup_teardown(decode_error_and_compaction, setup, teardown),
        cmocka_unit_test_setup_teardown(events_and_watchdog, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
