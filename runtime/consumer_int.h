/*
 * runtime/consumer.c and consumer_api.c share this: the consumer object and the synchronous call
 * onto the network thread. Ownership as documented in consumer.c.
 */
#ifndef KC_RUNTIME_CONSUMER_INT_H
#define KC_RUNTIME_CONSUMER_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "conf.h"
#include "coordinator.h"
#include "dispatch.h"
#include "engine.h"
#include "netthread.h"
#include "part_index.h"

/* A group module's "group" object for the stats JSON: writes it (names per the contract:
 * protocol, state, member_id, epoch, assignment [[topic, partition], ...], rebalances) into buf
 * like snprintf (cap 0: only measure) and returns its length. Called on the network thread. */
typedef void (*kc_consumer_group_stats_fn)(void *opaque, kc_json_t *w);

/* One manually assigned partition. Owner: network thread. */
typedef struct kc_cpart {
    char *topic;
    int32_t partition;
    kc_rt_part_t *rtp;
    bool closing; /* revoked by kc_close: kept (with rtp) for the final commit; network thread */
    /* Assigned while older copies of it were still revoking (in `revs`): rtp was added held
     * and runs once the last of their REVOKE_DONEs is drained (consumer.c, on_cmpl). */
    bool held;
} kc_cpart_t;

/* kc_close's progress (kc_consumer.phase). OPEN: every call. CLOSING: assignment changes
 * (assign, unassign, subscribe) and kc_poll are refused; what a revocation needs (stores,
 * commits, positions, seeks, pauses) still works, so on_revoke can store and commit. CLOSED
 * (after the final commit): every call but kc_close is refused with KC_ERR_CLOSED. */
enum { KC_PHASE_OPEN, KC_PHASE_CLOSING, KC_PHASE_CLOSED };
enum { KC_CLOSE_NONE, KC_CLOSE_RUNNING, KC_CLOSE_DONE };

typedef struct kc_pull kc_pull_t; /* pull.c */

struct kc_consumer {
    kc_conf_t *conf;
    kc_conn_security_t *sec; /* security.protocol; read by the network thread's connections */
    /* OAUTHBEARER's token refresher (runtime/oauth_refresh.h: its own thread and locking); NULL
     * without OAUTHBEARER. Freed after the network thread stopped. */
    struct kc_oauth_refresher *oauth;
    kc_callbacks_t cbs;
    kc_netthread_t *nt;
    kc_logger_t log; /* client.id, log.level, the conf's log callback; read-only once threads run */
    kc_engine_t *e;
    kc_rt_t *rt;
    char *group;
    kc_cpart_t *parts; /* network thread */
    size_t n, cap;
    kc_pidx_t parts_at; /* network thread: parts by (topic, partition), so a per-partition call
                           does not walk 10,000 entries (engine/part_index.h) */
    size_t revoking;    /* partitions waiting for REVOKE_DONE: revs[0 .. revoking) */
    /* Network thread: the manual copies revoked whose REVOKE_DONE is not drained yet (freed
     * there); a new copy of one of these names is added held. Capacity kept >= n + revoking
     * by add_one, so a revoke never allocates. */
    kc_rt_part_t **revs;
    size_t revs_cap;
    bool assignment_changed; /* network thread: the manual table changed since the last
                                KC_EVENT_ASSIGNMENT (consumer.c, post_manual_assignment) */
    size_t close_revoking;   /* network thread: kc_close's revocations still waiting for
                                REVOKE_DONE (their parts are kept, kc_cpart.closing) */
    bool share_ack_all;      /* read-only after KC_COP_NEW: share.ack.events=all */
    atomic_int wake_pending;
    atomic_int rt_live;
    kc_loop_cmd_t wake_cmd;
    kc_rt_batch_decoder_conf_t dec_conf; /* outlives the dispatcher (decode_batch.c) */
    /* How far kc_close got (KC_PHASE_*): written by the closing app thread, read by every API
     * call (relaxed: a stale OPEN only lets a call reach the network thread, which checks again:
     * it runs commands in order, and the closing thread stores each phase before posting the
     * command that depends on it, so a command that runs after that one sees the phase). */
    atomic_int phase;
    /* kc_close between app threads: the first caller closes, later ones wait for it. Guarded by
     * close_mu; close_cv is signalled (broadcast) when close_state reaches KC_CLOSE_DONE. */
    pthread_mutex_t close_mu;
    pthread_cond_t close_cv; /* CLOCK_MONOTONIC */
    int close_state;         /* KC_CLOSE_NONE, KC_CLOSE_RUNNING, KC_CLOSE_DONE */
    int close_waiters;       /* kc_close calls waiting for another's close (kc_destroy waits
                                for them to leave: they still touch close_mu and close_cv) */
    kc_err_t close_rc;       /* the close's result, for the callers that waited for it */
    kc_error_t close_err;
    struct kc_rt_group *grp; /* group.protocol=consumer after kc_subscribe (group.c);
                              network thread */
    /* consumer_query.c: the member id (group modules set it), and ids it replaced */
    _Atomic(char *) member_id;
    pthread_mutex_t ext_mu;
    struct kc_old_id *old_ids;
    /* stats_json.c (network thread): the timer, and the group module's part of the JSON */
    kc_loop_timer_t stats_timer;
    kc_consumer_group_stats_fn group_stats;
    void *group_stats_opaque;
    /* auto_commit.c (network thread): the auto-commit timer and its counters */
    kc_loop_timer_t ac_timer;
    int ac_inflight;
    int async_pending; /* commits started and not answered yet (kc_commit_async, auto-commit) */
    uint64_t ac_commits, ac_failures;
    kc_pull_t *pull; /* pull.c: non-NULL in pull mode (no on_records) */
    /* share_commit.c (network thread): commits of acknowledgements waiting for callbacks */
    struct kc_share_cwait *share_waits;
};

