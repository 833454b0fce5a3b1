/*
 * KIP-848 member: building heartbeats ("send only what changed"), applying responses, and the
 * action stream for the runtime/engine. Rules and why: group/848/member.h.
 * Owner: network thread — a kc_g848_t is touched only there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/848/member_int.h"
#include "proto/kafka_errors.h"

static kc_str_t view(const char *s)
{
    return s ? (kc_str_t){s, (int32_t)strlen(s)} : KC_STR_NULL;
}

/* rc.owned grouped by topic id (the set is sorted, so each topic is one run). */
static kc_err_t fill_owned(kc_g848_t *gc, kc_consumer_group_heartbeat_request_t *req)
{
    const kc_tpset_t *o = &gc->rc.owned;
    free(gc->req_tps);
    free(gc->req_parts);
    gc->req_tps = calloc(o->n ? o->n : 1, sizeof *gc->req_tps);
    gc->req_parts = calloc(o->n ? o->n : 1, sizeof *gc->req_parts);
    if (!gc->req_tps || !gc->req_parts)
        return KC_ERR_NOMEM;
    int32_t nt = 0;
    for (size_t i = 0; i < o->n; i++) {
        gc->req_parts[i] = o->items[i].partition;
        if (i == 0 || o->items[i].topic != o->items[i - 1].topic) {
            memcpy(gc->req_tps[nt].topic_id.b, o->items[i].topic->id, 16);
            gc->req_tps[nt].partitions.items = &gc->req_parts[i];
            gc->req_tps[nt].partitions.count = 0;
            nt++;
        }
        gc->req_tps[nt - 1].partitions.count++;
    }
    req->topic_partitions.count = nt;
    req->topic_partitions.items = gc->req_tps;
    return KC_OK;
}

static bool heartbeat_state(kc_g848_state_t s)
{
    return s == KC_G848_JOINING || s == KC_G848_STABLE || s == KC_G848_RECONCILING ||
           s == KC_G848_ACKNOWLEDGING || s == KC_G848_PREPARE_LEAVING || s == KC_G848_LEAVING;
}

bool kc_g848_heartbeat_wanted(const kc_g848_t *gc, int64_t now_ms)
{
    return heartbeat_state(gc->state) && !gc->inflight && !gc->coordinator_wait &&
           (gc->hb_now || now_ms >= gc->next_hb_ms);
}

kc_err_t kc_g848_heartbeat_due(kc_g848_t *gc, int64_t now_ms, int16_t version,
                               kc_consumer_group_heartbeat_request_t *req, kc_error_t *err)
{
    if (!kc_g848_heartbeat_wanted(gc, now_ms))
        return KC_ERR_AGAIN;
    if (gc->regex && version < 1)
        return kc_fail(
            err, KC_ERR_UNSUPPORTED,
            "group %s: subscribed_topic_regex needs ConsumerGroupHeartbeat v1, broker offers v%d",
            gc->group_id, version);
    kc_consumer_group_heartbeat_request_init(req);
    /* The generated init leaves nullable arrays at count 0 (an empty list); here null is the
     * meaning "unchanged", so set it explicitly. */
    req->subscribed_topic_names.count = -1;
    req->topic_partitions.count = -1;
    bool leaving = gc->state == KC_G848_LEAVING;
    req->group_id = view(gc->group_id);
    /* v0: the broker names the member; before its first answer the id is "". v1+ (KIP-1082):
     * ours from the start, kept for the consumer's life. */
    req->member_id =
        view(version < 1 && gc->epoch == 0 && !gc->id_from_broker ? "" : gc->member_id);
    req->member_epoch = leaving ? gc->leave_epoch : gc->epoch;
    req->instance_id = view(gc->instance_id); /* always, when static (Java does the same) */
    gc->inflight = true;
    gc->inflight_leave = leaving;
    gc->hb_now = false;
    gc->join_sent = true;
    if (leaving)
        return KC_OK; /* a leave carries identity only: everything else "unchanged" */

    bool full = gc->epoch == 0 || !gc->sent_valid;
    if (full || gc->sent_rebalance_timeout != gc->cfg.rebalance_timeout_ms)
        req->rebalance_timeout_ms = gc->cfg.rebalance_timeout_ms;
    if (full || gc->sent_sub_gen != gc->sub_gen) {
        if (gc->regex) {
            req->subscribed_topic_regex = view(gc->regex);
            if (!full && gc->sent_names) /* switching from names: clear them */
                req->subscribed_topic_names.count = 0;
        } else {
            free(gc->req_topics);
            gc->req_topics = calloc((size_t)gc->n_topics + 1, sizeof *gc->req_topics);
            if (!gc->req_topics) {
                gc->inflight = false;
                return kc_fail(err, KC_ERR_NOMEM, "group %s: out of memory", gc->group_id);
            }
            for (int32_t i = 0; i < gc->n_topics; i++)
                gc->req_topics[i] = view(gc->topics[i]);
            req->subscribed_topic_names.count = gc->n_topics;
            req->subscribed_topic_names.items = gc->req_topics;
            if (!full && !gc->sent_names && version >= 1) /* switching from a regex: clear it */
                req->subscribed_topic_regex = view("");
        }
        gc->sent_names = gc->regex == NULL;
    }
    if (full) {
        req->server_assignor = view(gc->assignor);
        req->rack_id = view(gc->rack_id);
    }
    /* Owned partitions: on a join, and whenever the completed reconciliation changed them. A
     * reconciliation still running has not changed rc.owned, so nothing reduced or new leaks. */
    if (full || !gc->sent_owned_valid || !kc_tpset_equal(&gc->sent_owned, &gc->rc.owned)) {
        if (fill_owned(gc, req) || kc_tpset_copy(&gc->sent_owned, &gc->rc.owned)) {
            gc->inflight = false;
            return kc_fail(err, KC_ERR_NOMEM, "group %s: out of memory", gc->group_id);
        }
        gc->sent_owned_valid = true;
    }
    gc->sent_valid = true;
    gc->sent_sub_gen = gc->sub_gen;
    gc->sent_rebalance_timeout = gc->cfg.rebalance_timeout_ms;
    if (gc->rc.ack_pending) {
        kc_reconcile_ack_sent(&gc->rc);
        kc_g848_m_update_state(gc);
    }
    return KC_OK;
}

