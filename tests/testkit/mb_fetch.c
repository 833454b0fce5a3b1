/*
 * kc-memory-broker: the record data (batch templates) and Fetch with KIP-227 fetch sessions.
 *
 * Owner: the connection threads. The templates are read-only after mb_data_init(); the session
 * cache is shared between connections (Kafka's cache is per broker, not per connection) and
 * every access holds mb_t.lock. Record bytes are copied into the response outside the lock.
 */
#include "batch_builder.h"
#include "mb.h"
#include "proto/kafka_errors.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The response never carries more than this, whatever fetch.max.bytes says: a bound on what one
 * request can make us allocate. */
#define MB_MAX_RESPONSE (64 * 1024 * 1024)

static bool build_template(const mb_t *mb, int32_t n, uint8_t **out, size_t *len)
{
    tb_record_t *recs = calloc((size_t)n, sizeof *recs);
    uint8_t *values = malloc((size_t)n * (size_t)mb->value_size + 1);
    if (!recs || !values) {
        free(recs), free(values);
        return false;
    }
    /* Text-like values from a small alphabet so the codecs see a realistic ratio (about 2-3x),
     * neither incompressible noise nor a run of one byte. */
    uint32_t x = 2463534242u;
    for (int32_t i = 0; i < n; i++) {
        uint8_t *v = values + (size_t)i * (size_t)mb->value_size;
        for (int32_t j = 0; j < mb->value_size; j++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            v[j] = (uint8_t)"abcdefghijklmnop     ,.etaoinshr"[x & 31];
        }
        recs[i] =
            (tb_record_t){.ts_delta = i, .off_delta = i, .value = v, .value_len = mb->value_size};
    }
    tb_batch_t cfg = {
        .codec = mb->codec, .base_ts = 1767225600000, .max_ts = 1767225600000 + n - 1};
    tb_buf_t b = {0};
    tb_batch(&b, &cfg, recs, n);
    free(recs), free(values);
    *out = b.p;
    *len = b.len;
    return true;
}

bool mb_data_init(mb_t *mb)
{
    int32_t k = mb->batch_records;
    if (mb->records < k)
        k = (int32_t)(mb->records > 0 ? mb->records : 1);
    if (!build_template(mb, k, &mb->full, &mb->full_len))
        return false;
    mb->tail_records = (int32_t)(mb->records % mb->batch_records);
    if (mb->tail_records && !build_template(mb, mb->tail_records, &mb->tail, &mb->tail_len))
        return false;
    return true;
}

void mb_data_free(mb_t *mb)
{
    free(mb->full), free(mb->tail);
    for (int i = 0; i < MB_MAX_SESSIONS; i++)
        free(mb->sessions[i].parts);
}

/* ---- sessions (caller holds mb->lock) ------------------------------------------------------- */

static mb_session_t *session_find(mb_t *mb, int32_t id)
{
    for (int i = 0; id != 0 && i < MB_MAX_SESSIONS; i++)
        if (mb->sessions[i].id == id)
            return &mb->sessions[i];
    return NULL;
}

static void session_drop(mb_session_t *s)
{
    free(s->parts);
    *s = (mb_session_t){0};
}

/* A new session slot: a free one, else the least recently used (Kafka evicts too; the client
 * then sees FETCH_SESSION_ID_NOT_FOUND and starts over, which is what we want to exercise). */
static mb_session_t *session_new(mb_t *mb, int64_t now)
{
    mb_session_t *victim = &mb->sessions[0];
    for (int i = 0; i < MB_MAX_SESSIONS; i++) {
        if (mb->sessions[i].id == 0) {
            victim = &mb->sessions[i];
            break;
        }
        if (mb->sessions[i].last_used_ms < victim->last_used_ms)
            victim = &mb->sessions[i];
    }
    session_drop(victim);
    victim->parts = calloc((size_t)mb->partitions, sizeof *victim->parts);
    if (!victim->parts)
        return NULL;
    if (++mb->next_session_id <= 0)
        mb->next_session_id = 1;
    victim->id = mb->next_session_id;
    victim->epoch = 1;
    victim->last_used_ms = now;
    return victim;
}

