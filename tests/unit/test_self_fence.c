/* engine/group/self_fence: the deadline rule. A member fences itself at the send time of the last
 * answered heartbeat plus ratio * session timeout — never later than the coordinator's earliest
 * expiry — and never when disabled, before any answer, or with no session known. */
#include "kc_test.h"

#include <stdint.h>

#include "group/self_fence.h"

static void fences_at_the_ratio_of_the_session(void **state)
{
    (void)state;
    int64_t next = 0;
    /* answered heartbeat sent at 1000, session 45000, ratio 0.8: fence at 1000 + 36000 */
    assert_int_equal(kc_self_fence_at(1000, 45000, 0.8), 37000);
    assert_false(kc_self_fence_due(1000, 45000, 0.8, 36999, &next));
    assert_int_equal(next, 37000);
    assert_true(kc_self_fence_due(1000, 45000, 0.8, 37000, &next));
    assert_int_equal(next, INT64_MAX); /* fenced: only an answer changes the verdict */
    assert_true(kc_self_fence_due(1000, 45000, 0.8, 90000, NULL));
    assert_int_equal(kc_self_fence_expiry(1000, 45000), 46000);
}

static void a_newer_answer_moves_the_deadline(void **state)
{
    (void)state;
    int64_t next;
    assert_true(kc_self_fence_due(1000, 10000, 0.5, 7000, &next));
    /* the coordinator answered a heartbeat sent at 6500: not fenced any more, next at 11500 */
    assert_false(kc_self_fence_due(6500, 10000, 0.5, 7000, &next));
    assert_int_equal(next, 11500);
}

static void never_before_the_expiry(void **state)
{
    (void)state;
    /* rounding goes down, and a ratio at or above 1 is clamped to the expiry itself */
    for (int64_t s = 1; s < 5000; s += 7)
        for (double r = 0.05; r < 1.5; r += 0.05)
            assert_true(kc_self_fence_at(100, s, r) <= kc_self_fence_expiry(100, s));
    assert_int_equal(kc_self_fence_at(0, 999, 0.999), 998);
    assert_int_equal(kc_self_fence_at(0, 1000, 1.0), 1000);
}

static void disabled_unknown_or_unanswered(void **state)
{
    (void)state;
    int64_t next = 0;
    assert_false(kc_self_fence_due(1000, 45000, 0.0, INT64_MAX / 2, &next)); /* ratio 0: off */
    assert_int_equal(next, INT64_MAX);
    assert_false(kc_self_fence_due(1000, 45000, -1.0, INT64_MAX / 2, &next));
    assert_false(kc_self_fence_due(-1, 45000, 0.8, INT64_MAX / 2, &next)); /* never answered */
    assert_int_equal(next, INT64_MAX);
    assert_false(kc_self_fence_due(1000, 0, 0.8, INT64_MAX / 2, &next)); /* session unknown */
    assert_int_equal(kc_self_fence_expiry(-1, 45000), INT64_MAX);
}

/* A heartbeat interval close to the session raises the ratio: the fence never comes before two
 * intervals, nor before halfway between the next heartbeat and the session's end. */
static void the_interval_raises_the_ratio(void **state)
{
    (void)state;
    assert_true(kc_self_fence_ratio(0.8, 6000, 5000) > 0.9166 &&
                kc_self_fence_ratio(0.8, 6000, 5000) < 0.9167); /* 5500 / 6000 */
    assert_true(kc_self_fence_ratio(0.8, 45000, 5000) == 0.8);  /* floor 25000 < 36000 */
    assert_true(kc_self_fence_ratio(0.8, 6000, 0) == 0.8);      /* interval unknown */
    assert_true(kc_self_fence_ratio(0, 6000, 5000) == 0);       /* disabled stays disabled */
    assert_true(kc_self_fence_ratio(0.8, 6000, 6000) == 0.8);   /* not below the session */
    assert_true(kc_self_fence_ratio(0.05, 10000, 500) == 0.1);  /* two intervals: 1000 */
    assert_true(kc_self_fence_ratio(0.2, 10000, 500) == 0.2);   /* already past them */
    int64_t next;
    double r = kc_self_fence_ratio(0.8, 6000, 5000);
    assert_false(kc_self_fence_due(0, 6000, r, 5400, &next)); /* 0.8 alone: fenced at 4800 */
    assert_int_equal(next, 5500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fences_at_the_ratio_of_the_session),
        cmocka_unit_test(a_newer_answer_moves_the_deadline),
        cmocka_unit_test(never_before_the_expiry),
        cmocka_unit_test(disabled_unknown_or_unanswered),
        cmocka_unit_test(the_interval_raises_the_ratio),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
