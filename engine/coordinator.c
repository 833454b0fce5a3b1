/*
 * FindCoordinator cache, coordinator connections, and the OffsetCommit / OffsetFetch calls
 * with deadline-bounded re-asking. See coordinator.h for the rules.
 *
 * Owner: network thread. An op lives from the call until its callback; it is either waiting on
 * its timer, or has exactly one request in flight (`inflight`), never both.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "coordinator.h"
#include "engine_int.h"
#include "offsets_codec.h"
#include "proto/kafka_errors.h"

typedef struct coord_entry {
    char *group;
    int32_t node_id;
    char addr[300];
    uint8_t valid;
} coord_entry_t;

typedef struct coord_conn {
    char addr[300];
    kc_conn_t *conn;
} coord_conn_t;

typedef struct coord_op coord_op_t;

struct kc_coord {
    coord_entry_t *cache;
    size_t n_cache;
    coord_conn_t *conns;
    size_t n_conns;
    coord_op_t *ops;
    kc_engine_coord_stats_t st;
};

enum { OP_COMMIT = 1, OP_FETCH = 2, OP_FIND = 3 };

struct coord_op {
    kc_engine_t *e;
    int kind;
    char *group, *member_id, *instance_id;
    int32_t generation;
    kc_engine_offset_t *ents;
    size_t n;
    kc_retry_t retry;
    kc_loop_timer_t timer;
    uint8_t inflight, finding;
    kc_engine_offsets_cb cb;
    void *opaque;
    kc_error_t last;
    /* A member's call (kc_engine_commit_member): the identity is read at each encode; when that
     * read fails the request fails, and who_err says why. */
    kc_engine_identity_fn who_fn;
    void *who_ctx;
    bool who_failed;
    kc_error_t who_err;
    coord_op_t *next;
};

static struct kc_coord *coord(kc_engine_t *e)
{
    if (!e->coord)
        e->coord = calloc(1, sizeof *e->coord);
    return e->coord;
}

static coord_entry_t *cache_get(struct kc_coord *c, const char *group)
{
    for (size_t i = 0; i < c->n_cache; i++)
        if (strcmp(c->cache[i].group, group) == 0)
            return &c->cache[i];
    coord_entry_t *n = realloc(c->cache, (c->n_cache + 1) * sizeof *n);
    if (!n)
        return NULL;
    c->cache = n;
    coord_entry_t *ce = &c->cache[c->n_cache];
    memset(ce, 0, sizeof *ce);
    ce->group = strdup(group);
    if (!ce->group)
        return NULL;
    c->n_cache++;
    return ce;
}

static kc_conn_t *conn_for(kc_engine_t *e, const char *addr)
{
    struct kc_coord *c = coord(e);
    for (size_t i = 0; i < c->n_conns; i++)
        if (strcmp(c->conns[i].addr, addr) == 0)
            return c->conns[i].conn;
    coord_conn_t *n = realloc(c->conns, (c->n_conns + 1) * sizeof *n);
    if (!n)
        return NULL;
    c->conns = n;
    kc_conn_t *conn = kc_eng_conn_open(e, addr);
    if (!conn)
        return NULL;
    snprintf(c->conns[c->n_conns].addr, sizeof c->conns[0].addr, "%s", addr);
    c->conns[c->n_conns++].conn = conn;
    return conn;
}

static void op_finish(coord_op_t *op, kc_err_t rc, const kc_error_t *err)
{
    kc_engine_t *e = op->e;
    struct kc_coord *c = e->coord;
    for (coord_op_t **pp = &c->ops; *pp; pp = &(*pp)->next)
        if (*pp == op) {
            *pp = op->next;
            break;
        }
    kc_loop_timer_stop(e->loop, &op->timer);
    if (op->cb)
        op->cb(op->opaque, rc, err, op->ents, op->n);
    for (size_t i = 0; i < op->n; i++) {
        free((char *)op->ents[i].topic);
        free((char *)op->ents[i].metadata);
    }
    free(op->ents);
    free(op->group);
    free(op->member_id);
    free(op->instance_id);
    free(op);
}

static void op_step(coord_op_t *op);

static void op_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    op_step(t->opaque);
}

