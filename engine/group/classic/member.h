/*
 * The classic group member (JoinGroup / SyncGroup / Heartbeat / LeaveGroup) as a pure state
 * machine: no sockets, no clock reads, no threads. The engine feeds it inputs (responses, action
 * completions, time) and pulls outputs with kc_classic_poll() until it returns false, then sleeps
 * until kc_classic_next_wakeup().
 *
 * ONE COORDINATOR CONNECTION PER MEMBER. A JoinGroup is answered only when the rebalance
 * completes, and a broker reads no further request from a socket until it has answered the one
 * before: two members sharing a connection deadlock (seen as a plain timeout). The engine must
 * give each kc_classic_t its own coordinator connection. The machine itself keeps at most one
 * group request in flight, which is what that connection allows anyway.
 *
 * Requests come out typed (the generated request structs); the engine encodes them at the
 * version it negotiated. group.instance.id needs JoinGroup v5+ (refuse a static member against
 * an older broker); MEMBER_ID_REQUIRED only happens at v4+. Views in an output point into the
 * machine and stay valid until its next input or poll.
 *
 * Reconciliation: group/reconcile.h's, as for KIP-848, over sets of the member's topics interned
 * by name (the classic payloads name topics, in Java's String order): REVOKE (stop dispatch,
 * on_revoke on workers, → kc_classic_action_done) → COMMIT (auto-commit under our identity, →
 * kc_classic_commit_result; bounded by commit_timeout_ms, past it the next owner re-reads from the
 * last commit: at-least-once; skipped without a generation) → DROP (forget in fetch sessions, →
 * action_done) → ASSIGN (on_assign, then fetch, → action_done). LOSE replaces REVOKE and skips
 * COMMIT when the generation is gone. No JoinGroup is sent while a reconciliation is pending, so
 * a new target never waits behind a running one (a SyncGroup answered after max.poll.interval.ms
 * ran out, whose member is losing what it holds, is not applied). eager (range, roundrobin, sticky,
 * or any list that is not all-cooperative, as Java): before each JoinGroup every owned partition is
 * revoked (or lost if the generation is gone); cooperative (cooperative-sticky only): before
 * JoinGroup only partitions of topics no longer subscribed are revoked; after SyncGroup owned
 * \ assigned is revoked and, if that was not empty, the member rejoins at once so the withheld
 * partitions can be handed over.
 *
 * Owner: network thread.
 */
#ifndef KC_ENGINE_GROUP_CLASSIC_MEMBER_H
#define KC_ENGINE_GROUP_CLASSIC_MEMBER_H

#include <stdbool.h>
#include <stdint.h>

#include "group/classic/assign/assign.h"
#include "group/reconcile.h"
#include "offsets.h"
#include "proto/heartbeat.gen.h"
#include "proto/join_group.gen.h"
#include "proto/leave_group.gen.h"
#include "proto/sync_group.gen.h"

#define KC_CLASSIC_MAX_ASSIGNORS 4

typedef struct kc_classic_config {
    const char *group_id;
    const char *instance_id; /* group.instance.id; NULL = dynamic member */
    const char *rack;        /* client.rack; NULL = none */
    kc_assignor_t assignors[KC_CLASSIC_MAX_ASSIGNORS]; /* partition.assignment.strategy order */
    size_t n_assignors;
    int32_t session_timeout_ms;     /* session.timeout.ms (45000) */
    int32_t rebalance_timeout_ms;   /* max.poll.interval.ms (300000), as Java */
    int32_t heartbeat_interval_ms;  /* heartbeat.interval.ms (3000) */
    int64_t coordinator_timeout_ms; /* a rediscovery is surfaced (ERROR) only past this */
    bool auto_commit;               /* commit processed offsets before revoking */
    int64_t commit_timeout_ms;      /* how long a revocation waits on its commit */
    int64_t retry_backoff_ms;       /* retry.backoff.ms */
    int64_t retry_backoff_max_ms;   /* retry.backoff.max.ms: the cap of rediscover_at_ms */
} kc_classic_config_t;

/* Partition count of a topic from the engine's metadata (0 = unknown). */
typedef int32_t (*kc_classic_partitions_fn)(void *ctx, const char *topic);
/* Replica racks of a topic's partitions from live metadata, for rack-aware assignment (KIP-881,
 * used by the assignors when members have a client.rack, as Java's leader does): (*racks)[p]
 * lists the racks of partition p's replicas ((*n)[p] entries; NULL for a broker without a rack)
 * for exactly n_partitions partitions. false when not known for that count: the assignors then
 * see no racks. The views only need to live for the call (same ctx as the partitions lookup). */
