/*
 * group.protocol=consumer on the network thread: see group848.h.
 *
 * Owner: network thread, all of it. Each asynchronous answer (heartbeat, FindCoordinator,
 * Metadata, OffsetFetch, OffsetCommit) comes back on the same thread and then calls drive(),
 * which is the only place that pulls actions out of the state machine and sends heartbeats.
 * Answers that arrive after kc_g848_free are impossible: free closes the engine's coordinator
 * work first (the engine frees its connections after the group, and conn callbacks for a closed
 * engine are refused through `g->dead`, see below).
 */
#include "group848.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "coordinator.h"
#include "engine_int.h"
#include "group_consumer.h"
#include "offset_pending.h"
#include "proto/kafka_errors.h"
#include "self_fence.h"

typedef struct tname {
    uint8_t id[16];
    char *name;
} tname_t;

/* An OffsetFetch for an ASSIGN action, or an OffsetCommit for a COMMIT / auto-commit. Ops outlive
 * nothing: `g` is cleared when the group goes away first (the engine still calls back). */
typedef struct g_op {
    kc_g848_t *g;
    uint64_t seq;
    int kind; /* 1 assign, 2 reconcile commit, 3 auto-commit, 4 find, 5 offsets retry */
    bool cancelled;
    struct g_op *next;
} g_op_t;

struct kc_g848 {
    kc_engine_t *e;
    kc_g848_conf_t conf;
    char *group, *instance, *rack, *assignor;
    kc_g848_hooks_t h;
    kc_gc_t gc;
    kc_loop_timer_t timer;
    kc_consumer_group_heartbeat_request_t req; /* gc's storage, valid while in flight */
    bool hb_inflight, md_inflight, finding, driving, again, closing;
    bool poll_expired;
    kc_conn_t *hb_conn; /* the in-flight heartbeat's connection */
    int64_t hb_sent_ms, notready_since;
    uint64_t revoke_seq;
    int revoke_wait; /* completions still expected for revoke_seq */
    bool revoke_active;
    tname_t *names;
    size_t n_names;
    g_op_t *ops;
    kc_opend_t pending; /* assigned partitions whose committed offset is still unread */
    int64_t next_auto_commit;
    uint64_t rebalances, heartbeats, hb_errors, commits, commit_failures, rediscoveries;
    int64_t last_error_code;
    /* The self-fence (group848.h): the send time of the last heartbeat answered without error
     * (-1 before the first), the session it is measured against, and whether the member is
     * fenced now. */
    int64_t answered_sent_ms;
    int64_t session_ms;
    bool self_fenced;
    uint64_t self_fences;
    /* The group's consumer.session.timeout.ms (DescribeConfigs on the GROUP resource): asked
     * at subscribe and every SESSION_REFRESH_MS (it can be altered at any time); until an
     * answer, and when it cannot be read, session_ms is group.consumer.session.timeout.ms. */
    bool dc_inflight, dc_from_broker, dc_reported;
    int64_t dc_next_ms;
};

#define SESSION_REFRESH_MS 60000
#define SESSION_RETRY_MS   5000
/* DescribeConfigs' resource type for a group's configs (KIP-848's group configs). */
#define RESOURCE_TYPE_GROUP 32

static void drive(kc_g848_t *g);

static const char *lookup(void *ctx, const uint8_t id[16])
{
    kc_g848_t *g = ctx;
    for (size_t i = 0; i < g->n_names; i++)
        if (memcmp(g->names[i].id, id, 16) == 0)
            return g->names[i].name;
    return NULL;
}

static void on_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    drive(t->opaque);
}

static g_op_t *op_new(kc_g848_t *g, int kind, uint64_t seq)
{
    g_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return NULL;
    op->g = g;
    op->kind = kind;
    op->seq = seq;
    op->next = g->ops;
    g->ops = op;
    return op;
}

/* Unlinks op; returns its group, NULL when the group is gone or the op was cancelled. */
static kc_g848_t *op_end(g_op_t *op)
{
    kc_g848_t *g = op->g;
    bool cancelled = op->cancelled;
    if (g)
        for (g_op_t **pp = &g->ops; *pp; pp = &(*pp)->next)
            if (*pp == op) {
                *pp = op->next;
                break;
            }
    free(op);
    return cancelled ? NULL : g;
}

/* ---- heartbeat ------------------------------------------------------------------------------ */

static kc_err_t hb_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    kc_g848_t *g = opaque;
    kc_error_t e;
    return kc_consumer_group_heartbeat_request_encode(&g->req, version, out, &e);
}

