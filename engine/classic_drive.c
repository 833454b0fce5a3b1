/*
 * group.protocol=classic on the network thread: see classic_drive.h.
 *
 * Owner: network thread, all of it. Every answer (group requests on our own coordinator
 * connection, FindCoordinator and Metadata on an engine connection, OffsetFetch/OffsetCommit
 * through engine/coordinator.h) comes back on that thread and calls drive(), the only place that
 * pulls outputs from the state machine. Lifetime: kc_gcl_free runs after kc_engine_close (the
 * engine's connections, and so the answers on them, are gone: callbacks check e->closed), and it
 * closes our own connection while `dead` makes its failing callbacks no-ops.
 */
#include "classic_drive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "coordinator.h"
#include "engine_int.h"
#include "group_classic.h"
#include "proto/describe_groups.gen.h"
#include "proto/find_coordinator.gen.h"
#include "proto/kafka_errors.h"
#include "proto/metadata.gen.h"

#define MD_REFRESH_MS 3000

typedef struct g_op {
    kc_gcl_t *g;
    uint64_t seq;
    int kind; /* 1 assign (OffsetFetch), 2 reconcile commit, 3 auto-commit */
    bool cancelled;
    struct g_op *next;
} g_op_t;

struct kc_gcl {
    kc_engine_t *e;
    kc_gcl_conf_t conf;
    char *group, *instance, *rack;
    kc_gcl_hooks_t h;
    kc_classic_t m;
    kc_loop_timer_t timer;
    char **topics;
    int32_t *counts; /* partition count per subscribed topic, 0 = unknown */
    size_t n_topics;
    bool md_known, subscribed, md_inflight;
    int64_t next_md_ms;
    /* coordinator */
    kc_conn_t *conn;
    char coord_addr[300];
    int32_t coord_node;
    bool finding, want_known;
    int64_t find_retry_ms;
    /* the group request in flight on `conn` (encoded at once: views die at the next poll) */
    int req_kind; /* 0 none, else the out kind */
    kc_wbuf_t req;
    int64_t req_sent_ms;
    /* revoke */
    uint64_t revoke_seq;
    int revoke_wait;
    bool revoke_active;
    g_op_t *ops;
    int64_t next_auto_commit;
    int32_t last_generation;
    uint64_t rebalances, heartbeats, hb_errors, commits, commit_failures, rediscoveries;
    bool driving, again, closing, closed_out, dead;
};

static void drive(kc_gcl_t *g);

static bool gone(const kc_gcl_t *g)
{
    return g->dead || g->e->closed;
}

static int32_t partitions_of(void *ctx, const char *topic)
{
    kc_gcl_t *g = ctx;
    for (size_t i = 0; i < g->n_topics; i++)
        if (strcmp(g->topics[i], topic) == 0)
            return g->counts[i];
    return 0;
}

static void on_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    drive(t->opaque);
}

static g_op_t *op_new(kc_gcl_t *g, int kind, uint64_t seq)
{
    g_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return NULL;
    *op = (g_op_t){g, seq, kind, false, g->ops};
    g->ops = op;
    return op;
}

static kc_gcl_t *op_end(g_op_t *op)
{
    kc_gcl_t *g = op->g;
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

/* ---- metadata: partition counts of the subscription ----------------------------------------- */

static kc_err_t md_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    kc_gcl_t *g = opaque;
    kc_metadata_request_t m;
    kc_metadata_request_init(&m);
    m.allow_auto_topic_creation = false;
    kc_metadata_request_topic_t *ts = calloc(g->n_topics ? g->n_topics : 1, sizeof *ts);
    if (!ts)
        return KC_ERR_NOMEM;
    for (size_t i = 0; i < g->n_topics; i++)
        ts[i].name = kc_str(g->topics[i]);
    m.topics.count = (int32_t)g->n_topics;
    m.topics.items = ts;
    kc_error_t err;
    kc_err_t rc = kc_metadata_request_encode(&m, version, out, &err);
    free(ts);
    return rc;
}

