/*
 * The classic member's outputs: the reconciliation's actions (group/reconcile.h) and
 * kc_classic_poll / kc_classic_next_wakeup, which decide what goes out next.
 *
 * Owner: network thread. Everything in kc_classic_t is touched only from there; time comes in as
 * an argument.
 */
#include "group/classic/member_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the reconciliation ------------------------------------------------------------------- */

/* A commit goes under the member's generation; without one there is nothing to commit under. */
static bool may_commit(const kc_classic_t *m)
{
    return m->generation >= 0 && m->member_id[0];
}

void kc_classic_action_done(kc_classic_t *m, uint64_t seq, int64_t now_ms)
{
    kc_reconcile_done(&m->rc, seq, now_ms);
}

void kc_classic_commit_result(kc_classic_t *m, uint64_t seq, int16_t code, int64_t now_ms)
{
    if (!m->rc.issued || seq != m->rc.seq || m->rc.step != KC_RECON_COMMIT)
        return;
    kc_offsets_verdict_t v = kc_offsets_classify(code);
    /* Refused for good: the next owner resumes from the last committed offset (at-least-once);
     * REBALANCE_IN_PROGRESS etc. also mean rejoining. */
    if (v == KC_OFFSETS_FAIL && m->state == KC_CLASSIC_ST_STABLE)
        kc_classic_common_error(m, code, now_ms);
    kc_recon_commit_t outcome = v == KC_OFFSETS_OK ? KC_RECON_COMMIT_OK
                                : v == KC_OFFSETS_REDISCOVER || v == KC_OFFSETS_RETRY
                                    ? KC_RECON_COMMIT_RETRY
                                    : KC_RECON_COMMIT_GIVE_UP;
    if (kc_reconcile_commit_result(&m->rc, seq, outcome, now_ms)) {
        /* handed out again after a backoff, once the coordinator is known */
        m->commit_retry_at_ms = now_ms + m->cfg.retry_backoff_ms;
        if (v == KC_OFFSETS_REDISCOVER)
            kc_classic_coordinator_lost(m, now_ms);
    }
}

/* The reconciliation's next action, when one is due. */
static bool pend_poll(kc_classic_t *m, int64_t now_ms, kc_classic_out_t *out)
{
    kc_reconcile_tick(&m->rc, now_ms); /* a commit past its deadline is abandoned */
    if (m->rc.step == KC_RECON_COMMIT && !m->rc.issued && may_commit(m) &&
        (!m->coord_known || (m->rc.commit_deadline_ms >= 0 && now_ms < m->commit_retry_at_ms)))
        return false;
    for (;;) {
        kc_recon_action_t a = kc_reconcile_next_action(&m->rc, now_ms);
        switch (a.kind) {
        case KC_RECON_ACT_NONE:
            return false;
        case KC_RECON_ACT_REVOKE:
            out->kind = KC_CLASSIC_REVOKE;
            break;
        case KC_RECON_ACT_LOSE:
            out->kind = KC_CLASSIC_LOSE;
            break;
        case KC_RECON_ACT_COMMIT:
            if (!may_commit(m)) { /* skipped: the step is over */
                kc_reconcile_commit_result(&m->rc, a.seq, KC_RECON_COMMIT_GIVE_UP, now_ms);
                continue;
            }
            out->kind = KC_CLASSIC_COMMIT;
            kc_error_t e;
            kc_offsets_identity_member(&out->who, m->cfg.group_id, m->member_id, m->generation,
                                       m->cfg.instance_id, &e);
            break;
        case KC_RECON_ACT_DROP:
            out->kind = KC_CLASSIC_DROP;
            break;
        case KC_RECON_ACT_ASSIGN:
            out->kind = KC_CLASSIC_ASSIGN;
            break;
        }
        out->parts = a.parts;
        out->seq = a.seq;
        return true;
    }
}

static void fill_join(kc_classic_t *m, kc_classic_out_t *out)
{
    kc_join_group_request_t *j = &out->req.join;
    kc_join_group_request_init(j);
    j->group_id = kc_str(m->cfg.group_id);
    j->session_timeout_ms = m->cfg.session_timeout_ms;
    j->rebalance_timeout_ms = m->cfg.rebalance_timeout_ms;
    j->member_id = kc_str(m->member_id);
    j->group_instance_id = m->cfg.instance_id ? kc_str(m->cfg.instance_id) : KC_STR_NULL;
    j->protocol_type = kc_str("consumer");
    j->protocols.count = (int32_t)m->cfg.n_assignors;
    j->protocols.items = m->protocols;
    j->reason = KC_STR_NULL;
}