static void hb_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    kc_g848_t *g = opaque;
    g->hb_inflight = false;
    g->hb_conn = NULL;
    if (g->e->closed) {
        kc_buf_unref(frame);
        return;
    }
    int64_t now = kc_now_ms();
    if (rc != KC_OK) {
        kc_error_t why;
        kc_fail(&why, rc, "ConsumerGroupHeartbeat: %s", kc_err_name(rc));
        g->hb_errors++;
        kc_gc_on_heartbeat_failure(&g->gc, now, &why);
        drive(g);
        return;
    }
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    kc_arena_t a = {0};
    kc_error_t e;
    kc_consumer_group_heartbeat_response_t resp;
    if (kc_consumer_group_heartbeat_response_decode(&resp, version, &r, &a, &e) != KC_OK) {
        g->hb_errors++;
        kc_gc_on_heartbeat_failure(&g->gc, now, &e);
    } else {
        g->heartbeats++;
        if (resp.error_code) {
            g->hb_errors++;
            g->last_error_code = resp.error_code;
        }
        /* Answered without error: the coordinator restarted our session no earlier than
         * when this heartbeat left (the self-fence's clock). */
        if (resp.error_code == 0)
            g->answered_sent_ms = g->hb_sent_ms;
        int32_t before = g->gc.epoch;
        kc_gc_on_heartbeat_response(&g->gc, now, &resp);
        if (g->gc.epoch != before && resp.error_code == 0)
            g->rebalances++;
    }
    kc_arena_free(&a);
    kc_buf_unref(frame);
    drive(g);
}

static void find_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                      const kc_engine_offset_t *res, size_t n)
{
    (void)res, (void)n;
    kc_g848_t *g = op_end(opaque);
    if (!g)
        return;
    g->finding = false;
    if (rc == KC_ERR_CLOSED)
        return;
    if (rc != KC_OK)
        kc_log(KC_LOG_WARN, "group848", "group %s: FindCoordinator: %s", g->group,
               err ? err->msg : kc_err_name(rc));
    /* Ready either way: a heartbeat to a coordinator still unknown fails and asks again. */
    kc_gc_coordinator_ready(&g->gc, kc_now_ms());
    drive(g);
}

static void find_start(kc_g848_t *g)
{
    if (g->finding)
        return;
    g_op_t *op = op_new(g, 4, 0);
    if (!op)
        return;
    kc_error_t err;
    g->finding = true; /* cleared by find_done, which may run inside this call (cached) */
    if (kc_engine_find_coordinator(g->e, g->group, (int)g->conf.coordinator_timeout_ms, find_done,
                                   op, &err) != KC_OK) {
        op_end(op);
        g->finding = false;
    }
}

static void maybe_heartbeat(kc_g848_t *g, int64_t now)
{
    if (g->hb_inflight) {
        /* A coordinator killed mid-request may leave the answer hanging until request.timeout.ms
         * (30 s), longer than the session: past a few heartbeat intervals the connection is
         * reset, which fails the heartbeat and leads to a rediscovery. */
        int64_t limit = 3 * (int64_t)g->gc.interval_ms;
        if (limit < 3000)
            limit = 3000;
        if (now - g->hb_sent_ms > limit && g->hb_conn)
            kc_conn_reset(g->hb_conn, KC_ERR_TIMEOUT, "heartbeat unanswered");
        return;
    }
    kc_conn_t *conn = kc_engine_coord_conn(g->e, g->group);
    if (!conn) {
        if (g->gc.state != KC_GC_UNSUBSCRIBED && g->gc.state != KC_GC_FATAL)
            find_start(g);
        return;
    }
    if (kc_conn_state(conn) != KC_CONN_READY) {
        /* Connecting. A coordinator that went away leaves its connection reconnecting to a
         * dead address: after a failed attempt (or a second without success) that counts as a
         * failed heartbeat, and the state machine asks for a rediscovery. Only once a heartbeat
         * is due: until then the backoff of the previous failure runs. Counted at once, every
         * FindCoordinator answer failed the next heartbeat again: while the brokers still name
         * a dead coordinator (until the controller fences it, ~9 s) that is a loop of thousands
         * of FindCoordinator requests a second, and after the reset of a live coordinator's
         * connection (heartbeat unanswered, above) it ran the backoff up to its maximum within
         * the 50 ms reconnect, so the heartbeat that could keep the session alive went out a
         * second late. */
        if (!g->notready_since)
            g->notready_since = now;
        if (!kc_gc_heartbeat_wanted(&g->gc, now))
            return;
        if (kc_conn_failures(conn) > 0 || now - g->notready_since > 1000) {
            g->notready_since = 0;
            kc_error_t why;
            kc_fail(&why, KC_ERR_TRANSPORT, "group %s: coordinator %s unreachable", g->group,
                    kc_conn_peer(conn));
            kc_engine_coord_invalidate(g->e, g->group);
            g->hb_errors++;
            kc_gc_on_heartbeat_failure(&g->gc, now, &why);
        }
        return;
    }
    g->notready_since = 0;
    int v = kc_conn_pick_version(conn, KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY, 0, 1);
    if (v < 0) {
        kc_error_t e;
        kc_fail(&e, KC_ERR_UNSUPPORTED, "the coordinator does not speak ConsumerGroupHeartbeat");
        kc_gc_on_heartbeat_failure(&g->gc, now, &e);
        return;
    }
    kc_error_t e;
    kc_err_t rc = kc_gc_heartbeat_due(&g->gc, now, (int16_t)v, &g->req, &e);
    if (rc == KC_ERR_AGAIN)
        return;
    if (rc != KC_OK) {
        g->h.error(g->h.opaque, &e, true);
        return;
    }
    kc_conn_req_spec_t s = {
        KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY, (int16_t)v, (int16_t)v, hb_encode, hb_done, g};
    if (kc_conn_send(conn, &s, &e) != KC_OK) {
        kc_gc_on_heartbeat_failure(&g->gc, now, &e);
        return;
    }
    g->hb_inflight = true;
    g->hb_conn = conn;
    g->hb_sent_ms = now;
    kc_gc_heartbeat_sent(&g->gc, now);
}

