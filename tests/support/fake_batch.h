/*
 * A trivial stand-in for Kafka's record-batch format, so the dispatcher can be tested without
 * io/batch: a buffer of records, each `int64 offset | uint32 value_len | value bytes` (host
 * order). The fake decoder plugs into kc_rt_decoder_t exactly as io/batch's iterator will.
 * A batch whose first 8 bytes are FAKE_CORRUPT fails to open (KC_ERR_CRC), to test skipping.
 * Header-only so that tests need no CMake change.
 */
#ifndef KC_TEST_FAKE_BATCH_H
#define KC_TEST_FAKE_BATCH_H

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "dispatch.h"
#include "record.h"

#define FAKE_CORRUPT ((int64_t)0x7fffbadbadbadLL)

typedef struct fake_ctx {
    const uint8_t *p, *end;
} fake_ctx_t;

static inline void *fake_ctx_new(void *opaque)
{
    (void)opaque;
    return calloc(1, sizeof(fake_ctx_t));
}

static inline void fake_ctx_free(void *opaque, void *ctx)
{
    (void)opaque;
    free(ctx);
}

static inline kc_err_t fake_open(void *vctx, const kc_part_t *p, const kc_rt_bref_t *b,
                                 kc_rt_batch_facts_t *facts, kc_error_t *err)
{
    fake_ctx_t *c = vctx;
    int64_t first;
    (void)p;
    facts->ts_type = 0;
    facts->leader_epoch = -1;
    memcpy(&first, b->raw.ptr, sizeof first);
    if (b->raw.len >= 8 && first == FAKE_CORRUPT)
        return kc_fail(err, KC_ERR_CRC, "fake corrupt batch at %lld", (long long)b->base_offset);
    c->p = b->raw.ptr;
    c->end = b->raw.ptr + b->raw.len;
    return KC_OK;
}

static inline int fake_next(void *vctx, kc_record_t *r, kc_error_t *err)
{
    fake_ctx_t *c = vctx;
    uint32_t n;
    (void)err;
    if (c->p == c->end)
        return 0;
    memcpy(&r->offset, c->p, 8);
    memcpy(&n, c->p + 8, 4);
    r->value = c->p + 12;
    r->value_len = (int32_t)n;
    r->key = NULL;
    r->key_len = -1;
    r->timestamp = 1000 + r->offset;
    r->attributes = 0;
    r->headers = NULL;
    r->headers_len = 0;
    r->header_count = 0;
    c->p += 12 + n;
    return 1;
}

static inline kc_rt_decoder_t fake_decoder(void)
{
    kc_rt_decoder_t d = {fake_ctx_new, fake_ctx_free, fake_open, fake_next, NULL};
    return d;
}

/* A batch of `count` records from `base`, each value `vlen` bytes. One reference, owned by the
 * returned bref. */
static inline kc_rt_bref_t fake_batch(int64_t base, int count, uint32_t vlen)
{
    size_t len = (size_t)count * (12 + vlen);
    kc_buf_t *buf = kc_buf_new(len + 8);
    uint8_t *p = buf->data;
    for (int i = 0; i < count; i++) {
        int64_t off = base + i;
        memcpy(p, &off, 8);
        memcpy(p + 8, &vlen, 4);
        memset(p + 12, 'a' + (int)(off % 26), vlen);
        p += 12 + vlen;
    }
    buf->len = len;
    kc_rt_bref_t b = {.base_offset = base, .last_offset = base + count - 1};
    b.raw.buf = buf; /* takes kc_buf_new's reference */
    b.raw.ptr = buf->data;
    b.raw.len = len;
    return b;
}

static inline kc_rt_bref_t fake_corrupt_batch(int64_t base, int count)
{
    kc_rt_bref_t b = fake_batch(base, count, 0);
    int64_t bad = FAKE_CORRUPT;
    memcpy(b.raw.buf->data, &bad, 8);
    return b;
}

#endif
