/*
 * One-shot compression for the few payloads a consumer sends compressed (KIP-714 telemetry): a
 * payload is a few KiB, made once a push interval, so a context per call costs nothing that
 * matters and nothing is kept between calls.
 */
#include <stdlib.h>
#include <zlib.h>
#include <zstd.h>

#include "batch/compress/compress.h"

static kc_err_t zstd_compress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len,
                              kc_error_t *err)
{
    size_t cap = ZSTD_compressBound(in_len);
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf)
        return kc_fail(err, KC_ERR_NOMEM, "zstd: no memory for %zu bytes", cap);
    size_t n = ZSTD_compress(buf, cap, in, in_len, 3);
    if (ZSTD_isError(n)) {
        free(buf);
        return kc_fail(err, KC_ERR_SYSTEM, "zstd: %s", ZSTD_getErrorName(n));
    }
    *out = buf;
    *out_len = n;
    return KC_OK;
}

/* A single gzip member (deflate with the gzip header and trailer: windowBits 15 + 16), what
 * Java's GZIPInputStream reads. */
static kc_err_t gzip_compress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len,
                              kc_error_t *err)
{
    z_stream zs = {0};
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
        return kc_fail(err, KC_ERR_NOMEM, "gzip: deflateInit2 failed");
    size_t cap = deflateBound(&zs, (uLong)in_len);
    uint8_t *buf = malloc(cap);
    if (!buf) {
        deflateEnd(&zs);
        return kc_fail(err, KC_ERR_NOMEM, "gzip: no memory for %zu bytes", cap);
    }
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)in_len;
    zs.next_out = buf;
    zs.avail_out = (uInt)cap;
    int rc = deflate(&zs, Z_FINISH);
    size_t n = zs.total_out;
    deflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        free(buf);
        return kc_fail(err, KC_ERR_SYSTEM, "gzip: deflate returned %d", rc);
    }
    *out = buf;
    *out_len = n;
    return KC_OK;
}

kc_err_t kc_compress(int codec, const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len,
                     kc_error_t *err)
{
    switch (codec) {
    case KC_CODEC_ZSTD:
        return zstd_compress(in, in_len, out, out_len, err);
    case KC_CODEC_GZIP:
        return gzip_compress(in, in_len, out, out_len, err);
    default:
        return kc_fail(err, KC_ERR_UNSUPPORTED, "compression codec %d is not written", codec);
    }
}