static void md_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    kc_gcl_t *g = opaque;
    if (gone(g)) {
        kc_buf_unref(frame);
        return;
    }
    g->md_inflight = false;
    bool changed = false, known = true;
    if (rc == KC_OK) {
        kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
        kc_arena_t a = {0};
        kc_error_t e;
        kc_metadata_response_t m;
        if (kc_metadata_response_decode(&m, version, &r, &a, &e) == KC_OK) {
            for (int32_t i = 0; i < m.topics.count; i++) {
                const kc_metadata_response_topic_t *t = &m.topics.items[i];
                for (size_t j = 0; j < g->n_topics; j++) {
                    if ((size_t)t->name.len != strlen(g->topics[j]) ||
                        memcmp(t->name.ptr, g->topics[j], (size_t)t->name.len) != 0)
                        continue;
                    int32_t n = t->error_code == 0 ? t->partitions.count : 0;
                    if (n > 0 && g->counts[j] > 0 && n != g->counts[j])
                        changed = true;
                    if (n > 0)
                        g->counts[j] = n;
                }
            }
        }
        kc_arena_free(&a);
        kc_buf_unref(frame);
    }
    for (size_t j = 0; j < g->n_topics; j++)
        known = known && g->counts[j] > 0;
    g->md_known = g->md_known || known || rc == KC_OK;
    if (changed)
        kc_classic_metadata_changed(&g->m, kc_now_ms());
    drive(g);
}

static void md_maybe_send(kc_gcl_t *g, int64_t now)
{
    if (g->md_inflight || now < g->next_md_ms || !g->n_topics)
        return;
    kc_conn_t *c = kc_eng_any_conn(g->e);
    if (!c)
        return;
    g->next_md_ms = now + MD_REFRESH_MS;
    kc_conn_req_spec_t s = {KC_METADATA_REQUEST_API_KEY, 12, 13, md_encode, md_done, g};
    g->md_inflight = kc_conn_send(c, &s, NULL) == KC_OK;
}

/* ---- coordinator: FindCoordinator, then our own connection ---------------------------------- */

static void conn_state(kc_conn_t *conn, kc_conn_state_t st, const kc_error_t *why, void *opaque)
{
    (void)why;
    kc_gcl_t *g = opaque;
    if (gone(g) || conn != g->conn)
        return;
    if (st == KC_CONN_READY && g->want_known) {
        g->want_known = false;
        kc_classic_coordinator_known(&g->m, kc_now_ms());
    } else if (st == KC_CONN_DOWN && !g->req_kind && !g->want_known) {
        kc_classic_coordinator_lost(&g->m, kc_now_ms());
    }
    drive(g);
}

static void use_coordinator(kc_gcl_t *g, const char *addr, int32_t node)
{
    g->coord_node = node;
    if (g->conn && strcmp(addr, g->coord_addr) == 0 && kc_conn_state(g->conn) == KC_CONN_READY) {
        kc_classic_coordinator_known(&g->m, kc_now_ms());
        return;
    }
    if (g->conn)
        kc_conn_close(g->conn); /* a request in flight there fails: request_failed */
    g->conn = NULL;
    snprintf(g->coord_addr, sizeof g->coord_addr, "%s", addr);
    kc_conn_opts_t o = {0};
    o.servers = addr;
    o.client_id = g->e->client_id;
    o.connect_timeout_ms = 10000;
    /* A JoinGroup is answered when the rebalance completes (up to the rebalance timeout). */
    o.request_timeout_ms = g->conf.rebalance_timeout_ms + 5000;
    o.reconnect_backoff_ms = 50;
    o.reconnect_backoff_max_ms = 1000;
    o.on_state = conn_state;
    o.state_opaque = g;
    kc_error_t err;
    if (kc_conn_new(&g->conn, g->e->loop, &o, &err) != KC_OK) {
        g->conn = NULL;
        g->find_retry_ms = kc_now_ms() + 500;
        return;
    }
    g->want_known = true;
    kc_conn_start(g->conn);
}

