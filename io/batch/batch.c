/*
 * Record-batch framing: the splitter over a partition's records bytes, header parsing and CRC
 * verification. Record iteration is in records.c, read_committed filtering in txn.c.
 * State: a kc_batch_splitter_t is owned by the worker running the partition.
 */
#include "batch/batch.h"

#include "batch/crc32c.h"

/* Offsets of header fields from the start of the batch (baseOffset). */
#define OFF_LENGTH     8
#define OFF_EPOCH      12
#define OFF_MAGIC      16
#define OFF_CRC        17
#define OFF_ATTRIBUTES 21 /* the CRC covers from here to the end */
/* Smallest possible v0 entry: offset, size, crc, magic, attributes, key len, value len. */
#define V0_MIN_SIZE 26

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

void kc_batch_header_parse(const uint8_t *p, kc_batch_header_t *h)
{
    h->base_offset = (int64_t)rd64(p);
    h->batch_length = (int32_t)rd32(p + OFF_LENGTH);
    h->partition_leader_epoch = (int32_t)rd32(p + OFF_EPOCH);
    h->magic = (int8_t)p[OFF_MAGIC];
    h->crc = rd32(p + OFF_CRC);
    h->attributes = (int16_t)rd16(p + 21);
    h->last_offset_delta = (int32_t)rd32(p + 23);
    h->base_timestamp = (int64_t)rd64(p + 27);
    h->max_timestamp = (int64_t)rd64(p + 35);
    h->producer_id = (int64_t)rd64(p + 43);
    h->producer_epoch = (int16_t)rd16(p + 51);
    h->base_sequence = (int32_t)rd32(p + 53);
    h->record_count = (int32_t)rd32(p + 57);
}

bool kc_batch_first(const uint8_t *p, size_t len, size_t *size, int64_t *base, int64_t *last)
{
    if (len < KC_BATCH_HEADER_SIZE)
        return false;
    kc_batch_header_t h;
    kc_batch_header_parse(p, &h);
    if (h.batch_length < KC_BATCH_HEADER_SIZE - KC_BATCH_LOG_OVERHEAD || h.last_offset_delta < 0 ||
        (size_t)h.batch_length > len - KC_BATCH_LOG_OVERHEAD || h.base_offset < 0 ||
        h.base_offset > INT64_MAX - h.last_offset_delta)
        return false;
    *size = (size_t)KC_BATCH_LOG_OVERHEAD + (size_t)h.batch_length;
    *base = h.base_offset;
    *last = h.base_offset + (int64_t)h.last_offset_delta;
    return true;
}

void kc_batch_splitter_init_bytes(kc_batch_splitter_t *sp, const uint8_t *p, size_t len,
                                  const char *topic, int32_t partition, bool verify_crc)
{
    sp->p = p;
    sp->end = p + len;
    sp->topic = topic ? topic : "?";
    sp->partition = partition;
    sp->verify_crc = verify_crc;
    sp->stopped = false;
    sp->truncated_bytes = 0;
}

void kc_batch_splitter_init(kc_batch_splitter_t *sp, const kc_slice_t *records, const char *topic,
                            int32_t partition, bool verify_crc)
{
    kc_batch_splitter_init_bytes(sp, records->ptr, records->len, topic, partition, verify_crc);
}

kc_err_t kc_batch_verify_crc(const kc_batch_t *b, kc_error_t *err)
{
    uint32_t c = kc_crc32c(0, b->data + OFF_ATTRIBUTES, b->size - OFF_ATTRIBUTES);
    if (c != b->h.crc)
        return kc_fail(err, KC_ERR_CRC,
                       "%s[%d] offsets %lld..%lld: batch CRC32C mismatch (stored 0x%08x, computed "
                       "0x%08x)",
                       b->topic, b->partition, (long long)b->h.base_offset,
                       (long long)kc_batch_last_offset(b), b->h.crc, c);
    return KC_OK;
}

/* Ends the walk: nothing after a broken length can be located. */
static kc_err_t stop(kc_batch_splitter_t *sp, kc_err_t code)
{
    sp->stopped = true;
    sp->p = sp->end;
    return code;
}

static kc_err_t old_magic(kc_batch_splitter_t *sp, kc_batch_t *b, size_t size, kc_error_t *err)
{
    int64_t off = (int64_t)rd64(sp->p);
    b->h.base_offset = off;
    b->h.last_offset_delta = 0;
    b->h.magic = (int8_t)sp->p[OFF_MAGIC];
    b->header_ok = true;
    b->data = sp->p;
    b->size = size;
    sp->p += size;
    return kc_fail(err, KC_ERR_UNSUPPORTED,
                   "%s[%d] offset %lld: message format v%d (pre-0.11) is not supported; "
                   "skipped %zu bytes",
                   sp->topic, sp->partition, (long long)off, b->h.magic, size);
}

kc_err_t kc_batch_next(kc_batch_splitter_t *sp, kc_batch_t *b, kc_error_t *err)
{
    *b = (kc_batch_t){.topic = sp->topic, .partition = sp->partition};
    size_t left = (size_t)(sp->end - sp->p);
    if (left == 0)
        return KC_ERR_NOT_FOUND;
    /* Less than the fixed fields that locate the next entry (offset, length, epoch/crc, magic):
     * a cut-off tail. Brokers cut the last batch at the size limit; that is normal. */
    if (left < OFF_MAGIC + 1) {
        sp->truncated_bytes = left;
        sp->p = sp->end;
        return KC_ERR_NOT_FOUND;
    }
    int32_t length = (int32_t)rd32(sp->p + OFF_LENGTH);
    int8_t magic = (int8_t)sp->p[OFF_MAGIC];
    int64_t base = (int64_t)rd64(sp->p);
    if (magic < 0 || magic > 2)
        return stop(sp, kc_fail(err, KC_ERR_MALFORMED,
                                "%s[%d] offset %lld: unknown record batch magic %d", sp->topic,
                                sp->partition, (long long)base, magic));
    size_t min = magic == 2 ? KC_BATCH_HEADER_SIZE - KC_BATCH_LOG_OVERHEAD
                            : V0_MIN_SIZE - KC_BATCH_LOG_OVERHEAD;
    if (length < 0 || (size_t)length < min)
        return stop(sp, kc_fail(err, KC_ERR_MALFORMED,
                                "%s[%d] offset %lld: batch length %d is below the minimum %zu",
                                sp->topic, sp->partition, (long long)base, length, min));
    size_t size = (size_t)length + KC_BATCH_LOG_OVERHEAD;
    if (size > left) {
        sp->truncated_bytes = left;
        sp->p = sp->end;
        return KC_ERR_NOT_FOUND;
    }
    if (magic < 2)
        return old_magic(sp, b, size, err);

    kc_batch_header_parse(sp->p, &b->h);
    b->header_ok = true;
    b->data = sp->p;
    b->size = size;
    b->records = sp->p + KC_BATCH_HEADER_SIZE;
    b->records_len = size - KC_BATCH_HEADER_SIZE;
    sp->p += size;
    if (b->h.last_offset_delta < 0 || b->h.record_count < 0) {
        int32_t delta = b->h.last_offset_delta;
        b->h.last_offset_delta = 0; /* so that "advance past last offset" never goes back */
        return kc_fail(err, KC_ERR_MALFORMED,
                       "%s[%d] offset %lld: negative lastOffsetDelta %d or recordCount %d",
                       b->topic, b->partition, (long long)b->h.base_offset, delta,
                       b->h.record_count);
    }
    if (sp->verify_crc)
        return kc_batch_verify_crc(b, err);
    return KC_OK;
}
