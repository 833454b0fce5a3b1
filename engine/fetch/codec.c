/*
 * Session request → generated FetchRequest, generated FetchResponse → engine records
 * (fetch/codec.h).
 *
 * Owner: network thread. Pure: no I/O.
 */
#include "fetch/codec.h"

#include <string.h>

static int same_topic(const uint8_t *a, const uint8_t *b)
{
    return memcmp(a, b, 16) == 0;
}

int16_t kc_fetch_codec_max_version(const kc_session_req_t *req)
{
    for (size_t i = 0; i < req->n_parts; i++)
        if (kc_tp_id_is_synthetic(req->parts[i].tp.topic_id))
            return KC_FETCH_CODEC_ID_VERSION - 1;
    for (size_t i = 0; i < req->n_forgotten; i++)
        if (kc_tp_id_is_synthetic(req->forgotten[i].topic_id))
            return KC_FETCH_CODEC_ID_VERSION - 1;
    return KC_FETCH_REQUEST_MAX_VERSION;
}

/* The name for a topic of a request at `version`: KC_STR_NULL from v13 (the id names it). */
static kc_err_t topic_name(const uint8_t id[16], int16_t version, const kc_fetch_names_t *names,
                           kc_str_t *out, kc_error_t *err)
{
    *out = KC_STR_NULL;
    if (version >= KC_FETCH_CODEC_ID_VERSION)
        return KC_OK;
    const char *n = names ? names->name_of(names->opaque, id) : NULL;
    if (!n)
        return kc_fail(err, KC_ERR_STATE, "FetchRequest v%d: a topic id without a name",
                       (int)version);
    *out = kc_str(n);
    return KC_OK;
}

/* Topics in a run of tp-sorted entries: the session emits its parts and forgotten lists sorted
 * by (topic id, partition), so each topic's partitions are contiguous. */
static int32_t count_topics_parts(const kc_session_part_t *p, size_t n)
{
    int32_t t = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || !same_topic(p[i].tp.topic_id, p[i - 1].tp.topic_id))
            t++;
    return t;
}

static kc_err_t fill_topics(kc_fetch_request_t *m, const kc_session_req_t *req, int16_t version,
                            const kc_fetch_names_t *names, kc_arena_t *a, kc_error_t *err)
{
    int32_t nt = count_topics_parts(req->parts, req->n_parts);
    m->topics.count = nt;
    m->topics.items = nt ? kc_arena_calloc(a, (size_t)nt, sizeof *m->topics.items) : NULL;
    if (nt && !m->topics.items)
        return kc_fail(err, KC_ERR_NOMEM, "FetchRequest: %d topics", (int)nt);
    int32_t t = -1;
    for (size_t i = 0; i < req->n_parts; i++) {
        const kc_session_part_t *sp = &req->parts[i];
        if (i == 0 || !same_topic(sp->tp.topic_id, req->parts[i - 1].tp.topic_id)) {
            kc_fetch_request_fetch_topic_t *ft = &m->topics.items[++t];
            kc_err_t rc = topic_name(sp->tp.topic_id, version, names, &ft->topic, err);
            if (rc)
                return rc;
            memcpy(ft->topic_id.b, sp->tp.topic_id, 16);
            size_t j = i;
            while (j < req->n_parts && same_topic(req->parts[j].tp.topic_id, sp->tp.topic_id))
                j++;
            ft->partitions.items = kc_arena_calloc(a, j - i, sizeof *ft->partitions.items);
            if (!ft->partitions.items)
                return kc_fail(err, KC_ERR_NOMEM, "FetchRequest: %zu partitions", j - i);
            ft->partitions.count = 0; /* filled below */
        }
        kc_fetch_request_fetch_topic_t *ft = &m->topics.items[t];
        kc_fetch_request_fetch_partition_t *fp = &ft->partitions.items[ft->partitions.count++];
        fp->partition = sp->tp.partition;
        fp->current_leader_epoch = sp->leader_epoch;
        fp->fetch_offset = sp->fetch_offset;
        fp->last_fetched_epoch = -1; /* a follower's field (diverging-epoch detection) */
        fp->log_start_offset = sp->log_start_offset;
        fp->partition_max_bytes = sp->max_bytes;
    }
    return KC_OK;
}

/* Before v13: whether the request's topics already carry (name, partition). */
static int sent_by_name(const kc_fetch_request_t *m, kc_str_t name, int32_t partition)
{
    for (int32_t t = 0; t < m->topics.count; t++) {
        const kc_fetch_request_fetch_topic_t *ft = &m->topics.items[t];
        if (ft->topic.len != name.len || memcmp(ft->topic.ptr, name.ptr, (size_t)name.len) != 0)
            continue;
        for (int32_t p = 0; p < ft->partitions.count; p++)
            if (ft->partitions.items[p].partition == partition)
                return 1;
    }
    return 0;
}

