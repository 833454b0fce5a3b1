/* engine/group/848/member: the KIP-848 member driven entirely by scripted heartbeat responses. */
#include "kc_test.h"

#include <stdio.h>
#include <string.h>

#include "group/848/member.h"
#include "proto/kafka_errors.h"

static bool known[256];

static const char *lookup(void *ctx, const uint8_t id[16])
{
    (void)ctx;
    static char name[16];
    if (!known[id[15]])
        return NULL;
    snprintf(name, sizeof name, "t%d", id[15]);
    return name;
}

static void cfg_default(kc_g848_config_t *c, const char *instance)
{
    memset(c, 0, sizeof *c);
    c->group_id = "g";
    c->group_instance_id = instance;
    c->rack_id = "r1";
    c->server_assignor = "uniform";
    c->rebalance_timeout_ms = 300000;
    c->commit_on_revoke = true;
    c->commit_timeout_ms = 5000;
    c->coordinator_timeout_ms = 3000;
    c->retry_backoff_ms = 100;
    c->retry_backoff_max_ms = 1000;
    c->lookup = lookup;
    for (int i = 0; i < 8; i++)
        known[i] = true;
    for (int i = 8; i < 256; i++)
        known[i] = false;
}

/* A response. `tp` is "topic, partition" pairs ending with -1; NULL = no assignment field. */
typedef struct resp {
    kc_consumer_group_heartbeat_response_t r;
    kc_consumer_group_heartbeat_response_topic_partitions_t t[8];
    int32_t p[8][16];
} resp_t;

static const kc_consumer_group_heartbeat_response_t *mkresp(resp_t *x, int16_t code, int32_t epoch,
                                                            const int *tp)
{
    memset(x, 0, sizeof *x);
    kc_consumer_group_heartbeat_response_init(&x->r);
    x->r.error_code = code;
    x->r.member_epoch = epoch;
    x->r.heartbeat_interval_ms = 1000;
    if (!tp)
        return &x->r;
    x->r.has_assignment = true;
    int nt = 0;
    for (; tp[0] >= 0; tp += 2) {
        int k = 0;
        while (k < nt && x->t[k].topic_id.b[15] != tp[0])
            k++;
        if (k == nt) {
            x->t[k].topic_id.b[15] = (uint8_t)tp[0];
            x->t[k].partitions.items = x->p[k];
            nt++;
        }
        x->p[k][x->t[k].partitions.count++] = tp[1];
    }
    x->r.assignment.topic_partitions.count = nt;
    x->r.assignment.topic_partitions.items = x->t;
    return &x->r;
}

static kc_consumer_group_heartbeat_request_t hb(kc_g848_t *gc, int64_t now, int16_t v)
{
    kc_consumer_group_heartbeat_request_t req;
    kc_error_t e;
    kc_err_t rc = kc_g848_heartbeat_due(gc, now, v, &req, &e);
    if (rc != KC_OK)
        fail_msg("no heartbeat due at %lld in %s: %d", (long long)now,
                 kc_g848_state_name(gc->state), rc);
    kc_g848_heartbeat_sent(gc, now);
    return req;
}

static void no_hb(kc_g848_t *gc, int64_t now)
{
    kc_consumer_group_heartbeat_request_t req;
    kc_error_t e;
    assert_int_equal(kc_g848_heartbeat_due(gc, now, 1, &req, &e), KC_ERR_AGAIN);
}

static kc_g848_action_t act(kc_g848_t *gc, int64_t now, kc_g848_act_kind_t kind, size_t n)
{
    kc_g848_action_t a;
    assert_true(kc_g848_next_action(gc, now, &a));
    if (a.kind != kind)
        fail_msg("action %d, expected %d (state %s)", a.kind, kind, kc_g848_state_name(gc->state));
    if (a.parts)
        assert_int_equal(a.parts->n, n);
    return a;
}

static void no_act(kc_g848_t *gc, int64_t now)
{
    kc_g848_action_t a;
    if (kc_g848_next_action(gc, now, &a))
        fail_msg("unexpected action %d in %s", a.kind, kc_g848_state_name(gc->state));
}

/* Does the request's owned list contain t:p? */
static bool req_owns(const kc_consumer_group_heartbeat_request_t *q, int t, int p)
{
    for (int32_t i = 0; i < q->topic_partitions.count; i++)
        if (q->topic_partitions.items[i].topic_id.b[15] == t)
            for (int32_t j = 0; j < q->topic_partitions.items[i].partitions.count; j++)
                if (q->topic_partitions.items[i].partitions.items[j] == p)
                    return true;
    return false;
}

