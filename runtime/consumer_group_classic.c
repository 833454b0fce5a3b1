/*
 * group.protocol=classic for the public consumer: the configuration of engine/classic_drive
 * from kc_conf_t. consumer_group.c keeps the group's partitions and implements the hooks for
 * both protocols; only this translation is classic-specific.
 *
 * Owner: network thread (called from kc_cg_new).
 */
#include "classic_drive.h"
#include "conf.h"
#include "consumer_group.h"

void kc_cg_classic_conf(const kc_conf_t *conf, kc_gcl_conf_t *out)
{
    kc_gcl_conf_t gc = {0};
    gc.group_id = kc_conf_str(conf, KC_CONF_GROUP_ID);
    gc.group_instance_id = kc_conf_str(conf, KC_CONF_GROUP_INSTANCE_ID);
    gc.rack_id = kc_conf_str(conf, KC_CONF_CLIENT_RACK);
    gc.assignors = kc_conf_str(conf, KC_CONF_PARTITION_ASSIGNMENT_STRATEGY);
    gc.session_timeout_ms = (int32_t)kc_conf_int(conf, KC_CONF_SESSION_TIMEOUT_MS);
    gc.heartbeat_interval_ms = (int32_t)kc_conf_int(conf, KC_CONF_HEARTBEAT_INTERVAL_MS);
    /* rebalance.timeout.ms (librdkafka's key), 0 meaning max.poll.interval.ms as in Java. */
    int64_t mp = kc_conf_int(conf, KC_CONF_REBALANCE_TIMEOUT_MS);
    if (mp == 0)
        mp = kc_conf_int(conf, KC_CONF_MAX_POLL_INTERVAL_MS);
    gc.rebalance_timeout_ms = mp > INT32_MAX - 5000 ? INT32_MAX - 5000 : (int32_t)mp;
    gc.auto_commit = kc_conf_bool(conf, KC_CONF_ENABLE_AUTO_COMMIT);
    gc.auto_commit_interval_ms = kc_conf_int(conf, KC_CONF_AUTO_COMMIT_INTERVAL_MS);
    gc.request_timeout_ms = (int)kc_conf_int(conf, KC_CONF_REQUEST_TIMEOUT_MS);
    gc.commit_timeout_ms = gc.request_timeout_ms;
    gc.coordinator_timeout_ms = gc.request_timeout_ms;
    gc.self_fence_ratio = kc_conf_fraction(conf, KC_CONF_GROUP_SELF_FENCE_RATIO);
    *out = gc;
}

kc_err_t kc_cg_new_classic(kc_gcl_t **out, kc_engine_t *e, const kc_conf_t *conf,
                           const kc_g848_hooks_t *hooks, kc_error_t *err)
{
    kc_gcl_conf_t gc;
    kc_cg_classic_conf(conf, &gc);
    return kc_gcl_new(out, e, &gc, hooks, err);
}