/* Ask again later, or give up at the deadline. `rediscover`: forget the coordinator first. */
static void op_again(coord_op_t *op, int rediscover, const char *why)
{
    kc_engine_t *e = op->e;
    if (rediscover) {
        coord_entry_t *ce = cache_get(coord(e), op->group);
        if (ce)
            ce->valid = 0;
        coord(e)->st.rediscoveries++;
    }
    int64_t now = kc_now_ms(), at;
    kc_error_t err;
    if (kc_retry_next(&op->retry, now, &at, &err) != KC_OK) {
        kc_error_t out;
        if (op->last.code == KC_ERR_BROKER)
            kc_fail_kafka(&out, op->last.kafka_code,
                          "group %s: coordinator did not settle before "
                          "the deadline (last: %s)",
                          op->group, why);
        else
            kc_fail(&out, KC_ERR_TIMEOUT, "group %s: no answer before the deadline (last: %s)",
                    op->group, why);
        out.code = KC_ERR_TIMEOUT;
        op_finish(op, KC_ERR_TIMEOUT, &out);
        return;
    }
    kc_loop_timer_start(e->loop, &op->timer, at - now);
}

/* ---- FindCoordinator ------------------------------------------------------------------------ */

kc_err_t kc_eng_fc_encode(kc_wbuf_t *out, int16_t version, const char *group)
{
    kc_find_coordinator_request_t m;
    kc_find_coordinator_request_init(&m);
    kc_str_t key = kc_str(group);
    m.key_type = 0;
    m.coordinator_keys.count = 1;
    m.coordinator_keys.items = &key;
    kc_error_t err;
    return kc_find_coordinator_request_encode(&m, version, out, &err);
}

int kc_eng_fc_decode(const kc_buf_t *frame, size_t body_off, int16_t version, char *addr,
                     size_t cap, int32_t *node_id)
{
    kc_arena_t a = {0};
    kc_error_t err;
    kc_find_coordinator_response_t m;
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    int rc;
    if (kc_find_coordinator_response_decode(&m, version, &r, &a, &err) != KC_OK) {
        rc = -1;
    } else if (m.coordinators.count < 1) {
        rc = -2;
    } else {
        const kc_find_coordinator_response_coordinator_t *k = &m.coordinators.items[0];
        rc = k->error_code;
        if (!rc) {
            int hl = k->host.len > 0 && k->host.len < 256 ? k->host.len : 0;
            snprintf(addr, cap, memchr(k->host.ptr, ':', (size_t)hl) ? "[%.*s]:%d" : "%.*s:%d", hl,
                     (const char *)k->host.ptr, k->port);
            *node_id = k->node_id;
        }
    }
    kc_arena_free(&a);
    return rc;
}

static kc_err_t fc_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    return kc_eng_fc_encode(out, version, ((coord_op_t *)opaque)->group);
}

/* The start of every answer: the op is no longer in flight; a closed engine ends it; a failed
 * request is asked again (`rediscover`: forget the coordinator first). 1: decode the frame. */
static int op_answered(coord_op_t *op, kc_err_t rc, kc_buf_t *frame, int rediscover)
{
    op->inflight = 0;
    if (op->e->closed) {
        kc_buf_unref(frame);
        op_finish(op, KC_ERR_CLOSED, NULL);
        return 0;
    }
    if (rc != KC_OK) {
        op_again(op, rediscover, kc_err_name(rc));
        return 0;
    }
    return 1;
}

static void fc_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    coord_op_t *op = opaque;
    if (!op_answered(op, rc, frame, 0))
        return;
    char addr[sizeof((coord_entry_t *)0)->addr];
    int32_t node = -1;
    int code = kc_eng_fc_decode(frame, body_off, version, addr, sizeof addr, &node);
    kc_buf_unref(frame);
    const char *why = NULL;
    if (code == -1) {
        why = "undecodable FindCoordinator";
    } else if (code == -2) {
        why = "FindCoordinator named no coordinator";
    } else if (code) {
        kc_fail_kafka(&op->last, (int16_t)code, "FindCoordinator");
        why = kc_kafka_err_name((int16_t)code);
    } else {
        coord_entry_t *ce = cache_get(coord(op->e), op->group);
        if (ce) {
            snprintf(ce->addr, sizeof ce->addr, "%s", addr);
            ce->node_id = node;
            ce->valid = 1;
        }
    }
    if (why)
        op_again(op, 0, why);
    else
        op_step(op);
}

