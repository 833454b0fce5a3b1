/* kc-test-label: threads */
/* The self-fence in the dispatcher (dispatch.h, "The self-fence"): kc_rt_part_fence stops record
 * callbacks from starting at once (a running one finishes), keeps every buffered batch, and
 * kc_rt_part_unfence resumes at the first record not delivered — nothing skipped, nothing
 * delivered twice. It is a reason apart from kc_pause's: kc_resume does not lift it, and lifting
 * it does not undo a pause. */
#include "rt_harness.h"

static harness_t *H;

H_SETUP_TEARDOWN(H)

static bool p0_in_cb(harness_t *h)
{
    return atomic_load(&h->hp[0].in_cb) == 1;
}

static bool p0_idle(harness_t *h)
{
    return atomic_load(&h->hp[0].in_cb) == 0;
}

static bool p0_all(harness_t *h)
{
    return atomic_load(&h->hp[0].records) == 200;
}

static bool p1_all(harness_t *h)
{
    return atomic_load(&h->hp[1].records) == 200;
}

static bool p0_done_lost(harness_t *h)
{
    return h->revoke_done[0] >= 1;
}

static bool never(harness_t *h)
{
    (void)h;
    return false;
}

/* No callback of partition 0 starts within ms (completions drained meanwhile). */
static void assert_still(long records, int ms)
{
    (void)h_wait(H, never, ms);
    assert_int_equal(atomic_load(&H->hp[0].records), records);
    assert_int_equal(atomic_load(&H->hp[0].in_cb), 0);
}

static void fence_with_callback_in_flight_resumes_exactly(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 2);
    o.max_records = 10;
    h_start(H, &o, 2);
    atomic_store(&H->hp[0].sleep_us, 20000);
    for (int i = 0; i < 20; i++) {
        assert_true(h_push(H, 0, 10, 50));
        assert_true(h_push(H, 1, 10, 50));
    }
    assert_true(h_wait(H, p0_in_cb, 5000));
    assert_true(kc_rt_part_fence(H->p[0])); /* the running callback is reported */
    assert_true(kc_rt_part_fenced(H->p[0]));
    assert_true(h_wait(H, p0_idle, 5000));
    long done = atomic_load(&H->hp[0].records);
    assert_true(done > 0 && done < 200);
    assert_still(done, 150);
    /* the fence is the partition's alone; others go on */
    assert_true(h_wait(H, p1_all, 5000));
    assert_false(kc_rt_part_fence(H->p[0])); /* idempotent; nothing in flight now */
    kc_rt_part_unfence(H->p[0]);
    assert_false(kc_rt_part_fenced(H->p[0]));
    atomic_store(&H->hp[0].sleep_us, 0);
    assert_true(h_wait(H, p0_all, 5000));
    /* every record in offset order exactly once (the harness counts gaps and repeats) */
    assert_int_equal(atomic_load(&H->violations), 0);
    assert_int_equal(atomic_load(&H->hp[0].records), 200);
    assert_int_equal(atomic_load(&H->hp[0].revoked) + atomic_load(&H->hp[0].lost), 0);
}

static void kc_resume_does_not_lift_a_fence(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 2);
    h_start(H, &o, 1);
    assert_false(kc_rt_part_fence(H->p[0]));
    for (int i = 0; i < 20; i++)
        assert_true(h_push(H, 0, 10, 50));
    assert_still(0, 100);
    kc_rt_part_pause(H->p[0]); /* the application pauses and resumes meanwhile */
    kc_rt_part_resume(H->p[0]);
    assert_still(0, 100);
    kc_rt_part_unfence(H->p[0]);
    assert_true(h_wait(H, p0_all, 5000));
    assert_int_equal(atomic_load(&H->violations), 0);
}

static void unfence_does_not_undo_kc_pause(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 2);
    h_start(H, &o, 1);
    kc_rt_part_pause(H->p[0]); /* the application's pause first, then the fence comes and goes */
    (void)kc_rt_part_fence(H->p[0]);
    for (int i = 0; i < 20; i++)
        assert_true(h_push(H, 0, 10, 50));
    kc_rt_part_unfence(H->p[0]);
    assert_still(0, 150);
    kc_rt_part_resume(H->p[0]);
    assert_true(h_wait(H, p0_all, 5000));
    assert_int_equal(atomic_load(&H->violations), 0);
}

static bool p0_paused_cmpl(harness_t *h)
{
    return h->paused_cmpl >= 1;
}

static void unfence_does_not_undo_kc_cb_pause(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 2);
    o.max_records = 10;
    h_start(H, &o, 1);
    atomic_store(&H->hp[0].script, KC_CB_PAUSE + 1); /* the first callback pauses its partition */
    for (int i = 0; i < 20; i++)
        assert_true(h_push(H, 0, 10, 50));
    assert_true(h_wait(H, p0_paused_cmpl, 5000));
    long done = atomic_load(&H->hp[0].records);
    assert_int_equal(done, 10);
    (void)kc_rt_part_fence(H->p[0]);
    kc_rt_part_unfence(H->p[0]);
    assert_still(done, 150);
    kc_rt_part_resume(H->p[0]);
    assert_true(h_wait(H, p0_all, 5000));
    assert_int_equal(atomic_load(&H->violations), 0);
}

static void revoke_while_fenced_runs_on_lost(void **state)
{
    (void)state;
    kc_rt_opts_t o = h_opts(H, 2);
    h_start(H, &o, 1);
    (void)kc_rt_part_fence(H->p[0]);
    for (int i = 0; i < 5; i++)
        assert_true(h_push(H, 0, 10, 50));
    assert_still(0, 50);
    (void)kc_rt_part_revoke(H->p[0], true); /* the coordinator fenced us meanwhile */
    atomic_store(&H->revoke_returned[0], 1);
    assert_true(h_wait(H, p0_done_lost, 5000));
    assert_int_equal(atomic_load(&H->hp[0].lost), 1);
    assert_int_equal(atomic_load(&H->hp[0].records), 0);
    assert_int_equal(atomic_load(&H->hp[0].cb_after_revoke), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(fence_with_callback_in_flight_resumes_exactly, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(kc_resume_does_not_lift_a_fence, setup, teardown),
        cmocka_unit_test_setup_teardown(unfence_does_not_undo_kc_pause, setup, teardown),
        cmocka_unit_test_setup_teardown(unfence_does_not_undo_kc_cb_pause, setup, teardown),
        cmocka_unit_test_setup_teardown(revoke_while_fenced_runs_on_lost, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
