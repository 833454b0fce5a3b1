/*
 * Group membership inside the engine: ONE driver for every group protocol.
 *
 * A protocol (KIP-848's ConsumerGroupHeartbeat in group/848/, the classic JoinGroup/SyncGroup
 * protocol in group/classic/) is a member state machine plus the requests only it sends
 * (heartbeats, joins, its metadata). It implements kc_group_proto_t, and this driver does the
 * rest, the same way for each:
 *   - the drive loop: one timer, re-entrant calls folded into one more pass, the protocol's
 *     next wakeup, at least every 100 ms (connecting and the watchdog have no event);
 *   - the reconciliation's actions (group/reconcile.h's order): REVOKE/LOSE through the hooks and
 *     the wait for every partition's completion, COMMIT of the processed offsets under the
 *     identity the action names, DROP, and ASSIGN with the committed offset read first
 *     (OffsetFetch; unreadable ones asked again, group/offset_pending.h);
 *   - max.poll.interval.ms: the runtime's watchdog count, handed to the protocol on each edge;
 *   - the self-fence (group/self_fence.h): measured from the send time of the last request whose
 *     answer kept the session (the protocol says which, kc_group_session_answered), against the
 *     session and ratio the protocol gives; while fenced nothing is committed;
 *   - the counters and the common part of the stats JSON.
 *
 * The engine knows nothing of workers (CONTRIBUTING: runtime → engine → io), so what touches
 * them goes through hooks the runtime implements (runtime/group.c):
 *   revoke       stop dispatch of one partition and run on_revoke (lost: on_lost) on its worker;
 *                returns 1 when a completion will follow (kc_group_revoked), 0 when nothing was
 *                held.
 *   committable  offset after the last processed record, -1 when none.
 *   drop         forget the partition (engine remove → forgotten in its fetch session; free it).
 *   assign       add the partition (on_assign on its worker before any record, then fetch from
 *                `start`, an offset or KC_ENGINE_START_RESET).
 *   poll_over    how many callbacks run past max.poll.interval.ms right now (the watchdog).
 *   error        an error for the application (fatal: the member stopped for good).
 *   fence        the self-fence (may be NULL): on, no record callback of the group's partitions
 *                may start (running ones finish), buffered records are kept and the
 *                application's commits are refused; `why` is reported once. off: the
 *                coordinator answered in time, delivery resumes where it stopped.
 *   settled      a drive pass ended (may be NULL): every revoke and assign the pass decided
 *                has been handed to the hooks, so the runtime can report the assignment once
 *                per change rather than once per partition.
 *
 * Periodic auto-commit is not here: the runtime runs one timer for every kind of consumer and
 * asks kc_group_may_auto_commit / kc_group_commit_identity. Commit-on-revoke is the
 * reconciliation's COMMIT step.
 *
 * Owner: network thread, everything (hooks are called there too).
 */
#ifndef KC_ENGINE_GROUP_GROUP_H
#define KC_ENGINE_GROUP_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "coordinator.h"
#include "engine.h"
#include "offsets.h"

typedef struct kc_group kc_group_t;

typedef struct kc_group_hooks {
    int (*revoke)(void *o, const char *topic, int32_t partition, bool lost);
    int64_t (*committable)(void *o, const char *topic, int32_t partition);
    void (*drop)(void *o, const char *topic, int32_t partition);
    kc_err_t (*assign)(void *o, const char *topic, int32_t partition, int64_t start,
                       kc_error_t *err);
    unsigned (*poll_over)(void *o);
    void (*error)(void *o, const kc_error_t *e, bool fatal);
    void *opaque;
    void (*fence)(void *o, bool on, const kc_error_t *why);
    void (*settled)(void *o);
} kc_group_hooks_t;

/* Every protocol's settings in one struct; runtime/rt_conf.c (kc_rt_group_conf) fills it from the
 * configuration, for both protocols. Copied by kc_group_new (strings too). */
