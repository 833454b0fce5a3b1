/*
 * Decode micro-benchmark for io/batch, one core:
 *   - CRC32C GB/s: slice-by-8 table, SSE4.2 single stream, SSE4.2 3-way interleave
 *   - memcpy GB/s: 1 MiB (in cache, like a batch just received) and 64 MiB (main memory)
 *   - uncompressed records/s through splitter + iterator (100-byte values), with and without CRC
 *   - decode MB/s (of decompressed output) for gzip, snappy (xerial), lz4, zstd on batches of
 *     JSON-like 1 KiB values, including the iteration over the decoded records
 *   - "zstd pure": ZSTD_decompress alone (no batch parsing, no record iteration) of a records
 *     section of 500 values, MB/s of values: the machine's floor for a zstd topic's CPU per
 *     record. With PAYLOAD-FILE the values are its lines (perf/run passes T2's documents, so
 *     the figure is for the same bytes), else the generated JSON-like values.
 * Usage: bench_decode [CPU-seconds-per-case, default 0.5] [PAYLOAD-FILE]. Single-threaded; times
 * are thread CPU time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "batch/batch.h"
#include "batch/crc32c.h"
#include "batch_builder.h"

static double secs = 0.5;
static volatile uint64_t sink;

/* CPU time of this thread, not wall time: the figures are per core, and on a shared machine
 * wall time would mostly measure the other tenants. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wall time, printed alongside: on an idle machine the two agree; the gap shows the load. */
static double wall0;
static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static double cpu_share(double cpu)
{
    return cpu / (wall() - wall0);
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static void bench_crc(const char *name, crc_fn f)
{
    size_t n = 1 << 20; /* 1 MiB: in L2/L3, like a batch just received */
    uint8_t *buf = malloc(n);
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)rnd();
    uint64_t bytes = 0;
    wall0 = wall();
    double t0 = now(), t;
    do {
        for (int i = 0; i < 16; i++)
            sink += f(0, buf, n);
        bytes += 16 * n;
    } while ((t = now() - t0) < secs);
    printf("crc32c %-14s %8.2f GB/s                 (cpu share %.2f)\n", name,
           (double)bytes / t / 1e9, cpu_share(t));
    free(buf);
}

static void bench_memcpy(size_t n)
{
    uint8_t *src = malloc(n), *dst = malloc(n);
    if (!src || !dst)
        abort();
    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)rnd();
    memcpy(dst, src, n); /* fault the pages in before the clock starts */
    uint64_t bytes = 0;
    wall0 = wall();
    double t0 = now(), t;
    do {
        memcpy(dst, src, n);
        sink += dst[bytes % n];
        bytes += n;
    } while ((t = now() - t0) < secs);
    printf("memcpy %4zu MiB        %8.2f GB/s                 (cpu share %.2f)\n", n >> 20,
           (double)bytes / t / 1e9, cpu_share(t));
    free(src);
    free(dst);
}

/* A JSON-ish document of about `size` bytes: field names repeat, values vary. */
static int json_value(char *out, size_t size, int i)
{
    static const char *words[] = {"alpha", "bravo", "charlie", "delta",  "echo", "foxtrot",
                                  "golf",  "hotel", "india",   "juliet", "kilo", "lima"};
    int n = snprintf(out, size,
                     "{\"id\":%d,\"ts\":%u,\"user\":{\"name\":\"%s %s\",\"age\":%u},"
                     "\"tags\":[",
                     i, 1700000000u + rnd() % 100000, words[rnd() % 12], words[rnd() % 12],
                     18 + rnd() % 60);
    while ((size_t)n < size - 40) {
        n += snprintf(out + n, size - (size_t)n, "{\"k\":\"%s\",\"v\":%u,\"ok\":%s},",
                      words[rnd() % 12], rnd() % 10000, rnd() % 2 ? "true" : "false");
    }
    n += snprintf(out + n, size - (size_t)n, "{}]}");
    return n;
}

/* Walks `buf` (one or more batches) and iterates every record; returns records seen. */
static uint64_t walk(kc_decode_ctx_t *ctx, const tb_buf_t *buf, bool verify)
{
    kc_batch_splitter_t sp;
    kc_batch_t b;
    kc_record_iter_t it;
    kc_record_t r;
    uint64_t n = 0;
    kc_batch_splitter_init_bytes(&sp, buf->p, buf->len, "bench", 0, verify);
    while (kc_batch_next(&sp, &b, NULL) == KC_OK) {
        if (kc_batch_records(ctx, &b, &it, NULL) != KC_OK)
            abort();
        while (kc_record_next(&it, &r, NULL) == KC_OK) {
            sink += (uint64_t)r.value_len + r.value[0];
            n++;
        }
    }
    return n;
}

