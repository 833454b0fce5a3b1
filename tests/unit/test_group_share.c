/* engine/group/share: the KIP-848 member over ShareGroupHeartbeat (group/share/wire.h). Every
 * request the member makes goes through the share wire's encoder and is read back with the
 * generated ShareGroupHeartbeat decoder; every answer is written as a ShareGroupHeartbeat response
 * and read through the share wire's decoder, so the test sees exactly the bytes a broker would. */
#include "kc_test.h"

#include <stdio.h>
#include <string.h>

#include "group/848/member.h"
#include "group/share/wire.h"
#include "proto/kafka_errors.h"

static const char *lookup(void *ctx, const uint8_t id[16])
{
    (void)ctx;
    return id[15] == 7 ? "t7" : NULL;
}

static void member(kc_g848_t *gc)
{
    kc_g848_config_t c = {0};
    c.group_id = "sg";
    c.rack_id = "r1";
    c.commit_on_revoke = false;
    c.commit_timeout_ms = 5000;
    c.coordinator_timeout_ms = 3000;
    c.retry_backoff_ms = 100;
    c.retry_backoff_max_ms = 1000;
    c.lookup = lookup;
    kc_error_t e;
    assert_int_equal(kc_g848_init(gc, &c, &e), KC_OK);
    const char *topics[] = {"t7"};
    assert_int_equal(kc_g848_subscribe(gc, topics, 1, NULL, 0, &e), KC_OK);
}

/* The due heartbeat as the broker reads it: encoded by the share wire, decoded as
 * ShareGroupHeartbeatRequest v1 (views into *buf, arrays in *a). */
static kc_share_group_heartbeat_request_t sent(kc_g848_t *gc, int64_t now, kc_wbuf_t *w,
                                               kc_arena_t *a)
{
    kc_consumer_group_heartbeat_request_t req;
    kc_error_t e;
    assert_int_equal(kc_g848_heartbeat_due(gc, now, 1, &req, &e), KC_OK);
    kc_g848_heartbeat_sent(gc, now);
    w->len = 0;
    assert_int_equal(kc_gshare_wire.encode(&req, 1, w, &e), KC_OK);
    kc_rbuf_t r = kc_rbuf(w->data, w->len);
    kc_share_group_heartbeat_request_t q;
    assert_int_equal(kc_share_group_heartbeat_request_decode(&q, 1, &r, a, &e), KC_OK);
    assert_int_equal(kc_rbuf_remaining(&r), 0);
    return q;
}

/* A ShareGroupHeartbeatResponse with `code`, `epoch` and partitions `parts` of topic t7 (NULL:
 * no assignment), through the wire's decoder into the member. */
static void answer(kc_g848_t *gc, int64_t now, int16_t code, int32_t epoch, const int32_t *parts,
                   int32_t n)
{
    kc_share_group_heartbeat_response_t m;
    kc_share_group_heartbeat_response_init(&m);
    m.error_code = code;
    m.member_epoch = epoch;
    m.heartbeat_interval_ms = 500;
    kc_share_group_heartbeat_response_topic_partitions_t tp = {0};
    tp.topic_id.b[15] = 7;
    tp.partitions.count = n;
    tp.partitions.items = (int32_t *)parts;
    if (parts) {
        m.has_assignment = true;
        m.assignment.topic_partitions.count = 1;
        m.assignment.topic_partitions.items = &tp;
    }
    kc_wbuf_t w = {0};
    kc_error_t e;
    assert_int_equal(kc_share_group_heartbeat_response_encode(&m, 1, &w, &e), KC_OK);
    kc_rbuf_t r = kc_rbuf(w.data, w.len);
    kc_arena_t a = {0};
    kc_consumer_group_heartbeat_response_t resp;
    assert_int_equal(kc_gshare_wire.decode(&resp, 1, &r, &a, &e), KC_OK);
    kc_g848_on_heartbeat_response(gc, now, &resp);
    kc_arena_free(&a);
    kc_wbuf_free(&w);
}

static kc_g848_action_t next(kc_g848_t *gc, int64_t now, kc_g848_act_kind_t kind)
{
    kc_g848_action_t a;
    assert_true(kc_g848_next_action(gc, now, &a));
    if (a.kind != kind)
        fail_msg("action %d, expected %d (%s)", a.kind, kind, kc_g848_state_name(gc->state));
    return a;
}

static bool str_is(kc_str_t s, const char *want)
{
    return s.len == (int32_t)strlen(want) && memcmp(s.ptr, want, (size_t)s.len) == 0;
}

/* Join: epoch 0, a client-made member id, the subscription and rack; the assignment arrives as
 * one ASSIGN (no COMMIT, nothing revoked first), and the acknowledging heartbeat carries only
 * the epoch: no owned partitions exist on this wire, and the subscription is "unchanged". */
