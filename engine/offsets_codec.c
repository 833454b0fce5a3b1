/*
 * kc_commit_req_t ↔ generated OffsetCommit (offsets_codec.h).
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
