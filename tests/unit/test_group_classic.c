/* engine/group/classic/member: the classic member as a scripted state machine — leader and follower
 * paths, eager and cooperative reconciliation order, error handling, rolling-upgrade shapes.
 * Payloads are decoded back with the generated codec and compared with the assignors' own
 * output, so a wrong byte in either direction fails here. */
#include "group_classic_fixtures.h"
#include "group/classic/member_int.h"
#include "proto/kafka_errors.h"

/* ---- tests -------------------------------------------------------------------------------- */

/* Decodes an assignment into a sorted partition list of "orders". */
static size_t decode_parts(kc_bytes_t b, int32_t *out)
{
    kc_gtopics_t names;
    kc_gtopics_init_by_name(&names, strcmp);
    kc_tpset_t s = {0};
    kc_error_t e;
    assert_int_equal(kc_classic_decode_assignment(&names, b, &s, &e), KC_OK);
    size_t n = s.n;
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(s.items[i].topic->name, "orders");
        out[i] = s.items[i].partition;
    }
    kc_tpset_free(&s);
    kc_gtopics_free(&names);
    return n;
}

static void leader_assigns_two_members_as_the_assignor_does(void **state)
{
    (void)state;
    const kc_assignor_t kinds[] = {KC_ASSIGNOR_RANGE, KC_ASSIGNOR_ROUNDROBIN, KC_ASSIGNOR_STICKY,
                                   KC_ASSIGNOR_COOPERATIVE_STICKY};
    for (size_t k = 0; k < 4; k++) {
        kc_classic_t a, b;
        start(&a, kinds[k], NULL);
        start(&b, kinds[k], NULL);
        kc_classic_out_t oa = expect(&a, 0, KC_CLASSIC_SEND_JOIN);
        assert_string_equal(oa.req.join.protocol_type.ptr, "consumer");
        assert_int_equal(oa.req.join.rebalance_timeout_ms, 300000);
        assert_int_equal(oa.req.join.member_id.len, 0);
        meta_t ma = take_meta(&oa, 0);
        kc_classic_out_t obj = expect(&b, 0, KC_CLASSIC_SEND_JOIN);
        meta_t mb = take_meta(&obj, 0);

        /* The subscription decodes as Java would read it. */
        kc_consumer_protocol_subscription_t sub;
        kc_arena_t ar = {0};
        kc_error_t e;
        int16_t v;
        kc_rbuf_t r = kc_rbuf(ma.b, (size_t)ma.n);
        assert_int_equal(kc_consumer_protocol_subscription_decode_versioned(&sub, &v, &r, &ar, &e),
                         KC_OK);
        assert_int_equal(v, 3);
        assert_int_equal(sub.topics.count, 1);
        assert_int_equal(sub.generation_id, -1);
        assert_int_equal(sub.owned_partitions.count, 0);
        kc_arena_free(&ar);

        kc_join_group_response_member_t mem[2] = {member("m-b", &mb), member("m-a", &ma)};
        kc_join_group_response_t jr = join_ok(1, kc_assignor_name(kinds[k]), "m-a", "m-a", mem, 2);
        kc_classic_join_response(&a, &jr, 0);
        assert_true(a.is_leader);
        kc_classic_out_t os = expect(&a, 0, KC_CLASSIC_SEND_SYNC);
        assert_int_equal(os.req.sync.generation_id, 1);
        assert_int_equal(os.req.sync.assignments.count, 2);

        /* The same input straight into the assignor. */
        const char *topics[] = {"orders"};
        kc_assign_member_t in_m[2] = {
            {.member_id = "m-b", .topics = topics, .n_topics = 1, .generation = -1},
            {.member_id = "m-a", .topics = topics, .n_topics = 1, .generation = -1}};
        if (kinds[k] == KC_ASSIGNOR_COOPERATIVE_STICKY)
            for (int i = 0; i < 2; i++) {
                in_m[i].has_user_data = true;
                in_m[i].prev_has_generation = true;
                in_m[i].prev_generation = -1;
            }
        kc_assign_topic_t t = {"orders", 6, NULL, NULL};
        kc_assign_input_t in = {in_m, 2, &t, 1};
        kc_assign_result_t res;
        assert_int_equal(kc_assign_run(kinds[k], &in, &res, &e), KC_OK);
        size_t total = 0;
        for (size_t i = 0; i < 2; i++) {
            const kc_sync_group_request_assignment_t *it = &os.req.sync.assignments.items[i];
            size_t idx = it->member_id.len == 3 && memcmp(it->member_id.ptr, "m-b", 3) == 0 ? 0 : 1;
            int32_t got[8];
            size_t n = decode_parts(it->assignment, got);
            assert_int_equal(n, res.members[idx].n);
            for (size_t j = 0; j < n; j++)
                assert_int_equal(got[j], res.members[idx].tps[j].partition);
            total += n;
        }
        assert_int_equal(total, 6);
        if (kinds[k] == KC_ASSIGNOR_RANGE) { /* Java's range: sorted member ids, 3 + 3 */
            int32_t got[8];
            assert_int_equal(decode_parts(os.req.sync.assignments.items[1].assignment, got), 3);
            assert_int_equal(got[0], 0);
        }
        /* Our own assignment comes back in SyncGroup and is assigned. */
        kc_sync_group_response_t sr = sync_ok(os.req.sync.assignments.items[1].assignment);
        kc_classic_sync_response(&a, &sr, 0);
        kc_classic_out_t o = expect(&a, 0, KC_CLASSIC_ASSIGN);
        assert_int_equal(o.parts->n, res.members[1].n);
        kc_classic_action_done(&a, o.seq, 0);
        assert_int_equal(a.rc.owned.n, res.members[1].n);
        expect_nothing(&a, 1);
        expect(&a, 3000, KC_CLASSIC_SEND_HEARTBEAT);
        kc_assign_result_free(&res);
        kc_classic_free(&a);
        kc_classic_free(&b);
    }
}

