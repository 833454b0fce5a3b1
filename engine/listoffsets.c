/*
 * Offsets asked of partition leaders: ListOffsets (auto.offset.reset, seek to beginning / end /
 * timestamp) for partitions in AWAIT_RESET, and OffsetForLeaderEpoch (KIP-320) for partitions in
 * AWAIT_VALIDATION after a leader change. One request per leader carries every partition that
 * needs it; a partition has at most one of each in flight. An answer is applied only if the
 * partition is still the one asked about (same generation: no seek, remove or re-add since),
 * because a seek that overtook the request owns the position now.
 *
 * Owner: network thread.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "base/clock.h"
#include "base/log.h"
#include "engine_int.h"
#include "proto/kafka_errors.h"

typedef struct lo_ent {
    char *topic; /* borrowed from the pinfo at build time, copied: the partition may go */
    int32_t partition;
    uint32_t gen;
    int64_t ts;        /* ListOffsets timestamp */
    int32_t cur_epoch; /* current leader epoch */
    int32_t pos_epoch; /* validation: our position's epoch */
} lo_ent_t;

typedef struct lo_req {
    kc_engine_t *e;
    int validate; /* OffsetForLeaderEpoch rather than ListOffsets */
    int32_t broker;
    size_t n;
    lo_ent_t ent[];
} lo_req_t;

static void req_free(lo_req_t *q)
{
    for (size_t i = 0; i < q->n; i++)
        free(q->ent[i].topic);
    free(q);
}

/* Entries are grouped by topic name in the request (same-topic entries are adjacent: sorted). */
static int ent_cmp(const void *a, const void *b)
{
    const lo_ent_t *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

static size_t n_topics(const lo_req_t *q)
{
    size_t n = 0;
    for (size_t i = 0; i < q->n; i++)
        if (i == 0 || strcmp(q->ent[i].topic, q->ent[i - 1].topic) != 0)
            n++;
    return n;
}

static kc_err_t lo_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    lo_req_t *q = opaque;
    size_t nt = n_topics(q);
    kc_error_t err;
    kc_err_t rc = KC_ERR_NOMEM;
    if (!q->validate) {
        kc_list_offsets_request_t m;
        kc_list_offsets_request_init(&m);
        m.replica_id = -1;
        m.isolation_level = q->e->conf.isolation_level;
        m.timeout_ms = q->e->conf.request_timeout_ms;
        kc_list_offsets_request_list_offsets_topic_t *ts = calloc(nt, sizeof *ts);
        kc_list_offsets_request_list_offsets_partition_t *ps = calloc(q->n, sizeof *ps);
        if (ts && ps) {
            int32_t t = -1;
            for (size_t i = 0; i < q->n; i++) {
                if (i == 0 || strcmp(q->ent[i].topic, q->ent[i - 1].topic) != 0) {
                    t++;
                    ts[t].name = kc_str(q->ent[i].topic);
                    ts[t].partitions.items = &ps[i];
                }
                ps[i].partition_index = q->ent[i].partition;
                ps[i].current_leader_epoch = q->ent[i].cur_epoch;
                ps[i].timestamp = q->ent[i].ts;
                ts[t].partitions.count++;
            }
            m.topics.count = (int32_t)nt;
            m.topics.items = ts;
            rc = kc_list_offsets_request_encode(&m, version, out, &err);
        }
        free(ts);
        free(ps);
    } else {
        kc_offset_for_leader_epoch_request_t m;
        kc_offset_for_leader_epoch_request_init(&m);
        m.replica_id = -1;
        kc_offset_for_leader_epoch_request_offset_for_leader_topic_t *ts = calloc(nt, sizeof *ts);
        kc_offset_for_leader_epoch_request_offset_for_leader_partition_t *ps =
            calloc(q->n, sizeof *ps);
        if (ts && ps) {
            int32_t t = -1;
            for (size_t i = 0; i < q->n; i++) {
                if (i == 0 || strcmp(q->ent[i].topic, q->ent[i - 1].topic) != 0) {
                    t++;
                    ts[t].topic = kc_str(q->ent[i].topic);
                    ts[t].partitions.items = &ps[i];
                }
                ps[i].partition = q->ent[i].partition;
                ps[i].current_leader_epoch = q->ent[i].cur_epoch;
                ps[i].leader_epoch = q->ent[i].pos_epoch;
                ts[t].partitions.count++;
            }
            m.topics.count = (int32_t)nt;
            m.topics.items = ts;
            rc = kc_offset_for_leader_epoch_request_encode(&m, version, out, &err);
        }
        free(ts);
        free(ps);
    }
    return rc;
}

