/* Record batches: every fixture written by Kafka's own MemoryRecordsBuilder decodes to exactly
 * what Kafka's reader saw (tests/fixtures/batches/manifest.txt); read_committed filtering matches
 * Java's algorithm; truncation, CRC damage, corrupt records and v0/v1 entries are reported with
 * the offset range and iteration continues after them. */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/batch.h"
#include "batch/crc32c.h"
#include "batch_builder.h"

static uint8_t *load(const char *rel, size_t *len)
{
    FILE *f = fopen(kc_test_src_path(rel), "rb");
    if (!f)
        fail_msg("cannot open %s", kc_test_src_path(rel));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)n + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    p[n] = 0;
    *len = (size_t)n;
    return p;
}

/* Compares a view with a manifest field: "-" null, "=" empty, "#len:crc" long, else hex. */
static void check_field(const char *spec, const uint8_t *p, int32_t len, const char *what,
                        int64_t off)
{
    if (strcmp(spec, "-") == 0) {
        if (len != -1 || p != NULL)
            fail_msg("offset %lld %s: want null, got %d bytes", (long long)off, what, len);
        return;
    }
    if (len < 0)
        fail_msg("offset %lld %s: want %s, got null", (long long)off, what, spec);
    if (strcmp(spec, "=") == 0) {
        assert_int_equal(len, 0);
        return;
    }
    if (spec[0] == '#') {
        unsigned long want_len;
        unsigned want_crc;
        assert_int_equal(sscanf(spec, "#%lu:%x", &want_len, &want_crc), 2);
        assert_int_equal((unsigned long)len, want_len);
        assert_int_equal(kc_crc32c(0, p, (size_t)len), want_crc);
        return;
    }
    size_t hl = strlen(spec);
    if (hl != (size_t)len * 2)
        fail_msg("offset %lld %s: want %zu bytes, got %d", (long long)off, what, hl / 2, len);
    for (int32_t i = 0; i < len; i++) {
        unsigned b;
        sscanf(spec + 2 * i, "%2x", &b);
        if (p[i] != b)
            fail_msg("offset %lld %s: byte %d differs", (long long)off, what, i);
    }
}

typedef struct walk {
    const char *name;
    uint8_t *data;
    size_t len;
    kc_batch_splitter_t sp;
    kc_batch_t b;
    kc_record_iter_t it;
    bool in_batch;
    kc_aborted_txn_t aborted[8];
    size_t n_aborted;
    int batches, records;
} walk_t;

static void finish_batch(walk_t *w)
{
    if (!w->in_batch)
        return;
    kc_record_t r;
    kc_error_t err;
    kc_err_t rc = kc_record_next(&w->it, &r, &err);
    if (rc != KC_ERR_NOT_FOUND)
        fail_msg("%s: batch %lld has more records than Kafka saw (%d: %s)", w->name,
                 (long long)w->b.h.base_offset, rc, err.msg);
    w->in_batch = false;
}