/* ---- OffsetCommit / OffsetFetch ------------------------------------------------------------- */

/* A member's op takes its identity now (kc_engine_identity_fn): the member id, the epoch or
 * generation of this moment, the instance id. */
static kc_err_t op_read_identity(coord_op_t *op, kc_error_t *err)
{
    kc_commit_identity_t who;
    kc_err_t rc = op->who_fn(op->who_ctx, &who, err);
    if (rc != KC_OK)
        return rc;
    const char *inst =
        who.group_instance_id && *who.group_instance_id ? who.group_instance_id : NULL;
    char *m = strdup(who.member_id ? who.member_id : "");
    char *i = inst ? strdup(inst) : NULL;
    if (!m || (inst && !i)) {
        free(m);
        free(i);
        return kc_fail(err, KC_ERR_NOMEM, "offsets: out of memory");
    }
    free(op->member_id);
    free(op->instance_id);
    op->member_id = m;
    op->instance_id = i;
    op->generation = who.generation_or_epoch;
    return KC_OK;
}

static kc_err_t oc_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    coord_op_t *op = opaque;
    kc_error_t err;
    kc_arena_t a = {0};
    kc_err_t rc;
    if (op->who_fn && op_read_identity(op, &op->who_err) != KC_OK) {
        op->who_failed = true;
        return op->who_err.code;
    }
    if (op->kind == OP_COMMIT) {
        kc_commit_entry_t *ce = calloc(op->n, sizeof *ce);
        if (!ce)
            return KC_ERR_NOMEM;
        for (size_t i = 0; i < op->n; i++)
            ce[i] = (kc_commit_entry_t){op->ents[i].topic,        {0},
                                        op->ents[i].partition,    op->ents[i].offset,
                                        op->ents[i].leader_epoch, op->ents[i].metadata};
        kc_commit_identity_t who = {op->group, op->member_id, op->generation, op->instance_id};
        kc_commit_req_t req;
        kc_offset_commit_request_t m;
        rc = kc_offsets_build_commit(&req, &who, ce, op->n, &err);
        if (rc == KC_OK)
            rc = kc_offsets_codec_commit(&m, &req, version, &a, &err);
        if (rc == KC_OK)
            rc = kc_offset_commit_request_encode(&m, version, out, &err);
        free(ce);
    } else {
        /* Entries are sorted by topic (kc_engine_committed), so a topic's partitions are
         * adjacent. */
        kc_offset_fetch_request_topics_t *ts = calloc(op->n, sizeof *ts);
        int32_t *ps = calloc(op->n, sizeof *ps);
        rc = KC_ERR_NOMEM;
        if (ts && ps) {
            int32_t nt = -1;
            for (size_t i = 0; i < op->n; i++) {
                if (i == 0 || strcmp(op->ents[i].topic, op->ents[i - 1].topic) != 0) {
                    nt++;
                    ts[nt].name = kc_str(op->ents[i].topic);
                    ts[nt].partition_indexes.items = &ps[i];
                }
                ps[i] = op->ents[i].partition;
                ts[nt].partition_indexes.count++;
            }
            kc_offset_fetch_request_t m;
            kc_offset_fetch_request_init(&m);
            /* A member (KIP-848) names itself so the broker can check it still belongs (v9+);
             * anyone else sends null/-1, the form the broker accepts from non-members. */
            bool member = *op->member_id && op->generation >= 0;
            kc_offset_fetch_request_group_t g = {kc_str(op->group),
                                                 member ? kc_str(op->member_id) : KC_STR_NULL,
                                                 member ? op->generation : -1,
                                                 {nt + 1, ts}};
            m.groups.count = 1;
            m.groups.items = &g;
            m.require_stable = true;
            rc = kc_offset_fetch_request_encode(&m, version, out, &err);
        }
        free(ts);
        free(ps);
    }
    kc_arena_free(&a);
    return rc;
}