/* ---- metadata: topic id → name -------------------------------------------------------------- */

static kc_err_t md_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    (void)opaque;
    kc_metadata_request_t m;
    kc_metadata_request_init(&m);
    m.topics.count = -1; /* all topics: a regex subscription names none */
    m.allow_auto_topic_creation = false;
    kc_error_t e;
    return kc_metadata_request_encode(&m, version, out, &e);
}

static void md_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    kc_g848_t *g = opaque;
    g->md_inflight = false;
    if (g->e->closed) {
        kc_buf_unref(frame);
        return;
    }
    if (rc == KC_OK) {
        kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
        kc_arena_t a = {0};
        kc_error_t e;
        kc_metadata_response_t m;
        if (kc_metadata_response_decode(&m, version, &r, &a, &e) == KC_OK) {
            for (int32_t i = 0; i < m.topics.count; i++) {
                const kc_metadata_response_topic_t *t = &m.topics.items[i];
                if (t->error_code || t->name.len <= 0 || lookup(g, t->topic_id.b))
                    continue;
                tname_t *nn = realloc(g->names, (g->n_names + 1) * sizeof *nn);
                if (!nn)
                    break;
                g->names = nn;
                memcpy(nn[g->n_names].id, t->topic_id.b, 16);
                nn[g->n_names].name = strndup((const char *)t->name.ptr, (size_t)t->name.len);
                if (nn[g->n_names].name)
                    g->n_names++;
            }
        }
        kc_arena_free(&a);
        kc_buf_unref(frame);
    }
    /* A topic just created may not be in this answer yet: the state machine asks again. */
    kc_gc_on_metadata(&g->gc, kc_now_ms());
    drive(g);
}

static void md_send(kc_g848_t *g)
{
    if (g->md_inflight)
        return;
    kc_conn_t *conn = kc_eng_any_conn(g->e);
    kc_conn_req_spec_t s = {KC_METADATA_REQUEST_API_KEY, 9, 12, md_encode, md_done, g};
    if (!conn || kc_conn_send(conn, &s, NULL) != KC_OK) {
        kc_gc_on_metadata(&g->gc, kc_now_ms()); /* asks again after a while */
        return;
    }
    g->md_inflight = true;
}

/* ---- the group's session timeout: DescribeConfigs ------------------------------------------ */

static kc_err_t dc_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    kc_g848_t *g = opaque;
    kc_describe_configs_request_t q;
    kc_describe_configs_request_init(&q);
    kc_str_t key = kc_str("consumer.session.timeout.ms");
    kc_describe_configs_request_describe_configs_resource_t res = {
        .resource_type = RESOURCE_TYPE_GROUP, .resource_name = kc_str(g->group)};
    res.configuration_keys.count = 1;
    res.configuration_keys.items = &key;
    q.resources.count = 1;
    q.resources.items = &res;
    kc_error_t e;
    return kc_describe_configs_request_encode(&q, version, out, &e);
}