static void manifest_matches_kafka(void **state)
{
    (void)state;
    size_t mlen;
    char *m = (char *)load("tests/fixtures/batches/manifest.txt", &mlen);
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    walk_t w = {0};
    int files = 0, total_records = 0;
    char path[256];
    for (char *save = NULL, *line = strtok_r(m, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        kc_error_t err;
        if (strncmp(line, "file ", 5) == 0) {
            w = (walk_t){.name = line + 5};
            snprintf(path, sizeof path, "tests/fixtures/batches/%s", w.name);
            w.data = load(path, &w.len);
            kc_batch_splitter_init_bytes(&w.sp, w.data, w.len, "t", 3, true);
            files++;
        } else if (strncmp(line, "aborted ", 8) == 0) {
            long long pid, first;
            assert_int_equal(sscanf(line, "aborted %lld %lld", &pid, &first), 2);
            w.aborted[w.n_aborted++] = (kc_aborted_txn_t){pid, first};
        } else if (strncmp(line, "batch ", 6) == 0) {
            finish_batch(&w);
            long long base, last, pid, maxts;
            int codec, tstype, txn, control, epoch, count;
            assert_int_equal(sscanf(line, "batch %lld %lld %d %d %d %d %lld %d %d %lld", &base,
                                    &last, &codec, &tstype, &txn, &control, &pid, &epoch, &count,
                                    &maxts),
                             10);
            kc_err_t rc = kc_batch_next(&w.sp, &w.b, &err);
            if (rc != KC_OK)
                fail_msg("%s batch %lld: %s", w.name, base, err.msg);
            assert_int_equal(w.b.h.base_offset, base);
            assert_int_equal(kc_batch_last_offset(&w.b), last);
            assert_int_equal(kc_batch_codec(&w.b), codec);
            assert_int_equal(kc_batch_timestamp_type(&w.b), tstype);
            assert_int_equal(kc_batch_is_transactional(&w.b), txn);
            assert_int_equal(kc_batch_is_control(&w.b), control);
            assert_int_equal(w.b.h.producer_id, pid);
            assert_int_equal(w.b.h.producer_epoch, epoch);
            assert_int_equal(w.b.h.record_count, count);
            assert_int_equal(w.b.h.max_timestamp, maxts);
            assert_int_equal(w.b.h.magic, 2);
            assert_int_equal(w.b.h.partition_leader_epoch, 7);
            rc = kc_batch_records(&ctx, &w.b, &w.it, &err);
            if (rc != KC_OK)
                fail_msg("%s batch %lld: %s", w.name, base, err.msg);
            w.in_batch = true;
            w.batches++;
        } else if (strncmp(line, "record ", 7) == 0) {
            long long off, ts;
            int nh, pos;
            char key[512], val[512];
            assert_int_equal(
                sscanf(line, "record %lld %lld %511s %511s %d%n", &off, &ts, key, val, &nh, &pos),
                5);
            kc_record_t r;
            kc_err_t rc = kc_record_next(&w.it, &r, &err);
            if (rc != KC_OK)
                fail_msg("%s offset %lld: %d %s", w.name, off, rc, err.msg);
            assert_int_equal(r.offset, off);
            assert_int_equal(r.timestamp, ts);
            check_field(key, r.key, r.key_len, "key", off);
            check_field(val, r.value, r.value_len, "value", off);
            assert_int_equal(r.header_count, nh);
            /* Views: uncompressed batches point into the fixture, compressed into ctx.out. */
            if (r.value_len > 0) {
                const uint8_t *lo = kc_batch_codec(&w.b) ? ctx.out : w.data;
                size_t n = kc_batch_codec(&w.b) ? ctx.out_cap : w.len;
                assert_true(r.value >= lo && r.value + r.value_len <= lo + n);
            }
            kc_header_iter_t hi;
            kc_record_headers(&r, &hi);
            const char *rest = line + pos;
            for (int i = 0; i < nh; i++) {
                char hk[256], hv[256];
                kc_record_header_t h;
                int used;
                assert_int_equal(sscanf(rest, " %255[^=]=%255s%n", hk, hv, &used), 2);
                rest += used;
                assert_true(kc_header_next(&hi, &h));
                check_field(hk, h.key, h.key_len, "header key", off);
                check_field(hv, h.value, h.value_len, "header value", off);
            }
            kc_record_header_t h;
            assert_false(kc_header_next(&hi, &h));
            w.records++;
            total_records++;
        } else if (strcmp(line, "end") == 0) {
            finish_batch(&w);
            kc_batch_t b;
            assert_int_equal(kc_batch_next(&w.sp, &b, &err), KC_ERR_NOT_FOUND);
            assert_int_equal(w.sp.truncated_bytes, 0);
            assert_true(w.batches > 0);
            free(w.data);
        }
    }
    assert_int_equal(files, 7);
    /* 6+20 (none), 4 x (6+100), 4 (logappend), 12 (txn) */
    assert_int_equal(total_records, 466);
    kc_decode_ctx_destroy(&ctx);
    free(m);
}

/* txn.bin, aborted = [(42, 0)]: Java delivers 3..4 (43 committed), 7..8 (42's next txn),
 * 10..11 (idempotent, non-transactional); skips 0..2 (aborted) and every control batch. */
static void read_committed(void **state)
{
    (void)state;
    size_t len;
    uint8_t *d = load("tests/fixtures/batches/txn.bin", &len);
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    kc_aborted_txn_t ab[] = {{42, 0}};
    kc_txn_filter_t f;
    kc_txn_filter_init(&f, ab, 1, &ctx);
    kc_batch_splitter_t sp;
    kc_batch_splitter_init_bytes(&sp, d, len, "t", 0, true);
    kc_batch_t b;
    int64_t delivered[8];
    int nd = 0, controls = 0;
    while (kc_batch_next(&sp, &b, NULL) == KC_OK) {
        if (kc_batch_is_control(&b)) {
            kc_control_t c;
            assert_int_equal(kc_batch_control(&ctx, &b, &c, NULL), KC_OK);
            assert_int_equal(c.version, 0);
            assert_int_equal(c.type, b.h.base_offset == 5 ? KC_CONTROL_ABORT : KC_CONTROL_COMMIT);
            assert_int_equal(c.offset, b.h.base_offset);
            controls++;
        }
        if (!kc_txn_filter_skip(&f, &b))
            delivered[nd++] = b.h.base_offset;
    }
    assert_int_equal(controls, 3);
    assert_int_equal(nd, 3);
    assert_int_equal(delivered[0], 3);
    assert_int_equal(delivered[1], 7);
    assert_int_equal(delivered[2], 10);

    /* Without the ABORT marker removing 42, its later transaction would be skipped too: check the
     * set really drives the decision by giving a second aborted range for 42 at 7. */
    kc_aborted_txn_t ab2[] = {{42, 7}, {42, 0}}; /* unsorted on purpose */
    kc_txn_filter_init(&f, ab2, 2, &ctx);
    kc_batch_splitter_init_bytes(&sp, d, len, "t", 0, true);
    nd = 0;
    while (kc_batch_next(&sp, &b, NULL) == KC_OK)
        if (!kc_txn_filter_skip(&f, &b))
            delivered[nd++] = b.h.base_offset;
    assert_int_equal(nd, 2);
    assert_int_equal(delivered[0], 3);
    assert_int_equal(delivered[1], 10);

    /* read_uncommitted sees every data batch, transactional ones flagged. */
    kc_batch_splitter_init_bytes(&sp, d, len, "t", 0, true);
    int data = 0, txn = 0;
    while (kc_batch_next(&sp, &b, NULL) == KC_OK)
        if (!kc_batch_is_control(&b)) {
            data++;
            txn += kc_batch_is_transactional(&b);
        }
    assert_int_equal(data, 4);
    assert_int_equal(txn, 3);
    kc_decode_ctx_destroy(&ctx);
    free(d);
}

/* Cut every fixture at many lengths: the splitter yields exactly the whole batches before the cut
 * and reports the rest as truncated, never as an error. */
static void truncated_tail(void **state)
{
    (void)state;
    const char *files[] = {"none.bin", "gzip.bin", "snappy.bin", "lz4.bin", "zstd.bin", "txn.bin"};
    char path[128];
    for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
        snprintf(path, sizeof path, "tests/fixtures/batches/%s", files[fi]);
        size_t len;
        uint8_t *d = load(path, &len);
        size_t ends[16];
        int ne = 0;
        kc_batch_splitter_t sp;
        kc_batch_t b;
        kc_batch_splitter_init_bytes(&sp, d, len, "t", 0, true);
        while (kc_batch_next(&sp, &b, NULL) == KC_OK)
            ends[ne++] = (size_t)(b.data + b.size - d);
        size_t step = len < 2000 ? 1 : 13;
        for (size_t cut = 0; cut <= len; cut += step) {
            uint8_t *copy = malloc(cut + 1); /* exact size so ASan sees any overread */
            memcpy(copy, d, cut);
            kc_batch_splitter_init_bytes(&sp, copy, cut, "t", 0, true);
            int n = 0;
            kc_err_t rc;
            kc_error_t err;
            while ((rc = kc_batch_next(&sp, &b, &err)) == KC_OK)
                n++;
            if (rc != KC_ERR_NOT_FOUND)
                fail_msg("%s cut %zu: %s", files[fi], cut, err.msg);
            int want = 0;
            while (want < ne && ends[want] <= cut)
                want++;
            assert_int_equal(n, want);
            assert_int_equal(sp.truncated_bytes, cut - (want ? ends[want - 1] : 0));
            free(copy);
        }
        free(d);
    }
}

