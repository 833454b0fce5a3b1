/*
 * The ordered reconciliation shared by KIP-848 and the classic protocol, as explicit pending
 * state. Pure: no I/O, no threads; time is an argument.
 *
 * Given what the application holds and a new target, one reconciliation runs these steps:
 *   REVOKE  stop dispatch of to_revoke and run on_revoke on their workers; wait for revoke-done.
 *   COMMIT  commit the processed offsets of to_revoke under the member's identity; wait for the
 *           result or the commit deadline (a failed commit must not wedge the group: past the
 *           deadline the next owner re-reads from the last committed offset — at-least-once).
 *   DROP    remove to_revoke from the fetch sessions (they go out as forgotten).
 *   ASSIGN  on_assign for to_assign on their workers, then fetch and dispatch them.
 *   ACK     `owned` becomes the new set; the next heartbeat carries it. Never earlier: an ack
 *           before the revoke finishes lets two members hold a partition at once.
 * A step with nothing to do is skipped. The caller pulls the action for the current step with
 * kc_reconcile_next_action(), carries it out and reports completion with the action's seq.
 *
 * Interruption: nothing here is cleared by a heartbeat error, a coordinator move or a close. The
 * pending reconciliation stays until its steps complete, so the next step always resumes it ahead
 * of the acknowledging beat. kc_reconcile_reissue() hands out the current step's action again
 * (e.g. a commit after the coordinator moved, or a runtime that restarted a revoke): on_revoke may
 * therefore run twice for a partition — documented as AT-LEAST-ONCE — and is never skipped.
 * Completions carry the seq of the action they answer; stale ones are ignored.
 *
 * New targets while one is running: ONE AT A TIME, like Java. The newest target waits (older
 * waiting targets are replaced) and starts when the current one reaches ACK. One safe merge is
 * made at once: partitions not yet handed to on_assign that the newer target no longer contains
 * are dropped from to_assign — they never reached the application, so nothing needs revoking.
 *
 * Lost (fenced, unknown member, max.poll expiry): kc_reconcile_lose_all() abandons the pending
 * reconciliation and queued target and runs LOSE (on_lost instead of on_revoke) → DROP for
 * everything the application holds, and for partitions a revoke under way already took from it
 * but has not dropped yet, with no commit: the offsets belong to an epoch the group no longer
 * recognises.
 *
 * Owner: network thread.
 */
#ifndef KC_ENGINE_GROUP_RECONCILE_H
#define KC_ENGINE_GROUP_RECONCILE_H

#include <stdbool.h>
#include <stdint.h>

#include "group/tpset.h"

typedef enum kc_recon_step {
    KC_RECON_IDLE = 0,
    KC_RECON_REVOKE, /* also the LOSE step when `lost` */
    KC_RECON_COMMIT,
    KC_RECON_DROP,
    KC_RECON_ASSIGN,
} kc_recon_step_t;

typedef enum kc_recon_act_kind {
    KC_RECON_ACT_NONE = 0,
    KC_RECON_ACT_REVOKE, /* stop dispatch now, on_revoke on the worker → kc_reconcile_done */
    KC_RECON_ACT_LOSE,   /* stop dispatch now, on_lost on the worker → kc_reconcile_done */
    KC_RECON_ACT_COMMIT, /* commit processed offsets of parts → kc_reconcile_commit_result */
    KC_RECON_ACT_DROP,   /* forget parts in the fetch sessions → kc_reconcile_done */
    KC_RECON_ACT_ASSIGN, /* on_assign on the worker, then fetch → kc_reconcile_done */
} kc_recon_act_kind_t;

/* Owner: network thread (a view into the kc_reconcile_t that produced it). */
typedef struct kc_recon_action {
    kc_recon_act_kind_t kind;
    uint64_t seq;            /* pass back with the completion */
    const kc_tpset_t *parts; /* borrowed from the reconcile; valid until its next input */
} kc_recon_action_t;

/* Owner: network thread. */
typedef struct kc_reconcile {
    kc_tpset_t owned;     /* acknowledgeable ownership: changes only when a reconciliation ends */
    kc_tpset_t held;      /* what the application holds right now (revoke-done removes, ASSIGN
                             issue adds): what a LOSE must take away */
    kc_tpset_t target;    /* the target of the running reconciliation */
    kc_tpset_t to_revoke; /* owned \ target */
    kc_tpset_t to_assign; /* target \ owned, possibly trimmed by a newer target */
    kc_tpset_t next;      /* queued target, when has_next */
    kc_tpset_t scratch;
    bool has_next;
    kc_recon_step_t step;
    bool issued;      /* the current step's action is out; waiting for its completion */
    bool lost;        /* this run loses instead of revoking, and does not commit */
    bool ack_pending; /* owned changed and the caller has not yet sent it */
    bool commit_on_revoke;
    int64_t commit_timeout_ms;
    int64_t commit_deadline_ms;
    uint64_t seq;           /* seq of the last action handed out */
    uint32_t revoke_issues; /* REVOKE actions handed out (twice for a reissued revoke) */
} kc_reconcile_t;

void kc_reconcile_init(kc_reconcile_t *r, bool commit_on_revoke, int64_t commit_timeout_ms);
void kc_reconcile_free(kc_reconcile_t *r);

/* A new target (e.g. from a heartbeat). Starts at once when idle, else queued (see above). */
kc_err_t kc_reconcile_set_target(kc_reconcile_t *r, const kc_tpset_t *target, kc_error_t *err);

/* The action for the current step, if one is due (KC_RECON_ACT_NONE when waiting or idle).
 * Handing it out marks it issued. `now` starts the commit deadline. */
kc_recon_action_t kc_reconcile_next_action(kc_reconcile_t *r, int64_t now_ms);

/* Completion of a REVOKE, LOSE, DROP or ASSIGN action. Stale seqs are ignored (returns false). */
bool kc_reconcile_done(kc_reconcile_t *r, uint64_t seq, int64_t now_ms);

typedef enum kc_recon_commit {
    KC_RECON_COMMIT_OK = 0,  /* committed → DROP */
    KC_RECON_COMMIT_RETRY,   /* failed, may succeed if asked again */
    KC_RECON_COMMIT_GIVE_UP, /* failed for good (e.g. authorization): → DROP */
} kc_recon_commit_t;

/* Commit result. RETRY while the deadline holds: the step stays, the next
 * kc_reconcile_next_action hands the commit out again (the caller decides when — after a backoff,
 * a fresh epoch or a new coordinator) and true is returned. Otherwise the step advances (an
 * abandoned commit leaves the next owner re-reading from the last committed offset: at-least-once)
 * and false is returned. */
bool kc_reconcile_commit_result(kc_reconcile_t *r, uint64_t seq, kc_recon_commit_t outcome,
                                int64_t now_ms);

/* Time passes: an issued COMMIT whose deadline passed is abandoned (→ DROP). */
void kc_reconcile_tick(kc_reconcile_t *r, int64_t now_ms);

/* Hand out the current step's action again (see Interruption). */
void kc_reconcile_reissue(kc_reconcile_t *r);

/* Fenced / lost: see above. */
kc_err_t kc_reconcile_lose_all(kc_reconcile_t *r, kc_error_t *err);

/* The caller put `owned` into a heartbeat that went out: the ack is no longer pending. */
static inline void kc_reconcile_ack_sent(kc_reconcile_t *r)
{
    r->ack_pending = false;
}

static inline bool kc_reconcile_idle(const kc_reconcile_t *r)
{
    return r->step == KC_RECON_IDLE && !r->has_next;
}

#endif
