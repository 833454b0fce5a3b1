/* engine/group/classic/member: leaving and joining again, and what the leader feeds its assignors.
 *  - max.poll.interval.ms overrun: lose at once, LeaveGroup (static members name their
 *    instance), no heartbeat and no JoinGroup while the callback runs, join as a new member
 *    after it returned; an overrun during JoinGroup leaves once that is answered, and one during
 *    SyncGroup too, the assignment it answers not applied (eager: nothing held; cooperative:
 *    what is held is lost, and the new assignment does not follow it);
 *  - a SyncGroup assignment naming a topic we do not subscribe to (a stale leader, or our
 *    subscription changed while joining) is not applied: the member joins again (Java's
 *    onJoinComplete);
 *  - KIP-881: the leader hands the assignor the replica racks of the racks callback, and the
 *    result is the rack-aware one (differs from the rack-blind one for the same members). */
#include "group_classic_fixtures.h"
#include "proto/kafka_errors.h"

/* An assignment of two topics: orders[o...] and payments[p...]. */
static kc_wbuf_t encode_two(const int32_t *o, int32_t no, const int32_t *p, int32_t np)
{
    kc_consumer_protocol_assignment_topic_partition_t t[2] = {
        {kc_str("orders"), {no, (int32_t *)o}}, {kc_str("payments"), {np, (int32_t *)p}}};
    kc_consumer_protocol_assignment_t a;
    kc_consumer_protocol_assignment_init(&a);
    a.assigned_partitions.count = 2;
    a.assigned_partitions.items = t;
    kc_wbuf_t w = {0};
    kc_error_t e;
    assert_int_equal(kc_consumer_protocol_assignment_encode_versioned(&a, 3, &w, &e), KC_OK);
    return w;
}

static void poll_expiry(const char *instance)
{
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, instance);
    const int32_t mine[] = {0, 1, 2};
    join_alone(&m, "m-1", mine, 3, 0);
    int64_t now = 100;
    kc_classic_poll_expired(&m, now);
    /* Dispatch stops first (lost: no commit under a generation being given up) ... */
    kc_classic_out_t lose = expect(&m, now, KC_CLASSIC_LOSE);
    assert_parts(lose.parts, mine, 3);
    /* ... then the LeaveGroup, without waiting for the overrunning callback. */
    kc_classic_out_t o = expect(&m, now, KC_CLASSIC_SEND_LEAVE);
    assert_int_equal(o.req.leave.members.count, 1);
    assert_memory_equal(o.req.leave.members.items[0].member_id.ptr, "m-1", 3);
    assert_memory_equal(o.req.leave.member_id.ptr, "m-1", 3);
    if (instance) {
        assert_int_equal(o.req.leave.members.items[0].group_instance_id.len, strlen(instance));
        assert_memory_equal(o.req.leave.members.items[0].group_instance_id.ptr, instance,
                            strlen(instance));
    } else {
        assert_true(o.req.leave.members.items[0].group_instance_id.len < 0);
    }
    assert_non_null(strstr(o.req.leave.members.items[0].reason.ptr, "poll timeout"));
    assert_int_equal(m.generation, -1);
    assert_string_equal(m.member_id, "");
    expect_nothing(&m, now);
    kc_classic_action_done(&m, lose.seq, now + 5000); /* the slow callback returned */
    o = expect(&m, now + 5000, KC_CLASSIC_DROP);
    kc_classic_action_done(&m, o.seq, now + 5000);
    kc_classic_leave_response(&m, 0, now + 5000);
    assert_int_equal(m.rc.owned.n, 0);
    /* Still overrunning (the watchdog has not said otherwise): out of the group, silent. */
    for (int64_t t = now + 5000; t < now + 120000; t += 1000)
        expect_nothing(&m, t);
    kc_classic_poll_resumed(&m, now + 120000);
    o = expect(&m, now + 120000, KC_CLASSIC_SEND_JOIN);
    assert_int_equal(o.req.join.member_id.len, 0); /* a new member (Java resets the id) */
    kc_join_group_response_t jr = join_ok(5, "range", "x-other", "m-2", NULL, 0);
    kc_classic_join_response(&m, &jr, now + 120000);
    expect(&m, now + 120000, KC_CLASSIC_SEND_SYNC);
    kc_wbuf_t w = encode_assignment(mine, 2);
    kc_sync_group_response_t sr = sync_ok((kc_bytes_t){w.data, (int32_t)w.len});
    kc_classic_sync_response(&m, &sr, now + 120000);
    kc_wbuf_free(&w);
    o = expect(&m, now + 120000, KC_CLASSIC_ASSIGN);
    assert_parts(o.parts, mine, 2);
    kc_classic_free(&m);
}