/* The partition an answer is about, if it is still the one asked about; else -1. */
static ssize_t still_ours(kc_engine_t *e, const lo_ent_t *x)
{
    ssize_t i = kc_eng_find_part(e, x->topic, x->partition);
    if (i < 0 || e->info[i].gen != x->gen)
        return -1;
    return i;
}

static void back_off(kc_engine_t *e, size_t i, int64_t now)
{
    kc_eng_pinfo_t *in = &e->info[i];
    kc_partition_t *p = &e->parts[i];
    p->backoff_attempts++;
    in->lo_retry_at = now + kc_backoff_ms(e->conf.retry_backoff_ms, e->conf.retry_backoff_max_ms,
                                          p->backoff_attempts, kc_backoff_rand(&e->rng));
}

static void retry_later(kc_engine_t *e, size_t i, int64_t now, int16_t code)
{
    kc_log(KC_LOG_DEBUG, "offsets", "%s[%d]: %s, asked again later", e->info[i].topic,
           e->info[i].partition, code ? kc_kafka_err_name(code) : "no offset");
    back_off(e, i, now);
    if (code == 0 || kc_fetch_classify_error(code) == KC_FA_MOVE)
        e->md_wanted = 1;
}

static const lo_ent_t *match(const lo_req_t *q, const char *topic, size_t tlen, int32_t part)
{
    for (size_t i = 0; i < q->n; i++)
        if (q->ent[i].partition == part && strlen(q->ent[i].topic) == tlen &&
            memcmp(q->ent[i].topic, topic, tlen) == 0)
            return &q->ent[i];
    return NULL;
}

