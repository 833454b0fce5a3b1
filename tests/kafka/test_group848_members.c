/* kc-test-label: threads */
/* KIP-848 members on the library's driver (tests/support/group_harness.h) against a real broker.
 * - The first member's on_revoke is slow (held 1.5 s): the second is never handed a partition the
 *   first still holds (the harness checks every assignment), and they end up with disjoint sets
 *   covering all 3. (An ack sent before the revoke finished makes this fail — checked by
 *   mutation.)
 * - A static member leaves with -2 and keeps its assignment for its successor (same
 *   group.instance.id, new member id); a second live instance with that id is refused
 *   UNRELEASED_INSTANCE_ID — fatal, caller-visible.
 * Needs KC_BOOTSTRAP, KC_TESTKIT and KC_CLUSTER_DIR (tests/run-suite sets them). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group_driver.h"
#include "group_harness.h"
#include "proto/kafka_errors.h"

static bool owns(const kc_gh_view_t *v, void *want)
{
    return v->stable && v->held == *(int *)want;
}

static bool failed(const kc_gh_view_t *v, void *arg)
{
    (void)arg;
    return v->fatal;
}

static void second_member_waits_for_revoke(void **state)
{
    (void)state;
    char group[64];
    snprintf(group, sizeof group, "kc-g848-two-%d", (int)getpid());
    const char *topics[] = {kc_gd_topic};
    kc_gh_t *h = kc_gh_start();
    kc_gh_opts_t oa = {.proto = &kc_g848_proto, .group = group, .revoke_delay_ms = 1500};
    kc_gh_opts_t ob = {.proto = &kc_g848_proto, .group = group};
    kc_gh_member_t *a = kc_gh_join(h, &oa, topics, 1);
    int three = 3;
    assert_true(kc_gh_run_until(a, owns, &three, 30000));
    kc_gh_member_t *b = kc_gh_join(h, &ob, topics, 1);
    int64_t end = kc_gd_now_ms() + 60000, stable_since = -1;
    kc_gh_view_t va = {0}, vb = {0};
    while (kc_gd_now_ms() < end) {
        va = kc_gh_view(a); /* fails the test if an assignment found the other still holding */
        vb = kc_gh_view(b);
        if (va.stable && vb.stable && va.held > 0 && vb.held > 0 && va.held + vb.held == 3) {
            if (stable_since < 0)
                stable_since = kc_gd_now_ms();
            else if (kc_gd_now_ms() - stable_since > 1500)
                break; /* stayed settled for a few beats */
        } else {
            stable_since = -1;
        }
        usleep(20 * 1000);
    }
    assert_true(va.revokes >= 1);
    assert_true(va.stable && vb.stable);
    assert_int_equal(va.held + vb.held, 3); /* disjoint (checked at every assignment), covering */
    fprintf(stderr, "two members: A holds %d (revoked %d time(s), 1.5 s each), B holds %d\n",
            va.held, va.revokes, vb.held);
    assert_true(kc_gh_close(a, 10000));
    assert_true(kc_gh_close(b, 10000));
    kc_gh_stop(h);
}

static void static_member_leaves_with_minus_two(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64];
    snprintf(group, sizeof group, "kc-g848-static-%d", (int)getpid());
    const char *topics[] = {kc_gd_topic};
    int three = 3;
    kc_gh_t *h = kc_gh_start();
    kc_gh_opts_t o = {.proto = &kc_g848_proto, .group = group, .instance = "inst-1"};
    kc_gh_member_t *a = kc_gh_join(h, &o, topics, 1);
    assert_true(kc_gh_run_until(a, owns, &three, 30000));
    kc_gh_view_t va = kc_gh_view(a);
    assert_true(kc_gh_close(a, 10000));
    /* The broker kept the static member (epoch -2 = "coming back"): still listed, assignment
     * intact, not handed to anyone. */
    int fd = kc_gd_coordinator(bootstrap, group);
    int32_t epoch;
    int n_assigned;
    assert_int_equal(kc_gd_describe(fd, group, va.member_id, &epoch, &n_assigned), 1);
    assert_int_equal(epoch, -2);
    assert_int_equal(n_assigned, 3);
    close(fd);
    /* The restart: same instance id, new member id, gets all 3 back. */
    kc_gh_member_t *a2 = kc_gh_join(h, &o, topics, 1);
    assert_true(kc_gh_run_until(a2, owns, &three, 30000));
    kc_gh_view_t v2 = kc_gh_view(a2);
    assert_string_not_equal(v2.member_id, va.member_id);
    /* A second live instance with the same id: UNRELEASED_INSTANCE_ID, fatal, nothing held. */
    kc_gh_opts_t o3 = o;
    o3.expect_error = true;
    kc_gh_member_t *a3 = kc_gh_join(h, &o3, topics, 1);
    assert_true(kc_gh_run_until(a3, failed, NULL, 15000));
    kc_gh_view_t v3 = kc_gh_view(a3);
    assert_int_equal(v3.error.kafka_code, KC_KAFKA_UNRELEASED_INSTANCE_ID);
    assert_int_equal(v3.held, 0);
    assert_true(kc_gh_run_until(a2, owns, &three, 1000)); /* the live one is untouched */
    fprintf(stderr, "static: left with -2, successor got 3 back; duplicate: %s\n", v3.error.msg);
    assert_true(kc_gh_close(a3, 10000));
    assert_true(kc_gh_close(a2, 10000));
    kc_gh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(second_member_waits_for_revoke),
        cmocka_unit_test(static_member_leaves_with_minus_two),
    };
    return cmocka_run_group_tests(tests, kc_gd_create_topic, NULL);
}
