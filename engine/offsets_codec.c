/*
 * kc_commit_req_t ↔ generated OffsetCommit, and OffsetFetch in both forms (offsets_codec.h).
 *
 * Owner: network thread. Pure: no I/O.
 */
#include "offsets_codec.h"

#include <string.h>

static int same_topic(const kc_commit_entry_t *a, const kc_commit_entry_t *b, int by_id)
{
    return by_id ? memcmp(a->topic_id, b->topic_id, 16) == 0 : strcmp(a->topic, b->topic) == 0;
}

static const uint8_t ZERO_ID[16];

kc_err_t kc_offsets_codec_commit(kc_offset_commit_request_t *m, const kc_commit_req_t *req,
                                 int16_t version, kc_arena_t *a, kc_error_t *err)
{
    kc_offset_commit_request_init(m);
    const int by_id = version >= 10;
    const kc_commit_identity_t *w = &req->who;
    m->group_id = kc_str(w->group_id);
    m->member_id = kc_str(w->member_id); /* "" when anonymous: empty, never null or invented */
    m->generation_id_or_member_epoch = w->generation_or_epoch;
    m->group_instance_id = w->group_instance_id ? kc_str(w->group_instance_id) : KC_STR_NULL;

    /* Groups: first occurrence order; a commit holds few topics, so the scan is quadratic in
     * topics only. topic_of[i] maps entry i to its group. */
    size_t n = req->n_entries;
    int32_t *topic_of = kc_arena_calloc(a, n ? n : 1, sizeof *topic_of);
    m->topics.items = kc_arena_calloc(a, n ? n : 1, sizeof *m->topics.items);
    if (!topic_of || !m->topics.items)
        return kc_fail(err, KC_ERR_NOMEM, "OffsetCommit: %zu partitions", n);
    int32_t nt = 0;
    int32_t *first = kc_arena_calloc(a, n ? n : 1, sizeof *first); /* group → first entry */
    int32_t *count = kc_arena_calloc(a, n ? n : 1, sizeof *count);
    if (!first || !count)
        return kc_fail(err, KC_ERR_NOMEM, "OffsetCommit: %zu partitions", n);
    for (size_t i = 0; i < n; i++) {
        const kc_commit_entry_t *e = &req->entries[i];
        if (by_id && memcmp(e->topic_id, ZERO_ID, 16) == 0)
            return kc_fail(err, KC_ERR_INVALID_ARG,
                           "OffsetCommit v%d names topics by id; '%s' has none", version, e->topic);
        int32_t t = 0;
        while (t < nt && !same_topic(&req->entries[first[t]], e, by_id))
            t++;
        if (t == nt)
            first[nt++] = (int32_t)i;
        topic_of[i] = t;
        count[t]++;
    }
    m->topics.count = nt;
    for (int32_t t = 0; t < nt; t++) {
        kc_offset_commit_request_topic_t *ot = &m->topics.items[t];
        const kc_commit_entry_t *e = &req->entries[first[t]];
        ot->name = by_id ? KC_STR_NULL : kc_str(e->topic);
        memcpy(ot->topic_id.b, e->topic_id, 16);
        ot->partitions.items = kc_arena_calloc(a, (size_t)count[t], sizeof *ot->partitions.items);
        if (!ot->partitions.items)
            return kc_fail(err, KC_ERR_NOMEM, "OffsetCommit: %d partitions", (int)count[t]);
    }
    for (size_t i = 0; i < n; i++) {
        const kc_commit_entry_t *e = &req->entries[i];
        kc_offset_commit_request_topic_t *ot = &m->topics.items[topic_of[i]];
        kc_offset_commit_request_partition_t *p = &ot->partitions.items[ot->partitions.count++];
        p->partition_index = e->partition;
        p->committed_offset = e->offset;
        p->committed_leader_epoch = e->leader_epoch;
        p->committed_metadata = e->metadata ? kc_str(e->metadata) : kc_str("");
    }
    return KC_OK;
}

kc_err_t kc_offsets_codec_commit_result(const kc_offset_commit_response_t *m, kc_arena_t *a,
                                        kc_offsets_result_t *out, kc_error_t *err)
{
    size_t n = 0;
    for (int32_t t = 0; t < m->topics.count; t++)
        n += m->topics.items[t].partitions.count > 0 ? (size_t)m->topics.items[t].partitions.count
                                                     : 0;
    int16_t *codes = kc_arena_calloc(a, n ? n : 1, sizeof *codes);
    if (!codes)
        return kc_fail(err, KC_ERR_NOMEM, "OffsetCommit response: %zu partitions", n);
    size_t k = 0;
    for (int32_t t = 0; t < m->topics.count; t++)
        for (int32_t i = 0; i < m->topics.items[t].partitions.count; i++)
            codes[k++] = m->topics.items[t].partitions.items[i].error_code;
    kc_offsets_classify_response(0, codes, n, NULL, out);
    return KC_OK;
}