static void lo_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    lo_req_t *q = opaque;
    kc_engine_t *e = q->e;
    int64_t now = kc_now_ms();
    if (e->closed) {
        kc_buf_unref(frame);
        req_free(q);
        return;
    }
    kc_eng_conn_failed(e,
                       q->validate ? KC_OFFSET_FOR_LEADER_EPOCH_REQUEST_API_KEY
                                   : KC_LIST_OFFSETS_REQUEST_API_KEY,
                       conn, rc);
    /* Every entry still ours leaves "in flight"; those the answer does not settle retry. */
    uint8_t *settled = calloc(q->n ? q->n : 1, 1);
    for (size_t k = 0; k < q->n; k++) {
        ssize_t i = still_ours(e, &q->ent[k]);
        if (i >= 0) {
            if (q->validate)
                e->info[i].val_inflight = 0;
            else
                e->info[i].lo_inflight = 0;
        }
    }
    kc_arena_t a = {0};
    kc_error_t err;
    if (rc == KC_OK && settled) {
        kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
        if (!q->validate) {
            kc_list_offsets_response_t m;
            if (kc_list_offsets_response_decode(&m, version, &r, &a, &err) == KC_OK) {
                for (int32_t t = 0; t < m.topics.count; t++) {
                    const kc_list_offsets_response_list_offsets_topic_response_t *rt =
                        &m.topics.items[t];
                    for (int32_t j = 0; j < rt->partitions.count; j++) {
                        const kc_list_offsets_response_list_offsets_partition_response_t *rp =
                            &rt->partitions.items[j];
                        const lo_ent_t *x = match(q, (const char *)rt->name.ptr,
                                                  (size_t)(rt->name.len > 0 ? rt->name.len : 0),
                                                  rp->partition_index);
                        if (!x)
                            continue;
                        settled[x - q->ent] = 1;
                        ssize_t i = still_ours(e, x);
                        if (i < 0 || e->parts[i].state != KC_FS_AWAIT_RESET)
                            continue;
                        if (rp->error_code) {
                            retry_later(e, (size_t)i, now, rp->error_code);
                            continue;
                        }
                        int64_t off = rp->offset;
                        if (off < 0 && x->ts >= 0) {
                            /* No record at or after the timestamp (Java's offsetsForTimes says
                             * null): the position becomes the end, as in librdkafka, so the
                             * next record produced is the first delivered. Asked at once. */
                            e->info[i].reset_ts = -1;
                            e->info[i].lo_retry_at = 0;
                            continue;
                        }
                        if (off < 0) {
                            retry_later(e, (size_t)i, now, 0);
                            continue;
                        }
                        kc_partition_on_reset(&e->parts[i], off, rp->leader_epoch);
                        e->parts[i].backoff_attempts = 0;
                        kc_log(KC_LOG_DEBUG, "offsets", "%s[%d]: reset to %" PRId64, x->topic,
                               x->partition, off);
                    }
                }
            } else {
                kc_log(KC_LOG_WARN, "offsets", "ListOffsets: %s", err.msg);
            }
        } else {
            kc_offset_for_leader_epoch_response_t m;
            if (kc_offset_for_leader_epoch_response_decode(&m, version, &r, &a, &err) == KC_OK) {
                for (int32_t t = 0; t < m.topics.count; t++) {
                    const kc_offset_for_leader_epoch_response_offset_for_leader_topic_result_t *rt =
                        &m.topics.items[t];
                    for (int32_t j = 0; j < rt->partitions.count; j++) {
                        const kc_offset_for_leader_epoch_response_epoch_end_offset_t *rp =
                            &rt->partitions.items[j];
                        const lo_ent_t *x =
                            match(q, (const char *)rt->topic.ptr,
                                  (size_t)(rt->topic.len > 0 ? rt->topic.len : 0), rp->partition);
                        if (!x)
                            continue;
                        settled[x - q->ent] = 1;
                        ssize_t i = still_ours(e, x);
                        if (i < 0)
                            continue;
                        kc_partition_event_t ev;
                        kc_partition_on_validation(&e->parts[i], rp->error_code, rp->leader_epoch,
                                                   rp->end_offset, &e->plan.conf.part, now, &ev);
                        e->stats.validations++;
                        if (e->parts[i].state == KC_FS_AWAIT_VALIDATION)
                            retry_later(e, (size_t)i, now, rp->error_code);
                        kc_eng_apply_event(e, (size_t)i, &ev);
                    }
                }
            } else {
                kc_log(KC_LOG_WARN, "offsets", "OffsetForLeaderEpoch: %s", err.msg);
            }
        }
    }
    for (size_t k = 0; k < q->n; k++) {
        ssize_t i = settled && settled[k] ? -1 : still_ours(e, &q->ent[k]);
        if (i >= 0)
            retry_later(e, (size_t)i, now, 0);
    }
    free(settled);
    kc_arena_free(&a);
    kc_buf_unref(frame);
    req_free(q);
    kc_eng_drive(e);
}