static kc_engine_offset_t *find_ent(coord_op_t *op, const kc_str_t *topic, int32_t part)
{
    for (size_t i = 0; i < op->n; i++)
        if (op->ents[i].partition == part && topic->len >= 0 &&
            strlen(op->ents[i].topic) == (size_t)topic->len &&
            memcmp(op->ents[i].topic, topic->ptr, (size_t)topic->len) == 0)
            return &op->ents[i];
    return NULL;
}

/* The refusal, naming each refused partition and its code (as many as the message holds), so a
 * caller learns which partitions failed and why, not only the first code. */
static void fail_message(coord_op_t *op, kc_error_t *err, int16_t first_error)
{
    int16_t first = 0;
    size_t n_failed = 0;
    for (size_t i = 0; i < op->n; i++) {
        if (!first && op->ents[i].error > 0)
            first = op->ents[i].error;
        n_failed += op->ents[i].error != 0;
    }
    if (!first)
        first = first_error;
    char who[96] = "";
    if (op->kind == OP_COMMIT || *op->member_id)
        snprintf(who, sizeof who, " as member '%.40s' epoch/generation %d",
                 *op->member_id ? op->member_id : "", (int)op->generation);
    kc_fail_kafka(err, first, "%s for group %s%s refused for %zu partition(s):",
                  op->kind == OP_COMMIT ? "OffsetCommit" : "OffsetFetch", op->group, who, n_failed);
    size_t len = strlen(err->msg);
    for (size_t i = 0; i < op->n && len + 1 < sizeof err->msg; i++) {
        if (op->ents[i].error == 0)
            continue;
        int w =
            snprintf(err->msg + len, sizeof err->msg - len, " %s[%d] %s", op->ents[i].topic,
                     (int)op->ents[i].partition,
                     op->ents[i].error > 0 ? kc_kafka_err_name(op->ents[i].error) : "unanswered");
        if (w < 0 || (size_t)w >= sizeof err->msg - len) {
            len = sizeof err->msg - 1;
            break;
        }
        len += (size_t)w;
    }
}

static void oc_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    coord_op_t *op = opaque;
    if (op->who_failed && !op->e->closed) { /* no identity to send: the member left or rejoins */
        op->inflight = 0;
        kc_buf_unref(frame);
        op_finish(op, op->who_err.code, &op->who_err);
        return;
    }
    if (!op_answered(op, rc, frame, 1)) /* a failed connection: the coordinator may have moved */
        return;
    kc_arena_t a = {0};
    kc_error_t err;
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    int16_t top = 0;
    int16_t *codes = calloc(op->n ? op->n : 1, sizeof *codes);
    int decoded = 0;
    for (size_t i = 0; i < op->n; i++)
        op->ents[i].error = -1 /* until the response names it */;
    if (codes && op->kind == OP_COMMIT) {
        kc_offset_commit_response_t m;
        if (kc_offset_commit_response_decode(&m, version, &r, &a, &err) == KC_OK) {
            decoded = 1;
            for (int32_t t = 0; t < m.topics.count; t++)
                for (int32_t j = 0; j < m.topics.items[t].partitions.count; j++) {
                    const kc_offset_commit_response_partition_t *p =
                        &m.topics.items[t].partitions.items[j];
                    kc_engine_offset_t *x =
                        find_ent(op, &m.topics.items[t].name, p->partition_index);
                    if (x)
                        x->error = p->error_code;
                }
        }
    } else if (codes) {
        kc_offset_fetch_response_t m;
        if (kc_offset_fetch_response_decode(&m, version, &r, &a, &err) == KC_OK &&
            m.groups.count == 1) {
            decoded = 1;
            const kc_offset_fetch_response_group_t *g = &m.groups.items[0];
            top = g->error_code;
            for (int32_t t = 0; t < g->topics.count; t++)
                for (int32_t j = 0; j < g->topics.items[t].partitions.count; j++) {
                    const kc_offset_fetch_response_partitions_t *p =
                        &g->topics.items[t].partitions.items[j];
                    kc_engine_offset_t *x =
                        find_ent(op, &g->topics.items[t].name, p->partition_index);
                    if (x) {
                        x->error = p->error_code;
                        x->offset = p->committed_offset;
                        x->leader_epoch = p->committed_leader_epoch;
                    }
                }
        }
    }
    kc_arena_free(&a);
    kc_buf_unref(frame);
    if (!decoded) {
        free(codes);
        op_again(op, 1, "undecodable response");
        return;
    }
    for (size_t i = 0; i < op->n; i++) {
        codes[i] = op->ents[i].error;
        /* The broker stored this one: the partition's stats say so from now on (whichever
         * commit it was: auto, revocation, the application's). */
        if (op->kind == OP_COMMIT && op->ents[i].error == 0)
            kc_engine_set_committed(op->e, op->ents[i].topic, op->ents[i].partition,
                                    op->ents[i].offset);
    }
    kc_offsets_result_t res;
    kc_offsets_classify_response(top, codes, op->n, NULL, &res);
    free(codes);
    if (top)
        for (size_t i = 0; i < op->n; i++)
            op->ents[i].error = top;
    switch (res.verdict) {
    case KC_OFFSETS_OK:
        op_finish(op, KC_OK, NULL);
        return;
    case KC_OFFSETS_RETRY_FRESH_EPOCH:
        /* Only a member's call re-reads its identity; a fixed identity would be refused again,
         * so its owner (a group module's state machine) gets the code instead. */
        if (!op->who_fn)
            break;
        /* fall through */
    case KC_OFFSETS_REDISCOVER:
    case KC_OFFSETS_RETRY:
        kc_fail_kafka(&op->last, res.first_error, "group %s", op->group);
        op_again(op, res.verdict == KC_OFFSETS_REDISCOVER, kc_kafka_err_name(res.first_error));
        return;
    default:
        break;
    }
    fail_message(op, &err, res.first_error);
    op_finish(op, KC_ERR_BROKER, &err);
}