static kc_err_t fc_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    kc_gcl_t *g = opaque;
    kc_find_coordinator_request_t m;
    kc_find_coordinator_request_init(&m);
    kc_str_t key = kc_str(g->group);
    m.key_type = 0;
    m.coordinator_keys.count = 1;
    m.coordinator_keys.items = &key;
    kc_error_t err;
    return kc_find_coordinator_request_encode(&m, version, out, &err);
}

static void fc_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    kc_gcl_t *g = opaque;
    if (gone(g)) {
        kc_buf_unref(frame);
        return;
    }
    g->finding = false;
    bool ok = false;
    if (rc == KC_OK) {
        kc_arena_t a = {0};
        kc_error_t err;
        kc_find_coordinator_response_t m;
        kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
        if (kc_find_coordinator_response_decode(&m, version, &r, &a, &err) == KC_OK &&
            m.coordinators.count >= 1 && m.coordinators.items[0].error_code == 0) {
            const kc_find_coordinator_response_coordinator_t *k = &m.coordinators.items[0];
            char addr[300];
            int hl = k->host.len > 0 && k->host.len < 256 ? k->host.len : 0;
            snprintf(addr, sizeof addr,
                     memchr(k->host.ptr, ':', (size_t)hl) ? "[%.*s]:%d" : "%.*s:%d", hl,
                     (const char *)k->host.ptr, k->port);
            use_coordinator(g, addr, k->node_id);
            ok = true;
        }
        kc_arena_free(&a);
        kc_buf_unref(frame);
    }
    if (!ok) /* a fresh cluster answers NOT_COORDINATOR until __consumer_offsets exists */
        g->find_retry_ms = kc_now_ms() + 200;
    drive(g);
}

static void find_maybe_send(kc_gcl_t *g, int64_t now)
{
    if (g->finding || now < g->find_retry_ms)
        return;
    kc_conn_t *c = kc_eng_any_conn(g->e);
    if (!c)
        return;
    kc_conn_req_spec_t s = {KC_FIND_COORDINATOR_REQUEST_API_KEY, 4, 6, fc_encode, fc_done, g};
    g->finding = kc_conn_send(c, &s, NULL) == KC_OK;
    if (!g->finding)
        g->find_retry_ms = now + 200;
}

/* ---- group requests on our connection ------------------------------------------------------- */

static kc_err_t req_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    (void)version;
    kc_gcl_t *g = opaque;
    kc_err_t rc = kc_wbuf_reserve(out, g->req.len);
    if (rc != KC_OK)
        return rc;
    memcpy(out->data + out->len, g->req.data, g->req.len);
    out->len += g->req.len;
    return KC_OK;
}

static void req_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off,
                     int16_t version, void *opaque)
{
    (void)conn;
    kc_gcl_t *g = opaque;
    if (g->dead) {
        kc_buf_unref(frame);
        return;
    }
    int kind = g->req_kind;
    g->req_kind = 0;
    int64_t now = kc_now_ms();
    if (rc != KC_OK) {
        if (kind == KC_CLASSIC_SEND_HEARTBEAT)
            g->hb_errors++;
        kc_classic_request_failed(&g->m, now);
        drive(g);
        return;
    }
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    kc_arena_t a = {0};
    kc_error_t e;
    kc_err_t drc = KC_OK;
    switch (kind) {
    case KC_CLASSIC_SEND_JOIN: {
        kc_join_group_response_t m;
        if ((drc = kc_join_group_response_decode(&m, version, &r, &a, &e)) == KC_OK)
            kc_classic_join_response(&g->m, &m, now);
        break;
    }
    case KC_CLASSIC_SEND_SYNC: {
        kc_sync_group_response_t m;
        if ((drc = kc_sync_group_response_decode(&m, version, &r, &a, &e)) == KC_OK)
            kc_classic_sync_response(&g->m, &m, now);
        break;
    }
    case KC_CLASSIC_SEND_HEARTBEAT: {
        kc_heartbeat_response_t m;
        if ((drc = kc_heartbeat_response_decode(&m, version, &r, &a, &e)) == KC_OK) {
            g->heartbeats++;
            g->hb_errors += m.error_code != 0;
            kc_classic_heartbeat_response(&g->m, m.error_code, now);
        }
        break;
    }
    case KC_CLASSIC_SEND_LEAVE: {
        kc_leave_group_response_t m;
        if ((drc = kc_leave_group_response_decode(&m, version, &r, &a, &e)) == KC_OK)
            kc_classic_leave_response(&g->m, m.error_code, now);
        break;
    }
    default:
        break;
    }
    if (drc != KC_OK)
        kc_classic_request_failed(&g->m, now);
    kc_arena_free(&a);
    kc_buf_unref(frame);
    drive(g);
}

