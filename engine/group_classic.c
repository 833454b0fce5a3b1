/*
 * The classic group member's state machine (see group_classic.h for the contract).
 *
 * Owner: network thread. Everything in kc_classic_t is touched only from there; time comes in as
 * an argument.
 */
#include "group_classic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign/assign_int.h"
#include "proto/kafka_errors.h"

/* Kafka error codes this machine reacts to (names from the generated table in messages). */
enum {
    K_COORDINATOR_LOAD_IN_PROGRESS = 14,
    K_COORDINATOR_NOT_AVAILABLE = 15,
    K_NOT_COORDINATOR = 16,
    K_ILLEGAL_GENERATION = 22,
    K_INCONSISTENT_GROUP_PROTOCOL = 23,
    K_UNKNOWN_MEMBER_ID = 25,
    K_INVALID_SESSION_TIMEOUT = 26,
    K_REBALANCE_IN_PROGRESS = 27,
    K_GROUP_AUTHORIZATION_FAILED = 30,
    K_UNSUPPORTED_VERSION = 35,
    K_MEMBER_ID_REQUIRED = 79,
    K_FENCED_INSTANCE_ID = 82,
    K_GROUP_MAX_SIZE_REACHED = 81,
    K_UNRELEASED_INSTANCE_ID = 111,
};

static bool is_coordinator_error(int16_t c)
{
    return c == K_NOT_COORDINATOR || c == K_COORDINATOR_NOT_AVAILABLE ||
           c == K_COORDINATOR_LOAD_IN_PROGRESS;
}

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void set_str(char **dst, const char *p, int32_t len)
{
    free(*dst);
    size_t n = len > 0 ? (size_t)len : 0;
    *dst = malloc(n + 1);
    if (*dst) {
        if (n)
            memcpy(*dst, p, n);
        (*dst)[n] = 0;
    }
}

static bool str_eq(kc_str_t s, const char *c)
{
    return c && s.len >= 0 && strlen(c) == (size_t)s.len && memcmp(s.ptr, c, (size_t)s.len) == 0;
}

kc_err_t kc_classic_init(kc_classic_t *m, const kc_classic_config_t *cfg,
                         kc_classic_partitions_fn partitions, void *ctx, kc_error_t *err)
{
    memset(m, 0, sizeof *m);
    if (!cfg->group_id || !*cfg->group_id || cfg->n_assignors == 0 ||
        cfg->n_assignors > KC_CLASSIC_MAX_ASSIGNORS || !partitions)
        return kc_fail(err, KC_ERR_CONFIG, "classic group: group.id, 1-%d assignors and a "
                                           "metadata lookup are required",
                       KC_CLASSIC_MAX_ASSIGNORS);
    if (cfg->heartbeat_interval_ms <= 0 || cfg->session_timeout_ms <= cfg->heartbeat_interval_ms)
        return kc_fail(err, KC_ERR_CONFIG,
                       "heartbeat.interval.ms (%d) must be > 0 and below session.timeout.ms (%d)",
                       cfg->heartbeat_interval_ms, cfg->session_timeout_ms);
    m->cfg = *cfg;
    m->cfg.group_id = xstrdup(cfg->group_id);
    m->cfg.instance_id = xstrdup(cfg->instance_id);
    m->cfg.rack = xstrdup(cfg->rack);
    m->member_id = strdup("");
    if (!m->cfg.group_id || !m->member_id || (cfg->instance_id && !m->cfg.instance_id) ||
        (cfg->rack && !m->cfg.rack)) {
        kc_classic_free(m);
        return kc_fail(err, KC_ERR_NOMEM, "classic group");
    }
    m->partitions = partitions;
    m->partitions_ctx = ctx;
    /* Java: the rebalance protocol is the newest one every configured assignor supports, so a
     * single eager assignor in the list makes the whole member eager. */
    m->cooperative = true;
    for (size_t i = 0; i < cfg->n_assignors; i++)
        if (cfg->assignors[i] != KC_ASSIGNOR_COOPERATIVE_STICKY)
            m->cooperative = false;
    m->generation = -1;
    m->last_assigned_gen = -1;
    return KC_OK;
}