static void poll_expiry_loses_leaves_and_rejoins_after(void **state)
{
    (void)state;
    poll_expiry(NULL);
}

static void poll_expiry_static_member_leaves_with_its_instance(void **state)
{
    (void)state;
    poll_expiry("inst-1");
}

static void poll_expiry_during_join_leaves_once_answered(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    kc_classic_poll_expired(&m, 10);
    expect_nothing(&m, 10); /* one request at a time on the coordinator connection */
    kc_join_group_response_t jr = join_ok(1, "range", "x-other", "m-1", NULL, 0);
    kc_classic_join_response(&m, &jr, 20);
    kc_classic_out_t o = expect(&m, 20, KC_CLASSIC_SEND_LEAVE); /* not the SyncGroup */
    assert_memory_equal(o.req.leave.members.items[0].member_id.ptr, "m-1", 3);
    kc_classic_leave_response(&m, 0, 30);
    expect_nothing(&m, 30);
    kc_classic_poll_resumed(&m, 40);
    expect(&m, 40, KC_CLASSIC_SEND_JOIN);
    kc_classic_free(&m);
}

/* The SyncGroup of a rebalance is out when the overrun is reported: the member leaves once it is
 * answered, and the assignment in the answer, for a generation it is giving up, never reaches
 * the application (Java drops a SyncGroup answer whose generation was reset meanwhile). */
static void poll_expiry_during_sync(kc_assignor_t a)
{
    kc_classic_t m;
    start(&m, a, NULL);
    const int32_t mine[] = {0, 1, 2}, next[] = {0, 1, 2, 3};
    join_alone(&m, "m-1", mine, 3, 0);
    int64_t now = 0;
    heartbeat(&m, &now, KC_KAFKA_REBALANCE_IN_PROGRESS);
    kc_classic_out_t o;
    const kc_classic_out_kind_t revoke[] = {KC_CLASSIC_REVOKE, KC_CLASSIC_COMMIT, KC_CLASSIC_DROP};
    for (int i = 0; a != KC_ASSIGNOR_COOPERATIVE_STICKY && i < 3; i++) {
        o = expect(&m, now, revoke[i]); /* eager: everything is revoked before joining */
        complete_step(&m, &o, now);
    }
    expect(&m, now, KC_CLASSIC_SEND_JOIN);
    kc_join_group_response_t jr = join_ok(2, kc_assignor_name(a), "x-other", "m-1", NULL, 0);
    kc_classic_join_response(&m, &jr, now);
    expect(&m, now, KC_CLASSIC_SEND_SYNC);
    kc_classic_poll_expired(&m, now + 1);
    kc_classic_out_t lose = {0};
    if (a == KC_ASSIGNOR_COOPERATIVE_STICKY) { /* still held: lost at once */
        lose = expect(&m, now + 1, KC_CLASSIC_LOSE);
        assert_parts(lose.parts, mine, 3);
    }
    expect_nothing(&m, now + 1); /* one request at a time: the SyncGroup is out */
    kc_wbuf_t w = encode_assignment(next, 4);
    kc_sync_group_response_t sr = sync_ok((kc_bytes_t){w.data, (int32_t)w.len});
    kc_classic_sync_response(&m, &sr, now + 2);
    kc_wbuf_free(&w);
    o = expect(&m, now + 2, KC_CLASSIC_SEND_LEAVE); /* not an ASSIGN */
    assert_memory_equal(o.req.leave.members.items[0].member_id.ptr, "m-1", 3);
    kc_classic_leave_response(&m, 0, now + 3);
    if (a == KC_ASSIGNOR_COOPERATIVE_STICKY) { /* the overrunning callback returns */
        kc_classic_action_done(&m, lose.seq, now + 4);
        o = expect(&m, now + 4, KC_CLASSIC_DROP);
        kc_classic_action_done(&m, o.seq, now + 4);
    }
    expect_nothing(&m, now + 5); /* out of the group until the callback returned */
    assert_int_equal(m.rc.held.n, 0);
    assert_int_equal(m.rc.owned.n, 0);
    kc_classic_poll_resumed(&m, now + 6);
    expect(&m, now + 6, KC_CLASSIC_SEND_JOIN);
    kc_classic_free(&m);
}

