/*
 * Kafka record batches (magic v2): split a partition's `records` bytes from a Fetch response into
 * batches, verify them, decompress them and iterate their records as views. Called from worker
 * threads; nothing here touches shared state.
 *
 * Usage, on the worker that runs the partition:
 *
 *     kc_batch_splitter_t sp;
 *     kc_batch_splitter_init(&sp, &slice, topic, partition, true);  // verify CRCs
 *     kc_batch_t b;
 *     kc_err_t rc;
 *     while ((rc = kc_batch_next(&sp, &b, &err)) != KC_ERR_NOT_FOUND) {
 *         if (rc != KC_OK) {                       // corrupt batch, v0/v1 entry, bad CRC...
 *             if (b.header_ok) position = kc_batch_last_offset(&b) + 1;  // skip it
 *             if (sp.stopped) break;               // could not find the next batch
 *             continue;
 *         }
 *         if (kc_txn_filter_skip(&txf, &b)) continue;   // read_committed only
 *         kc_record_iter_t it;
 *         if (kc_batch_records(&ctx, &b, &it, &err) != KC_OK) { ...skip as above... }
 *         kc_record_t r;
 *         while ((rc = kc_record_next(&it, &r, &err)) == KC_OK) { ... r.offset, r.value ... }
 *         if (rc != KC_ERR_NOT_FOUND) { ...corrupt records: skip the batch as above... }
 *     }
 *     // sp.truncated_bytes: a trailing partial batch the broker cut at the size limit (normal).
 *
 * Ownership and lifetimes
 * - The slice given to the splitter stays owned by the caller (who holds its kc_buf_t reference);
 *   kc_batch_t and views of uncompressed records point into it.
 * - Views of compressed batches' records point into the kc_decode_ctx_t's buffer and are valid
 *   until the next kc_batch_records() on the same context. Copy what must live longer.
 * - No heap allocation per record or per batch; the decode context grows its one buffer.
 *
 * Errors carry "topic[partition]" (given to the splitter) and the batch's offset range
 * "offsets B..L" whenever the 61-byte header was readable, so the caller can log and advance.
 *
 * Magic v0/v1 message sets (pre-0.11 formats; Kafka 4 no longer writes them but an old topic may
 * still hold them): NOT decoded. The splitter reports each such entry as KC_ERR_UNSUPPORTED naming
 * topic, partition and offset, sets header_ok with base = last = the entry's offset (for a
 * compressed v1 wrapper that is its last inner offset), and moves past it, so consumption goes on
 * with the next entry. Reason: an extra decoder (two formats, nested compressed message sets, the
 * broken v0/v1 LZ4 checksum) for data no supported broker produces, and which a reader can
 * convert with Kafka's own tools.
 */
#ifndef KC_BATCH_BATCH_H
#define KC_BATCH_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "batch/compress/compress.h"

/* Size of the v2 batch header through recordCount. batchLength counts bytes after itself. */
#define KC_BATCH_HEADER_SIZE  61
#define KC_BATCH_LOG_OVERHEAD 12 /* baseOffset + batchLength */

#define KC_BATCH_ATTR_COMPRESSION_MASK 0x07
#define KC_BATCH_ATTR_TIMESTAMP_TYPE   0x08 /* set: LogAppendTime */
#define KC_BATCH_ATTR_TRANSACTIONAL    0x10
#define KC_BATCH_ATTR_CONTROL          0x20
#define KC_BATCH_ATTR_DELETE_HORIZON   0x40

typedef enum kc_timestamp_type {
    KC_TS_CREATE_TIME = 0,
    KC_TS_LOG_APPEND_TIME = 1,
} kc_timestamp_type_t;

/* The v2 header, decoded. */
typedef struct kc_batch_header {
    int64_t base_offset;
    int32_t batch_length;
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t record_count;
} kc_batch_header_t;

/* One batch found by the splitter. Plain data; owned by the caller. */
typedef struct kc_batch {
    kc_batch_header_t h;
    bool header_ok;         /* h is readable: the offset range below is meaningful */
    const uint8_t *data;    /* the whole batch, from baseOffset */
    size_t size;            /* 12 + batchLength */
    const uint8_t *records; /* the records section (possibly compressed) */
    size_t records_len;
    const char *topic; /* for error messages: from the splitter */
    int32_t partition;
} kc_batch_t;