/* One step: find the coordinator if it is not cached, else send the call to it. */
static void op_step(coord_op_t *op)
{
    kc_engine_t *e = op->e;
    struct kc_coord *c = coord(e);
    coord_entry_t *ce = cache_get(c, op->group);
    kc_error_t err;
    if (!ce) {
        op_finish(op, KC_ERR_NOMEM, NULL);
        return;
    }
    kc_conn_t *conn;
    kc_conn_req_spec_t spec;
    if (!ce->valid) {
        conn = kc_eng_any_conn(e);
        spec = (kc_conn_req_spec_t){KC_FIND_COORDINATOR_REQUEST_API_KEY,
                                    4,
                                    KC_FIND_COORDINATOR_REQUEST_MAX_VERSION,
                                    fc_encode,
                                    fc_done,
                                    op};
        c->st.find_coordinator++;
    } else if (op->kind == OP_FIND) {
        op_finish(op, KC_OK, NULL); /* known now: the caller takes kc_engine_coord_conn */
        return;
    } else {
        conn = conn_for(e, ce->addr);
        /* A coordinator whose broker died leaves this connection reconnecting to a dead address,
         * and a request queued there waits out request.timeout.ms: once a connect attempt has
         * failed, ask FindCoordinator again instead (the group moves to another broker). */
        if (conn && kc_conn_state(conn) != KC_CONN_READY && kc_conn_failures(conn) > 0) {
            op_again(op, 1, "coordinator unreachable");
            return;
        }
        if (op->kind == OP_COMMIT)
            spec = (kc_conn_req_spec_t){
                KC_OFFSET_COMMIT_REQUEST_API_KEY, 2, 9, oc_encode, oc_done, op};
        else
            spec =
                (kc_conn_req_spec_t){KC_OFFSET_FETCH_REQUEST_API_KEY, 8, 9, oc_encode, oc_done, op};
    }
    if (!conn || kc_conn_send(conn, &spec, &err) != KC_OK) {
        if (op->who_failed) { /* encoded at once and found no identity */
            op_finish(op, op->who_err.code, &op->who_err);
            return;
        }
        op_again(op, ce->valid, "no connection");
        return;
    }
    op->inflight = 1;
}

