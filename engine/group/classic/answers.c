/*
 * The classic member's response handling: JoinGroup (leader assignment, MEMBER_ID_REQUIRED, the
 * rolling-upgrade shapes), SyncGroup, Heartbeat, LeaveGroup, and metadata changes.
 *
 * Owner: network thread. Everything in kc_classic_t is touched only from there; time comes in as
 * an argument.
 */
#include "group/classic/member_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

/* ---- responses ---------------------------------------------------------------------------- */

/* Shared by every response: coordinator errors mean "ask again in a moment" (rediscover within
 * the deadline, nothing surfaced); the membership errors have one meaning everywhere. Returns
 * true when the code was handled here. */
bool kc_classic_common_error(kc_classic_t *m, int16_t code, int64_t now_ms)
{
    if (kc_classic_is_coord_error(code)) {
        kc_classic_coordinator_lost(m, now_ms);
        return true;
    }
    switch (code) {
    case KC_KAFKA_FENCED_INSTANCE_ID:
        kc_classic_fatal(m, code,
                         "group %s: %s: another instance with group.instance.id '%s' took this "
                         "member's place",
                         m->cfg.instance_id);
        return true;
    case KC_KAFKA_GROUP_AUTHORIZATION_FAILED:
        kc_classic_fatal(m, code, "group %s: %s%s", NULL);
        return true;
    case KC_KAFKA_ILLEGAL_GENERATION:
        kc_classic_reset_generation(m, false);
        return true;
    case KC_KAFKA_UNKNOWN_MEMBER_ID:
        kc_classic_reset_generation(m, true);
        return true;
    case KC_KAFKA_REBALANCE_IN_PROGRESS:
        kc_classic_rejoin(m);
        return true;
    }
    return false;
}

void kc_classic_join_response(kc_classic_t *m, const kc_join_group_response_t *r, int64_t now_ms)
{
    if (m->inflight != KC_CLASSIC_IF_JOIN)
        return;
    m->inflight = KC_CLASSIC_IF_NONE;
    if (m->state != KC_CLASSIC_ST_JOINING)
        return;                        /* closing or fatal meanwhile */
    m->state = KC_CLASSIC_ST_UNJOINED; /* unless the join succeeded, join again */
    int16_t c = r->error_code;
    if (c == 0) {
        kc_classic_set_str(&m->member_id, r->member_id.ptr, r->member_id.len);
        m->generation = r->generation_id;
        if (r->protocol_name.len >= 0)
            kc_classic_set_str(&m->protocol, r->protocol_name.ptr, r->protocol_name.len);
        /* A converted (KIP-848) group answers with no leader: nobody relays, and SyncGroup
         * brings what the broker computed. Being the leader needs our own id non-empty. */
        m->is_leader = m->member_id[0] && kc_classic_str_eq(r->leader, m->member_id);
        kc_classic_free_sync(m);
        if (m->is_leader && !r->skip_assignment) {
            int a = m->protocol ? kc_assignor_from_name(m->protocol) : -1;
            kc_error_t e;
            if (a < 0) {
                kc_classic_fatal(m, 0,
                                 "group %s:%s the coordinator chose assignor '%s', which this "
                                 "member does not implement",
                                 m->protocol ? m->protocol : "(none)");
                return;
            }
            if (kc_classic_leader_assign(m, (kc_assignor_t)a, r, &m->sync_items, &m->sync_bufs,
                                         &m->n_sync, &e)) {
                kc_classic_fatal(m, 0, "group %s:%s leader assignment failed: %s", e.msg);
                return;
            }
        }
        m->state = KC_CLASSIC_ST_SYNCING;
        return;
    }
    switch (c) {
    case KC_KAFKA_MEMBER_ID_REQUIRED: /* KIP-394: join again at once with the id we were given */
        kc_classic_set_str(&m->member_id, r->member_id.ptr, r->member_id.len);
        return;
    case KC_KAFKA_REBALANCE_IN_PROGRESS: /* e.g. the group is being converted: ask again */
        return;
    case KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL:
        m->fatal_code = c;
        if (m->coord_known) {
            m->describe_due = true;
            m->state = KC_CLASSIC_ST_FATAL; /* final text once DescribeGroups answers */
            m->rejoin_needed = false;
        } else {
            kc_classic_describe_result(m, NULL, NULL);
        }
        return;
    case KC_KAFKA_GROUP_MAX_SIZE_REACHED:
    case KC_KAFKA_INVALID_SESSION_TIMEOUT:
    case KC_KAFKA_UNSUPPORTED_VERSION:
    case KC_KAFKA_UNRELEASED_INSTANCE_ID:
        kc_classic_fatal(m, c, "group %s: JoinGroup refused: %s%s", NULL);
        return;
    }
    if (kc_classic_common_error(m, c, now_ms))
        return;
    if (kc_kafka_err_retriable(c)) {
        m->retry_at_ms = now_ms + m->cfg.retry_backoff_ms;
        return;
    }
    kc_classic_fatal(m, c, "group %s: JoinGroup failed: %s%s", NULL);
}