static void free_sync(kc_classic_t *m)
{
    for (size_t i = 0; i < m->n_sync; i++)
        kc_wbuf_free(&m->sync_bufs[i]);
    free(m->sync_bufs);
    free(m->sync_items);
    m->sync_bufs = NULL;
    m->sync_items = NULL;
    m->n_sync = 0;
}

static void free_topics(kc_classic_t *m)
{
    for (size_t i = 0; i < m->n_topics; i++)
        free(m->topics[i]);
    free(m->topics);
    m->topics = NULL;
    m->n_topics = 0;
}

void kc_classic_free(kc_classic_t *m)
{
    free((char *)m->cfg.group_id);
    free((char *)m->cfg.instance_id);
    free((char *)m->cfg.rack);
    free(m->member_id);
    free(m->protocol);
    free_topics(m);
    kc_classic_snapshot_free(m);
    kc_ctps_free(&m->owned);
    kc_ctps_free(&m->last_assigned);
    kc_ctps_free(&m->p_revoke);
    kc_ctps_free(&m->p_assign);
    for (size_t i = 0; i < KC_CLASSIC_MAX_ASSIGNORS; i++)
        kc_wbuf_free(&m->proto_meta[i]);
    free_sync(m);
    memset(m, 0, sizeof *m);
}

/* ---- failures ----------------------------------------------------------------------------- */

static void go_fatal(kc_classic_t *m, int16_t code, const char *fmt, const char *detail)
{
    if (m->fatal.code != KC_OK) /* the first cause is the one reported */
        return;
    kc_fail(&m->fatal, KC_ERR_FATAL, fmt, m->cfg.group_id, code ? kc_kafka_err_name(code) : "",
            detail ? detail : "");
    m->fatal.kafka_code = code;
    m->state = KC_CLASSIC_ST_FATAL;
    m->fatal_pending = true;
    m->rejoin_needed = false;
}

static void assignor_list(const kc_classic_t *m, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < m->cfg.n_assignors && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%s", i ? "," : "",
                              kc_assignor_name(m->cfg.assignors[i]));
}

void kc_classic_describe_result(kc_classic_t *m, const char *protocol_type, const char *protocol)
{
    if (!m->describe_due && m->fatal_code != K_INCONSISTENT_GROUP_PROTOCOL)
        return;
    m->describe_due = false;
    char ours[96], detail[200];
    assignor_list(m, ours, sizeof ours);
    if (protocol_type || protocol)
        snprintf(detail, sizeof detail, "this member offers protocol type 'consumer' with [%s]; "
                                        "the group uses type '%s' with '%s'",
                 ours, protocol_type ? protocol_type : "?", protocol ? protocol : "?");
    else
        snprintf(detail, sizeof detail,
                 "this member offers protocol type 'consumer' with [%s], which no assignor of "
                 "the group's members matches",
                 ours);
    go_fatal(m, K_INCONSISTENT_GROUP_PROTOCOL, "group %s: %s: %s", detail);
}

/* ---- coordinator -------------------------------------------------------------------------- */

void kc_classic_coordinator_lost(kc_classic_t *m, int64_t now_ms)
{
    /* One FindCoordinator per loss; the deadline runs from the first loss. */
    if (m->coord_known || m->coord_lost_at_ms == 0)
        m->coord_lost_at_ms = now_ms;
    if (m->coord_known)
        m->rediscover_due = true;
    m->coord_known = false;
    /* Whatever was in flight went to the old coordinator: JoinGroup is sent again; a lost
     * SyncGroup means joining again (Java); a lost LeaveGroup is not retried. */
    if (m->inflight == KC_CLASSIC_IF_JOIN || m->inflight == KC_CLASSIC_IF_SYNC)
        m->state = m->state == KC_CLASSIC_ST_FATAL ? m->state : KC_CLASSIC_ST_UNJOINED;
    if (m->inflight == KC_CLASSIC_IF_SYNC)
        m->prepared = true; /* the round was prepared already: no second revoke */
    if (m->inflight == KC_CLASSIC_IF_LEAVE)
        m->closed_pending = true;
    m->inflight = KC_CLASSIC_IF_NONE;
}