static int ent_cmp(const void *a, const void *b)
{
    const kc_engine_offset_t *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

static kc_err_t op_start(kc_engine_t *e, int kind, const char *group, const char *member_id,
                         int32_t generation, const char *instance_id, kc_engine_identity_fn who_fn,
                         void *who_ctx, const kc_engine_offset_t *offs, size_t n, int timeout_ms,
                         kc_engine_offsets_cb cb, void *opaque, kc_error_t *err)
{
    if (e->closing)
        return kc_fail(err, KC_ERR_CLOSED, "engine closing");
    if (!group || !*group || (n == 0 && kind != OP_FIND))
        return kc_fail(err, KC_ERR_INVALID_ARG, "offsets: a group and partitions are needed");
    if (!coord(e))
        return kc_fail(err, KC_ERR_NOMEM, "offsets: out of memory");
    coord_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return kc_fail(err, KC_ERR_NOMEM, "offsets: out of memory");
    op->e = e;
    op->kind = kind;
    op->group = strdup(group);
    op->member_id = strdup(member_id ? member_id : "");
    op->instance_id = instance_id ? strdup(instance_id) : NULL;
    op->generation = generation;
    op->who_fn = who_fn;
    op->who_ctx = who_ctx;
    op->ents = calloc(n ? n : 1, sizeof *op->ents);
    op->n = n;
    op->cb = cb;
    op->opaque = opaque;
    int ok = op->group && op->member_id && op->ents && (!instance_id || op->instance_id);
    for (size_t i = 0; ok && i < n; i++) {
        op->ents[i] = offs[i];
        op->ents[i].topic = strdup(offs[i].topic);
        op->ents[i].metadata = offs[i].metadata ? strdup(offs[i].metadata) : NULL;
        ok = op->ents[i].topic && (!offs[i].metadata || op->ents[i].metadata);
    }
    op->cb = NULL;
    if (!ok) {
        op_finish(op, KC_ERR_NOMEM, NULL); /* not linked yet: only frees */
        return kc_fail(err, KC_ERR_NOMEM, "offsets: out of memory");
    }
    op->cb = cb;
    if (kind == OP_FETCH)
        qsort(op->ents, n, sizeof *op->ents, ent_cmp);
    kc_retry_start(&op->retry, kc_now_ms(), timeout_ms, e->conf.retry_backoff_ms,
                   e->conf.retry_backoff_max_ms, e->rng ^ (uint64_t)(uintptr_t)op);
    op->timer.cb = op_timer;
    op->timer.opaque = op;
    op->next = e->coord->ops;
    e->coord->ops = op;
    if (kind == OP_COMMIT)
        e->coord->st.commits++;
    else if (kind == OP_FETCH)
        e->coord->st.offset_fetches++;
    op_step(op);
    return KC_OK;
}

kc_err_t kc_engine_commit(kc_engine_t *e, const kc_commit_identity_t *who,
                          const kc_engine_offset_t *offs, size_t n, int timeout_ms,
                          kc_engine_offsets_cb cb, void *opaque, kc_error_t *err)
{
    kc_commit_req_t probe;
    kc_commit_entry_t one = {offs && n ? offs[0].topic : "", {0}, 0, 0, -1, NULL};
    /* Refuse an illegal identity now, not inside the encoder (offsets.c checks both forms). */
    if (kc_offsets_build_commit(&probe, who, &one, 1, err) != KC_OK)
        return err ? err->code : KC_ERR_INVALID_ARG;
    return op_start(e, OP_COMMIT, who->group_id, who->member_id, who->generation_or_epoch,
                    who->group_instance_id, NULL, NULL, offs, n, timeout_ms, cb, opaque, err);
}

kc_err_t kc_engine_committed(kc_engine_t *e, const char *group, const kc_engine_offset_t *offs,
                             size_t n, int timeout_ms, kc_engine_offsets_cb cb, void *opaque,
                             kc_error_t *err)
{
    return op_start(e, OP_FETCH, group, "", -1, NULL, NULL, NULL, offs, n, timeout_ms, cb, opaque,
                    err);
}

/* Starts a member's call: the identity is read once now (a non-member fails at once, with the
 * reason), then again at every encode. */
static kc_err_t member_start(kc_engine_t *e, int kind, const char *group, kc_engine_identity_fn who,
                             void *ctx, const kc_engine_offset_t *offs, size_t n, int timeout_ms,
                             kc_engine_offsets_cb cb, void *opaque, kc_error_t *err)
{
    kc_commit_identity_t w;
    if (!who)
        return kc_fail(err, KC_ERR_INVALID_ARG, "offsets: no identity source");
    kc_err_t rc = who(ctx, &w, err);
    if (rc != KC_OK)
        return rc;
    if (kind == OP_COMMIT) {
        kc_commit_req_t probe;
        kc_commit_entry_t one = {offs && n ? offs[0].topic : "", {0}, 0, 0, -1, NULL};
        if (kc_offsets_build_commit(&probe, &w, &one, 1, err) != KC_OK)
            return err ? err->code : KC_ERR_INVALID_ARG;
    }
    return op_start(e, kind, group, w.member_id, w.generation_or_epoch, w.group_instance_id, who,
                    ctx, offs, n, timeout_ms, cb, opaque, err);
}

kc_err_t kc_engine_commit_member(kc_engine_t *e, const char *group, kc_engine_identity_fn who,
                                 void *ctx, const kc_engine_offset_t *offs, size_t n,
                                 int timeout_ms, kc_engine_offsets_cb cb, void *opaque,
                                 kc_error_t *err)
{
    return member_start(e, OP_COMMIT, group, who, ctx, offs, n, timeout_ms, cb, opaque, err);
}

kc_err_t kc_engine_committed_member(kc_engine_t *e, const char *group, kc_engine_identity_fn who,
                                    void *ctx, const kc_engine_offset_t *offs, size_t n,
                                    int timeout_ms, kc_engine_offsets_cb cb, void *opaque,
                                    kc_error_t *err)
{
    return member_start(e, OP_FETCH, group, who, ctx, offs, n, timeout_ms, cb, opaque, err);
}

kc_err_t kc_engine_find_coordinator(kc_engine_t *e, const char *group, int timeout_ms,
                                    kc_engine_offsets_cb cb, void *opaque, kc_error_t *err)
{
    return op_start(e, OP_FIND, group, "", -1, NULL, NULL, NULL, NULL, 0, timeout_ms, cb, opaque,
                    err);
}

kc_conn_t *kc_engine_coord_conn(kc_engine_t *e, const char *group)
{
    if (e->closed || !coord(e))
        return NULL;
    coord_entry_t *ce = cache_get(e->coord, group);
    return ce && ce->valid ? conn_for(e, ce->addr) : NULL;
}

void kc_engine_coord_invalidate(kc_engine_t *e, const char *group)
{
    if (!coord(e))
        return;
    coord_entry_t *ce = cache_get(e->coord, group);
    if (ce && ce->valid) {
        ce->valid = 0;
        e->coord->st.rediscoveries++;
    }
}

int32_t kc_engine_coord_node(kc_engine_t *e, const char *group)
{
    if (!coord(e))
        return -1;
    coord_entry_t *ce = cache_get(e->coord, group);
    return ce && ce->valid ? ce->node_id : -1;
}

void kc_engine_coord_stats(const kc_engine_t *e, kc_engine_coord_stats_t *out)
{
    if (e->coord)
        *out = e->coord->st;
    else
        memset(out, 0, sizeof *out);
}

void kc_eng_coord_free(kc_engine_t *e)
{
    struct kc_coord *c = e->coord;
    if (!c)
        return;
    /* Closing a connection fails its requests (their ops finish with KC_ERR_CLOSED inside the
     * close); ops waiting on a timer are finished after. */
    for (size_t i = 0; i < c->n_conns; i++) {
        kc_conn_t *conn = c->conns[i].conn;
        c->conns[i].conn = NULL;
        if (conn)
            kc_conn_close(conn);
    }
    while (c->ops)
        op_finish(c->ops, KC_ERR_CLOSED, NULL);
    for (size_t i = 0; i < c->n_cache; i++)
        free(c->cache[i].group);
    free(c->cache);
    free(c->conns);
    free(c);
    e->coord = NULL;
}

int16_t kc_engine_commit_code(kc_err_t rc, const kc_error_t *err, const kc_engine_offset_t *res,
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