static bool send_join(kc_classic_t *m, kc_classic_out_t *out)
{
    for (size_t i = 0; i < m->cfg.n_assignors; i++) {
        kc_error_t e;
        m->proto_meta[i].len = 0;
        if (kc_classic_encode_subscription(m, m->cfg.assignors[i], &m->proto_meta[i], &e)) {
            kc_classic_fatal(m, 0, "group %s:%s subscription: %s", e.msg);
            return false;
        }
        m->protocols[i].name = kc_str(kc_assignor_name(m->cfg.assignors[i]));
        m->protocols[i].metadata =
            (kc_bytes_t){m->proto_meta[i].data, (int32_t)m->proto_meta[i].len};
    }
    out->kind = KC_CLASSIC_SEND_JOIN;
    fill_join(m, out);
    m->rejoin_needed = false; /* a request arriving from now on needs another round */
    m->inflight = KC_CLASSIC_IF_JOIN;
    m->state = KC_CLASSIC_ST_JOINING;
    return true;
}

static void fill_sync(kc_classic_t *m, kc_classic_out_t *out)
{
    kc_sync_group_request_t *s = &out->req.sync;
    kc_sync_group_request_init(s);
    s->group_id = kc_str(m->cfg.group_id);
    s->generation_id = m->generation;
    s->member_id = kc_str(m->member_id);
    s->group_instance_id = m->cfg.instance_id ? kc_str(m->cfg.instance_id) : KC_STR_NULL;
    s->protocol_type = kc_str("consumer");
    s->protocol_name = m->protocol ? kc_str(m->protocol) : KC_STR_NULL;
    s->assignments.count = (int32_t)m->n_sync; /* follower: empty */
    s->assignments.items = m->sync_items;
}

static bool heartbeat_due(const kc_classic_t *m, int64_t now_ms)
{
    bool member = m->generation >= 0 && m->member_id[0];
    bool state_ok =
        m->state == KC_CLASSIC_ST_STABLE || (m->state == KC_CLASSIC_ST_UNJOINED && !m->prepared) ||
        (m->state == KC_CLASSIC_ST_UNJOINED && !kc_reconcile_idle(&m->rc)) ||
        (m->state == KC_CLASSIC_ST_CLOSING && (!kc_reconcile_idle(&m->rc) || m->commits_out));
    return member && state_ok && m->coord_known && m->inflight == KC_CLASSIC_IF_NONE &&
           now_ms >= m->next_heartbeat_ms;
}

static bool close_poll(kc_classic_t *m, int64_t now_ms, kc_classic_out_t *out)
{
    if (m->inflight != KC_CLASSIC_IF_NONE || !kc_reconcile_idle(&m->rc))
        return false;
    if (!m->prepared) { /* Java's onLeavePrepare: revoke (or lose) what we hold */
        m->prepared = true;
        if (m->rc.owned.n) {
            if (!may_commit(m)) {
                kc_classic_lose_all(m);
            } else {
                kc_tpset_t none = {0};
                kc_classic_reconcile_to(m, &none);
            }
            return m->prepared && pend_poll(m, now_ms, out); /* not prepared: no memory */
        }
    }
    /* The member dropped its own connection to a coordinator that is alive (the abandoned
     * JoinGroup/SyncGroup): it waits for it to be found again so that the LeaveGroup goes out,
     * as long as a lost coordinator is waited for before it is reported (request.timeout.ms),
     * then closes without one. What it held was revoked above meanwhile. */
    if (m->abandoned_for_leave && !m->coord_known && m->member_id[0] && !m->cfg.instance_id &&
        !m->closed_pending && now_ms - m->coord_lost_at_ms < m->cfg.coordinator_timeout_ms)
        return false;
    /* Static members do not leave: their place (and partitions) wait for the instance to come
     * back within the session timeout, which is the point of group.instance.id. */
    if (!m->cfg.instance_id && m->member_id[0] && m->coord_known && !m->closed_pending) {
        if (m->commits_out) /* kc_classic_commits_in_flight: answered first */
            return false;
        kc_leave_group_request_t *l = &out->req.leave;
        kc_leave_group_request_init(l);
        l->group_id = kc_str(m->cfg.group_id);
        l->member_id = kc_str(m->member_id); /* v0-2 */
        m->leave_member.member_id = kc_str(m->member_id);
        m->leave_member.group_instance_id = KC_STR_NULL;
        m->leave_member.reason = kc_str("the consumer is being closed");
        l->members.count = 1; /* v3+ */
        l->members.items = &m->leave_member;
        out->kind = KC_CLASSIC_SEND_LEAVE;
        m->inflight = KC_CLASSIC_IF_LEAVE; /* the id is forgotten once this is answered */
        return true;
    }
    m->generation = -1;
    m->is_leader = false;
    if (m->close_then_idle) {
        m->state = KC_CLASSIC_ST_IDLE;
        m->closed_pending = false;
        return false;
    }
    m->state = KC_CLASSIC_ST_CLOSED;
    out->kind = KC_CLASSIC_CLOSED;
    m->closed_pending = false;
    return true;
}