static int32_t req_nowned(const kc_consumer_group_heartbeat_request_t *q)
{
    int32_t n = 0;
    for (int32_t i = 0; i < q->topic_partitions.count; i++)
        n += q->topic_partitions.items[i].partitions.count;
    return n;
}

/* subscribe to t1, join at t=0, get `tp` at epoch 1 and finish the assignment; STABLE at t=10. */
static void join_with(kc_g848_t *gc, const char *instance, const int *tp)
{
    kc_g848_config_t c;
    kc_error_t e;
    resp_t x;
    cfg_default(&c, instance);
    assert_int_equal(kc_g848_init(gc, &c, &e), KC_OK);
    const char *topics[] = {"t1"};
    assert_int_equal(kc_g848_subscribe(gc, topics, 1, NULL, 0, &e), KC_OK);
    hb(gc, 0, 1);
    kc_g848_on_heartbeat_response(gc, 5, mkresp(&x, 0, 1, tp));
    kc_g848_action_t a = act(gc, 5, KC_G848_ACT_ASSIGN, gc->rc.to_assign.n);
    kc_g848_action_done(gc, a.seq, 6);
    hb(gc, 10, 1); /* the ack */
    kc_g848_on_heartbeat_response(gc, 12, mkresp(&x, 0, 1, NULL));
    assert_int_equal(gc->state, KC_G848_STABLE);
}

static void join_assign_ack_two_beats(void **state)
{
    (void)state;
    kc_g848_t gc;
    kc_g848_config_t c;
    kc_error_t e;
    resp_t x;
    cfg_default(&c, NULL);
    assert_int_equal(kc_g848_init(&gc, &c, &e), KC_OK);
    assert_int_equal(strlen(gc.member_id), 22); /* v1: client-generated Kafka Uuid text */
    no_hb(&gc, 0);
    const char *topics[] = {"t2", "t1", "t2"};
    assert_int_equal(kc_g848_subscribe(&gc, topics, 3, NULL, 0, &e), KC_OK);
    assert_int_equal(gc.state, KC_G848_JOINING);
    kc_consumer_group_heartbeat_request_t q = hb(&gc, 0, 1);
    assert_int_equal(q.member_epoch, 0);
    assert_int_equal(q.member_id.len, 22);
    assert_int_equal(q.instance_id.len, -1);
    assert_int_equal(q.rebalance_timeout_ms, 300000);
    assert_int_equal(q.subscribed_topic_names.count, 2); /* sorted, deduplicated */
    assert_memory_equal(q.subscribed_topic_names.items[0].ptr, "t1", 2);
    assert_int_equal(q.subscribed_topic_regex.len, -1);
    assert_memory_equal(q.server_assignor.ptr, "uniform", 7);
    assert_memory_equal(q.rack_id.ptr, "r1", 2);
    assert_int_equal(q.topic_partitions.count, 0); /* empty list on a join, not null */
    no_hb(&gc, 1);                                 /* one in flight */
    kc_g848_on_heartbeat_response(&gc, 5, mkresp(&x, 0, 3, (int[]){1, 0, 1, 1, 2, 0, -1}));
    assert_int_equal(gc.state, KC_G848_RECONCILING);
    assert_int_equal(gc.epoch, 3);
    kc_g848_action_t a = act(&gc, 5, KC_G848_ACT_ASSIGN, 3);
    no_act(&gc, 5);
    no_hb(&gc, 500);
    /* Beat one after the target, before on_assign returned: acknowledges nothing new. */
    q = hb(&gc, 1005, 1);
    assert_int_equal(q.member_epoch, 3);
    assert_int_equal(q.topic_partitions.count, -1);
    assert_int_equal(q.subscribed_topic_names.count, -1);
    assert_int_equal(q.rebalance_timeout_ms, -1);
    assert_int_equal(q.server_assignor.len, -1);
    assert_int_equal(q.rack_id.len, -1);
    kc_g848_on_heartbeat_response(&gc, 1010, mkresp(&x, 0, 3, NULL));
    kc_g848_action_done(&gc, a.seq, 1100);
    assert_int_equal(gc.state, KC_G848_ACKNOWLEDGING);
    q = hb(&gc, 1100, 1); /* beat two: at once, with the new owned set */
    assert_int_equal(req_nowned(&q), 3);
    assert_true(req_owns(&q, 1, 0) && req_owns(&q, 1, 1) && req_owns(&q, 2, 0));
    assert_int_equal(gc.state, KC_G848_STABLE);
    kc_g848_on_heartbeat_response(&gc, 1105, mkresp(&x, 0, 3, NULL));
    no_hb(&gc, 2000);
    q = hb(&gc, 2105, 1);
    assert_int_equal(q.topic_partitions.count, -1); /* unchanged: null */
    kc_g848_free(&gc);
}