typedef struct kc_group_conf {
    const char *group_id;
    const char *group_instance_id; /* NULL / "": dynamic */
    const char *rack_id;           /* client.rack */
    const char *server_assignor;   /* KIP-848: group.remote.assignor; NULL / "": the broker's */
    const char *assignors;         /* classic: partition.assignment.strategy, comma-separated */
    /* Where the protocols differ, each has its own field: both are filled, since under
     * group.protocol=auto the driver picks the protocol at subscribe. */
    int64_t session_timeout_ms;           /* classic: session.timeout.ms */
    int64_t consumer_session_timeout_ms;  /* KIP-848: group.consumer.session.timeout.ms, the
                                             self-fence's session until the group's is read */
    int32_t heartbeat_interval_ms;        /* classic (KIP-848: the coordinator's) */
    int32_t rebalance_timeout_ms;         /* KIP-848: max.poll.interval.ms */
    int32_t classic_rebalance_timeout_ms; /* classic: rebalance.timeout.ms, else max.poll */
    bool commit_on_revoke;                /* enable.auto.commit */
    int64_t commit_timeout_ms;
    int64_t coordinator_timeout_ms;
    int request_timeout_ms;
    double self_fence_ratio; /* group.self.fence.ratio; 0: never */
} kc_group_conf_t;

/* One reconciliation action, the same for every protocol: partitions by topic name. */
typedef enum kc_group_act_kind {
    KC_GROUP_ACT_NONE = 0,
    KC_GROUP_ACT_REVOKE, /* on_revoke on the workers → proto action_done(seq) */
    KC_GROUP_ACT_LOSE,   /* on_lost on the workers → proto action_done(seq) */
    KC_GROUP_ACT_COMMIT, /* commit the processed offsets under `who` → proto commit_result */
    KC_GROUP_ACT_DROP,   /* forget in the fetch sessions → proto action_done(seq) */
    KC_GROUP_ACT_ASSIGN, /* committed offset, then on_assign and fetch → proto action_done(seq) */
} kc_group_act_kind_t;

typedef struct kc_group_tp {
    const char *topic;
    int32_t partition;
} kc_group_tp_t;

/* Owner: network thread; the views point into the protocol's member and live until its next
 * input. */
typedef struct kc_group_action {
    kc_group_act_kind_t kind;
    uint64_t seq;
    const kc_group_tp_t *parts;
    size_t n;
    kc_commit_identity_t who; /* COMMIT */
} kc_group_action_t;

