/*
 * zstd payloads (Kafka codec 4), streaming so that the output bound holds even when a frame
 * claims no content size or a false one. The DCtx is created once per worker and reused.
 * State: the DCtx lives in the worker's kc_decode_ctx_t (owner: that worker).
 */
#include <zstd.h>
#include <zstd_errors.h>

#include "batch/compress/compress.h"

/* A window larger than this is refused: it bounds the memory one frame can make us allocate.
 * 2^27 (128 MiB) is zstd's default limit for decoders and above what Kafka producers use. */
#define WINDOW_LOG_MAX 27

/* How far a frame header's content size is believed before real output backs it. */
#define HINT_RATIO 32
#define HINT_SLACK ((size_t)64 << 10)

void kc_zstd_ctx_free(kc_decode_ctx_t *ctx)
{
    ZSTD_freeDCtx(ctx->zstd);
    ctx->zstd = NULL;
}

/* The history window the first frame's header declares (0: not a parsable header). Streaming
 * decompression allocates a buffer of this size inside the DCtx before reading any block. */
static uint64_t declared_window(const uint8_t *in, size_t len)
{
    if (len < 6 || in[0] != 0x28 || in[1] != 0xb5 || in[2] != 0x2f || in[3] != 0xfd)
        return 0;
    uint8_t fhd = in[4];
    if (fhd & 0x20) { /* single segment: the window is the content size */
        unsigned long long fcs = ZSTD_getFrameContentSize(in, len);
        return fcs == ZSTD_CONTENTSIZE_UNKNOWN || fcs == ZSTD_CONTENTSIZE_ERROR ? 0 : fcs;
    }
    uint8_t wd = in[5];
    uint64_t base = (uint64_t)1 << (10 + (wd >> 3));
    return base + base / 8 * (wd & 7);
}

/* A decode error as the consumer reports it: a frame cut short says so. */
static kc_err_t malformed(kc_error_t *err, size_t code)
{
    if (ZSTD_getErrorCode(code) == ZSTD_error_srcSize_wrong)
        return kc_fail(err, KC_ERR_MALFORMED, "zstd: truncated frame");
    return kc_fail(err, KC_ERR_MALFORMED, "zstd: %s", ZSTD_getErrorName(code));
}

/* One-shot decode straight into ctx->out, which then is the history window: zstd allocates no
 * window of its own. Used when the header declares a window the frame's bytes cannot justify;
 * the buffer doubles (re-decoding) only as far as real output needs, up to max_out. */
static kc_err_t one_shot(kc_decode_ctx_t *ctx, const uint8_t *in, size_t in_len, size_t *out_len,
                         kc_error_t *err)
{
    kc_err_t rc;
    if (!ctx->out_cap && (rc = kc_decode_grow(ctx, 0, err)) != KC_OK)
        return rc;
    for (;;) {
        size_t n = ZSTD_decompressDCtx(ctx->zstd, ctx->out, ctx->out_cap, in, in_len);
        if (!ZSTD_isError(n)) {
            *out_len = n;
            return KC_OK;
        }
        if (ZSTD_getErrorCode(n) != ZSTD_error_dstSize_tooSmall)
            return malformed(err, n);
        if ((rc = kc_decode_grow(ctx, 0, err)) != KC_OK)
            return rc;
    }
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
    uint64_t window = declared_window(in, in_len);
    if (window > (uint64_t)in_len * HINT_RATIO + HINT_SLACK)
        return one_shot(ctx, in, in_len, out_len, err);
    unsigned long long hint = ZSTD_getFrameContentSize(in, in_len);
    /* A streamed frame (Java's producers write them: no content size) decodes block by block
     * into the DCtx's own window buffer and is copied out of it, a second pass over every
     * decompressed byte. Decoded in one shot into the buffer instead, it costs neither the copy
     * nor the window. The buffer keeps the size of the largest batch so far, so this fits all but
     * a batch larger than every one before it, which goes on to the streaming decode (that grows
     * the buffer) after a partial decode. */
    if (hint == ZSTD_CONTENTSIZE_UNKNOWN && ctx->out_cap > 0) {
        size_t n = ZSTD_decompressDCtx(ctx->zstd, ctx->out, ctx->out_cap, in, in_len);
        if (!ZSTD_isError(n)) {
            *out_len = n;
            return KC_OK;
        }
        if (ZSTD_getErrorCode(n) != ZSTD_error_dstSize_tooSmall)
            return malformed(err, n);
        if (ctx->out_cap >= ctx->max_out) /* the streaming decode could only fail the same way */
            return kc_fail(err, KC_ERR_TOO_LARGE,
                           "decompressed data exceeds the bound of %zu bytes", ctx->max_out);
        ZSTD_DCtx_reset(ctx->zstd, ZSTD_reset_session_only);
    }
    /* Size the buffer from the frame header when it says, so most batches decode in one pass.
     * The header is only a claim: believe it up to HINT_RATIO times the frame (typical record
     * data compresses far less), and let real output grow the buffer past that. */
    if (hint != ZSTD_CONTENTSIZE_UNKNOWN && hint != ZSTD_CONTENTSIZE_ERROR && hint > 0) {
        size_t want = hint < ctx->max_out ? (size_t)hint : ctx->max_out;
        if (want > in_len * HINT_RATIO + HINT_SLACK)
            want = in_len * HINT_RATIO + HINT_SLACK;
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
            return malformed(err, last);
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
