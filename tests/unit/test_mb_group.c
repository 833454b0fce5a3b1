/*
 * kc-memory-broker's group coordinators (tests/testkit/mb_group.c, mb_g848.c) driven directly,
 * with the clock passed in: classic joins (MEMBER_ID_REQUIRED, rounds, leader, protocol choice),
 * SyncGroup, Heartbeat errors, rebalance and session timeouts, LeaveGroup, commit checks; KIP-848
 * joins, revocation before reassignment (no partition ever has two owners), fencing, leave and
 * expiry. The wire side is covered by tests/kafka/memory_broker_groups.test.sh.
 *
 * Owner: the test's main thread (no lock needed: the functions expect mb_t.lock held, and nothing
 * else runs).
 */
#include "kc_test.h"
#include "mb.h"
#include "proto/kafka_errors.h"

#include <stdlib.h>
#include <string.h>

#define NP 4

static mb_t g_mb;

static int teardown(void **state)
{
    (void)state;
    mbg_free_all(&g_mb);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    memset(&g_mb, 0, sizeof g_mb);
    g_mb.topic = "T";
    g_mb.partitions = NP;
    for (int i = 0; i < 16; i++)
        g_mb.topic_id.b[i] = (uint8_t)(i + 1);
    return 0;
}

static mbg_group_t *group(const char *id)
{
    mbg_group_t *g = mbg_find(&g_mb, kc_str(id), true);
    assert_non_null(g);
    return g;
}

/* ---- classic ----------------------------------------------------------------------------------
 */

typedef struct proto_set {
    int n;
    kc_str_t names[3];
    kc_bytes_t metas[3];
} proto_set_t;

static proto_set_t protos(const char *a, const char *b)
{
    proto_set_t p = {0};
    const char *v[2] = {a, b};
    for (int i = 0; i < 2 && v[i]; i++) {
        p.names[p.n] = kc_str(v[i]);
        p.metas[p.n] = (kc_bytes_t){(const uint8_t *)v[i], (int32_t)strlen(v[i])};
        p.n++;
    }
    return p;
}

static int16_t join(mbg_group_t *g, const char *member, const proto_set_t *p, int64_t now,
                    mbg_member_t **m)
{
    mbg_join_req_t q = {.member_id = kc_str(member ? member : ""),
                        .session_ms = 10000,
                        .rebalance_ms = 30000,
                        .protocol_type = kc_str("consumer"),
                        .n_protos = p->n,
                        .proto_names = p->names,
                        .proto_metas = p->metas,
                        .version = 9};
    return mbg_join(&g_mb, g, &q, now, m);
}

/* A v9 member: MEMBER_ID_REQUIRED, then the join with the id. Returns its id (static copy). */
static char *join_new(mbg_group_t *g, const proto_set_t *p, int64_t now, mbg_member_t **m)
{
    assert_int_equal(join(g, NULL, p, now, m), KC_KAFKA_MEMBER_ID_REQUIRED);
    assert_non_null(*m);
    assert_true((*m)->pending);
    char *id = strdup((*m)->id);
    assert_int_equal(join(g, id, p, now, m), 0);
    return id;
}

static void test_classic_one_member(void **state)
{
    (void)state;
    mbg_group_t *g = group("c1");
    proto_set_t p = protos("range", "roundrobin");
    mbg_member_t *m;
    /* An unknown id is refused before anything else. */
    assert_int_equal(join(g, "nobody", &p, 0, &m), KC_KAFKA_UNKNOWN_MEMBER_ID);
    char *a = join_new(g, &p, 0, &m);
    /* Alone: the round ends at once; it leads; the first protocol wins. */
    assert_int_equal(m->join_gen, 1);
    assert_int_equal(g->state, MBG_COMPLETING);
    assert_string_equal(g->leader, a);
    assert_string_equal(g->protocol_name, "range");
    bool wait;
    mbg_assignment_t as = {kc_str(a), {(const uint8_t *)"xyz", 3}};
    assert_int_equal(mbg_sync(g, kc_str(a), 0, &as, 1, 10, &wait), KC_KAFKA_ILLEGAL_GENERATION);
    assert_int_equal(mbg_sync(g, kc_str(a), 1, &as, 1, 10, &wait), 0);
    assert_false(wait);
    assert_int_equal(g->state, MBG_STABLE);
    assert_int_equal(m->assignment_len, 3);
    assert_memory_equal(m->assignment, "xyz", 3);
    assert_int_equal(mbg_heartbeat(g, kc_str(a), 1, 20), 0);
    assert_int_equal(mbg_heartbeat(g, kc_str(a), 7, 20), KC_KAFKA_ILLEGAL_GENERATION);
    assert_int_equal(mbg_heartbeat(g, kc_str("x"), 1, 20), KC_KAFKA_UNKNOWN_MEMBER_ID);
    /* The same member rejoining as a follower would get the same generation back; as the
     * leader it opens a round (and, alone, ends it at once). */
    assert_int_equal(join(g, a, &p, 30, &m), 0);
    assert_int_equal(m->join_gen, 2);
    free(a);
}