/* Revoke → commit → drop → only then ack. No heartbeat before that acknowledges the reduced set,
 * not even a full one after an error. */
static void revoke_then_ack(void **state)
{
    (void)state;
    kc_g848_t gc;
    resp_t x;
    join_with(&gc, NULL, (int[]){1, 0, 1, 1, -1});
    kc_consumer_group_heartbeat_request_t q = hb(&gc, 1012, 1);
    kc_g848_on_heartbeat_response(&gc, 1015, mkresp(&x, 0, 4, (int[]){1, 0, -1}));
    assert_int_equal(gc.state, KC_G848_RECONCILING);
    kc_g848_action_t rv = act(&gc, 1015, KC_G848_ACT_REVOKE, 1);
    assert_int_equal(rv.parts->items[0].partition, 1);
    no_act(&gc, 1016);
    q = hb(&gc, 2015, 1);
    assert_int_equal(q.topic_partitions.count, -1);
    /* An error response forces a full request: it still carries 1:1. */
    kc_g848_on_heartbeat_response(&gc, 2020,
                                  mkresp(&x, KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS, 0, NULL));
    q = hb(&gc, 2500, 1);
    assert_true(req_owns(&q, 1, 0) && req_owns(&q, 1, 1));
    kc_g848_on_heartbeat_response(&gc, 2505, mkresp(&x, 0, 4, NULL));
    kc_g848_action_done(&gc, rv.seq, 2600);
    kc_g848_action_t cm = act(&gc, 2600, KC_G848_ACT_COMMIT, 1);
    assert_string_equal(cm.member_id, gc.member_id);
    assert_int_equal(cm.member_epoch, 4);
    q = hb(&gc, 3505, 1); /* commit not answered yet: still not acknowledged */
    assert_int_equal(q.topic_partitions.count, -1);
    kc_g848_on_heartbeat_response(&gc, 3506, mkresp(&x, 0, 4, NULL));
    kc_g848_on_commit_result(&gc, cm.seq, 0, 3600);
    kc_g848_action_t dr = act(&gc, 3600, KC_G848_ACT_DROP, 1);
    no_hb(&gc, 3600);
    kc_g848_action_done(&gc, dr.seq, 3601);
    no_act(&gc, 3601); /* nothing to assign */
    assert_int_equal(gc.state, KC_G848_ACKNOWLEDGING);
    q = hb(&gc, 3601, 1);
    assert_int_equal(req_nowned(&q), 1);
    assert_true(req_owns(&q, 1, 0));
    kc_g848_free(&gc);
}

/* A coordinator move mid-reconciliation: nothing is lost, the commit is re-asked after
 * rediscovery, and the ack still comes after it. */
