/*
 * CRC32C: slice-by-8 tables and SSE4.2 paths. See crc32c.h.
 * State: read-only tables built once under pthread_once; safe from any thread afterwards.
 *
 * The three-stream path splits a block into three equal parts A|B|C, runs one crc32 chain over
 * each at the same time (the instruction has latency 3 but throughput 1, so three independent
 * chains keep the unit busy), then combines them. CRC without the final inversion is linear:
 * crc(A||B) = shift(crc(A), |B|) ^ crc0(B), where shift(c, n) is the register after feeding n
 * zero bytes. shift() by a fixed n is a linear map of 32 bits, tabulated as four byte tables.
 */
#include "batch/crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82F63B78u
/* Block sizes for the interleaved path: LONG amortises the combine over big buffers, SHORT
 * keeps the three-way speed-up for the tail of a few hundred bytes. */
#define LONG_BLOCK  8192
#define SHORT_BLOCK 256

static uint32_t tab8[8][256];
static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool have_hw;

/* Register after feeding `n` zero bytes into a raw (non-inverted) CRC register `c`. Bitwise and
 * slow; only used to build the tables. */
static uint32_t zeros_slow(uint32_t c, size_t n)
{
    for (size_t i = 0; i < n * 8; i++)
        c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
    return c;
}

static void build_shift(uint32_t t[4][256], size_t n)
{
    uint32_t bit[32];
    for (int i = 0; i < 32; i++)
        bit[i] = zeros_slow(1u << i, n);
    for (int k = 0; k < 4; k++)
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int j = 0; j < 8; j++)
                if (b & (1 << j))
                    v ^= bit[8 * k + j];
            t[k][b] = v;
        }
}

static void init_tables(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        tab8[0][n] = c;
    }
    for (int n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            tab8[k][n] = (tab8[k - 1][n] >> 8) ^ tab8[0][tab8[k - 1][n] & 0xff];
    build_shift(shift_long, LONG_BLOCK);
    build_shift(shift_short, SHORT_BLOCK);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    have_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static inline void ensure_init(void)
{
    pthread_once(&once, init_tables);
}

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* little-endian host assumed (x86-64, arm64) */
    return v;
}

static uint32_t sw_raw(uint32_t c, const uint8_t *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        c = (c >> 8) ^ tab8[0][(c ^ *p++) & 0xff];
        len--;
    }
    while (len >= 8) {
        uint64_t v = load64(p) ^ c;
        c = tab8[7][v & 0xff] ^ tab8[6][(v >> 8) & 0xff] ^ tab8[5][(v >> 16) & 0xff] ^
            tab8[4][(v >> 24) & 0xff] ^ tab8[3][(v >> 32) & 0xff] ^ tab8[2][(v >> 40) & 0xff] ^
            tab8[1][(v >> 48) & 0xff] ^ tab8[0][v >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = (c >> 8) ^ tab8[0][(c ^ *p++) & 0xff];
    return c;
}

uint32_t kc_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    ensure_init();
    return ~sw_raw(~crc, buf, len);
}

bool kc_crc32c_hw_available(void)
{
    ensure_init();
    return have_hw;
}

static inline uint32_t shift(const uint32_t t[4][256], uint32_t c)
{
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The target attribute lets these functions use crc32 while the rest of the build stays
 * baseline x86-64; they run only after have_hw said the CPU supports it. */
#define HW __attribute__((target("sse4.2")))

HW static uint64_t hw_bytes(uint64_t c, const uint8_t **pp, size_t *lenp)
{
    const uint8_t *p = *pp;
    size_t len = *lenp;
    while (len && ((uintptr_t)p & 7)) {
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
        len--;
    }
    *pp = p;
    *lenp = len;
    return c;
}

HW static uint32_t hw1_raw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = hw_bytes(crc, &p, &len);
    while (len >= 8) {
        c = __builtin_ia32_crc32di(c, load64(p));
        p += 8;
        len -= 8;
    }
    while (len--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return (uint32_t)c;
}

/* Runs three chains over blocks of `blk` bytes while at least 3*blk remain. */
HW static uint64_t hw3_blocks(uint64_t c0, const uint8_t **pp, size_t *lenp, size_t blk,
                              const uint32_t t[4][256])
{
    const uint8_t *p = *pp;
    size_t len = *lenp;
    while (len >= 3 * blk) {
        uint64_t c1 = 0, c2 = 0;
        const uint8_t *end = p + blk;
        do {
            c0 = __builtin_ia32_crc32di(c0, load64(p));
            c1 = __builtin_ia32_crc32di(c1, load64(p + blk));
            c2 = __builtin_ia32_crc32di(c2, load64(p + 2 * blk));
            p += 8;
        } while (p < end);
        c0 = shift(t, (uint32_t)c0) ^ c1;
        c0 = shift(t, (uint32_t)c0) ^ c2;
        p += 2 * blk;
        len -= 3 * blk;
    }
    *pp = p;
    *lenp = len;
    return c0;
}

HW static uint32_t hw3_raw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = hw_bytes(crc, &p, &len);
    c = hw3_blocks(c, &p, &len, LONG_BLOCK, (const uint32_t(*)[256])shift_long);
    c = hw3_blocks(c, &p, &len, SHORT_BLOCK, (const uint32_t(*)[256])shift_short);
    return hw1_raw((uint32_t)c, p, len);
}

uint32_t kc_crc32c_hw1(uint32_t crc, const void *buf, size_t len)
{
    return ~hw1_raw(~crc, buf, len);
}

uint32_t kc_crc32c_hw3(uint32_t crc, const void *buf, size_t len)
{
    ensure_init();
    return ~hw3_raw(~crc, buf, len);
}
#else
uint32_t kc_crc32c_hw1(uint32_t crc, const void *buf, size_t len)
{
    return kc_crc32c_sw(crc, buf, len);
}
uint32_t kc_crc32c_hw3(uint32_t crc, const void *buf, size_t len)
{
    return kc_crc32c_sw(crc, buf, len);
}
#endif

uint32_t kc_crc32c(uint32_t crc, const void *buf, size_t len)
{
    ensure_init();
    if (have_hw)
        return kc_crc32c_hw3(crc, buf, len);
    return ~sw_raw(~crc, buf, len);
}
