/*
 * The classic group member's state machine (see group/classic/member.h for the contract): setup,
 * failures, coordinator tracking, rejoin requests and the application's commands. Responses are
 * in group/classic/answers.c, the reconciliation steps and the output poll in
 * group/classic/outputs.c.
 *
 * Owner: network thread. Everything in kc_classic_t is touched only from there; time comes in as
 * an argument.
 */
#include "group/classic/member_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "group/classic/assign/assign_int.h"

bool kc_classic_is_coord_error(int16_t c)
{
    return c == KC_KAFKA_NOT_COORDINATOR || c == KC_KAFKA_COORDINATOR_NOT_AVAILABLE ||
           c == KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS;
}

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

void kc_classic_set_str(char **dst, const char *p, int32_t len)
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

bool kc_classic_str_eq(kc_str_t s, const char *c)
{
    return c && s.len >= 0 && strlen(c) == (size_t)s.len && memcmp(s.ptr, c, (size_t)s.len) == 0;
}

kc_err_t kc_classic_init(kc_classic_t *m, const kc_classic_config_t *cfg,
                         kc_classic_partitions_fn partitions, void *ctx, kc_error_t *err)
{
    memset(m, 0, sizeof *m);
    if (!cfg->group_id || !*cfg->group_id || cfg->n_assignors == 0 ||
        cfg->n_assignors > KC_CLASSIC_MAX_ASSIGNORS || !partitions)
        return kc_fail(err, KC_ERR_CONFIG,
                       "classic group: group.id, 1-%d assignors and a "
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
    /* FNV-1a of the group id, mixed with this member's address: members (of one group or of
     * several, in one process or several) that lose a coordinator together do not retry in
     * step. */
    m->backoff_rng = 0xcbf29ce484222325ULL;
    for (const char *p = m->cfg.group_id; *p; p++)
        m->backoff_rng = (m->backoff_rng ^ (uint8_t)*p) * 0x100000001b3ULL;
    m->backoff_rng ^= (uint64_t)(uintptr_t)m;
    /* Java: the rebalance protocol is the newest one every configured assignor supports, so a
     * single eager assignor in the list makes the whole member eager. */
    m->cooperative = true;
    for (size_t i = 0; i < cfg->n_assignors; i++)
        if (cfg->assignors[i] != KC_ASSIGNOR_COOPERATIVE_STICKY)
            m->cooperative = false;
    m->generation = -1;
    m->last_assigned_gen = -1;
    kc_gtopics_init_by_name(&m->interned, kc_jstr_cmp);
    kc_reconcile_init(&m->rc, cfg->auto_commit, cfg->commit_timeout_ms);
    return KC_OK;
}

void kc_classic_set_racks(kc_classic_t *m, kc_classic_racks_fn racks)
{
    m->racks = racks;
}

void kc_classic_free_sync(kc_classic_t *m)
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
    free(m->leave_id);
    free(m->protocol);
    free_topics(m);
    kc_classic_snapshot_free(m);
    kc_tpset_free(&m->last_assigned);
    kc_reconcile_free(&m->rc);
    kc_gtopics_free(&m->interned); /* after every set that points into it */
    for (size_t i = 0; i < KC_CLASSIC_MAX_ASSIGNORS; i++)
        kc_wbuf_free(&m->proto_meta[i]);
    kc_classic_free_sync(m);
    memset(m, 0, sizeof *m);
}

/* ---- failures ----------------------------------------------------------------------------- */

void kc_classic_fatal(kc_classic_t *m, int16_t code, const char *fmt, const char *detail)
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
    if (!m->describe_due && m->fatal_code != KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL)
        return;
    m->describe_due = false;
    char ours[96], detail[200];
    assignor_list(m, ours, sizeof ours);
    if (protocol_type || protocol)
        snprintf(detail, sizeof detail,
                 "this member offers protocol type 'consumer' with [%s]; "
                 "the group uses type '%s' with '%s'",
                 ours, protocol_type ? protocol_type : "?", protocol ? protocol : "?");
    else
        snprintf(detail, sizeof detail,
                 "this member offers protocol type 'consumer' with [%s], which no assignor of "
                 "the group's members matches",
                 ours);
    kc_classic_fatal(m, KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL, "group %s: %s: %s", detail);
}

/* ---- coordinator -------------------------------------------------------------------------- */

