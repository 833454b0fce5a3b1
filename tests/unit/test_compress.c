/* Codecs: round trips through a reused per-thread context, the output bound (bombs stop at it and
 * the buffer never grows past it), and corrupt or truncated input reported as errors. */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "batch/compress/compress.h"
#include "batch_builder.h"

static const char *names[] = {"none", "gzip", "snappy", "lz4", "zstd"};

static uint8_t *json_like(size_t n)
{
    uint8_t *p = malloc(n);
    assert_non_null(p);
    uint32_t x = 12345;
    for (size_t i = 0; i < n;) {
        x = x * 1103515245u + 12345u;
        int len = snprintf((char *)p + i, n - i, "{\"id\":%u,\"name\":\"user-%u\",\"ok\":true},",
                           x % 100000, (x >> 8) % 977);
        if (len <= 0 || (size_t)len >= n - i)
            break;
        i += (size_t)len;
    }
    return p;
}

static void roundtrip(void **state)
{
    (void)state;
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    size_t sizes[] = {0, 1, 100, 4096, 70000, 300000};
    for (int pass = 0; pass < 2; pass++) /* second pass: every context reused */
        for (int codec = 0; codec <= 4; codec++)
            for (int raw = 0; raw < (codec == 2 ? 2 : 1); raw++)
                for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                    uint8_t *in = json_like(sizes[s] + 1);
                    tb_buf_t c = {0};
                    tb_compress(&c, codec, raw, in, sizes[s]);
                    const uint8_t *out;
                    size_t out_len;
                    kc_error_t err;
                    kc_err_t rc = kc_decompress(&ctx, codec, c.p, c.len, &out, &out_len, &err);
                    if (rc != KC_OK)
                        fail_msg("%s size %zu: %s", names[codec], sizes[s], err.msg);
                    assert_int_equal(out_len, sizes[s]);
                    if (sizes[s])
                        assert_memory_equal(out, in, sizes[s]);
                    tb_free(&c);
                    free(in);
                }
    kc_decode_ctx_destroy(&ctx);
}

static void bombs_stop_at_bound(void **state)
{
    (void)state;
    const size_t bound = 1 << 20;
    const size_t big = 64u << 20; /* 64 MiB of zeros compresses to almost nothing */
    uint8_t *zeros = calloc(1, big);
    assert_non_null(zeros);
    for (int codec = 1; codec <= 4; codec++)
        for (int raw = 0; raw < (codec == 2 ? 2 : 1); raw++) {
            tb_buf_t c = {0};
            tb_compress(&c, codec, raw, zeros, big);
            assert_true(c.len < big / 20);
            kc_decode_ctx_t ctx;
            kc_decode_ctx_init(&ctx, bound);
            const uint8_t *out;
            size_t out_len;
            kc_error_t err;
            kc_err_t rc = kc_decompress(&ctx, codec, c.p, c.len, &out, &out_len, &err);
            assert_int_equal(rc, KC_ERR_TOO_LARGE);
            assert_true(ctx.out_cap <= bound);
            /* Exactly the bound is allowed. */
            tb_buf_t d = {0};
            tb_compress(&d, codec, raw, zeros, bound);
            rc = kc_decompress(&ctx, codec, d.p, d.len, &out, &out_len, &err);
            if (rc != KC_OK)
                fail_msg("%s at the bound: %s", names[codec], err.msg);
            assert_int_equal(out_len, bound);
            kc_decode_ctx_destroy(&ctx);
            tb_free(&c);
            tb_free(&d);
        }
    free(zeros);
}