void kc_g848_heartbeat_sent(kc_g848_t *gc, int64_t now_ms)
{
    /* Java restarts the interval when a heartbeat goes out; the response may shorten it. */
    gc->next_hb_ms = now_ms + gc->interval_ms;
}

static void leave_done(kc_g848_t *gc)
{
    gc->inflight_leave = false;
    gc->epoch = 0;
    gc->close_requested = false;
    gc->state = gc->poll_expired ? KC_G848_STALE : KC_G848_UNSUBSCRIBED;
    kc_g848_m_update_state(gc);
}

/* "Ask again in a moment", bounded by a deadline, never surfaced while it holds. */
static void coordinator_problem(kc_g848_t *gc, int64_t now_ms, int16_t code, bool rediscover)
{
    kc_g848_m_forget_sent(gc);
    if (!gc->retrying) {
        kc_retry_start(&gc->retry, now_ms, gc->cfg.coordinator_timeout_ms, gc->cfg.retry_backoff_ms,
                       gc->cfg.retry_backoff_max_ms, (uint64_t)now_ms ^ 0x9e3779b97f4a7c15ULL);
        gc->retrying = true;
        gc->retry_reported = false;
    }
    int64_t at;
    kc_error_t e;
    if (kc_retry_next(&gc->retry, now_ms, &at, &e) != KC_OK) {
        /* kc_retry_next refuses a backoff that ends past the deadline; while the deadline still
         * holds, ask once more at it instead of reporting early. */
        if (now_ms < gc->retry.deadline_ms) {
            at = gc->retry.deadline_ms;
        } else if (!gc->retry_reported) {
            kc_g848_m_report(gc, false, code,
                             "group %s: coordinator still failing (%s) past the deadline%s",
                             "; retrying");
            gc->retry_reported = true;
            at = now_ms + gc->cfg.retry_backoff_max_ms;
        } else {
            at = now_ms + gc->cfg.retry_backoff_max_ms;
        }
    }
    gc->next_hb_ms = at;
    gc->hb_now = false;
    if (rediscover) {
        gc->want_rediscover = true;
        gc->coordinator_wait = true;
    }
}

static void fence(kc_g848_t *gc)
{
    kc_error_t e;
    gc->epoch = 0;
    gc->state = KC_G848_FENCED;
    kc_g848_m_forget_sent(gc);
    kc_tpset_clear(&gc->target_raw);
    if (kc_reconcile_lose_all(&gc->rc, &e))
        gc->last_error = e;
    kc_g848_m_update_state(gc);
}

static void fatal(kc_g848_t *gc, int16_t code, kc_str_t msg)
{
    char detail[160] = "";
    if (msg.len > 0)
        snprintf(detail, sizeof detail, ": %.*s", msg.len > 150 ? 150 : (int)msg.len, msg.ptr);
    kc_g848_m_report(gc, true, code, "group %s: ConsumerGroupHeartbeat failed with %s%s", detail);
    gc->state = KC_G848_FATAL;
    kc_error_t e;
    if (kc_reconcile_lose_all(&gc->rc, &e))
        gc->last_error = e;
}