static void interrupted_reconciliation_resumes(void **state)
{
    (void)state;
    kc_g848_t gc;
    resp_t x;
    join_with(&gc, NULL, (int[]){1, 0, 1, 1, -1});
    hb(&gc, 1012, 1);
    kc_g848_on_heartbeat_response(&gc, 1015, mkresp(&x, 0, 4, (int[]){1, 0, 2, 0, -1}));
    kc_g848_action_t rv = act(&gc, 1015, KC_G848_ACT_REVOKE, 1);
    hb(&gc, 2015, 1);
    kc_g848_on_heartbeat_response(&gc, 2016, mkresp(&x, KC_KAFKA_NOT_COORDINATOR, 0, NULL));
    act(&gc, 2016, KC_G848_ACT_REDISCOVER, 0);
    no_act(&gc, 2016);                      /* no error surfaced */
    no_hb(&gc, 9000);                       /* until the coordinator is known again */
    kc_g848_action_done(&gc, rv.seq, 2100); /* the revoke finishes meanwhile */
    kc_g848_action_t cm = act(&gc, 2100, KC_G848_ACT_COMMIT, 1);
    kc_g848_on_commit_result(&gc, cm.seq, KC_KAFKA_NOT_COORDINATOR,
                             2200); /* the commit meets the move too */
    act(&gc, 2200, KC_G848_ACT_REDISCOVER, 0);
    no_act(&gc, 2200); /* the commit waits for the coordinator; no error surfaced */
    kc_g848_coordinator_ready(&gc, 2300);
    kc_consumer_group_heartbeat_request_t q = hb(&gc, 2300, 1);
    assert_true(req_owns(&q, 1, 1)); /* full again, and still not reduced */
    cm = act(&gc, 2300, KC_G848_ACT_COMMIT, 1);
    kc_g848_on_heartbeat_response(&gc, 2310, mkresp(&x, 0, 4, NULL));
    kc_g848_on_commit_result(&gc, cm.seq, 0, 2320);
    kc_g848_action_done(&gc, act(&gc, 2320, KC_G848_ACT_DROP, 1).seq, 2321);
    kc_g848_action_t as = act(&gc, 2321, KC_G848_ACT_ASSIGN, 1);
    assert_int_equal(as.parts->items[0].topic->id[15], 2);
    no_hb(&gc, 2322);
    kc_g848_action_done(&gc, as.seq, 2330);
    q = hb(&gc, 2330, 1);
    assert_int_equal(req_nowned(&q), 2);
    assert_true(req_owns(&q, 1, 0) && req_owns(&q, 2, 0) && !req_owns(&q, 1, 1));
    kc_g848_free(&gc);
}

static void fenced_loses_and_rejoins(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        kc_g848_t gc;
        resp_t x;
        join_with(&gc, NULL, (int[]){1, 0, -1});
        char id[64];
        strcpy(id, gc.member_id);
        hb(&gc, 1012, 1);
        kc_g848_on_heartbeat_response(
            &gc, 1015,
            mkresp(&x, k ? KC_KAFKA_UNKNOWN_MEMBER_ID : KC_KAFKA_FENCED_MEMBER_EPOCH, 0, NULL));
        assert_int_equal(gc.state, KC_G848_FENCED);
        kc_g848_action_t lo = act(&gc, 1015, KC_G848_ACT_LOSE, 1);
        no_hb(&gc, 5000);
        kc_g848_action_done(&gc, lo.seq, 1020);
        kc_g848_action_done(&gc, act(&gc, 1020, KC_G848_ACT_DROP, 1).seq, 1021); /* no COMMIT */
        no_act(&gc, 1021);
        assert_int_equal(gc.state, KC_G848_JOINING);
        kc_consumer_group_heartbeat_request_t q = hb(&gc, 1021, 1);
        assert_int_equal(q.member_epoch, 0);
        assert_memory_equal(q.member_id.ptr, id, strlen(id)); /* same id for life */
        assert_int_equal(q.topic_partitions.count, 0);
        assert_int_equal(q.subscribed_topic_names.count, 1);
        assert_int_equal(q.rebalance_timeout_ms, 300000);
        kc_g848_free(&gc);
    }
}

/* Leave: dynamic -1, static -2; both revoke and commit first. */
static void leave_epochs(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        kc_g848_t gc;
        resp_t x;
        join_with(&gc, k ? "inst-1" : NULL, (int[]){1, 0, -1});
        kc_g848_close(&gc, 2000);
        assert_int_equal(gc.state, KC_G848_PREPARE_LEAVING);
        kc_g848_action_t rv = act(&gc, 2000, KC_G848_ACT_REVOKE, 1);
        kc_g848_action_done(&gc, rv.seq, 2001);
        kc_g848_action_t cm = act(&gc, 2001, KC_G848_ACT_COMMIT, 1);
        /* A regular beat meanwhile is fine, but it is no leave and still owns 1:0. */
        kc_consumer_group_heartbeat_request_t q = hb(&gc, 2001, 1);
        assert_int_equal(q.member_epoch, 1);
        kc_g848_on_heartbeat_response(&gc, 2001, mkresp(&x, 0, 1, NULL));
        kc_g848_on_commit_result(&gc, cm.seq, 0, 2002);
        kc_g848_action_done(&gc, act(&gc, 2002, KC_G848_ACT_DROP, 1).seq, 2003);
        if (gc.state != KC_G848_LEAVING)
            fail_msg("state %s, step %d", kc_g848_state_name(gc.state), gc.rc.step);
        q = hb(&gc, 2003, 1);
        assert_int_equal(q.member_epoch, k ? -2 : -1);
        if (k)
            assert_memory_equal(q.instance_id.ptr, "inst-1", 6);
        kc_g848_on_heartbeat_response(&gc, 2010, mkresp(&x, 0, k ? -2 : -1, NULL));
        assert_int_equal(gc.state, KC_G848_UNSUBSCRIBED);
        no_hb(&gc, 9000);
        kc_g848_free(&gc);
    }
}

