/*
 * Test-only encoder of Kafka v2 record batches (not product code: kconsume never produces).
 * Lets unit tests and the benchmark make batches with chosen records, codecs and flags, and
 * break them on purpose (record count, raw record bytes). Real-producer bytes come from
 * tests/fixtures/batches/ (made by Kafka's own classes); this covers what those cannot.
 */
#ifndef KC_TEST_BATCH_BUILDER_H
#define KC_TEST_BATCH_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer. */
typedef struct tb_buf {
    uint8_t *p;
    size_t len, cap;
} tb_buf_t;

void tb_put(tb_buf_t *b, const void *p, size_t n);
void tb_free(tb_buf_t *b);

typedef struct tb_header {
    const char *key;
    const void *value; /* NULL: null value */
    int32_t value_len;
} tb_header_t;

typedef struct tb_record {
    int64_t ts_delta;
    int32_t off_delta;
    const void *key; /* NULL: null */
    int32_t key_len;
    const void *value; /* NULL: null */
    int32_t value_len;
    int n_headers;
    const tb_header_t *headers;
} tb_record_t;

typedef struct tb_batch {
    int64_t base_offset;
    int codec;       /* 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd */
    bool raw_snappy; /* snappy as one raw block instead of xerial framing */
    bool log_append;
    bool transactional;
    bool control;
    int64_t producer_id; /* default 0 means -1 unless set_pid */
    bool set_pid;
    int16_t producer_epoch;
    int64_t base_ts, max_ts;
    int32_t leader_epoch;       /* partitionLeaderEpoch, written as is */
    int32_t count_override;     /* != 0: written as recordCount instead of n */
    const uint8_t *raw_records; /* non-NULL: these bytes are the records section (pre-codec) */
    size_t raw_records_len;
} tb_batch_t;

/* Appends one batch with `n` records to `out`. Returns the batch's size in bytes. */
size_t tb_batch(tb_buf_t *out, const tb_batch_t *cfg, const tb_record_t *recs, int n);

/* Appends the encoding of one record (for hand-made corrupt record sections). */
void tb_record(tb_buf_t *out, const tb_record_t *r);
void tb_varint(tb_buf_t *out, int64_t v);

/* Compresses `in` with `codec` (as a producer would) into `out` (appended). */
void tb_compress(tb_buf_t *out, int codec, bool raw_snappy, const uint8_t *in, size_t len);

#endif