static void send_group(kc_gcl_t *g, const kc_classic_out_t *o, int64_t now)
{
    static const int16_t key[] = {[KC_CLASSIC_SEND_JOIN] = KC_JOIN_GROUP_REQUEST_API_KEY,
                                  [KC_CLASSIC_SEND_SYNC] = KC_SYNC_GROUP_REQUEST_API_KEY,
                                  [KC_CLASSIC_SEND_HEARTBEAT] = KC_HEARTBEAT_REQUEST_API_KEY,
                                  [KC_CLASSIC_SEND_LEAVE] = KC_LEAVE_GROUP_REQUEST_API_KEY};
    static const int16_t lo[] = {[KC_CLASSIC_SEND_JOIN] = 2,
                                 [KC_CLASSIC_SEND_SYNC] = 0,
                                 [KC_CLASSIC_SEND_HEARTBEAT] = 0,
                                 [KC_CLASSIC_SEND_LEAVE] = 0};
    static const int16_t hi[] = {[KC_CLASSIC_SEND_JOIN] = 9,
                                 [KC_CLASSIC_SEND_SYNC] = 5,
                                 [KC_CLASSIC_SEND_HEARTBEAT] = 4,
                                 [KC_CLASSIC_SEND_LEAVE] = 5};
    int k = o->kind;
    if (!g->conn || kc_conn_state(g->conn) != KC_CONN_READY) {
        kc_classic_coordinator_lost(&g->m, now);
        return;
    }
    int v = kc_conn_pick_version(g->conn, key[k], lo[k], hi[k]);
    kc_error_t e;
    if (v < 0 || (k == KC_CLASSIC_SEND_JOIN && g->instance && v < 5)) {
        kc_fail(&e, KC_ERR_UNSUPPORTED, "group %s: the coordinator's group API versions %s",
                g->group, v < 0 ? "do not overlap ours" : "predate static membership (v5)");
        g->h.error(g->h.opaque, &e, true);
        return;
    }
    g->req.len = 0;
    kc_err_t rc;
    switch (k) {
    case KC_CLASSIC_SEND_JOIN:
        rc = kc_join_group_request_encode(&o->req.join, (int16_t)v, &g->req, &e);
        break;
    case KC_CLASSIC_SEND_SYNC:
        rc = kc_sync_group_request_encode(&o->req.sync, (int16_t)v, &g->req, &e);
        break;
    case KC_CLASSIC_SEND_HEARTBEAT:
        rc = kc_heartbeat_request_encode(&o->req.heartbeat, (int16_t)v, &g->req, &e);
        break;
    default:
        rc = kc_leave_group_request_encode(&o->req.leave, (int16_t)v, &g->req, &e);
        break;
    }
    kc_conn_req_spec_t s = {key[k], (int16_t)v, (int16_t)v, req_encode, req_done, g};
    if (rc == KC_OK)
        rc = kc_conn_send(g->conn, &s, &e);
    if (rc != KC_OK) {
        kc_classic_request_failed(&g->m, now);
        return;
    }
    g->req_kind = k;
    g->req_sent_ms = now;
}

/* ---- offsets --------------------------------------------------------------------------------- */

static int16_t commit_code(kc_err_t rc, const kc_error_t *err, const kc_engine_offset_t *res,
                           size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (res[i].error)
            return res[i].error;
    if (rc == KC_OK)
        return 0;
    if (err && err->kafka_code)
        return (int16_t)err->kafka_code;
    return 7; /* REQUEST_TIMED_OUT: transport or deadline, retriable */
}