void kc_classic_coordinator_known(kc_classic_t *m, int64_t now_ms)
{
    m->coord_known = true;
    m->rediscover_due = false;
    m->coord_lost_at_ms = 0;
    m->coord_error_surfaced = false;
    m->last_heartbeat_ok_ms = now_ms;
    m->next_heartbeat_ms = now_ms;
}

void kc_classic_request_failed(kc_classic_t *m, int64_t now_ms)
{
    kc_classic_coordinator_lost(m, now_ms);
}

/* ---- rejoin ------------------------------------------------------------------------------- */

static void request_rejoin(kc_classic_t *m)
{
    if (m->state == KC_CLASSIC_ST_IDLE || m->state >= KC_CLASSIC_ST_CLOSING)
        return;
    m->rejoin_needed = true;
}

/* The generation is gone (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID): what we hold is lost, not
 * revoked — the group may already have handed it on, so no commit under a dead generation. */
static void reset_generation(kc_classic_t *m, bool reset_member_id)
{
    m->generation = -1;
    m->is_leader = false;
    if (reset_member_id)
        set_str(&m->member_id, "", 0);
    m->prepared = false; /* the next join-prepare loses what we hold */
    request_rejoin(m);
}

static void pend_start(kc_classic_t *m, const kc_ctps_t *revoke, const kc_ctps_t *assign,
                       bool lost)
{
    kc_ctps_clear(&m->p_revoke);
    kc_ctps_clear(&m->p_assign);
    if (revoke)
        kc_ctps_add_all(&m->p_revoke, revoke);
    if (assign)
        kc_ctps_add_all(&m->p_assign, assign);
    m->p_lost = lost;
    m->p_issued = false;
    m->pstep = m->p_revoke.n ? KC_CLASSIC_P_REVOKE
               : m->p_assign.n ? KC_CLASSIC_P_ASSIGN
                               : KC_CLASSIC_P_IDLE;
}

static bool topic_subscribed(const kc_classic_t *m, const char *t)
{
    for (size_t i = 0; i < m->n_topics; i++)
        if (strcmp(m->topics[i], t) == 0)
            return true;
    return false;
}

/* Java's onJoinPrepare: lose everything if the generation is gone; else eager revokes all, and
 * cooperative revokes only partitions of topics we no longer subscribe to. */
static void join_prepare(kc_classic_t *m)
{
    m->prepared = true;
    if (m->owned.n == 0)
        return;
    if (m->generation < 0 || !m->member_id[0]) {
        pend_start(m, &m->owned, NULL, true);
        return;
    }
    if (!m->cooperative) {
        pend_start(m, &m->owned, NULL, false);
        return;
    }
    kc_ctps_t gone = {0};
    for (size_t i = 0; i < m->owned.n; i++)
        if (!topic_subscribed(m, m->owned.items[i].topic))
            kc_ctps_add(&gone, m->owned.items[i].topic, -1, m->owned.items[i].partition);
    if (gone.n)
        pend_start(m, &gone, NULL, false);
    kc_ctps_free(&gone);
}

/* ---- app commands ------------------------------------------------------------------------- */

static int cmp_jstr(const void *a, const void *b)
{
    return kc_jstr_cmp(*(char *const *)a, *(char *const *)b);
}

