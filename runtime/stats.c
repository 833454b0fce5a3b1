/*
 * The runtime's part of the stats JSON (names are a public contract: add, never rename). Reads
 * worker counters that workers update with relaxed atomics: a stats snapshot needs no ordering,
 * only untorn values. Any thread.
 */
#include <stdio.h>

#include "rt_internal.h"

size_t kc_rt_stats_workers(const kc_rt_t *rt, char *buf, size_t cap)
{
    size_t n = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        char *dst = buf && n < cap ? buf + n : NULL;                                               \
        int k = snprintf(dst, dst ? cap - n : 0, __VA_ARGS__);                                     \
        n += k > 0 ? (size_t)k : 0;                                                                \
    } while (0)
    PUT("[");
    for (unsigned i = 0; i < rt->o.workers; i++) {
        const kc_rt_worker_t *w = &rt->w[i];
        PUT("%s{\"id\":%u,\"callbacks\":%llu,\"records\":%llu,\"busy_ns\":%lld}", i ? "," : "", i,
            (unsigned long long)atomic_load_explicit(&w->callbacks, memory_order_relaxed),
            (unsigned long long)atomic_load_explicit(&w->records, memory_order_relaxed),
            (long long)atomic_load_explicit(&w->busy_ns, memory_order_relaxed));
    }
    PUT("]");
#undef PUT
    return n;
}