static void join_assign_ack(void **state)
{
    (void)state;
    kc_g848_t gc;
    member(&gc);
    kc_wbuf_t w = {0};
    kc_arena_t a = {0};
    kc_share_group_heartbeat_request_t q = sent(&gc, 0, &w, &a);
    assert_true(str_is(q.group_id, "sg"));
    assert_int_equal(q.member_epoch, 0);
    assert_true(q.member_id.len >= 22);
    assert_true(str_is(q.rack_id, "r1"));
    assert_int_equal(q.subscribed_topic_names.count, 1);
    assert_true(str_is(q.subscribed_topic_names.items[0], "t7"));
    char id[64];
    snprintf(id, sizeof id, "%.*s", (int)q.member_id.len, q.member_id.ptr);

    const int32_t parts[] = {0, 1, 2};
    answer(&gc, 10, 0, 1, parts, 3);
    kc_g848_action_t x = next(&gc, 10, KC_G848_ACT_ASSIGN);
    assert_int_equal(x.parts->n, 3);
    kc_g848_action_done(&gc, x.seq, 10);
    kc_g848_action_t none;
    assert_false(kc_g848_next_action(&gc, 10, &none));
    q = sent(&gc, 10, &w, &a);
    assert_int_equal(q.member_epoch, 1);
    assert_true(str_is(q.member_id, id));
    assert_int_equal(q.subscribed_topic_names.count, -1); /* unchanged */
    answer(&gc, 20, 0, 1, NULL, 0);
    assert_int_equal(gc.state, KC_G848_STABLE);

    /* The coordinator takes partition 2 away: REVOKE then DROP, still no COMMIT. */
    const int32_t two[] = {0, 1};
    q = sent(&gc, 600, &w, &a);
    answer(&gc, 610, 0, 2, two, 2);
    x = next(&gc, 610, KC_G848_ACT_REVOKE);
    assert_int_equal(x.parts->n, 1);
    kc_g848_action_done(&gc, x.seq, 610);
    x = next(&gc, 610, KC_G848_ACT_DROP);
    kc_g848_action_done(&gc, x.seq, 610);
    assert_false(kc_g848_next_action(&gc, 610, &none));

    /* Close: everything revoked, then the leave with epoch -1 and the same member id. */
    kc_g848_close(&gc, 700);
    x = next(&gc, 700, KC_G848_ACT_REVOKE);
    assert_int_equal(x.parts->n, 2);
    kc_g848_action_done(&gc, x.seq, 700);
    x = next(&gc, 700, KC_G848_ACT_DROP);
    kc_g848_action_done(&gc, x.seq, 700);
    while (kc_g848_next_action(&gc, 700, &none))
        fail_msg("unexpected action %d at close", none.kind);
    q = sent(&gc, 700, &w, &a);
    assert_int_equal(q.member_epoch, -1);
    assert_true(str_is(q.member_id, id));
    answer(&gc, 710, 0, -1, NULL, 0);
    assert_int_equal(gc.state, KC_G848_UNSUBSCRIBED);
    kc_arena_free(&a);
    kc_wbuf_free(&w);
    kc_g848_free(&gc);
}

/* FENCED_MEMBER_EPOCH: the partitions are lost, then the member joins again with epoch 0 and
 * the same id, sending its subscription again. */
static void fenced_rejoins(void **state)
{
    (void)state;
    kc_g848_t gc;
    member(&gc);
    kc_wbuf_t w = {0};
    kc_arena_t a = {0};
    kc_share_group_heartbeat_request_t q = sent(&gc, 0, &w, &a);
    char id[64];
    snprintf(id, sizeof id, "%.*s", (int)q.member_id.len, q.member_id.ptr);
    const int32_t parts[] = {0};
    answer(&gc, 10, 0, 3, parts, 1);
    kc_g848_action_t x = next(&gc, 10, KC_G848_ACT_ASSIGN);
    kc_g848_action_done(&gc, x.seq, 10);
    q = sent(&gc, 10, &w, &a);
    answer(&gc, 20, KC_KAFKA_FENCED_MEMBER_EPOCH, 0, NULL, 0);
    x = next(&gc, 20, KC_G848_ACT_LOSE);
    assert_int_equal(x.parts->n, 1);
    kc_g848_action_done(&gc, x.seq, 20);
    kc_g848_action_t more;
    while (kc_g848_next_action(&gc, 20, &more))
        if (more.kind != KC_G848_ACT_DROP && more.kind != KC_G848_ACT_ERROR)
            fail_msg("unexpected action %d after the loss", more.kind);
        else if (more.kind == KC_G848_ACT_DROP)
            kc_g848_action_done(&gc, more.seq, 20);
    q = sent(&gc, 200, &w, &a);
    assert_int_equal(q.member_epoch, 0);
    assert_true(str_is(q.member_id, id));
    assert_int_equal(q.subscribed_topic_names.count, 1);
    kc_arena_free(&a);
    kc_wbuf_free(&w);
    kc_g848_free(&gc);
}

/* What ShareGroupHeartbeat cannot carry is refused or dropped, never sent wrong: a regex is
 * refused; instance id, assignor, rebalance timeout and owned partitions are not on the wire. */
static void wire_subset(void **state)
{
    (void)state;
    kc_consumer_group_heartbeat_request_t in;
    kc_consumer_group_heartbeat_request_init(&in);
    in.group_id = kc_str("g");
    in.member_id = kc_str("m");
    in.member_epoch = 4;
    in.instance_id = kc_str("static-1");
    in.server_assignor = kc_str("range");
    in.rebalance_timeout_ms = 1234;
    in.subscribed_topic_names.count = -1; /* unchanged */
    kc_share_group_heartbeat_request_t out;
    kc_error_t e;
    assert_int_equal(kc_gshare_request_from(&in, &out, &e), KC_OK);
    assert_true(str_is(out.group_id, "g"));
    assert_int_equal(out.member_epoch, 4);
    assert_int_equal(out.subscribed_topic_names.count, -1);
    in.subscribed_topic_regex = kc_str("^t.*");
    assert_int_equal(kc_gshare_request_from(&in, &out, &e), KC_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "topic names only"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(join_assign_ack),
        cmocka_unit_test(fenced_rejoins),
        cmocka_unit_test(wire_subset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