static void poll_expiry_during_sync_eager(void **state)
{
    (void)state;
    poll_expiry_during_sync(KC_ASSIGNOR_RANGE);
}

static void poll_expiry_during_sync_cooperative(void **state)
{
    (void)state;
    poll_expiry_during_sync(KC_ASSIGNOR_COOPERATIVE_STICKY);
}

static void assignment_naming_an_unsubscribed_topic_rejoins(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_COOPERATIVE_STICKY, NULL);
    expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    kc_join_group_response_t jr = join_ok(1, "cooperative-sticky", "x-other", "m-1", NULL, 0);
    kc_classic_join_response(&m, &jr, 0);
    expect(&m, 0, KC_CLASSIC_SEND_SYNC);
    const int32_t o[] = {0, 1}, p[] = {0};
    kc_wbuf_t w = encode_two(o, 2, p, 1);
    kc_sync_group_response_t sr = sync_ok((kc_bytes_t){w.data, (int32_t)w.len});
    kc_classic_sync_response(&m, &sr, 0);
    kc_wbuf_free(&w);
    /* Nothing of it is applied (no ASSIGN), and the member joins again at once. */
    expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    assert_int_equal(m.rc.owned.n, 0);
    assert_int_equal(m.mismatched_assignments, 1);
    kc_classic_free(&m);
}

/* Our subscription changes while JoinGroup is in flight: the leader assigned on the old one. */
static void subscription_changed_while_joining_rejoins_without_assigning(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    const char *now_topics[] = {"payments"};
    kc_error_t e;
    assert_int_equal(kc_classic_subscribe(&m, now_topics, 1, &e), KC_OK);
    kc_join_group_response_t jr = join_ok(1, "range", "x-other", "m-1", NULL, 0);
    kc_classic_join_response(&m, &jr, 0);
    expect(&m, 0, KC_CLASSIC_SEND_SYNC);
    const int32_t old[] = {0, 1, 2};
    kc_wbuf_t w = encode_assignment(old, 3);
    kc_sync_group_response_t sr = sync_ok((kc_bytes_t){w.data, (int32_t)w.len});
    kc_classic_sync_response(&m, &sr, 0);
    kc_wbuf_free(&w);
    kc_classic_out_t o = expect(&m, 0, KC_CLASSIC_SEND_JOIN); /* no ASSIGN of orders */
    kc_consumer_protocol_subscription_t sub;
    int16_t v;
    kc_arena_t ar = {0};
    kc_rbuf_t r = kc_rbuf(o.req.join.protocols.items[0].metadata.ptr,
                          (size_t)o.req.join.protocols.items[0].metadata.len);
    assert_int_equal(kc_consumer_protocol_subscription_decode_versioned(&sub, &v, &r, &ar, &e),
                     KC_OK);
    assert_int_equal(sub.topics.count, 1);
    assert_memory_equal(sub.topics.items[0].ptr, "payments", 8);
    kc_arena_free(&ar);
    assert_int_equal(m.rc.owned.n, 0);
    kc_classic_free(&m);
}

/* ---- KIP-881: replica racks reach the assignor ------------------------------------------- */

/* "orders" has 6 partitions with one replica each, partition p on a broker in rack r<p%2>. */
static const char *rack_r0[] = {"r0"}, *rack_r1[] = {"r1"};
static const char *const *replicas[6] = {rack_r0, rack_r1, rack_r0, rack_r1, rack_r0, rack_r1};
static const size_t n_replicas[6] = {1, 1, 1, 1, 1, 1};
static int racks_asked;

static bool racks(void *ctx, const char *topic, int32_t n_partitions,
                  const char *const *const **out, const size_t **n)
{
    (void)ctx;
    racks_asked++;
    if (strcmp(topic, "orders") != 0 || n_partitions != 6)
        return false;
    *out = replicas;
    *n = n_replicas;
    return true;
}