static void crc_damage_is_reported_and_skipped(void **state)
{
    (void)state;
    size_t len;
    uint8_t *d = load("tests/fixtures/batches/gzip.bin", &len);
    d[100] ^= 0x01; /* inside the first batch's compressed records */
    kc_batch_splitter_t sp;
    kc_batch_t b;
    kc_error_t err;
    kc_batch_splitter_init_bytes(&sp, d, len, "orders", 3, true);
    assert_int_equal(kc_batch_next(&sp, &b, &err), KC_ERR_CRC);
    assert_int_equal(err.code, KC_ERR_CRC);
    assert_true(b.header_ok);
    assert_int_equal(kc_batch_last_offset(&b), 105);
    assert_non_null(strstr(err.msg, "orders[3] offsets 100..105"));
    assert_false(sp.stopped);
    assert_int_equal(kc_batch_next(&sp, &b, &err), KC_OK);
    assert_int_equal(b.h.base_offset, 106);
    /* With verification off the damage reaches the codec or the records instead, still with
     * the offsets, or it goes unnoticed: never a crash. */
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    kc_batch_splitter_init_bytes(&sp, d, len, "orders", 3, false);
    assert_int_equal(kc_batch_next(&sp, &b, &err), KC_OK);
    kc_record_iter_t it;
    kc_err_t rc = kc_batch_records(&ctx, &b, &it, &err);
    if (rc != KC_OK)
        assert_non_null(strstr(err.msg, "orders[3] offsets 100..105"));
    kc_decode_ctx_destroy(&ctx);
    free(d);
}