static void commit_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                        const kc_engine_offset_t *res, size_t n)
{
    g_op_t *op = opaque;
    int kind = op->kind;
    uint64_t seq = op->seq;
    kc_gcl_t *g = op_end(op);
    if (!g || rc == KC_ERR_CLOSED)
        return;
    int16_t code = commit_code(rc, err, res, n);
    g->commits++;
    g->commit_failures += code != 0;
    if (kind == 2) {
        kc_classic_commit_result(&g->m, seq, code, kc_now_ms());
    } else if (code) {
        kc_error_t e;
        kc_fail_kafka(&e, code, "group %s: auto-commit of %zu partition(s) refused", g->group, n);
        g->h.error(g->h.opaque, &e, false);
        kc_classic_app_commit_error(&g->m, code, kc_now_ms());
    }
    drive(g);
}

/* Commits the processed offsets of `parts` under `who`; *sent false when nothing was due. */
static kc_err_t commit_parts(kc_gcl_t *g, const kc_ctps_t *parts, const kc_commit_identity_t *who,
                             int kind, uint64_t seq, bool *sent)
{
    *sent = false;
    kc_engine_offset_t *offs = calloc(parts->n ? parts->n : 1, sizeof *offs);
    if (!offs)
        return KC_ERR_NOMEM;
    size_t m = 0;
    for (size_t i = 0; i < parts->n; i++) {
        int64_t o = g->h.committable(g->h.opaque, parts->items[i].topic, parts->items[i].partition);
        if (o >= 0)
            offs[m++] = (kc_engine_offset_t){
                parts->items[i].topic, parts->items[i].partition, o, -1, NULL, 0};
    }
    kc_err_t rc = KC_OK;
    if (m) {
        kc_error_t err;
        g_op_t *op = op_new(g, kind, seq);
        rc = op ? kc_engine_commit(g->e, who, offs, m, (int)g->conf.commit_timeout_ms, commit_done,
                                   op, &err)
                : KC_ERR_NOMEM;
        if (rc == KC_OK)
            *sent = true;
        else if (op)
            op_end(op);
    }
    free(offs);
    return rc;
}

static void auto_commit(kc_gcl_t *g, int64_t now)
{
    if (!g->conf.auto_commit || g->closing || now < g->next_auto_commit)
        return;
    if (g->m.state != KC_CLASSIC_ST_STABLE || g->m.pstep != KC_CLASSIC_P_IDLE)
        return;
    for (g_op_t *o = g->ops; o; o = o->next)
        if (o->kind == 3)
            return; /* one auto-commit at a time: a slow coordinator must not pile them up */
    g->next_auto_commit = now + g->conf.auto_commit_interval_ms;
    kc_commit_identity_t who;
    kc_error_t err;
    bool sent;
    if (kc_offsets_identity_member(&who, g->group, g->m.member_id, g->m.generation, g->instance,
                                   &err) == KC_OK)
        (void)commit_parts(g, &g->m.owned, &who, 3, 0, &sent);
}

static void fetch_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                       const kc_engine_offset_t *res, size_t n)
{
    g_op_t *op = opaque;
    uint64_t seq = op->seq;
    kc_gcl_t *g = op_end(op);
    if (!g || rc == KC_ERR_CLOSED)
        return;
    if (rc != KC_OK && err) /* starting from auto.offset.reset may re-read or skip: reported */
        g->h.error(g->h.opaque, err, false);
    for (size_t i = 0; i < n; i++) {
        int64_t start =
            res[i].error == 0 && res[i].offset >= 0 ? res[i].offset : KC_ENGINE_START_RESET;
        kc_error_t e;
        if (g->h.assign(g->h.opaque, res[i].topic, res[i].partition, start, &e) != KC_OK)
            g->h.error(g->h.opaque, &e, false);
    }
    kc_classic_action_done(&g->m, seq, kc_now_ms());
    drive(g);
}

