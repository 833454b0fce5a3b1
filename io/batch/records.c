/*
 * Record iteration inside one v2 batch: varint-framed records read as views, no allocation.
 * Also the control-batch marker reader. See batch.h.
 * State: a kc_record_iter_t is owned by the worker running the partition.
 *
 * Record layout (Kafka's DefaultRecord):
 *   length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
 *   keyLength varint, key, valueLength varint, value, headerCount varint,
 *   [headerKeyLength varint, headerKey, headerValueLength varint, headerValue]...
 * Varints are zigzag-encoded (protobuf style); an int32 takes at most 5 bytes, an int64 10.
 */
#include "batch/batch.h"

typedef struct cursor {
    const uint8_t *p, *end;
} cursor_t;

/* The readers below run several times per record: always inlined, so reading a record makes no
 * calls (callgrind, 100-byte records: 332 -> 202 instructions per record with the two-byte fast
 * path below; perf/README.md "Profile"). */
#define HOT static inline __attribute__((always_inline))

/* Zigzag varlong of at most `max_bytes` bytes; false on overrun or an over-long encoding. */
HOT bool rd_varint(cursor_t *c, int max_bytes, int64_t *out)
{
    /* Fast paths: in records of up to a few KiB every field (lengths, deltas, counts) takes one
     * or two bytes; the loop below is for the rest. */
    if (c->end - c->p >= 2) {
        uint64_t b0 = c->p[0], b1 = c->p[1];
        if (!(b0 & 0x80)) {
            c->p++;
            *out = (int64_t)(b0 >> 1) ^ -(int64_t)(b0 & 1);
            return true;
        }
        if (!(b1 & 0x80)) {
            uint64_t v = (b0 & 0x7f) | b1 << 7;
            c->p += 2;
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return true;
        }
    }
    uint64_t v = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (c->p >= c->end)
            return false;
        uint8_t byte = *c->p++;
        v |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return true;
        }
    }
    return false;
}

