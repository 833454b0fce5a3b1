/*
 * group.protocol=classic inside the engine: drives the pure classic member (group_classic.h) on
 * the network thread, the classic twin of engine/group848.h (same hook shape, same lifecycle).
 *
 * What it adds to the state machine:
 *  - its OWN coordinator connection (group_classic.h: JoinGroup blocks the socket until the
 *    rebalance completes, so it must not share the engine's commit/fetch connections). It finds
 *    the coordinator with its own FindCoordinator (over any engine connection), connects to it,
 *    and reports kc_classic_coordinator_known only once that connection is READY, so every
 *    request is encoded at once at the version negotiated there (views from kc_classic_poll do
 *    not outlive the next poll).
 *  - the partition counts of the subscribed topics (its own Metadata request, refreshed every
 *    3 s): the leader's assignors need them, and a change calls kc_classic_metadata_changed;
 *    from the same answers the replica racks (classic_racks.c) for rack-aware assignment.
 *  - max.poll.interval.ms: the watchdog's count (poll_over hook) drives
 *    kc_classic_poll_expired / kc_classic_poll_resumed, as group848.c drives kc_gc_poll_*.
 *  - DescribeGroups on its connection when INCONSISTENT_GROUP_PROTOCOL needs the group's side.
 *  - OffsetFetch for ASSIGN (committed offset; auto.offset.reset only when none was committed;
 *    an unreadable one is asked again, engine/offset_pending.h), OffsetCommit for COMMIT
 *    and the periodic auto-commit under the member's identity (member id, generation, instance
 *    id), through engine/coordinator.h.
 *
 * Hooks: kc_g848_hooks_t itself (runtime/consumer_group.c implements them over the dispatcher
 * for both protocols):
 *   revoke       stop dispatch of a partition, on_revoke (lost: on_lost) on its worker; returns 1
 *                when a completion follows (kc_gcl_revoked), 0 when nothing was held.
 *   committable  offset after the last processed record, -1 when none.
 *   drop         forget the partition (engine remove; free it).
 *   assign       add the partition (on_assign on its worker before records; fetch from `start`).
 *   poll_over    callbacks past max.poll.interval.ms (the watchdog): while > 0 the member
 *                is out of the group (kc_classic_poll_expired: lose, LeaveGroup), and it joins
 *                again when it drops to 0.
 *   error        an error for the application (fatal: the member stopped for good).
 *   fence        the self-fence, as in group848.h: measured from the send time of the last
 *                Heartbeat (or SyncGroup) whose answer kept the session, against
 *                session.timeout.ms, while the member holds partitions. A JoinGroup in flight
 *                does not hold it off: the coordinator keeps a member alive while its join
 *                waits, but only if the join reached it, which the member cannot tell from a
 *                join lost in a network partition. So a cooperative member whose JoinGroup
 *                waits past the fence point pauses until the SyncGroup answer.
 *
 * Owner: network thread, everything (hooks are called there too).
 */
#ifndef KC_ENGINE_CLASSIC_DRIVE_H
#define KC_ENGINE_CLASSIC_DRIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "group848.h"

typedef struct kc_gcl kc_gcl_t;

/* The group-module hooks are group848.h's, unchanged: one runtime glue serves both protocols. */
typedef kc_g848_hooks_t kc_gcl_hooks_t;

/* Copied by kc_gcl_new (strings too). */
typedef struct kc_gcl_conf {
    const char *group_id;
    const char *group_instance_id; /* NULL / "": dynamic */
    const char *rack_id;
    const char *assignors; /* partition.assignment.strategy, comma-separated */
    int32_t session_timeout_ms;
    int32_t rebalance_timeout_ms; /* max.poll.interval.ms */
    int32_t heartbeat_interval_ms;
    bool auto_commit;
    int64_t auto_commit_interval_ms;
    int64_t commit_timeout_ms;
    int64_t coordinator_timeout_ms;
    int request_timeout_ms;
    double self_fence_ratio; /* group.self.fence.ratio of session_timeout_ms; 0: never */
} kc_gcl_conf_t;

kc_err_t kc_gcl_new(kc_gcl_t **out, kc_engine_t *e, const kc_gcl_conf_t *conf,
                    const kc_gcl_hooks_t *hooks, kc_error_t *err);
kc_err_t kc_gcl_subscribe(kc_gcl_t *g, const char *const *topics, size_t n, kc_error_t *err);
/* One partition's revoke/lost completion (a hook returned 1 for it). */
void kc_gcl_revoked(kc_gcl_t *g);
/* Revoke (commit under our identity), then LeaveGroup when dynamic (a static member keeps its
 * place for session.timeout.ms). kc_gcl_closed says when it is over. */
void kc_gcl_close(kc_gcl_t *g);
bool kc_gcl_closed(const kc_gcl_t *g);
void kc_gcl_free(kc_gcl_t *g);
/* The "group" object of the stats JSON (same fields as kc_g848_stats_json; epoch = generation). */
size_t kc_gcl_stats_json(const kc_gcl_t *g, char *buf, size_t cap);

/* The member id the coordinator gave us ("" before the first JoinGroup answer). Network thread;
 * valid until the next JoinGroup response. */
const char *kc_gcl_member_id(const kc_gcl_t *g);

/* The identity the application's commits go under right now (coordinator.h's
 * kc_engine_identity_fn): member id + the CURRENT generation + group.instance.id; KC_ERR_STATE
 * before the first JoinGroup answer and after leaving. During a rebalance the broker answers
 * REBALANCE_IN_PROGRESS, which the caller reports. Network thread. */
kc_err_t kc_gcl_commit_identity(void *g, kc_commit_identity_t *who, kc_error_t *err);
/* The Kafka code of an application commit's answer (0 ok): ILLEGAL_GENERATION /
 * UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID mean our membership is gone, so the member rejoins, as
 * for its own auto-commit (and as the Java client does). Network thread. */
void kc_gcl_app_commit_result(kc_gcl_t *g, int16_t code);

#endif