kc_err_t kc_offsets_codec_fetch(kc_offset_fetch_request_t *m, const char *group,
                                const char *member_id, int32_t member_epoch,
                                const kc_offsets_tp_t *tps, size_t n, kc_arena_t *a,
                                kc_error_t *err)
{
    kc_offset_fetch_request_init(m);
    size_t nt = 0;
    for (size_t i = 0; i < n; i++)
        nt += i == 0 || strcmp(tps[i].topic, tps[i - 1].topic) != 0;
    /* Both forms share the partition indexes. */
    int32_t *ps = kc_arena_calloc(a, n ? n : 1, sizeof *ps);
    kc_offset_fetch_request_topic_t *old = kc_arena_calloc(a, nt ? nt : 1, sizeof *old);
    kc_offset_fetch_request_topics_t *grouped = kc_arena_calloc(a, nt ? nt : 1, sizeof *grouped);
    kc_offset_fetch_request_group_t *g = kc_arena_calloc(a, 1, sizeof *g);
    if (!ps || !old || !grouped || !g)
        return kc_fail(err, KC_ERR_NOMEM, "OffsetFetch: %zu partitions", n);
    int32_t t = -1;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(tps[i].topic, tps[i - 1].topic) != 0) {
            t++;
            old[t].name = grouped[t].name = kc_str(tps[i].topic);
            old[t].partition_indexes.items = grouped[t].partition_indexes.items = &ps[i];
        }
        ps[i] = tps[i].partition;
        old[t].partition_indexes.count++;
        grouped[t].partition_indexes.count++;
    }
    m->group_id = kc_str(group); /* v1-7 */
    m->topics.count = (int32_t)nt;
    m->topics.items = old;
    g->group_id = kc_str(group); /* v8+ */
    g->member_id = member_id ? kc_str(member_id) : KC_STR_NULL;
    g->member_epoch = member_id ? member_epoch : -1;
    g->topics.count = (int32_t)nt;
    g->topics.items = grouped;
    m->groups.count = 1;
    m->groups.items = g;
    m->require_stable = true;
    return KC_OK;
}

int kc_offsets_codec_fetched_init(kc_offsets_fetched_iter_t *it,
                                  const kc_offset_fetch_response_t *m, int16_t version,
                                  int16_t *top)
{
    memset(it, 0, sizeof *it);
    it->m = m;
    it->version = version;
    if (version >= 8) {
        if (m->groups.count != 1)
            return 0;
        *top = m->groups.items[0].error_code;
    } else {
        *top = m->error_code; /* 0 before v2: the schema default */
    }
    return 1;
}

int kc_offsets_codec_fetched_next(kc_offsets_fetched_iter_t *it, kc_offsets_fetched_t *out)
{
    const kc_offset_fetch_response_t *m = it->m;
    if (it->version >= 8) {
        const kc_offset_fetch_response_group_t *g = &m->groups.items[0];
        while (it->topic < g->topics.count) {
            const kc_offset_fetch_response_topics_t *t = &g->topics.items[it->topic];
            if (it->part >= t->partitions.count) {
                it->topic++;
                it->part = 0;
                continue;
            }
            const kc_offset_fetch_response_partitions_t *p = &t->partitions.items[it->part++];
            *out = (kc_offsets_fetched_t){
                t->name,       p->partition_index, p->committed_offset, p->committed_leader_epoch,
                p->error_code, p->metadata};
            return 1;
        }
        return 0;
    }
    while (it->topic < m->topics.count) {
        const kc_offset_fetch_response_topic_t *t = &m->topics.items[it->topic];
        if (it->part >= t->partitions.count) {
            it->topic++;
            it->part = 0;
            continue;
        }
        const kc_offset_fetch_response_partition_t *p = &t->partitions.items[it->part++];
        *out = (kc_offsets_fetched_t){
            t->name,       p->partition_index, p->committed_offset, p->committed_leader_epoch,
            p->error_code, p->metadata};
        return 1;
    }
    return 0;
}