static void corrupt_and_truncated(void **state)
{
    (void)state;
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    uint8_t *in = json_like(50000);
    for (int codec = 1; codec <= 4; codec++)
        for (int raw = 0; raw < (codec == 2 ? 2 : 1); raw++) {
            tb_buf_t c = {0};
            tb_compress(&c, codec, raw, in, 50000);
            const uint8_t *out;
            size_t out_len;
            kc_error_t err;
            /* Truncated at several points: never OK with the full data. */
            size_t cuts[] = {0, 1, 5, c.len / 2, c.len - 1};
            for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
                kc_err_t rc = kc_decompress(&ctx, codec, c.p, cuts[i], &out, &out_len, &err);
                if (rc == KC_OK && out_len == 50000 && memcmp(out, in, 50000) == 0)
                    fail_msg("%s cut at %zu decoded in full", names[codec], cuts[i]);
                if (rc != KC_ERR_MALFORMED)
                    fail_msg("%s raw=%d cut at %zu: rc %d", names[codec], raw, cuts[i], rc);
            }
            /* Garbage in the middle. */
            for (size_t i = c.len / 3; i < c.len / 3 + 16 && i < c.len; i++)
                c.p[i] ^= 0x5a;
            kc_err_t rc = kc_decompress(&ctx, codec, c.p, c.len, &out, &out_len, &err);
            assert_false(rc == KC_OK && out_len == 50000 && memcmp(out, in, 50000) == 0);
            tb_free(&c);
        }
    /* The context still works after all those errors. */
    tb_buf_t c = {0};
    tb_compress(&c, 4, false, in, 50000);
    const uint8_t *out;
    size_t out_len;
    assert_int_equal(kc_decompress(&ctx, 4, c.p, c.len, &out, &out_len, NULL), KC_OK);
    assert_memory_equal(out, in, 50000);
    assert_int_equal(kc_decompress(&ctx, 7, c.p, c.len, &out, &out_len, NULL), KC_ERR_UNSUPPORTED);
    tb_free(&c);
    free(in);
    kc_decode_ctx_destroy(&ctx);
}

