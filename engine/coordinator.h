/*
 * Group coordinator access for offsets: FindCoordinator (cached per group), OffsetCommit and
 * OffsetFetch, each retried until a deadline (never an attempt count) when the answer says
 * "ask again": NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS arrive
 * INSIDE a successful response (per partition on OffsetCommit, per group or partition on
 * OffsetFetch), so this module reads them, invalidates the cached coordinator and asks again.
 *
 * Identity (engine/offsets.h): a consumer without membership commits anonymously (member id "",
 * generation -1); group modules pass their member identity, fixed per call (kc_engine_commit:
 * their state machines handle STALE_MEMBER_EPOCH themselves) or read afresh for every request
 * (kc_engine_commit_member: the application's commits). Coordinator traffic uses its own
 * connection per coordinator, never a fetch connection: a broker answers a connection's
 * requests in order, so a commit behind a long-polling Fetch would wait fetch.max.wait.ms, and
 * a classic JoinGroup would block the fetches behind it.
 *
 * Threads: network thread only; the result callback runs there exactly once per accepted call
 * (also on close, with KC_ERR_CLOSED).
 */
#ifndef KC_ENGINE_COORDINATOR_H
#define KC_ENGINE_COORDINATOR_H

#include "engine.h"
#include "offsets.h"

/* One partition's offset, in and out. */
typedef struct kc_engine_offset {
    const char *topic;
    int32_t partition;
    int64_t offset;       /* commit: the next offset to read; fetch: the result, -1 = none */
    int32_t leader_epoch; /* -1 unknown */
    const char *metadata; /* commit: NULL = none; fetch result: what was committed, NULL: none */
    int16_t error;        /* result: the partition's Kafka error code, 0 ok */
} kc_engine_offset_t;

/* rc: KC_OK when every partition succeeded; KC_ERR_BROKER (err->kafka_code = the first code) when
 * the broker refused some (each `res[i].error` says which); KC_ERR_TIMEOUT when the deadline
 * passed while the coordinator kept moving or loading; KC_ERR_CLOSED at engine close.
 * `res` (n entries, same order as asked) is valid during the call only. */
typedef void (*kc_engine_offsets_cb)(void *opaque, kc_err_t rc, const kc_error_t *err,
                                     const kc_engine_offset_t *res, size_t n);

/* OffsetCommit under `who` (anonymous or member). Everything is copied. */
kc_err_t kc_engine_commit(kc_engine_t *e, const kc_commit_identity_t *who,
                          const kc_engine_offset_t *offs, size_t n, int timeout_ms,
                          kc_engine_offsets_cb cb, void *opaque, kc_error_t *err);

/* A commit of acknowledgements (kc_commit in a share group): sends every verdict given through
 * kc_engine_share_ack so far now (a ShareAcknowledge, rather than waiting for the next
 * ShareFetch) and calls `cb` once the broker answered all of them, at the deadline, or at
 * kc_engine_close (KC_ERR_CLOSED). Results: one per partition acknowledged meanwhile, `offset`
 * one past the highest offset acknowledged, `error` the first Kafka code the broker refused a
 * range of it with (INVALID_RECORD_STATE: a lock ran out first). rc: KC_OK all applied;
 * KC_ERR_BROKER some refused; KC_ERR_TRANSPORT some got no usable answer (the broker may or may
 * not have applied them: their locks run out and the records are handed out again);
 * KC_ERR_TIMEOUT. `refusals` (the application's commits): the results also list the partitions
 * whose verdicts were refused before they could leave since the last such commit (error
 * KC_ENGINE_SHARE_UNSENT; rc KC_ERR_STATE when nothing worse happened), and a commit with only
 * those is answered at once. Nothing queued or to report: *none, and `cb` is not called. Share
 * groups' counterpart of kc_engine_commit, in its terms; implemented by share/fetcher.c. */
kc_err_t kc_engine_share_commit(kc_engine_t *e, int timeout_ms, bool refusals,
                                kc_engine_offsets_cb cb, void *opaque, bool *none, kc_error_t *err);