/* Close while the application's commits are unanswered: revoke, commit and drop as always, the
 * leave heartbeat only once they are answered (regular beats go on meanwhile). */
static void leave_after_app_commits(void **state)
{
    (void)state;
    kc_g848_t gc;
    resp_t x;
    join_with(&gc, NULL, (int[]){1, 0, -1});
    kc_g848_commits_in_flight(&gc, true, 1999);
    kc_g848_close(&gc, 2000);
    kc_g848_action_t rv = act(&gc, 2000, KC_G848_ACT_REVOKE, 1);
    kc_g848_action_done(&gc, rv.seq, 2001);
    kc_g848_action_t cm = act(&gc, 2001, KC_G848_ACT_COMMIT, 1);
    kc_g848_on_commit_result(&gc, cm.seq, 0, 2002);
    kc_g848_action_done(&gc, act(&gc, 2002, KC_G848_ACT_DROP, 1).seq, 2003);
    assert_int_equal(gc.state, KC_G848_PREPARE_LEAVING);
    kc_consumer_group_heartbeat_request_t q = hb(&gc, 7000, 1);
    assert_int_equal(q.member_epoch, 1); /* a regular beat, no leave */
    kc_g848_on_heartbeat_response(&gc, 7001, mkresp(&x, 0, 1, NULL));
    assert_int_equal(gc.state, KC_G848_PREPARE_LEAVING);
    kc_g848_commits_in_flight(&gc, false, 7002);
    assert_int_equal(gc.state, KC_G848_LEAVING);
    q = hb(&gc, 7002, 1);
    assert_int_equal(q.member_epoch, -1);
    kc_g848_on_heartbeat_response(&gc, 7010, mkresp(&x, 0, -1, NULL));
    assert_int_equal(gc.state, KC_G848_UNSUBSCRIBED);
    kc_g848_free(&gc);
}

/* NOT_COORDINATOR in a successful response: rediscover and retry; silent until the deadline. */
static void not_coordinator_deadline(void **state)
{
    (void)state;
    kc_g848_t gc;
    resp_t x;
    join_with(&gc, NULL, (int[]){1, 0, -1});
    int64_t t = 1012;
    int errors = 0, rediscovers = 0;
    for (int i = 0; i < 40 && t < 1012 + 2900; i++) {
        hb(&gc, t, 1);
        kc_g848_on_heartbeat_response(
            &gc, t + 1,
            mkresp(&x, i % 2 ? KC_KAFKA_COORDINATOR_NOT_AVAILABLE : KC_KAFKA_NOT_COORDINATOR, 0,
                   NULL));
        kc_g848_action_t a;
        while (kc_g848_next_action(&gc, t + 1, &a)) {
            errors += a.kind == KC_G848_ACT_ERROR;
            rediscovers += a.kind == KC_G848_ACT_REDISCOVER;
        }
        kc_g848_coordinator_ready(&gc, t + 2);
        t = kc_g848_next_wakeup(&gc, t + 2);
    }
    assert_int_equal(errors, 0);
    assert_true(rediscovers >= 3);
    assert_int_equal(gc.state, KC_G848_STABLE); /* membership untouched */
    /* Past the deadline (3000 ms from the first): one non-fatal error, retrying continues. */
    t = 1012 + 3100;
    hb(&gc, t, 1);
    kc_g848_on_heartbeat_response(&gc, t + 1, mkresp(&x, KC_KAFKA_NOT_COORDINATOR, 0, NULL));
    kc_g848_action_t a = act(&gc, t + 1, KC_G848_ACT_ERROR, 0);
    assert_false(a.fatal);
    assert_int_equal(a.error.kafka_code, KC_KAFKA_NOT_COORDINATOR);
    act(&gc, t + 1, KC_G848_ACT_REDISCOVER, 0);
    kc_g848_coordinator_ready(&gc, t + 2);
    hb(&gc, kc_g848_next_wakeup(&gc, t + 2), 1);
    kc_g848_on_heartbeat_response(&gc, t + 3000, mkresp(&x, 0, 1, NULL)); /* recovered */
    assert_false(gc.retrying);
    kc_g848_free(&gc);
}