/* The session timeout from one DescribeConfigs answer, -1 with *why set when it has none. */
static int64_t dc_session(const kc_describe_configs_response_t *m, const char *group,
                          kc_error_t *why)
{
    for (int32_t i = 0; i < m->results.count; i++) {
        const kc_describe_configs_response_describe_configs_result_t *r = &m->results.items[i];
        if (r->error_code) {
            kc_fail_kafka(why, r->error_code, "DescribeConfigs of group %s", group);
            return -1;
        }
        for (int32_t j = 0; j < r->configs.count; j++) {
            const kc_describe_configs_response_describe_configs_resource_result_t *c =
                &r->configs.items[j];
            if (c->name.len != (int32_t)strlen("consumer.session.timeout.ms") ||
                memcmp(c->name.ptr, "consumer.session.timeout.ms", (size_t)c->name.len) != 0 ||
                c->value.len <= 0 || c->value.len > 18)
                continue;
            char num[20];
            memcpy(num, c->value.ptr, (size_t)c->value.len);
            num[c->value.len] = '\0';
            char *end;
            long long v = strtoll(num, &end, 10);
            if (*end == '\0' && v > 0)
                return v;
        }
    }
    kc_fail(why, KC_ERR_NOT_FOUND, "DescribeConfigs of group %s: no consumer.session.timeout.ms",
            group);
    return -1;
}

static void dc_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    kc_g848_t *g = opaque;
    g->dc_inflight = false;
    if (g->e->closed) {
        kc_buf_unref(frame);
        return;
    }
    int64_t now = kc_now_ms(), v = -1;
    kc_error_t why;
    if (rc != KC_OK) {
        kc_fail(&why, rc, "DescribeConfigs of group %s: %s", g->group, kc_err_name(rc));
    } else {
        kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
        kc_arena_t a = {0};
        kc_describe_configs_response_t m;
        if (kc_describe_configs_response_decode(&m, version, &r, &a, &why) == KC_OK)
            v = dc_session(&m, g->group, &why);
        kc_arena_free(&a);
        kc_buf_unref(frame);
    }
    if (v > 0) {
        if (v != g->session_ms)
            kc_log(KC_LOG_DEBUG, "group848", "group %s: consumer.session.timeout.ms is %lld ms",
                   g->group, (long long)v);
        g->session_ms = v;
        g->dc_from_broker = true;
        g->dc_next_ms = now + SESSION_REFRESH_MS;
    } else {
        /* Not fatal: the member runs with the configured value (an older broker, no
         * DescribeConfigs permission on the group). Said once; asked again later. */
        if (!g->dc_reported)
            kc_log(KC_LOG_INFO, "group848",
                   "group %s: %s; the self-fence assumes group.consumer.session.timeout.ms "
                   "(%lld ms)",
                   g->group, why.msg, (long long)g->session_ms);
        g->dc_reported = true;
        g->dc_next_ms = now + (g->dc_from_broker ? SESSION_REFRESH_MS : SESSION_RETRY_MS);
    }
    drive(g);
}

/* Asks for the group's session timeout when due (network thread, from drive). */
static void dc_maybe_send(kc_g848_t *g, int64_t now)
{
    if (g->dc_inflight || now < g->dc_next_ms || g->closing || !(g->conf.self_fence_ratio > 0))
        return;
    kc_conn_t *conn = kc_eng_any_conn(g->e);
    kc_conn_req_spec_t s = {KC_DESCRIBE_CONFIGS_REQUEST_API_KEY,
                            KC_DESCRIBE_CONFIGS_REQUEST_MIN_VERSION,
                            KC_DESCRIBE_CONFIGS_REQUEST_MAX_VERSION,
                            dc_encode,
                            dc_done,
                            g};
    if (!conn || kc_conn_state(conn) != KC_CONN_READY) {
        g->dc_next_ms = now + 100; /* the bootstrap connection is still being set up */
        return;
    }
    if (kc_conn_pick_version(conn, KC_DESCRIBE_CONFIGS_REQUEST_API_KEY,
                             KC_DESCRIBE_CONFIGS_REQUEST_MIN_VERSION,
                             KC_DESCRIBE_CONFIGS_REQUEST_MAX_VERSION) < 0) {
        if (!g->dc_reported)
            kc_log(KC_LOG_INFO, "group848",
                   "group %s: the broker does not speak DescribeConfigs; the self-fence assumes "
                   "group.consumer.session.timeout.ms (%lld ms)",
                   g->group, (long long)g->session_ms);
        g->dc_reported = true;
        g->dc_next_ms = now + SESSION_REFRESH_MS;
        return;
    }
    if (kc_conn_send(conn, &s, NULL) != KC_OK) {
        g->dc_next_ms = now + SESSION_RETRY_MS;
        return;
    }
    g->dc_inflight = true;
}

/* ---- offsets ------------------------------------------------------------------------------- */