typedef bool (*kc_classic_racks_fn)(void *ctx, const char *topic, int32_t n_partitions,
                                    const char *const *const **racks, const size_t **n);

typedef enum kc_classic_out_kind {
    KC_CLASSIC_SEND_JOIN = 1,  /* req.join → kc_classic_join_response / request_failed */
    KC_CLASSIC_SEND_SYNC,      /* req.sync → kc_classic_sync_response */
    KC_CLASSIC_SEND_HEARTBEAT, /* req.heartbeat → kc_classic_heartbeat_response */
    KC_CLASSIC_SEND_LEAVE,     /* req.leave → kc_classic_leave_response */
    KC_CLASSIC_DESCRIBE,   /* DescribeGroups(group) → kc_classic_describe_result (error text) */
    KC_CLASSIC_REDISCOVER, /* FindCoordinator again → kc_classic_coordinator_known */
    KC_CLASSIC_ABANDON,    /* drop the coordinator connection: its request fails →
                              kc_classic_request_failed (a leave waits behind a parked join) */
    KC_CLASSIC_REVOKE,     /* parts: stop dispatch, on_revoke → kc_classic_action_done(seq) */
    KC_CLASSIC_LOSE,       /* parts: stop dispatch, on_lost → kc_classic_action_done(seq) */
    KC_CLASSIC_COMMIT,     /* parts + who: commit processed offsets → kc_classic_commit_result */
    KC_CLASSIC_DROP,       /* parts: forget in the fetch sessions → kc_classic_action_done */
    KC_CLASSIC_ASSIGN,     /* parts: on_assign, then fetch → kc_classic_action_done */
    KC_CLASSIC_ERROR,      /* error: surfaced, not fatal (e.g. coordinator gone past deadline) */
    KC_CLASSIC_FATAL,      /* error: the consumer must be closed */
    KC_CLASSIC_CLOSED,     /* close finished (LeaveGroup answered or not needed) */
} kc_classic_out_kind_t;

typedef struct kc_classic_out {
    kc_classic_out_kind_t kind;
    uint64_t seq; /* actions: pass back with the completion */
    union {
        kc_join_group_request_t join;
        kc_sync_group_request_t sync;
        kc_heartbeat_request_t heartbeat;
        kc_leave_group_request_t leave;
    } req;
    const kc_tpset_t *parts;  /* REVOKE/LOSE/COMMIT/DROP/ASSIGN */
    kc_commit_identity_t who; /* COMMIT: member id, generation, instance id */
    kc_error_t error;         /* ERROR/FATAL */
} kc_classic_out_t;

typedef enum kc_classic_state {
    KC_CLASSIC_ST_IDLE = 0, /* not subscribed */
    KC_CLASSIC_ST_UNJOINED, /* must (re)join: preparing, or waiting to send JoinGroup */
    KC_CLASSIC_ST_JOINING,  /* JoinGroup in flight */
    KC_CLASSIC_ST_SYNCING,  /* SyncGroup due or in flight */
    KC_CLASSIC_ST_STABLE,
    KC_CLASSIC_ST_CLOSING,
    KC_CLASSIC_ST_CLOSED,
    KC_CLASSIC_ST_FATAL,
} kc_classic_state_t;

typedef enum kc_classic_inflight {
    KC_CLASSIC_IF_NONE = 0,
    KC_CLASSIC_IF_JOIN,
    KC_CLASSIC_IF_SYNC,
    KC_CLASSIC_IF_HEARTBEAT,
    KC_CLASSIC_IF_LEAVE,
} kc_classic_inflight_t;

