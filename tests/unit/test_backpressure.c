/* kc-test-label: threads */
/*
 * Backpressure: a network side that asks kc_rt_may_fetch before each "fetch" and fetches no more
 * than kc_rt_fetch_budget keeps the buffered bytes under queued.max.bytes while callbacks are
 * slow, each partition near its share, and the hysteresis keeps a partition from flipping in and
 * out of the fetch set on every round.
 */
#include <stdio.h>

#include "rt_harness.h"

#define NP   4
#define CAP  (1 << 20)
#define VLEN 4000 /* 4 records of ~4 KiB: a ~16 KiB batch */

static void cap_respected_while_callbacks_are_slow(void **state)
{
    (void)state;
    harness_t *h = calloc(1, sizeof *h);
    assert_non_null(h);
    kc_rt_opts_t o = h_opts(h, 2);
    o.queued_max_bytes = CAP;
    o.ring_slots = 1024; /* the ring must not be what limits: the byte cap must */
    h_start(h, &o, NP);
    for (int i = 0; i < NP; i++)
        atomic_store(&h->hp[i].sleep_us, 3000);
    int64_t share = CAP / NP, max_total = 0, max_part = 0, batch = 4 * (12 + VLEN);
    int pushes = 0, stops = 0;
    bool was[NP];
    for (int i = 0; i < NP; i++)
        was[i] = true;
    int64_t end = h_now_ns() + 1500 * 1000000LL;
    while (h_now_ns() < end) {
        for (int i = 0; i < NP; i++) {
            bool may = kc_rt_may_fetch(h->rt, h->p[i]);
            if (was[i] && !may)
                stops++;
            was[i] = may;
            if (may && kc_rt_fetch_budget(h->rt) >= batch && h_push(h, i, 4, VLEN))
                pushes++;
            int64_t t = kc_rt_buffered_bytes(h->rt), pb = atomic_load(&h->p[i]->buffered);
            max_total = t > max_total ? t : max_total;
            max_part = pb > max_part ? pb : max_part;
        }
        kc_rt_drain_completions(h->rt, h_cmpl, h);
        usleep(200);
    }
    long delivered = 0;
    for (int i = 0; i < NP; i++)
        delivered += atomic_load(&h->hp[i].records);
    printf("backpressure: cap %d, max buffered %lld, max per partition %lld (share %lld), "
           "%d pushes, %d stops, %d DRAINED wakes, %ld records delivered\n",
           CAP, (long long)max_total, (long long)max_part, (long long)share, pushes, stops,
           h->drained_cmpl, delivered);
    assert_true(max_total <= CAP);
    assert_true(max_part <= share + batch); /* stop at the share, overshoot by one fetch at most */
    assert_true(max_total >= CAP / 2);      /* the cap, not something else, was the limit */
    assert_true(delivered > 100);           /* and work kept flowing */
    /* hysteresis: between two stops a partition drains to half its share (~8 batches here),
     * so stops are far fewer than pushes; without it a stop would follow almost every push */
    assert_true(stops > 0);
    assert_true(stops * 4 <= pushes);
    assert_true(h->drained_cmpl > 0);
    assert_int_equal(atomic_load(&h->violations), 0);
    kc_rt_shutdown(h->rt, false, 5000);
    kc_rt_free(h->rt);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cap_respected_while_callbacks_are_slow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
