/*
 * From configuration to module settings: the one place the runtime's and the group's keys are
 * read. kc_rt_opts_from_conf gives the dispatcher's options (the engine builds a kc_rt_t with it
 * and adds only what it owns: the wake hook, the decoder); kc_rt_group_conf the group driver's
 * for the protocol chosen. Pure: no shared state, any thread.
 */
#include <unistd.h>

#include "conf.h"
#include "dispatch.h"
#include "group.h"

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
    /* A thirty-second of the cap (2 MiB by default): frames that small keep a slow partition's
     * pinned memory (memory_budget.c) to an eighth of the cap, and at 1 GB/s still mean only ~500
     * responses a second. Never below one partition's worth, which a response may bring anyway. */
    int64_t mpfb = kc_conf_int(c, KC_CONF_MAX_PARTITION_FETCH_BYTES);
    o->frame_max_bytes = o->queued_max_bytes / 32 > mpfb ? o->queued_max_bytes / 32 : mpfb;
    o->max_poll_interval_ms = kc_conf_int(c, KC_CONF_MAX_POLL_INTERVAL_MS);
    o->auto_store = kc_conf_bool(c, KC_CONF_ENABLE_AUTO_OFFSET_STORE);
    o->partition_eof = kc_conf_bool(c, KC_CONF_ENABLE_PARTITION_EOF);
    o->share = kc_conf_share(c);
}

void kc_rt_group_conf(const kc_conf_t *c, kc_group_conf_t *out)
{
    kc_group_conf_t g = {0};
    g.group_id = kc_conf_str(c, KC_CONF_GROUP_ID);
    g.group_instance_id = kc_conf_str(c, KC_CONF_GROUP_INSTANCE_ID);
    g.rack_id = kc_conf_str(c, KC_CONF_CLIENT_RACK);
    g.server_assignor = kc_conf_str(c, KC_CONF_GROUP_REMOTE_ASSIGNOR);
    g.assignors = kc_conf_str(c, KC_CONF_PARTITION_ASSIGNMENT_STRATEGY);
    g.session_timeout_ms = kc_conf_int(c, KC_CONF_SESSION_TIMEOUT_MS);
    g.consumer_session_timeout_ms = kc_conf_int(c, KC_CONF_GROUP_CONSUMER_SESSION_TIMEOUT_MS);
    g.heartbeat_interval_ms = (int32_t)kc_conf_int(c, KC_CONF_HEARTBEAT_INTERVAL_MS);
    int64_t mp = kc_conf_int(c, KC_CONF_MAX_POLL_INTERVAL_MS);
    g.rebalance_timeout_ms = mp > INT32_MAX ? INT32_MAX : (int32_t)mp;
    /* rebalance.timeout.ms (librdkafka's key), 0 meaning max.poll.interval.ms as in Java; the
     * JoinGroup's request timeout adds 5 s to it, so it stays below INT32_MAX. */
    int64_t rt = kc_conf_int(c, KC_CONF_REBALANCE_TIMEOUT_MS);
    if (rt == 0)
        rt = mp;
    g.classic_rebalance_timeout_ms = rt > INT32_MAX - 5000 ? INT32_MAX - 5000 : (int32_t)rt;
    g.commit_on_revoke = kc_conf_bool(c, KC_CONF_ENABLE_AUTO_COMMIT);
    g.request_timeout_ms = (int)kc_conf_int(c, KC_CONF_REQUEST_TIMEOUT_MS);
    g.commit_timeout_ms = g.request_timeout_ms;
    g.coordinator_timeout_ms = g.request_timeout_ms;
    g.self_fence_ratio = kc_conf_fraction(c, KC_CONF_GROUP_SELF_FENCE_RATIO);
    *out = g;
}