/* Owner: network thread. */
typedef struct kc_classic {
    kc_classic_config_t cfg;
    kc_classic_partitions_fn partitions;
    kc_classic_racks_fn racks; /* NULL: no replica racks known */
    void *partitions_ctx;
    bool cooperative; /* every configured assignor is cooperative (Java's rule) */

    kc_classic_state_t state;
    kc_classic_inflight_t inflight;
    char **topics; /* subscription, sorted by Java String order */
    size_t n_topics;

    char *member_id;    /* "" until the coordinator gives one */
    int32_t generation; /* -1: none */
    char *protocol;     /* assignor the coordinator chose for this generation */
    bool is_leader;
    bool rejoin_needed;
    bool prepared; /* join-prepare (revoke/lose before JoinGroup) done for this round */
    bool closing, close_then_idle;
    /* Leaving while a JoinGroup or SyncGroup waited at the coordinator for the rebalance: the
     * member dropped that request (KC_CLASSIC_ABANDON) and owes the LeaveGroup, so its close
     * waits for the coordinator to be found again rather than ending without one. */
    bool abandoned_for_leave;

    /* the leader's metadata snapshot at assignment: (topic, partition count), for rejoin on
     * a partition-count change (Java: only the leader watches) */
    char **snap_topics;
    int32_t *snap_counts;
    size_t n_snap;

    /* Every set's topics, interned by name in Java's String order; freed after the sets. */
    kc_gtopics_t interned;
    /* The reconciliation: rc.owned is what the JoinGroup reports as owned (sent only while no
     * reconciliation is pending), rc.held what the application holds right now. */
    kc_reconcile_t rc;
    int64_t commit_retry_at_ms; /* a COMMIT that failed and may be retried goes out from then */
    kc_tpset_t last_assigned;   /* eager sticky user data: the last assignment received */
    int32_t last_assigned_gen;

    /* coordinator. A coordinator lost again before the member got anywhere with it (a
     * successful heartbeat or an assignment) is looked up after a backoff that doubles from
     * retry.backoff.ms to retry.backoff.max.ms (lost_streak counts those losses): a coordinator
     * that answers JoinGroup and then fails every SyncGroup would otherwise be reconnected to
     * and joined again every few milliseconds. The first loss is looked up at once. */
    bool coord_known, rediscover_due, coord_error_surfaced;
    int64_t coord_lost_at_ms, rediscover_at_ms;
    int lost_streak;
    uint64_t backoff_rng; /* the jitter of that backoff (io/backoff.h), seeded from the group id */

    int64_t next_heartbeat_ms, last_heartbeat_ok_ms, retry_at_ms;
    bool describe_due;
    /* max.poll.interval.ms: a callback overran (poll_expired until it returns); leave_due until
     * the LeaveGroup for it went out; leave_id keeps the id that LeaveGroup names. */
    bool poll_expired, leave_due;
    char *leave_id;
    /* The application's commits under our identity are unanswered: a close's LeaveGroup waits. */
    bool commits_out;
    uint64_t mismatched_assignments; /* SyncGroup answers naming unsubscribed topics */
    int16_t fatal_code;
    bool fatal_pending, closed_pending;
    kc_error_t fatal;
    kc_error_t error_out;
    bool error_pending;

    /* encoded JoinGroup protocols / SyncGroup assignments of the last request */
    kc_join_group_request_protocol_t protocols[KC_CLASSIC_MAX_ASSIGNORS];
    kc_wbuf_t proto_meta[KC_CLASSIC_MAX_ASSIGNORS];
    kc_sync_group_request_assignment_t *sync_items;
    kc_wbuf_t *sync_bufs;
    size_t n_sync;
    kc_leave_group_request_member_identity_t leave_member;
} kc_classic_t;

kc_err_t kc_classic_init(kc_classic_t *m, const kc_classic_config_t *cfg,
                         kc_classic_partitions_fn partitions, void *ctx, kc_error_t *err);
void kc_classic_free(kc_classic_t *m);
/* Feeds the leader's assignors replica racks (ctx: the partitions lookup's). */
void kc_classic_set_racks(kc_classic_t *m, kc_classic_racks_fn racks);

/* App commands. subscribe() with a changed topic list triggers a rejoin. */
kc_err_t kc_classic_subscribe(kc_classic_t *m, const char *const *topics, size_t n,
                              kc_error_t *err);
void kc_classic_unsubscribe(kc_classic_t *m); /* leave; back to IDLE */
void kc_classic_close(kc_classic_t *m);       /* leave (dynamic only); then CLOSED */

/* Coordinator module. */
void kc_classic_coordinator_known(kc_classic_t *m, int64_t now_ms);
void kc_classic_coordinator_lost(kc_classic_t *m, int64_t now_ms);
/* The in-flight request failed in transport (connection lost, timeout): coordinator lost. */
void kc_classic_request_failed(kc_classic_t *m, int64_t now_ms);

