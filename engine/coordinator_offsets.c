/*
 * OffsetCommit / OffsetFetch: building an op's request (with the member identity read afresh for
 * a member's call), reading the answer (per-partition codes, "ask again" codes inside a
 * successful response), and the engine's offset calls that start such ops. The op machinery
 * (coordinator lookup, re-asking, deadlines) is coordinator.c's.
 *
 * Owner: network thread (every function; ops as in coordinator_int.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_wire.h"
#include "coordinator_int.h"
#include "offsets_codec.h"
#include "proto/kafka_errors.h"

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

kc_err_t kc_eng_oc_encode(kc_wbuf_t *out, int16_t version, void *opaque)
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
         * adjacent. A member (KIP-848) names itself so the broker can check it still belongs
         * (v9+); anyone else sends null/-1, the form the broker accepts from non-members. */
        kc_offsets_tp_t *tps = calloc(op->n ? op->n : 1, sizeof *tps);
        rc = KC_ERR_NOMEM;
        if (tps) {
            for (size_t i = 0; i < op->n; i++)
                tps[i] = (kc_offsets_tp_t){op->ents[i].topic, op->ents[i].partition};
            bool member = *op->member_id && op->generation >= 0;
            kc_offset_fetch_request_t m;
            rc = kc_offsets_codec_fetch(&m, op->group, member ? op->member_id : NULL,
                                        op->generation, tps, op->n, &a, &err);
            if (rc == KC_OK)
                rc = kc_offset_fetch_request_encode(&m, version, out, &err);
        }
        free(tps);
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

/* The refusal, naming each refused partition and its code (as many as the message holds, then
 * how many more), so a caller learns which partitions failed and why, not only the first code;
 * a commit's caller gets every one from kc_commit_results. */
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
    size_t len = strlen(err->msg), listed = 0;
    const size_t tail = 48; /* room kept for " and N more (each: kc_commit_results)" */
    for (size_t i = 0; i < op->n; i++) {
        if (op->ents[i].error == 0)
            continue;
        char one[sizeof err->msg];
        int w =
            snprintf(one, sizeof one, " %s[%d] %s", op->ents[i].topic, (int)op->ents[i].partition,
                     op->ents[i].error > 0 ? kc_kafka_err_name(op->ents[i].error) : "unanswered");
        bool last = listed + 1 == n_failed; /* needs no tail after it */
        if (w < 0 || len + (size_t)w + (last ? 0 : tail) >= sizeof err->msg)
            break;
        memcpy(err->msg + len, one, (size_t)w + 1);
        len += (size_t)w;
        listed++;
    }
    if (listed < n_failed)
        snprintf(err->msg + len, sizeof err->msg - len, " and %zu more%s", n_failed - listed,
                 op->kind == OP_COMMIT ? " (each: kc_commit_results)" : "");
}

void kc_eng_oc_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    coord_op_t *op = opaque;
    if (op->who_failed && !op->e->closed) { /* no identity to send: the member left or rejoins */
        op->inflight = 0;
        kc_buf_unref(frame);
        kc_eng_coord_finish(op, op->who_err.code, &op->who_err);
        return;
    }
    if (!kc_eng_coord_answered(op, conn, rc, frame,
                               1)) /* a failed connection: the coordinator may have moved */
        return;
    kc_arena_t a = {0};
    kc_error_t err;
    kc_fail(&err, KC_ERR_MALFORMED, "no offsets in it"); /* a decoder failing says more */
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    int16_t top = 0;
    int16_t *codes = calloc(op->n ? op->n : 1, sizeof *codes);
    int decoded = 0;
    for (size_t i = 0; i < op->n; i++)
        op->ents[i].error = KC_KAFKA_UNKNOWN_SERVER_ERROR; /* until the response names it */
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
        kc_offsets_fetched_iter_t it;
        kc_offsets_fetched_t f;
        if (kc_offset_fetch_response_decode(&m, version, &r, &a, &err) == KC_OK &&
            kc_offsets_codec_fetched_init(&it, &m, version, &top)) {
            decoded = 1;
            while (kc_offsets_codec_fetched_next(&it, &f)) {
                kc_engine_offset_t *x = find_ent(op, &f.topic, f.partition);
                if (x) {
                    x->error = f.error_code;
                    x->offset = f.offset;
                    x->leader_epoch = f.leader_epoch;
                    /* The op owns ents' strings (freed with it); one that cannot be copied
                     * reads back as none. */
                    free((char *)x->metadata);
                    x->metadata =
                        f.metadata.len > 0 ? strndup(f.metadata.ptr, (size_t)f.metadata.len) : NULL;
                }
            }
        }
    }
    kc_arena_free(&a);
    kc_buf_unref(frame);
    if (!decoded && !codes) {
        kc_eng_coord_again(op, 0, "no memory");
        return;
    }
    if (!decoded) { /* the broker's bytes for the version it offered: the same next time */
        free(codes);
        kc_error_t why;
        kc_wire_bad_answer(&why, kc_conn_peer(conn),
                           op->kind == OP_COMMIT ? KC_OFFSET_COMMIT_REQUEST_API_KEY
                                                 : KC_OFFSET_FETCH_REQUEST_API_KEY,
                           version, err.msg);
        kc_eng_coord_finish(op, why.code, &why);
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
        kc_eng_coord_finish(op, KC_OK, NULL);
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
        kc_eng_coord_again(op, res.verdict == KC_OFFSETS_REDISCOVER,
                           kc_kafka_err_name(res.first_error));
        return;
    default:
        break;
    }
    fail_message(op, &err, res.first_error);
    kc_eng_coord_finish(op, KC_ERR_BROKER, &err);
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
    return kc_eng_coord_start(e, OP_COMMIT, who->group_id, who->member_id, who->generation_or_epoch,
                              who->group_instance_id, NULL, NULL, offs, n, timeout_ms, cb, opaque,
                              err);
}

kc_err_t kc_engine_committed(kc_engine_t *e, const char *group, const kc_engine_offset_t *offs,
                             size_t n, int timeout_ms, kc_engine_offsets_cb cb, void *opaque,
                             kc_error_t *err)
{
    return kc_eng_coord_start(e, OP_FETCH, group, "", -1, NULL, NULL, NULL, offs, n, timeout_ms, cb,
                              opaque, err);
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
    return kc_eng_coord_start(e, kind, group, w.member_id, w.generation_or_epoch,
                              w.group_instance_id, who, ctx, offs, n, timeout_ms, cb, opaque, err);
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
    return KC_KAFKA_REQUEST_TIMED_OUT; /* transport or deadline: retriable */
}