static void bad_framing_stops(void **state)
{
    (void)state;
    tb_buf_t buf = {0};
    tb_record_t r = {.key = "k", .key_len = 1, .value = "v", .value_len = 1};
    tb_batch(&buf, &(tb_batch_t){.base_offset = 10}, &r, 1);
    tb_batch(&buf, &(tb_batch_t){.base_offset = 11}, &r, 1);
    buf.p[8 + 3] = 20; /* batchLength 20 < 49 */
    kc_batch_splitter_t sp;
    kc_batch_t b;
    kc_error_t err;
    kc_batch_splitter_init_bytes(&sp, buf.p, buf.len, "t", 1, true);
    assert_int_equal(kc_batch_next(&sp, &b, &err), KC_ERR_MALFORMED);
    assert_true(sp.stopped);
    assert_int_equal(kc_batch_next(&sp, &b, &err), KC_ERR_NOT_FOUND);
    buf.p[8 + 3] = 0;
    buf.p[16] = 9; /* unknown magic */
    kc_batch_splitter_init_bytes(&sp, buf.p, buf.len, "t", 1, true);
    assert_int_equal(kc_batch_next(&sp, &b, &err), KC_ERR_MALFORMED);
    assert_non_null(strstr(err.msg, "magic 9"));
    tb_free(&buf);
}