/* A transport failure: no heartbeat is wanted until the backoff has run out, also once the
 * rediscovery has answered (the engine only then treats a dead coordinator connection as the
 * next failure, so a dead coordinator is asked about once per backoff). */
static void heartbeat_wanted_after_backoff(void **state)
{
    (void)state;
    kc_g848_t gc;
    resp_t x;
    join_with(&gc, NULL, (int[]){1, 0, -1});
    int64_t t = 1012;
    hb(&gc, t, 1);
    assert_false(kc_g848_heartbeat_wanted(&gc, t + 1)); /* in flight */
    kc_error_t why = {.code = KC_ERR_TRANSPORT};
    for (int i = 0; i < 4; i++) { /* 1.5 s of backoffs: inside the 3 s deadline */
        kc_g848_on_heartbeat_failure(&gc, t + 1, &why);
        act(&gc, t + 1, KC_G848_ACT_REDISCOVER, 0);
        assert_false(kc_g848_heartbeat_wanted(&gc, t + 1)); /* waiting for the coordinator */
        kc_g848_coordinator_ready(&gc, t + 2);
        int64_t at = kc_g848_next_wakeup(&gc, t + 2);
        /* 100 ms doubling, each ±20% */
        assert_true(at - (t + 1) >= (100 << i) * 8 / 10);
        assert_true(at - (t + 1) <= (100 << i) * 12 / 10);
        assert_false(kc_g848_heartbeat_wanted(&gc, t + 2));
        assert_false(kc_g848_heartbeat_wanted(&gc, at - 1));
        assert_true(kc_g848_heartbeat_wanted(&gc, at));
        t = at;
    }
    hb(&gc, t, 1);
    kc_g848_on_heartbeat_response(&gc, t + 5, mkresp(&x, 0, 1, NULL));
    assert_false(gc.retrying);
    assert_int_equal(gc.state, KC_G848_STABLE);
    kc_g848_free(&gc);
}

static void fatal_errors_surface(void **state)
{
    (void)state;
    const int16_t codes[] = {KC_KAFKA_FENCED_INSTANCE_ID,
                             KC_KAFKA_UNRELEASED_INSTANCE_ID,
                             KC_KAFKA_GROUP_MAX_SIZE_REACHED,
                             KC_KAFKA_UNSUPPORTED_ASSIGNOR,
                             KC_KAFKA_INVALID_REGULAR_EXPRESSION,
                             KC_KAFKA_GROUP_AUTHORIZATION_FAILED,
                             KC_KAFKA_INVALID_REQUEST,
                             KC_KAFKA_UNSUPPORTED_VERSION,
                             KC_KAFKA_GROUP_ID_NOT_FOUND};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
        kc_g848_t gc;
        resp_t x;
        join_with(&gc, "inst", (int[]){1, 0, -1});
        hb(&gc, 1012, 1);
        kc_g848_on_heartbeat_response(&gc, 1013, mkresp(&x, codes[i], 0, NULL));
        assert_int_equal(gc.state, KC_G848_FATAL);
        kc_g848_action_t a = act(&gc, 1013, KC_G848_ACT_ERROR, 0);
        assert_true(a.fatal);
        assert_int_equal(a.error.kafka_code, codes[i]);
        act(&gc, 1013, KC_G848_ACT_LOSE, 1);
        no_hb(&gc, 99999);
        kc_error_t e;
        const char *topics[] = {"t1"};
        assert_int_equal(kc_g848_subscribe(&gc, topics, 1, NULL, 99999, &e), KC_ERR_FATAL);
        kc_g848_free(&gc);
    }
}