static void test_classic_second_member_rebalance(void **state)
{
    (void)state;
    mbg_group_t *g = group("c2");
    proto_set_t pa = protos("range", "roundrobin"), pb = protos("roundrobin", NULL);
    proto_set_t none = protos("cooperative-sticky", NULL);
    mbg_member_t *ma, *mb;
    char *a = join_new(g, &pa, 0, &ma);
    bool wait;
    assert_int_equal(mbg_sync(g, kc_str(a), 1, NULL, 0, 0, &wait), 0);
    /* No protocol in common with the group: refused. */
    assert_int_equal(join(g, NULL, &none, 100, &mb), KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL);
    char *b = join_new(g, &pb, 100, &mb);
    /* B waits for the round; A learns of it from its heartbeat; commits still go through. */
    assert_int_equal(g->state, MBG_PREPARING);
    assert_int_equal(mb->join_gen, -1);
    assert_int_equal(mbg_heartbeat(g, kc_str(a), 1, 200), KC_KAFKA_REBALANCE_IN_PROGRESS);
    assert_int_equal(mbg_commit_check(g, kc_str(a), 1), 0);
    assert_int_equal(mbg_commit_check(g, kc_str(""), -1), 0);
    assert_int_equal(mbg_commit_check(g, kc_str("ghost"), 1), KC_KAFKA_UNKNOWN_MEMBER_ID);
    mbg_try_complete(&g_mb, g, 300);
    assert_int_equal(g->state, MBG_PREPARING); /* A has not rejoined */
    assert_int_equal(join(g, a, &pa, 400, &ma), 0);
    assert_int_equal(g->generation, 2);
    assert_int_equal(ma->join_gen, 2);
    assert_int_equal(mb->join_gen, 2);
    assert_string_equal(g->leader, a);                   /* the leader rejoined: it stays */
    assert_string_equal(g->protocol_name, "roundrobin"); /* A's first that B supports */
    assert_int_equal(mbg_member_meta(g, mb).len, (int32_t)strlen("roundrobin"));
    /* Between join and sync: commits refused as Kafka does, heartbeats fine. */
    assert_int_equal(mbg_commit_check(g, kc_str(a), 2), KC_KAFKA_REBALANCE_IN_PROGRESS);
    assert_int_equal(mbg_heartbeat(g, kc_str(b), 2, 450), 0);
    /* The follower's sync waits for the leader's. */
    assert_int_equal(mbg_sync(g, kc_str(b), 2, NULL, 0, 500, &wait), 0);
    assert_true(wait);
    mbg_assignment_t as[2] = {{kc_str(a), {(const uint8_t *)"AA", 2}},
                              {kc_str(b), {(const uint8_t *)"B", 1}}};
    assert_int_equal(mbg_sync(g, kc_str(a), 2, as, 2, 600, &wait), 0);
    assert_false(wait);
    assert_int_equal(mbg_sync(g, kc_str(b), 2, NULL, 0, 600, &wait), 0);
    assert_false(wait);
    assert_int_equal(mb->assignment_len, 1);
    assert_memory_equal(mb->assignment, "B", 1);
    assert_int_equal(mbg_commit_check(g, kc_str(b), 2), 0);
    assert_int_equal(mbg_commit_check(g, kc_str(b), 1), KC_KAFKA_ILLEGAL_GENERATION);
    /* B leaves: a round; A rejoins alone and leads generation 3. */
    assert_int_equal(mbg_leave(&g_mb, g, kc_str(b), 700), 0);
    assert_int_equal(mbg_leave(&g_mb, g, kc_str(b), 700), KC_KAFKA_UNKNOWN_MEMBER_ID);
    assert_int_equal(g->state, MBG_PREPARING);
    assert_int_equal(join(g, a, &pa, 800, &ma), 0);
    assert_int_equal(g->generation, 3);
    assert_string_equal(g->protocol_name, "range"); /* B is gone: A's first again */
    free(a);
    free(b);
}

