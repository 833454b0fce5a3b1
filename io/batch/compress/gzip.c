/*
 * gzip payloads (Kafka codec 1) through zlib. Java's producer writes one gzip member; several
 * concatenated members are accepted too, as gzip itself allows.
 * State: the z_stream lives in the worker's kc_decode_ctx_t (owner: that worker).
 */
#include <stdlib.h>
#include <zlib.h>

#include "batch/compress/compress.h"

void kc_gzip_ctx_free(kc_decode_ctx_t *ctx)
{
    if (ctx->zs) {
        inflateEnd(ctx->zs);
        free(ctx->zs);
        ctx->zs = NULL;
    }
}

static kc_err_t get_stream(kc_decode_ctx_t *ctx, z_stream **out, kc_error_t *err)
{
    if (!ctx->zs) {
        z_stream *zs = calloc(1, sizeof *zs);
        if (!zs)
            return kc_fail(err, KC_ERR_NOMEM, "gzip: z_stream");
        /* 15 + 16: a 32 KiB window and gzip (not zlib) framing. */
        if (inflateInit2(zs, 15 + 16) != Z_OK) {
            free(zs);
            return kc_fail(err, KC_ERR_NOMEM, "gzip: inflateInit2 failed");
        }
        ctx->zs = zs;
    } else if (inflateReset(ctx->zs) != Z_OK) {
        return kc_fail(err, KC_ERR_MALFORMED, "gzip: inflateReset failed");
    }
    *out = ctx->zs;
    return KC_OK;
}

kc_err_t kc_gzip_decompress(kc_decode_ctx_t *ctx, const uint8_t *in, size_t in_len, size_t *out_len,
                            kc_error_t *err)
{
    z_stream *zs = NULL;
    kc_err_t rc = get_stream(ctx, &zs, err);
    if (rc != KC_OK)
        return rc;
    if (in_len > UINT32_MAX)
        return kc_fail(err, KC_ERR_TOO_LARGE, "gzip: %zu input bytes", in_len);
    size_t produced = 0;
    zs->next_in = (Bytef *)in;
    zs->avail_in = (uInt)in_len;
    for (;;) {
        if (produced == ctx->out_cap && (rc = kc_decode_grow(ctx, produced, err)) != KC_OK)
            return rc;
        size_t room = ctx->out_cap - produced;
        if (room > UINT32_MAX)
            room = UINT32_MAX;
        zs->next_out = ctx->out + produced;
        zs->avail_out = (uInt)room;
        int z = inflate(zs, Z_NO_FLUSH);
        produced += room - zs->avail_out;
        if (z == Z_STREAM_END) {
            if (zs->avail_in == 0)
                break;
            if (inflateReset(zs) != Z_OK) /* another member follows */
                return kc_fail(err, KC_ERR_MALFORMED, "gzip: inflateReset failed");
            continue;
        }
        if (z == Z_BUF_ERROR && zs->avail_out != 0)
            return kc_fail(err, KC_ERR_MALFORMED, "gzip: truncated stream");
        if (z != Z_OK && z != Z_BUF_ERROR)
            return kc_fail(err, KC_ERR_MALFORMED, "gzip: %s", zs->msg ? zs->msg : "corrupt data");
        if (zs->avail_in == 0 && zs->avail_out != 0)
            return kc_fail(err, KC_ERR_MALFORMED, "gzip: truncated stream");
    }
    *out_len = produced;
    return KC_OK;
}
