/* engine/group/848/member: two KIP-848 members against a real broker (driver:
 * tests/support/group_driver.c).
 * - The first member's on_revoke is slow (held 1.5 s): the second is never handed a partition the
 *   first still holds, and they end up with disjoint sets covering all 3. (An ack sent before the
 *   revoke finished makes this fail — checked by mutation.)
 * - A static member leaves with -2 and keeps its assignment for its successor (same
 *   group.instance.id, new member id); a second live instance with that id is refused
 *   UNRELEASED_INSTANCE_ID — fatal, caller-visible.
 * Needs KC_BOOTSTRAP, KC_TESTKIT and KC_CLUSTER_DIR (tests/run-suite sets them). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker_blocking.h"
#include "group_driver.h"
#include "proto/kafka_errors.h"
#include "proto/proto.h"

static void second_member_waits_for_revoke(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64];
    snprintf(group, sizeof group, "kc-g848-two-%d", (int)getpid());
    kc_gd_member_t a, b;
    kc_gd_member_start(&a, bootstrap, group, NULL);
    int64_t end = kc_gd_now_ms() + 30000;
    while (kc_gd_now_ms() < end && !(kc_gd_settled(&a) && a.gc.rc.owned.n == 3)) {
        kc_gd_member_step(&a, NULL, bootstrap, group, 1500);
        usleep(20 * 1000);
    }
    assert_int_equal(a.gc.rc.owned.n, 3);
    kc_gd_member_start(&b, bootstrap, group, NULL);
    end = kc_gd_now_ms() + 60000;
    int64_t stable_since = -1;
    while (kc_gd_now_ms() < end) {
        kc_gd_member_step(&a, &b, bootstrap, group, 1500);
        kc_gd_member_step(&b, &a, bootstrap, group, 0);
        /* Held sets never overlap, at any instant. */
        for (size_t i = 0; i < a.gc.rc.held.n; i++)
            if (kc_tpset_contains(
                    &b.gc.rc.held,
                    kc_gtopics_find_id(&b.gc.interned, a.gc.rc.held.items[i].topic->id),
                    a.gc.rc.held.items[i].partition))
                fail_msg("partition %d held by both members", a.gc.rc.held.items[i].partition);
        if (kc_gd_settled(&a) && kc_gd_settled(&b) && a.gc.rc.owned.n + b.gc.rc.owned.n == 3) {
            if (stable_since < 0)
                stable_since = kc_gd_now_ms();
            else if (kc_gd_now_ms() - stable_since > 1500)
                break; /* stayed settled for a few beats */
        } else {
            stable_since = -1;
        }
        usleep(20 * 1000);
    }
    assert_true(a.revokes >= 1);
    assert_true(kc_gd_settled(&a) && kc_gd_settled(&b));
    assert_int_equal(a.gc.rc.owned.n + b.gc.rc.owned.n, 3);
    kc_tpset_t u = {0};
    assert_int_equal(kc_tpset_union(&u, &a.gc.rc.owned, &b.gc.rc.owned), KC_OK);
    assert_int_equal(u.n, 3); /* disjoint and covering */
    kc_tpset_free(&u);
    fprintf(stderr, "two members: A owns %zu (revoked %d time(s), 1.5 s each), B owns %zu\n",
            a.gc.rc.owned.n, a.revokes, b.gc.rc.owned.n);
    kc_g848_free(&a.gc);
    kc_g848_free(&b.gc);
    close(a.fd);
    close(b.fd);
}

static void static_member_leaves_with_minus_two(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64];
    snprintf(group, sizeof group, "kc-g848-static-%d", (int)getpid());
    kc_gd_member_t a, a2, a3;
    kc_gd_member_start(&a, bootstrap, group, "inst-1");
    kc_gd_run_until(&a, NULL, bootstrap, group, kc_gd_owns_all, 30000);
    assert_true(kc_gd_owns_all(&a));
    kc_g848_close(&a.gc, kc_gd_now_ms());
    kc_gd_run_until(&a, NULL, bootstrap, group, kc_gd_gone, 10000);
    assert_true(kc_gd_gone(&a));
    /* The broker kept the static member (epoch -2 = "coming back"): still listed, assignment
     * intact, not handed to anyone. */
    int32_t epoch;
    int n_assigned;
    assert_int_equal(kc_gd_describe(a.fd, group, a.gc.member_id, &epoch, &n_assigned), 1);
    assert_int_equal(epoch, -2);
    assert_int_equal(n_assigned, 3);
    /* The restart: same instance id, new member id, gets all 3 back. */
    kc_gd_member_start(&a2, bootstrap, group, "inst-1");
    assert_string_not_equal(a2.gc.member_id, a.gc.member_id);
    kc_gd_run_until(&a2, NULL, bootstrap, group, kc_gd_owns_all, 30000);
    assert_true(kc_gd_owns_all(&a2));
    /* A second live instance with the same id: UNRELEASED_INSTANCE_ID, fatal, on_lost of nothing.
     */
    kc_gd_member_start(&a3, bootstrap, group, "inst-1");
    a3.expect_error = true;
    kc_gd_run_until(&a3, &a2, bootstrap, group, kc_gd_failed, 15000);
    assert_true(kc_gd_failed(&a3));
    kc_gd_member_step(&a3, &a2, bootstrap, group, 0); /* collect the actions the failure queued */
    assert_true(a3.error_fatal);
    assert_int_equal(a3.error.kafka_code, KC_KAFKA_UNRELEASED_INSTANCE_ID);
    assert_true(kc_gd_owns_all(&a2)); /* the live one is untouched */
    fprintf(stderr, "static: left with -2, successor got 3 back; duplicate: %s\n", a3.error.msg);
    kc_g848_free(&a.gc);
    kc_g848_free(&a2.gc);
    kc_g848_free(&a3.gc);
    close(a.fd);
    close(a2.fd);
    close(a3.fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(second_member_waits_for_revoke),
        cmocka_unit_test(static_member_leaves_with_minus_two),
    };
    return cmocka_run_group_tests(tests, kc_gd_create_topic, NULL);
}