/* The first non-zero Kafka code of an OffsetCommit answer (0 when all went through). */
static void commit_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                        const kc_engine_offset_t *res, size_t n)
{
    g_op_t *op = opaque;
    int kind = op->kind;
    uint64_t seq = op->seq;
    kc_g848_t *g = op_end(op);
    if (!g || rc == KC_ERR_CLOSED)
        return;
    int16_t code = kc_engine_commit_code(rc, err, res, n);
    g->commits++;
    if (code) {
        g->commit_failures++;
        g->last_error_code = code;
    }
    if (kind == 2) {
        kc_gc_on_commit_result(&g->gc, seq, code, kc_now_ms());
    } else if (code == 113) {
        /* STALE_MEMBER_EPOCH: the epoch moved while the commit was on its way (a rebalance).
         * Not an error: asked again shortly, under the epoch the next heartbeat brings. */
        int64_t soon = kc_now_ms() + 200;
        if (soon < g->next_auto_commit)
            g->next_auto_commit = soon;
    } else if (code) {
        /* Auto-commit: reported, never silent; the next interval commits again. */
        kc_error_t e;
        kc_fail_kafka(&e, code, "group %s: auto-commit of %zu partition(s) refused", g->group, n);
        g->h.error(g->h.opaque, &e, false);
    }
    drive(g);
}

/* Commits the processed offsets of `parts` (or of everything held, when NULL). */
static kc_err_t commit_parts(kc_g848_t *g, const kc_tpset_t *parts, int kind, uint64_t seq,
                             bool *sent)
{
    *sent = false;
    if (g->self_fenced) /* the partitions may be another member's by now: commit nothing */
        return KC_OK;
    const kc_tpset_t *s = parts ? parts : &g->gc.rc.held;
    kc_engine_offset_t *offs = calloc(s->n ? s->n : 1, sizeof *offs);
    if (!offs)
        return KC_ERR_NOMEM;
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++) {
        const char *t = lookup(g, s->items[i].topic_id);
        int64_t o = t ? g->h.committable(g->h.opaque, t, s->items[i].partition) : -1;
        if (o >= 0)
            offs[m++] = (kc_engine_offset_t){t, s->items[i].partition, o, -1, NULL, 0};
    }
    kc_err_t rc = KC_OK;
    if (m) {
        kc_commit_identity_t who;
        kc_error_t err;
        g_op_t *op = op_new(g, kind, seq);
        rc = op ? kc_gc_commit_identity(&g->gc, &who, &err) : KC_ERR_NOMEM;
        if (rc == KC_OK)
            rc = kc_engine_commit(g->e, &who, offs, m, (int)g->conf.commit_timeout_ms, commit_done,
                                  op, &err);
        if (rc == KC_OK)
            *sent = true;
        else if (op)
            op_end(op);
    }
    free(offs);
    return rc;
}

static void fetch_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                       const kc_engine_offset_t *res, size_t n)
{
    (void)err; /* each partition's outcome is in res[i] (offset_pending.c reads them) */
    g_op_t *op = opaque;
    uint64_t seq = op->seq;
    bool retry = op->kind == 5;
    kc_g848_t *g = op_end(op);
    if (!g || rc == KC_ERR_CLOSED)
        return;
    /* A partition whose committed offset could not be read is not started from
     * auto.offset.reset (that skips or re-reads): it is asked again, the others start now, and
     * the assignment step completes for them (reconciliation does not wait for the retries). */
    kc_opend_apply(&g->pending, retry, rc, res, n, &g->h, g->group, kc_now_ms());
    if (!retry)
        kc_gc_action_done(&g->gc, seq, kc_now_ms());
    drive(g);
}

static void *retry_op_new(void *g)
{
    return op_new(g, 5, 0);
}

static void retry_op_drop(void *op)
{
    (void)op_end(op);
}

/* One OffsetFetch retry for the pending partitions at a time, never while closing. */
static void retry_offsets(kc_g848_t *g, int64_t now)
{
    if (!g->closing)
        kc_opend_send_due(&g->pending, now, g->e, g->group, (int)g->conf.commit_timeout_ms,
                          fetch_done, retry_op_new, retry_op_drop, g);
}

static void do_assign(kc_g848_t *g, const kc_gc_action_t *a, int64_t now)
{
    kc_engine_offset_t *offs = calloc(a->parts->n ? a->parts->n : 1, sizeof *offs);
    size_t m = 0;
    for (size_t i = 0; offs && i < a->parts->n; i++) {
        const char *t = lookup(g, a->parts->items[i].topic_id);
        if (t)
            offs[m++] = (kc_engine_offset_t){t, a->parts->items[i].partition, -1, -1, NULL, 0};
    }
    g_op_t *op = m ? op_new(g, 1, a->seq) : NULL;
    kc_error_t err;
    if (!op || kc_engine_committed(g->e, g->group, offs, m, (int)g->conf.commit_timeout_ms,
                                   fetch_done, op, &err) != KC_OK) {
        if (op)
            op_end(op);
        kc_gc_action_done(&g->gc, a->seq, now);
    }
    free(offs);
}