/* What a protocol implements. `m` is the protocol's member (made by `create`). */
typedef struct kc_group_proto {
    const char *name;       /* the group.protocol value: "consumer", "classic" */
    const char *epoch_name; /* "epoch", "generation": for messages */
    kc_err_t (*create)(void **m, kc_group_t *g, kc_error_t *err);
    void (*destroy)(void *m);
    /* Topic names, or a broker-evaluated regex (topics NULL) where the protocol has one. */
    kc_err_t (*subscribe)(void *m, const char *const *topics, size_t n, const char *regex,
                          kc_error_t *err);
    /* One drive pass, before the actions: time, the protocol's own requests and answers. */
    void (*step)(void *m, int64_t now);
    /* The next reconciliation action; the protocol carries out its other outputs itself on the
     * way (requests, rediscovery, errors through kc_group_report). */
    bool (*next_action)(void *m, int64_t now, kc_group_action_t *a);
    void (*action_done)(void *m, uint64_t seq, int64_t now);
    void (*commit_result)(void *m, uint64_t seq, int16_t code, int64_t now);
    /* One drive pass, after the actions (heartbeats that carry what the actions completed). */
    void (*finish)(void *m, int64_t now);
    int64_t (*next_wakeup)(void *m, int64_t now);
    /* max.poll.interval.ms: a callback overran it (true) / returned (false). */
    void (*poll_expired)(void *m, bool expired, int64_t now);
    void (*close)(void *m, int64_t now);
    /* Leave the group as close does (revoke, commit, leave), but stay able to subscribe again:
     * `closed` says when it is over, and a later `subscribe` joins anew. */
    void (*unsubscribe)(void *m, int64_t now);
    bool (*closed)(const void *m); /* left, or stopped for good; no request in flight */
    /* The identity the application's commits (and auto-commit) go under right now. */
    kc_err_t (*identity)(void *m, kc_commit_identity_t *who, kc_error_t *err);
    /* OffsetFetch names the member (KIP-848, v9+) rather than the anonymous form. */
    bool offset_fetch_names_member;
    /* The broker keeps the partitions' positions (share groups): ASSIGN hands the partitions to
     * the assign hook at once with start -1, reading no committed offset. */
    bool broker_positions;
    /* The revocation's COMMIT step commits the member's acknowledgements (share groups,
     * kc_engine_share_commit) instead of offsets: the verdicts of the revoked partitions' last
     * callbacks are answered before their partitions are dropped and before the member leaves,
     * since a member that left has every record it acquired handed out again. Refusals are
     * reported per range by the share fetcher (KC_EVENT_SHARE_ACK); the step never retries. */
    bool commit_acks;
    /* An application commit or auto-commit answered with `code` (0 ok); may be NULL. */
    void (*app_commit_result)(void *m, int16_t code, int64_t now);
    /* Commits sent under the member's identity outside the reconciliation (kc_group_commit) are
     * unanswered (true) / all answered (false): the member does not leave meanwhile. May be NULL
     * for a protocol that sends none. */
    void (*commits_in_flight)(void *m, bool in_flight, int64_t now);
    /* No reconciliation running and the member in its group: auto-commit may run. */
    bool (*stable)(const void *m);
    /* The self-fence's inputs: the session it is measured against, the ratio in force, and
     * whether it applies now (the member holds partitions and is in the group). */
    int64_t (*session_ms)(const void *m);
    double (*fence_ratio)(const void *m);
    bool (*fence_applies)(const void *m);
    int32_t (*epoch)(const void *m);
    const char *(*member_id)(const void *m);
    int32_t (*coordinator)(const void *m); /* the coordinator's broker id, -1 unknown */
    /* The protocol's members of the stats "group" object, no braces: `head` "state",
     * "member_id", "epoch", its own identity fields and "assignment"; `extra` its own counters
     * and settings, each preceded by a comma. Strings through kc_json_str (base/json.h). */
    void (*stats_head)(const void *m, kc_json_t *w);
    void (*stats_extra)(const void *m, kc_json_t *w);
} kc_group_proto_t;

/* The protocols there are; kc_group_auto_proto is group.protocol=auto's placeholder until the
 * choice (auto.c). */
extern const kc_group_proto_t kc_g848_proto;
extern const kc_group_proto_t kc_classic_proto;
extern const kc_group_proto_t kc_gshare_proto; /* share groups (KIP-932), group/share/ */
extern const kc_group_proto_t kc_group_auto_proto;

/* group.protocol=auto (proto NULL): the driver chooses at subscribe, from the coordinator, and
 * logs the choice once with its reason:
 *   - classic when the coordinator's ApiVersions lacks ConsumerGroupHeartbeat (Kafka < 3.7), or
 *     the group exists as a classic group with members (they are not converted under them);
 *   - KIP-848 otherwise, and for a regex subscription;
 *   - classic after all when the KIP-848 member is refused for want of the protocol
 *     (UNSUPPORTED_VERSION, or a coordinator without the API) before it ever joined: a 3.7-3.9
 *     broker lists the API without running the protocol.
 * The caller decides earlier when a protocol's own setting is set: then `proto` is that one and
 * `why` names the setting (logged the same way). A forced protocol never falls back: a forced
 * KIP-848 on a broker without it is a fatal error at once (the application gets KC_ERR_FATAL;
 * the message starts with the cause and names group.protocol=classic). */
kc_err_t kc_group_new(kc_group_t **out, kc_engine_t *e, const kc_group_proto_t *proto,
                      const char *why, const kc_group_conf_t *conf, const kc_group_hooks_t *hooks,
                      kc_error_t *err);