static mb_sess_part_t *session_part(mb_session_t *s, int32_t p, bool add)
{
    for (int i = 0; i < s->n; i++)
        if (s->parts[i].partition == p)
            return &s->parts[i];
    if (!add)
        return NULL;
    s->parts[s->n] = (mb_sess_part_t){.partition = p, .last_hw_sent = -1};
    return &s->parts[s->n++];
}

static void session_forget(mb_session_t *s, int32_t p)
{
    for (int i = 0; i < s->n; i++)
        if (s->parts[i].partition == p) {
            s->parts[i] = s->parts[--s->n];
            return;
        }
}

/* ---- request helpers --------------------------------------------------------------------------
 */

static bool topic_is_ours(const mb_t *mb, int16_t v, kc_str_t name, const kc_uuid_t *id)
{
    if (v >= 13)
        return memcmp(id->b, mb->topic_id.b, 16) == 0;
    return name.len == (int32_t)strlen(mb->topic) &&
           memcmp(name.ptr, mb->topic, (size_t)name.len) == 0;
}

/* One partition to answer: decided under the lock, filled in outside it. */
typedef struct plan {
    int32_t partition;
    int64_t offset;
    int32_t max_bytes;
    bool include; /* incremental responses leave out unchanged partitions */
} plan_t;