static void old_magic_is_skipped(void **state)
{
    (void)state;
    /* A v1 message: offset 50, size, crc, magic 1, attributes 0, timestamp, key null, "abc". */
    static const uint8_t v1[] = {0,    0,    0,    0,    0, 0, 0, 50, 0,    0,    0,    25,   0xde,
                                 0xad, 0xbe, 0xef, 1,    0, 0, 0, 1,  0x8b, 0xcf, 0xe5, 0x68, 0,
                                 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 3,  'a',  'b',  'c'};
    tb_buf_t buf = {0};
    tb_put(&buf, v1, sizeof v1);
    tb_record_t r = {.value = "v", .value_len = 1};
    tb_batch(&buf, &(tb_batch_t){.base_offset = 51}, &r, 1);
    kc_batch_splitter_t sp;
    kc_batch_t b;
    kc_error_t err;
    kc_batch_splitter_init_bytes(&sp, buf.p, buf.len, "legacy", 0, true);
    assert_int_equal(kc_batch_next(&sp, &b, &err), KC_ERR_UNSUPPORTED);
    assert_true(b.header_ok);
    assert_int_equal(kc_batch_last_offset(&b), 50);
    assert_non_null(strstr(err.msg, "legacy[0] offset 50"));
    assert_int_equal(kc_batch_next(&sp, &b, &err), KC_OK);
    assert_int_equal(b.h.base_offset, 51);
    tb_free(&buf);
}

/* A batch whose records section is `raw` (claimed count `count`) followed by a good batch: the
 * first fails in kc_record_next with the offsets named, the second still decodes. */
static void expect_bad_records(int codec, const uint8_t *raw, size_t raw_len, int n, int count,
                               const char *needle)
{
    tb_buf_t buf = {0};
    tb_batch(&buf,
             &(tb_batch_t){.base_offset = 1000,
                           .codec = codec,
                           .raw_records = raw,
                           .raw_records_len = raw_len,
                           .count_override = count},
             NULL, n);
    tb_record_t ok = {.value = "fine", .value_len = 4};
    tb_batch(&buf, &(tb_batch_t){.base_offset = 1000 + n, .codec = codec}, &ok, 1);
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    kc_batch_splitter_t sp;
    kc_batch_t b;
    kc_record_iter_t it;
    kc_record_t r;
    kc_error_t err;
    kc_batch_splitter_init_bytes(&sp, buf.p, buf.len, "t", 9, true);
    assert_int_equal(kc_batch_next(&sp, &b, &err), KC_OK);
    assert_int_equal(kc_batch_records(&ctx, &b, &it, &err), KC_OK);
    kc_err_t rc;
    while ((rc = kc_record_next(&it, &r, &err)) == KC_OK)
        ;
    assert_int_equal(rc, KC_ERR_MALFORMED);
    char want[64];
    snprintf(want, sizeof want, "t[9] offsets 1000..%d", 1000 + (n > 0 ? n - 1 : 0));
    if (!strstr(err.msg, want) || !strstr(err.msg, needle))
        fail_msg("codec %d: message '%s' lacks '%s' / '%s'", codec, err.msg, want, needle);
    assert_int_equal(kc_batch_next(&sp, &b, &err), KC_OK);
    assert_int_equal(kc_batch_records(&ctx, &b, &it, &err), KC_OK);
    assert_int_equal(kc_record_next(&it, &r, &err), KC_OK);
    assert_memory_equal(r.value, "fine", 4);
    kc_decode_ctx_destroy(&ctx);
    tb_free(&buf);
}