/* TOPIC_AUTHORIZATION_FAILED: reported, not fatal; the membership carries on. */
static void topic_authorization_not_fatal(void **state)
{
    (void)state;
    kc_g848_t gc;
    resp_t x;
    join_with(&gc, NULL, (int[]){1, 0, -1});
    hb(&gc, 1012, 1);
    kc_g848_on_heartbeat_response(&gc, 1013,
                                  mkresp(&x, KC_KAFKA_TOPIC_AUTHORIZATION_FAILED, 0, NULL));
    kc_g848_action_t a = act(&gc, 1013, KC_G848_ACT_ERROR, 0);
    assert_false(a.fatal);
    assert_int_equal(a.error.kafka_code, KC_KAFKA_TOPIC_AUTHORIZATION_FAILED);
    no_act(&gc, 1013);
    assert_int_equal(gc.state, KC_G848_STABLE);
    kc_consumer_group_heartbeat_request_t q = hb(&gc, 2013, 1);
    assert_int_equal(q.member_epoch, 1);
    assert_true(req_owns(&q, 1, 0)); /* full again after an error */
    kc_g848_free(&gc);
}

/* Only changed fields; regex needs v1; a failed heartbeat makes the next one full. */
static void only_changed_fields(void **state)
{
    (void)state;
    kc_g848_t gc;
    kc_error_t e;
    resp_t x;
    join_with(&gc, NULL, (int[]){1, 0, -1});
    const char *topics[] = {"t1", "t3"};
    assert_int_equal(kc_g848_subscribe(&gc, topics, 2, NULL, 100, &e), KC_OK);
    kc_consumer_group_heartbeat_request_t q = hb(&gc, 100, 1); /* promptly */
    assert_int_equal(q.subscribed_topic_names.count, 2);
    assert_int_equal(q.topic_partitions.count, -1);
    assert_int_equal(q.rebalance_timeout_ms, -1);
    assert_int_equal(q.server_assignor.len, -1);
    kc_g848_on_heartbeat_response(&gc, 101, mkresp(&x, 0, 1, NULL));
    assert_int_equal(kc_g848_subscribe(&gc, NULL, 0, "t.*", 200, &e), KC_OK);
    assert_int_equal(kc_g848_heartbeat_due(&gc, 200, 0, &q, &e), KC_ERR_UNSUPPORTED);
    q = hb(&gc, 200, 1);
    assert_memory_equal(q.subscribed_topic_regex.ptr, "t.*", 3);
    assert_int_equal(q.subscribed_topic_names.count, 0); /* switching away from names */
    kc_error_t why = {.code = KC_ERR_TRANSPORT};
    kc_g848_on_heartbeat_failure(&gc, 210, &why);
    act(&gc, 210, KC_G848_ACT_REDISCOVER, 0);
    kc_g848_coordinator_ready(&gc, 220);
    q = hb(&gc, kc_g848_next_wakeup(&gc, 220), 1);
    assert_int_equal(q.member_epoch, 1);
    assert_memory_equal(q.subscribed_topic_regex.ptr, "t.*", 3);
    assert_int_equal(q.rebalance_timeout_ms, 300000);
    assert_true(req_owns(&q, 1, 0));
    assert_memory_equal(q.server_assignor.ptr, "uniform", 7);
    kc_g848_free(&gc);
}

/* A callback overran max.poll.interval.ms: leave (-1 even for a static member), lose, rejoin
 * when the callback returns. */
static void max_poll_leave_and_rejoin(void **state)
{
    (void)state;
    kc_g848_t gc;
    resp_t x;
    join_with(&gc, "inst", (int[]){1, 0, 1, 1, -1});
    kc_g848_poll_expired(&gc, 2000);
    kc_consumer_group_heartbeat_request_t q = hb(&gc, 2000, 1);
    assert_int_equal(q.member_epoch, -1);
    kc_g848_action_t lo = act(&gc, 2000, KC_G848_ACT_LOSE, 2);
    kc_g848_on_heartbeat_response(&gc, 2005, mkresp(&x, 0, -1, NULL));
    assert_int_equal(gc.state, KC_G848_STALE);
    no_hb(&gc, 60000);
    kc_g848_poll_resumed(&gc, 3000); /* the callback returned; on_lost runs after it */
    assert_int_equal(gc.state, KC_G848_STALE);
    kc_g848_action_done(&gc, lo.seq, 3001);
    kc_g848_action_done(&gc, act(&gc, 3001, KC_G848_ACT_DROP, 2).seq, 3002);
    assert_int_equal(gc.state, KC_G848_JOINING);
    q = hb(&gc, 3002, 1);
    assert_int_equal(q.member_epoch, 0);
    assert_int_equal(q.topic_partitions.count, 0);
    kc_g848_free(&gc);
}