typedef struct kc_ccall {
    kc_consumer_t *c;
    int op;
    const kc_topic_partition_t *tps;
    size_t n;
    /* KC_COP_ASSIGN: the caller's entries, tps before KC_OFFSET_STORED was resolved (a
     * partition that stays is left alone for STORED, seeked for an explicit offset) */
    const kc_topic_partition_t *asked;
    int kind, timeout_ms;
    int64_t value;
    const char *topic;
    int32_t partition;
    bool internal;  /* kc_close's own commands: past the close gate (refused_by_close) */
    bool leave_now; /* KC_COP_GROUP_CLOSE, KC_COP_UNSUBSCRIBE: kc_group_leave_now first */
    char *buf;      /* KC_COP_GROUP_GENERATION: the member id goes here (buf_len bytes) */
    void *result;   /* KC_COP_ASSIGNMENT, KC_COP_SUBSCRIPTION: the block for the caller */
    size_t buf_len;
    kc_err_t rc;
    kc_error_t err;
    /* For calls that finish later (commit, committed). The answer has its own fields, under mu:
     * it may come while the caller still reads rc and err, the network thread's synchronous
     * result (kc_consumer_call), and overwriting those would race with that read and could
     * make the caller return without waiting while finish_later still uses k. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    kc_err_t fin_rc; /* KC_OK where done was set without an answer (nothing to commit) */
    kc_error_t fin_err;
    kc_topic_partition_t *out;
    /* KC_COP_COMMIT: each entry's metadata string (n of them, an entry NULL: none), or NULL.
     * KC_COP_COMMITTED: n slots the answer's metadata strings are strdup'd into (NULL: none;
     * the caller frees them), or NULL. */
    const char *const *meta_in;
    char **meta_out;
    /* KC_COP_COMMIT with want_results (kc_commit_results): the answer's results, under mu. */
    bool want_results;
    kc_commit_result_t *results;
    size_t n_results;
    char *text; /* KC_COP_STATS: the stats JSON, malloc'd; the caller frees it */
    /* KC_COP_SHARE_RENEW: offsets value..last of the delivery with delivery_count; under mu,
     * the lock's new deadline (kc_now_ms) once renewed */
    int64_t last;
    int16_t delivery_count;
    int64_t deadline;
} kc_ccall_t;

enum {
    KC_COP_NEW,
    KC_COP_ADD,
    KC_COP_ASSIGN, /* kc_assign: the difference to tps (consumer.c, assign_diff) */
    KC_COP_UNASSIGN,
    KC_COP_SEEK,
    KC_COP_PAUSE,
    KC_COP_RESUME,
    KC_COP_COMMIT,
    KC_COP_COMMITTED,
    KC_COP_CLOSE,
    KC_COP_RT_DEAD,
    KC_COP_POSITION,         /* value <- the partition's committable offset */
    KC_COP_POSITIONS,        /* out[i].offset <- kc_position's answer for each of n entries */
    KC_COP_STORE,            /* the partition's committable offset <- value */
    KC_COP_SUBSCRIBE,        /* group.c: out = the topic names, n */
    KC_COP_UNSUBSCRIBE,      /* group.c: revoke, commit, leave; done when left (subscribe again) */
    KC_COP_GROUP_GENERATION, /* group.c: value <- generation / epoch, buf <- member id */
    KC_COP_SUBSCRIPTION,     /* group.c: result <- kc_consumer_str_block, value <- count */
    KC_COP_REMOVE,           /* kc_incremental_unassign: revoke the entries of tps */
    KC_COP_ASSIGNMENT,       /* result <- kc_consumer_tp_block of what is held, value <- count */
    KC_COP_SEEK_MANY,        /* kc_seek_partitions: each entry's offset, in order */
    KC_COP_GROUP_CLOSE,      /* group.c: revoke, commit, leave; done when left */
    KC_COP_COMMITS_IDLE,     /* kc_close: done once no async commit waits for its answer */
    KC_COP_STATS,            /* text <- one stats JSON object, now (kc_metrics) */
    KC_COP_SHARE_RENEW,      /* share_renew.c: renew a view's lock; done when the broker answered */
};