static void take_assignment(kc_g848_t *gc,
                            const kc_consumer_group_heartbeat_response_assignment_t *a)
{
    kc_tpset_clear(&gc->target_raw);
    for (int32_t i = 0; i < a->topic_partitions.count; i++) {
        const kc_consumer_group_heartbeat_response_topic_partitions_t *t =
            &a->topic_partitions.items[i];
        const kc_gtopic_t *topic = kc_gtopics_id(&gc->interned, t->topic_id.b);
        for (int32_t j = 0; j < t->partitions.count; j++)
            if (!topic || kc_tpset_add(&gc->target_raw, topic, t->partitions.items[j]))
                return;
    }
    kc_g848_m_resolve_target(gc, true);
}

void kc_g848_on_heartbeat_response(kc_g848_t *gc, int64_t now_ms,
                                   const kc_consumer_group_heartbeat_response_t *resp)
{
    gc->inflight = false;
    if (gc->inflight_leave) {
        leave_done(gc); /* whatever the answer: the member is gone or will time out */
        return;
    }
    if (gc->state == KC_G848_LEAVING || gc->state == KC_G848_FATAL ||
        gc->state == KC_G848_UNSUBSCRIBED || gc->state == KC_G848_STALE ||
        gc->state == KC_G848_FENCED)
        return; /* an answer to a request from before the state change */
    switch (resp->error_code) {
    case 0:
        break;
    case KC_KAFKA_NOT_COORDINATOR:
    case KC_KAFKA_COORDINATOR_NOT_AVAILABLE:
        coordinator_problem(gc, now_ms, resp->error_code, true);
        return;
    case KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS:
        coordinator_problem(gc, now_ms, resp->error_code, false);
        return;
    case KC_KAFKA_FENCED_MEMBER_EPOCH:
    case KC_KAFKA_UNKNOWN_MEMBER_ID:
        fence(gc);
        return;
    case KC_KAFKA_TOPIC_AUTHORIZATION_FAILED:
        /* Java's rule: the application hears of it, the membership carries on (a subscription
         * to a topic we may not read is the caller's to fix, not a reason to leave). */
        kc_g848_m_report(gc, false, resp->error_code, "group %s: heartbeat answered %s%s",
                         "; membership continues");
        kc_g848_m_forget_sent(gc);
        gc->next_hb_ms = now_ms + gc->interval_ms;
        return;
    default:
        fatal(gc, resp->error_code, resp->error_message);
        return;
    }
    gc->retrying = false;
    if (resp->member_id.len > 0 && (size_t)resp->member_id.len < sizeof gc->member_id &&
        (resp->member_id.len != (int32_t)strlen(gc->member_id) ||
         memcmp(resp->member_id.ptr, gc->member_id, (size_t)resp->member_id.len) != 0)) {
        memcpy(gc->member_id, resp->member_id.ptr, (size_t)resp->member_id.len);
        gc->member_id[resp->member_id.len] = 0;
        gc->id_from_broker = true; /* v0 */
    }
    gc->epoch = resp->member_epoch;
    if (resp->heartbeat_interval_ms > 0)
        gc->interval_ms = resp->heartbeat_interval_ms;
    gc->next_hb_ms = now_ms + gc->interval_ms;
    if (gc->commit_refresh_epoch) {
        gc->commit_refresh_epoch = false; /* the epoch is fresh: the commit may go again */
        gc->commit_retry_at_ms = now_ms;
    }
    /* While leaving, a new target is not taken: everything is being revoked anyway. */
    if (resp->has_assignment && gc->state != KC_G848_PREPARE_LEAVING)
        take_assignment(gc, &resp->assignment);
    kc_g848_m_update_state(gc);
}

void kc_g848_on_heartbeat_failure(kc_g848_t *gc, int64_t now_ms, const kc_error_t *why)
{
    (void)why;
    gc->inflight = false;
    if (gc->inflight_leave) {
        leave_done(gc);
        return;
    }
    if (heartbeat_state(gc->state))
        coordinator_problem(gc, now_ms, 0, true);
}

void kc_g848_coordinator_ready(kc_g848_t *gc, int64_t now_ms)
{
    gc->coordinator_wait = false;
    if (gc->commit_retry_at_ms > now_ms)
        gc->commit_retry_at_ms = now_ms;
}

void kc_g848_on_metadata(kc_g848_t *gc, int64_t now_ms)
{
    (void)now_ms;
    if (gc->state == KC_G848_STABLE || gc->state == KC_G848_RECONCILING ||
        gc->state == KC_G848_ACKNOWLEDGING || gc->state == KC_G848_JOINING) {
        kc_g848_m_resolve_target(gc, false);
        kc_g848_m_update_state(gc);
    }
}