kc_err_t kc_group_subscribe(kc_group_t *g, const char *const *topics, size_t n, const char *regex,
                            kc_error_t *err);
/* Leave the group without closing: the pending reconciliation is finished or abandoned as at
 * close, the partitions are revoked (and committed), the member leaves (KIP-848: a heartbeat
 * with epoch -1, -2 when static; classic: LeaveGroup when dynamic), and kc_group_closed says when
 * that is over. kc_group_subscribe afterwards joins again, with whatever subscription it names.
 * A subscribe while the leave is still running is refused by the protocol (KC_ERR_STATE). */
void kc_group_unsubscribe(kc_group_t *g);
/* One partition's revoke/lost completion (a hook returned 1 for it). */
void kc_group_revoked(kc_group_t *g);
/* Close: finish or abandon the pending reconciliation (the protocol's rules), commit, leave.
 * kc_group_closed says when it is over (the caller decides how long to wait): not a member and
 * nothing of a leave in flight, which also holds before the first subscribe and once an
 * unsubscribe finished. */
void kc_group_close(kc_group_t *g);
bool kc_group_closed(const kc_group_t *g);
/* After kc_engine_close (the engine's answers are over or refused), before the engine's free. */
void kc_group_free(kc_group_t *g);

const kc_group_proto_t *kc_group_protocol(const kc_group_t *g);
/* The member id the coordinator knows us by ("" before the first join). Network thread. */
const char *kc_group_member_id(const kc_group_t *g);
/* The protocol's generation (classic) or member epoch (KIP-848) as it is now: <= 0 while not in
 * the group. Network thread. */
int32_t kc_group_epoch(const kc_group_t *g);
/* coordinator.h's kc_engine_identity_fn for the application's commits (ctx: the group), and
 * the one for its OffsetFetch (the anonymous form unless the protocol names the member). */
kc_err_t kc_group_commit_identity(void *g, kc_commit_identity_t *who, kc_error_t *err);
kc_err_t kc_group_fetch_identity(void *g, kc_commit_identity_t *who, kc_error_t *err);
/* The application's commits and the auto-commit of a member: OffsetCommit under `who`, or
 * under the identity as each request is built (kc_group_commit_identity) when `who` is NULL;
 * `cb` gets the engine's answer as kc_engine_commit would give it. Until every such commit is
 * answered the member does not leave (the protocol's commits_in_flight), or the broker could
 * take the leave first and refuse a commit sent while the member was in the group with
 * UNKNOWN_MEMBER_ID (an on_revoke's kc_commit_async during kc_close): the classic leave goes on
 * the protocol's own coordinator connection and the commit on the engine's, so nothing orders
 * them; a KIP-848 leave shares the commit's connection, but a commit waiting for the
 * coordinator or for a retry is not on it yet. Java's ConsumerCoordinator.close waits for its
 * pending async commits before leaving, for the same reason. The wait ends at
 * kc_group_leave_now. */
kc_err_t kc_group_commit(kc_group_t *g, const kc_commit_identity_t *who,
                         const kc_engine_offset_t *offs, size_t n, int timeout_ms,
                         kc_engine_offsets_cb cb, void *opaque, kc_error_t *err);
/* The close or unsubscribe is running out of time: the leave stops waiting for the commits
 * above and goes when the protocol is otherwise ready (Java's close sends its LeaveGroup when
 * its timer ends, pending commits or not); a member that stays in its group until the session
 * times out is the cost a leave avoids. Until the next subscribe. */
void kc_group_leave_now(kc_group_t *g);
/* An application commit's first Kafka code (0 ok), for the protocol (classic rejoins). */
void kc_group_app_commit_result(kc_group_t *g, int16_t code);
/* An auto-commit's answer (the runtime sends those), counted with the reconciliation's. */
void kc_group_count_commit(kc_group_t *g, int16_t code);
/* Auto-commit may run now: not closing, not self-fenced, the protocol stable. */
bool kc_group_may_auto_commit(const kc_group_t *g);
/* Appends the "group" object of the stats JSON. */
void kc_group_stats_json(const kc_group_t *g, kc_json_t *w);