static void corrupt_records(void **state)
{
    (void)state;
    tb_record_t rs[2] = {{.off_delta = 0, .value = "aa", .value_len = 2},
                         {.off_delta = 1, .value = "bb", .value_len = 2}};
    tb_buf_t good = {0};
    tb_record(&good, &rs[0]);
    tb_record(&good, &rs[1]);
    for (int codec = 0; codec <= 4; codec++) {
        static const uint8_t bad_varint[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
        expect_bad_records(codec, bad_varint, sizeof bad_varint, 1, 1, "record length");
        expect_bad_records(codec, good.p, good.len, 2, 3, "fewer records");
        expect_bad_records(codec, good.p, good.len, 2, 1, "bytes remain");
        expect_bad_records(codec, good.p, good.len - 1, 2, 2, "runs past");
        /* Value length claiming more than the record holds. */
        tb_buf_t lie = {0};
        tb_put(&lie, good.p, good.len);
        lie.p[5] = 0x7e; /* first record: value length varint 2 -> 63 */
        expect_bad_records(codec, lie.p, lie.len, 2, 2, "value length");
        tb_free(&lie);
    }
    tb_free(&good);
}

static void builder_roundtrip_all_codecs(void **state)
{
    (void)state;
    tb_header_t hs[2] = {{"trace", "abc", 3}, {"empty", NULL, 0}};
    tb_record_t rs[50];
    char vals[50][64];
    for (int i = 0; i < 50; i++) {
        snprintf(vals[i], sizeof vals[i], "{\"n\":%d}", i);
        rs[i] = (tb_record_t){.ts_delta = i * 2,
                              .off_delta = i,
                              .key = i % 3 ? "key" : NULL,
                              .key_len = 3,
                              .value = vals[i],
                              .value_len = (int32_t)strlen(vals[i]),
                              .n_headers = i % 2 ? 2 : 0,
                              .headers = hs};
    }
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    for (int codec = 0; codec <= 5; codec++) {
        tb_buf_t buf = {0};
        bool raw = codec == 5;
        bool la = codec == 3;
        tb_batch(&buf,
                 &(tb_batch_t){.base_offset = 1LL << 40,
                               .codec = raw ? 2 : codec,
                               .raw_snappy = raw,
                               .log_append = la,
                               .base_ts = 1000,
                               .max_ts = 9999},
                 rs, 50);
        kc_batch_splitter_t sp;
        kc_batch_t b;
        kc_record_iter_t it;
        kc_record_t r;
        kc_batch_splitter_init_bytes(&sp, buf.p, buf.len, "t", 0, true);
        assert_int_equal(kc_batch_next(&sp, &b, NULL), KC_OK);
        assert_int_equal(kc_batch_records(&ctx, &b, &it, NULL), KC_OK);
        for (int i = 0; i < 50; i++) {
            assert_int_equal(kc_record_next(&it, &r, NULL), KC_OK);
            assert_int_equal(r.offset, (1LL << 40) + i);
            assert_int_equal(r.timestamp, la ? 9999 : 1000 + i * 2);
            assert_int_equal(r.key_len, i % 3 ? 3 : -1);
            assert_int_equal(r.value_len, (int32_t)strlen(vals[i]));
            assert_memory_equal(r.value, vals[i], strlen(vals[i]));
            kc_header_iter_t hi;
            kc_record_header_t h;
            kc_record_headers(&r, &hi);
            for (int k = 0; k < rs[i].n_headers; k++) {
                assert_true(kc_header_next(&hi, &h));
                assert_int_equal(h.key_len, (int32_t)strlen(hs[k].key));
                assert_int_equal(h.value_len, hs[k].value ? hs[k].value_len : -1);
            }
            assert_false(kc_header_next(&hi, &h));
        }
        assert_int_equal(kc_record_next(&it, &r, NULL), KC_ERR_NOT_FOUND);
        tb_free(&buf);
    }
    kc_decode_ctx_destroy(&ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(manifest_matches_kafka),
        cmocka_unit_test(read_committed),
        cmocka_unit_test(truncated_tail),
        cmocka_unit_test(crc_damage_is_reported_and_skipped),
        cmocka_unit_test(bad_framing_stops),
        cmocka_unit_test(old_magic_is_skipped),
        cmocka_unit_test(corrupt_records),
        cmocka_unit_test(builder_roundtrip_all_codecs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