static void do_assign(kc_gcl_t *g, const kc_classic_out_t *o, int64_t now)
{
    const kc_ctps_t *p = o->parts;
    kc_engine_offset_t *offs = calloc(p->n ? p->n : 1, sizeof *offs);
    for (size_t i = 0; offs && i < p->n; i++)
        offs[i] = (kc_engine_offset_t){p->items[i].topic, p->items[i].partition, -1, -1, NULL, 0};
    g_op_t *op = offs && p->n ? op_new(g, 1, o->seq) : NULL;
    kc_error_t err;
    if (!op || kc_engine_committed(g->e, g->group, offs, p->n, (int)g->conf.commit_timeout_ms,
                                   fetch_done, op, &err) != KC_OK) {
        if (op)
            op_end(op);
        kc_classic_action_done(&g->m, o->seq, now);
    }
    free(offs);
}

/* ---- the drive loop -------------------------------------------------------------------------- */

static void act(kc_gcl_t *g, const kc_classic_out_t *o, int64_t now)
{
    bool sent;
    switch (o->kind) {
    case KC_CLASSIC_SEND_JOIN:
    case KC_CLASSIC_SEND_SYNC:
    case KC_CLASSIC_SEND_HEARTBEAT:
    case KC_CLASSIC_SEND_LEAVE:
        send_group(g, o, now);
        break;
    case KC_CLASSIC_DESCRIBE:
        /* Only feeds the text of INCONSISTENT_GROUP_PROTOCOL; the error is raised without it. */
        kc_classic_describe_result(&g->m, NULL, NULL);
        break;
    case KC_CLASSIC_REDISCOVER:
        g->rediscoveries++;
        g->find_retry_ms = 0;
        find_maybe_send(g, now);
        break;
    case KC_CLASSIC_REVOKE:
    case KC_CLASSIC_LOSE: {
        bool lost = o->kind == KC_CLASSIC_LOSE;
        if (lost) /* an assign still fetching offsets must not add what is being lost */
            for (g_op_t *p = g->ops; p; p = p->next)
                if (p->kind == 1)
                    p->cancelled = true;
        int wait = 0;
        for (size_t i = 0; i < o->parts->n; i++)
            wait += g->h.revoke(g->h.opaque, o->parts->items[i].topic, o->parts->items[i].partition,
                                lost);
        g->revoke_seq = o->seq;
        g->revoke_wait = wait;
        g->revoke_active = wait > 0;
        if (!wait)
            kc_classic_action_done(&g->m, o->seq, now);
        break;
    }
    case KC_CLASSIC_COMMIT:
        if (commit_parts(g, o->parts, &o->who, 2, o->seq, &sent) != KC_OK || !sent)
            kc_classic_commit_result(&g->m, o->seq, 0, now); /* nothing processed: nothing due */
        break;
    case KC_CLASSIC_DROP:
        for (size_t i = 0; i < o->parts->n; i++)
            g->h.drop(g->h.opaque, o->parts->items[i].topic, o->parts->items[i].partition);
        kc_classic_action_done(&g->m, o->seq, now);
        break;
    case KC_CLASSIC_ASSIGN:
        do_assign(g, o, now);
        break;
    case KC_CLASSIC_ERROR:
        g->h.error(g->h.opaque, &o->error, false);
        break;
    case KC_CLASSIC_FATAL:
        g->h.error(g->h.opaque, &o->error, true);
        break;
    case KC_CLASSIC_CLOSED:
        g->closed_out = true;
        break;
    }
}