static kc_err_t fill_forgotten(kc_fetch_request_t *m, const kc_session_req_t *req, int16_t version,
                               const kc_fetch_names_t *names, kc_arena_t *a, kc_error_t *err)
{
    /* At most one topic per distinct id; entries kept are appended to their topic's run. */
    size_t n = req->n_forgotten;
    m->forgotten_topics_data.count = 0;
    m->forgotten_topics_data.items =
        n ? kc_arena_calloc(a, n, sizeof *m->forgotten_topics_data.items) : NULL;
    if (n && !m->forgotten_topics_data.items)
        return kc_fail(err, KC_ERR_NOMEM, "FetchRequest: %zu forgotten", n);
    kc_fetch_request_forgotten_topic_t *ft = NULL;
    for (size_t i = 0; i < n; i++) {
        const kc_tp_t *tp = &req->forgotten[i];
        if (i == 0 || !same_topic(tp->topic_id, req->forgotten[i - 1].topic_id)) {
            kc_str_t name;
            kc_err_t rc = topic_name(tp->topic_id, version, names, &name, err);
            if (rc)
                return rc;
            size_t j = i;
            while (j < n && same_topic(req->forgotten[j].topic_id, tp->topic_id))
                j++;
            ft = &m->forgotten_topics_data.items[m->forgotten_topics_data.count];
            ft->topic = name;
            memcpy(ft->topic_id.b, tp->topic_id, 16);
            ft->partitions.count = 0;
            ft->partitions.items = kc_arena_calloc(a, j - i, sizeof *ft->partitions.items);
            if (!ft->partitions.items)
                return kc_fail(err, KC_ERR_NOMEM, "FetchRequest: %zu forgotten", j - i);
        }
        if (version < KC_FETCH_CODEC_ID_VERSION && sent_by_name(m, ft->topic, tp->partition))
            continue; /* the same partition to this broker, sent under its new key */
        if (ft->partitions.count == 0)
            m->forgotten_topics_data.count++;
        ft->partitions.items[ft->partitions.count++] = tp->partition;
    }
    return KC_OK;
}

kc_err_t kc_fetch_codec_request(kc_fetch_request_t *m, const kc_session_req_t *req, int16_t version,
                                const kc_fetch_settings_t *s, const kc_fetch_names_t *names,
                                kc_arena_t *a, kc_error_t *err)
{
    kc_fetch_request_init(m);
    m->replica_id = -1; /* a consumer, not a follower (v4-14; v15+ omits replica_state) */
    m->max_wait_ms = s->max_wait_ms;
    m->min_bytes = s->min_bytes;
    m->max_bytes = s->max_bytes;
    m->isolation_level = s->isolation_level;
    m->session_id = req->session_id;
    m->session_epoch = req->epoch;
    m->rack_id = kc_str(s->rack_id ? s->rack_id : "");
    if (req->close || req->drain_only) {
        m->max_wait_ms = 0;
        m->min_bytes = 0;
    }
    kc_err_t rc = fill_topics(m, req, version, names, a, err);
    if (!rc)
        rc = fill_forgotten(m, req, version, names, a, err);
    return rc;
}

void kc_fetch_codec_iter_init(kc_fetch_codec_iter_t *it, const kc_fetch_response_t *m,
                              int16_t version, const kc_fetch_names_t *names)
{
    memset(it, 0, sizeof *it);
    it->m = m;
    it->version = version;
    it->names = names;
    it->part = -1; /* the current topic's key is not resolved yet */
}

int kc_fetch_codec_next(kc_fetch_codec_iter_t *it, kc_fetch_part_result_t *out)
{
    const kc_fetch_response_t *m = it->m;
    while (it->topic < m->responses.count) {
        const kc_fetch_response_fetchable_topic_response_t *t = &m->responses.items[it->topic];
        if (it->part < 0) {
            it->part = 0;
            if (it->version >= KC_FETCH_CODEC_ID_VERSION)
                memcpy(it->id, t->topic_id.b, 16);
            else if (!it->names || t->topic.len < 0 ||
                     !it->names->id_of(it->names->opaque, (const char *)t->topic.ptr,
                                       (size_t)t->topic.len, it->id))
                it->part = t->partitions.count; /* a topic we do not key: skip it */
        }
        if (it->part >= t->partitions.count) {
            it->topic++;
            it->part = -1;
            continue;
        }
        const kc_fetch_response_partition_data_t *p = &t->partitions.items[it->part++];
        memset(out, 0, sizeof *out);
        memcpy(out->tp.topic_id, it->id, 16);
        out->tp.partition = p->partition_index;
        out->error_code = p->error_code;
        out->high_watermark = p->high_watermark;
        out->last_stable_offset = p->last_stable_offset;
        out->log_start_offset = p->log_start_offset;
        out->preferred_read_replica = p->preferred_read_replica;
        out->has_current_leader = p->has_current_leader && p->current_leader.leader_id >= 0;
        out->leader_id = p->current_leader.leader_id;
        out->leader_epoch = p->current_leader.leader_epoch;
        if (p->aborted_transactions.count > 0) {
            out->aborted = p->aborted_transactions.items;
            out->n_aborted = p->aborted_transactions.count;
        }
        out->records = p->records;
        if (out->records.len < 0) {
            out->records.len = 0;
            out->records.ptr = NULL;
        }
        return 1;
    }
    return 0;
}
