/*
 * Per-partition decisions: what a Fetch error, a metadata change, a reset or an
 * OffsetForLeaderEpoch answer does to one partition's fetch state. Pure functions of their
 * arguments (time is passed in).
 *
 * Owner: network thread (every kc_partition_t is the network thread's).
 */
#include "fetch/partition.h"

#include "proto/kafka_errors.h"

kc_fetch_action_t kc_fetch_classify_error(int16_t code)
{
    switch (code) {
    case KC_KAFKA_NONE:
        return KC_FA_NONE;
    /* The partition lives elsewhere now, or our view of it is stale. The position is still
     * ours: keep it and let the new leader's session carry the partition. */
    case KC_KAFKA_NOT_LEADER_OR_FOLLOWER:
    case KC_KAFKA_FENCED_LEADER_EPOCH:
    case KC_KAFKA_UNKNOWN_LEADER_EPOCH:
    case KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION:
    case KC_KAFKA_UNKNOWN_TOPIC_ID:
    case KC_KAFKA_INCONSISTENT_TOPIC_ID:
    case KC_KAFKA_LEADER_NOT_AVAILABLE:
    case KC_KAFKA_REPLICA_NOT_AVAILABLE:
    case KC_KAFKA_OFFSET_NOT_AVAILABLE:
        return KC_FA_MOVE;
    case KC_KAFKA_OFFSET_OUT_OF_RANGE:
        return KC_FA_OUT_OF_RANGE;
    /* Nothing the client can fix by retrying alone: the caller must know. */
    case KC_KAFKA_TOPIC_AUTHORIZATION_FAILED:
    case KC_KAFKA_CORRUPT_MESSAGE:
        return KC_FA_REPORT;
    /* KAFKA_STORAGE_ERROR (a failed log dir) and anything unknown: this partition only. */
    case KC_KAFKA_KAFKA_STORAGE_ERROR:
    default:
        return KC_FA_BACKOFF;
    }
}

static int64_t backoff_for(const kc_partition_conf_t *conf, int32_t attempts)
{
    int64_t b = conf->backoff_ms > 0 ? conf->backoff_ms : 1;
    for (int32_t i = 0; i < attempts && b < conf->backoff_max_ms; i++)
        b *= 2;
    return b > conf->backoff_max_ms && conf->backoff_max_ms > 0 ? conf->backoff_max_ms : b;
}

static void start_backoff(kc_partition_t *p, const kc_partition_conf_t *conf, int64_t now_ms)
{
    p->state = KC_FS_BACKOFF;
    p->backoff_until_ms = now_ms + backoff_for(conf, p->backoff_attempts);
    if (p->backoff_attempts < 30)
        p->backoff_attempts++;
}

void kc_partition_hold(kc_partition_t *p, const kc_partition_conf_t *conf, int64_t now_ms)
{
    if (p->state == KC_FS_ACTIVE)
        start_backoff(p, conf, now_ms);
}

/* auto.offset.reset, or a stop with an error for `none`. */
static void apply_reset_policy(kc_partition_t *p, const kc_partition_conf_t *conf,
                               kc_partition_event_t *ev, const char *why)
{
    int64_t ts = 0;
    if (kc_partition_reset_timestamp(conf->reset, &ts, NULL) == KC_OK) {
        p->state = KC_FS_AWAIT_RESET;
        ev->needs_list_offsets = 1;
        ev->reset_timestamp = ts;
        return;
    }
    p->state = KC_FS_STOPPED;
    ev->report = 1;
    kc_fail(&ev->error, KC_ERR_STATE,
            "partition %d: %s at offset %lld and auto.offset.reset=none; seek to continue",
            (int)p->tp.partition, why, (long long)p->position);
}

