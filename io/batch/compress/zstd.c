/*
 * zstd payloads (Kafka codec 4), streaming so that the output bound holds even when a frame
 * claims no content size or a false one. The DCtx is created once per worker and reused.
 * State: the DCtx lives in the worker's kc_decode_ctx_t (owner: that worker).
 */
#include <zstd.h>

#include "batch/compress/compress.h"

/* A window larger than this is refused: it bounds the memory one frame can make us allocate.
 * 2^27 (128 MiB) is zstd's default limit for decoders and above what Kafka producers use. */
#define WINDOW_LOG_MAX 27

void kc_zstd_ctx_free(kc_decode_ctx_t *ctx)
{
    ZSTD_freeDCtx(ctx->zstd);
    ctx->zstd = NULL;
}

kc_err_t kc_zstd_decompress(kc_decode_ctx_t *ctx, const uint8_t *in, size_t in_len, size_t *out_len,
                            kc_error_t *err)
{
    kc_err_t rc;
    if (!ctx->zstd) {
        ctx->zstd = ZSTD_createDCtx();
        if (!ctx->zstd)
            return kc_fail(err, KC_ERR_NOMEM, "zstd: ZSTD_createDCtx failed");
        ZSTD_DCtx_setParameter(ctx->zstd, ZSTD_d_windowLogMax, WINDOW_LOG_MAX);
    } else {
        ZSTD_DCtx_reset(ctx->zstd, ZSTD_reset_session_only);
    }
    /* Size the buffer from the frame header when it says, so most batches decode in one pass. */
    unsigned long long hint = ZSTD_getFrameContentSize(in, in_len);
    if (hint != ZSTD_CONTENTSIZE_UNKNOWN && hint != ZSTD_CONTENTSIZE_ERROR && hint > 0) {
        size_t want = hint < ctx->max_out ? (size_t)hint : ctx->max_out;
        if ((rc = kc_decode_reserve(ctx, want, 0, err)) != KC_OK)
            return rc;
    }
    ZSTD_inBuffer ib = {in, in_len, 0};
    size_t produced = 0;
    size_t last = 1; /* ZSTD_decompressStream's hint; 0 once a frame is complete */
    while (ib.pos < ib.size || last != 0) {
        if (produced == ctx->out_cap && (rc = kc_decode_grow(ctx, produced, err)) != KC_OK)
            return rc;
        ZSTD_outBuffer ob = {ctx->out, ctx->out_cap, produced};
        size_t in_before = ib.pos;
        last = ZSTD_decompressStream(ctx->zstd, &ob, &ib);
        if (ZSTD_isError(last))
            return kc_fail(err, KC_ERR_MALFORMED, "zstd: %s", ZSTD_getErrorName(last));
        int progressed = ob.pos != produced || ib.pos != in_before;
        produced = ob.pos;
        /* All input used, room left, frame unfinished and nothing moved: it wants bytes that
         * are not there. (With progress, one more call flushes what the DCtx still holds.) */
        if (last != 0 && ib.pos == ib.size && produced < ctx->out_cap && !progressed)
            return kc_fail(err, KC_ERR_MALFORMED, "zstd: truncated frame");
    }
    *out_len = produced;
    return KC_OK;
}
