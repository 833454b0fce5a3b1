/*
 * Ordered reconciliation as pending state (see group/reconcile.h for the rules and why).
 * Owner: network thread — every kc_reconcile_t is touched only there.
 */
#include "group/reconcile.h"

#include <string.h>

void kc_reconcile_init(kc_reconcile_t *r, bool commit_on_revoke, int64_t commit_timeout_ms)
{
    memset(r, 0, sizeof *r);
    r->commit_on_revoke = commit_on_revoke;
    r->commit_timeout_ms = commit_timeout_ms;
    r->commit_deadline_ms = -1;
}

void kc_reconcile_free(kc_reconcile_t *r)
{
    kc_tpset_free(&r->owned);
    kc_tpset_free(&r->held);
    kc_tpset_free(&r->target);
    kc_tpset_free(&r->to_revoke);
    kc_tpset_free(&r->to_assign);
    kc_tpset_free(&r->next);
    kc_tpset_free(&r->scratch);
}

static kc_err_t start(kc_reconcile_t *r, const kc_tpset_t *target)
{
    kc_err_t rc;
    if ((rc = kc_tpset_copy(&r->target, target)) ||
        (rc = kc_tpset_diff(&r->to_revoke, &r->owned, target)) ||
        (rc = kc_tpset_diff(&r->to_assign, target, &r->owned)))
        return rc;
    r->step = (r->to_revoke.n || r->to_assign.n) ? KC_RECON_REVOKE : KC_RECON_IDLE;
    r->issued = false;
    r->lost = false;
    r->commit_deadline_ms = -1;
    return KC_OK;
}

/* The reconciliation ran its last step: what the application holds is now what we own. */
static kc_err_t finish(kc_reconcile_t *r)
{
    bool changed = !kc_tpset_equal(&r->owned, &r->held);
    kc_err_t rc = kc_tpset_copy(&r->owned, &r->held);
    if (rc)
        return rc;
    /* After a loss the member rejoins with a full request (epoch 0), which carries ownership
     * anyway; there is nothing to acknowledge to an epoch that no longer exists. */
    r->ack_pending = (r->ack_pending || changed) && !r->lost;
    r->step = KC_RECON_IDLE;
    r->issued = false;
    r->lost = false;
    if (r->has_next) {
        r->has_next = false;
        if ((rc = kc_tpset_copy(&r->scratch, &r->next)))
            return rc;
        return start(r, &r->scratch);
    }
    return KC_OK;
}

/* Skip steps with nothing to do. Only moves forward from a step that is not issued. */
static void advance(kc_reconcile_t *r)
{
    for (;;) {
        if (r->issued)
            return;
        switch (r->step) {
        case KC_RECON_IDLE:
            return;
        case KC_RECON_REVOKE:
            if (r->to_revoke.n)
                return;
            r->step = KC_RECON_COMMIT;
            break;
        case KC_RECON_COMMIT:
            if (r->to_revoke.n && !r->lost && r->commit_on_revoke)
                return;
            r->step = KC_RECON_DROP;
            break;
        case KC_RECON_DROP:
            if (r->to_revoke.n)
                return;
            r->step = KC_RECON_ASSIGN;
            break;
        case KC_RECON_ASSIGN:
            if (r->to_assign.n && !r->lost)
                return;
            if (finish(r))
                return; /* out of memory: stay; the next call tries again */
            break;
        }
    }
}

kc_err_t kc_reconcile_set_target(kc_reconcile_t *r, const kc_tpset_t *target, kc_error_t *err)
{
    kc_err_t rc;
    if (r->step == KC_RECON_IDLE && !r->has_next) {
        if (kc_tpset_equal(target, &r->owned))
            return KC_OK;
        rc = start(r, target);
    } else {
        rc = kc_tpset_copy(&r->next, target);
        if (!rc) {
            r->has_next = true;
            /* The one safe merge: not-yet-assigned partitions the newer target dropped are
             * never handed out (they never reached the application). */
            if (r->step != KC_RECON_ASSIGN || !r->issued)
                kc_tpset_intersect(&r->to_assign, target);
        }
    }
    if (rc)
        return kc_fail(err, rc, "reconcile: no memory for a target of %zu partitions", target->n);
    return KC_OK;
}