kc_err_t kc_classic_subscribe(kc_classic_t *m, const char *const *topics, size_t n,
                              kc_error_t *err)
{
    if (m->state >= KC_CLASSIC_ST_CLOSING)
        return kc_fail(err, KC_ERR_STATE, "group %s: closed", m->cfg.group_id);
    char **t = calloc(n ? n : 1, sizeof *t);
    if (!t)
        return kc_fail(err, KC_ERR_NOMEM, "subscribe");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool dup = false;
        for (size_t j = 0; j < k; j++)
            dup = dup || strcmp(t[j], topics[i]) == 0;
        if (dup)
            continue;
        if (!(t[k++] = strdup(topics[i]))) {
            for (size_t j = 0; j + 1 < k; j++)
                free(t[j]);
            free(t);
            return kc_fail(err, KC_ERR_NOMEM, "subscribe");
        }
    }
    /* Java sorts the subscription's topics; so do we, so the bytes match. */
    qsort(t, k, sizeof *t, cmp_jstr);
    bool same = k == m->n_topics;
    for (size_t i = 0; same && i < k; i++)
        same = strcmp(t[i], m->topics[i]) == 0;
    free_topics(m);
    m->topics = t;
    m->n_topics = k;
    if (k == 0) {
        kc_classic_unsubscribe(m);
        return KC_OK;
    }
    if (m->state == KC_CLASSIC_ST_IDLE) {
        m->closing = false;
        m->state = KC_CLASSIC_ST_UNJOINED;
        m->prepared = false;
    } else if (!same) {
        request_rejoin(m);
    }
    return KC_OK;
}

static void begin_close(kc_classic_t *m, bool then_idle)
{
    if (m->state == KC_CLASSIC_ST_CLOSED || m->state == KC_CLASSIC_ST_CLOSING)
        return;
    if (m->state == KC_CLASSIC_ST_FATAL || m->state == KC_CLASSIC_ST_IDLE) {
        m->state = then_idle ? KC_CLASSIC_ST_IDLE : KC_CLASSIC_ST_CLOSED;
        m->closed_pending = !then_idle;
        return;
    }
    m->state = KC_CLASSIC_ST_CLOSING;
    m->closing = true;
    m->close_then_idle = then_idle;
    m->prepared = false;
    m->rejoin_needed = false;
}

void kc_classic_unsubscribe(kc_classic_t *m)
{
    begin_close(m, true);
}

void kc_classic_close(kc_classic_t *m)
{
    begin_close(m, false);
}

/* ---- responses ---------------------------------------------------------------------------- */

/* Shared by every response: coordinator errors mean "ask again in a moment" (rediscover within
 * the deadline, nothing surfaced); the membership errors have one meaning everywhere. Returns
 * true when the code was handled here. */