static void on_assignment(kc_classic_t *m, const kc_tpset_t *assigned, int64_t now_ms)
{
    /* KIP-429: partitions we gave up were withheld from their next owner this round; rejoining
     * (after the revoke finishes) is what lets round two hand them over. */
    bool gives_up = false;
    for (size_t i = 0; i < m->rc.owned.n && !gives_up; i++)
        gives_up = !kc_tpset_contains(assigned, m->rc.owned.items[i].topic,
                                      m->rc.owned.items[i].partition);
    /* Not started (out of memory): the assignment is not applied, so the member joins again to
     * be given one it can take rather than sit in the group holding less than it was given. */
    bool started = kc_classic_reconcile_to(m, assigned);
    if ((m->cooperative && gives_up) || !started)
        m->rejoin_needed = true;
    if (kc_tpset_copy(&m->last_assigned, assigned))
        m->last_assigned.n = 0; /* out of memory: the sticky assignor sees no history */
    m->last_assigned_gen = m->generation;
    m->state = KC_CLASSIC_ST_STABLE;
    m->prepared = false;
    m->lost_streak = 0; /* a whole round went through this coordinator */
    m->last_heartbeat_ok_ms = now_ms;
    m->next_heartbeat_ms = now_ms + m->cfg.heartbeat_interval_ms;
}