static void sleep_ms(mb_t *mb, int32_t ms)
{
    int64_t until = kt_now_ms() + ms;
    while (!mb->stop && kt_now_ms() < until) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static kc_err_t encode_error(int16_t code, int16_t version, kc_wbuf_t *w, kc_error_t *err)
{
    kc_fetch_response_t r;
    kc_fetch_response_init(&r);
    r.error_code = code;
    r.session_id = 0;
    r.responses.count = 0;
    return kc_fetch_response_encode(&r, version, w, err);
}

kc_err_t mb_fetch(mb_t *mb, const kc_fetch_request_t *req, int16_t version, kc_wbuf_t *w,
                  kc_arena_t *a, kc_error_t *err)
{
    static atomic_uint rotation;
    int64_t now = kt_now_ms();
    int32_t sid = version >= 7 ? req->session_id : 0;
    int32_t epoch = version >= 7 ? req->session_epoch : -1;
    int32_t resp_sid = 0;
    bool full = true;
    int n_plan = 0;
    /* Room for out-of-range partitions named by the request (bounded by the guard below) plus
     * every session partition. */
    plan_t *plan = kc_arena_calloc(a, 2 * (size_t)mb->partitions + 2, sizeof *plan);
    if (!plan)
        return kc_fail(err, KC_ERR_NOMEM, "fetch plan");

    pthread_mutex_lock(&mb->lock);
    mb_session_t *s = NULL;
    if (epoch > 0) {
        s = session_find(mb, sid);
        int16_t code = !s                  ? KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND
                       : s->epoch != epoch ? KC_KAFKA_INVALID_FETCH_SESSION_EPOCH
                                           : 0;
        if (code) {
            pthread_mutex_unlock(&mb->lock);
            return encode_error(code, version, w, err);
        }
        full = false;
    } else {
        /* epoch 0 or -1: a full request. A non-zero id names a session the client is done
         * with; epoch 0 opens a new one, -1 fetches without a session. */
        mb_session_t *old = session_find(mb, sid);
        if (old)
            session_drop(old);
        if (epoch == 0) {
            s = session_new(mb, now);
            if (!s) {
                pthread_mutex_unlock(&mb->lock);
                return kc_fail(err, KC_ERR_NOMEM, "fetch session");
            }
        }
    }
    if (s) {
        resp_sid = s->id;
        s->last_used_ms = now;
        if (!full) {
            s->epoch = s->epoch == INT32_MAX ? 1 : s->epoch + 1;
            for (int32_t i = 0; version >= 7 && i < req->forgotten_topics_data.count; i++) {
                const kc_fetch_request_forgotten_topic_t *ft = &req->forgotten_topics_data.items[i];
                if (topic_is_ours(mb, version, ft->topic, &ft->topic_id))
                    for (int32_t j = 0; j < ft->partitions.count; j++)
                        session_forget(s, ft->partitions.items[j]);
            }
        }
    }
    /* The request's partitions of our topic: the whole set (full) or updates (incremental). */
    for (int32_t i = 0; i < req->topics.count; i++) {
        const kc_fetch_request_fetch_topic_t *t = &req->topics.items[i];
        if (!topic_is_ours(mb, version, t->topic, &t->topic_id))
            continue;
        for (int32_t j = 0; j < t->partitions.count; j++) {
            const kc_fetch_request_fetch_partition_t *fp = &t->partitions.items[j];
            if (fp->partition < 0 || fp->partition >= mb->partitions) {
                if (n_plan <= mb->partitions)
                    plan[n_plan++] = (plan_t){fp->partition, fp->fetch_offset, 0, true};
                continue;
            }
            if (s) {
                mb_sess_part_t *sp = session_part(s, fp->partition, true);
                sp->fetch_offset = fp->fetch_offset;
                sp->max_bytes = fp->partition_max_bytes;
            } else if (n_plan <= mb->partitions) {
                plan[n_plan++] =
                    (plan_t){fp->partition, fp->fetch_offset, fp->partition_max_bytes, true};
            }
        }
    }
    if (s) {
        /* Start the walk at a rotating index so a small fetch.max.bytes does not starve the
         * partitions at the end of the list (Kafka rotates its session partitions too). */
        int start = s->n ? (int)(atomic_fetch_add(&rotation, 1) % (unsigned)s->n) : 0;
        for (int k = 0; k < s->n; k++) {
            mb_sess_part_t *sp = &s->parts[(start + k) % s->n];
            int64_t hw = mb_owns(mb, sp->partition) ? mb->records : -1;
            bool has_data = hw >= 0 && sp->fetch_offset < hw;
            bool include = full || has_data || hw < 0 || sp->fetch_offset > hw ||
                           sp->fetch_offset < 0 || sp->last_hw_sent != hw;
            sp->last_hw_sent = hw;
            plan[n_plan++] = (plan_t){sp->partition, sp->fetch_offset, sp->max_bytes, include};
        }
    }
    pthread_mutex_unlock(&mb->lock);

    /* Size the records first so the copy goes into one buffer of known size. */
    int64_t budget =
        req->max_bytes > 0 && req->max_bytes < MB_MAX_RESPONSE ? req->max_bytes : MB_MAX_RESPONSE;
    int64_t used = 0, nrec = 0;
    int32_t *nbatch = kc_arena_calloc(a, (size_t)n_plan + 1, sizeof *nbatch);
    if (!nbatch)
        return kc_fail(err, KC_ERR_NOMEM, "fetch plan");
    int32_t k = mb->batch_records;
    int64_t nb_total = (mb->records + k - 1) / k;
    bool any_error = false;
    for (int i = 0; i < n_plan; i++) {
        plan_t *p = &plan[i];
        if (!p->include || !mb_owns(mb, p->partition) || p->offset < 0 ||
            p->offset >= mb->records) {
            any_error |= p->include && !(mb_owns(mb, p->partition) && p->offset == mb->records);
            continue;
        }
        int64_t pused = 0;
        for (int64_t b = p->offset / k; b < nb_total; b++) {
            size_t len = b == nb_total - 1 && mb->tail ? mb->tail_len : mb->full_len;
            /* KIP-74: the first batch of the response goes out even when it is larger than
             * the limits, so a consumer can never get stuck behind a big batch. */
            bool first = used == 0;
            if (!first && (used + (int64_t)len > budget || pused + (int64_t)len > p->max_bytes))
                break;
            used += (int64_t)len, pused += (int64_t)len;
            nbatch[i]++;
            nrec += b == nb_total - 1 && mb->tail ? mb->tail_records : k;
        }
    }
    if (used == 0 && !any_error && req->max_wait_ms > 0 && req->min_bytes > 0)
        sleep_ms(mb, req->max_wait_ms > 30000 ? 30000 : req->max_wait_ms);

    uint8_t *data = used ? malloc((size_t)used) : NULL;
    if (used && !data)
        return kc_fail(err, KC_ERR_NOMEM, "fetch records (%lld bytes)", (long long)used);
    kc_fetch_response_t r;
    kc_fetch_response_init(&r);
    r.session_id = resp_sid;
    kc_fetch_response_fetchable_topic_response_t *t = kc_arena_calloc(a, 1, sizeof *t);
    kc_fetch_response_partition_data_t *pd = kc_arena_calloc(a, (size_t)n_plan + 1, sizeof *pd);
    if (!t || !pd) {
        free(data);
        return kc_fail(err, KC_ERR_NOMEM, "fetch response");
    }
    t->topic = kc_str(mb->topic);
    t->topic_id = mb->topic_id;
    size_t off = 0;
    for (int i = 0; i < n_plan; i++) {
        const plan_t *p = &plan[i];
        if (!p->include)
            continue;
        kc_fetch_response_partition_data_t *d = &pd[t->partitions.count++];
        d->partition_index = p->partition;
        d->high_watermark = d->last_stable_offset = -1;
        d->log_start_offset = -1;
        d->preferred_read_replica = -1;
        d->aborted_transactions.count = -1;
        d->records = (kc_bytes_t){NULL, 0};
        if (p->partition < 0 || p->partition >= mb->partitions) {
            d->error_code =
                version >= 13 ? KC_KAFKA_UNKNOWN_TOPIC_ID : KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        if (!mb_owns(mb, p->partition)) {
            d->error_code = KC_KAFKA_NOT_LEADER_OR_FOLLOWER;
            continue;
        }
        d->high_watermark = d->last_stable_offset = mb->records;
        d->log_start_offset = 0;
        if (p->offset < 0 || p->offset > mb->records) {
            d->error_code = KC_KAFKA_OFFSET_OUT_OF_RANGE;
            continue;
        }
        d->records.ptr = data + off;
        for (int64_t b = p->offset / k, j = 0; j < nbatch[i]; b++, j++) {
            bool last = b == nb_total - 1 && mb->tail;
            size_t len = last ? mb->tail_len : mb->full_len;
            memcpy(data + off, last ? mb->tail : mb->full, len);
            int64_t base = b * k;
            for (int s8 = 0; s8 < 8; s8++)
                data[off + (size_t)s8] = (uint8_t)(base >> (56 - 8 * s8));
            off += len;
        }
        d->records.len = (int32_t)(data + off - d->records.ptr);
    }
    r.responses.count = 1;
    r.responses.items = t;
    t->partitions.items = pd;
    /* Topics of the request we do not have: answer each partition with an error once. */
    int extra = 0;
    for (int32_t i = 0; i < req->topics.count; i++)
        extra +=
            !topic_is_ours(mb, version, req->topics.items[i].topic, &req->topics.items[i].topic_id);
    if (extra) {
        kc_fetch_response_fetchable_topic_response_t *all =
            kc_arena_calloc(a, (size_t)extra + 1, sizeof *all);
        if (!all) {
            free(data);
            return kc_fail(err, KC_ERR_NOMEM, "fetch response");
        }
        all[0] = *t;
        int n = 1;
        for (int32_t i = 0; i < req->topics.count; i++) {
            const kc_fetch_request_fetch_topic_t *rt = &req->topics.items[i];
            if (topic_is_ours(mb, version, rt->topic, &rt->topic_id))
                continue;
            kc_fetch_response_fetchable_topic_response_t *u = &all[n++];
            u->topic = rt->topic;
            u->topic_id = rt->topic_id;
            u->partitions.items = kc_arena_calloc(a, (size_t)rt->partitions.count + 1, sizeof *pd);
            u->partitions.count = u->partitions.items ? rt->partitions.count : 0;
            for (int32_t j = 0; j < u->partitions.count; j++) {
                kc_fetch_response_partition_data_t *d = &u->partitions.items[j];
                d->partition_index = rt->partitions.items[j].partition;
                d->error_code =
                    version >= 13 ? KC_KAFKA_UNKNOWN_TOPIC_ID : KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
                d->high_watermark = d->last_stable_offset = d->log_start_offset = -1;
                d->preferred_read_replica = -1;
                d->aborted_transactions.count = -1;
                d->records = (kc_bytes_t){NULL, 0};
            }
        }
        r.responses.items = all;
        r.responses.count = n;
    }
    kc_err_t rc = kc_fetch_response_encode(&r, version, w, err);
    free(data);
    if (rc == KC_OK) {
        pthread_mutex_lock(&mb->lock);
        mb->records_served += (uint64_t)nrec;
        mb->bytes_served += (uint64_t)used;
        pthread_mutex_unlock(&mb->lock);
    }
    return rc;
}