/* Responses (decoded by the engine; views only need to live for the call). */
void kc_classic_join_response(kc_classic_t *m, const kc_join_group_response_t *r, int64_t now_ms);
void kc_classic_sync_response(kc_classic_t *m, const kc_sync_group_response_t *r, int64_t now_ms);
void kc_classic_heartbeat_response(kc_classic_t *m, int16_t code, int64_t now_ms);
void kc_classic_leave_response(kc_classic_t *m, int16_t code, int64_t now_ms);
/* DescribeGroups for the INCONSISTENT_GROUP_PROTOCOL text: the group's protocol type and
 * protocol (NULL when unknown or the describe failed). */
void kc_classic_describe_result(kc_classic_t *m, const char *protocol_type, const char *protocol);

/* max.poll.interval.ms, reported by the runtime's watchdog through the driver (the classic twin
 * of kc_g848_poll_expired). Expired: what the member holds is lost at once (dispatch stops; on_lost
 * runs for the overrunning partition when its callback returns), a LeaveGroup goes out as soon
 * as no other group request is in flight (static members too, naming their instance id: the
 * partitions must go to a member that makes progress, the rule the KIP-848 path follows), the
 * generation and member id are dropped, and no JoinGroup is sent until resumed (the callback
 * returned); then the member joins again as a new member. */
void kc_classic_poll_expired(kc_classic_t *m, int64_t now_ms);
void kc_classic_poll_resumed(kc_classic_t *m, int64_t now_ms);
/* The application's commits under the member's identity are unanswered (true) / answered: the
 * LeaveGroup of a close or unsubscribe goes out only once they are answered (group.h,
 * kc_group_commit), so that each gets the broker's verdict on a member still in the group;
 * heartbeats go on meanwhile, keeping the session. The leave of a max.poll.interval.ms overrun
 * does not wait: the member is already out of step. */
void kc_classic_commits_in_flight(kc_classic_t *m, bool in_flight, int64_t now_ms);

/* Completions of REVOKE/LOSE/DROP/ASSIGN; stale seqs are ignored. */
void kc_classic_action_done(kc_classic_t *m, uint64_t seq, int64_t now_ms);
/* Result of a COMMIT action: the first error code (top level or partition), 0 = committed. */
void kc_classic_commit_result(kc_classic_t *m, uint64_t seq, int16_t code, int64_t now_ms);
/* An application commit answered with this code (REBALANCE_IN_PROGRESS → rejoin, ...). */
void kc_classic_app_commit_error(kc_classic_t *m, int16_t code, int64_t now_ms);
/* Metadata changed: the leader compares partition counts with its snapshot. */
void kc_classic_metadata_changed(kc_classic_t *m, int64_t now_ms);

/* Next output; false when there is nothing to do now. */
bool kc_classic_poll(kc_classic_t *m, int64_t now_ms, kc_classic_out_t *out);
/* When to poll next without new input (INT64_MAX: only on input). */
int64_t kc_classic_next_wakeup(const kc_classic_t *m);

/* ---- payloads (group/classic/payload.c) --------------------------------------------------- */

/* Our ConsumerProtocolSubscription (v3, version-prefixed) for one assignor. */
kc_err_t kc_classic_encode_subscription(const kc_classic_t *m, kc_assignor_t a, kc_wbuf_t *w,
                                        kc_error_t *err);
/* Leader: decode every member's subscription, run `a`, encode each member's
 * ConsumerProtocolAssignment (v3). items/bufs are allocated (n = members) and owned by the
 * caller; on success also records the metadata snapshot in m. */
kc_err_t kc_classic_leader_assign(kc_classic_t *m, kc_assignor_t a,
                                  const kc_join_group_response_t *r,
                                  kc_sync_group_request_assignment_t **items, kc_wbuf_t **bufs,
                                  size_t *n, kc_error_t *err);
/* Decode a ConsumerProtocolAssignment (an empty buffer is an empty assignment), its topics
 * interned in `names` (the member's, to compare with its sets). */
kc_err_t kc_classic_decode_assignment(kc_gtopics_t *names, kc_bytes_t b, kc_tpset_t *out,
                                      kc_error_t *err);
void kc_classic_snapshot_free(kc_classic_t *m);

#endif
