/* Fixtures shared by the classic-member unit tests (test_group_classic*.c): a one-topic
 * ("orders") metadata lookup, scripted responses, and poll expectations. Owner: the test thread. */
#ifndef KC_TEST_GROUP_CLASSIC_FIXTURES_H
#define KC_TEST_GROUP_CLASSIC_FIXTURES_H

#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/classic/assign/assign.h"
#include "group/classic/member.h"
#include "proto/consumer_protocol.gen.h"

/* ---- fixtures ----------------------------------------------------------------------------- */

static int32_t n_orders = 6;
static inline int32_t lookup(void *ctx, const char *topic)
{
    (void)ctx;
    return strcmp(topic, "orders") == 0 ? n_orders : 0;
}

static inline kc_classic_config_t config(kc_assignor_t a, const char *instance)
{
    kc_classic_config_t c = {0};
    c.group_id = "g";
    c.instance_id = instance;
    c.assignors[0] = a;
    c.n_assignors = 1;
    c.session_timeout_ms = 45000;
    c.rebalance_timeout_ms = 300000;
    c.heartbeat_interval_ms = 3000;
    c.coordinator_timeout_ms = 10000;
    c.auto_commit = true;
    c.commit_timeout_ms = 5000;
    c.retry_backoff_ms = 100;
    return c;
}

static inline void start(kc_classic_t *m, kc_assignor_t a, const char *instance)
{
    kc_classic_config_t c = config(a, instance);
    kc_error_t e;
    n_orders = 6;
    assert_int_equal(kc_classic_init(m, &c, lookup, NULL, &e), KC_OK);
    const char *topics[] = {"orders"};
    assert_int_equal(kc_classic_subscribe(m, topics, 1, &e), KC_OK);
    kc_classic_coordinator_known(m, 0);
}

static inline kc_classic_out_t expect(kc_classic_t *m, int64_t now, kc_classic_out_kind_t kind)
{
    kc_classic_out_t o;
    assert_true(kc_classic_poll(m, now, &o));
    if (o.kind != kind)
        fail_msg("expected output %d, got %d", kind, o.kind);
    return o;
}

static inline void expect_nothing(kc_classic_t *m, int64_t now)
{
    kc_classic_out_t o;
    if (kc_classic_poll(m, now, &o))
        fail_msg("expected no output, got %d", o.kind);
}

/* Copy of a member's JoinGroup protocol metadata (views die at the next input). */
typedef struct meta {
    uint8_t b[512];
    int32_t n;
} meta_t;

static inline meta_t take_meta(const kc_classic_out_t *o, size_t i)
{
    meta_t x;
    assert_true(o->req.join.protocols.items[i].metadata.len <= (int32_t)sizeof x.b);
    x.n = o->req.join.protocols.items[i].metadata.len;
    memcpy(x.b, o->req.join.protocols.items[i].metadata.ptr, (size_t)x.n);
    return x;
}

static inline kc_join_group_response_t join_ok(int32_t gen, const char *proto, const char *leader,
                                               const char *me, kc_join_group_response_member_t *mb,
                                               int32_t n)
{
    kc_join_group_response_t r;
    kc_join_group_response_init(&r);
    r.generation_id = gen;
    r.protocol_name = kc_str(proto);
    r.leader = kc_str(leader);
    r.member_id = kc_str(me);
    r.members.count = n;
    r.members.items = mb;
    return r;
}

static inline kc_join_group_response_member_t member(const char *id, const meta_t *x)
{
    kc_join_group_response_member_t mb = {kc_str(id), KC_STR_NULL, {x->b, x->n}};
    return mb;
}

static inline kc_sync_group_response_t sync_ok(kc_bytes_t assignment)
{
    kc_sync_group_response_t r;
    kc_sync_group_response_init(&r);
    r.assignment = assignment;
    return r;
}

/* An assignment as the broker (or a Java leader) would send it: topic "orders", parts[]. */
static inline kc_wbuf_t encode_assignment(const int32_t *parts, int32_t n)
{
    kc_consumer_protocol_assignment_topic_partition_t t = {kc_str("orders"), {n, (int32_t *)parts}};
    kc_consumer_protocol_assignment_t a;
    kc_consumer_protocol_assignment_init(&a);
    a.assigned_partitions.count = n ? 1 : 0;
    a.assigned_partitions.items = &t;
    kc_wbuf_t w = {0};
    kc_error_t e;
    assert_int_equal(kc_consumer_protocol_assignment_encode_versioned(&a, 3, &w, &e), KC_OK);
    return w;
}

static inline void assert_parts(const kc_tpset_t *s, const int32_t *want, size_t n)
{
    if (s->n != n)
        fail_msg("expected %zu partitions, got %zu", n, s->n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(s->items[i].topic->name, "orders");
        assert_int_equal(s->items[i].partition, want[i]);
    }
}

/* Join as the only member and take `parts`; returns with ASSIGN done (stable, owning parts). */
static inline void join_alone(kc_classic_t *m, const char *id, const int32_t *parts, int32_t n,
                              int64_t now)
{
    expect(m, now, KC_CLASSIC_SEND_JOIN);
    kc_join_group_response_t jr =
        join_ok(1, kc_assignor_name(m->cfg.assignors[0]), "x-other", id, NULL, 0);
    kc_classic_join_response(m, &jr, now);
    expect(m, now, KC_CLASSIC_SEND_SYNC);
    kc_wbuf_t w = encode_assignment(parts, n);
    kc_sync_group_response_t sr = sync_ok((kc_bytes_t){w.data, (int32_t)w.len});
    kc_classic_sync_response(m, &sr, now);
    kc_wbuf_free(&w);
    if (n) {
        kc_classic_out_t o = expect(m, now, KC_CLASSIC_ASSIGN);
        kc_classic_action_done(m, o.seq, now);
    }
    assert_int_equal(m->state, KC_CLASSIC_ST_STABLE);
    assert_int_equal(m->rc.owned.n, (size_t)n);
}

/* Completes a reconciliation output the way the driver does when all goes well: REVOKE, LOSE,
 * DROP and ASSIGN done, COMMIT answered without error; any other output is left alone. */
static inline void complete_step(kc_classic_t *m, const kc_classic_out_t *o, int64_t now)
{
    if (o->kind == KC_CLASSIC_REVOKE || o->kind == KC_CLASSIC_LOSE || o->kind == KC_CLASSIC_DROP ||
        o->kind == KC_CLASSIC_ASSIGN)
        kc_classic_action_done(m, o->seq, now);
    if (o->kind == KC_CLASSIC_COMMIT)
        kc_classic_commit_result(m, o->seq, 0, now);
}

static inline kc_classic_out_t heartbeat(kc_classic_t *m, int64_t *now, int16_t code)
{
    *now += m->cfg.heartbeat_interval_ms;
    kc_classic_out_t o = expect(m, *now, KC_CLASSIC_SEND_HEARTBEAT);
    assert_int_equal(o.req.heartbeat.generation_id, m->generation);
    kc_classic_heartbeat_response(m, code, *now);
    return o;
}

#endif