static void follower_sends_empty_assignments(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    kc_join_group_response_t jr = join_ok(4, "range", "m-leader", "m-me", NULL, 0);
    kc_classic_join_response(&m, &jr, 0);
    kc_classic_out_t o = expect(&m, 0, KC_CLASSIC_SEND_SYNC);
    assert_false(m.is_leader);
    assert_int_equal(o.req.sync.assignments.count, 0);
    assert_int_equal(o.req.sync.generation_id, 4);
    assert_int_equal(o.req.sync.member_id.len, 4);
    const int32_t p[] = {1, 4};
    kc_wbuf_t w = encode_assignment(p, 2);
    kc_sync_group_response_t sr = sync_ok((kc_bytes_t){w.data, (int32_t)w.len});
    kc_classic_sync_response(&m, &sr, 0);
    kc_wbuf_free(&w);
    o = expect(&m, 0, KC_CLASSIC_ASSIGN);
    assert_parts(o.parts, p, 2);
    kc_classic_free(&m);
}

static void member_id_required_retries_with_the_given_id(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    kc_classic_out_t o = expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    assert_int_equal(o.req.join.member_id.len, 0);
    kc_join_group_response_t jr;
    kc_join_group_response_init(&jr);
    jr.error_code = KC_KAFKA_MEMBER_ID_REQUIRED;
    jr.member_id = kc_str("m-given");
    kc_classic_join_response(&m, &jr, 0);
    o = expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    assert_int_equal(o.req.join.member_id.len, 7);
    assert_memory_equal(o.req.join.member_id.ptr, "m-given", 7);
    kc_classic_free(&m);
}

/* Eager: REVOKE → COMMIT → DROP complete before any JoinGroup leaves. */
static void eager_revokes_and_commits_before_joining(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    const int32_t p[] = {0, 1, 2};
    join_alone(&m, "m-a", p, 3, 0);
    int64_t now = 0;
    heartbeat(&m, &now, KC_KAFKA_REBALANCE_IN_PROGRESS);
    kc_classic_out_t o = expect(&m, now, KC_CLASSIC_REVOKE);
    assert_parts(o.parts, p, 3);
    uint64_t rs = o.seq;
    /* Workers still running on_revoke: heartbeats may go, JoinGroup may not. */
    for (int64_t t = now; t < now + 10000; t += 500)
        while (kc_classic_poll(&m, t, &o)) {
            assert_int_equal(o.kind, KC_CLASSIC_SEND_HEARTBEAT);
            kc_classic_heartbeat_response(&m, KC_KAFKA_REBALANCE_IN_PROGRESS, t);
        }
    now += 10000;
    kc_classic_action_done(&m, rs, now);
    o = expect(&m, now, KC_CLASSIC_COMMIT);
    assert_string_equal(o.who.member_id, "m-a");
    assert_int_equal(o.who.generation_or_epoch, 1);
    assert_null(o.who.group_instance_id);
    assert_parts(o.parts, p, 3);
    uint64_t cs = o.seq;
    expect_nothing(&m, now + 100); /* awaiting the commit result: no JoinGroup */
    kc_classic_commit_result(&m, cs, 0, now + 100);
    o = expect(&m, now + 100, KC_CLASSIC_DROP);
    kc_classic_action_done(&m, o.seq, now + 100);
    o = expect(&m, now + 100, KC_CLASSIC_SEND_JOIN);
    assert_int_equal(m.rc.owned.n, 0);
    /* The subscription carries no owned partitions any more, and our generation. */
    kc_consumer_protocol_subscription_t sub;
    kc_arena_t ar = {0};
    kc_error_t e;
    int16_t v;
    kc_rbuf_t r = kc_rbuf(o.req.join.protocols.items[0].metadata.ptr,
                          (size_t)o.req.join.protocols.items[0].metadata.len);
    assert_int_equal(kc_consumer_protocol_subscription_decode_versioned(&sub, &v, &r, &ar, &e),
                     KC_OK);
    assert_int_equal(sub.owned_partitions.count, 0);
    assert_int_equal(sub.generation_id, 1);
    kc_arena_free(&ar);
    kc_classic_free(&m);
}

static bool any_of(const kc_tpset_t *s, const int32_t *p, size_t n)
{
    for (size_t k = 0; k < s->n; k++)
        for (size_t i = 0; i < n; i++)
            if (strcmp(s->items[k].topic->name, "orders") == 0 && s->items[k].partition == p[i])
                return true;
    return false;
}

/* Cooperative: round one withholds the moving partitions, the loser revokes only those and
 * rejoins, round two hands them over. Unmoved partitions are never stopped. */
