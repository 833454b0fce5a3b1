/* CRC32C: the Castagnoli check value on every path, and the paths agreeing with each other on
 * random data of every length and alignment (the 3-way path has three block-size regimes). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/crc32c.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint8_t rnd8(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint8_t)rng;
}

/* Bitwise reference, independent of the table code under test. */
static uint32_t ref_crc(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

static void check_value(void **state)
{
    (void)state;
    const char *s = "123456789";
    assert_int_equal(ref_crc((const uint8_t *)s, 9), 0xE3069283u);
    assert_int_equal(kc_crc32c_sw(0, s, 9), 0xE3069283u);
    assert_int_equal(kc_crc32c(0, s, 9), 0xE3069283u);
    assert_int_equal(kc_crc32c(0, s, 0), 0u);
    if (kc_crc32c_hw_available()) {
        assert_int_equal(kc_crc32c_hw1(0, s, 9), 0xE3069283u);
        assert_int_equal(kc_crc32c_hw3(0, s, 9), 0xE3069283u);
    } else {
        fprintf(stderr, "note: no SSE4.2 on this CPU; hardware paths not tested\n");
    }
    /* RFC 3720 (iSCSI) B.4 vectors: 32 zero bytes and 32 0xFF bytes. */
    uint8_t z[32], f[32];
    memset(z, 0, sizeof z);
    memset(f, 0xff, sizeof f);
    assert_int_equal(kc_crc32c(0, z, 32), 0x8A9136AAu);
    assert_int_equal(kc_crc32c(0, f, 32), 0x62A8AB43u);
}

static void paths_agree(void **state)
{
    (void)state;
    enum { MAX = 3 * 8192 * 2 + 3 * 256 + 64 };
    uint8_t *buf = malloc(MAX + 8);
    assert_non_null(buf);
    for (size_t i = 0; i < MAX + 8; i++)
        buf[i] = rnd8();
    bool hw = kc_crc32c_hw_available();
    /* Every length up to 2 KiB, then lengths around the 3-way block boundaries. */
    size_t lens[64 + 2049];
    size_t nl = 0;
    for (size_t l = 0; l <= 2048; l++)
        lens[nl++] = l;
    size_t edges[] = {3 * 256 - 1,
                      3 * 256,
                      3 * 256 + 1,
                      3 * 8192 - 1,
                      3 * 8192,
                      3 * 8192 + 1,
                      3 * 8192 + 3 * 256 + 7,
                      6 * 8192,
                      MAX};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        lens[nl++] = edges[i];
    for (size_t li = 0; li < nl; li++) {
        for (size_t align = 0; align < 8; align++) {
            size_t l = lens[li];
            const uint8_t *p = buf + align;
            uint32_t want = kc_crc32c_sw(0, p, l);
            if (l <= 2048 && align == (l % 8))
                assert_int_equal(want, ref_crc(p, l));
            if (hw) {
                assert_int_equal(kc_crc32c_hw1(0, p, l), want);
                assert_int_equal(kc_crc32c_hw3(0, p, l), want);
            }
            assert_int_equal(kc_crc32c(0, p, l), want);
        }
    }
    free(buf);
}

static void chaining(void **state)
{
    (void)state;
    uint8_t buf[40000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = rnd8();
    uint32_t whole = kc_crc32c(0, buf, sizeof buf);
    for (size_t cut = 0; cut < sizeof buf; cut += 997) {
        assert_int_equal(kc_crc32c(kc_crc32c(0, buf, cut), buf + cut, sizeof buf - cut), whole);
        assert_int_equal(kc_crc32c_sw(kc_crc32c_sw(0, buf, cut), buf + cut, sizeof buf - cut),
                         whole);
    }
    assert_int_equal(ref_crc(buf, sizeof buf), whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(check_value),
        cmocka_unit_test(paths_agree),
        cmocka_unit_test(chaining),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