static void test_classic_timeouts(void **state)
{
    (void)state;
    mbg_group_t *g = group("c3");
    proto_set_t p = protos("range", NULL);
    mbg_member_t *ma, *mb;
    char *a = join_new(g, &p, 0, &ma);
    bool wait;
    assert_int_equal(mbg_sync(g, kc_str(a), 1, NULL, 0, 0, &wait), 0);
    char *b = join_new(g, &p, 1000, &mb);
    /* A never rejoins: at the rebalance timeout (30 s from the round's start) it is dropped and
     * B leads generation 2. A's heartbeats meanwhile keep its session alive, not the round. */
    for (int64_t t = 8000; t <= 30000; t += 8000) {
        assert_int_equal(mbg_heartbeat(g, kc_str(a), 1, t), KC_KAFKA_REBALANCE_IN_PROGRESS);
        mbg_tick(&g_mb, t);
    }
    mbg_tick(&g_mb, 30999);
    assert_int_equal(g->state, MBG_PREPARING);
    mbg_tick(&g_mb, 31000);
    assert_int_equal(g->state, MBG_COMPLETING);
    assert_null(mbg_member_find(g, kc_str(a)));
    assert_string_equal(g->leader, b);
    assert_int_equal(g->generation, 2);
    assert_int_equal(mbg_heartbeat(g, kc_str(a), 2, 31000), KC_KAFKA_UNKNOWN_MEMBER_ID);
    assert_int_equal(mbg_sync(g, kc_str(b), 2, NULL, 0, 31000, &wait), 0);
    /* Silent past its session (10 s): B expires, the group empties. A parked member does not. */
    mb->waiting = 1;
    mbg_tick(&g_mb, 50000);
    assert_non_null(mbg_member_find(g, kc_str(b)));
    mb->waiting = 0;
    mbg_tick(&g_mb, 41001);
    assert_null(mbg_member_find(g, kc_str(b)));
    assert_int_equal(g->state, MBG_EMPTY);
    assert_int_equal(g->kind, MBG_NONE);
    /* A pending member (MEMBER_ID_REQUIRED, never back) expires too. */
    mbg_member_t *pend;
    assert_int_equal(join(g, NULL, &p, 60000, &pend), KC_KAFKA_MEMBER_ID_REQUIRED);
    assert_int_equal(g->n, 1);
    mbg_tick(&g_mb, 70001);
    assert_int_equal(g->n, 0);
    free(a);
    free(b);
}

static void test_classic_initial_delay(void **state)
{
    (void)state;
    g_mb.group_initial_delay_ms = 2000;
    mbg_group_t *g = group("c4");
    proto_set_t p = protos("range", NULL);
    mbg_member_t *ma, *mb;
    char *a = join_new(g, &p, 0, &ma);
    assert_int_equal(ma->join_gen, -1); /* the empty group's round waits for others */
    char *b = join_new(g, &p, 500, &mb);
    mbg_tick(&g_mb, 1999);
    assert_int_equal(g->state, MBG_PREPARING);
    mbg_tick(&g_mb, 2000);
    assert_int_equal(g->generation, 1); /* both in the first generation */
    assert_int_equal(ma->join_gen, 1);
    assert_int_equal(mb->join_gen, 1);
    g_mb.group_initial_delay_ms = 0;
    free(a);
    free(b);
}

/* ---- KIP-848 ----------------------------------------------------------------------------------
 */

static int32_t owned_parts[NP];