static void cooperative_two_round_handover(void **state)
{
    (void)state;
    kc_classic_t a, b;
    start(&a, KC_ASSIGNOR_COOPERATIVE_STICKY, NULL);
    start(&b, KC_ASSIGNOR_COOPERATIVE_STICKY, NULL);
    const int32_t all[] = {0, 1, 2, 3, 4, 5};
    join_alone(&a, "m-a", all, 6, 0);
    int64_t now = 0;
    heartbeat(&a, &now, KC_KAFKA_REBALANCE_IN_PROGRESS);
    /* No revocation before joining: everything keeps flowing. */
    kc_classic_out_t o = expect(&a, now, KC_CLASSIC_SEND_JOIN);
    meta_t ma = take_meta(&o, 0);
    kc_classic_out_t obj = expect(&b, now, KC_CLASSIC_SEND_JOIN);
    meta_t mb = take_meta(&obj, 0);

    kc_join_group_response_member_t mem[2] = {member("m-a", &ma), member("m-b", &mb)};
    kc_join_group_response_t jr = join_ok(2, "cooperative-sticky", "m-a", "m-a", mem, 2);
    kc_classic_join_response(&a, &jr, now);
    o = expect(&a, now, KC_CLASSIC_SEND_SYNC);
    int32_t pa[8], pb[8];
    size_t na = 0, nb = 0;
    for (int i = 0; i < 2; i++) {
        const kc_sync_group_request_assignment_t *it = &o.req.sync.assignments.items[i];
        if (it->member_id.ptr[2] == 'a')
            na = decode_parts(it->assignment, pa);
        else
            nb = decode_parts(it->assignment, pb);
    }
    assert_int_equal(na, 3); /* a keeps 3 ... */
    assert_int_equal(nb, 0); /* ... and b gets nothing yet: the other 3 are withheld */
    kc_wbuf_t w = encode_assignment(pa, (int32_t)na);
    kc_sync_group_response_t sr = sync_ok((kc_bytes_t){w.data, (int32_t)w.len});
    kc_classic_sync_response(&a, &sr, now);
    kc_wbuf_free(&w);

    int32_t moved[3];
    size_t nm = 0;
    for (int32_t p = 0; p < 6; p++) {
        bool kept = false;
        for (size_t i = 0; i < na; i++)
            kept = kept || pa[i] == p;
        if (!kept)
            moved[nm++] = p;
    }
    /* Revoke exactly the moved ones; the kept ones never appear in REVOKE/LOSE/DROP. */
    o = expect(&a, now, KC_CLASSIC_REVOKE);
    assert_parts(o.parts, moved, 3);
    assert_false(any_of(o.parts, pa, na));
    kc_classic_action_done(&a, o.seq, now);
    o = expect(&a, now, KC_CLASSIC_COMMIT);
    assert_int_equal(o.who.generation_or_epoch, 2);
    kc_classic_commit_result(&a, o.seq, 0, now);
    o = expect(&a, now, KC_CLASSIC_DROP);
    assert_false(any_of(o.parts, pa, na));
    kc_classic_action_done(&a, o.seq, now);
    /* The second round starts at once. */
    o = expect(&a, now, KC_CLASSIC_SEND_JOIN);
    assert_int_equal(a.rc.owned.n, 3);
    ma = take_meta(&o, 0);
    kc_classic_out_t ob;
    /* b got an empty assignment in round 1 and rejoins on the next rebalance notice */
    kc_join_group_response_t jb = join_ok(2, "cooperative-sticky", "m-a", "m-b", NULL, 0);
    kc_classic_join_response(&b, &jb, now);
    expect(&b, now, KC_CLASSIC_SEND_SYNC);
    kc_sync_group_response_t sb = sync_ok(KC_BYTES_NULL);
    sb.assignment = (kc_bytes_t){(const uint8_t *)"", 0};
    kc_classic_sync_response(&b, &sb, now);
    expect_nothing(&b, now);
    heartbeat(&b, &now, KC_KAFKA_REBALANCE_IN_PROGRESS);
    ob = expect(&b, now, KC_CLASSIC_SEND_JOIN);
    mb = take_meta(&ob, 0);

    kc_join_group_response_member_t mem2[2] = {member("m-a", &ma), member("m-b", &mb)};
    jr = join_ok(3, "cooperative-sticky", "m-a", "m-a", mem2, 2);
    kc_classic_join_response(&a, &jr, now);
    o = expect(&a, now, KC_CLASSIC_SEND_SYNC);
    for (int i = 0; i < 2; i++) {
        const kc_sync_group_request_assignment_t *it = &o.req.sync.assignments.items[i];
        int32_t got[8];
        size_t n = decode_parts(it->assignment, got);
        assert_int_equal(n, 3);
        if (it->member_id.ptr[2] == 'b')
            for (size_t j = 0; j < 3; j++)
                assert_int_equal(got[j], moved[j]); /* round two hands them over */
        else
            for (size_t j = 0; j < 3; j++)
                assert_int_equal(got[j], pa[j]);
    }
    kc_classic_free(&a);
    kc_classic_free(&b);
}

static void illegal_generation_loses_without_commit(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    const int32_t p[] = {0, 1};
    join_alone(&m, "m-a", p, 2, 0);
    int64_t now = 0;
    heartbeat(&m, &now, KC_KAFKA_ILLEGAL_GENERATION);
    kc_classic_out_t o = expect(&m, now, KC_CLASSIC_LOSE);
    assert_parts(o.parts, p, 2);
    kc_classic_action_done(&m, o.seq, now);
    o = expect(&m, now, KC_CLASSIC_DROP); /* no COMMIT in between */
    kc_classic_action_done(&m, o.seq, now);
    o = expect(&m, now, KC_CLASSIC_SEND_JOIN);
    assert_int_equal(o.req.join.member_id.len, 3); /* ILLEGAL_GENERATION keeps the member id */
    kc_classic_free(&m);

    /* Cooperative too: the generation is gone, so the partitions are lost. */
    start(&m, KC_ASSIGNOR_COOPERATIVE_STICKY, NULL);
    join_alone(&m, "m-a", p, 2, 0);
    now = 0;
    heartbeat(&m, &now, KC_KAFKA_UNKNOWN_MEMBER_ID);
    o = expect(&m, now, KC_CLASSIC_LOSE);
    kc_classic_action_done(&m, o.seq, now);
    o = expect(&m, now, KC_CLASSIC_DROP);
    kc_classic_action_done(&m, o.seq, now);
    o = expect(&m, now, KC_CLASSIC_SEND_JOIN);
    assert_int_equal(o.req.join.member_id.len, 0);
    kc_classic_free(&m);
}

static void fenced_instance_is_fatal(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, "inst-1");
    kc_classic_out_t o = expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    assert_int_equal(o.req.join.group_instance_id.len, 6);
    const int32_t p[] = {3};
    kc_classic_free(&m);
    start(&m, KC_ASSIGNOR_RANGE, "inst-1");
    join_alone(&m, "m-a", p, 1, 0);
    int64_t now = 0;
    heartbeat(&m, &now, KC_KAFKA_FENCED_INSTANCE_ID);
    o = expect(&m, now, KC_CLASSIC_FATAL);
    assert_int_equal(o.error.code, KC_ERR_FATAL);
    assert_int_equal(o.error.kafka_code, KC_KAFKA_FENCED_INSTANCE_ID);
    assert_non_null(strstr(o.error.msg, "inst-1"));
    o = expect(&m, now, KC_CLASSIC_LOSE); /* stops consuming what it held */
    kc_classic_action_done(&m, o.seq, now);
    o = expect(&m, now, KC_CLASSIC_DROP);
    kc_classic_action_done(&m, o.seq, now);
    expect_nothing(&m, now + 100000); /* no rejoin, no heartbeat */
    kc_classic_free(&m);
}