void kc_classic_coordinator_lost(kc_classic_t *m, int64_t now_ms)
{
    /* One FindCoordinator per loss; the deadline runs from the first loss. */
    if (m->coord_known || m->coord_lost_at_ms == 0)
        m->coord_lost_at_ms = now_ms;
    if (m->coord_known) {
        m->rediscover_due = true;
        int64_t wait = 0;
        if (m->lost_streak > 0) {
            int64_t base = m->cfg.retry_backoff_ms > 0 ? m->cfg.retry_backoff_ms : 100;
            int64_t cap = m->cfg.retry_backoff_max_ms > base ? m->cfg.retry_backoff_max_ms : base;
            wait = kc_backoff_ms(base, cap, m->lost_streak, kc_backoff_rand(&m->backoff_rng));
        }
        m->lost_streak++;
        m->rediscover_at_ms = now_ms + wait;
    }
    m->coord_known = false;
    /* Whatever was in flight went to the old coordinator: JoinGroup is sent again; a lost
     * SyncGroup means joining again (Java); a lost LeaveGroup is not retried. Only a member
     * that was joining joins again: one closing (or fatal) when the request failed goes on
     * with that. */
    bool joining = m->state == KC_CLASSIC_ST_JOINING || m->state == KC_CLASSIC_ST_SYNCING;
    if ((m->inflight == KC_CLASSIC_IF_JOIN || m->inflight == KC_CLASSIC_IF_SYNC) && joining)
        m->state = KC_CLASSIC_ST_UNJOINED;
    /* The round was prepared already: no second revoke. A closing member's close has its own
     * revoke still to run (begin_close cleared `prepared`). */
    if (m->inflight == KC_CLASSIC_IF_SYNC && joining)
        m->prepared = true;
    if (m->inflight == KC_CLASSIC_IF_LEAVE && m->state == KC_CLASSIC_ST_CLOSING)
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

/* ---- max.poll.interval.ms ----------------------------------------------------------------- */

void kc_classic_poll_expired(kc_classic_t *m, int64_t now_ms)
{
    (void)now_ms;
    if (m->poll_expired || m->state < KC_CLASSIC_ST_UNJOINED || m->state > KC_CLASSIC_ST_STABLE)
        return;
    m->poll_expired = true;
    m->leave_due = true;
    /* Stop dispatching now, before the LeaveGroup hands the partitions on. A reconciliation
     * under way finishes first; the join-prepare after the leave (generation gone) loses the
     * rest. */
    if (m->rc.held.n && kc_reconcile_idle(&m->rc))
        kc_classic_lose_all(m);
}

void kc_classic_poll_resumed(kc_classic_t *m, int64_t now_ms)
{
    (void)now_ms;
    /* A leave not sent yet still goes out: the partitions are already being lost. */
    m->poll_expired = false;
}

void kc_classic_commits_in_flight(kc_classic_t *m, bool in_flight, int64_t now_ms)
{
    (void)now_ms;
    m->commits_out = in_flight;
}

/* ---- rejoin ------------------------------------------------------------------------------- */

void kc_classic_rejoin(kc_classic_t *m)
{
    if (m->state == KC_CLASSIC_ST_IDLE || m->state >= KC_CLASSIC_ST_CLOSING)
        return;
    m->rejoin_needed = true;
}

/* The generation is gone (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID): what we hold is lost, not
 * revoked — the group may already have handed it on, so no commit under a dead generation. */
void kc_classic_reset_generation(kc_classic_t *m, bool reset_member_id)
{
    m->generation = -1;
    m->is_leader = false;
    if (reset_member_id)
        kc_classic_set_str(&m->member_id, "", 0);
    m->prepared = false; /* the next join-prepare loses what we hold */
    kc_classic_rejoin(m);
}

/* Out of memory: the application hears it, and nothing changes hands: what the member holds it
 * keeps until a reconciliation can start (a join-prepare or leave-prepare is tried again; an
 * assignment that could not be started makes the member join again, answers.c). */
static void reconcile_failed(kc_classic_t *m, const kc_error_t *e)
{
    m->error_out = *e;
    m->error_pending = true;
    m->prepared = false; /* a join or leave waits for the revoke, asked for again */
}

bool kc_classic_reconcile_to(kc_classic_t *m, const kc_tpset_t *target)
{
    kc_error_t e;
    if (kc_reconcile_set_target(&m->rc, target, &e) == KC_OK)
        return true;
    reconcile_failed(m, &e);
    return false;
}

void kc_classic_lose_all(kc_classic_t *m)
{
    kc_error_t e;
    if (kc_reconcile_lose_all(&m->rc, &e))
        reconcile_failed(m, &e);
}

bool kc_classic_subscribed(const kc_classic_t *m, const char *t)
{
    for (size_t i = 0; i < m->n_topics; i++)
        if (strcmp(m->topics[i], t) == 0)
            return true;
    return false;
}

/* Java's onJoinPrepare: lose everything if the generation is gone; else eager revokes all, and
 * cooperative revokes only partitions of topics we no longer subscribe to. */
void kc_classic_join_prepare(kc_classic_t *m)
{
    m->prepared = true;
    const kc_tpset_t *owned = &m->rc.owned;
    if (owned->n == 0)
        return;
    if (m->generation < 0 || !m->member_id[0]) {
        kc_classic_lose_all(m);
        return;
    }
    kc_tpset_t keep = {0};
    kc_err_t rc = KC_OK;
    for (size_t i = 0; m->cooperative && i < owned->n && !rc; i++)
        if (kc_classic_subscribed(m, owned->items[i].topic->name))
            rc = kc_tpset_add(&keep, owned->items[i].topic, owned->items[i].partition);
    if (rc) {
        kc_error_t e;
        kc_fail(&e, rc, "group %s: no memory to revoke before joining", m->cfg.group_id);
        reconcile_failed(m, &e);
    } else {
        kc_classic_reconcile_to(m, &keep);
    }
    kc_tpset_free(&keep);
}

/* ---- app commands ------------------------------------------------------------------------- */

static int cmp_jstr(const void *a, const void *b)
{
    return kc_jstr_cmp(*(char *const *)a, *(char *const *)b);
}

kc_err_t kc_classic_subscribe(kc_classic_t *m, const char *const *topics, size_t n, kc_error_t *err)
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
        kc_classic_rejoin(m);
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
    m->abandoned_for_leave = false;
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
