/* engine/group/classic/member against a real broker. The test is the engine here: one thread, one
 * coordinator socket per member (JoinGroup blocks its socket until the rebalance completes),
 * requests encoded with the generated codec, responses fed back to the state machine, actions
 * completed at once (revoke/assign), commits reported successful without being sent (offsets are
 * not what this test is about).
 * - two kconsume members in one classic group over a 6-partition topic (range, roundrobin,
 *   cooperative-sticky): every partition owned by exactly one member, sampled on every loop
 *   turn (never two owners at once, also during the cooperative handover), and the broker's
 *   DescribeGroups shows the same assignments;
 * - cooperative scale-out from 2 to 3 members, never two owners of a partition at once;
 * - a subscribed topic grown from 6 to 8 partitions: only the leader rejoins on the metadata
 *   change, and the new partitions are assigned exactly once;
 * - a static member closed (no LeaveGroup) and restarted with the same group.instance.id gets
 *   its partitions back while the other member stays in its generation (no rebalance);
 * - a subscription changed while JoinGroup is in flight: the SyncGroup assignment names the old
 *   topic, which is not applied; the member joins again and gets the new topic's partitions;
 * (Mixed groups with Java's console consumer: test_group_classic_java.c.)
 * Single broker: the bootstrap broker is the coordinator (FindCoordinator is the engine's job).
 * Needs KC_BOOTSTRAP, KC_TESTKIT and KC_CLUSTER_DIR (tests/run-suite sets them). */
#include "classic_members.h"

static void two_members(kc_assignor_t a, const char *tag)
{
    make_topic(tag);
    char group[96];
    snprintf(group, sizeof group, "g-%s", topic_name);
    member_t ms[2];
    member_start(&ms[0], group, a);
    assert_true(pump(ms, 1, 30000, 1000, NPART)); /* alone: all six */
    member_start(&ms[1], group, a);
    if (!pump(ms, 2, 60000, 2000, NPART))
        fail_msg("two members did not settle (states %d/%d, owned %zu/%zu)", ms[0].m.state,
                 ms[1].m.state, ms[0].m.rc.owned.n, ms[1].m.rc.owned.n);
    assert_true(ms[0].m.rc.owned.n > 0 && ms[1].m.rc.owned.n > 0);
    kc_tpset_t d[2] = {{0}, {0}};
    char ids[2][128];
    assert_true(describe(group, 2, d, ids, 10000));
    assert_exact_cover(d, 2);
    for (size_t i = 0; i < 2; i++) { /* what the broker relays is what each member holds */
        member_t *mine = strcmp(ids[i], ms[0].m.member_id) == 0 ? &ms[0] : &ms[1];
        assert_string_equal(ids[i], mine->m.member_id);
        assert_true(same_parts(&d[i], &mine->m.rc.owned));
        kc_tpset_free(&d[i]);
    }
    /* Dynamic members leave on close: LeaveGroup answered, the group empties. */
    kc_classic_close(&ms[0].m);
    kc_classic_close(&ms[1].m);
    int64_t end = now_ms() + 10000;
    while (!(ms[0].closed && ms[1].closed) && now_ms() < end)
        pump(ms, 2, 50, 100000, 0);
    assert_true(ms[0].closed && ms[1].closed);
    member_free(&ms[0]);
    member_free(&ms[1]);
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

/* Cooperative scale-out from 2 to 3 members: the owned sets stay disjoint at every loop turn
 * (pump checks), the third member ends up with a share, and the broker agrees. */
static void cooperative_scale_out_two_to_three(void **state)
{
    (void)state;
    make_topic("scale");
    char group[96];
    snprintf(group, sizeof group, "g-%s", topic_name);
    member_t ms[3];
    member_start(&ms[0], group, KC_ASSIGNOR_COOPERATIVE_STICKY);
    member_start(&ms[1], group, KC_ASSIGNOR_COOPERATIVE_STICKY);
    assert_true(pump(ms, 2, 60000, 1500, NPART));
    member_start(&ms[2], group, KC_ASSIGNOR_COOPERATIVE_STICKY);
    if (!pump(ms, 3, 60000, 2000, NPART))
        fail_msg("three members did not settle (owned %zu/%zu/%zu)", ms[0].m.rc.owned.n,
                 ms[1].m.rc.owned.n, ms[2].m.rc.owned.n);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ms[i].m.rc.owned.n, 2);
    kc_tpset_t d[3] = {{0}, {0}, {0}};
    char ids[3][128];
    assert_true(describe(group, 3, d, ids, 10000));
    assert_exact_cover(d, 3);
    for (int i = 0; i < 3; i++) {
        kc_tpset_free(&d[i]);
        member_free(&ms[i]);
    }
}

/* A subscribed topic grows from 6 to 8 partitions: the leader sees it in metadata, rejoins, and
 * the new partitions are assigned (each to exactly one member). */