bool kc_g848_next_action(kc_g848_t *gc, int64_t now_ms, kc_g848_action_t *out)
{
    memset(out, 0, sizeof *out);
    if (gc->have_error) {
        gc->have_error = false;
        *out = gc->error_action;
        return true;
    }
    if (gc->want_rediscover) {
        gc->want_rediscover = false;
        out->kind = KC_G848_ACT_REDISCOVER;
        return true;
    }
    if (gc->metadata_wanted) {
        gc->metadata_wanted = false;
        out->kind = KC_G848_ACT_METADATA;
        return true;
    }
    kc_reconcile_tick(&gc->rc, now_ms);
    /* A commit waiting to be retried goes out when its time has come (and its epoch is fresh). */
    if (gc->rc.step == KC_RECON_COMMIT && !gc->rc.issued && gc->rc.commit_deadline_ms >= 0 &&
        (gc->commit_refresh_epoch || gc->coordinator_wait || now_ms < gc->commit_retry_at_ms))
        return false;
    kc_recon_action_t a = kc_reconcile_next_action(&gc->rc, now_ms);
    kc_g848_m_update_state(gc);
    switch (a.kind) {
    case KC_RECON_ACT_NONE:
        return false;
    case KC_RECON_ACT_REVOKE:
        out->kind = KC_G848_ACT_REVOKE;
        break;
    case KC_RECON_ACT_LOSE:
        out->kind = KC_G848_ACT_LOSE;
        break;
    case KC_RECON_ACT_DROP:
        out->kind = KC_G848_ACT_DROP;
        break;
    case KC_RECON_ACT_ASSIGN:
        out->kind = KC_G848_ACT_ASSIGN;
        break;
    case KC_RECON_ACT_COMMIT:
        out->kind = KC_G848_ACT_COMMIT;
        out->member_id = gc->member_id;
        out->member_epoch = gc->epoch;
        break;
    }
    out->seq = a.seq;
    out->parts = a.parts;
    return true;
}

void kc_g848_action_done(kc_g848_t *gc, uint64_t seq, int64_t now_ms)
{
    kc_reconcile_done(&gc->rc, seq, now_ms);
    kc_g848_m_update_state(gc);
}

void kc_g848_on_commit_result(kc_g848_t *gc, uint64_t seq, int16_t kafka_code, int64_t now_ms)
{
    kc_offsets_verdict_t v = kc_offsets_classify(kafka_code);
    kc_recon_commit_t outcome = v == KC_OFFSETS_OK     ? KC_RECON_COMMIT_OK
                                : v == KC_OFFSETS_FAIL ? KC_RECON_COMMIT_GIVE_UP
                                                       : KC_RECON_COMMIT_RETRY;
    if (v == KC_OFFSETS_FAIL && seq == gc->rc.seq)
        kc_g848_m_report(gc, false, kafka_code,
                         "group %s: commit of revoked partitions failed with %s%s",
                         "; the next owner re-reads from the last committed offset");
    if (kc_reconcile_commit_result(&gc->rc, seq, outcome, now_ms)) {
        gc->commit_retry_at_ms = now_ms + gc->cfg.retry_backoff_ms;
        if (v == KC_OFFSETS_RETRY_FRESH_EPOCH) {
            gc->commit_refresh_epoch = true; /* retried after a heartbeat brings the epoch */
            gc->hb_now = true;
        } else if (v == KC_OFFSETS_REDISCOVER) {
            gc->want_rediscover = true;
            gc->coordinator_wait = true;
        }
    }
    kc_g848_m_update_state(gc);
}

void kc_g848_tick(kc_g848_t *gc, int64_t now_ms)
{
    kc_reconcile_tick(&gc->rc, now_ms);
    kc_g848_m_update_state(gc);
}

int64_t kc_g848_next_wakeup(const kc_g848_t *gc, int64_t now_ms)
{
    int64_t t = INT64_MAX;
    if (gc->have_error || gc->want_rediscover || gc->metadata_wanted)
        return now_ms;
    if (heartbeat_state(gc->state) && !gc->inflight && !gc->coordinator_wait)
        t = gc->hb_now ? now_ms : gc->next_hb_ms;
    if (gc->rc.step == KC_RECON_COMMIT && gc->rc.commit_deadline_ms >= 0) {
        if (gc->rc.commit_deadline_ms < t)
            t = gc->rc.commit_deadline_ms;
        if (!gc->rc.issued && !gc->commit_refresh_epoch && gc->commit_retry_at_ms < t)
            t = gc->commit_retry_at_ms;
    }
    return t < now_ms ? now_ms : t;
}

kc_err_t kc_g848_commit_identity(const kc_g848_t *gc, kc_commit_identity_t *who, kc_error_t *err)
{
    if (gc->epoch <= 0)
        return kc_fail(err, KC_ERR_STATE, "group %s: not a member yet (epoch %d)", gc->group_id,
                       gc->epoch);
    return kc_offsets_identity_member(who, gc->group_id, gc->member_id, gc->epoch, gc->instance_id,
                                      err);
}
