/*
 * libFuzzer target: the record-batch splitter, every codec and the record iterator.
 *
 * Input byte 0 chooses the mode:
 *   bit 0     verify CRCs in the splitter
 *   bit 1     0: the rest is a partition's records bytes, walked as a Fetch response's would be
 *             1: byte 1 picks a codec (mod 5), byte 2 a record count, and the rest becomes the
 *                records section of a batch built here with a valid CRC, so the fuzzer reaches
 *                the decompressors and the iterator without having to forge CRCs
 *   bit 2     LogAppendTime / transactional flags on the built batch
 * Every record, header and control marker is read, a read_committed filter runs over the
 * batches, and mode 0's bytes are also walked as a worker takes a span apart (kc_batch_first). The
 * decode context is reused across inputs (as a worker reuses it), with a 4 MiB bound so bombs are
 * cut short. Seeds (tests/fuzz/corpus/fuzz_batch/) were made from tests/fixtures/batches/: whole
 * files in mode 0 and each codec's first records section in mode 1. Single-threaded (libFuzzer's
 * thread).
 */
#include <stdlib.h>
#include <string.h>

#include "batch/batch.h"
#include "batch/crc32c.h"

static kc_decode_ctx_t ctx;
static int ctx_ready;

static void be(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

/* A worker's walk of a span (runtime/worker.c cur_batch): each step inside the bytes, forward. */
static void walk_span(const uint8_t *data, size_t len)
{
    volatile int64_t sink = 0;
    size_t n;
    int64_t base, last;
    for (size_t pos = 0; pos < len && kc_batch_first(data + pos, len - pos, &n, &base, &last);
         pos += n) {
        if (n < KC_BATCH_HEADER_SIZE || n > len - pos || last < base)
            abort();
        sink += last - base;
    }
    (void)sink;
}

static void consume(const uint8_t *data, size_t len, int verify)
{
    kc_batch_splitter_t sp;
    kc_batch_t b;
    kc_error_t err;
    kc_aborted_txn_t ab[3] = {{1, 0}, {42, 0}, {7, 100}};
    kc_txn_filter_t f;
    kc_txn_filter_init(&f, ab, 3, &ctx);
    kc_batch_splitter_init_bytes(&sp, data, len, "fuzz", 0, verify);
    kc_err_t rc;
    volatile uint64_t sink = 0;
    int guard = 0;
    while ((rc = kc_batch_next(&sp, &b, &err)) != KC_ERR_NOT_FOUND && guard++ < 100000) {
        if (rc != KC_OK) {
            if (sp.stopped)
                break;
            continue;
        }
        if (kc_batch_is_control(&b)) {
            kc_control_t c;
            if (kc_batch_control(&ctx, &b, &c, &err) == KC_OK)
                sink += (uint64_t)c.type;
        }
        (void)kc_txn_filter_skip(&f, &b);
        kc_record_iter_t it;
        if (kc_batch_records(&ctx, &b, &it, &err) != KC_OK)
            continue;
        kc_record_t r;
        while (kc_record_next(&it, &r, &err) == KC_OK) {
            sink += (uint64_t)r.offset + (uint64_t)r.timestamp;
            if (r.key_len > 0)
                sink += r.key[r.key_len - 1];
            if (r.value_len > 0)
                sink += r.value[0] + r.value[r.value_len - 1];
            kc_header_iter_t hi;
            kc_record_header_t h;
            kc_record_headers(&r, &hi);
            while (kc_header_next(&hi, &h))
                sink += (uint64_t)h.key_len + (uint64_t)h.value_len;
        }
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ctx_ready) {
        kc_decode_ctx_init(&ctx, 4u << 20);
        ctx_ready = 1;
    }
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    if (!(mode & 2)) {
        walk_span(data + 1, size - 1);
        consume(data + 1, size - 1, mode & 1);
        return 0;
    }
    if (size < 3)
        return 0;
    int codec = data[1] % 5;
    int count = data[2];
    size_t body = size - 3;
    uint8_t *batch = malloc(KC_BATCH_HEADER_SIZE + body);
    if (!batch)
        return 0;
    int16_t attr = (int16_t)(codec | ((mode & 4) ? 0x18 : 0));
    be(batch, 1000, 8);
    be(batch + 8, KC_BATCH_HEADER_SIZE - 12 + body, 4);
    be(batch + 12, 0, 4);
    batch[16] = 2;
    be(batch + 21, (uint16_t)attr, 2);
    be(batch + 23, (uint32_t)(count ? count - 1 : 0), 4);
    be(batch + 27, 1700000000000ull, 8);
    be(batch + 35, 1700000009999ull, 8);
    be(batch + 43, (mode & 4) ? 42 : (uint64_t)-1, 8);
    be(batch + 51, 0, 2);
    be(batch + 53, 0, 4);
    be(batch + 57, (uint32_t)count, 4);
    memcpy(batch + KC_BATCH_HEADER_SIZE, data + 3, body);
    be(batch + 17, kc_crc32c(0, batch + 21, KC_BATCH_HEADER_SIZE - 21 + body), 4);
    consume(batch, KC_BATCH_HEADER_SIZE + body, 1);
    free(batch);
    return 0;
}