/* Fenced while a cooperative revoke's commit is out: the reconciliation is abandoned, what the
 * member still holds is lost at once, and the partitions whose revoke returned are dropped with
 * it (they were still in the fetch sessions); the commit's answer is not waited for. */
static void fenced_during_a_revoke_loses_and_drops_everything(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_COOPERATIVE_STICKY, "inst-1");
    const int32_t all[] = {0, 1, 2}, keep[] = {0}, gone[] = {1, 2};
    join_alone(&m, "m-a", all, 3, 0);
    int64_t now = 0;
    heartbeat(&m, &now, KC_KAFKA_REBALANCE_IN_PROGRESS);
    expect(&m, now, KC_CLASSIC_SEND_JOIN); /* cooperative: nothing revoked before joining */
    kc_join_group_response_t jr = join_ok(2, "cooperative-sticky", "x-other", "m-a", NULL, 0);
    kc_classic_join_response(&m, &jr, now);
    expect(&m, now, KC_CLASSIC_SEND_SYNC);
    kc_wbuf_t w = encode_assignment(keep, 1);
    kc_sync_group_response_t sr = sync_ok((kc_bytes_t){w.data, (int32_t)w.len});
    kc_classic_sync_response(&m, &sr, now);
    kc_wbuf_free(&w);
    kc_classic_out_t o = expect(&m, now, KC_CLASSIC_REVOKE);
    assert_parts(o.parts, gone, 2);
    kc_classic_action_done(&m, o.seq, now);
    kc_classic_out_t cm = expect(&m, now, KC_CLASSIC_COMMIT);
    kc_classic_commit_result(&m, cm.seq, KC_KAFKA_FENCED_INSTANCE_ID, now + 1);
    expect(&m, now + 1, KC_CLASSIC_FATAL);
    o = expect(&m, now + 1, KC_CLASSIC_LOSE);
    assert_parts(o.parts, all, 3); /* 0 held; 1 and 2 revoked, not yet dropped */
    kc_classic_action_done(&m, o.seq, now + 1);
    o = expect(&m, now + 1, KC_CLASSIC_DROP);
    assert_parts(o.parts, all, 3);
    kc_classic_action_done(&m, o.seq, now + 1);
    expect_nothing(&m, now + 100000);
    assert_int_equal(m.rc.held.n, 0);
    assert_int_equal(m.rc.owned.n, 0);
    kc_classic_free(&m);
}

static void not_coordinator_in_success_rediscovers_silently(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    const int32_t p[] = {0};
    join_alone(&m, "m-a", p, 1, 0);
    int64_t now = 0;
    heartbeat(&m, &now, KC_KAFKA_NOT_COORDINATOR);
    expect(&m, now, KC_CLASSIC_REDISCOVER);
    for (int64_t t = now; t < now + 9900; t += 300)
        expect_nothing(&m, t); /* no ERROR while the deadline holds, no partitions touched */
    kc_classic_coordinator_known(&m, now + 9900);
    expect(&m, now + 9900, KC_CLASSIC_SEND_HEARTBEAT);
    kc_classic_heartbeat_response(&m, 0, now + 9900);
    assert_int_equal(m.rc.owned.n, 1);

    /* Past the deadline it is surfaced once, not fatal. */
    now += 20000;
    heartbeat(&m, &now, KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS);
    expect(&m, now, KC_CLASSIC_REDISCOVER);
    kc_classic_out_t o = expect(&m, now + 10000, KC_CLASSIC_ERROR);
    assert_int_equal(o.error.code, KC_ERR_TIMEOUT);
    expect_nothing(&m, now + 20000);
    kc_classic_free(&m);

    /* JoinGroup answered COORDINATOR_NOT_AVAILABLE: rediscover, then the same join again. */
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    kc_join_group_response_t jr;
    kc_join_group_response_init(&jr);
    jr.error_code = KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
    kc_classic_join_response(&m, &jr, 0);
    expect(&m, 0, KC_CLASSIC_REDISCOVER);
    expect_nothing(&m, 10);
    kc_classic_coordinator_known(&m, 20);
    expect(&m, 20, KC_CLASSIC_SEND_JOIN);
    kc_classic_free(&m);
}

/* A coordinator that answers JoinGroup and then fails every SyncGroup (a broker whose answers
 * do not decode): each loss before the member got anywhere is looked up later than the last,
 * 100 ms doubling to retry.backoff.max.ms (with Kafka's jitter), not again at once; a round
 * that completes resets it. */