static bool common_error(kc_classic_t *m, int16_t code, int64_t now_ms)
{
    if (is_coordinator_error(code)) {
        kc_classic_coordinator_lost(m, now_ms);
        return true;
    }
    switch (code) {
    case K_FENCED_INSTANCE_ID:
        go_fatal(m, code, "group %s: %s: another instance with group.instance.id '%s' took this "
                          "member's place",
                 m->cfg.instance_id);
        return true;
    case K_GROUP_AUTHORIZATION_FAILED:
        go_fatal(m, code, "group %s: %s%s", NULL);
        return true;
    case K_ILLEGAL_GENERATION:
        reset_generation(m, false);
        return true;
    case K_UNKNOWN_MEMBER_ID:
        reset_generation(m, true);
        return true;
    case K_REBALANCE_IN_PROGRESS:
        request_rejoin(m);
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
        return; /* closing or fatal meanwhile */
    m->state = KC_CLASSIC_ST_UNJOINED; /* unless the join succeeded, join again */
    int16_t c = r->error_code;
    if (c == 0) {
        set_str(&m->member_id, r->member_id.ptr, r->member_id.len);
        m->generation = r->generation_id;
        if (r->protocol_name.len >= 0)
            set_str(&m->protocol, r->protocol_name.ptr, r->protocol_name.len);
        /* A converted (KIP-848) group answers with no leader: nobody relays, and SyncGroup
         * brings what the broker computed. Being the leader needs our own id non-empty. */
        m->is_leader = m->member_id[0] && str_eq(r->leader, m->member_id);
        free_sync(m);
        if (m->is_leader && !r->skip_assignment) {
            int a = m->protocol ? kc_assignor_from_name(m->protocol) : -1;
            kc_error_t e;
            if (a < 0) {
                go_fatal(m, 0, "group %s:%s the coordinator chose assignor '%s', which this "
                               "member does not implement",
                         m->protocol ? m->protocol : "(none)");
                return;
            }
            if (kc_classic_leader_assign(m, (kc_assignor_t)a, r, &m->sync_items, &m->sync_bufs,
                                         &m->n_sync, &e)) {
                go_fatal(m, 0, "group %s:%s leader assignment failed: %s", e.msg);
                return;
            }
        }
        m->state = KC_CLASSIC_ST_SYNCING;
        return;
    }
    switch (c) {
    case K_MEMBER_ID_REQUIRED: /* KIP-394: join again at once with the id we were given */
        set_str(&m->member_id, r->member_id.ptr, r->member_id.len);
        return;
    case K_REBALANCE_IN_PROGRESS: /* e.g. the group is being converted: ask again */
        return;
    case K_INCONSISTENT_GROUP_PROTOCOL:
        m->fatal_code = c;
        if (m->coord_known) {
            m->describe_due = true;
            m->state = KC_CLASSIC_ST_FATAL; /* final text once DescribeGroups answers */
            m->rejoin_needed = false;
        } else {
            kc_classic_describe_result(m, NULL, NULL);
        }
        return;
    case K_GROUP_MAX_SIZE_REACHED:
    case K_INVALID_SESSION_TIMEOUT:
    case K_UNSUPPORTED_VERSION:
    case K_UNRELEASED_INSTANCE_ID:
        go_fatal(m, c, "group %s: JoinGroup refused: %s%s", NULL);
        return;
    }
    if (common_error(m, c, now_ms))
        return;
    if (kc_kafka_err_retriable(c)) {
        m->retry_at_ms = now_ms + m->cfg.retry_backoff_ms;
        return;
    }
    go_fatal(m, c, "group %s: JoinGroup failed: %s%s", NULL);
}

static void on_assignment(kc_classic_t *m, const kc_ctps_t *assigned, int64_t now_ms)
{
    kc_ctps_t revoke = {0}, add = {0};
    kc_ctps_diff(&revoke, &m->owned, assigned);
    kc_ctps_diff(&add, assigned, &m->owned);
    pend_start(m, &revoke, &add, false);
    /* KIP-429: partitions we gave up were withheld from their next owner this round; rejoining
     * (after the revoke finishes) is what lets round two hand them over. */
    if (m->cooperative && revoke.n)
        m->rejoin_needed = true;
    kc_ctps_free(&revoke);
    kc_ctps_free(&add);
    kc_ctps_copy(&m->last_assigned, assigned);
    m->last_assigned_gen = m->generation;
    m->state = KC_CLASSIC_ST_STABLE;
    m->prepared = false;
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
    if (c == 0) {
        kc_ctps_t assigned = {0};
        kc_error_t e;
        kc_err_t rc = kc_classic_decode_assignment(r->assignment, &assigned, &e);
        free_sync(m); /* after the decode: r may be a view into what we sent */
        if (rc) {
            kc_ctps_free(&assigned);
            go_fatal(m, 0, "group %s:%s undecodable assignment: %s", e.msg);
            return;
        }
        on_assignment(m, &assigned, now_ms);
        kc_ctps_free(&assigned);
        return;
    }
    free_sync(m);
    /* Any failed SyncGroup means joining again; this round was prepared already. */
    m->state = KC_CLASSIC_ST_UNJOINED;
    m->prepared = true;
    m->rejoin_needed = true;
    if (c == K_ILLEGAL_GENERATION || c == K_UNKNOWN_MEMBER_ID)
        m->prepared = false; /* the lost partitions must go before the next JoinGroup */
    if (common_error(m, c, now_ms))
        return;
    if (!kc_kafka_err_retriable(c))
        go_fatal(m, c, "group %s: SyncGroup failed: %s%s", NULL);
}

void kc_classic_heartbeat_response(kc_classic_t *m, int16_t code, int64_t now_ms)
{
    if (m->inflight != KC_CLASSIC_IF_HEARTBEAT)
        return;
    m->inflight = KC_CLASSIC_IF_NONE;
    if (code == 0) {
        m->last_heartbeat_ok_ms = now_ms;
        return;
    }
    if (code == K_REBALANCE_IN_PROGRESS) /* counts as a live session too */
        m->last_heartbeat_ok_ms = now_ms;
    if (m->state == KC_CLASSIC_ST_UNJOINED && code == K_REBALANCE_IN_PROGRESS)
        return; /* already on our way to JoinGroup */
    common_error(m, code, now_ms); /* anything else: retried at the next interval */
}

void kc_classic_leave_response(kc_classic_t *m, int16_t code, int64_t now_ms)
{
    (void)code; /* a refused leave changes nothing: the session runs out on its own */
    (void)now_ms;
    if (m->inflight != KC_CLASSIC_IF_LEAVE)
        return;
    m->inflight = KC_CLASSIC_IF_NONE;
    m->closed_pending = true;
}

void kc_classic_app_commit_error(kc_classic_t *m, int16_t code, int64_t now_ms)
{
    if (m->state == KC_CLASSIC_ST_STABLE || m->state == KC_CLASSIC_ST_UNJOINED)
        common_error(m, code, now_ms);
}

void kc_classic_metadata_changed(kc_classic_t *m, int64_t now_ms)
{
    (void)now_ms;
    /* Java: only the leader compares with the metadata its assignment used. */
    if (!m->is_leader || m->state < KC_CLASSIC_ST_SYNCING || m->state >= KC_CLASSIC_ST_CLOSING)
        return;
    for (size_t i = 0; i < m->n_snap; i++)
        if (m->partitions(m->partitions_ctx, m->snap_topics[i]) != m->snap_counts[i]) {
            request_rejoin(m);
            return;
        }
}

/* ---- pending reconciliation --------------------------------------------------------------- */

static void pend_advance(kc_classic_t *m)
{
    m->p_issued = false;
    switch (m->pstep) {
    case KC_CLASSIC_P_REVOKE:
        m->pstep = KC_CLASSIC_P_COMMIT;
        break;
    case KC_CLASSIC_P_COMMIT:
        m->pstep = KC_CLASSIC_P_DROP;
        break;
    case KC_CLASSIC_P_DROP:
        kc_ctps_remove_all(&m->owned, &m->p_revoke);
        m->pstep = m->p_assign.n ? KC_CLASSIC_P_ASSIGN : KC_CLASSIC_P_IDLE;
        break;
    case KC_CLASSIC_P_ASSIGN:
        kc_ctps_add_all(&m->owned, &m->p_assign);
        m->pstep = KC_CLASSIC_P_IDLE;
        break;
    default:
        break;
    }
}

void kc_classic_action_done(kc_classic_t *m, uint64_t seq, int64_t now_ms)
{
    (void)now_ms;
    if (!m->p_issued || seq != m->seq || m->pstep == KC_CLASSIC_P_COMMIT)
        return;
    pend_advance(m);
}

void kc_classic_commit_result(kc_classic_t *m, uint64_t seq, int16_t code, int64_t now_ms)
{
    if (!m->p_issued || seq != m->seq || m->pstep != KC_CLASSIC_P_COMMIT)
        return;
    kc_offsets_verdict_t v = kc_offsets_classify(code);
    if ((v == KC_OFFSETS_REDISCOVER || v == KC_OFFSETS_RETRY) && now_ms < m->commit_deadline_ms) {
        m->p_issued = false; /* handed out again once the coordinator is back / after backoff */
        m->commit_retry_at_ms = now_ms + m->cfg.retry_backoff_ms;
        if (v == KC_OFFSETS_REDISCOVER)
            kc_classic_coordinator_lost(m, now_ms);
        return;
    }
    /* Committed, refused for good, or out of time: the next owner resumes from the last
     * committed offset (at-least-once). REBALANCE_IN_PROGRESS etc. also mean rejoining. */
    if (v == KC_OFFSETS_FAIL && m->state == KC_CLASSIC_ST_STABLE)
        common_error(m, code, now_ms);
    pend_advance(m);
}

/* ---- poll --------------------------------------------------------------------------------- */

static bool pend_poll(kc_classic_t *m, int64_t now_ms, kc_classic_out_t *out)
{
    if (m->pstep == KC_CLASSIC_P_COMMIT && m->commit_retry_at_ms != 0 &&
        now_ms >= m->commit_deadline_ms)
        pend_advance(m); /* abandoned: the next owner re-reads from the last commit */
    if (m->pstep == KC_CLASSIC_P_IDLE || m->p_issued)
        return false;
    switch (m->pstep) {
    case KC_CLASSIC_P_REVOKE:
        out->kind = m->p_lost ? KC_CLASSIC_LOSE : KC_CLASSIC_REVOKE;
        m->commit_deadline_ms = now_ms + m->cfg.commit_timeout_ms; /* set again at COMMIT */
        m->commit_retry_at_ms = 0;
        break;
    case KC_CLASSIC_P_COMMIT:
        /* Lost partitions, no auto-commit, or no generation to commit under: skip. */
        if (m->p_lost || !m->cfg.auto_commit || m->generation < 0 || !m->member_id[0]) {
            pend_advance(m);
            return pend_poll(m, now_ms, out);
        }
        if (!m->coord_known || now_ms < m->commit_retry_at_ms)
            return false;
        if (m->commit_retry_at_ms == 0)
            m->commit_deadline_ms = now_ms + m->cfg.commit_timeout_ms;
        m->commit_retry_at_ms = 1; /* non-zero: a retry keeps the first deadline */
        out->kind = KC_CLASSIC_COMMIT;
        kc_error_t e;
        kc_offsets_identity_member(&out->who, m->cfg.group_id, m->member_id, m->generation,
                                   m->cfg.instance_id, &e);
        break;
    case KC_CLASSIC_P_DROP:
        out->kind = KC_CLASSIC_DROP;
        break;
    case KC_CLASSIC_P_ASSIGN:
        out->kind = KC_CLASSIC_ASSIGN;
        break;
    default:
        return false;
    }
    out->parts = m->pstep == KC_CLASSIC_P_ASSIGN ? &m->p_assign : &m->p_revoke;
    out->seq = ++m->seq;
    m->p_issued = true;
    return true;
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
            go_fatal(m, 0, "group %s:%s subscription: %s", e.msg);
            return false;
        }
        m->protocols[i].name = kc_str(kc_assignor_name(m->cfg.assignors[i]));
        m->protocols[i].metadata = (kc_bytes_t){m->proto_meta[i].data, (int32_t)m->proto_meta[i].len};
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
    bool state_ok = m->state == KC_CLASSIC_ST_STABLE ||
                    (m->state == KC_CLASSIC_ST_UNJOINED && !m->prepared) ||
                    (m->state == KC_CLASSIC_ST_UNJOINED && m->pstep != KC_CLASSIC_P_IDLE) ||
                    (m->state == KC_CLASSIC_ST_CLOSING && m->pstep != KC_CLASSIC_P_IDLE);
    return member && state_ok && m->coord_known && m->inflight == KC_CLASSIC_IF_NONE &&
           now_ms >= m->next_heartbeat_ms;
}