static inline int kc_batch_codec(const kc_batch_t *b)
{
    return b->h.attributes & KC_BATCH_ATTR_COMPRESSION_MASK;
}
static inline kc_timestamp_type_t kc_batch_timestamp_type(const kc_batch_t *b)
{
    return (b->h.attributes & KC_BATCH_ATTR_TIMESTAMP_TYPE) ? KC_TS_LOG_APPEND_TIME
                                                            : KC_TS_CREATE_TIME;
}
static inline bool kc_batch_is_transactional(const kc_batch_t *b)
{
    return (b->h.attributes & KC_BATCH_ATTR_TRANSACTIONAL) != 0;
}
static inline bool kc_batch_is_control(const kc_batch_t *b)
{
    return (b->h.attributes & KC_BATCH_ATTR_CONTROL) != 0;
}
static inline bool kc_batch_has_delete_horizon(const kc_batch_t *b)
{
    return (b->h.attributes & KC_BATCH_ATTR_DELETE_HORIZON) != 0;
}
static inline int64_t kc_batch_last_offset(const kc_batch_t *b)
{
    /* unsigned: a corrupt header near INT64_MAX must not overflow (UB) */
    return (int64_t)((uint64_t)b->h.base_offset + (uint64_t)(int64_t)b->h.last_offset_delta);
}

/* Walks one partition's records bytes. Owner: the worker running the partition. */
typedef struct kc_batch_splitter {
    const uint8_t *p, *end;
    const char *topic;
    int32_t partition;
    bool verify_crc;
    bool stopped;           /* an error left no way to find the next batch */
    size_t truncated_bytes; /* bytes of a trailing partial batch (0 if none) */
} kc_batch_splitter_t;

/* `records` is not retained beyond its lifetime; topic must outlive the splitter (for messages).
 * NULL topic is fine ("?"). */
void kc_batch_splitter_init(kc_batch_splitter_t *sp, const kc_slice_t *records, const char *topic,
                            int32_t partition, bool verify_crc);
/* Same over a plain byte range. */
void kc_batch_splitter_init_bytes(kc_batch_splitter_t *sp, const uint8_t *p, size_t len,
                                  const char *topic, int32_t partition, bool verify_crc);

/* The next batch. KC_OK: *b is a whole, verified v2 batch. KC_ERR_NOT_FOUND: no more whole
 * batches (sp->truncated_bytes says how many bytes were a partial one). Other errors
 * (KC_ERR_CRC, KC_ERR_MALFORMED, KC_ERR_UNSUPPORTED): this entry is bad; b->header_ok tells
 * whether its offsets are known; the next call continues after it unless sp->stopped. */
kc_err_t kc_batch_next(kc_batch_splitter_t *sp, kc_batch_t *b, kc_error_t *err);

/* Parses a v2 header from 61+ bytes (no CRC check). Exposed for tests and tools. */
void kc_batch_header_parse(const uint8_t *p, kc_batch_header_t *h);

/* The first batch of p[0..len), bytes that hold one or more complete batches one after another
 * (a partition's slice of a Fetch response): its size, base offset and last offset (base + last
 * offset delta), from its header alone. false when the header is short, says a size that does
 * not fit in len, or offsets no log can hold (negative, or past INT64_MAX); the caller then
 * treats the bytes as one unit and its decoder reports them. */
bool kc_batch_first(const uint8_t *p, size_t len, size_t *size, int64_t *base, int64_t *last);

/* CRC32C over attributes..end, compared with h.crc. */
kc_err_t kc_batch_verify_crc(const kc_batch_t *b, kc_error_t *err);

/* ---- records ---- */

/* A header of a record, as views. Lengths -1 mean null (a null header key is invalid in Kafka
 * and reported as malformed; values may be null). */
typedef struct kc_record_header {
    const uint8_t *key;
    int32_t key_len;
    const uint8_t *value;
    int32_t value_len;
} kc_record_header_t;