static void drive(kc_gcl_t *g)
{
    if (gone(g))
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
        if (g->h.poll_over)
            (void)g->h.poll_over(g->h.opaque); /* stats ride on it */
        md_maybe_send(g, now);
        if (!g->subscribed && (g->md_known || g->closing)) {
            /* The leader's assignors need the partition counts: join once they are known. */
            kc_error_t err;
            g->subscribed = true;
            if (!g->closing && kc_classic_subscribe(&g->m, (const char *const *)g->topics,
                                                    g->n_topics, &err) != KC_OK)
                g->h.error(g->h.opaque, &err, true);
            g->find_retry_ms = 0;
        }
        if (g->subscribed && !g->conn && !g->closing)
            find_maybe_send(g, now);
        if (g->req_kind && g->req_kind != KC_CLASSIC_SEND_JOIN && g->conn) {
            /* A coordinator killed mid-request would hold the answer for the whole (rebalance-
             * sized) request timeout: past a few heartbeat intervals the connection resets. */
            int64_t limit = 3 * (int64_t)g->conf.heartbeat_interval_ms;
            if (limit < 5000)
                limit = 5000;
            if (now - g->req_sent_ms > limit)
                kc_conn_reset(g->conn, KC_ERR_TIMEOUT, "group request unanswered");
        }
        /* The machine keeps at most one group request in flight itself. */
        kc_classic_out_t o;
        while (kc_classic_poll(&g->m, now, &o))
            act(g, &o, now);
        if (g->m.generation != g->last_generation && g->m.generation >= 0) {
            g->last_generation = g->m.generation;
            g->rebalances++;
        }
        auto_commit(g, now);
    } while (g->again);
    g->driving = false;
    int64_t wake = kc_classic_next_wakeup(&g->m) - now;
    if (wake > 100 || wake < 0)
        wake = 100; /* connecting, metadata and auto-commit have no event of their own */
    kc_loop_timer_start(g->e->loop, &g->timer, wake < 1 ? 1 : wake);
}

/* ---- lifecycle --------------------------------------------------------------------------------
 */

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

static kc_err_t parse_assignors(kc_classic_config_t *c, const char *list, kc_error_t *err)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list && *list ? list : "range,cooperative-sticky");
    char *save = NULL;
    for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        int a = kc_assignor_from_name(t);
        if (a < 0)
            return kc_fail(err, KC_ERR_CONFIG, "partition.assignment.strategy: unknown '%s'", t);
        if (c->n_assignors == KC_CLASSIC_MAX_ASSIGNORS)
            return kc_fail(err, KC_ERR_CONFIG, "partition.assignment.strategy: too many");
        c->assignors[c->n_assignors++] = (kc_assignor_t)a;
    }
    return c->n_assignors ? KC_OK
                          : kc_fail(err, KC_ERR_CONFIG, "partition.assignment.strategy is empty");
}

kc_err_t kc_gcl_new(kc_gcl_t **out, kc_engine_t *e, const kc_gcl_conf_t *conf,
                    const kc_gcl_hooks_t *hooks, kc_error_t *err)
{
    if (!conf->group_id || !*conf->group_id)
        return kc_fail(err, KC_ERR_CONFIG, "group.protocol=classic needs group.id");
    kc_gcl_t *g = calloc(1, sizeof *g);
    if (!g)
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    g->e = e;
    g->conf = *conf;
    g->h = *hooks;
    g->group = strdup(conf->group_id);
    g->instance = dup_or_null(conf->group_instance_id);
    g->rack = dup_or_null(conf->rack_id);
    g->last_generation = -1;
    g->coord_node = -1;
    kc_classic_config_t c = {0};
    c.group_id = g->group;
    c.instance_id = g->instance;
    c.rack = g->rack;
    c.session_timeout_ms = conf->session_timeout_ms;
    c.rebalance_timeout_ms = conf->rebalance_timeout_ms;
    c.heartbeat_interval_ms = conf->heartbeat_interval_ms;
    c.coordinator_timeout_ms = conf->coordinator_timeout_ms;
    c.auto_commit = conf->auto_commit;
    c.commit_timeout_ms = conf->commit_timeout_ms;
    c.retry_backoff_ms = e->conf.retry_backoff_ms;
    kc_err_t rc = g->group ? parse_assignors(&c, conf->assignors, err)
                           : kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    if (rc == KC_OK)
        rc = kc_classic_init(&g->m, &c, partitions_of, g, err);
    if (rc != KC_OK) {
        free(g->group);
        free(g->instance);
        free(g->rack);
        free(g);
        return rc;
    }
    g->timer.cb = on_timer;
    g->timer.opaque = g;
    *out = g;
    return KC_OK;
}