/* A zstd frame as Java's producers write it: streamed, so its header has no content size. */
static size_t zstd_streamed(const uint8_t *in, size_t len, uint8_t **frame)
{
    size_t cap = ZSTD_compressBound(len);
    *frame = malloc(cap);
    assert_non_null(*frame);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    assert_non_null(cc);
    /* A checksum, so that corrupt input cannot decode to wrong bytes without an error. */
    assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)));
    /* In 64 KiB pieces, as a stream is written: given all at once with ZSTD_e_end, zstd would
     * know the size and put it in the header. */
    ZSTD_outBuffer ob = {*frame, cap, 0};
    for (size_t off = 0; off < len; off += 65536) {
        ZSTD_inBuffer ib = {in + off, len - off < 65536 ? len - off : 65536, 0};
        while (ib.pos < ib.size)
            assert_false(ZSTD_isError(ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_continue)));
    }
    ZSTD_inBuffer none = {NULL, 0, 0};
    size_t left;
    do {
        left = ZSTD_compressStream2(cc, &ob, &none, ZSTD_e_end);
        assert_false(ZSTD_isError(left));
    } while (left != 0);
    ZSTD_freeCCtx(cc);
    assert_true(ZSTD_getFrameContentSize(*frame, ob.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
    return ob.pos;
}

/* A streamed zstd frame decodes straight into the output buffer once the buffer is big enough:
 * the DCtx grows no window buffer of its own (a streaming decode would allocate the frame's 2 MiB
 * window and copy every byte out of it). A buffer too small for the frame, and a cold one, still
 * decode it (the streaming path); the bound still holds. */
static void zstd_streamed_frames(void **state)
{
    (void)state;
    const size_t big = 600000, small = 100000;
    uint8_t *in = json_like(big);
    uint8_t *z;
    size_t zlen = zstd_streamed(in, big, &z);
    const uint8_t *out;
    size_t out_len;
    kc_error_t err;

    /* Control: a cold context decodes the frame through the streaming path, whose window the
     * DCtx allocates (so the frame is one the old path streamed, not one it decoded in one shot
     * for a window its size cannot justify). */
    ZSTD_DCtx *fresh = ZSTD_createDCtx();
    size_t fresh_size = ZSTD_sizeof_DCtx(fresh);
    ZSTD_freeDCtx(fresh);
    kc_decode_ctx_t cold;
    kc_decode_ctx_init(&cold, 0);
    assert_int_equal(kc_decompress(&cold, 4, z, zlen, &out, &out_len, NULL), KC_OK);
    assert_int_equal(out_len, big);
    assert_memory_equal(out, in, big);
    if (ZSTD_sizeof_DCtx(cold.zstd) < fresh_size + ((size_t)1 << 20))
        fail_msg("a cold decode did not stream (DCtx %zu bytes, fresh %zu)",
                 ZSTD_sizeof_DCtx(cold.zstd), fresh_size);
    kc_decode_ctx_destroy(&cold);

    /* Warm: a sized frame of the same length grows the buffer (the DCtx decodes it in one pass). */
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    tb_buf_t sized = {0};
    tb_compress(&sized, 4, false, in, big);
    assert_int_equal(kc_decompress(&ctx, 4, sized.p, sized.len, &out, &out_len, NULL), KC_OK);
    size_t before = ZSTD_sizeof_DCtx(ctx.zstd);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kc_decompress(&ctx, 4, z, zlen, &out, &out_len, NULL), KC_OK);
        assert_int_equal(out_len, big);
        assert_memory_equal(out, in, big);
    }
    size_t after = ZSTD_sizeof_DCtx(ctx.zstd);
    if (after > before + (64 << 10))
        fail_msg("the DCtx grew from %zu to %zu bytes: the frame went through its window", before,
                 after);
    kc_decode_ctx_destroy(&ctx);

    /* A buffer sized by a smaller batch, and a cold one: the frame still decodes in full. */
    for (int warm = 0; warm < 2; warm++) {
        kc_decode_ctx_init(&ctx, 0);
        tb_buf_t s = {0};
        tb_compress(&s, 4, false, in, small);
        if (warm)
            assert_int_equal(kc_decompress(&ctx, 4, s.p, s.len, &out, &out_len, NULL), KC_OK);
        assert_int_equal(kc_decompress(&ctx, 4, z, zlen, &out, &out_len, NULL), KC_OK);
        assert_int_equal(out_len, big);
        assert_memory_equal(out, in, big);
        tb_free(&s);
        kc_decode_ctx_destroy(&ctx);
    }

    /* The bound: a warm buffer at max_out, and a frame that decodes past it. */
    kc_decode_ctx_init(&ctx, small);
    tb_buf_t s = {0};
    tb_compress(&s, 4, false, in, small);
    assert_int_equal(kc_decompress(&ctx, 4, s.p, s.len, &out, &out_len, NULL), KC_OK);
    assert_int_equal(kc_decompress(&ctx, 4, z, zlen, &out, &out_len, &err), KC_ERR_TOO_LARGE);
    assert_true(ctx.out_cap <= small);
    tb_free(&s);
    kc_decode_ctx_destroy(&ctx);

    /* Corrupt and truncated streamed frames fail with a clear error through the one-shot path. */
    kc_decode_ctx_init(&ctx, 0);
    assert_int_equal(kc_decompress(&ctx, 4, sized.p, sized.len, &out, &out_len, NULL), KC_OK);
    assert_int_equal(kc_decompress(&ctx, 4, z, zlen / 2, &out, &out_len, &err), KC_ERR_MALFORMED);
    if (!strstr(err.msg, "truncated"))
        fail_msg("truncated frame: %s", err.msg);
    for (size_t i = zlen / 3; i < zlen / 3 + 16; i++)
        z[i] ^= 0x5a;
    assert_int_equal(kc_decompress(&ctx, 4, z, zlen, &out, &out_len, &err), KC_ERR_MALFORMED);
    kc_decode_ctx_destroy(&ctx);
    tb_free(&sized);
    free(z);
    free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roundtrip),
        cmocka_unit_test(bombs_stop_at_bound),
        cmocka_unit_test(corrupt_and_truncated),
        cmocka_unit_test(zstd_streamed_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
