/*
 * The runtime's part of the stats JSON (names are a public contract: add, never rename). Reads
 * worker counters that workers update with relaxed atomics: a stats snapshot needs no ordering,
 * only untorn values. Any thread.
 */
#include "rt_internal.h"

void kc_rt_stats_workers(const kc_rt_t *rt, kc_json_t *w)
{
    kc_json_raw(w, "[");
    for (unsigned i = 0; i < rt->o.workers; i++) {
        const kc_rt_worker_t *wk = &rt->w[i];
        kc_json_raw(w, "%s{\"id\":%u,\"callbacks\":%llu,\"records\":%llu,\"busy_ns\":%lld}",
                    i ? "," : "", i,
                    (unsigned long long)atomic_load_explicit(&wk->callbacks, memory_order_relaxed),
                    (unsigned long long)atomic_load_explicit(&wk->records, memory_order_relaxed),
                    (long long)atomic_load_explicit(&wk->busy_ns, memory_order_relaxed));
    }
    kc_json_raw(w, "]");
}