/* ---- the drive loop ------------------------------------------------------------------------ */

static void act(kc_g848_t *g, const kc_gc_action_t *a, int64_t now)
{
    switch (a->kind) {
    case KC_GC_ACT_REVOKE:
    case KC_GC_ACT_LOSE: {
        bool lost = a->kind == KC_GC_ACT_LOSE;
        if (lost) /* an assign still fetching offsets must not add what is being lost */
            for (g_op_t *o = g->ops; o; o = o->next)
                if (o->kind == 1)
                    o->cancelled = true;
        int wait = 0;
        for (size_t i = 0; i < a->parts->n; i++) {
            const char *t = lookup(g, a->parts->items[i].topic_id);
            if (t) {
                kc_opend_remove(&g->pending, t, a->parts->items[i].partition);
                wait += g->h.revoke(g->h.opaque, t, a->parts->items[i].partition, lost);
            }
        }
        g->revoke_seq = a->seq;
        g->revoke_wait = wait;
        g->revoke_active = wait > 0;
        if (!wait)
            kc_gc_action_done(&g->gc, a->seq, now);
        break;
    }
    case KC_GC_ACT_COMMIT: {
        bool sent;
        if (commit_parts(g, a->parts, 2, a->seq, &sent) != KC_OK || !sent)
            kc_gc_on_commit_result(&g->gc, a->seq, 0, now); /* nothing processed: nothing due */
        break;
    }
    case KC_GC_ACT_DROP:
        for (size_t i = 0; i < a->parts->n; i++) {
            const char *t = lookup(g, a->parts->items[i].topic_id);
            if (t) {
                kc_opend_remove(&g->pending, t, a->parts->items[i].partition);
                g->h.drop(g->h.opaque, t, a->parts->items[i].partition);
            }
        }
        kc_gc_action_done(&g->gc, a->seq, now);
        break;
    case KC_GC_ACT_ASSIGN:
        do_assign(g, a, now);
        break;
    case KC_GC_ACT_REDISCOVER:
        g->rediscoveries++;
        kc_engine_coord_invalidate(g->e, g->group);
        find_start(g);
        break;
    case KC_GC_ACT_METADATA:
        md_send(g);
        break;
    case KC_GC_ACT_ERROR:
        g->last_error_code = a->error.kafka_code;
        g->h.error(g->h.opaque, &a->error, a->fatal);
        break;
    default:
        break;
    }
}

/* The self-fence rule (group848.h) applied at `now`. Raised only while the application holds
 * partitions: holding none (before the first assignment, after a leave) there is nothing to stop
 * and nothing is reported. Lifted only by an answer without error, never by losing the epoch: an
 * answer that fenced us (the epoch goes to 0) is followed by the LOSE action, and delivering in
 * between would be delivering partitions another member may already own. */
/* The ratio in force: the configured one, raised for the heartbeat interval the coordinator
 * gave (self_fence.h). */
static double fence_ratio(const kc_g848_t *g)
{
    return kc_self_fence_ratio(g->conf.self_fence_ratio, g->session_ms, g->gc.interval_ms);
}

static void self_fence_check(kc_g848_t *g, int64_t now)
{
    bool due = kc_self_fence_due(g->answered_sent_ms, g->session_ms, fence_ratio(g), now, NULL);
    if (!due && g->self_fenced) {
        g->self_fenced = false;
        kc_log(KC_LOG_INFO, "group848",
               "group %s: the coordinator answered again; delivery resumes at epoch %d", g->group,
               (int)g->gc.epoch);
        if (g->h.fence)
            g->h.fence(g->h.opaque, false, NULL);
        return;
    }
    if (!due || g->self_fenced || g->gc.rc.held.n == 0 || g->gc.state == KC_GC_UNSUBSCRIBED ||
        g->gc.state == KC_GC_FATAL)
        return;
    g->self_fenced = true;
    g->self_fences++;
    kc_error_t why;
    kc_fail(&why, KC_ERR_TIMEOUT,
            "group %s: self-fenced: no heartbeat answered for %lld ms; the coordinator may "
            "expire the member in %lld ms (session timeout %lld, fence at %.0f%%). No callback "
            "of its partitions starts, nothing is committed until it answers",
            g->group, (long long)(now - g->answered_sent_ms),
            (long long)(kc_self_fence_expiry(g->answered_sent_ms, g->session_ms) - now),
            (long long)g->session_ms, fence_ratio(g) * 100);
    kc_log(KC_LOG_WARN, "group848", "%s", why.msg);
    if (g->h.fence)
        g->h.fence(g->h.opaque, true, &why);
}

