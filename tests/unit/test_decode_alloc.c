/*
 * No decoder allocates more than the frame can justify. Every generated request and response
 * decoder, at every version, is fed frames built to claim huge element counts (int32 and
 * unsigned-varint counts at every offset, repeating nested counts, all-0xff); the memory the
 * decode allocates is measured twice: the arena's own count, and glibc's allocated-bytes figure
 * (mallinfo2, when the allocator is glibc's; ASan replaces it) around the call. Both must stay
 * under 64 × frame + 8 KiB (the fuzzers' bound). Decompression: a codec's claimed output size is
 * believed only as far as the compressed bytes can back it, and real output stops at
 * decompress.max.bytes.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "batch/compress/compress.h"
#include "kc_test.h"
#include "proto/proto.h"

#define BOUND(len) (64 * (size_t)(len) + 8192)

static int glibc_counts; /* mallinfo2 follows malloc here (not under ASan) */

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd; /* small chunks + mmapped large ones */
}

static int setup(void **state)
{
    (void)state;
    size_t a = heap_in_use();
    void *p = malloc(1 << 20);
    glibc_counts = heap_in_use() >= a + (1 << 20);
    free(p);
    return 0;
}

static double worst_ratio;
static char worst[96];

/* Decodes one frame and checks what it cost. */
static void one(const kc_proto_api_t *api, int request, int16_t v, const uint8_t *buf, size_t len)
{
    size_t size = request ? api->request_size : api->response_size;
    void *m = calloc(1, size);
    assert_non_null(m);
    kc_arena_t a = {0};
    kc_error_t err;
    kc_rbuf_t r = kc_rbuf(buf, len);
    size_t before = heap_in_use();
    kc_err_t rc = request ? api->decode_request(m, v, &r, &a, &err)
                          : api->decode_response(m, v, &r, &a, &err);
    size_t grew = glibc_counts ? heap_in_use() - before : 0;
    if (rc != KC_OK && !err.msg[0])
        fail_msg("%s v%d: a failure without a message", api->name, v);
    if (a.total > BOUND(len) || grew > BOUND(len))
        fail_msg("%s %s v%d: %zu-byte frame made the decoder allocate %zu (arena) / %zu (heap)",
                 api->name, request ? "request" : "response", v, len, a.total, grew);
    double ratio = (double)(a.total > grew ? a.total : grew) / (double)len;
    if (len >= 512 && ratio > worst_ratio) { /* below, the arena's first 4 KiB chunk dominates */
        worst_ratio = ratio;
        snprintf(worst, sizeof worst, "%s %s v%d, %zu bytes", api->name,
                 request ? "request" : "response", v, len);
    }
    kc_arena_free(&a);
    free(m);
}

static void frames_for(const kc_proto_api_t *api, int request, int16_t v)
{
    static const size_t lens[] = {8, 61, 512, 4096};
    uint8_t *buf = malloc(4096);
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t len = lens[li];
        static const uint8_t fills[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0xff};
        for (size_t f = 0; f < sizeof fills; f++) {
            memset(buf, fills[f], len);
            one(api, request, v, buf, len);
        }
        /* Repeating small counts: every nesting level claims as many elements as it can. */
        static const uint8_t reps[][4] = {
            {0, 0, 0, 2}, {0, 0, 0, 1}, {3, 3, 3, 3}, {2, 2, 2, 2}, {0, 1, 0, 1}};
        for (size_t p = 0; p < sizeof reps / sizeof reps[0]; p++) {
            for (size_t i = 0; i < len; i++)
                buf[i] = reps[p][i % 4];
            one(api, request, v, buf, len);
        }
        /* One huge count at each of the first offsets, in both encodings. */
        size_t last = len < 72 ? len : 72;
        for (size_t off = 0; off + 5 <= last; off++) {
            memset(buf, 0, len);
            memcpy(buf + off, "\x7f\xff\xff\xff", 4);
            one(api, request, v, buf, len);
            memset(buf, 0, len);
            memcpy(buf + off, "\xff\xff\xff\xff\x07", 5);
            one(api, request, v, buf, len);
            memset(buf, 1, len);
            memcpy(buf + off, "\x00\x10\x00\x00", 4);
            one(api, request, v, buf, len);
        }
    }
    free(buf);
}

static void every_decoder_allocates_within_the_frame(void **state)
{
    (void)state;
    int n = 0;
    for (size_t i = 0; i < KC_PROTO_API_COUNT; i++) {
        const kc_proto_api_t *api = &kc_proto_apis[i];
        for (int16_t v = api->min_version; v <= api->max_version; v++) {
            frames_for(api, 1, v);
            frames_for(api, 0, v);
            n += 2;
        }
    }
    print_message("# %d decoders (API, version, direction); worst allocation %.1f× the frame (%s);"
                  " heap measured too: %s\n",
                  n, worst_ratio, worst, glibc_counts ? "yes" : "no (not glibc's malloc)");
    assert_true(n > 100);
}

/* ---- decompression ------------------------------------------------------------------------ */

static void snappy_claim_beyond_its_bytes_is_refused_before_allocating(void **state)
{
    (void)state;
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    /* raw block: varint uncompressed length 60 MiB, then a few bytes */
    uint8_t in[] = {0x80, 0x80, 0x80, 0x1e, 0x00, 0x61, 0x62};
    const uint8_t *out;
    size_t out_len;
    kc_error_t e;
    assert_int_equal(kc_decompress(&ctx, KC_CODEC_SNAPPY, in, sizeof in, &out, &out_len, &e),
                     KC_ERR_MALFORMED);
    assert_non_null(strstr(e.msg, "claims 62914560 decompressed"));
    assert_int_equal(ctx.out_cap, 0);
    kc_decode_ctx_destroy(&ctx);
}

