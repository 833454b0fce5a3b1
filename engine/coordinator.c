/*
 * FindCoordinator cache, coordinator connections, and the op machinery every coordinator call
 * shares: find the coordinator, send the op's request to it, ask again until a deadline. The
 * OffsetCommit / OffsetFetch requests themselves are in coordinator_offsets.c. See coordinator.h
 * for the rules.
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
#include "conn_wire.h"
#include "coordinator_int.h"
#include "offsets_codec.h"
#include "proto/kafka_errors.h"

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

void kc_eng_coord_finish(coord_op_t *op, kc_err_t rc, const kc_error_t *err)
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
void kc_eng_coord_again(coord_op_t *op, int rediscover, const char *why)
{
    kc_engine_t *e = op->e;
    if (rediscover) {
        coord_entry_t *ce = cache_get(coord(e), op->group);
        if (ce)
            ce->valid = 0;
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
        kc_eng_coord_finish(op, KC_ERR_TIMEOUT, &out);
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
    m.key = key; /* v0-3 */
    m.key_type = 0;
    m.coordinator_keys.count = 1; /* v4+ */
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
        rc = KC_ENG_FC_UNDECODABLE;
    } else if (version >= 4 && m.coordinators.count < 1) {
        rc = KC_ENG_FC_NONE_NAMED;
    } else {
        /* Before v4 the one answer is the response's own fields. */
        const kc_find_coordinator_response_coordinator_t *k =
            version >= 4 ? &m.coordinators.items[0] : NULL;
        rc = k ? k->error_code : m.error_code;
        if (!rc) {
            kc_str_t host = k ? k->host : m.host;
            int hl = host.len > 0 && host.len < 256 ? host.len : 0;
            snprintf(addr, cap, memchr(host.ptr, ':', (size_t)hl) ? "[%.*s]:%d" : "%.*s:%d", hl,
                     (const char *)host.ptr, k ? k->port : m.port);
            *node_id = k ? k->node_id : m.node_id;
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
int kc_eng_coord_answered(coord_op_t *op, kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame,
                          int rediscover)
{
    op->inflight = 0;
    if (op->e->closed) {
        kc_buf_unref(frame);
        kc_eng_coord_finish(op, KC_ERR_CLOSED, NULL);
        return 0;
    }
    /* Asking again would be refused again, or get the same bytes back. */
    if (rc == KC_ERR_UNSUPPORTED || rc == KC_ERR_MALFORMED) {
        kc_eng_coord_finish(op, rc, kc_conn_refusal(conn));
        return 0;
    }
    if (rc != KC_OK) {
        kc_eng_coord_again(op, rediscover, kc_err_name(rc));
        return 0;
    }
    return 1;
}

static void fc_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    coord_op_t *op = opaque;
    if (!kc_eng_coord_answered(op, conn, rc, frame, 0))
        return;
    char addr[sizeof((coord_entry_t *)0)->addr];
    int32_t node = -1;
    int code = kc_eng_fc_decode(frame, body_off, version, addr, sizeof addr, &node);
    kc_buf_unref(frame);
    const char *why = NULL;
    kc_error_t err;
    if (code == KC_ENG_FC_UNDECODABLE) {
        /* The broker's bytes for the version it offered: the same next time. */
        kc_wire_bad_answer(&err, kc_conn_peer(conn), KC_FIND_COORDINATOR_REQUEST_API_KEY, version,
                           "no FindCoordinator response in it");
        kc_eng_coord_finish(op, err.code, &err);
        return;
    } else if (code == KC_KAFKA_UNSUPPORTED_VERSION) {
        kc_fail_kafka(&err, (int16_t)code,
                      "FindCoordinator v%d: broker %s refuses a version its ApiVersions offers",
                      (int)version, kc_conn_peer(conn));
        kc_eng_coord_finish(op, err.code, &err);
        return;
    } else if (code == KC_ENG_FC_NONE_NAMED) {
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
        kc_eng_coord_again(op, 0, why);
    else
        op_step(op);
}

static void op_step(coord_op_t *op)
{
    kc_engine_t *e = op->e;
    struct kc_coord *c = coord(e);
    coord_entry_t *ce = cache_get(c, op->group);
    kc_error_t err;
    if (!ce) {
        kc_eng_coord_finish(op, KC_ERR_NOMEM, NULL);
        return;
    }
    kc_conn_t *conn;
    kc_conn_req_spec_t spec;
    if (!ce->valid) {
        conn = kc_eng_any_conn(e);
        spec = (kc_conn_req_spec_t){KC_FIND_COORDINATOR_REQUEST_API_KEY,
                                    KC_ENG_FIND_COORDINATOR_MIN,
                                    KC_ENG_FIND_COORDINATOR_MAX,
                                    fc_encode,
                                    fc_done,
                                    op};
    } else if (op->kind == OP_FIND) {
        kc_eng_coord_finish(op, KC_OK, NULL); /* known now: the caller takes kc_engine_coord_conn */
        return;
    } else {
        conn = conn_for(e, ce->addr);
        /* A coordinator whose broker died leaves this connection reconnecting to a dead address,
         * and a request queued there waits out request.timeout.ms: once a connect attempt has
         * failed, ask FindCoordinator again instead (the group moves to another broker). */
        if (conn && kc_conn_state(conn) != KC_CONN_READY && kc_conn_failures(conn) > 0) {
            kc_eng_coord_again(op, 1, "coordinator unreachable");
            return;
        }
        if (op->kind == OP_COMMIT)
            spec = (kc_conn_req_spec_t){KC_OFFSET_COMMIT_REQUEST_API_KEY,
                                        KC_ENG_OFFSET_COMMIT_MIN,
                                        KC_ENG_OFFSET_COMMIT_MAX,
                                        kc_eng_oc_encode,
                                        kc_eng_oc_done,
                                        op};
        else
            spec = (kc_conn_req_spec_t){KC_OFFSET_FETCH_REQUEST_API_KEY,
                                        KC_ENG_OFFSET_FETCH_MIN,
                                        KC_ENG_OFFSET_FETCH_MAX,
                                        kc_eng_oc_encode,
                                        kc_eng_oc_done,
                                        op};
    }
    kc_err_t rc = conn ? kc_conn_send(conn, &spec, &err) : KC_ERR_TRANSPORT;
    if (rc != KC_OK) {
        if (op->who_failed) { /* encoded at once and found no identity */
            kc_eng_coord_finish(op, op->who_err.code, &op->who_err);
            return;
        }
        if (rc == KC_ERR_UNSUPPORTED) { /* no version in common: asking again changes nothing */
            kc_eng_coord_finish(op, rc, &err);
            return;
        }
        kc_eng_coord_again(op, ce->valid, "no connection");
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

kc_err_t kc_eng_coord_start(kc_engine_t *e, int kind, const char *group, const char *member_id,
                            int32_t generation, const char *instance_id,
                            kc_engine_identity_fn who_fn, void *who_ctx,
                            const kc_engine_offset_t *offs, size_t n, int timeout_ms,
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
        kc_eng_coord_finish(op, KC_ERR_NOMEM, NULL); /* not linked yet: only frees */
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
    op_step(op);
    return KC_OK;
}

kc_err_t kc_engine_find_coordinator(kc_engine_t *e, const char *group, int timeout_ms,
                                    kc_engine_offsets_cb cb, void *opaque, kc_error_t *err)
{
    return kc_eng_coord_start(e, OP_FIND, group, "", -1, NULL, NULL, NULL, NULL, 0, timeout_ms, cb,
                              opaque, err);
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
    if (ce && ce->valid)
        ce->valid = 0;
}

int32_t kc_engine_coord_node(kc_engine_t *e, const char *group)
{
    if (!coord(e))
        return -1;
    coord_entry_t *ce = cache_get(e->coord, group);
    return ce && ce->valid ? ce->node_id : -1;
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
        kc_eng_coord_finish(c->ops, KC_ERR_CLOSED, NULL);
    for (size_t i = 0; i < c->n_cache; i++)
        free(c->cache[i].group);
    free(c->cache);
    free(c->conns);
    free(c);
    e->coord = NULL;
}