static void repeated_losses_back_off(void **state)
{
    (void)state;
    kc_classic_t m;
    kc_classic_config_t c = config(KC_ASSIGNOR_RANGE, NULL);
    c.retry_backoff_max_ms = 1000;
    kc_error_t e;
    n_orders = 6;
    assert_int_equal(kc_classic_init(&m, &c, lookup, NULL, &e), KC_OK);
    const char *topics[] = {"orders"};
    assert_int_equal(kc_classic_subscribe(&m, topics, 1, &e), KC_OK);
    kc_classic_coordinator_known(&m, 0);
    const int64_t waits[] = {0, 100, 200, 400, 800, 1000, 1000};
    int64_t now = 0;
    for (size_t i = 0; i < sizeof waits / sizeof *waits; i++) {
        expect(&m, now, KC_CLASSIC_SEND_JOIN);
        kc_join_group_response_t jr = join_ok((int32_t)i + 1, "range", "x-other", "m-a", NULL, 0);
        kc_classic_join_response(&m, &jr, now);
        expect(&m, now, KC_CLASSIC_SEND_SYNC);
        kc_classic_request_failed(&m, now); /* the SyncGroup answer did not decode */
        if (waits[i] > 0) { /* Kafka's jitter: 0.8 to 1.2 times the doubled backoff */
            int64_t at = kc_classic_next_wakeup(&m);
            assert_true(at >= now + waits[i] * 8 / 10 && at < now + waits[i] * 12 / 10);
            expect_nothing(&m, at - 1);
            now = at;
        }
        expect(&m, now, KC_CLASSIC_REDISCOVER);
        now += 5;
        kc_classic_coordinator_known(&m, now);
    }
    /* A round that gets through: the next loss is looked up at once again. */
    expect(&m, now, KC_CLASSIC_SEND_JOIN);
    kc_join_group_response_t jr = join_ok(20, "range", "x-other", "m-a", NULL, 0);
    kc_classic_join_response(&m, &jr, now);
    expect(&m, now, KC_CLASSIC_SEND_SYNC);
    const int32_t p[] = {0, 1};
    kc_wbuf_t w = encode_assignment(p, 2);
    kc_sync_group_response_t sr = sync_ok((kc_bytes_t){w.data, (int32_t)w.len});
    kc_classic_sync_response(&m, &sr, now);
    kc_wbuf_free(&w);
    kc_classic_out_t o = expect(&m, now, KC_CLASSIC_ASSIGN);
    kc_classic_action_done(&m, o.seq, now);
    heartbeat(&m, &now, KC_KAFKA_NOT_COORDINATOR);
    expect(&m, now, KC_CLASSIC_REDISCOVER);
    kc_classic_free(&m);
}

/* kc_close while the application's commits are unanswered (an on_revoke's kc_commit_async):
 * revoke, commit and drop run as always, but the LeaveGroup waits for those answers; sent
 * before them, it could reach the coordinator first and have the commits refused with
 * UNKNOWN_MEMBER_ID. */
static void close_leaves_after_app_commits(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    const int32_t p[] = {0, 1};
    join_alone(&m, "m-a", p, 2, 0);
    kc_classic_commits_in_flight(&m, true, 5);
    kc_classic_close(&m);
    kc_classic_out_t o = expect(&m, 10, KC_CLASSIC_REVOKE);
    kc_classic_action_done(&m, o.seq, 10);
    o = expect(&m, 10, KC_CLASSIC_COMMIT);
    kc_classic_commit_result(&m, o.seq, 0, 11);
    o = expect(&m, 11, KC_CLASSIC_DROP);
    kc_classic_action_done(&m, o.seq, 11);
    /* Heartbeats go on meanwhile (the session must not run out); a LeaveGroup may not. */
    int beats = 0;
    for (int64_t t = 11; t < 20000; t += 500)
        while (kc_classic_poll(&m, t, &o)) {
            assert_int_equal(o.kind, KC_CLASSIC_SEND_HEARTBEAT);
            kc_classic_heartbeat_response(&m, 0, t);
            beats++;
        }
    assert_true(beats >= 5);
    kc_classic_commits_in_flight(&m, false, 20000);
    o = expect(&m, 20000, KC_CLASSIC_SEND_LEAVE);
    assert_int_equal(o.req.leave.members.count, 1);
    kc_classic_leave_response(&m, 0, 20001);
    expect(&m, 20001, KC_CLASSIC_CLOSED);
    kc_classic_free(&m);
}

/* kc_close while SyncGroup is in flight, and then that request fails (the coordinator's answer
 * does not decode): the member goes on closing; it does not join again. */
static void close_survives_failed_sync(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    kc_join_group_response_t jr = join_ok(1, "range", "x-other", "m-a", NULL, 0);
    kc_classic_join_response(&m, &jr, 0);
    expect(&m, 0, KC_CLASSIC_SEND_SYNC);
    kc_classic_close(&m);
    kc_classic_request_failed(&m, 10);
    kc_classic_out_t o;
    bool closed = false;
    for (int i = 0; i < 10 && kc_classic_poll(&m, 10, &o); i++) {
        if (o.kind == KC_CLASSIC_SEND_JOIN || o.kind == KC_CLASSIC_SEND_SYNC)
            fail_msg("a closing member joined again (output %d)", o.kind);
        if (o.kind == KC_CLASSIC_REDISCOVER) /* the coordinator for the LeaveGroup */
            kc_classic_coordinator_known(&m, 10);
        if (o.kind == KC_CLASSIC_SEND_LEAVE)
            kc_classic_leave_response(&m, 0, 10);
        closed |= o.kind == KC_CLASSIC_CLOSED;
    }
    assert_true(closed);
    kc_classic_free(&m);
}

/* kc_close while the member's JoinGroup waits at the coordinator for the rebalance: the member
 * drops that request (ABANDON: a LeaveGroup behind it on the same connection would wait for the
 * whole rebalance), revokes what it still holds (cooperative: its partitions stay through the
 * join), finds the coordinator again, waits for it rather than closing without a leave, then
 * leaves and closes. `found`: false when no coordinator comes back: the close ends without a
 * leave once the lost-coordinator bound (request.timeout.ms) passed. */