/* Sends one request of the kind `validate` to `broker` for every partition that needs it. */
static void send_for(kc_engine_t *e, int32_t broker, int validate, int64_t now)
{
    size_t n = 0;
    for (size_t i = 0; i < e->n_parts; i++) {
        const kc_partition_t *p = &e->parts[i];
        const kc_eng_pinfo_t *in = &e->info[i];
        kc_fetch_state_t want = validate ? KC_FS_AWAIT_VALIDATION : KC_FS_AWAIT_RESET;
        if (p->state == want && p->leader_id == broker && in->have_id &&
            !(validate ? in->val_inflight : in->lo_inflight) && now >= in->lo_retry_at)
            n++;
    }
    if (!n)
        return;
    kc_conn_t *c = kc_eng_broker_conn(e, broker);
    lo_req_t *q = c ? calloc(1, sizeof *q + n * sizeof(lo_ent_t)) : NULL;
    if (!q)
        return;
    q->e = e;
    q->validate = validate;
    q->broker = broker;
    for (size_t i = 0; i < e->n_parts && q->n < n; i++) {
        kc_partition_t *p = &e->parts[i];
        kc_eng_pinfo_t *in = &e->info[i];
        kc_fetch_state_t want = validate ? KC_FS_AWAIT_VALIDATION : KC_FS_AWAIT_RESET;
        if (!(p->state == want && p->leader_id == broker && in->have_id &&
              !(validate ? in->val_inflight : in->lo_inflight) && now >= in->lo_retry_at))
            continue;
        lo_ent_t *x = &q->ent[q->n];
        x->topic = strdup(in->topic);
        if (!x->topic)
            break;
        x->partition = in->partition;
        x->gen = in->gen;
        x->ts = in->reset_ts;
        x->cur_epoch = p->leader_epoch;
        x->pos_epoch = p->position_epoch;
        q->n++;
    }
    qsort(q->ent, q->n, sizeof q->ent[0], ent_cmp);
    kc_conn_req_spec_t spec;
    if (validate)
        spec = (kc_conn_req_spec_t){KC_OFFSET_FOR_LEADER_EPOCH_REQUEST_API_KEY,
                                    KC_ENG_OFFSET_FOR_LEADER_EPOCH_MIN,
                                    KC_ENG_OFFSET_FOR_LEADER_EPOCH_MAX,
                                    lo_encode,
                                    lo_done,
                                    q};
    else
        spec = (kc_conn_req_spec_t){KC_LIST_OFFSETS_REQUEST_API_KEY,
                                    KC_ENG_LIST_OFFSETS_MIN,
                                    KC_ENG_LIST_OFFSETS_MAX,
                                    lo_encode,
                                    lo_done,
                                    q};
    kc_error_t err;
    kc_log(KC_LOG_DEBUG, "offsets", "%s: %zu partition(s) to broker %d",
           validate ? "OffsetForLeaderEpoch" : "ListOffsets", q->n, broker);
    kc_err_t rc = kc_conn_send(c, &spec, &err);
    if (rc != KC_OK) {
        /* Not sent (a version refusal, a closing connection): these partitions ask again after
         * the usual backoff, not at the next drive; fresh metadata would not change the
         * broker's versions, so none is asked for. */
        if (rc == KC_ERR_UNSUPPORTED)
            kc_eng_api_unusable(e, spec.api_key, &err);
        for (size_t k = 0; k < q->n; k++) {
            ssize_t i = still_ours(e, &q->ent[k]);
            if (i >= 0)
                back_off(e, (size_t)i, now);
        }
        req_free(q);
        return;
    }
    for (size_t k = 0; k < q->n; k++) {
        ssize_t i = still_ours(e, &q->ent[k]);
        if (i < 0)
            continue; /* not after a successful send, which runs no handler; kept safe anyway */
        if (validate)
            e->info[i].val_inflight = 1;
        else
            e->info[i].lo_inflight = 1;
    }
    if (!validate) /* validations are counted per partition answered (lo_done) */
        e->stats.list_offsets_requests++;
}

bool kc_eng_offsets_due(kc_engine_t *e, size_t i, int64_t now_ms, int64_t *wake_ms)
{
    const kc_partition_t *p = &e->parts[i];
    const kc_eng_pinfo_t *in = &e->info[i];
    if (p->state != KC_FS_AWAIT_RESET && p->state != KC_FS_AWAIT_VALIDATION)
        return false;
    if (p->leader_id == KC_NO_BROKER || !in->have_id) {
        e->md_wanted = 1;
        return false;
    }
    if (in->lo_retry_at > now_ms) {
        if (in->lo_retry_at < *wake_ms)
            *wake_ms = in->lo_retry_at;
        return false;
    }
    return !(p->state == KC_FS_AWAIT_VALIDATION ? in->val_inflight : in->lo_inflight);
}

void kc_eng_offsets_send_due(kc_engine_t *e, int64_t now_ms)
{
    if (e->closing)
        return;
    /* One send_for per (leader, kind): it takes every partition of that leader that waits, and
     * one it could not send (no connection) is not tried again for each of them. */
    struct {
        int32_t broker;
        int validate;
    } tried[32];
    size_t n_tried = 0;
    int64_t wake = INT64_MAX;
    for (size_t i = 0; i < e->n_parts; i++) {
        if (!kc_eng_offsets_due(e, i, now_ms, &wake))
            continue;
        int32_t broker = e->parts[i].leader_id;
        int validate = e->parts[i].state == KC_FS_AWAIT_VALIDATION;
        size_t k = 0;
        while (k < n_tried && !(tried[k].broker == broker && tried[k].validate == validate))
            k++;
        if (k < n_tried)
            continue;
        if (n_tried < sizeof tried / sizeof tried[0]) {
            tried[n_tried].broker = broker;
            tried[n_tried].validate = validate;
            n_tried++;
        }
        send_for(e, broker, validate, now_ms);
    }
}