/* Renew the acquisition lock of offsets [first, last] of that delivery (KIP-1222): sent at once
 * in a ShareAcknowledge (v2) with whatever else is pending for the broker holding them, and `cb`
 * is called as for kc_engine_share_commit once that broker answered (its result for the
 * partition says whether the renewal took; kc_engine_share_deadline then gives the new
 * deadline), at the deadline, or at kc_engine_close. Refused at once, `cb` not called:
 * KC_ERR_STATE when the lock ran out already or the records were handed out again,
 * KC_ERR_UNSUPPORTED when their broker has no ShareAcknowledge v2 (Kafka before 4.2),
 * KC_ERR_TRANSPORT when it is not connected now, KC_ERR_CLOSED once closing. */
kc_err_t kc_engine_share_renew(kc_engine_t *e, const char *topic, int32_t partition, int64_t first,
                               int64_t last, int16_t delivery_count, int timeout_ms,
                               kc_engine_offsets_cb cb, void *opaque, kc_error_t *err);
/* A group member's identity, read when each request is built (network thread), never when the
 * call starts: the member epoch / generation moves with every rebalance, and a commit retried
 * after a coordinator move or a STALE_MEMBER_EPOCH must carry the current one. KC_OK fills *who
 * (its strings need only last until the next loop turn); an error (not a member right now) ends
 * the call with that error. */
typedef kc_err_t (*kc_engine_identity_fn)(void *ctx, kc_commit_identity_t *who, kc_error_t *err);

/* OffsetCommit / OffsetFetch of `group` under the identity `who(ctx)` gives at each attempt
 * (`ctx` must outlive the call: the engine's close finishes it). Differences from the fixed-
 * identity calls: STALE_MEMBER_EPOCH is asked again (with the epoch read afresh) until the
 * deadline; OffsetFetch carries the member id and epoch (v9+) when `who` gives a member. The
 * identity is checked once at the call, so "not a member" fails at once. */
kc_err_t kc_engine_commit_member(kc_engine_t *e, const char *group, kc_engine_identity_fn who,
                                 void *ctx, const kc_engine_offset_t *offs, size_t n,
                                 int timeout_ms, kc_engine_offsets_cb cb, void *opaque,
                                 kc_error_t *err);
kc_err_t kc_engine_committed_member(kc_engine_t *e, const char *group, kc_engine_identity_fn who,
                                    void *ctx, const kc_engine_offset_t *offs, size_t n,
                                    int timeout_ms, kc_engine_offsets_cb cb, void *opaque,
                                    kc_error_t *err);

/* OffsetFetch of `group` for `offs` (topic, partition); results in res[i].offset. */
kc_err_t kc_engine_committed(kc_engine_t *e, const char *group, const kc_engine_offset_t *offs,
                             size_t n, int timeout_ms, kc_engine_offsets_cb cb, void *opaque,
                             kc_error_t *err);

/* Group membership traffic (engine/group/848/proto.c) shares the cache and the connections:
 * kc_engine_find_coordinator asks FindCoordinator until it answers or the deadline passes (cb with
 * n = 0: KC_OK once kc_engine_coord_conn has a connection); kc_engine_coord_conn is that
 * connection, NULL when the coordinator is not known; kc_engine_coord_invalidate forgets it (a
 * NOT_COORDINATOR inside a successful response, a failed request); kc_engine_coord_node is its
 * broker id, -1 when unknown. */
kc_err_t kc_engine_find_coordinator(kc_engine_t *e, const char *group, int timeout_ms,
                                    kc_engine_offsets_cb cb, void *opaque, kc_error_t *err);
struct kc_conn;
struct kc_conn *kc_engine_coord_conn(kc_engine_t *e, const char *group);
void kc_engine_coord_invalidate(kc_engine_t *e, const char *group);
int32_t kc_engine_coord_node(kc_engine_t *e, const char *group);

/* engine.c calls this at close: fails pending calls with KC_ERR_CLOSED, closes connections. */
void kc_eng_coord_free(kc_engine_t *e);

/* The one Kafka error code a group module acts on for a finished commit: the first per-partition
 * error, else 0 on success, else the broker's code, else REQUEST_TIMED_OUT for a transport
 * failure or an expired deadline — retriable, so the group module asks again rather than giving
 * up. Pure; any thread. */
int16_t kc_engine_commit_code(kc_err_t rc, const kc_error_t *err, const kc_engine_offset_t *res,
                              size_t n);

#endif