static void close_abandons(kc_assignor_t assignor, bool found)
{
    kc_classic_t m;
    start(&m, assignor, NULL);
    const int32_t p[] = {0, 1};
    join_alone(&m, "m-a", p, 2, 0);
    kc_classic_rejoin(&m);
    kc_classic_out_t o;
    bool joined = false;
    for (int i = 0; i < 10 && !joined && kc_classic_poll(&m, 10, &o); i++) {
        complete_step(&m, &o, 10);
        joined = o.kind == KC_CLASSIC_SEND_JOIN;
    }
    assert_true(joined); /* in flight now, parked at the coordinator */
    size_t held = m.rc.owned.n;
    assert_int_equal(held, assignor == KC_ASSIGNOR_COOPERATIVE_STICKY ? 2 : 0);
    kc_classic_close(&m);
    expect(&m, 20, KC_CLASSIC_ABANDON);
    expect_nothing(&m, 20); /* until the dropped request has failed */
    kc_classic_request_failed(&m, 30);
    expect(&m, 30, KC_CLASSIC_REDISCOVER);
    bool revoked = false;
    for (int i = 0; i < 10 && kc_classic_poll(&m, 40, &o); i++) { /* without the coordinator */
        if (o.kind == KC_CLASSIC_SEND_LEAVE || o.kind == KC_CLASSIC_CLOSED)
            fail_msg("output %d before the coordinator was found again", o.kind);
        revoked |= o.kind == KC_CLASSIC_REVOKE;
        complete_step(&m, &o, 40);
    }
    assert_int_equal(revoked, held > 0); /* what it held is revoked while it waits */
    if (found) {
        kc_classic_coordinator_known(&m, 50);
        bool left = false;
        for (int i = 0; i < 10 && !left && kc_classic_poll(&m, 50, &o); i++) {
            complete_step(&m, &o, 50); /* the revocation's commit goes first */
            left = o.kind == KC_CLASSIC_SEND_LEAVE;
        }
        assert_true(left);
        assert_int_equal(o.req.leave.members.count, 1);
        kc_classic_leave_response(&m, 0, 60);
        expect(&m, 60, KC_CLASSIC_CLOSED);
    } else {
        int64_t bound = 30 + m.cfg.coordinator_timeout_ms;
        expect_nothing(&m, bound - 1);
        bool closed = false;
        for (int i = 0; i < 5 && !closed && kc_classic_poll(&m, bound, &o); i++) {
            if (o.kind == KC_CLASSIC_SEND_LEAVE)
                fail_msg("a LeaveGroup without a coordinator");
            closed = o.kind == KC_CLASSIC_CLOSED; /* the lost-coordinator ERROR may come first */
        }
        assert_true(closed);
    }
    kc_classic_free(&m);
}

static void close_abandons_parked_join(void **state)
{
    (void)state;
    close_abandons(KC_ASSIGNOR_RANGE, true);
    close_abandons(KC_ASSIGNOR_COOPERATIVE_STICKY, true);
    close_abandons(KC_ASSIGNOR_RANGE, false);
}

/* A cooperative member keeps its partitions through a rebalance: kc_close while that round's
 * SyncGroup is in flight, and then the SyncGroup fails: the close still revokes what it owns
 * (on_revoke, the commit) before it ends. */
static void close_after_failed_sync_revokes(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_COOPERATIVE_STICKY, NULL);
    const int32_t p[] = {0, 1};
    join_alone(&m, "m-a", p, 2, 0);
    kc_classic_rejoin(&m);
    kc_classic_out_t o;
    bool synced = false;
    for (int i = 0; i < 10 && !synced && kc_classic_poll(&m, 10, &o); i++) {
        if (o.kind == KC_CLASSIC_SEND_JOIN) {
            kc_join_group_response_t jr =
                join_ok(2, "cooperative-sticky", "x-other", "m-a", NULL, 0);
            kc_classic_join_response(&m, &jr, 10);
        }
        synced = o.kind == KC_CLASSIC_SEND_SYNC;
    }
    assert_true(synced);
    assert_int_equal(m.rc.owned.n, 2);
    kc_classic_close(&m);
    kc_classic_request_failed(&m, 20);
    bool revoked = false, closed = false;
    for (int i = 0; i < 20 && !closed && kc_classic_poll(&m, 20, &o); i++) {
        revoked |= o.kind == KC_CLASSIC_REVOKE || o.kind == KC_CLASSIC_LOSE;
        complete_step(&m, &o, 20); /* COMMIT: what on_revoke processed, before giving it up */
        if (o.kind == KC_CLASSIC_REDISCOVER)
            kc_classic_coordinator_known(&m, 20);
        if (o.kind == KC_CLASSIC_SEND_LEAVE)
            kc_classic_leave_response(&m, 0, 20);
        closed = o.kind == KC_CLASSIC_CLOSED;
    }
    assert_true(revoked);
    assert_true(closed);
    kc_classic_free(&m);
}

static void inconsistent_protocol_names_both_sides(void **state)
{
    (void)state;
    kc_classic_t m;
    kc_classic_config_t c = config(KC_ASSIGNOR_RANGE, NULL);
    c.assignors[1] = KC_ASSIGNOR_COOPERATIVE_STICKY;
    c.n_assignors = 2;
    kc_error_t e;
    assert_int_equal(kc_classic_init(&m, &c, lookup, NULL, &e), KC_OK);
    assert_false(m.cooperative); /* one eager assignor makes the member eager, as Java */
    const char *topics[] = {"orders"};
    kc_classic_subscribe(&m, topics, 1, &e);
    kc_classic_coordinator_known(&m, 0);
    kc_classic_out_t o = expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    assert_int_equal(o.req.join.protocols.count, 2);
    assert_memory_equal(o.req.join.protocols.items[0].name.ptr, "range", 5);
    kc_join_group_response_t jr;
    kc_join_group_response_init(&jr);
    jr.error_code = KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL;
    kc_classic_join_response(&m, &jr, 0);
    expect(&m, 0, KC_CLASSIC_DESCRIBE);
    kc_classic_describe_result(&m, "consumer", "sticky");
    o = expect(&m, 0, KC_CLASSIC_FATAL);
    assert_int_equal(o.error.kafka_code, KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL);
    assert_non_null(strstr(o.error.msg, "INCONSISTENT_GROUP_PROTOCOL"));
    assert_non_null(strstr(o.error.msg, "range,cooperative-sticky"));
    assert_non_null(strstr(o.error.msg, "'sticky'"));
    expect_nothing(&m, 1000);
    kc_classic_free(&m);
}