static void partition_count_increase_is_assigned(void **state)
{
    (void)state;
    make_topic("grow");
    char group[96];
    snprintf(group, sizeof group, "g-%s", topic_name);
    member_t ms[2];
    member_start(&ms[0], group, KC_ASSIGNOR_COOPERATIVE_STICKY);
    member_start(&ms[1], group, KC_ASSIGNOR_COOPERATIVE_STICKY);
    assert_true(pump(ms, 2, 60000, 1500, NPART));
    char cmd[256];
    snprintf(cmd, sizeof cmd, "topic alter %s --partitions 8", topic_name);
    run(cmd);
    n_parts_of_topic = 8; /* what the engine's metadata refresh would now report */
    kc_classic_metadata_changed(&ms[0].m, now_ms());
    kc_classic_metadata_changed(&ms[1].m, now_ms());
    assert_true(ms[0].m.rejoin_needed != ms[1].m.rejoin_needed); /* the leader only */
    if (!pump(ms, 2, 60000, 1500, 8))
        fail_msg("new partitions not assigned (owned %zu + %zu)", ms[0].m.rc.owned.n,
                 ms[1].m.rc.owned.n);
    kc_tpset_t d[2] = {{0}, {0}};
    char ids[2][128];
    assert_true(describe(group, 2, d, ids, 10000));
    assert_exact_cover(d, 2);
    kc_tpset_free(&d[0]);
    kc_tpset_free(&d[1]);
    member_free(&ms[0]);
    member_free(&ms[1]);
}

/* A static member closes (no LeaveGroup) and its instance comes back within the session
 * timeout: it gets its partitions back and the other member sees no rebalance (same
 * generation, no rejoin). */
static void static_member_restart_without_rebalance(void **state)
{
    (void)state;
    make_topic("static");
    char group[96];
    snprintf(group, sizeof group, "g-%s", topic_name);
    member_t ms[2];
    member_start_static(&ms[0], group, KC_ASSIGNOR_RANGE, "inst-a");
    member_start_static(&ms[1], group, KC_ASSIGNOR_RANGE, "inst-b");
    assert_true(pump(ms, 2, 60000, 1500, NPART));
    int32_t gen_b = ms[1].m.generation;
    kc_tpset_t before = {0};
    copy_parts(&before, &ms[0].m.rc.owned); /* ms[0] and its topics are freed below */
    kc_classic_close(&ms[0].m);
    int64_t end = now_ms() + 10000;
    while (!ms[0].closed && now_ms() < end)
        pump(ms, 2, 50, 100000, 0);
    assert_true(ms[0].closed);
    member_free(&ms[0]);
    member_start_static(&ms[0], group, KC_ASSIGNOR_RANGE, "inst-a"); /* new process, same id */
    assert_true(pump(ms, 2, 30000, 3000, NPART));
    assert_true(same_parts(&before, &ms[0].m.rc.owned));
    assert_int_equal(ms[1].m.generation, gen_b); /* b never rejoined */
    kc_tpset_free(&before);
    member_free(&ms[0]);
    member_free(&ms[1]);
}

/* A member's subscription changes while its JoinGroup is in flight: the leader assigns on the
 * old subscription, and the SyncGroup answer names a topic the member no longer subscribes to.
 * Asserted: that happened (counted by the member), nothing of it was applied (no ASSIGN outside
 * the subscription), and after the member joined again the group settles with each member on
 * its own topic. */
static void stale_assignment_rejoins(void **state)
{
    (void)state;
    make_topic("stale");
    snprintf(topic_b, sizeof topic_b, "%s-b", topic_name);
    char cmd[256], group[96];
    snprintf(cmd, sizeof cmd, "topic create %s --partitions 3", topic_b);
    run(cmd);
    snprintf(group, sizeof group, "g-%s", topic_name);
    member_t ms[2];
    member_start(&ms[0], group, KC_ASSIGNOR_RANGE);
    assert_true(pump(ms, 1, 30000, 1000, NPART));
    member_start(&ms[1], group, KC_ASSIGNOR_RANGE);
    /* Until the JoinGroup that carries the member id (after MEMBER_ID_REQUIRED) is out. */
    int64_t end = now_ms() + 20000;
    while (!(ms[1].m.inflight == KC_CLASSIC_IF_JOIN && ms[1].m.member_id[0]) && now_ms() < end)
        pump(ms, 2, 5, 100000, 0);
    assert_true(ms[1].m.inflight == KC_CLASSIC_IF_JOIN && ms[1].m.member_id[0]);
    const char *now_topics[] = {topic_b};
    kc_error_t e;
    assert_int_equal(kc_classic_subscribe(&ms[1].m, now_topics, 1, &e), KC_OK);
    bool ok = pump(ms, 2, 60000, 2000, NPART + 3);
    print_message("# stale assignment: member 1 got %llu assignment(s) naming an unsubscribed "
                  "topic, applied %ld partition(s) of them; settled %s with %zu + %zu partitions\n",
                  (unsigned long long)ms[1].m.mismatched_assignments, ms[1].stray_assigns,
                  ok ? "yes" : "no", ms[0].m.rc.owned.n, ms[1].m.rc.owned.n);
    assert_true(ok);
    assert_true(ms[1].m.mismatched_assignments >= 1);
    assert_int_equal(ms[1].stray_assigns + ms[0].stray_assigns, 0);
    assert_int_equal(ms[0].m.rc.owned.n, NPART);
    assert_int_equal(ms[1].m.rc.owned.n, 3);
    for (size_t i = 0; i < ms[1].m.rc.owned.n; i++)
        assert_string_equal(ms[1].m.rc.owned.items[i].topic->name, topic_b);
    member_free(&ms[0]);
    member_free(&ms[1]);
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
