/*
 * Decompression of record-batch payloads into a per-worker reusable buffer, and (encode.c) the
 * one-shot compression of the little a consumer sends compressed.
 *
 * kc_decode_ctx_t is owned by one worker thread: it holds the zstd DCtx and LZ4F context (made
 * once, reused for every batch — creating a zstd DCtx per batch costs more than decoding a small
 * one) and the growable output buffer. Every decoder writes only inside that buffer and never lets
 * it grow past ctx->max_out: a payload that would expand beyond it (a decompression bomb, or just a
 * batch larger than the configured bound) fails with KC_ERR_TOO_LARGE after at most max_out bytes
 * were produced.
 *
 * Output pointers returned by kc_decompress() point into ctx->out and are valid until the next
 * kc_decompress() on the same context (or kc_decode_ctx_destroy()).
 */
#ifndef KC_BATCH_COMPRESS_H
#define KC_BATCH_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Kafka's codec ids (the low three bits of a batch's attributes). */
typedef enum kc_codec {
    KC_CODEC_NONE = 0,
    KC_CODEC_GZIP = 1,
    KC_CODEC_SNAPPY = 2,
    KC_CODEC_LZ4 = 3,
    KC_CODEC_ZSTD = 4,
} kc_codec_t;

#define KC_DECODE_DEFAULT_MAX_OUT ((size_t)64 << 20)

/* Owner: one worker thread (never shared; each worker has its own). */
typedef struct kc_decode_ctx {
    void *zstd;     /* ZSTD_DCtx *, created lazily on the first zstd batch */
    void *lz4;      /* LZ4F_dctx *, created lazily on the first lz4 batch */
    void *zs;       /* z_stream *, created lazily on the first gzip batch */
    uint8_t *out;   /* reusable output buffer */
    size_t out_cap; /* bytes allocated at out */
    size_t max_out; /* hard bound on one batch's decompressed size */
} kc_decode_ctx_t;

/* max_out 0 means KC_DECODE_DEFAULT_MAX_OUT. Allocates nothing until first use. */
void kc_decode_ctx_init(kc_decode_ctx_t *ctx, size_t max_out);
void kc_decode_ctx_destroy(kc_decode_ctx_t *ctx);

/* Decompresses `in` (a batch's records section) with `codec` into ctx->out. On KC_OK *out and
 * *out_len give the result. KC_ERR_MALFORMED for corrupt input, KC_ERR_TOO_LARGE past max_out,
 * KC_ERR_UNSUPPORTED for an unknown codec id, KC_ERR_NOMEM. */
kc_err_t kc_decompress(kc_decode_ctx_t *ctx, int codec, const uint8_t *in, size_t in_len,
                       const uint8_t **out, size_t *out_len, kc_error_t *err);

/* ---- internal to compress/: one function per codec and the shared buffer growth ---- */

/* Makes ctx->out at least `need` bytes (need <= max_out), keeping the first `keep` bytes. */
kc_err_t kc_decode_reserve(kc_decode_ctx_t *ctx, size_t need, size_t keep, kc_error_t *err);
/* Grows ctx->out (doubling, capped at max_out); KC_ERR_TOO_LARGE when it is at max_out already. */
kc_err_t kc_decode_grow(kc_decode_ctx_t *ctx, size_t keep, kc_error_t *err);

kc_err_t kc_gzip_decompress(kc_decode_ctx_t *ctx, const uint8_t *in, size_t in_len, size_t *out_len,
                            kc_error_t *err);
kc_err_t kc_snappy_decompress(kc_decode_ctx_t *ctx, const uint8_t *in, size_t in_len,
                              size_t *out_len, kc_error_t *err);
kc_err_t kc_lz4_decompress(kc_decode_ctx_t *ctx, const uint8_t *in, size_t in_len, size_t *out_len,
                           kc_error_t *err);
kc_err_t kc_zstd_decompress(kc_decode_ctx_t *ctx, const uint8_t *in, size_t in_len, size_t *out_len,
                            kc_error_t *err);
void kc_gzip_ctx_free(kc_decode_ctx_t *ctx);
void kc_lz4_ctx_free(kc_decode_ctx_t *ctx);
void kc_zstd_ctx_free(kc_decode_ctx_t *ctx);

/* Compresses `in` whole into a new heap buffer (*out, free() it) for what the client itself sends
 * compressed (KIP-714 telemetry): zstd and gzip, the broker's first preferences; any other codec
 * is KC_ERR_UNSUPPORTED. Owner: the calling thread; no context is kept. */
kc_err_t kc_compress(int codec, const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len,
                     kc_error_t *err);

#endif