static void partition_count_change_makes_only_the_leader_rejoin(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    kc_classic_out_t o = expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    meta_t me = take_meta(&o, 0);
    kc_join_group_response_member_t mem[1] = {member("m-a", &me)};
    kc_join_group_response_t jr = join_ok(1, "range", "m-a", "m-a", mem, 1);
    kc_classic_join_response(&m, &jr, 0);
    o = expect(&m, 0, KC_CLASSIC_SEND_SYNC);
    kc_sync_group_response_t sr = sync_ok(o.req.sync.assignments.items[0].assignment);
    kc_classic_sync_response(&m, &sr, 0);
    o = expect(&m, 0, KC_CLASSIC_ASSIGN);
    assert_int_equal(o.parts->n, 6);
    kc_classic_action_done(&m, o.seq, 0);
    kc_classic_metadata_changed(&m, 1); /* nothing changed */
    expect_nothing(&m, 1);
    n_orders = 8;
    kc_classic_metadata_changed(&m, 2);
    o = expect(&m, 2, KC_CLASSIC_REVOKE); /* eager: revoke-all starts the rejoin */
    kc_classic_free(&m);

    /* A follower does not react: the leader's rejoin is what reassigns. */
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    const int32_t p[] = {0};
    join_alone(&m, "m-a", p, 1, 0);
    n_orders = 8;
    kc_classic_metadata_changed(&m, 2);
    expect_nothing(&m, 2);
    kc_classic_free(&m);
}

static void static_member_close_does_not_leave(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, "inst-1");
    const int32_t p[] = {0, 1};
    join_alone(&m, "m-a", p, 2, 0);
    kc_classic_close(&m);
    kc_classic_out_t o = expect(&m, 1, KC_CLASSIC_REVOKE);
    kc_classic_action_done(&m, o.seq, 1);
    o = expect(&m, 1, KC_CLASSIC_COMMIT);
    assert_string_equal(o.who.group_instance_id, "inst-1");
    kc_classic_commit_result(&m, o.seq, 0, 1);
    o = expect(&m, 1, KC_CLASSIC_DROP);
    kc_classic_action_done(&m, o.seq, 1);
    expect(&m, 1, KC_CLASSIC_CLOSED); /* straight to CLOSED: no SEND_LEAVE */
    expect_nothing(&m, 100000);
    kc_classic_free(&m);

    /* A dynamic member does send LeaveGroup. */
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    join_alone(&m, "m-a", p, 2, 0);
    kc_classic_close(&m);
    o = expect(&m, 1, KC_CLASSIC_REVOKE);
    kc_classic_action_done(&m, o.seq, 1);
    o = expect(&m, 1, KC_CLASSIC_COMMIT);
    kc_classic_commit_result(&m, o.seq, 0, 1);
    o = expect(&m, 1, KC_CLASSIC_DROP);
    kc_classic_action_done(&m, o.seq, 1);
    o = expect(&m, 1, KC_CLASSIC_SEND_LEAVE);
    assert_int_equal(o.req.leave.members.count, 1);
    assert_memory_equal(o.req.leave.members.items[0].member_id.ptr, "m-a", 3);
    kc_classic_leave_response(&m, 0, 2);
    expect(&m, 2, KC_CLASSIC_CLOSED);
    kc_classic_free(&m);
}

/* The broker converting the group under us (a KIP-848 member joined). */
static void rolling_upgrade_shapes_are_not_errors(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_COOPERATIVE_STICKY, NULL);
    const int32_t p[] = {0, 1, 2};
    join_alone(&m, "m-a", p, 3, 0);
    int64_t now = 0;
    heartbeat(&m, &now, KC_KAFKA_REBALANCE_IN_PROGRESS);
    kc_classic_out_t o = expect(&m, now, KC_CLASSIC_SEND_JOIN);
    /* The waiting JoinGroup is answered REBALANCE_IN_PROGRESS: ask again. */
    kc_join_group_response_t jr;
    kc_join_group_response_init(&jr);
    jr.error_code = KC_KAFKA_REBALANCE_IN_PROGRESS;
    kc_classic_join_response(&m, &jr, now);
    o = expect(&m, now, KC_CLASSIC_SEND_JOIN);
    /* Answered with no leader and no members: nobody relays. */
    jr = join_ok(5, "cooperative-sticky", "", "m-a", NULL, 0);
    kc_classic_join_response(&m, &jr, now);
    assert_false(m.is_leader);
    o = expect(&m, now, KC_CLASSIC_SEND_SYNC);
    assert_int_equal(o.req.sync.assignments.count, 0);
    /* A SyncGroup the group moved on from: REBALANCE_IN_PROGRESS, join again. */
    kc_sync_group_response_t sr = sync_ok(KC_BYTES_NULL);
    sr.error_code = KC_KAFKA_REBALANCE_IN_PROGRESS;
    kc_classic_sync_response(&m, &sr, now);
    o = expect(&m, now, KC_CLASSIC_SEND_JOIN);
    kc_classic_join_response(&m, &jr, now);
    expect(&m, now, KC_CLASSIC_SEND_SYNC);
    /* The broker computed our partitions: keep 0 and 2, give up 1. */
    const int32_t keep[] = {0, 2}, gone[] = {1};
    kc_wbuf_t w = encode_assignment(keep, 2);
    sr = sync_ok((kc_bytes_t){w.data, (int32_t)w.len});
    kc_classic_sync_response(&m, &sr, now);
    kc_wbuf_free(&w);
    o = expect(&m, now, KC_CLASSIC_REVOKE);
    assert_parts(o.parts, gone, 1);
    kc_classic_action_done(&m, o.seq, now);
    o = expect(&m, now, KC_CLASSIC_COMMIT);
    assert_int_equal(o.who.generation_or_epoch, 5);
    kc_classic_commit_result(&m, o.seq, 0, now);
    o = expect(&m, now, KC_CLASSIC_DROP);
    kc_classic_action_done(&m, o.seq, now);
    assert_parts(&m.rc.owned, keep, 2);
    assert_int_equal(m.fatal.code, KC_OK);
    kc_classic_free(&m);
}

/* Eager sticky: after an assignment the subscription's user data carries it with the
 * generation, and a leader decodes it back as the member's previous assignment. */