/* Runs `k` on the network thread and returns its result. Any app thread. */
kc_err_t kc_consumer_call(kc_consumer_t *c, kc_ccall_t *k, kc_error_t *err);
/* KC_ERR_INVALID_ARG for a NULL consumer; with `waits`, KC_ERR_STATE in callback context. */
kc_err_t kc_consumer_guard(const kc_consumer_t *c, const char *fn, bool waits, kc_error_t *err);
/* Same, then waits for the engine's callback (commit, committed). */
kc_err_t kc_consumer_call_wait(kc_consumer_t *c, kc_ccall_t *k, kc_error_t *err);

/* consumer_query.c: a list the application frees with one free(): the entries, then the
 * strings they point to, in one malloc'd block. NULL when out of memory. Any thread. */
kc_topic_partition_t *kc_consumer_tp_block(const kc_topic_partition_t *tps, size_t n);
char **kc_consumer_str_block(const char *const *s, size_t n);

/* A manual copy of topic[partition] is still being revoked (kc_unassign, or a kc_assign that
 * dropped it; its REVOKE_DONE not drained yet): a group copy assigned meanwhile is added held,
 * and consumer.c starts it at that copy's REVOKE_DONE, so no callbacks of the two overlap.
 * Network thread. */
bool kc_consumer_copy_revoking(const kc_consumer_t *c, const char *topic, int32_t partition);

/* consumer_query.c. Group modules call this (any thread, usually the network thread) when the
 * coordinator assigns or changes the member id; NULL or "" clears it. kc_member_id reads it
 * without waiting. */
void kc_consumer_set_member_id(kc_consumer_t *c, const char *id);
/* stats_json.c, network thread. A group module installs its hook by setting c->group_stats and
 * c->group_stats_opaque there; without one the group object says protocol "none", state
 * "manual". The JSON is malloc'd (NULL when out of memory). */
char *kc_consumer_stats_json(kc_consumer_t *c);
void kc_consumer_stats_start(kc_consumer_t *c, kc_loop_t *loop);
void kc_consumer_stats_stop(kc_consumer_t *c, kc_loop_t *loop);
/* telemetry.c, network thread: KIP-714 client telemetry (enable.metrics.push), the stats named
 * as Java names them; the engine runs the protocol and the terminating push at close. */
void kc_consumer_telemetry_start(kc_consumer_t *c);
/* auto_commit.c, network thread: the enable.auto.commit timer (no-op without group.id). */
void kc_consumer_autocommit_start(kc_consumer_t *c, kc_loop_t *loop);
void kc_consumer_autocommit_stop(kc_consumer_t *c, kc_loop_t *loop);
/* auto_commit.c, network thread: a commit's answer (the engine's res[0..n), rc the commit's) as
 * kc_commit_result_t entries in one malloc'd block with their topic strings (kconsume.h,
 * kc_commit_results). NULL when n is 0 or out of memory. */
struct kc_engine_offset;
/* share_commit.c: kc_commit in a share group (network thread). start: tps NULL only (the caller
 * checks); `cb` gets exactly one answer, maybe before start returns. mark before and run after
 * each drain of the completion rings (kc_consumer_drain_completions does both); close answers
 * every waiting commit with KC_ERR_CLOSED (before the engine closes). */
kc_err_t kc_share_commit_start(kc_consumer_t *c, int timeout_ms, kc_engine_offsets_cb cb,
                               void *opaque, kc_error_t *err);
void kc_share_commit_mark(kc_consumer_t *c);
void kc_share_commit_run(kc_consumer_t *c);
void kc_share_commit_close(kc_consumer_t *c);
/* share_renew.c: KC_COP_SHARE_RENEW on the network thread (kc_share_renew waits for k->done). */
kc_err_t kc_share_renew_start(kc_consumer_t *c, kc_ccall_t *k);
/* consumer.c, network thread: hands every completion the workers posted to the consumer (the
 * share commits' mark before, run after). No-op once the dispatcher is dead. */
void kc_consumer_drain_completions(kc_consumer_t *c);
kc_commit_result_t *kc_consumer_commit_results(kc_err_t rc, const struct kc_engine_offset *res,
                                               size_t n);
/* pull.c: pull mode. new before the dispatcher starts; close wakes workers waiting for a
 * release (call first thing in kc_close); free in kc_destroy. */
kc_cb_result_t kc_pull_on_records(void *opaque, kc_part_t *p, kc_records_t *b);
/* The dispatcher's gate_closed hook in pull mode (network thread): a queued view of p that
 * nobody polled is given back. */
void kc_pull_gate_closed(void *consumer, kc_rt_part_t *p);
kc_err_t kc_pull_new(kc_consumer_t *c, unsigned workers);
void kc_pull_close(kc_consumer_t *c);
/* kc_destroy: views still held are taken back (RETRY), so joining the workers cannot wait for
 * an application that will never release them. */
void kc_pull_abandon(kc_consumer_t *c);
void kc_pull_free(kc_consumer_t *c);
/* kc_destroy: frees the member ids. */
void kc_consumer_ext_free(kc_consumer_t *c);

#endif
