/*
 * CRC32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of Kafka's v2 record batches.
 *
 * kc_crc32c() picks the fastest path at first use: SSE4.2 `crc32` with three interleaved streams
 * on x86-64 CPUs that have it (measured: ~10.7 GB/s against 3.5 single-stream and 0.68 for
 * slice-by-8), else slice-by-8 tables. The other paths are exported so tests can check that they
 * agree and the benchmark can compare them.
 *
 * All functions take the running CRC in its final (inverted) form and return it in that form, so
 * chaining works: kc_crc32c(kc_crc32c(0, a, n), b, m) == kc_crc32c(0, a||b, n+m).
 * Any thread; no state besides tables built once (pthread_once) on first use.
 */
#ifndef KC_BATCH_CRC32C_H
#define KC_BATCH_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint32_t kc_crc32c(uint32_t crc, const void *buf, size_t len);

/* Slice-by-8 tables; works everywhere. */
uint32_t kc_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* True when this CPU has SSE4.2 (and the build is x86-64). The two hw paths must not be called
 * when it is false. */
bool kc_crc32c_hw_available(void);
/* One stream of 8-byte crc32 instructions (latency-bound: one per 3 cycles). */
uint32_t kc_crc32c_hw1(uint32_t crc, const void *buf, size_t len);
/* Three interleaved streams combined with zero-shift tables (throughput-bound). */
uint32_t kc_crc32c_hw3(uint32_t crc, const void *buf, size_t len);

#endif
