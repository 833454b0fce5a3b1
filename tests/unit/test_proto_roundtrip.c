/* Round trip of every generated message at every version, plus truncation at every byte.
 * Single-threaded test. With KC_WRITE_CORPUS=<dir> it also writes the fuzzers' seed corpora
 * (tests/fuzz/corpus/<target>/) from the encodings it makes. */
#include "kc_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/proto.h"
#include "proto_fill.gen.inc"

#define SEEDS 24

static void write_seed(const char *target, const char *name, int16_t v, const uint8_t *prefix,
                       size_t plen, const kc_wbuf_t *w)
{
    const char *dir = getenv("KC_WRITE_CORPUS");
    if (!dir)
        return;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, target);
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        fail_msg("mkdir %s", path);
    snprintf(path, sizeof path, "%s/%s/%s_v%d", dir, target, name, (int)v);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(prefix, 1, plen, f);
    if (w->len)
        fwrite(w->data, 1, w->len, f);
    fclose(f);
}

static void corpus_for(const fill_entry_t *e, int16_t v, const kc_wbuf_t *w)
{
    if (e->api_key >= 0) {
        uint8_t prefix[2] = {(uint8_t)e->api_key, (uint8_t)v};
        write_seed(e->is_request ? "fuzz_proto_request" : "fuzz_proto_response", e->name, v, prefix,
                   2, w);
    } else if (strcmp(e->name, "ConsumerProtocolSubscription") == 0 ||
               strcmp(e->name, "ConsumerProtocolAssignment") == 0 ||
               strcmp(e->name, "StickyAssignorUserData") == 0) {
        /* fuzz_consumer_protocol: kind byte, then (for the consumer protocol) the int16 version
         * prefix Java writes, then the body. */
        uint8_t kind = e->name[0] == 'S' ? 2 : e->name[16] == 'S' ? 0 : 1;
        uint8_t prefix[3] = {kind, (uint8_t)(v >> 8), (uint8_t)v};
        write_seed("fuzz_consumer_protocol", e->name, v, prefix, kind == 2 ? 1 : 3, w);
    }
}

/* encode → decode → re-encode must give the same bytes, the decode must use every byte, and
 * every proper prefix of the encoding must fail to decode (it follows the same path as the full
 * decode until it needs a byte the prefix lacks). */
static void roundtrip_one(const fill_entry_t *e, int16_t v, uint32_t seed, bool truncations)
{
    kc_arena_t fa = {0}, da = {0};
    kc_wbuf_t w1 = {0}, w2 = {0};
    kc_error_t err;
    void *m1 = calloc(1, e->size), *m2 = calloc(1, e->size);
    assert_non_null(m1);
    assert_non_null(m2);
    e->fill(m1, v, &fa, &seed);
    if (e->encode(m1, v, &w1, &err) != KC_OK)
        fail_msg("%s v%d encode: %s", e->name, v, err.msg);
    kc_rbuf_t r = kc_rbuf(w1.data, w1.len);
    if (e->decode(m2, v, &r, &da, &err) != KC_OK)
        fail_msg("%s v%d decode: %s", e->name, v, err.msg);
    if (kc_rbuf_remaining(&r) != 0)
        fail_msg("%s v%d: %zu bytes left after decode", e->name, v, kc_rbuf_remaining(&r));
    if (e->encode(m2, v, &w2, &err) != KC_OK)
        fail_msg("%s v%d re-encode: %s", e->name, v, err.msg);
    if (w1.len != w2.len || (w1.len && memcmp(w1.data, w2.data, w1.len) != 0))
        fail_msg("%s v%d seed %u: re-encoded bytes differ (%zu vs %zu)", e->name, v, seed, w1.len,
                 w2.len);
    if (truncations) {
        corpus_for(e, v, &w1);
        for (size_t cut = 0; cut < w1.len; cut++) {
            /* A heap copy of exactly `cut` bytes, so ASan catches any read past the end. */
            uint8_t *copy = malloc(cut ? cut : 1);
            if (cut)
                memcpy(copy, w1.data, cut);
            kc_rbuf_t t = kc_rbuf(copy, cut);
            kc_arena_reset(&da);
            kc_err_t rc = e->decode(m2, v, &t, &da, &err);
            if (rc != KC_ERR_MALFORMED)
                fail_msg("%s v%d truncated to %zu of %zu: rc %d", e->name, v, cut, w1.len, rc);
            free(copy);
        }
    }
    kc_wbuf_free(&w1);
    kc_wbuf_free(&w2);
    kc_arena_free(&fa);
    kc_arena_free(&da);
    free(m1);
    free(m2);
}

static void test_roundtrip_every_message_and_version(void **state)
{
    (void)state;
    int versions = 0;
    for (size_t i = 0; i < sizeof fill_entries / sizeof fill_entries[0]; i++) {
        const fill_entry_t *e = &fill_entries[i];
        for (int16_t v = e->min_version; v <= e->max_version; v++) {
            for (uint32_t s = 1; s <= SEEDS; s++)
                roundtrip_one(e, v, s * 7919u + (uint32_t)v, s == 1);
            versions++;
        }
    }
    print_message("round-tripped %d message versions x %d seeds\n", versions, SEEDS);
    /* 50 API messages, 2 headers, 2 consumer-protocol payloads, sticky user data. */
    assert_int_equal(sizeof fill_entries / sizeof fill_entries[0], 55);
}

/* The filler must actually exercise the interesting shapes; otherwise the round trip proves
 * little. Check that over the seeds FetchResponse v16 sees tagged fields, null records, nested
 * arrays. */
static void test_filler_covers_tagged_and_null(void **state)
{
    (void)state;
    int tagged = 0, null_records = 0, partitions = 0;
    for (uint32_t s = 1; s <= 64; s++) {
        kc_arena_t a = {0};
        kc_fetch_response_t m;
        uint32_t seed = s;
        memset(&m, 0, sizeof m);
        fillv_fetch_response(&m, 16, &a, &seed);
        tagged += m.has_node_endpoints;
        for (int32_t t = 0; t < m.responses.count; t++)
            for (int32_t p = 0; p < m.responses.items[t].partitions.count; p++) {
                partitions++;
                null_records += m.responses.items[t].partitions.items[p].records.len == -1;
            }
        kc_arena_free(&a);
    }
    assert_true(tagged > 0);
    assert_true(null_records > 0);
    assert_true(partitions > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_message_and_version),
        cmocka_unit_test(test_filler_covers_tagged_and_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
