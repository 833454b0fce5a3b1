/*
 * The benchmark's per-record work, shared by the C peers (kc_consume.c, rdkafka_consume.c; the
 * Go peer has the same function, valueSum in franzgo/main.go): the sum of every byte of a value,
 * so no consumer can skip decoding, computed eight bytes at a time.
 *
 * Why not a byte loop: at -O2 the byte loop cost ~0.3 CPU s per million 1 KiB records, a quarter
 * of kconsume's T2-zstd time and the same fixed amount in every C peer, which measured the loop
 * more than the consumers (perf/README.md "Touching values"). Word at a time: each 64-bit word
 * is split into its even and odd bytes as four 16-bit lanes (at most 510 per word), lanes are
 * accumulated over at most 128 words (128 * 510 < 65536: no carry between lanes), then folded.
 * Same result as the byte loop, every byte still read.
 */
#ifndef KC_PERF_TOUCH_H
#define KC_PERF_TOUCH_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t perf_value_sum(const unsigned char *v, size_t len)
{
    const uint64_t even = 0x00ff00ff00ff00ffULL, lo16 = 0x0000ffff0000ffffULL;
    uint64_t total = 0;
    size_t i = 0;
    while (len - i >= 8) {
        uint64_t acc = 0; /* four 16-bit lanes */
        for (int k = 0; k < 128 && len - i >= 8; k++, i += 8) {
            uint64_t w;
            memcpy(&w, v + i, 8);
            acc += (w & even) + ((w >> 8) & even);
        }
        acc = (acc & lo16) + ((acc >> 16) & lo16); /* two 32-bit lanes */
        total += (acc & 0xffffffffULL) + (acc >> 32);
    }
    for (; i < len; i++)
        total += v[i];
    return total;
}
#endif
