/*
 * Record and batch view accessors. They read views owned by the calling worker (or the app thread
 * holding a polled batch); no shared state, no allocation.
 */
#include "record.h"

#include <string.h>

#include "base/err.h"
#include "dispatch.h"

int64_t kc_record_offset(const kc_record_t *r)
{
    return r->offset;
}

int64_t kc_record_timestamp(const kc_record_t *r)
{
    return r->timestamp;
}

const void *kc_record_key(const kc_record_t *r, size_t *len)
{
    *len = r->key && r->key_len > 0 ? (size_t)r->key_len : 0;
    return r->key;
}

const void *kc_record_value(const kc_record_t *r, size_t *len)
{
    *len = r->value && r->value_len > 0 ? (size_t)r->value_len : 0;
    return r->value;
}

size_t kc_record_header_count(const kc_record_t *r)
{
    return r->header_count > 0 ? (size_t)r->header_count : 0;
}

/* Kafka's zig-zag varint (record headers use it for lengths). false when truncated or too long. */
static bool read_varint(const uint8_t *p, size_t n, size_t *pos, int64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*pos >= n)
            return false;
        uint8_t b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return true;
        }
    }
    return false;
}

kc_err_t kc_record_header_next(const kc_record_t *r, size_t *cursor, const char **name,
                               size_t *name_len, const void **value, size_t *value_len)
{
    const uint8_t *p = r->headers;
    size_t n = r->headers_len, pos = *cursor;
    int64_t kl, vl;
    if (pos >= n)
        return KC_ERR_NOT_FOUND;
    if (!read_varint(p, n, &pos, &kl) || kl < 0 || (uint64_t)kl > n - pos)
        return KC_ERR_MALFORMED;
    *name = (const char *)p + pos;
    *name_len = (size_t)kl;
    pos += (size_t)kl;
    if (!read_varint(p, n, &pos, &vl) || vl < -1 || (vl > 0 && (uint64_t)vl > n - pos))
        return KC_ERR_MALFORMED;
    *value = vl < 0 ? NULL : p + pos;
    *value_len = vl < 0 ? 0 : (size_t)vl;
    pos += vl < 0 ? 0 : (size_t)vl;
    *cursor = pos;
    return KC_OK;
}

kc_err_t kc_record_header(const kc_record_t *r, size_t idx, const char **name, size_t *name_len,
                          const void **value, size_t *value_len)
{
    size_t cur = 0;
    if (idx >= kc_record_header_count(r))
        return KC_ERR_NOT_FOUND;
    for (size_t i = 0;; i++) {
        kc_err_t rc = kc_record_header_next(r, &cur, name, name_len, value, value_len);
        if (rc != KC_OK)
            return rc == KC_ERR_NOT_FOUND ? KC_ERR_MALFORMED : rc; /* count said more */
        if (i == idx)
            return KC_OK;
    }
}

const kc_part_t *kc_records_partition(const kc_records_t *b)
{
    return &kc_rt_part_head(b->part)->pub; /* a share lane's view: its partition's */
}

int kc_rt_records_pull(kc_records_t *b)
{
    if (b->end)
        return 0;
    int r = b->dec->next(b->dctx, &b->rec, &b->errinfo);
    if (r == 1 && (!b->share || b->rec.offset <= b->share_last))
        return 1;
    if (r == 1) /* past a share piece: the rest of the batch is not this delivery's */
        r = 0;
    b->end = true;
    if (r < 0)
        b->err = (kc_err_t)r;
    return r < 0 ? r : 0;
}

const kc_record_t *kc_records_next(kc_records_t *b)
{
    if (b->left == 0)
        return NULL;
    if (b->peeked) {
        b->peeked = false;
    } else if (kc_rt_records_pull(b) != 1) {
        return NULL;
    }
    b->left--;
    b->returned++;
    b->next_offset = b->rec.offset + 1;
    return &b->rec;
}

kc_err_t kc_records_error(const kc_records_t *b, kc_error_t *err)
{
    if (err && b->err != KC_OK)
        *err = b->errinfo;
    else
        kc_error_clear(err);
    return b->err;
}

int64_t kc_records_first_offset(const kc_records_t *b)
{
    return b->first_offset;
}

int64_t kc_records_next_offset(const kc_records_t *b)
{
    return b->next_offset;
}

int kc_records_timestamp_type(const kc_records_t *b)
{
    return b->facts.ts_type;
}

int32_t kc_records_leader_epoch(const kc_records_t *b)
{
    return b->facts.leader_epoch;
}

int32_t kc_records_broker(const kc_records_t *b)
{
    return b->broker;
}

kc_err_t kc_share_ack(kc_records_t *b, const kc_record_t *r, kc_share_verdict_t verdict,
                      kc_error_t *err)
{
    if (!b || !r)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_share_ack: NULL view or record");
    if (!b->share || !b->picks)
        return kc_fail(err, KC_ERR_STATE, "kc_share_ack: not a share group's view");
    if (verdict != KC_SHARE_ACCEPT && verdict != KC_SHARE_RELEASE && verdict != KC_SHARE_REJECT)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_share_ack: unknown verdict %d", (int)verdict);
    /* Only records the view returned, each once and in order: the verdicts are kept ascending,
     * which is how the worker merges them with the callback result's. */
    if (r->offset < b->first_offset || r->offset >= b->next_offset)
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "kc_share_ack: offset %lld is not a record this view returned",
                       (long long)r->offset);
    if (b->n_picks && r->offset <= b->picks[b->n_picks - 1].offset)
        return kc_fail(err, KC_ERR_STATE,
                       "kc_share_ack: offset %lld after %lld: one verdict per record, in "
                       "offset order",
                       (long long)r->offset, (long long)b->picks[b->n_picks - 1].offset);
    b->picks[b->n_picks++] = (kc_rt_share_pick_t){r->offset, (int8_t)verdict};
    return KC_OK;
}

int kc_records_delivery_count(const kc_records_t *b)
{
    return b->delivery_count > 0 ? b->delivery_count : -1;
}