/* The leader (rack r0) and a follower (rack r1) under range; returns the leader's and the
 * follower's partitions of "orders" as the leader's SyncGroup assigns them. */
static void rack_round(bool feed, int32_t *pa, size_t *na, int32_t *pb, size_t *nb)
{
    kc_classic_t a, b;
    kc_classic_config_t c = config(KC_ASSIGNOR_RANGE, NULL);
    kc_error_t e;
    n_orders = 6;
    c.rack = "r0";
    assert_int_equal(kc_classic_init(&a, &c, lookup, NULL, &e), KC_OK);
    c.rack = "r1";
    assert_int_equal(kc_classic_init(&b, &c, lookup, NULL, &e), KC_OK);
    if (feed)
        kc_classic_set_racks(&a, racks);
    const char *topics[] = {"orders"};
    kc_classic_subscribe(&a, topics, 1, &e);
    kc_classic_subscribe(&b, topics, 1, &e);
    kc_classic_coordinator_known(&a, 0);
    kc_classic_coordinator_known(&b, 0);
    kc_classic_out_t oa = expect(&a, 0, KC_CLASSIC_SEND_JOIN);
    meta_t ma = take_meta(&oa, 0);
    kc_classic_out_t ob = expect(&b, 0, KC_CLASSIC_SEND_JOIN);
    meta_t mb = take_meta(&ob, 0);
    kc_join_group_response_member_t mem[2] = {member("m-a", &ma), member("m-b", &mb)};
    kc_join_group_response_t jr = join_ok(1, "range", "m-a", "m-a", mem, 2);
    kc_classic_join_response(&a, &jr, 0);
    kc_classic_out_t o = expect(&a, 0, KC_CLASSIC_SEND_SYNC);
    assert_int_equal(o.req.sync.assignments.count, 2);
    for (int i = 0; i < 2; i++) {
        const kc_sync_group_request_assignment_t *it = &o.req.sync.assignments.items[i];
        kc_tpset_t s = {0};
        assert_int_equal(kc_classic_decode_assignment(&a.interned, it->assignment, &s, &e), KC_OK);
        int32_t *dst = it->member_id.ptr[2] == 'a' ? pa : pb;
        size_t *n = it->member_id.ptr[2] == 'a' ? na : nb;
        *n = s.n;
        for (size_t k = 0; k < s.n; k++)
            dst[k] = s.items[k].partition;
        kc_tpset_free(&s);
    }
    kc_classic_free(&a);
    kc_classic_free(&b);
}

static void leader_feeds_replica_racks_to_the_assignor(void **state)
{
    (void)state;
    int32_t pa[6], pb[6];
    size_t na = 0, nb = 0;
    /* Fed: each member gets the partitions whose replica is in its own rack. */
    racks_asked = 0;
    rack_round(true, pa, &na, pb, &nb);
    assert_true(racks_asked >= 1);
    assert_int_equal(na, 3);
    assert_int_equal(nb, 3);
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(pa[k] % 2, 0);
        assert_int_equal(pb[k] % 2, 1);
    }
    /* Not fed: plain range over the same members (the racks alone make the difference). */
    rack_round(false, pa, &na, pb, &nb);
    assert_int_equal(na, 3);
    assert_int_equal(nb, 3);
    const int32_t first[] = {0, 1, 2}, second[] = {3, 4, 5};
    assert_memory_equal(pa, first, sizeof first);
    assert_memory_equal(pb, second, sizeof second);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(poll_expiry_loses_leaves_and_rejoins_after),
        cmocka_unit_test(poll_expiry_static_member_leaves_with_its_instance),
        cmocka_unit_test(poll_expiry_during_join_leaves_once_answered),
        cmocka_unit_test(poll_expiry_during_sync_eager),
        cmocka_unit_test(poll_expiry_during_sync_cooperative),
        cmocka_unit_test(assignment_naming_an_unsubscribed_topic_rejoins),
        cmocka_unit_test(subscription_changed_while_joining_rejoins_without_assigning),
        cmocka_unit_test(leader_feeds_replica_racks_to_the_assignor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
