/*
 * lz4 payloads (Kafka codec 3): the LZ4 frame format, decoded with liblz4's LZ4F API into the
 * bounded output buffer. (Magic v0/v1 batches had a broken header checksum; v2 ones are standard
 * frames, and v0/v1 are not decoded here at all — see batch.h.)
 * State: the LZ4F context lives in the worker's kc_decode_ctx_t (owner: that worker).
 */
#include <lz4frame.h>

#include "batch/compress/compress.h"

void kc_lz4_ctx_free(kc_decode_ctx_t *ctx)
{
    if (ctx->lz4)
        LZ4F_freeDecompressionContext(ctx->lz4);
    ctx->lz4 = NULL;
}

kc_err_t kc_lz4_decompress(kc_decode_ctx_t *ctx, const uint8_t *in, size_t in_len, size_t *out_len,
                           kc_error_t *err)
{
    kc_err_t rc;
    if (!ctx->lz4) {
        LZ4F_dctx *d;
        if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
            return kc_fail(err, KC_ERR_NOMEM, "lz4: cannot create a decompression context");
        ctx->lz4 = d;
    } else {
        LZ4F_resetDecompressionContext(ctx->lz4);
    }
    size_t pos = 0, produced = 0;
    size_t hint = 1;
    /* Frames may be concatenated; LZ4F_decompress returns 0 at the end of each one. */
    while (pos < in_len) {
        if (produced == ctx->out_cap && (rc = kc_decode_grow(ctx, produced, err)) != KC_OK)
            return rc;
        size_t dst = ctx->out_cap - produced;
        size_t src = in_len - pos;
        hint = LZ4F_decompress(ctx->lz4, ctx->out + produced, &dst, in + pos, &src, NULL);
        if (LZ4F_isError(hint)) {
            LZ4F_resetDecompressionContext(ctx->lz4);
            return kc_fail(err, KC_ERR_MALFORMED, "lz4: %s", LZ4F_getErrorName(hint));
        }
        pos += src;
        produced += dst;
        if (src == 0 && dst == 0 && produced < ctx->out_cap)
            break; /* no progress with room to write: the frame wants input we do not have */
    }
    /* Flush what the context still holds (it may buffer a block when output was short). */
    while (hint != 0) {
        if (produced == ctx->out_cap && (rc = kc_decode_grow(ctx, produced, err)) != KC_OK)
            return rc;
        size_t dst = ctx->out_cap - produced;
        size_t src = 0;
        hint = LZ4F_decompress(ctx->lz4, ctx->out + produced, &dst, in + pos, &src, NULL);
        if (LZ4F_isError(hint)) {
            LZ4F_resetDecompressionContext(ctx->lz4);
            return kc_fail(err, KC_ERR_MALFORMED, "lz4: %s", LZ4F_getErrorName(hint));
        }
        produced += dst;
        if (hint != 0 && dst == 0) {
            LZ4F_resetDecompressionContext(ctx->lz4);
            return kc_fail(err, KC_ERR_MALFORMED, "lz4: truncated frame");
        }
    }
    *out_len = produced;
    return KC_OK;
}