static void zstd_header_claim_is_capped_by_the_frame(void **state)
{
    (void)state;
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    /* magic, FHD 0xE0 (single segment, 8-byte content size), content size 60 MiB, one last raw
     * block of 5 bytes: a header that lies about the size. */
    uint8_t in[4 + 1 + 8 + 3 + 5] = {0x28, 0xb5, 0x2f, 0xfd, 0xe0};
    uint64_t claim = (uint64_t)60 << 20;
    for (int i = 0; i < 8; i++)
        in[5 + i] = (uint8_t)(claim >> (8 * i));
    in[13] = 0x29; /* last block, raw, size 5 */
    memcpy(in + 16, "hello", 5);
    const uint8_t *out;
    size_t out_len;
    kc_error_t e;
    size_t before = heap_in_use();
    kc_err_t rc = kc_decompress(&ctx, KC_CODEC_ZSTD, in, sizeof in, &out, &out_len, &e);
    size_t grew = glibc_counts ? heap_in_use() - before : 0;
    assert_int_not_equal(rc, KC_OK); /* the size does not match: corrupt */
    assert_true(grew < ((size_t)1 << 20));
    print_message("# zstd, 60 MiB claimed by a %zu-byte frame: buffer %zu bytes: %s\n", sizeof in,
                  ctx.out_cap, rc == KC_OK ? "decoded" : e.msg);
    assert_true(ctx.out_cap <= 2 * (sizeof in * 32 + (64 << 10))); /* doubling from 64 KiB */
    kc_decode_ctx_destroy(&ctx);
}

/* The window a frame declares is memory zstd allocates for it: a 5-byte frame declaring the
 * largest window we accept must not cost that window. */
static void zstd_declared_window_is_not_allocated_blindly(void **state)
{
    (void)state;
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    /* magic, FHD 0 (window descriptor, no content size), window 2^27, last raw block "hello" */
    uint8_t in[] = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 17 << 3, 0x29, 0, 0, 'h', 'e', 'l', 'l', 'o'};
    const uint8_t *out;
    size_t out_len;
    kc_error_t e;
    size_t before = heap_in_use();
    kc_err_t rc = kc_decompress(&ctx, KC_CODEC_ZSTD, in, sizeof in, &out, &out_len, &e);
    size_t grew = glibc_counts ? heap_in_use() - before : 0;
    print_message("# zstd, window 2^27 declared by a %zu-byte frame: %s, heap grew %zu bytes\n",
                  sizeof in, rc == KC_OK ? "decoded" : e.msg, grew);
    assert_int_equal(rc, KC_OK);
    assert_int_equal(out_len, 5);
    assert_true(grew < ((size_t)8 << 20));
    kc_decode_ctx_destroy(&ctx);
}

/* Real bombs (8 MiB of zeros in a few KiB) stop at the configured bound. */
static void bombs_stop_at_the_bound(void **state)
{
    (void)state;
    size_t big = (size_t)8 << 20, cap = (size_t)1 << 20;
    uint8_t *zeros = calloc(1, big);
    /* gzip */
    z_stream zs = {0};
    assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY), Z_OK);
    size_t gcap = deflateBound(&zs, big);
    uint8_t *gz = malloc(gcap);
    zs.next_in = zeros;
    zs.avail_in = (uInt)big;
    zs.next_out = gz;
    zs.avail_out = (uInt)gcap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t glen = zs.total_out;
    deflateEnd(&zs);
    /* zstd */
    size_t zcap = ZSTD_compressBound(big);
    uint8_t *zz = malloc(zcap);
    size_t zlen = ZSTD_compress(zz, zcap, zeros, big, 3);
    assert_false(ZSTD_isError(zlen));
    struct {
        int codec;
        const uint8_t *in;
        size_t len;
    } bombs[] = {{KC_CODEC_GZIP, gz, glen}, {KC_CODEC_ZSTD, zz, zlen}};
    for (size_t i = 0; i < 2; i++) {
        kc_decode_ctx_t ctx;
        kc_decode_ctx_init(&ctx, cap);
        const uint8_t *out;
        size_t out_len;
        kc_error_t e;
        assert_int_equal(
            kc_decompress(&ctx, bombs[i].codec, bombs[i].in, bombs[i].len, &out, &out_len, &e),
            KC_ERR_TOO_LARGE);
        assert_true(ctx.out_cap <= cap);
        print_message("# codec %d: %zu-byte bomb stopped at %zu bytes: %s\n", bombs[i].codec,
                      bombs[i].len, ctx.out_cap, e.msg);
        kc_decode_ctx_destroy(&ctx);
    }
    free(zz);
    free(gz);
    free(zeros);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_decoder_allocates_within_the_frame),
        cmocka_unit_test(snappy_claim_beyond_its_bytes_is_refused_before_allocating),
        cmocka_unit_test(zstd_header_claim_is_capped_by_the_frame),
        cmocka_unit_test(zstd_declared_window_is_not_allocated_blindly),
        cmocka_unit_test(bombs_stop_at_the_bound),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
