/*
 * Codec dispatch and the decode context's output buffer. See compress.h.
 * State: a kc_decode_ctx_t is owned by exactly one worker thread.
 */
#include "batch/compress/compress.h"

#include <stdlib.h>

/* First allocation: big enough that typical batches (a few hundred KiB decompressed) need one or
 * two doublings, small enough that an idle worker holds little. */
#define INITIAL_CAP ((size_t)64 << 10)

void kc_decode_ctx_init(kc_decode_ctx_t *ctx, size_t max_out)
{
    ctx->zstd = NULL;
    ctx->lz4 = NULL;
    ctx->zs = NULL;
    ctx->out = NULL;
    ctx->out_cap = 0;
    ctx->max_out = max_out ? max_out : KC_DECODE_DEFAULT_MAX_OUT;
}

void kc_decode_ctx_destroy(kc_decode_ctx_t *ctx)
{
    kc_gzip_ctx_free(ctx);
    kc_lz4_ctx_free(ctx);
    kc_zstd_ctx_free(ctx);
    free(ctx->out);
    ctx->out = NULL;
    ctx->out_cap = 0;
}

kc_err_t kc_decode_reserve(kc_decode_ctx_t *ctx, size_t need, size_t keep, kc_error_t *err)
{
    (void)keep; /* realloc keeps everything; the parameter documents what callers rely on */
    if (need > ctx->max_out)
        return kc_fail(err, KC_ERR_TOO_LARGE, "decompressed size %zu exceeds the bound %zu", need,
                       ctx->max_out);
    if (need <= ctx->out_cap)
        return KC_OK;
    size_t cap = ctx->out_cap ? ctx->out_cap : INITIAL_CAP;
    while (cap < need)
        cap *= 2;
    if (cap > ctx->max_out)
        cap = ctx->max_out;
    uint8_t *p = realloc(ctx->out, cap);
    if (!p)
        return kc_fail(err, KC_ERR_NOMEM, "decompression buffer of %zu bytes", cap);
    ctx->out = p;
    ctx->out_cap = cap;
    return KC_OK;
}

kc_err_t kc_decode_grow(kc_decode_ctx_t *ctx, size_t keep, kc_error_t *err)
{
    if (ctx->out_cap >= ctx->max_out)
        return kc_fail(err, KC_ERR_TOO_LARGE, "decompressed data exceeds the bound of %zu bytes",
                       ctx->max_out);
    size_t need = ctx->out_cap ? ctx->out_cap * 2 : INITIAL_CAP;
    if (need > ctx->max_out)
        need = ctx->max_out;
    return kc_decode_reserve(ctx, need, keep, err);
}

kc_err_t kc_decompress(kc_decode_ctx_t *ctx, int codec, const uint8_t *in, size_t in_len,
                       const uint8_t **out, size_t *out_len, kc_error_t *err)
{
    kc_err_t rc;
    size_t n = 0;
    switch (codec) {
    case KC_CODEC_NONE:
        *out = in;
        *out_len = in_len;
        return KC_OK;
    case KC_CODEC_GZIP:
        rc = kc_gzip_decompress(ctx, in, in_len, &n, err);
        break;
    case KC_CODEC_SNAPPY:
        rc = kc_snappy_decompress(ctx, in, in_len, &n, err);
        break;
    case KC_CODEC_LZ4:
        rc = kc_lz4_decompress(ctx, in, in_len, &n, err);
        break;
    case KC_CODEC_ZSTD:
        rc = kc_zstd_decompress(ctx, in, in_len, &n, err);
        break;
    default:
        return kc_fail(err, KC_ERR_UNSUPPORTED, "unknown compression codec %d", codec);
    }
    if (rc != KC_OK)
        return rc;
    *out = ctx->out;
    *out_len = n;
    return KC_OK;
}
