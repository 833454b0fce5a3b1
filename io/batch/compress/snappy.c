/*
 * snappy payloads (Kafka codec 2). Java's producer writes snappy-java's "xerial" framing:
 *   magic "\x82SNAPPY\0" (8 bytes), int32 version, int32 min-compatible version (big-endian),
 *   then chunks of [int32 BE compressed length][raw snappy block]...
 * Other clients (librdkafka's default, sarama) write one raw snappy block. A payload that starts
 * with the magic is xerial; anything else is tried as raw.
 * Every block's declared uncompressed length is checked against the remaining bound before
 * decoding, so the bound holds without trusting the block.
 * State: only the worker's kc_decode_ctx_t buffer (owner: that worker).
 */
#include <snappy-c.h>
#include <string.h>

#include "batch/compress/compress.h"

static const uint8_t xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

static kc_err_t raw_block(kc_decode_ctx_t *ctx, const uint8_t *in, size_t len, size_t *produced,
                          kc_error_t *err)
{
    size_t n;
    if (snappy_uncompressed_length((const char *)in, len, &n) != SNAPPY_OK)
        return kc_fail(err, KC_ERR_MALFORMED, "snappy: bad block header");
    /* A claim no snappy block of this size can back (its densest op, a 3-byte copy, yields 64
     * bytes) is refused before anything is allocated for it. */
    if (n > len / 3 * 64 + 64)
        return kc_fail(err, KC_ERR_MALFORMED,
                       "snappy: block of %zu bytes claims %zu decompressed, more than it can hold",
                       len, n);
    if (n > ctx->max_out - *produced)
        return kc_fail(err, KC_ERR_TOO_LARGE,
                       "snappy: block of %zu bytes would exceed the bound of %zu bytes", n,
                       ctx->max_out);
    kc_err_t rc = kc_decode_reserve(ctx, *produced + n, *produced, err);
    if (rc != KC_OK)
        return rc;
    size_t got = n;
    if (snappy_uncompress((const char *)in, len, (char *)ctx->out + *produced, &got) != SNAPPY_OK ||
        got != n)
        return kc_fail(err, KC_ERR_MALFORMED, "snappy: corrupt block");
    *produced += n;
    return KC_OK;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

kc_err_t kc_snappy_decompress(kc_decode_ctx_t *ctx, const uint8_t *in, size_t in_len,
                              size_t *out_len, kc_error_t *err)
{
    size_t produced = 0;
    kc_err_t rc;
    if (in_len < 16 || memcmp(in, xerial_magic, 8) != 0) {
        if ((rc = raw_block(ctx, in, in_len, &produced, err)) != KC_OK)
            return rc;
        *out_len = produced;
        return KC_OK;
    }
    size_t pos = 16; /* magic + version + compatible version, which we do not need */
    while (pos < in_len) {
        if (in_len - pos < 4)
            return kc_fail(err, KC_ERR_MALFORMED, "snappy: truncated xerial chunk length");
        uint32_t n = be32(in + pos);
        pos += 4;
        if (n > in_len - pos)
            return kc_fail(err, KC_ERR_MALFORMED,
                           "snappy: xerial chunk of %u bytes runs past the payload", n);
        if ((rc = raw_block(ctx, in + pos, n, &produced, err)) != KC_OK)
            return rc;
        pos += n;
    }
    *out_len = produced;
    return KC_OK;
}