/* Unknown topic ids wait for metadata; STALE_MEMBER_EPOCH on a commit retries with the fresh
 * epoch after a heartbeat. */
static void unknown_topics_and_stale_epoch(void **state)
{
    (void)state;
    kc_g848_t gc;
    resp_t x;
    join_with(&gc, NULL, (int[]){1, 0, -1});
    hb(&gc, 1012, 1);
    kc_g848_on_heartbeat_response(&gc, 1013, mkresp(&x, 0, 2, (int[]){1, 0, 9, 0, -1}));
    act(&gc, 1013, KC_G848_ACT_METADATA, 0);
    no_act(&gc, 1013); /* nothing assignable yet: 1:0 already owned */
    assert_int_equal(gc.state, KC_G848_STABLE);
    known[9] = true;
    kc_g848_on_metadata(&gc, 1100);
    kc_g848_action_t as = act(&gc, 1100, KC_G848_ACT_ASSIGN, 1);
    assert_int_equal(as.parts->items[0].topic->id[15], 9);
    kc_g848_action_done(&gc, as.seq, 1101);
    kc_consumer_group_heartbeat_request_t q = hb(&gc, 1101, 1);
    assert_true(req_owns(&q, 9, 0) && req_owns(&q, 1, 0));
    kc_g848_on_heartbeat_response(&gc, 1102, mkresp(&x, 0, 2, NULL));
    /* Now revoke 9:0; its commit is answered STALE_MEMBER_EPOCH. */
    hb(&gc, 2102, 1);
    kc_g848_on_heartbeat_response(&gc, 2103, mkresp(&x, 0, 3, (int[]){1, 0, -1}));
    kc_g848_action_done(&gc, act(&gc, 2103, KC_G848_ACT_REVOKE, 1).seq, 2104);
    kc_g848_action_t cm = act(&gc, 2104, KC_G848_ACT_COMMIT, 1);
    assert_int_equal(cm.member_epoch, 3);
    kc_g848_on_commit_result(&gc, cm.seq, KC_KAFKA_STALE_MEMBER_EPOCH, 2105);
    no_act(&gc, 3000); /* not before a heartbeat refreshed the epoch */
    hb(&gc, 2105, 1);  /* sent at once */
    kc_g848_on_heartbeat_response(&gc, 2110, mkresp(&x, 0, 5, NULL));
    cm = act(&gc, 2110, KC_G848_ACT_COMMIT, 1);
    assert_int_equal(cm.member_epoch, 5);
    kc_g848_free(&gc);
}

/* v0: the broker names the member; the join sends "". */
static void v0_member_id(void **state)
{
    (void)state;
    kc_g848_t gc;
    kc_g848_config_t c;
    kc_error_t e;
    resp_t x;
    cfg_default(&c, NULL);
    kc_g848_init(&gc, &c, &e);
    const char *topics[] = {"t1"};
    kc_g848_subscribe(&gc, topics, 1, NULL, 0, &e);
    kc_consumer_group_heartbeat_request_t q = hb(&gc, 0, 0);
    assert_int_equal(q.member_id.len, 0);
    const kc_consumer_group_heartbeat_response_t *r = mkresp(&x, 0, 1, NULL);
    x.r.member_id = (kc_str_t){"broker-id", 9};
    kc_g848_on_heartbeat_response(&gc, 1, r);
    q = hb(&gc, 1001, 0);
    assert_memory_equal(q.member_id.ptr, "broker-id", 9);
    kc_g848_free(&gc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(join_assign_ack_two_beats),
        cmocka_unit_test(revoke_then_ack),
        cmocka_unit_test(interrupted_reconciliation_resumes),
        cmocka_unit_test(fenced_loses_and_rejoins),
        cmocka_unit_test(leave_epochs),
        cmocka_unit_test(leave_after_app_commits),
        cmocka_unit_test(not_coordinator_deadline),
        cmocka_unit_test(heartbeat_wanted_after_backoff),
        cmocka_unit_test(fatal_errors_surface),
        cmocka_unit_test(only_changed_fields),
        cmocka_unit_test(topic_authorization_not_fatal),
        cmocka_unit_test(max_poll_leave_and_rejoin),
        cmocka_unit_test(unknown_topics_and_stale_epoch),
        cmocka_unit_test(v0_member_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
