/* Codecs: round trips through a reused per-thread context, the output bound (bombs stop at it and
 * the buffer never grows past it), and corrupt or truncated input reported as errors. */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roundtrip),
        cmocka_unit_test(bombs_stop_at_bound),
        cmocka_unit_test(corrupt_and_truncated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
