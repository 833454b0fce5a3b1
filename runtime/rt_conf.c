/*
 * From configuration to dispatcher options: the one place the runtime's keys are read, so the
 * engine builds a kc_rt_t with kc_rt_opts_from_conf and adds only what it owns (the wake hook,
 * the decoder). Runs on the thread creating the consumer; no shared state.
 */
#include <unistd.h>

#include "conf.h"
#include "dispatch.h"

void kc_rt_opts_from_conf(const kc_conf_t *c, kc_rt_opts_t *o)
{
    int64_t n = kc_conf_int(c, KC_CONF_WORKER_THREADS);
    if (n == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 0 ? cpus : 1; /* worker.threads=0 means one per online CPU */
    }
    o->workers = (unsigned)n;
    o->max_records = (uint32_t)kc_conf_int(c, KC_CONF_CALLBACK_BATCH_MAX_RECORDS);
    o->queued_max_bytes = kc_conf_int(c, KC_CONF_QUEUED_MAX_BYTES);
    /* A thirty-second of the cap (8 MiB by default): frames that small keep a slow partition's
     * pinned memory (frames.c) to an eighth of the cap, and at 1 GB/s still mean only ~125
     * responses a second. Never below one partition's worth, which a response may bring anyway. */
    int64_t mpfb = kc_conf_int(c, KC_CONF_MAX_PARTITION_FETCH_BYTES);
    o->frame_max_bytes = o->queued_max_bytes / 32 > mpfb ? o->queued_max_bytes / 32 : mpfb;
    o->max_poll_interval_ms = kc_conf_int(c, KC_CONF_MAX_POLL_INTERVAL_MS);
    o->auto_store = kc_conf_bool(c, KC_CONF_ENABLE_AUTO_OFFSET_STORE);
}