/* A record, as views. key/value NULL with length -1 when null. Headers were validated when the
 * record was read; iterate them with kc_record_header_next(). */
typedef struct kc_record {
    int64_t offset;
    int64_t timestamp;
    int8_t attributes;
    const uint8_t *key;
    int32_t key_len;
    const uint8_t *value;
    int32_t value_len;
    int32_t header_count;
    const uint8_t *headers; /* encoded headers, header_count of them */
    size_t headers_len;
} kc_record_t;

/* Iterator over a record's headers; cannot fail (the record read validated them). */
typedef struct kc_header_iter {
    const uint8_t *p, *end;
    int32_t left;
} kc_header_iter_t;

void kc_record_headers(const kc_record_t *r, kc_header_iter_t *it);
bool kc_header_next(kc_header_iter_t *it, kc_record_header_t *h);

/* Iterator over one batch's records. Owner: the worker. */
typedef struct kc_record_iter {
    const kc_batch_t *b;
    const uint8_t *p, *end;
    int32_t left;     /* records still to read */
    int64_t ts_fixed; /* LogAppendTime: every record's timestamp is maxTimestamp */
    bool log_append;
} kc_record_iter_t;

/* Prepares iteration over b's records, decompressing into ctx when needed. `b` must stay valid
 * while iterating. Errors name topic, partition and offset range. */
kc_err_t kc_batch_records(kc_decode_ctx_t *ctx, const kc_batch_t *b, kc_record_iter_t *it,
                          kc_error_t *err);

/* The next record: KC_OK, KC_ERR_NOT_FOUND after the last (having checked that the record count
 * and the bytes agree), or KC_ERR_MALFORMED (bad varint, length past the end, count mismatch). */
kc_err_t kc_record_next(kc_record_iter_t *it, kc_record_t *r, kc_error_t *err);

/* ---- control batches and read_committed ---- */

typedef enum kc_control_type {
    KC_CONTROL_ABORT = 0,
    KC_CONTROL_COMMIT = 1,
} kc_control_type_t;

/* A control batch's marker: key = int16 version, int16 type. Other types (e.g. KRaft's leader
 * change, type 2+) are returned as they are; callers skip them. */
typedef struct kc_control {
    int16_t version;
    int16_t type;
    int64_t offset;
    int64_t producer_id;
} kc_control_t;

/* Reads the marker of a control batch (first record's key). */
kc_err_t kc_batch_control(kc_decode_ctx_t *ctx, const kc_batch_t *b, kc_control_t *out,
                          kc_error_t *err);

/* One entry of a Fetch response partition's aborted_transactions. */
typedef struct kc_aborted_txn {
    int64_t producer_id;
    int64_t first_offset;
} kc_aborted_txn_t;

/* Decides which batches read_committed skips, as Java's consumer does: a producer id joins the
 * aborted set when a batch reaching its first_offset is seen, and leaves it at that producer's
 * ABORT marker; transactional batches of producers in the set are skipped; control batches are
 * always skipped. Owner: the worker running the partition, for one Fetch response.
 * Uses the caller's array as its only storage (sorted in place by first_offset; consumed slots
 * hold the set), so nothing is allocated. The array must outlive the filter. */
typedef struct kc_txn_filter {
    kc_aborted_txn_t *txns;
    size_t n;
    size_t next;          /* txns[next..n) not yet reached */
    size_t n_active;      /* txns[0..n_active).producer_id: producers whose data is aborted */
    kc_decode_ctx_t *ctx; /* to read ABORT markers */
} kc_txn_filter_t;

void kc_txn_filter_init(kc_txn_filter_t *f, kc_aborted_txn_t *txns, size_t n, kc_decode_ctx_t *ctx);
/* True when read_committed must not deliver b's records (aborted data or a control batch).
 * Call for every whole batch in offset order, before kc_batch_records() on that batch: reading a
 * control marker goes through ctx, which may reuse its buffer. A control batch whose marker
 * cannot be read is skipped (it carries no data) and leaves the set unchanged. */
bool kc_txn_filter_skip(kc_txn_filter_t *f, const kc_batch_t *b);

#endif