static void bench_records(kc_decode_ctx_t *ctx, bool verify)
{
    /* 10 batches of 1000 records, 100-byte values, 8-byte keys: ~1.2 MB like one fetch. */
    tb_buf_t buf = {0};
    static char vals[1000][101];
    static tb_record_t rs[1000];
    for (int i = 0; i < 1000; i++) {
        for (int k = 0; k < 100; k++)
            vals[i][k] = (char)('a' + rnd() % 26);
        rs[i] = (tb_record_t){.ts_delta = i,
                              .off_delta = i,
                              .key = "key-0000",
                              .key_len = 8,
                              .value = vals[i],
                              .value_len = 100};
    }
    for (int b = 0; b < 10; b++)
        tb_batch(&buf, &(tb_batch_t){.base_offset = b * 1000}, rs, 1000);
    uint64_t recs = 0;
    wall0 = wall();
    double t0 = now(), t;
    do
        recs += walk(ctx, &buf, verify);
    while ((t = now() - t0) < secs);
    printf("records 100B %-10s %8.2f M records/s  (%.1f ns/record; cpu share %.2f)\n",
           verify ? "crc+iter" : "iter only", (double)recs / t / 1e6, t * 1e9 / (double)recs,
           cpu_share(t));
    tb_free(&buf);
}

static void bench_codec(kc_decode_ctx_t *ctx, const char *name, int codec)
{
    /* One batch of 500 x 1 KiB JSON values (~500 KiB decompressed), a typical producer batch. */
    static char vals[500][1100];
    static tb_record_t rs[500];
    size_t plain = 0;
    rng = 88172645463325252ull;
    for (int i = 0; i < 500; i++) {
        int n = json_value(vals[i], 1024, i);
        rs[i] = (tb_record_t){.off_delta = i, .value = vals[i], .value_len = n};
        plain += (size_t)n;
    }
    tb_buf_t buf = {0};
    tb_batch(&buf, &(tb_batch_t){.codec = codec}, rs, 500);
    uint64_t out = 0;
    wall0 = wall();
    double t0 = now(), t;
    do {
        if (walk(ctx, &buf, false) != 500)
            abort();
        out += plain;
    } while ((t = now() - t0) < secs);
    printf("decode %-8s %10.0f MB/s of values  (ratio %.1f, batch %zu -> %zu bytes; cpu share "
           "%.2f)\n",
           name, (double)out / t / 1e6, (double)plain / (double)buf.len, buf.len, plain,
           cpu_share(t));
    tb_free(&buf);
}

static void bench_zstd_pure(const char *payload_file)
{
    enum { N = 500, VMAX = 8192 };
    static char vals[N][VMAX];
    static tb_record_t rs[N];
    size_t plain = 0;
    FILE *f = payload_file ? fopen(payload_file, "r") : NULL;
    if (payload_file && !f) {
        printf("zstd pure: cannot open %s\n", payload_file);
        return;
    }
    rng = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        int n;
        if (f) {
            if (!fgets(vals[i], VMAX, f)) {
                rewind(f); /* fewer lines than values: cycle */
                if (!fgets(vals[i], VMAX, f)) {
                    printf("zstd pure: %s is empty\n", payload_file);
                    fclose(f);
                    return;
                }
            }
            n = (int)strcspn(vals[i], "\n");
        } else {
            n = json_value(vals[i], 1024, i);
        }
        rs[i] = (tb_record_t){.off_delta = i, .value = vals[i], .value_len = n};
        plain += (size_t)n;
    }
    if (f)
        fclose(f);
    tb_buf_t raw = {0}, comp = {0};
    for (int i = 0; i < N; i++)
        tb_record(&raw, &rs[i]);
    tb_compress(&comp, 4, false, raw.p, raw.len);
    uint8_t *dst = malloc(raw.len);
    if (!dst)
        abort();
    uint64_t out = 0;
    wall0 = wall();
    double t0 = now(), t;
    do {
        size_t r = ZSTD_decompress(dst, raw.len, comp.p, comp.len);
        if (ZSTD_isError(r) || r != raw.len)
            abort();
        sink += dst[r - 1];
        out += plain;
    } while ((t = now() - t0) < secs);
    printf("zstd pure %10.0f MB/s of values  (ZSTD_decompress only; %zu -> %zu bytes, %s; cpu "
           "share %.2f)\n",
           (double)out / t / 1e6, comp.len, raw.len,
           payload_file ? payload_file : "generated values", cpu_share(t));
    free(dst);
    tb_free(&raw);
    tb_free(&comp);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        secs = atof(argv[1]);
    bench_crc("table", kc_crc32c_sw);
    if (kc_crc32c_hw_available()) {
        bench_crc("sse4.2 x1", kc_crc32c_hw1);
        bench_crc("sse4.2 x3", kc_crc32c_hw3);
    } else {
        printf("crc32c sse4.2: not available on this CPU\n");
    }
    bench_memcpy((size_t)1 << 20);
    bench_memcpy((size_t)64 << 20);
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    bench_records(&ctx, false);
    bench_records(&ctx, true);
    bench_codec(&ctx, "none", 0);
    bench_codec(&ctx, "gzip", 1);
    bench_codec(&ctx, "snappy", 2);
    bench_codec(&ctx, "lz4", 3);
    bench_codec(&ctx, "zstd", 4);
    bench_zstd_pure(argc > 2 ? argv[2] : NULL);
    kc_decode_ctx_destroy(&ctx);
    return 0;
}
