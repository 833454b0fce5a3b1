/*
 * Share groups (KIP-932) behind group/group.h's protocol interface: the KIP-848 member
 * (group/848/) over ShareGroupHeartbeat (share/wire.h), the same driver. What differs, and why:
 *   - no offsets: the share-partition's position is the broker's (its share-partition start
 *     offset and the records' acquisition state), so an ASSIGN reads no committed offset
 *     (`broker_positions`), its identity refuses offset commits, and the revocation's COMMIT
 *     step commits the member's acknowledgements instead (`commit_acks`);
 *   - no self-fence: which member may process a record is decided by the record's acquisition
 *     lock, not by the membership, and an acknowledgement after the lock ran out is refused by
 *     the broker per record range;
 *   - subscription by topic names only (ShareGroupHeartbeat has no regex).
 * Leave with epoch -1 on close (a share member is never static), as the member does for a
 * dynamic KIP-848 member.
 *
 * Owner: network thread, all of it (group/848/proto.c's rules).
 */
#include "base/err.h"
#include "group/848/proto_int.h"
#include "group/group.h"
#include "group/share/wire.h"

static kc_err_t s_create(void **out, kc_group_t *grp, kc_error_t *err)
{
    /* commit on revoke: the acknowledgements (commit_acks) */
    return kc_g848_proto_create(out, grp, &kc_gshare_wire, true, err);
}

static kc_err_t s_identity(void *m, kc_commit_identity_t *who, kc_error_t *err)
{
    (void)m;
    (void)who;
    return kc_fail(err, KC_ERR_STATE,
                   "a share group commits no offsets: its records are acknowledged instead");
}

const kc_group_proto_t kc_gshare_proto = {
    .name = "share",
    .epoch_name = "epoch",
    .create = s_create,
    .destroy = kc_g848_p_destroy,
    .subscribe = kc_g848_p_subscribe,
    .step = kc_g848_p_step,
    .next_action = kc_g848_p_next_action,
    .action_done = kc_g848_p_action_done,
    .commit_result = kc_g848_p_commit_result,
    .finish = kc_g848_p_finish,
    .next_wakeup = kc_g848_p_next_wakeup,
    .poll_expired = kc_g848_p_poll_expired,
    .close = kc_g848_p_close,
    .unsubscribe = kc_g848_p_unsubscribe,
    .closed = kc_g848_p_closed,
    .identity = s_identity,
    .offset_fetch_names_member = false,
    .broker_positions = true,
    .commit_acks = true,
    .app_commit_result = NULL,
    .stable = kc_g848_p_stable,
    .session_ms = kc_g848_p_session_ms,
    .fence_ratio = kc_g848_p_fence_ratio,
    .fence_applies = kc_g848_p_fence_applies,
    .epoch = kc_g848_p_epoch,
    .member_id = kc_g848_p_member_id,
    .coordinator = kc_g848_p_coordinator,
    .stats_head = kc_g848_p_stats_head,
    .stats_extra = kc_g848_p_stats_extra,
};
