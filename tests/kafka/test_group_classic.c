/* kc-test-label: threads-long */
/* The classic protocol's members on the library's own driver (group/classic/ through
 * engine/group/group.c, tests/support/group_harness.h) against a real broker; the harness's
 * hooks complete revokes and assigns at once and fail the test if a partition is handed to a
 * member while another still holds it.
 * - two kconsume members in one classic group over a 6-partition topic (range, roundrobin,
 *   cooperative-sticky): every partition held by exactly one member (never two holders at once,
 *   also during the cooperative handover), and the broker's DescribeGroups shows the same
 *   assignments;
 * - cooperative scale-out from 2 to 3 members, never two holders of a partition at once;
 * - a subscribed topic grown from 6 to 8 partitions: the leader's metadata refresh sees it, it
 *   rejoins, and the new partitions are assigned exactly once;
 * - a static member closed (no LeaveGroup) and restarted with the same group.instance.id gets
 *   its partitions back while the other member stays in its generation (no rebalance);
 * - a subscription changed while JoinGroup is in flight: the SyncGroup assignment names the old
 *   topic, which is not applied; the member joins again and gets the new topic's partitions;
 * (Mixed groups with Java's console consumer: test_group_classic_java.c.)
 * Needs KC_BOOTSTRAP, KC_TESTKIT and KC_CLUSTER_DIR (tests/run-suite sets them). */
#include "classic_members.h"

static char topic_b[80]; /* stale_assignment_rejoins' second topic, 3 partitions */

static void two_members(kc_assignor_t a, const char *tag)
{
    make_topic(tag);
    char group[96];
    snprintf(group, sizeof group, "g-%s", topic_name);
    kc_gh_t *h = kc_gh_start();
    kc_gh_member_t *ms[2];
    ms[0] = member_start(h, group, a, NULL);
    assert_true(kc_gh_settle(ms, 1, NPART, 1000, 30000)); /* alone: all six */
    ms[1] = member_start(h, group, a, NULL);
    kc_gh_view_t v[2];
    if (!kc_gh_settle(ms, 2, NPART, 2000, 60000)) {
        v[0] = kc_gh_view(ms[0]), v[1] = kc_gh_view(ms[1]);
        fail_msg("two members did not settle (held %d/%d)", v[0].held, v[1].held);
    }
    v[0] = kc_gh_view(ms[0]), v[1] = kc_gh_view(ms[1]);
    assert_true(v[0].held > 0 && v[1].held > 0);
    kc_tpset_t d[2] = {{0}, {0}};
    char ids[2][128];
    assert_true(describe(group, 2, d, ids, 10000));
    assert_exact_cover(d, 2);
    for (size_t i = 0; i < 2; i++) { /* what the broker relays is what each member holds */
        kc_gh_view_t *mine = strcmp(ids[i], v[0].member_id) == 0 ? &v[0] : &v[1];
        assert_string_equal(ids[i], mine->member_id);
        assert_true(holds_exactly(mine, &d[i]));
        kc_tpset_free(&d[i]);
    }
    /* Dynamic members leave on close: LeaveGroup answered, the group empties. */
    assert_true(kc_gh_close(ms[0], 10000));
    assert_true(kc_gh_close(ms[1], 10000));
    kc_gh_stop(h);
}

static void two_members_range(void **state)
{
    (void)state;
    two_members(KC_ASSIGNOR_RANGE, "range");
}

static void two_members_roundrobin(void **state)
{
    (void)state;
    two_members(KC_ASSIGNOR_ROUNDROBIN, "rr");
}

static void two_members_cooperative(void **state)
{
    (void)state;
    two_members(KC_ASSIGNOR_COOPERATIVE_STICKY, "coop");
}

/* Cooperative scale-out from 2 to 3 members: no partition is handed over before its holder
 * let it go (the harness checks every assignment), the third member ends up with a share, and
 * the broker agrees. */
