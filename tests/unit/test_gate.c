/* kc-test-label: threads */
/* The rebalance gate (REVOKING -> on_revoke after in-flight -> REVOKE_DONE once) and shutdown
 * with callbacks in flight. */
#include "rt_harness.h"

static harness_t *H;

H_SETUP_TEARDOWN(H)

static bool p0_in_cb(harness_t *h)
{
    return atomic_load(&h->hp[0].in_cb) == 1;
}

static bool p0_done(harness_t *h)
{
    return h->revoke_done[0] >= 1;
}

/* Revoke while a callback of the partition runs, with 19 batches still queued. */
static void revoke_with_callback_in_flight(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 4);
    h_start(H, &o, 2);
    atomic_store(&H->hp[0].sleep_us, 30000);
    for (int i = 0; i < 20; i++) {
        assert_true(h_push(H, 0, 10, 100));
        assert_true(h_push(H, 1, 10, 100));
    }
    assert_true(h_wait(H, p0_in_cb, 5000));
    bool inflight = kc_rt_part_revoke(H->p[0], false);
    atomic_store(&H->revoke_returned[0], 1);
    assert_true(inflight);
    assert_int_equal(kc_rt_part_push(H->p[0], &(kc_rt_bref_t){0}), KC_ERR_STATE);
    assert_false(kc_rt_may_fetch(H->rt, H->p[0]));
    assert_true(h_wait(H, p0_done, 5000));
    /* on_revoke ran once, after the in-flight callback finished; no callback started after
     * revoke returned; the other partition was unaffected. */
    assert_int_equal(atomic_load(&H->hp[0].revoked), 1);
    assert_int_equal(atomic_load(&H->hp[0].revoke_saw_inflight), 0);
    assert_int_equal(atomic_load(&H->hp[0].cb_after_revoke), 0);
    assert_int_equal(atomic_load(&H->hp[0].batches), 1);
    assert_int_equal(atomic_load(&H->hp[0].in_cb), 0);
    assert_int_equal(atomic_load(&H->hp[0].lost), 0);
    /* queued batches were dropped and their bytes released */
    assert_int_equal(atomic_load(&H->p[0]->buffered), 0);
    usleep(20000);
    kc_rt_drain_completions(H->rt, h_cmpl, H);
    assert_int_equal(H->revoke_done[0], 1); /* exactly once */
    assert_int_equal(H->revoke_done[1], 0);
    kc_rt_part_free(H->p[0]);
    H->p[0] = NULL;
    int64_t t_end = h_now_ns() + 5000000000LL;
    while (atomic_load(&H->hp[1].records) < 200 && h_now_ns() < t_end)
        usleep(1000);
    assert_int_equal(atomic_load(&H->hp[1].records), 200);
    assert_int_equal(atomic_load(&H->violations), 0);
}

/* Revoke an idle partition (nothing in flight), and a lost one: on_lost instead of on_revoke. */
static void revoke_idle_and_lost(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 2);
    h_start(H, &o, 2);
    assert_true(h_push(H, 0, 3, 1));
    assert_true(h_push(H, 1, 3, 1));
    int64_t t_end = h_now_ns() + 5000000000LL;
    while ((atomic_load(&H->hp[0].records) < 3 || atomic_load(&H->hp[1].records) < 3) &&
           h_now_ns() < t_end)
        usleep(1000);
    assert_false(kc_rt_part_revoke(H->p[0], false));
    assert_false(kc_rt_part_revoke(H->p[1], true));
    int64_t end = h_now_ns() + 5000000000LL;
    while ((H->revoke_done[0] < 1 || H->revoke_done[1] < 1) && h_now_ns() < end) {
        kc_rt_drain_completions(H->rt, h_cmpl, H);
        usleep(1000);
    }
    assert_int_equal(H->revoke_done[0], 1);
    assert_int_equal(H->revoke_done[1], 1);
    assert_int_equal(atomic_load(&H->hp[0].revoked), 1);
    assert_int_equal(atomic_load(&H->hp[0].lost), 0);
    assert_int_equal(atomic_load(&H->hp[1].revoked), 0);
    assert_int_equal(atomic_load(&H->hp[1].lost), 1);
    assert_int_equal(kc_rt_part_committable(H->p[0]), 3);
}

static bool any_in_cb(harness_t *h)
{
    for (int i = 0; i < h->np; i++)
        if (atomic_load(&h->hp[i].in_cb))
            return true;
    return false;
}

/* Shutdown (drop) while callbacks sleep: in-flight ones finish, queued batches are released
 * (ASan's leak check covers the buffers), nothing new starts. */
static void shutdown_with_callbacks_in_flight(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 4);
    h_start(H, &o, 8);
    for (int i = 0; i < 8; i++) {
        atomic_store(&H->hp[i].sleep_us, 80000);
        for (int j = 0; j < 10; j++)
            assert_true(h_push(H, i, 5, 1000));
    }
    assert_true(h_wait(H, any_in_cb, 5000)); /* callbacks are in flight */
    long before = 0;
    int64_t t0 = h_now_ns();
    assert_int_equal(kc_rt_shutdown(H->rt, false, 2000), KC_OK);
    int64_t took_ms = (h_now_ns() - t0) / 1000000;
    for (int i = 0; i < 8; i++) {
        assert_int_equal(atomic_load(&H->hp[i].in_cb), 0);
        before += atomic_load(&H->hp[i].batches);
    }
    assert_true(before >= 1 && before <= 8); /* only what was in flight (4 workers, maybe 2 each) */
    assert_true(took_ms < 1000);
    kc_rt_free(H->rt);
    H->rt = NULL;
}

/* Shutdown whose timeout is shorter than a running callback: KC_ERR_TIMEOUT, and kc_rt_free
 * still waits for the callback instead of freeing under it. */
static void shutdown_timeout_then_free_waits(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 2);
    h_start(H, &o, 1);
    atomic_store(&H->hp[0].sleep_us, 300000);
    assert_true(h_push(H, 0, 1, 1));
    assert_true(h_wait(H, p0_in_cb, 5000));
    assert_int_equal(kc_rt_shutdown(H->rt, false, 20), KC_ERR_TIMEOUT);
    assert_int_equal(atomic_load(&H->hp[0].in_cb), 1);
    kc_rt_free(H->rt);
    H->rt = NULL;
    assert_int_equal(atomic_load(&H->hp[0].in_cb), 0);
    assert_int_equal(atomic_load(&H->hp[0].batches), 1);
}

/* Drain mode delivers everything queued before the workers stop. */
static void shutdown_drain_delivers_all(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 3);
    h_start(H, &o, 6);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 20; j++)
            assert_true(h_push(H, i, 10, 10));
    assert_int_equal(kc_rt_shutdown(H->rt, true, 10000), KC_OK);
    for (int i = 0; i < 6; i++)
        assert_int_equal(atomic_load(&H->hp[i].records), 200);
    assert_int_equal(atomic_load(&H->violations), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(revoke_with_callback_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(revoke_idle_and_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(shutdown_with_callbacks_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(shutdown_timeout_then_free_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(shutdown_drain_delivers_all, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