/* A heartbeat; owned: -1 terminated list, or NULL for "not sent". */
static int16_t hb(mbg_group_t *g, const char *member, int32_t epoch, const int32_t *owned,
                  int64_t now, mbg_member_t **m, bool *send)
{
    kc_consumer_group_heartbeat_request_t q;
    kc_consumer_group_heartbeat_request_init(&q);
    static kc_str_t topics[1];
    static kc_consumer_group_heartbeat_request_topic_partitions_t tp;
    q.group_id = kc_str(g->id);
    q.member_id = kc_str(member ? member : "");
    q.member_epoch = epoch;
    q.instance_id = q.rack_id = q.subscribed_topic_regex = q.server_assignor = KC_STR_NULL;
    q.rebalance_timeout_ms = -1;
    q.subscribed_topic_names.count = -1;
    q.topic_partitions.count = -1;
    if (epoch == 0) {
        topics[0] = kc_str("T");
        q.subscribed_topic_names.items = topics;
        q.subscribed_topic_names.count = 1;
        q.rebalance_timeout_ms = 5000;
    }
    if (owned) {
        int n = 0;
        while (owned[n] >= 0)
            owned_parts[n] = owned[n], n++;
        tp.topic_id = g_mb.topic_id;
        tp.partitions.items = owned_parts;
        tp.partitions.count = n;
        q.topic_partitions.items = &tp;
        q.topic_partitions.count = 1;
    }
    return mbg848_heartbeat(&g_mb, g, &q, now, m, send);
}

static int parts(const mbg_member_t *m, char *out)
{
    int n = 0;
    for (int p = 0; p < NP; p++)
        if (m->assigned[p])
            out[n++] = (char)('0' + p);
    out[n] = 0;
    return n;
}

/* The invariant: no partition is owned or being revoked by two members at once. */
static void no_two_owners(const mbg_group_t *g)
{
    for (int p = 0; p < NP; p++) {
        int owners = 0;
        for (int i = 0; i < g->n; i++)
            owners += g->m[i]->assigned[p] || g->m[i]->revoking[p];
        assert_true(owners <= 1);
    }
}

static void test_848_join_revoke_reassign(void **state)
{
    (void)state;
    mbg_group_t *g = group("k1");
    mbg_member_t *ma, *mb;
    bool send;
    char s[NP + 1];
    static const int32_t none[] = {-1}, all[] = {0, 1, 2, 3, -1}, even[] = {0, 2, -1},
                         odd[] = {1, 3, -1};
    assert_int_equal(hb(g, NULL, 0, none, 0, &ma, &send), 0);
    char *a = strdup(ma->id); /* a server-made id */
    assert_true(send);
    assert_int_equal(ma->epoch, 1);
    assert_int_equal(parts(ma, s), 4);
    /* B joins with its own id (ConsumerGroupHeartbeat v1): epoch 2, but every partition is
     * still A's, so it gets none yet. */
    assert_int_equal(hb(g, "member-b", 0, none, 100, &mb, &send), 0);
    assert_string_equal(mb->id, "member-b");
    assert_int_equal(mb->epoch, 2);
    assert_int_equal(parts(mb, s), 0);
    no_two_owners(g);
    /* A's next heartbeat: revoke 1 and 3, keep its epoch until it confirms. */
    assert_int_equal(hb(g, a, 1, NULL, 200, &ma, &send), 0);
    assert_true(send);
    parts(ma, s);
    assert_string_equal(s, "02");
    assert_int_equal(ma->epoch, 1);
    assert_int_equal(ma->n_revoking, 2);
    no_two_owners(g);
    assert_int_equal(hb(g, "member-b", 2, NULL, 300, &mb, &send), 0);
    assert_false(send);
    assert_int_equal(parts(mb, s), 0); /* 1 and 3 not released yet */
    /* A still lists them: nothing moves. Then it confirms: epoch 2. */
    assert_int_equal(hb(g, a, 1, all, 400, &ma, &send), 0);
    assert_int_equal(ma->epoch, 1);
    assert_int_equal(hb(g, a, 1, even, 500, &ma, &send), 0);
    assert_int_equal(ma->epoch, 2);
    assert_int_equal(ma->n_revoking, 0);
    no_two_owners(g);
    assert_int_equal(hb(g, "member-b", 2, NULL, 600, &mb, &send), 0);
    assert_true(send);
    parts(mb, s);
    assert_string_equal(s, "13");
    no_two_owners(g);
    /* Nothing changed: the assignment is not sent again. */
    assert_int_equal(hb(g, "member-b", 2, odd, 650, &mb, &send), 0);
    assert_false(send);
    /* Epochs: ahead is fenced; one behind with owned ⊆ assignment is accepted (lost response);
     * one behind owning more is fenced; unknown ids are unknown. */
    assert_int_equal(hb(g, "member-b", 3, NULL, 700, &mb, &send), KC_KAFKA_FENCED_MEMBER_EPOCH);
    assert_int_equal(hb(g, a, 1, even, 700, &ma, &send), 0);
    assert_int_equal(hb(g, a, 1, all, 700, &ma, &send), KC_KAFKA_FENCED_MEMBER_EPOCH);
    assert_int_equal(hb(g, "ghost", 4, NULL, 700, &ma, &send), KC_KAFKA_UNKNOWN_MEMBER_ID);
    /* Commits: the member's epoch only. */
    assert_int_equal(mbg_commit_check(g, kc_str("member-b"), 2), 0);
    assert_int_equal(mbg_commit_check(g, kc_str("member-b"), 1), KC_KAFKA_STALE_MEMBER_EPOCH);
    /* A classic join to a consumer group is refused. */
    proto_set_t p = protos("range", NULL);
    mbg_member_t *cm;
    assert_int_equal(join(g, NULL, &p, 700, &cm), KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL);
    /* B leaves (-1): A takes everything at the next epoch. */
    assert_int_equal(hb(g, "member-b", -1, NULL, 800, &mb, &send), 0);
    assert_null(mb);
    assert_int_equal(hb(g, a, 2, NULL, 900, &ma, &send), 0);
    assert_true(send);
    assert_int_equal(parts(ma, s), 4);
    assert_int_equal(ma->epoch, 3);
    free(a);
}