kc_err_t kc_gcl_subscribe(kc_gcl_t *g, const char *const *topics, size_t n, kc_error_t *err)
{
    if (g->n_topics)
        return kc_fail(err, KC_ERR_STATE, "classic group: already subscribed");
    g->topics = calloc(n ? n : 1, sizeof *g->topics);
    g->counts = calloc(n ? n : 1, sizeof *g->counts);
    if (!g->topics || !g->counts)
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    for (size_t i = 0; i < n; i++)
        if (!(g->topics[i] = strdup(topics[i])))
            return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    g->n_topics = n;
    g->next_auto_commit = kc_now_ms() + g->conf.auto_commit_interval_ms;
    drive(g);
    return KC_OK;
}

void kc_gcl_revoked(kc_gcl_t *g)
{
    if (!g->revoke_active || --g->revoke_wait > 0)
        return;
    g->revoke_active = false;
    kc_classic_action_done(&g->m, g->revoke_seq, kc_now_ms());
    drive(g);
}

void kc_gcl_close(kc_gcl_t *g)
{
    if (g->closing)
        return;
    g->closing = true;
    kc_classic_close(&g->m);
    drive(g);
}

bool kc_gcl_closed(const kc_gcl_t *g)
{
    kc_classic_state_t s = g->m.state;
    bool done = s == KC_CLASSIC_ST_CLOSED || s == KC_CLASSIC_ST_FATAL || s == KC_CLASSIC_ST_IDLE ||
                g->closed_out;
    return done && !g->req_kind && !g->revoke_active;
}

void kc_gcl_free(kc_gcl_t *g)
{
    if (!g)
        return;
    g->dead = true;
    kc_loop_timer_stop(g->e->loop, &g->timer);
    if (g->conn)
        kc_conn_close(g->conn); /* its failing callbacks see `dead` */
    for (g_op_t *o = g->ops; o; o = o->next)
        o->g = NULL;
    kc_classic_free(&g->m);
    for (size_t i = 0; i < g->n_topics; i++)
        free(g->topics[i]);
    free(g->topics);
    free(g->counts);
    kc_wbuf_free(&g->req);
    free(g->group);
    free(g->instance);
    free(g->rack);
    free(g);
}

static const char *state_name(kc_classic_state_t s)
{
    static const char *const n[] = {"idle",   "unjoined", "joining", "syncing",
                                    "stable", "closing",  "closed",  "fatal"};
    return (unsigned)s < sizeof n / sizeof n[0] ? n[s] : "?";
}

size_t kc_gcl_stats_json(const kc_gcl_t *g, char *buf, size_t cap)
{
    size_t n = 0;
#define OUT(...)                                                                                   \
    do {                                                                                           \
        int w_ =                                                                                   \
            snprintf(buf ? buf + (n < cap ? n : cap) : NULL, n < cap ? cap - n : 0, __VA_ARGS__);  \
        if (w_ > 0)                                                                                \
            n += (size_t)w_;                                                                       \
    } while (0)
    OUT("{\"protocol\":\"classic\",\"state\":\"%s\",\"member_id\":\"%s\",\"epoch\":%d,"
        "\"leader\":%s,\"assignor\":\"%s\",\"assignment\":[",
        state_name(g->m.state), g->m.member_id ? g->m.member_id : "", (int)g->m.generation,
        g->m.is_leader ? "true" : "false", g->m.protocol ? g->m.protocol : "");
    for (size_t i = 0; i < g->m.owned.n; i++)
        OUT("%s[\"%s\",%d]", i ? "," : "", g->m.owned.items[i].topic,
            (int)g->m.owned.items[i].partition);
    OUT("],\"rebalances\":%llu,\"heartbeats\":%llu,\"heartbeat_errors\":%llu,\"commits\":%llu,"
        "\"commit_failures\":%llu,\"rediscoveries\":%llu,\"coordinator\":%d}",
        (unsigned long long)g->rebalances, (unsigned long long)g->heartbeats,
        (unsigned long long)g->hb_errors, (unsigned long long)g->commits,
        (unsigned long long)g->commit_failures, (unsigned long long)g->rediscoveries,
        (int)g->coord_node);
#undef OUT
    return n;
}