/* The LeaveGroup of a max.poll.interval.ms overrun (kc_classic_poll_expired). Java's
 * maybeLeaveGroup: leave, then forget generation and member id so the next join is a new one. */
static bool poll_leave(kc_classic_t *m, kc_classic_out_t *out)
{
    m->leave_due = false;
    bool send = m->member_id[0] && m->coord_known;
    if (send) {
        free(m->leave_id); /* the request's views must outlive the member id reset below */
        m->leave_id = m->member_id;
        m->member_id = NULL;
        kc_leave_group_request_t *l = &out->req.leave;
        kc_leave_group_request_init(l);
        l->group_id = kc_str(m->cfg.group_id);
        l->member_id = kc_str(m->leave_id); /* v0-2 */
        m->leave_member.member_id = kc_str(m->leave_id);
        m->leave_member.group_instance_id =
            m->cfg.instance_id ? kc_str(m->cfg.instance_id) : KC_STR_NULL;
        m->leave_member.reason = kc_str("consumer poll timeout has expired");
        l->members.count = 1; /* v3+ */
        l->members.items = &m->leave_member;
        out->kind = KC_CLASSIC_SEND_LEAVE;
        m->inflight = KC_CLASSIC_IF_LEAVE;
    }
    kc_classic_set_str(&m->member_id, "", 0);
    m->generation = -1;
    m->is_leader = false;
    m->prepared = false; /* the join-prepare loses whatever is still held */
    m->state = KC_CLASSIC_ST_UNJOINED;
    m->rejoin_needed = false;
    kc_classic_free_sync(m);
    return send;
}

