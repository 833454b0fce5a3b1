/*
 * group.protocol=consumer inside the engine: drives the pure KIP-848 member (group_consumer.h) on
 * the network thread. It owns the heartbeat timer, sends ConsumerGroupHeartbeat over the group's
 * coordinator connection (coordinator.h: FindCoordinator cache, REDISCOVER → invalidate and ask
 * again), resolves topic ids with its own all-topics Metadata request, fetches committed offsets
 * for newly assigned partitions (asked again while unreadable: offset_pending.h), commits under
 * the member's identity (member id + current epoch, STALE_MEMBER_EPOCH retried by the state
 * machine with the fresh epoch) and runs auto-commit.
 *
 * The engine knows nothing of workers (CONTRIBUTING: runtime → engine → io), so what touches
 * them goes through hooks the runtime implements (runtime/consumer_group.c):
 *   revoke     stop dispatch of one partition and run on_revoke (lost: on_lost) on its worker;
 *              returns 1 when a completion will follow (kc_g848_revoked), 0 when nothing was held.
 *   committable  offset after the last processed record, -1 when none.
 *   drop       forget the partition (engine remove → forgotten in its fetch session; free it).
 *   assign     add the partition (on_assign on its worker before any record, then fetch from
 *              `start`, an offset or KC_ENGINE_START_RESET).
 *   poll_over  how many callbacks run past max.poll.interval.ms right now (the watchdog).
 *   error      an error for the application (fatal: the member stopped for good).
 *   fence      the self-fence (engine/self_fence.h; may be NULL): on, no record callback of the
 *              group's partitions may start (running ones finish), buffered records are kept
 *              and the application's commits are refused; `why` is reported once. off: the
 *              coordinator answered in time, delivery resumes where it stopped.
 *
 * The self-fence: a heartbeat answered without error restarts the member's session at the
 * coordinator no earlier than its send time. When `self_fence_ratio` of the session timeout
 * has passed since that send time without another such answer, the member fences itself
 * (hook above) and commits nothing (auto-commit and the reconciliation's commits are skipped:
 * the partitions may move, and what they would have committed is redelivered, never lost). The
 * next answer without error lifts it; an answer that fences the member (FENCED_MEMBER_EPOCH,
 * UNKNOWN_MEMBER_ID) keeps it until the partitions are lost (on_lost) and the member joined
 * again.
 *
 * Owner: network thread, everything (hooks are called there too).
 */
#ifndef KC_ENGINE_GROUP848_H
#define KC_ENGINE_GROUP848_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "offsets.h"

typedef struct kc_g848 kc_g848_t;

typedef struct kc_g848_hooks {
    int (*revoke)(void *o, const char *topic, int32_t partition, bool lost);
    int64_t (*committable)(void *o, const char *topic, int32_t partition);
    void (*drop)(void *o, const char *topic, int32_t partition);
    kc_err_t (*assign)(void *o, const char *topic, int32_t partition, int64_t start,
                       kc_error_t *err);
    unsigned (*poll_over)(void *o);
    void (*error)(void *o, const kc_error_t *e, bool fatal);
    void *opaque;
    void (*fence)(void *o, bool on, const kc_error_t *why);
} kc_g848_hooks_t;

/* Copied by kc_g848_new (strings too). */
typedef struct kc_g848_conf {
    const char *group_id;
    const char *group_instance_id; /* NULL / "": dynamic */
    const char *rack_id;
    const char *server_assignor;  /* NULL / "": the broker's default */
    int32_t rebalance_timeout_ms; /* max.poll.interval.ms */
    bool auto_commit;             /* enable.auto.commit: also commit on revoke */
    int64_t auto_commit_interval_ms;
    int64_t commit_timeout_ms;
    int64_t coordinator_timeout_ms;
    /* The self-fence: the group's session timeout (group.consumer.session.timeout.ms, used
     * until the group's consumer.session.timeout.ms is known) and the part of it after which
     * the member fences itself (group.self.fence.ratio; 0: never). */
    int64_t session_timeout_ms;
    double self_fence_ratio;
} kc_g848_conf_t;

kc_err_t kc_g848_new(kc_g848_t **out, kc_engine_t *e, const kc_g848_conf_t *conf,
                     const kc_g848_hooks_t *hooks, kc_error_t *err);
/* Names (regex NULL) or a regex evaluated by the broker (names empty). Starts the member. */
kc_err_t kc_g848_subscribe(kc_g848_t *g, const char *const *topics, size_t n, const char *regex,
                           kc_error_t *err);
/* One partition's revoke/lost completion (a hook returned 1 for it). */
void kc_g848_revoked(kc_g848_t *g);
/* Close: finish or abandon the pending reconciliation (the state machine's rules), commit,
 * leave (-1, or -2 when static). kc_g848_closed says when it is over (or timed out: the caller
 * decides how long to wait). */
void kc_g848_close(kc_g848_t *g);
bool kc_g848_closed(const kc_g848_t *g);
void kc_g848_free(kc_g848_t *g);

/* The "group" object of the stats JSON into buf (snprintf rules; returns the length needed):
 * {"protocol","state","member_id","epoch","assignment":[["topic",p],...],"rebalances",...}. */
size_t kc_g848_stats_json(const kc_g848_t *g, char *buf, size_t cap);

/* The member id the coordinator knows us by ("" before the first join). Network thread; valid
 * until the next heartbeat response. */
const char *kc_g848_member_id(const kc_g848_t *g);

/* The identity the application's commits go under right now (coordinator.h's
 * kc_engine_identity_fn): member id + the CURRENT member epoch + instance id; KC_ERR_STATE while
 * the member holds no epoch (joining, rejoining after a fence, left). Network thread. */
kc_err_t kc_g848_commit_identity(void *g, kc_commit_identity_t *who, kc_error_t *err);

#endif