static void cooperative_scale_out_two_to_three(void **state)
{
    (void)state;
    make_topic("scale");
    char group[96];
    snprintf(group, sizeof group, "g-%s", topic_name);
    kc_gh_t *h = kc_gh_start();
    kc_gh_member_t *ms[3];
    ms[0] = member_start(h, group, KC_ASSIGNOR_COOPERATIVE_STICKY, NULL);
    ms[1] = member_start(h, group, KC_ASSIGNOR_COOPERATIVE_STICKY, NULL);
    assert_true(kc_gh_settle(ms, 2, NPART, 1500, 60000));
    ms[2] = member_start(h, group, KC_ASSIGNOR_COOPERATIVE_STICKY, NULL);
    bool ok = kc_gh_settle(ms, 3, NPART, 2000, 60000);
    kc_gh_view_t v[3];
    for (int i = 0; i < 3; i++)
        v[i] = kc_gh_view(ms[i]);
    if (!ok)
        fail_msg("three members did not settle (held %d/%d/%d)", v[0].held, v[1].held, v[2].held);
    for (int i = 0; i < 3; i++)
        assert_int_equal(v[i].held, 2);
    kc_tpset_t d[3] = {{0}, {0}, {0}};
    char ids[3][128];
    assert_true(describe(group, 3, d, ids, 10000));
    assert_exact_cover(d, 3);
    for (int i = 0; i < 3; i++) {
        kc_tpset_free(&d[i]);
        assert_true(kc_gh_close(ms[i], 10000));
    }
    kc_gh_stop(h);
}

/* A subscribed topic grows from 6 to 8 partitions: the leader sees it in its metadata refresh,
 * rejoins, and the new partitions are assigned (each to exactly one member). */
static void partition_count_increase_is_assigned(void **state)
{
    (void)state;
    make_topic("grow");
    char group[96];
    snprintf(group, sizeof group, "g-%s", topic_name);
    kc_gh_t *h = kc_gh_start();
    kc_gh_member_t *ms[2];
    ms[0] = member_start(h, group, KC_ASSIGNOR_COOPERATIVE_STICKY, NULL);
    ms[1] = member_start(h, group, KC_ASSIGNOR_COOPERATIVE_STICKY, NULL);
    assert_true(kc_gh_settle(ms, 2, NPART, 1500, 60000));
    char cmd[256];
    snprintf(cmd, sizeof cmd, "topic alter %s --partitions 8", topic_name);
    run(cmd);
    n_parts_of_topic = 8;
    if (!kc_gh_settle(ms, 2, 8, 1500, 60000))
        fail_msg("new partitions not assigned (held %d + %d)", kc_gh_view(ms[0]).held,
                 kc_gh_view(ms[1]).held);
    kc_tpset_t d[2] = {{0}, {0}};
    char ids[2][128];
    assert_true(describe(group, 2, d, ids, 10000));
    assert_exact_cover(d, 2);
    kc_tpset_free(&d[0]);
    kc_tpset_free(&d[1]);
    assert_true(kc_gh_close(ms[0], 10000));
    assert_true(kc_gh_close(ms[1], 10000));
    kc_gh_stop(h);
}

/* A static member closes (no LeaveGroup) and its instance comes back within the session
 * timeout: it gets its partitions back and the other member sees no rebalance (same
 * generation). */
static void static_member_restart_without_rebalance(void **state)
{
    (void)state;
    make_topic("static");
    char group[96];
    snprintf(group, sizeof group, "g-%s", topic_name);
    kc_gh_t *h = kc_gh_start();
    kc_gh_member_t *ms[2];
    ms[0] = member_start(h, group, KC_ASSIGNOR_RANGE, "inst-a");
    ms[1] = member_start(h, group, KC_ASSIGNOR_RANGE, "inst-b");
    assert_true(kc_gh_settle(ms, 2, NPART, 1500, 60000));
    kc_gh_view_t before = kc_gh_view(ms[0]);
    int32_t gen_b = kc_gh_view(ms[1]).epoch;
    assert_true(kc_gh_close(ms[0], 10000));
    ms[0] = member_start(h, group, KC_ASSIGNOR_RANGE, "inst-a"); /* new process, same id */
    assert_true(kc_gh_settle(ms, 2, NPART, 3000, 30000));
    kc_gh_view_t after = kc_gh_view(ms[0]);
    assert_int_equal(after.held, before.held);
    for (int i = 0; i < after.held; i++) {
        assert_string_equal(after.parts[i].topic, before.parts[i].topic);
        assert_int_equal(after.parts[i].partition, before.parts[i].partition);
    }
    assert_int_equal(kc_gh_view(ms[1]).epoch, gen_b); /* b never rejoined */
    assert_true(kc_gh_close(ms[0], 10000));
    assert_true(kc_gh_close(ms[1], 10000));
    kc_gh_stop(h);
}