void kc_partition_on_fetch_error(kc_partition_t *p, int16_t code, int from_replica,
                                 const kc_partition_conf_t *conf, int64_t now_ms,
                                 kc_partition_event_t *ev)
{
    memset(ev, 0, sizeof *ev);
    kc_fail_kafka(&ev->error, code, "Fetch partition %d at offset %lld", (int)p->tp.partition,
                  (long long)p->position);
    switch (kc_fetch_classify_error(code)) {
    case KC_FA_NONE:
        kc_error_clear(&ev->error);
        return;
    case KC_FA_MOVE:
        p->preferred_replica = KC_NO_BROKER; /* KIP-392: errors send us back to the leader */
        p->state = KC_FS_AWAIT_METADATA;
        ev->refresh_metadata = 1;
        return;
    case KC_FA_OUT_OF_RANGE:
        if (from_replica) {
            /* A follower may simply lag the leader: ask the leader before resetting. */
            p->preferred_replica = KC_NO_BROKER;
            return;
        }
        apply_reset_policy(p, conf, ev, "OFFSET_OUT_OF_RANGE");
        return;
    case KC_FA_REPORT:
        /* Reported, and retried later too, so a fixed ACL resumes without a restart. */
        ev->report = 1;
        /* fall through */
    case KC_FA_BACKOFF:
        p->preferred_replica = KC_NO_BROKER;
        ev->refresh_metadata =
            code == KC_KAFKA_KAFKA_STORAGE_ERROR; /* the leader may move off it */
        start_backoff(p, conf, now_ms);
        return;
    }
}

void kc_partition_on_fetch_ok(kc_partition_t *p, int64_t high_watermark, int64_t last_stable,
                              int64_t log_start, int32_t preferred_replica,
                              const kc_partition_conf_t *conf, int64_t now_ms)
{
    p->backoff_attempts = 0;
    if (high_watermark >= 0)
        p->high_watermark = high_watermark;
    if (last_stable >= 0)
        p->last_stable_offset = last_stable;
    if (log_start >= 0)
        p->log_start_offset = log_start;
    int64_t end = conf->read_committed ? p->last_stable_offset : p->high_watermark;
    p->lag = end >= 0 && p->position >= 0 ? (end > p->position ? end - p->position : 0) : -1;
    if (conf->has_rack && preferred_replica >= 0 && preferred_replica != p->preferred_replica) {
        p->preferred_replica = preferred_replica;
        p->preferred_until_ms = now_ms + conf->replica_ttl_ms;
    }
}

int kc_partition_on_broker_failure(kc_partition_t *p, int32_t broker_id)
{
    if (p->preferred_replica == KC_NO_BROKER || p->preferred_replica != broker_id ||
        broker_id == p->leader_id)
        return 0;
    p->preferred_replica = KC_NO_BROKER;
    return 1;
}

int kc_partition_on_metadata(kc_partition_t *p, int32_t leader_id, int32_t leader_epoch)
{
    int moved = leader_id != p->leader_id || leader_epoch > p->leader_epoch;
    p->leader_id = leader_id;
    if (leader_epoch > p->leader_epoch || leader_epoch == KC_NO_EPOCH)
        p->leader_epoch = leader_epoch;
    if (leader_id == KC_NO_BROKER) {
        if (p->state == KC_FS_ACTIVE)
            p->state = KC_FS_AWAIT_METADATA;
        return 0;
    }
    if (p->state != KC_FS_ACTIVE && p->state != KC_FS_AWAIT_METADATA)
        return p->state == KC_FS_AWAIT_VALIDATION;
    /* After a leader change the new leader's log may end before our position (unclean
     * election, truncation); only OffsetForLeaderEpoch can tell, and only if we know the epoch
     * our position came from. */
    if ((moved || p->state == KC_FS_AWAIT_METADATA) && p->position_epoch != KC_NO_EPOCH) {
        p->state = KC_FS_AWAIT_VALIDATION;
        return 1;
    }
    p->state = KC_FS_ACTIVE;
    return 0;
}

void kc_partition_on_reset(kc_partition_t *p, int64_t offset, int32_t leader_epoch)
{
    p->position = offset;
    p->position_epoch = leader_epoch;
    p->backoff_attempts = 0;
    p->state = p->leader_id == KC_NO_BROKER ? KC_FS_AWAIT_METADATA : KC_FS_ACTIVE;
}