void kc_classic_sync_response(kc_classic_t *m, const kc_sync_group_response_t *r, int64_t now_ms)
{
    if (m->inflight != KC_CLASSIC_IF_SYNC)
        return;
    m->inflight = KC_CLASSIC_IF_NONE;
    if (m->state != KC_CLASSIC_ST_SYNCING)
        return;
    int16_t c = r->error_code;
    if (c == 0 && m->leave_due) {
        /* max.poll.interval.ms ran out while the SyncGroup was out: the member leaves next
         * (poll_leave), and an assignment of the generation it gives up must not reach the
         * application (Java drops a SyncGroup answer whose generation was reset meanwhile). */
        kc_classic_free_sync(m);
        m->state = KC_CLASSIC_ST_UNJOINED;
        return;
    }
    if (c == 0) {
        kc_tpset_t assigned = {0};
        kc_error_t e;
        kc_err_t rc = kc_classic_decode_assignment(&m->interned, r->assignment, &assigned, &e);
        kc_classic_free_sync(m); /* after the decode: r may be a view into what we sent */
        if (rc) {
            kc_tpset_free(&assigned);
            kc_classic_fatal(m, 0, "group %s:%s undecodable assignment: %s", e.msg);
            return;
        }
        const char *stray = NULL;
        for (size_t i = 0; i < assigned.n && !stray; i++)
            if (!kc_classic_subscribed(m, assigned.items[i].topic->name))
                stray = assigned.items[i].topic->name;
        if (stray) {
            /* Java's onJoinComplete: an assignment naming a topic we no longer subscribe to
             * (the subscription changed after we joined, or a leader assigned on a stale view)
             * is not applied; the member stays in the generation and joins again with its
             * current subscription. */
            kc_log(KC_LOG_INFO, "group",
                   "group %s: the assignment of generation %d names topic '%s', not in the "
                   "subscription; joining again",
                   m->cfg.group_id, (int)m->generation, stray);
            m->mismatched_assignments++;
            m->state = KC_CLASSIC_ST_STABLE;
            m->prepared = false;
            m->rejoin_needed = true;
            m->last_heartbeat_ok_ms = now_ms;
            m->next_heartbeat_ms = now_ms + m->cfg.heartbeat_interval_ms;
        } else {
            on_assignment(m, &assigned, now_ms);
        }
        kc_tpset_free(&assigned);
        return;
    }
    kc_classic_free_sync(m);
    /* Any failed SyncGroup means joining again; this round was prepared already. */
    m->state = KC_CLASSIC_ST_UNJOINED;
    m->prepared = true;
    m->rejoin_needed = true;
    if (c == KC_KAFKA_ILLEGAL_GENERATION || c == KC_KAFKA_UNKNOWN_MEMBER_ID)
        m->prepared = false; /* the lost partitions must go before the next JoinGroup */
    if (kc_classic_common_error(m, c, now_ms))
        return;
    if (!kc_kafka_err_retriable(c))
        kc_classic_fatal(m, c, "group %s: SyncGroup failed: %s%s", NULL);
}

void kc_classic_heartbeat_response(kc_classic_t *m, int16_t code, int64_t now_ms)
{
    if (m->inflight != KC_CLASSIC_IF_HEARTBEAT)
        return;
    m->inflight = KC_CLASSIC_IF_NONE;
    if (code == 0) {
        m->last_heartbeat_ok_ms = now_ms;
        m->lost_streak = 0; /* the coordinator works */
        return;
    }
    if (code == KC_KAFKA_REBALANCE_IN_PROGRESS) /* counts as a live session too */
        m->last_heartbeat_ok_ms = now_ms;
    if (m->state == KC_CLASSIC_ST_UNJOINED && code == KC_KAFKA_REBALANCE_IN_PROGRESS)
        return;                               /* already on our way to JoinGroup */
    kc_classic_common_error(m, code, now_ms); /* anything else: retried at the next interval */
}

void kc_classic_leave_response(kc_classic_t *m, int16_t code, int64_t now_ms)
{
    (void)code; /* a refused leave changes nothing: the session runs out on its own */
    (void)now_ms;
    if (m->inflight != KC_CLASSIC_IF_LEAVE)
        return;
    m->inflight = KC_CLASSIC_IF_NONE;
    if (m->state == KC_CLASSIC_ST_CLOSING) /* else the leave of a max.poll overrun */
        m->closed_pending = true;
}

void kc_classic_app_commit_error(kc_classic_t *m, int16_t code, int64_t now_ms)
{
    if (m->state == KC_CLASSIC_ST_STABLE || m->state == KC_CLASSIC_ST_UNJOINED)
        kc_classic_common_error(m, code, now_ms);
}

void kc_classic_metadata_changed(kc_classic_t *m, int64_t now_ms)
{
    (void)now_ms;
    /* Java: only the leader compares with the metadata its assignment used. */
    if (!m->is_leader || m->state < KC_CLASSIC_ST_SYNCING || m->state >= KC_CLASSIC_ST_CLOSING)
        return;
    for (size_t i = 0; i < m->n_snap; i++)
        if (m->partitions(m->partitions_ctx, m->snap_topics[i]) != m->snap_counts[i]) {
            kc_classic_rejoin(m);
            return;
        }
}