static void sticky_user_data_round_trips(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_STICKY, NULL);
    kc_classic_out_t o = expect(&m, 0, KC_CLASSIC_SEND_JOIN);
    kc_consumer_protocol_subscription_t sub;
    kc_arena_t ar = {0};
    kc_error_t e;
    int16_t v;
    kc_rbuf_t r = kc_rbuf(o.req.join.protocols.items[0].metadata.ptr,
                          (size_t)o.req.join.protocols.items[0].metadata.len);
    assert_int_equal(kc_consumer_protocol_subscription_decode_versioned(&sub, &v, &r, &ar, &e),
                     KC_OK);
    assert_int_equal(sub.user_data.len, -1); /* nothing before the first assignment (Java) */
    kc_arena_reset(&ar);
    kc_classic_free(&m);

    start(&m, KC_ASSIGNOR_STICKY, NULL);
    const int32_t p[] = {2, 5};
    join_alone(&m, "m-a", p, 2, 0);
    int64_t now = 0;
    heartbeat(&m, &now, KC_KAFKA_REBALANCE_IN_PROGRESS);
    o = expect(&m, now, KC_CLASSIC_REVOKE);
    kc_classic_action_done(&m, o.seq, now);
    o = expect(&m, now, KC_CLASSIC_COMMIT);
    kc_classic_commit_result(&m, o.seq, 0, now);
    o = expect(&m, now, KC_CLASSIC_DROP);
    kc_classic_action_done(&m, o.seq, now);
    o = expect(&m, now, KC_CLASSIC_SEND_JOIN);
    meta_t me = take_meta(&o, 0);
    /* As leader alone, with a second, fresh member: sticky keeps 2 and 5 with us. */
    kc_classic_t b;
    start(&b, KC_ASSIGNOR_STICKY, NULL);
    kc_classic_out_t obj = expect(&b, 0, KC_CLASSIC_SEND_JOIN);
    meta_t mb = take_meta(&obj, 0);
    kc_join_group_response_member_t mem[2] = {member("m-a", &me), member("m-b", &mb)};
    kc_join_group_response_t jr = join_ok(2, "sticky", "m-a", "m-a", mem, 2);
    kc_classic_join_response(&m, &jr, now);
    o = expect(&m, now, KC_CLASSIC_SEND_SYNC);
    for (int i = 0; i < 2; i++) {
        const kc_sync_group_request_assignment_t *it = &o.req.sync.assignments.items[i];
        int32_t got[8];
        size_t n = decode_parts(it->assignment, got);
        assert_int_equal(n, 3);
        if (it->member_id.ptr[2] == 'a') {
            bool has2 = false, has5 = false;
            for (size_t j = 0; j < n; j++) {
                has2 = has2 || got[j] == 2;
                has5 = has5 || got[j] == 5;
            }
            assert_true(has2 && has5);
        }
    }
    kc_arena_free(&ar);
    kc_classic_free(&m);
    kc_classic_free(&b);
}

/* A commit answered NOT_COORDINATOR during revocation is retried after rediscovery, within
 * the commit deadline; past it the revocation goes on (at-least-once) instead of wedging. */
static void revocation_commit_retries_then_gives_up(void **state)
{
    (void)state;
    kc_classic_t m;
    start(&m, KC_ASSIGNOR_RANGE, NULL);
    const int32_t p[] = {0};
    join_alone(&m, "m-a", p, 1, 0);
    int64_t now = 0;
    heartbeat(&m, &now, KC_KAFKA_REBALANCE_IN_PROGRESS);
    kc_classic_out_t o = expect(&m, now, KC_CLASSIC_REVOKE);
    kc_classic_action_done(&m, o.seq, now);
    o = expect(&m, now, KC_CLASSIC_COMMIT);
    kc_classic_commit_result(&m, o.seq, KC_KAFKA_NOT_COORDINATOR, now + 10);
    expect(&m, now + 10, KC_CLASSIC_REDISCOVER);
    expect_nothing(&m, now + 200);
    kc_classic_coordinator_known(&m, now + 300);
    o = expect(&m, now + 300, KC_CLASSIC_COMMIT);
    /* No answer at all: the deadline (5 s from the first commit) moves on. Until then only
     * heartbeats go out. */
    for (int64_t t = now + 300; t < now + 5000; t += 100)
        while (kc_classic_poll(&m, t, &o)) {
            assert_int_equal(o.kind, KC_CLASSIC_SEND_HEARTBEAT);
            kc_classic_heartbeat_response(&m, KC_KAFKA_REBALANCE_IN_PROGRESS, t);
        }
    o = expect(&m, now + 5000, KC_CLASSIC_DROP);
    kc_classic_action_done(&m, o.seq, now + 5000);
    expect(&m, now + 5000, KC_CLASSIC_SEND_JOIN);
    kc_classic_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(leader_assigns_two_members_as_the_assignor_does),
        cmocka_unit_test(follower_sends_empty_assignments),
        cmocka_unit_test(member_id_required_retries_with_the_given_id),
        cmocka_unit_test(eager_revokes_and_commits_before_joining),
        cmocka_unit_test(close_leaves_after_app_commits),
        cmocka_unit_test(cooperative_two_round_handover),
        cmocka_unit_test(illegal_generation_loses_without_commit),
        cmocka_unit_test(fenced_instance_is_fatal),
        cmocka_unit_test(fenced_during_a_revoke_loses_and_drops_everything),
        cmocka_unit_test(not_coordinator_in_success_rediscovers_silently),
        cmocka_unit_test(repeated_losses_back_off),
        cmocka_unit_test(close_survives_failed_sync),
        cmocka_unit_test(close_abandons_parked_join),
        cmocka_unit_test(close_after_failed_sync_revokes),
        cmocka_unit_test(inconsistent_protocol_names_both_sides),
        cmocka_unit_test(partition_count_change_makes_only_the_leader_rejoin),
        cmocka_unit_test(static_member_close_does_not_leave),
        cmocka_unit_test(rolling_upgrade_shapes_are_not_errors),
        cmocka_unit_test(sticky_user_data_round_trips),
        cmocka_unit_test(revocation_commit_retries_then_gives_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
