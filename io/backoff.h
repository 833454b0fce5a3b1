/* Reconnect backoff, Kafka's formula (ExponentialBackoff with multiplier 2, jitter 0.2):
 *   base = min(backoff_ms * 2^(failures-1), max_ms);  result = base * uniform[0.8, 1.2)
 * so attempts spread out instead of every client hammering a restarted broker in step.
 * Pure function; any thread. `r` is a uniform random number in [0, 1). */
#ifndef KC_IO_BACKOFF_H
#define KC_IO_BACKOFF_H

#include <stdint.h>

static inline int64_t kc_backoff_ms(int64_t backoff_ms, int64_t max_ms, int failures, double r)
{
    if (failures < 1)
        failures = 1;
    double base = (double)backoff_ms;
    for (int i = 1; i < failures && base < (double)max_ms; i++)
        base *= 2;
    if (base > (double)max_ms)
        base = (double)max_ms;
    return (int64_t)(base * (0.8 + 0.4 * r));
}

/* xorshift64*: per-connection jitter source; quality is irrelevant, independence is what counts. */
static inline double kc_backoff_rand(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ULL;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

#endif