/* ---- for the protocols (group/848/, group/classic/) ---------------------------------------- */

/* Counters the protocols and the driver keep; stats JSON names in comments. */
typedef struct kc_group_counters {
    uint64_t rebalances; /* "rebalances": a new epoch / generation */
    uint64_t heartbeats; /* "heartbeats": answers */
    uint64_t hb_errors;  /* "heartbeat_errors" */
    uint64_t commits;    /* "commits": the reconciliation's */
    uint64_t commit_failures;
    uint64_t rediscoveries; /* "rediscoveries": coordinator lookups after a loss */
    int64_t last_error_code;
} kc_group_counters_t;

kc_engine_t *kc_group_engine(const kc_group_t *g);
const kc_group_conf_t *kc_group_config(const kc_group_t *g);
kc_group_counters_t *kc_group_counters(kc_group_t *g);
/* The member reached a new generation (classic) or epoch (KIP-848) without error: counted in
 * "rebalances" and logged at INFO, the one place both protocols report a rebalance. */
void kc_group_rebalanced(kc_group_t *g);
/* Runs the drive loop (or marks one more pass when inside it): after every answer. */
void kc_group_drive(kc_group_t *g);
/* An error for the application (hooks.error); fatal: the member stopped for good. */
void kc_group_report(kc_group_t *g, const kc_error_t *e, bool fatal);
/* The answer to a request sent at sent_ms kept the member's session: the self-fence's clock. */
void kc_group_session_answered(kc_group_t *g, int64_t sent_ms);
bool kc_group_closing(const kc_group_t *g);
/* Room for an action's `n` partitions, owned by the driver and valid until the next call: the
 * protocols fill their actions' `parts` here. NULL when out of memory (or n is 0 and nothing
 * was ever asked). */
kc_group_tp_t *kc_group_parts(kc_group_t *g, size_t n);
/* The auto placeholder's verdict: `p` runs from the next drive pass on (group.h's rules). */
void kc_group_choose(kc_group_t *g, const kc_group_proto_t *p, const char *why);
/* FindCoordinator for the group through the engine's cache, one lookup at a time: the answer
 * (KC_OK once kc_engine_coord_conn has a connection) goes to `found` of the member that asked,
 * never to one group.protocol=auto put in its place, and a drive pass follows. false when no
 * lookup could start (the caller asks again later). */
typedef void (*kc_group_found_fn)(void *m, kc_err_t rc, const kc_error_t *err);
bool kc_group_find_coordinator(kc_group_t *g, kc_group_found_fn found);
bool kc_group_finding(const kc_group_t *g);
/* The protocol's member (what its `create` made). */
void *kc_group_member(const kc_group_t *g);

/* A request the engine answers later (OffsetFetch, OffsetCommit, FindCoordinator) carries one
 * of these as its callback's opaque. kc_group_op_end unlinks and frees it and returns the group,
 * NULL when the group went away first (kc_group_free) or the op was cancelled (an ASSIGN's
 * OffsetFetch overtaken by a LOSE; a FIND of a member group.protocol=auto replaced). */
typedef enum kc_group_op_kind {
    KC_GROUP_OP_ASSIGN = 1, /* OffsetFetch of an ASSIGN action */
    KC_GROUP_OP_COMMIT,     /* OffsetCommit of a COMMIT action */
    KC_GROUP_OP_OFFSETS,    /* OffsetFetch retry of group/offset_pending.h */
    KC_GROUP_OP_FIND,       /* FindCoordinator of a protocol */
    KC_GROUP_OP_APP_COMMIT, /* OffsetCommit of kc_group_commit */
} kc_group_op_kind_t;
typedef struct kc_group_op kc_group_op_t;
kc_group_op_t *kc_group_op_new(kc_group_t *g, kc_group_op_kind_t kind, uint64_t seq);
kc_group_t *kc_group_op_end(kc_group_op_t *op);
/* The engine closed or the group is being freed: answers must be ignored. */
bool kc_group_gone(const kc_group_t *g);

#endif