static void drive(kc_g848_t *g)
{
    if (g->e->closed)
        return;
    if (g->driving) {
        g->again = true;
        return;
    }
    g->driving = true;
    int64_t now;
    do {
        g->again = false;
        now = kc_now_ms();
        /* max.poll.interval.ms: Java's liveness rule, the runtime's watchdog decides. */
        unsigned over = g->h.poll_over ? g->h.poll_over(g->h.opaque) : 0;
        if (over && !g->poll_expired) {
            g->poll_expired = true;
            kc_gc_poll_expired(&g->gc, now);
        } else if (!over && g->poll_expired) {
            g->poll_expired = false;
            kc_gc_poll_resumed(&g->gc, now);
        }
        /* Before the actions: an answer that fenced us must not lift the self-fence ahead of
         * the LOSE action that revokes the partitions (self_fence_check keeps it then). */
        self_fence_check(g, now);
        kc_gc_tick(&g->gc, now);
        kc_gc_action_t a;
        while (kc_gc_next_action(&g->gc, now, &a))
            act(g, &a, now);
        retry_offsets(g, now);
        bool ac_inflight = false; /* one auto-commit at a time: a slow one is not piled onto */
        for (g_op_t *o = g->ops; o; o = o->next)
            ac_inflight |= o->kind == 3;
        if (g->conf.auto_commit && g->gc.state == KC_GC_STABLE && now >= g->next_auto_commit &&
            !g->closing && !ac_inflight && !g->self_fenced) {
            g->next_auto_commit = now + g->conf.auto_commit_interval_ms;
            bool sent;
            (void)commit_parts(g, NULL, 3, 0, &sent);
        }
        maybe_heartbeat(g, now);
        dc_maybe_send(g, now);
    } while (g->again);
    g->driving = false;
    int64_t wake = kc_gc_next_wakeup(&g->gc, now) - now;
    int64_t fence_at;
    if (!g->self_fenced &&
        !kc_self_fence_due(g->answered_sent_ms, g->session_ms, fence_ratio(g), now, &fence_at) &&
        fence_at - now < wake)
        wake = fence_at - now;
    /* Connecting, watchdog and auto-commit have no event of their own: look at least this often. */
    int64_t cap = 100;
    if (wake > cap || wake < 0)
        wake = cap;
    kc_loop_timer_start(g->e->loop, &g->timer, wake < 1 ? 1 : wake);
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

kc_err_t kc_g848_new(kc_g848_t **out, kc_engine_t *e, const kc_g848_conf_t *conf,
                     const kc_g848_hooks_t *hooks, kc_error_t *err)
{
    if (!conf->group_id || !*conf->group_id)
        return kc_fail(err, KC_ERR_CONFIG, "group.protocol=consumer needs group.id");
    kc_g848_t *g = calloc(1, sizeof *g);
    if (!g)
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    g->e = e;
    g->conf = *conf;
    g->h = *hooks;
    g->group = strdup(conf->group_id);
    g->instance = dup_or_null(conf->group_instance_id);
    g->rack = dup_or_null(conf->rack_id);
    g->assignor = dup_or_null(conf->server_assignor);
    kc_gc_config_t c = {0};
    c.group_id = g->group;
    c.group_instance_id = g->instance;
    c.rack_id = g->rack;
    c.server_assignor = g->assignor;
    c.rebalance_timeout_ms = conf->rebalance_timeout_ms;
    c.commit_on_revoke = conf->auto_commit;
    c.commit_timeout_ms = conf->commit_timeout_ms;
    c.coordinator_timeout_ms = conf->coordinator_timeout_ms;
    c.retry_backoff_ms = e->conf.retry_backoff_ms;
    c.retry_backoff_max_ms = e->conf.retry_backoff_max_ms;
    c.lookup = lookup;
    c.lookup_ctx = g;
    kc_err_t rc =
        g->group ? kc_gc_init(&g->gc, &c, err) : kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    if (rc != KC_OK) {
        free(g->group);
        free(g->instance);
        free(g->rack);
        free(g->assignor);
        free(g);
        return rc;
    }
    g->timer.cb = on_timer;
    g->timer.opaque = g;
    g->answered_sent_ms = -1;
    g->session_ms = conf->session_timeout_ms;
    kc_opend_init(&g->pending, e->conf.retry_backoff_ms, e->conf.retry_backoff_max_ms);
    *out = g;
    return KC_OK;
}

kc_err_t kc_g848_subscribe(kc_g848_t *g, const char *const *topics, size_t n, const char *regex,
                           kc_error_t *err)
{
    kc_err_t rc = kc_gc_subscribe(&g->gc, topics, (int32_t)n, regex, kc_now_ms(), err);
    if (rc == KC_OK) {
        g->next_auto_commit = kc_now_ms() + g->conf.auto_commit_interval_ms;
        drive(g);
    }
    return rc;
}

void kc_g848_revoked(kc_g848_t *g)
{
    if (!g->revoke_active || --g->revoke_wait > 0)
        return;
    g->revoke_active = false;
    kc_gc_action_done(&g->gc, g->revoke_seq, kc_now_ms());
    drive(g);
}

void kc_g848_close(kc_g848_t *g)
{
    if (g->closing)
        return;
    g->closing = true;
    kc_opend_clear(&g->pending); /* leaving: nothing more to start */
    kc_gc_close(&g->gc, kc_now_ms());
    drive(g);
}

bool kc_g848_closed(const kc_g848_t *g)
{
    return (g->gc.state == KC_GC_UNSUBSCRIBED || g->gc.state == KC_GC_FATAL) && !g->hb_inflight &&
           !g->revoke_active;
}

void kc_g848_free(kc_g848_t *g)
{
    if (!g)
        return;
    kc_loop_timer_stop(g->e->loop, &g->timer);
    /* Ops still at the coordinator: their callbacks come later (or at engine close) and find
     * no group. Requests on connections (heartbeat, metadata) are refused by `e->closed`, which
     * the caller sets by closing the engine before it frees the group. */
    for (g_op_t *o = g->ops; o; o = o->next)
        o->g = NULL;
    kc_gc_free(&g->gc);
    kc_opend_free(&g->pending);
    for (size_t i = 0; i < g->n_names; i++)
        free(g->names[i].name);
    free(g->names);
    free(g->group);
    free(g->instance);
    free(g->rack);
    free(g->assignor);
    free(g);
}

const char *kc_g848_member_id(const kc_g848_t *g)
{
    return g->gc.member_id;
}

kc_err_t kc_g848_commit_identity(void *gp, kc_commit_identity_t *who, kc_error_t *err)
{
    kc_g848_t *g = gp;
    if (g->closing && g->gc.epoch <= 0)
        return kc_fail(err, KC_ERR_STATE, "group %s: the member has left the group", g->group);
    return kc_gc_commit_identity(&g->gc, who, err);
}

size_t kc_g848_stats_json(const kc_g848_t *g, char *buf, size_t cap)
{
    size_t n = 0;
#define OUT(...)                                                                                   \
    do {                                                                                           \
        int w_ =                                                                                   \
            snprintf(buf ? buf + (n < cap ? n : cap) : NULL, n < cap ? cap - n : 0, __VA_ARGS__);  \
        if (w_ > 0)                                                                                \
            n += (size_t)w_;                                                                       \
    } while (0)
    OUT("{\"protocol\":\"consumer\",\"state\":\"%s\",\"member_id\":\"%s\",\"epoch\":%d,"
        "\"assignment\":[",
        kc_gc_state_name(g->gc.state), g->gc.member_id, (int)g->gc.epoch);
    const kc_tpset_t *o = kc_gc_owned(&g->gc);
    for (size_t i = 0; i < o->n; i++) {
        const char *t = lookup((void *)g, o->items[i].topic_id);
        OUT("%s[\"%s\",%d]", i ? "," : "", t ? t : "?", (int)o->items[i].partition);
    }
    OUT("],\"self_fenced\":%s,\"self_fences\":%llu,\"session_timeout_ms\":%lld,"
        "\"session_timeout_source\":\"%s\"",
        g->self_fenced ? "true" : "false", (unsigned long long)g->self_fences,
        (long long)g->session_ms, g->dc_from_broker ? "group" : "config");
    OUT(",\"rebalances\":%llu,\"heartbeats\":%llu,\"heartbeat_errors\":%llu,\"commits\":%llu,"
        "\"commit_failures\":%llu,\"rediscoveries\":%llu,\"coordinator\":%d}",
        (unsigned long long)g->rebalances, (unsigned long long)g->heartbeats,
        (unsigned long long)g->hb_errors, (unsigned long long)g->commits,
        (unsigned long long)g->commit_failures, (unsigned long long)g->rediscoveries,
        (int)kc_engine_coord_node(g->e, g->group));
#undef OUT
    return n;
}