HOT bool rd_i32(cursor_t *c, int32_t *out)
{
    int64_t v;
    if (!rd_varint(c, 5, &v) || v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

/* A length-prefixed byte field: length -1 is null when `nullable`. */
HOT bool rd_bytes(cursor_t *c, bool nullable, const uint8_t **ptr, int32_t *len)
{
    int32_t n;
    if (!rd_i32(c, &n))
        return false;
    if (n < 0) {
        if (n != -1 || !nullable)
            return false;
        *ptr = NULL;
        *len = -1;
        return true;
    }
    if ((size_t)n > (size_t)(c->end - c->p))
        return false;
    *ptr = c->p;
    *len = n;
    c->p += n;
    return true;
}

kc_err_t kc_batch_records(kc_decode_ctx_t *ctx, const kc_batch_t *b, kc_record_iter_t *it,
                          kc_error_t *err)
{
    const uint8_t *data;
    size_t len;
    kc_error_t inner = {0};
    kc_err_t rc =
        kc_decompress(ctx, kc_batch_codec(b), b->records, b->records_len, &data, &len, &inner);
    if (rc != KC_OK) {
        /* Prefix the codec's message with where it happened. */
        return kc_fail(err, rc, "%s[%d] offsets %lld..%lld: %s", b->topic, b->partition,
                       (long long)b->h.base_offset, (long long)kc_batch_last_offset(b), inner.msg);
    }
    it->b = b;
    it->p = data;
    it->end = data + len;
    it->left = b->h.record_count;
    it->log_append = kc_batch_timestamp_type(b) == KC_TS_LOG_APPEND_TIME;
    it->ts_fixed = b->h.max_timestamp;
    return KC_OK;
}

static kc_err_t bad(const kc_record_iter_t *it, kc_error_t *err, const char *what)
{
    const kc_batch_t *b = it->b;
    return kc_fail(err, KC_ERR_MALFORMED, "%s[%d] offsets %lld..%lld: record %d of %d: %s",
                   b->topic, b->partition, (long long)b->h.base_offset,
                   (long long)kc_batch_last_offset(b), b->h.record_count - it->left,
                   b->h.record_count, what);
}

static bool rd_headers(cursor_t *c, kc_record_t *r)
{
    if (!rd_i32(c, &r->header_count) || r->header_count < 0)
        return false;
    r->headers = c->p;
    for (int32_t i = 0; i < r->header_count; i++) {
        const uint8_t *k, *v;
        int32_t kl, vl;
        if (!rd_bytes(c, false, &k, &kl) || !rd_bytes(c, true, &v, &vl))
            return false;
    }
    r->headers_len = (size_t)(c->p - r->headers);
    return true;
}

kc_err_t kc_record_next(kc_record_iter_t *it, kc_record_t *r, kc_error_t *err)
{
    if (it->left == 0) {
        if (it->p != it->end)
            return bad(it, err, "bytes remain after the last record (record count mismatch)");
        return KC_ERR_NOT_FOUND;
    }
    if (it->p == it->end)
        return bad(it, err, "fewer records than recordCount");
    cursor_t c = {it->p, it->end};
    int32_t len;
    if (!rd_i32(&c, &len) || len < 0)
        return bad(it, err, "bad record length varint");
    if ((size_t)len > (size_t)(c.end - c.p))
        return bad(it, err, "record length runs past the batch");
    const uint8_t *rec_end = c.p + len;
    c.end = rec_end;
    int64_t ts_delta, off_delta;
    if (c.p >= c.end)
        return bad(it, err, "empty record");
    r->attributes = (int8_t)*c.p++;
    if (!rd_varint(&c, 10, &ts_delta))
        return bad(it, err, "bad timestampDelta varint");
    if (!rd_varint(&c, 5, &off_delta) || off_delta < 0 || off_delta > INT32_MAX)
        return bad(it, err, "bad offsetDelta varint");
    if (!rd_bytes(&c, true, &r->key, &r->key_len))
        return bad(it, err, "bad key length");
    if (!rd_bytes(&c, true, &r->value, &r->value_len))
        return bad(it, err, "bad value length");
    if (!rd_headers(&c, r))
        return bad(it, err, "bad headers");
    if (c.p != rec_end)
        return bad(it, err, "record length disagrees with its fields");
    const kc_batch_t *b = it->b;
    /* Unsigned sums: corrupt deltas must give a wrong number, not undefined behaviour. */
    r->offset = (int64_t)((uint64_t)b->h.base_offset + (uint64_t)off_delta);
    r->timestamp = it->log_append ? it->ts_fixed
                                  : (int64_t)((uint64_t)b->h.base_timestamp + (uint64_t)ts_delta);
    it->p = rec_end;
    it->left--;
    return KC_OK;
}

void kc_record_headers(const kc_record_t *r, kc_header_iter_t *it)
{
    it->p = r->headers;
    it->end = r->headers + r->headers_len;
    it->left = r->header_count;
}

bool kc_header_next(kc_header_iter_t *it, kc_record_header_t *h)
{
    if (it->left <= 0)
        return false;
    cursor_t c = {it->p, it->end};
    /* Validated by rd_headers() when the record was read, so these cannot fail. */
    if (!rd_bytes(&c, false, &h->key, &h->key_len) || !rd_bytes(&c, true, &h->value, &h->value_len))
        return false;
    it->p = c.p;
    it->left--;
    return true;
}

kc_err_t kc_batch_control(kc_decode_ctx_t *ctx, const kc_batch_t *b, kc_control_t *out,
                          kc_error_t *err)
{
    kc_record_iter_t it;
    kc_record_t r;
    kc_err_t rc = kc_batch_records(ctx, b, &it, err);
    if (rc != KC_OK)
        return rc;
    rc = kc_record_next(&it, &r, err);
    if (rc == KC_ERR_NOT_FOUND)
        return kc_fail(err, KC_ERR_MALFORMED, "%s[%d] offset %lld: control batch without records",
                       b->topic, b->partition, (long long)b->h.base_offset);
    if (rc != KC_OK)
        return rc;
    if (r.key_len < 4)
        return kc_fail(err, KC_ERR_MALFORMED,
                       "%s[%d] offset %lld: control record key of %d bytes (need 4)", b->topic,
                       b->partition, (long long)r.offset, r.key_len);
    out->version = (int16_t)(r.key[0] << 8 | r.key[1]);
    out->type = (int16_t)(r.key[2] << 8 | r.key[3]);
    out->offset = r.offset;
    out->producer_id = b->h.producer_id;
    return KC_OK;
}