kc_recon_action_t kc_reconcile_next_action(kc_reconcile_t *r, int64_t now_ms)
{
    kc_recon_action_t a = {KC_RECON_ACT_NONE, 0, NULL};
    advance(r);
    if (r->issued || r->step == KC_RECON_IDLE)
        return a;
    switch (r->step) {
    case KC_RECON_REVOKE:
        a.kind = r->lost ? KC_RECON_ACT_LOSE : KC_RECON_ACT_REVOKE;
        a.parts = &r->to_revoke;
        if (!r->lost)
            r->revoke_issues++;
        break;
    case KC_RECON_COMMIT:
        a.kind = KC_RECON_ACT_COMMIT;
        a.parts = &r->to_revoke;
        if (r->commit_deadline_ms < 0)
            r->commit_deadline_ms = now_ms + r->commit_timeout_ms;
        break;
    case KC_RECON_DROP:
        a.kind = KC_RECON_ACT_DROP;
        a.parts = &r->to_revoke;
        break;
    case KC_RECON_ASSIGN:
        /* From here on the application holds them: a loss must take them away again. */
        if (kc_tpset_union(&r->scratch, &r->held, &r->to_assign) ||
            kc_tpset_copy(&r->held, &r->scratch))
            return a; /* out of memory: not issued, asked again next time */
        a.kind = KC_RECON_ACT_ASSIGN;
        a.parts = &r->to_assign;
        break;
    case KC_RECON_IDLE:
        return a;
    }
    a.seq = ++r->seq;
    r->issued = true;
    return a;
}

bool kc_reconcile_done(kc_reconcile_t *r, uint64_t seq, int64_t now_ms)
{
    (void)now_ms;
    if (!r->issued || seq != r->seq)
        return false;
    switch (r->step) {
    case KC_RECON_REVOKE:
        /* on_revoke / on_lost returned: the application no longer holds them (in place: a
         * completion that could fail would be lost, and the run would never end). */
        kc_tpset_subtract(&r->held, &r->to_revoke);
        r->step = KC_RECON_COMMIT;
        break;
    case KC_RECON_DROP:
        r->step = KC_RECON_ASSIGN;
        break;
    case KC_RECON_ASSIGN:
        r->issued = false;
        r->step = KC_RECON_ASSIGN;
        r->to_assign.n = 0; /* done: advance() finishes */
        advance(r);
        return true;
    default:
        return false; /* COMMIT completes through kc_reconcile_commit_result */
    }
    r->issued = false;
    advance(r);
    return true;
}

bool kc_reconcile_commit_result(kc_reconcile_t *r, uint64_t seq, kc_recon_commit_t outcome,
                                int64_t now_ms)
{
    if (!r->issued || seq != r->seq || r->step != KC_RECON_COMMIT)
        return false;
    if (outcome == KC_RECON_COMMIT_RETRY && now_ms < r->commit_deadline_ms) {
        /* Not issued: the next kc_reconcile_next_action hands the commit out again. advance()
         * never skips a COMMIT step that still has partitions, so it waits for that. */
        r->issued = false;
        return true;
    }
    r->issued = false;
    r->step = KC_RECON_DROP;
    advance(r);
    return false;
}

void kc_reconcile_tick(kc_reconcile_t *r, int64_t now_ms)
{
    if (r->step == KC_RECON_COMMIT && r->commit_deadline_ms >= 0 &&
        now_ms >= r->commit_deadline_ms) {
        r->issued = false; /* a late result carries a stale seq from now on */
        r->seq++;
        r->step = KC_RECON_DROP;
        advance(r);
    }
}

void kc_reconcile_reissue(kc_reconcile_t *r)
{
    if (r->step != KC_RECON_IDLE)
        r->issued = false;
}

kc_err_t kc_reconcile_lose_all(kc_reconcile_t *r, kc_error_t *err)
{
    kc_err_t rc;
    /* held still contains a revoke in flight (revoke-done not yet seen) and an assign in flight:
     * both are the application's until a completion says otherwise. Partitions whose revoke
     * finished but that are not dropped yet (the COMMIT step, or DROP before it is handed out)
     * are no longer held and still in the fetch sessions: they go with the loss, so its DROP
     * forgets them (their revoke finds nothing held and answers at once). */
    bool undropped = r->step == KC_RECON_COMMIT || (r->step == KC_RECON_DROP && !r->issued);
    if (undropped)
        rc = kc_tpset_union(&r->scratch, &r->held, &r->to_revoke);
    else
        rc = kc_tpset_copy(&r->scratch, &r->held);
    if (rc || (rc = kc_tpset_copy(&r->to_revoke, &r->scratch)))
        return kc_fail(err, rc, "reconcile: no memory to lose %zu partitions", r->held.n);
    kc_tpset_clear(&r->to_assign);
    kc_tpset_clear(&r->target);
    r->has_next = false;
    r->ack_pending = false;
    r->lost = true;
    r->issued = false;
    r->seq++; /* completions of whatever was in flight are stale now */
    r->commit_deadline_ms = -1;
    r->step = KC_RECON_REVOKE;
    advance(r);
    return KC_OK;
}