void kc_partition_seek(kc_partition_t *p, int64_t offset)
{
    kc_partition_on_reset(p, offset, KC_NO_EPOCH);
}

int32_t kc_partition_route(kc_partition_t *p, const kc_partition_conf_t *conf, int64_t now_ms)
{
    if (p->preferred_replica != KC_NO_BROKER &&
        (!conf->has_rack || now_ms >= p->preferred_until_ms))
        p->preferred_replica = KC_NO_BROKER; /* back to the leader (metadata.max.age.ms) */
    return p->preferred_replica != KC_NO_BROKER ? p->preferred_replica : p->leader_id;
}

int32_t kc_partition_fetch_target(kc_partition_t *p, const kc_partition_conf_t *conf,
                                  int64_t now_ms)
{
    if (p->state == KC_FS_BACKOFF && now_ms >= p->backoff_until_ms)
        p->state = KC_FS_ACTIVE;
    int32_t route = kc_partition_route(p, conf, now_ms);
    if (p->paused || p->state != KC_FS_ACTIVE || p->position < 0)
        return KC_NO_BROKER;
    return route;
}

kc_validation_t kc_partition_validate(int64_t position, int16_t code, int32_t end_epoch,
                                      int64_t end_offset)
{
    if (code != 0)
        return KC_VALID_RETRY;
    if (end_epoch == KC_NO_EPOCH || end_offset == KC_NO_OFFSET)
        return KC_VALID_UNKNOWN;
    return end_offset < position ? KC_VALID_TRUNCATED : KC_VALID_OK;
}

void kc_partition_on_validation(kc_partition_t *p, int16_t code, int32_t end_epoch,
                                int64_t end_offset, const kc_partition_conf_t *conf, int64_t now_ms,
                                kc_partition_event_t *ev)
{
    memset(ev, 0, sizeof *ev);
    if (p->state != KC_FS_AWAIT_VALIDATION)
        return; /* a seek or reset overtook the request: its answer is about an old position */
    switch (kc_partition_validate(p->position, code, end_epoch, end_offset)) {
    case KC_VALID_OK:
        p->state = KC_FS_ACTIVE;
        return;
    case KC_VALID_TRUNCATED:
        ev->truncated = 1;
        ev->truncated_from = p->position;
        ev->report = 1;
        kc_fail(&ev->error, KC_ERR_STATE,
                "partition %d: log truncated to %lld below our position %lld (KIP-320)",
                (int)p->tp.partition, (long long)end_offset, (long long)p->position);
        p->position = end_offset;
        p->position_epoch = end_epoch;
        p->state = KC_FS_ACTIVE;
        return;
    case KC_VALID_UNKNOWN:
        apply_reset_policy(p, conf, ev, "no end offset for our leader epoch");
        return;
    case KC_VALID_RETRY:
        if (kc_fetch_classify_error(code) == KC_FA_MOVE) {
            /* AWAIT_METADATA validates again once metadata names the leader. */
            p->state = KC_FS_AWAIT_METADATA;
            ev->refresh_metadata = 1;
        } else {
            start_backoff(p, conf, now_ms);
            p->state = KC_FS_AWAIT_VALIDATION; /* validation is retried after the backoff */
        }
        kc_fail_kafka(&ev->error, code, "OffsetForLeaderEpoch partition %d", (int)p->tp.partition);
        return;
    }
}

kc_err_t kc_partition_reset_timestamp(kc_offset_reset_t reset, int64_t *ts, kc_error_t *err)
{
    switch (reset) {
    case KC_RESET_EARLIEST:
        *ts = -2;
        return KC_OK;
    case KC_RESET_LATEST:
        *ts = -1;
        return KC_OK;
    default:
        return kc_fail(err, KC_ERR_STATE, "auto.offset.reset=none: no automatic reset");
    }
}