static bool close_poll(kc_classic_t *m, int64_t now_ms, kc_classic_out_t *out)
{
    if (m->inflight != KC_CLASSIC_IF_NONE || m->pstep != KC_CLASSIC_P_IDLE)
        return false;
    if (!m->prepared) { /* Java's onLeavePrepare: revoke (or lose) what we hold */
        m->prepared = true;
        if (m->owned.n) {
            pend_start(m, &m->owned, NULL, m->generation < 0 || !m->member_id[0]);
            return pend_poll(m, now_ms, out);
        }
    }
    /* Static members do not leave: their place (and partitions) wait for the instance to come
     * back within the session timeout, which is the point of group.instance.id. */
    if (!m->cfg.instance_id && m->member_id[0] && m->coord_known && !m->closed_pending) {
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

bool kc_classic_poll(kc_classic_t *m, int64_t now_ms, kc_classic_out_t *out)
{
    memset(out, 0, sizeof *out);
    if (m->fatal_pending) {
        m->fatal_pending = false;
        out->kind = KC_CLASSIC_FATAL;
        out->error = m->fatal;
        if (m->owned.n && m->pstep == KC_CLASSIC_P_IDLE) /* a fenced member stops consuming */
            pend_start(m, &m->owned, NULL, true);
        return true;
    }
    if (m->describe_due && m->coord_known && !m->fatal_pending) {
        out->kind = KC_CLASSIC_DESCRIBE;
        m->describe_due = false;
        m->fatal_code = K_INCONSISTENT_GROUP_PROTOCOL;
        return true;
    }
    if (m->rediscover_due) {
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
            set_str(&m->member_id, "", 0); /* Java forgets its id once it has left */
            m->generation = -1;
            m->is_leader = false;
            m->state = m->close_then_idle ? KC_CLASSIC_ST_IDLE : KC_CLASSIC_ST_CLOSED;
            if (m->close_then_idle)
                return false;
            out->kind = KC_CLASSIC_CLOSED;
            return true;
        }
        if (close_poll(m, now_ms, out))
            return true;
    }
    /* A session with no answered heartbeat for session.timeout.ms: the coordinator is gone. */
    if (m->coord_known && m->state == KC_CLASSIC_ST_STABLE &&
        now_ms - m->last_heartbeat_ok_ms >= m->cfg.session_timeout_ms) {
        kc_classic_coordinator_lost(m, now_ms);
        return kc_classic_poll(m, now_ms, out);
    }
    if (m->state == KC_CLASSIC_ST_STABLE && m->rejoin_needed && m->pstep == KC_CLASSIC_P_IDLE) {
        m->state = KC_CLASSIC_ST_UNJOINED;
        m->prepared = false;
    }
    if (m->state == KC_CLASSIC_ST_UNJOINED && m->pstep == KC_CLASSIC_P_IDLE &&
        m->inflight == KC_CLASSIC_IF_NONE) {
        if (!m->prepared) {
            join_prepare(m);
            if (pend_poll(m, now_ms, out))
                return true;
        }
        if (m->pstep == KC_CLASSIC_P_IDLE && m->coord_known && now_ms >= m->retry_at_ms)
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
    if (m->pstep == KC_CLASSIC_P_COMMIT) {
        AT(m->commit_deadline_ms);
        if (!m->p_issued && m->commit_retry_at_ms > 1)
            AT(m->commit_retry_at_ms);
    }
    if (!m->coord_known && m->coord_lost_at_ms && !m->coord_error_surfaced)
        AT(m->coord_lost_at_ms + m->cfg.coordinator_timeout_ms);
#undef AT
    return w;
}