bool kc_classic_poll(kc_classic_t *m, int64_t now_ms, kc_classic_out_t *out)
{
    memset(out, 0, sizeof *out);
    if (m->fatal_pending) {
        m->fatal_pending = false;
        out->kind = KC_CLASSIC_FATAL;
        out->error = m->fatal;
        /* A fenced member stops consuming, at once: a reconciliation under way is abandoned
         * (its commit would be refused anyway), what it revoked but had not dropped goes with
         * the loss. */
        if (!m->rc.lost && (m->rc.held.n || !kc_reconcile_idle(&m->rc)))
            kc_classic_lose_all(m);
        return true;
    }
    if (m->error_pending) {
        m->error_pending = false;
        out->kind = KC_CLASSIC_ERROR;
        out->error = m->error_out;
        return true;
    }
    if (m->describe_due && m->coord_known && !m->fatal_pending) {
        out->kind = KC_CLASSIC_DESCRIBE;
        m->describe_due = false;
        m->fatal_code = KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL;
        return true;
    }
    if (m->rediscover_due && now_ms >= m->rediscover_at_ms) {
        m->rediscover_due = false;
        out->kind = KC_CLASSIC_REDISCOVER;
        return true;
    }
    if (!m->coord_known && m->coord_lost_at_ms && !m->coord_error_surfaced &&
        now_ms - m->coord_lost_at_ms >= m->cfg.coordinator_timeout_ms) {
        m->coord_error_surfaced = true;
        out->kind = KC_CLASSIC_ERROR;
        kc_fail(&out->error, KC_ERR_TIMEOUT, "group %s: no coordinator for %lld ms; still asking",
                m->cfg.group_id, (long long)(now_ms - m->coord_lost_at_ms));
        return true;
    }
    if (pend_poll(m, now_ms, out))
        return true;
    if (m->state == KC_CLASSIC_ST_FATAL || m->state == KC_CLASSIC_ST_IDLE)
        return false;
    if (m->state == KC_CLASSIC_ST_CLOSED) {
        if (!m->closed_pending)
            return false;
        m->closed_pending = false;
        out->kind = KC_CLASSIC_CLOSED;
        return true;
    }
    if (m->state == KC_CLASSIC_ST_CLOSING) {
        if (m->closed_pending && m->inflight == KC_CLASSIC_IF_NONE) {
            m->closed_pending = false;
            kc_classic_set_str(&m->member_id, "", 0); /* Java forgets its id once it has left */
            m->generation = -1;
            m->is_leader = false;
            m->state = m->close_then_idle ? KC_CLASSIC_ST_IDLE : KC_CLASSIC_ST_CLOSED;
            if (m->close_then_idle)
                return false;
            out->kind = KC_CLASSIC_CLOSED;
            return true;
        }
        /* A JoinGroup (or a follower's SyncGroup; a leader's is answered at once, and dropping
         * it costs nothing) is answered when the rebalance completes, up to the rebalance
         * timeout, and the coordinator handles a connection's requests one at
         * a time: a LeaveGroup sent behind it would wait as long, and so would the close. Drop
         * it and leave on a new connection; the coordinator then completes the rebalance
         * without this member. */
        if ((m->inflight == KC_CLASSIC_IF_JOIN || m->inflight == KC_CLASSIC_IF_SYNC) &&
            !m->abandoned_for_leave) {
            m->abandoned_for_leave = true;
            out->kind = KC_CLASSIC_ABANDON;
            return true;
        }
        if (close_poll(m, now_ms, out))
            return true;
    }
    if (m->leave_due && m->inflight == KC_CLASSIC_IF_NONE && m->state >= KC_CLASSIC_ST_UNJOINED &&
        m->state <= KC_CLASSIC_ST_STABLE && poll_leave(m, out))
        return true;
    /* A session with no answered heartbeat for session.timeout.ms: the coordinator is gone. */
    if (m->coord_known && m->state == KC_CLASSIC_ST_STABLE &&
        now_ms - m->last_heartbeat_ok_ms >= m->cfg.session_timeout_ms) {
        kc_classic_coordinator_lost(m, now_ms);
        return kc_classic_poll(m, now_ms, out);
    }
    if (m->state == KC_CLASSIC_ST_STABLE && m->rejoin_needed && kc_reconcile_idle(&m->rc)) {
        m->state = KC_CLASSIC_ST_UNJOINED;
        m->prepared = false;
    }
    if (m->state == KC_CLASSIC_ST_UNJOINED && kc_reconcile_idle(&m->rc) &&
        m->inflight == KC_CLASSIC_IF_NONE) {
        if (!m->prepared) {
            kc_classic_join_prepare(m);
            if (pend_poll(m, now_ms, out))
                return true;
        }
        /* Out of the group until the overrunning callback returns (max.poll.interval.ms). */
        if (m->prepared && kc_reconcile_idle(&m->rc) && m->coord_known &&
            now_ms >= m->retry_at_ms && !m->poll_expired && !m->leave_due)
            return send_join(m, out);
    }
    if (m->state == KC_CLASSIC_ST_SYNCING && m->inflight == KC_CLASSIC_IF_NONE && m->coord_known) {
        out->kind = KC_CLASSIC_SEND_SYNC;
        fill_sync(m, out);
        m->inflight = KC_CLASSIC_IF_SYNC;
        return true;
    }
    if (heartbeat_due(m, now_ms)) {
        kc_heartbeat_request_t *h = &out->req.heartbeat;
        kc_heartbeat_request_init(h);
        h->group_id = kc_str(m->cfg.group_id);
        h->generation_id = m->generation;
        h->member_id = kc_str(m->member_id);
        h->group_instance_id = m->cfg.instance_id ? kc_str(m->cfg.instance_id) : KC_STR_NULL;
        out->kind = KC_CLASSIC_SEND_HEARTBEAT;
        m->inflight = KC_CLASSIC_IF_HEARTBEAT;
        m->next_heartbeat_ms = now_ms + m->cfg.heartbeat_interval_ms;
        return true;
    }
    return false;
}

int64_t kc_classic_next_wakeup(const kc_classic_t *m)
{
    int64_t w = INT64_MAX;
#define AT(t)                                                                                      \
    do {                                                                                           \
        if ((t) < w)                                                                               \
            w = (t);                                                                               \
    } while (0)
    bool member = m->generation >= 0 && m->member_id[0] && m->coord_known;
    if (member && m->inflight == KC_CLASSIC_IF_NONE &&
        (m->state == KC_CLASSIC_ST_STABLE || m->state == KC_CLASSIC_ST_UNJOINED))
        AT(m->next_heartbeat_ms);
    if (m->state == KC_CLASSIC_ST_STABLE && m->coord_known)
        AT(m->last_heartbeat_ok_ms + m->cfg.session_timeout_ms);
    if (m->state == KC_CLASSIC_ST_UNJOINED && m->retry_at_ms)
        AT(m->retry_at_ms);
    if (m->rc.step == KC_RECON_COMMIT && m->rc.commit_deadline_ms >= 0) {
        AT(m->rc.commit_deadline_ms);
        if (!m->rc.issued && m->coord_known) /* a retry waits for its backoff (and the
                                                 coordinator, whose finding wakes the member) */
            AT(m->commit_retry_at_ms);
    }
    if (!m->coord_known && m->coord_lost_at_ms && !m->coord_error_surfaced)
        AT(m->coord_lost_at_ms + m->cfg.coordinator_timeout_ms);
    if (m->rediscover_due)
        AT(m->rediscover_at_ms);
#undef AT
    return w;
}
