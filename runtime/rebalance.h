/*
 * The group-level rebalance callback (kconsume.h on_rebalance) over the dispatcher: the steps a
 * group member's drive passes decided, each run as one call between the per-partition
 * callbacks of the partitions it names (dispatch.h, "Parking").
 *
 * A step is what one drive pass revoked, lost or assigned, one step per run of one kind in the
 * order the pass decided them (a pass that assigns a partition and then revokes it makes an
 * ASSIGN step, then a REVOKE step). Its partitions are parked first
 * (an assigned one after its on_assign, a revoked one after its last on_records); once every one
 * of them has parked, the step's callback is posted to the control worker, steps in the order
 * they were made (so a set is never reported before an earlier one); when it returned, every
 * partition no other pending step names is unparked: an assigned one starts delivering, a
 * revoked one runs its on_revoke / on_lost. A partition named by two pending steps (assigned,
 * then revoked before the assignment's callback ran) stays parked until both ran.
 *
 * Costs: lookups are linear in the pending steps' partitions, which only a rebalance with
 * on_rebalance set pays.
 *
 * Owner: network thread (every function).
 */
#ifndef KC_RUNTIME_REBALANCE_H
#define KC_RUNTIME_REBALANCE_H

#include "dispatch.h"

typedef struct kc_rt_rebal kc_rt_rebal_t;

/* NULL when out of memory. */
kc_rt_rebal_t *kc_rt_rebal_new(kc_rt_t *rt);
void kc_rt_rebal_free(kc_rt_rebal_t *r);

/* p joins the step of `kind` that the current drive pass is making (a different kind than the
 * last addition's starts a new one). For a revocation it parks p (kc_rt_part_park, before the
 * caller's kc_rt_part_revoke); an assigned p was added with park (kc_rt_part_add_held).
 * KC_ERR_NOMEM: p was not taken, and no group callback names it: an assigned p is the caller's
 * to unpark; a revoked one is revoked at once (it stays parked only while an earlier pending
 * step names it). */
kc_err_t kc_rt_rebal_add(kc_rt_rebal_t *r, kc_rebalance_t kind, kc_rt_part_t *p);
/* The drive pass ended: what it collected becomes a step, and every step at the head whose
 * partitions all parked is posted, in order. */
void kc_rt_rebal_flush(kc_rt_rebal_t *r);
/* A PARKED completion for p (one the dispatcher passed on: p is parked now). */
void kc_rt_rebal_parked(kc_rt_rebal_t *r, kc_rt_part_t *p);
/* A REBALANCED completion: the step `token` names ran its callback. */
void kc_rt_rebal_done(kc_rt_rebal_t *r, int64_t token);
/* Steps made and not yet done (tests, stats). */
size_t kc_rt_rebal_pending(const kc_rt_rebal_t *r);

#endif