static void test_848_expiry(void **state)
{
    (void)state;
    mbg_group_t *g = group("k2");
    mbg_member_t *ma, *mb;
    bool send;
    char s[NP + 1];
    static const int32_t none[] = {-1};
    assert_int_equal(hb(g, "a", 0, none, 0, &ma, &send), 0);
    assert_int_equal(hb(g, "b", 0, none, 0, &mb, &send), 0);
    assert_int_equal(hb(g, "a", 1, NULL, 100, &ma, &send), 0); /* revokes 1, 3 */
    /* A never confirms: past its rebalance timeout (5 s) it is fenced and removed. */
    mbg_tick(&g_mb, 5000);
    assert_non_null(mbg_member_find(g, kc_str("a")));
    assert_int_equal(hb(g, "b", 2, NULL, 5000, &mb, &send), 0); /* b stays alive */
    mbg_tick(&g_mb, 5101);
    assert_null(mbg_member_find(g, kc_str("a")));
    assert_int_equal(hb(g, "b", 2, NULL, 5200, &mb, &send), 0);
    assert_int_equal(parts(mb, s), 4);
    /* B silent for the session timeout: gone, the group empties. */
    mbg_tick(&g_mb, 5200 + MBG_848_SESSION_MS + 1);
    assert_int_equal(g->n, 0);
    assert_int_equal(g->kind, MBG_NONE);
    /* A subscription without our topic gets nothing. */
    kc_consumer_group_heartbeat_request_t q;
    kc_consumer_group_heartbeat_request_init(&q);
    kc_str_t other = kc_str("other");
    q.group_id = kc_str("k2");
    q.member_id = kc_str("c");
    q.member_epoch = 0;
    q.instance_id = q.rack_id = q.subscribed_topic_regex = q.server_assignor = KC_STR_NULL;
    q.rebalance_timeout_ms = 1000;
    q.subscribed_topic_names.items = &other;
    q.subscribed_topic_names.count = 1;
    kc_consumer_group_heartbeat_request_topic_partitions_t tp = {0};
    q.topic_partitions.items = &tp;
    q.topic_partitions.count = 0;
    mbg_member_t *mc;
    assert_int_equal(mbg848_heartbeat(&g_mb, g, &q, 20000, &mc, &send), 0);
    assert_int_equal(parts(mc, s), 0);
    /* ... and a regex matching the whole name subscribes (Kafka matches the whole name). */
    q.member_id = kc_str("d");
    q.subscribed_topic_names.count = 0;
    q.subscribed_topic_regex = kc_str("T|U");
    assert_int_equal(mbg848_heartbeat(&g_mb, g, &q, 20000, &mc, &send), 0);
    assert_int_equal(parts(mc, s), 4);
    /* A join without its subscription is malformed. */
    q.member_id = kc_str("e");
    q.subscribed_topic_regex = KC_STR_NULL;
    q.subscribed_topic_names.count = -1;
    assert_int_equal(mbg848_heartbeat(&g_mb, g, &q, 20000, &mc, &send), KC_KAFKA_INVALID_REQUEST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_classic_one_member, setup, teardown),
        cmocka_unit_test_setup_teardown(test_classic_second_member_rebalance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_classic_timeouts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_classic_initial_delay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_848_join_revoke_reassign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_848_expiry, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