/* A member's subscription changes while its JoinGroup is in flight: the leader assigns on the
 * old subscription, and the SyncGroup answer names a topic the member no longer subscribes to.
 * Asserted: that happened (counted by the member), nothing of it was applied (no assignment
 * outside the subscription), and after the member joined again the group settles with each
 * member on its own topic. */
static void stale_assignment_rejoins(void **state)
{
    (void)state;
    make_topic("stale");
    snprintf(topic_b, sizeof topic_b, "%s-b", topic_name);
    char cmd[256], group[96];
    snprintf(cmd, sizeof cmd, "topic create %s --partitions 3", topic_b);
    run(cmd);
    snprintf(group, sizeof group, "g-%s", topic_name);
    kc_gh_t *h = kc_gh_start();
    kc_gh_member_t *ms[2];
    /* Member 0's on_revoke takes 2 s: the rebalance member 1 starts waits that long for
     * member 0's JoinGroup (eager: it revokes everything first), so member 1's new subscription
     * (its partition counts asked first) reaches its state machine while its JoinGroup is out. */
    kc_gh_opts_t o0 = classic_opts(group, KC_ASSIGNOR_RANGE, NULL);
    o0.revoke_delay_ms = 2000;
    const char *old_topics[] = {topic_name};
    ms[0] = kc_gh_join(h, &o0, old_topics, 1);
    assert_true(kc_gh_settle(ms, 1, NPART, 1000, 30000));
    ms[1] = member_start(h, group, KC_ASSIGNOR_RANGE, NULL);
    /* Once the JoinGroup that carries the member id (after MEMBER_ID_REQUIRED) is out. */
    const char *now_topics[] = {topic_b};
    int64_t end = now_ms() + 20000;
    bool during = false;
    while (!(during = kc_gh_subscribe_during_join(ms[1], now_topics, 1)) && now_ms() < end)
        usleep(5 * 1000);
    assert_true(during);
    bool ok = kc_gh_settle(ms, 2, NPART + 3, 2000, 60000);
    kc_gh_view_t v0 = kc_gh_view(ms[0]), v1 = kc_gh_view(ms[1]);
    print_message("# stale assignment: member 1 got %llu assignment(s) naming an unsubscribed "
                  "topic, applied %ld partition(s) of them; settled %s with %d + %d partitions\n",
                  (unsigned long long)v1.mismatched, v1.stray_assigns, ok ? "yes" : "no", v0.held,
                  v1.held);
    assert_true(ok);
    assert_true(v1.mismatched >= 1);
    assert_int_equal(v0.stray_assigns + v1.stray_assigns, 0);
    assert_int_equal(v0.held, NPART);
    assert_int_equal(v1.held, 3);
    for (int i = 0; i < v1.held; i++)
        assert_string_equal(v1.parts[i].topic, topic_b);
    assert_true(kc_gh_close(ms[0], 10000));
    assert_true(kc_gh_close(ms[1], 10000));
    kc_gh_stop(h);
    topic_b[0] = 0;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (getenv("KC_TEST_FILTER")) /* one case by name */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_members_range),
        cmocka_unit_test(two_members_roundrobin),
        cmocka_unit_test(two_members_cooperative),
        cmocka_unit_test(cooperative_scale_out_two_to_three),
        cmocka_unit_test(partition_count_increase_is_assigned),
        cmocka_unit_test(static_member_restart_without_rebalance),
        cmocka_unit_test(stale_assignment_rejoins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
