/*
 * group.protocol=classic on the network thread: see classic_drive.h.
 *
 * Owner: network thread, all of it. Every answer (group requests on our own coordinator
 * connection, FindCoordinator and Metadata on an engine connection, OffsetFetch/OffsetCommit
 * through engine/coordinator.h) comes back on that thread and calls kc_gcl_drive(), the only place
 * that pulls outputs from the state machine. Lifetime: kc_gcl_free runs after kc_engine_close (the
 * engine's connections, and so the answers on them, are gone: callbacks check e->closed), and it
 * closes our own connection while `dead` makes its failing callbacks no-ops.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "classic_drive_int.h"
#include "self_fence.h"
#include "coordinator.h"
#include "engine_int.h"

static int32_t partitions_of(void *ctx, const char *topic)
{
    kc_gcl_t *g = ctx;
    for (size_t i = 0; i < g->n_topics; i++)
        if (strcmp(g->topics[i], topic) == 0)
            return g->counts[i];
    return 0;
}

static void on_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    kc_gcl_drive(t->opaque);
}

static g_op_t *op_new(kc_gcl_t *g, int kind, uint64_t seq)
{
    g_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return NULL;
    *op = (g_op_t){g, seq, kind, false, g->ops};
    g->ops = op;
    return op;
}

static kc_gcl_t *op_end(g_op_t *op)
{
    kc_gcl_t *g = op->g;
    bool cancelled = op->cancelled;
    if (g)
        for (g_op_t **pp = &g->ops; *pp; pp = &(*pp)->next)
            if (*pp == op) {
                *pp = op->next;
                break;
            }
    free(op);
    return cancelled ? NULL : g;
}

/* ---- offsets --------------------------------------------------------------------------------- */

static void commit_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                        const kc_engine_offset_t *res, size_t n)
{
    g_op_t *op = opaque;
    int kind = op->kind;
    uint64_t seq = op->seq;
    kc_gcl_t *g = op_end(op);
    if (!g || rc == KC_ERR_CLOSED)
        return;
    int16_t code = kc_engine_commit_code(rc, err, res, n);
    g->commits++;
    g->commit_failures += code != 0;
    if (kind == 2) {
        kc_classic_commit_result(&g->m, seq, code, kc_now_ms());
    } else if (code) {
        kc_error_t e;
        kc_fail_kafka(&e, code, "group %s: auto-commit of %zu partition(s) refused", g->group, n);
        g->h.error(g->h.opaque, &e, false);
        kc_classic_app_commit_error(&g->m, code, kc_now_ms());
    }
    kc_gcl_drive(g);
}

/* Commits the processed offsets of `parts` under `who`; *sent false when nothing was due. */
static kc_err_t commit_parts(kc_gcl_t *g, const kc_ctps_t *parts, const kc_commit_identity_t *who,
                             int kind, uint64_t seq, bool *sent)
{
    *sent = false;
    if (g->self_fenced) /* the partitions may be another member's by now: commit nothing */
        return KC_OK;
    kc_engine_offset_t *offs = calloc(parts->n ? parts->n : 1, sizeof *offs);
    if (!offs)
        return KC_ERR_NOMEM;
    size_t m = 0;
    for (size_t i = 0; i < parts->n; i++) {
        int64_t o = g->h.committable(g->h.opaque, parts->items[i].topic, parts->items[i].partition);
        if (o >= 0)
            offs[m++] = (kc_engine_offset_t){
                parts->items[i].topic, parts->items[i].partition, o, -1, NULL, 0};
    }
    kc_err_t rc = KC_OK;
    if (m) {
        kc_error_t err;
        g_op_t *op = op_new(g, kind, seq);
        rc = op ? kc_engine_commit(g->e, who, offs, m, (int)g->conf.commit_timeout_ms, commit_done,
                                   op, &err)
                : KC_ERR_NOMEM;
        if (rc == KC_OK)
            *sent = true;
        else if (op)
            op_end(op);
    }
    free(offs);
    return rc;
}

static void auto_commit(kc_gcl_t *g, int64_t now)
{
    if (!g->conf.auto_commit || g->closing || now < g->next_auto_commit)
        return;
    if (g->m.state != KC_CLASSIC_ST_STABLE || g->m.pstep != KC_CLASSIC_P_IDLE)
        return;
    for (g_op_t *o = g->ops; o; o = o->next)
        if (o->kind == 3)
            return; /* one auto-commit at a time: a slow coordinator must not pile them up */
    g->next_auto_commit = now + g->conf.auto_commit_interval_ms;
    kc_commit_identity_t who;
    kc_error_t err;
    bool sent;
    if (kc_offsets_identity_member(&who, g->group, g->m.member_id, g->m.generation, g->instance,
                                   &err) == KC_OK)
        (void)commit_parts(g, &g->m.owned, &who, 3, 0, &sent);
}

static void fetch_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                       const kc_engine_offset_t *res, size_t n)
{
    (void)err; /* each partition's outcome is in res[i] (offset_pending.c reads them) */
    g_op_t *op = opaque;
    uint64_t seq = op->seq;
    bool retry = op->kind == 5;
    kc_gcl_t *g = op_end(op);
    if (!g || rc == KC_ERR_CLOSED)
        return;
    /* Unreadable committed offsets are asked again, never replaced by auto.offset.reset (see
     * offset_pending.h); the assignment completes for the partitions that could start. */
    kc_opend_apply(&g->pending, retry, rc, res, n, &g->h, g->group, kc_now_ms());
    if (!retry)
        kc_classic_action_done(&g->m, seq, kc_now_ms());
    kc_gcl_drive(g);
}

static void *retry_op_new(void *g)
{
    return op_new(g, 5, 0);
}

static void retry_op_drop(void *op)
{
    (void)op_end(op);
}

/* One OffsetFetch retry for the pending partitions at a time, never while closing. */
static void retry_offsets(kc_gcl_t *g, int64_t now)
{
    if (!g->closing)
        kc_opend_send_due(&g->pending, now, g->e, g->group, (int)g->conf.commit_timeout_ms,
                          fetch_done, retry_op_new, retry_op_drop, g);
}

static void do_assign(kc_gcl_t *g, const kc_classic_out_t *o, int64_t now)
{
    const kc_ctps_t *p = o->parts;
    kc_engine_offset_t *offs = calloc(p->n ? p->n : 1, sizeof *offs);
    for (size_t i = 0; offs && i < p->n; i++)
        offs[i] = (kc_engine_offset_t){p->items[i].topic, p->items[i].partition, -1, -1, NULL, 0};
    g_op_t *op = offs && p->n ? op_new(g, 1, o->seq) : NULL;
    kc_error_t err;
    if (!op || kc_engine_committed(g->e, g->group, offs, p->n, (int)g->conf.commit_timeout_ms,
                                   fetch_done, op, &err) != KC_OK) {
        if (op)
            op_end(op);
        kc_classic_action_done(&g->m, o->seq, now);
    }
    free(offs);
}

/* ---- the drive loop -------------------------------------------------------------------------- */

static void act(kc_gcl_t *g, const kc_classic_out_t *o, int64_t now)
{
    bool sent;
    switch (o->kind) {
    case KC_CLASSIC_SEND_JOIN:
    case KC_CLASSIC_SEND_SYNC:
    case KC_CLASSIC_SEND_HEARTBEAT:
    case KC_CLASSIC_SEND_LEAVE:
        kc_gcl_send_group(g, o, now);
        break;
    case KC_CLASSIC_DESCRIBE:
        /* Asks the coordinator which protocol the group runs, for the text of
         * INCONSISTENT_GROUP_PROTOCOL; any failure raises the error without it. */
        kc_gcl_send_group(g, o, now);
        break;
    case KC_CLASSIC_REDISCOVER:
        g->rediscoveries++;
        g->find_retry_ms = 0;
        kc_gcl_find_maybe_send(g, now);
        break;
    case KC_CLASSIC_REVOKE:
    case KC_CLASSIC_LOSE: {
        bool lost = o->kind == KC_CLASSIC_LOSE;
        if (lost) /* an assign still fetching offsets must not add what is being lost */
            for (g_op_t *p = g->ops; p; p = p->next)
                if (p->kind == 1)
                    p->cancelled = true;
        int wait = 0;
        for (size_t i = 0; i < o->parts->n; i++)
            kc_opend_remove(&g->pending, o->parts->items[i].topic, o->parts->items[i].partition);
        for (size_t i = 0; i < o->parts->n; i++)
            wait += g->h.revoke(g->h.opaque, o->parts->items[i].topic, o->parts->items[i].partition,
                                lost);
        g->revoke_seq = o->seq;
        g->revoke_wait = wait;
        g->revoke_active = wait > 0;
        if (!wait)
            kc_classic_action_done(&g->m, o->seq, now);
        break;
    }
    case KC_CLASSIC_COMMIT:
        if (commit_parts(g, o->parts, &o->who, 2, o->seq, &sent) != KC_OK || !sent)
            kc_classic_commit_result(&g->m, o->seq, 0, now); /* nothing processed: nothing due */
        break;
    case KC_CLASSIC_DROP:
        for (size_t i = 0; i < o->parts->n; i++) {
            kc_opend_remove(&g->pending, o->parts->items[i].topic, o->parts->items[i].partition);
            g->h.drop(g->h.opaque, o->parts->items[i].topic, o->parts->items[i].partition);
        }
        kc_classic_action_done(&g->m, o->seq, now);
        break;
    case KC_CLASSIC_ASSIGN:
        do_assign(g, o, now);
        break;
    case KC_CLASSIC_ERROR:
        g->h.error(g->h.opaque, &o->error, false);
        break;
    case KC_CLASSIC_FATAL:
        g->h.error(g->h.opaque, &o->error, true);
        break;
    case KC_CLASSIC_CLOSED:
        g->closed_out = true;
        break;
    }
}

void kc_gcl_session_answered(kc_gcl_t *g, int64_t sent_ms)
{
    if (sent_ms > g->answered_sent_ms)
        g->answered_sent_ms = sent_ms;
}

/* The self-fence rule at `now` (classic_drive.h's fence hook): raised once the member, holding
 * partitions, passed the ratio of session.timeout.ms without an answer that kept its session;
 * lifted only by such an answer (an answer that ends the generation is followed by the LOSE
 * step, which must come first). Holding nothing (an eager rebalance revoked everything), there
 * is nothing to stop and nothing is reported. */
static void self_fence_check(kc_gcl_t *g, int64_t now)
{
    bool due = kc_self_fence_due(g->answered_sent_ms, g->conf.session_timeout_ms,
                                 g->conf.self_fence_ratio, now, NULL);
    if (!due && g->self_fenced) {
        g->self_fenced = false;
        kc_log(KC_LOG_INFO, "group",
               "group %s: the coordinator answered again; delivery resumes in generation %d",
               g->group, (int)g->m.generation);
        if (g->h.fence)
            g->h.fence(g->h.opaque, false, NULL);
        return;
    }
    if (!due || g->self_fenced || g->m.owned.n == 0)
        return;
    g->self_fenced = true;
    g->self_fences++;
    kc_error_t why;
    kc_fail(
        &why, KC_ERR_TIMEOUT,
        "group %s: self-fenced: no heartbeat answered for %lld ms; the coordinator may "
        "expire the member in %lld ms (session.timeout.ms %lld, fence at %.0f%%). No callback "
        "of its partitions starts, nothing is committed until it answers",
        g->group, (long long)(now - g->answered_sent_ms),
        (long long)(kc_self_fence_expiry(g->answered_sent_ms, g->conf.session_timeout_ms) - now),
        (long long)g->conf.session_timeout_ms, g->conf.self_fence_ratio * 100);
    kc_log(KC_LOG_WARN, "group", "%s", why.msg);
    if (g->h.fence)
        g->h.fence(g->h.opaque, true, &why);
}

void kc_gcl_drive(kc_gcl_t *g)
{
    if (kc_gcl_gone(g))
        return;
    if (g->driving) {
        g->again = true;
        return;
    }
    g->driving = true;
    int64_t now;
    do {
        g->again = false;
        now = kc_now_ms();
        /* max.poll.interval.ms: the runtime's watchdog decides, as on the KIP-848 path; the
         * member leaves while a callback overruns and joins again once it returned. */
        unsigned over = g->h.poll_over ? g->h.poll_over(g->h.opaque) : 0;
        if (over && !g->poll_expired) {
            g->poll_expired = true;
            g->poll_leaves++;
            kc_classic_poll_expired(&g->m, now);
        } else if (!over && g->poll_expired) {
            g->poll_expired = false;
            kc_classic_poll_resumed(&g->m, now);
        }
        kc_gcl_md_maybe_send(g, now);
        if (!g->subscribed && (g->md_known || g->closing)) {
            /* The leader's assignors need the partition counts: join once they are known. */
            kc_error_t err;
            g->subscribed = true;
            if (!g->closing && kc_classic_subscribe(&g->m, (const char *const *)g->topics,
                                                    g->n_topics, &err) != KC_OK)
                g->h.error(g->h.opaque, &err, true);
            g->find_retry_ms = 0;
        }
        /* Also while the machine has lost its coordinator and no new connection is on its way:
         * the machine asks for one lookup per loss (KC_CLASSIC_REDISCOVER), and a lookup that
         * failed (unanswered past the request timeout: a partitioned network) must be retried
         * here, or the member waits for a coordinator forever. find_retry_ms paces it. */
        if (g->subscribed && !g->closing && (!g->conn || (!g->m.coord_known && !g->want_known)))
            kc_gcl_find_maybe_send(g, now);
        if (g->req_kind && g->req_kind != KC_CLASSIC_SEND_JOIN && g->conn) {
            /* A coordinator killed mid-request would hold the answer for the whole (rebalance-
             * sized) request timeout: past a few heartbeat intervals the connection resets. */
            int64_t limit = 3 * (int64_t)g->conf.heartbeat_interval_ms;
            if (limit < 5000)
                limit = 5000;
            if (now - g->req_sent_ms > limit)
                kc_conn_reset(g->conn, KC_ERR_TIMEOUT, "group request unanswered");
        }
        /* The machine keeps at most one group request in flight itself. */
        self_fence_check(g, now); /* before the machine's outputs: see self_fence_check */
        kc_classic_out_t o;
        while (kc_classic_poll(&g->m, now, &o))
            act(g, &o, now);
        retry_offsets(g, now);
        if (g->m.generation != g->last_generation && g->m.generation >= 0) {
            g->last_generation = g->m.generation;
            g->rebalances++;
        }
        auto_commit(g, now);
    } while (g->again);
    g->driving = false;
    int64_t wake = kc_classic_next_wakeup(&g->m) - now;
    int64_t fence_at;
    if (!g->self_fenced &&
        !kc_self_fence_due(g->answered_sent_ms, g->conf.session_timeout_ms,
                           g->conf.self_fence_ratio, now, &fence_at) &&
        fence_at - now < wake)
        wake = fence_at - now;
    if (wake > 100 || wake < 0)
        wake = 100; /* connecting, metadata and auto-commit have no event of their own */
    kc_loop_timer_start(g->e->loop, &g->timer, wake < 1 ? 1 : wake);
}

/* ---- lifecycle --------------------------------------------------------------------------------
 */

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

static kc_err_t parse_assignors(kc_classic_config_t *c, const char *list, kc_error_t *err)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list && *list ? list : "range,cooperative-sticky");
    char *save = NULL;
    for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        int a = kc_assignor_from_name(t);
        if (a < 0)
            return kc_fail(err, KC_ERR_CONFIG, "partition.assignment.strategy: unknown '%s'", t);
        if (c->n_assignors == KC_CLASSIC_MAX_ASSIGNORS)
            return kc_fail(err, KC_ERR_CONFIG, "partition.assignment.strategy: too many");
        c->assignors[c->n_assignors++] = (kc_assignor_t)a;
    }
    return c->n_assignors ? KC_OK
                          : kc_fail(err, KC_ERR_CONFIG, "partition.assignment.strategy is empty");
}

kc_err_t kc_gcl_new(kc_gcl_t **out, kc_engine_t *e, const kc_gcl_conf_t *conf,
                    const kc_gcl_hooks_t *hooks, kc_error_t *err)
{
    if (!conf->group_id || !*conf->group_id)
        return kc_fail(err, KC_ERR_CONFIG, "group.protocol=classic needs group.id");
    kc_gcl_t *g = calloc(1, sizeof *g);
    if (!g)
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    g->e = e;
    g->conf = *conf;
    g->h = *hooks;
    g->group = strdup(conf->group_id);
    g->instance = dup_or_null(conf->group_instance_id);
    g->rack = dup_or_null(conf->rack_id);
    g->last_generation = -1;
    g->coord_node = -1;
    g->answered_sent_ms = -1;
    kc_classic_config_t c = {0};
    c.group_id = g->group;
    c.instance_id = g->instance;
    c.rack = g->rack;
    c.session_timeout_ms = conf->session_timeout_ms;
    c.rebalance_timeout_ms = conf->rebalance_timeout_ms;
    c.heartbeat_interval_ms = conf->heartbeat_interval_ms;
    c.coordinator_timeout_ms = conf->coordinator_timeout_ms;
    c.auto_commit = conf->auto_commit;
    c.commit_timeout_ms = conf->commit_timeout_ms;
    c.retry_backoff_ms = e->conf.retry_backoff_ms;
    kc_err_t rc = g->group ? parse_assignors(&c, conf->assignors, err)
                           : kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    if (rc == KC_OK)
        rc = kc_classic_init(&g->m, &c, partitions_of, g, err);
    if (rc != KC_OK) {
        free(g->group);
        free(g->instance);
        free(g->rack);
        free(g);
        return rc;
    }
    kc_classic_set_racks(&g->m, kc_gcl_racks_of);
    kc_opend_init(&g->pending, e->conf.retry_backoff_ms, e->conf.retry_backoff_max_ms);
    g->timer.cb = on_timer;
    g->timer.opaque = g;
    *out = g;
    return KC_OK;
}

kc_err_t kc_gcl_subscribe(kc_gcl_t *g, const char *const *topics, size_t n, kc_error_t *err)
{
    if (g->n_topics)
        return kc_fail(err, KC_ERR_STATE, "classic group: already subscribed");
    g->topics = calloc(n ? n : 1, sizeof *g->topics);
    g->counts = calloc(n ? n : 1, sizeof *g->counts);
    if (!g->topics || !g->counts)
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    for (size_t i = 0; i < n; i++)
        if (!(g->topics[i] = strdup(topics[i])))
            return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    g->n_topics = n;
    g->next_auto_commit = kc_now_ms() + g->conf.auto_commit_interval_ms;
    kc_gcl_drive(g);
    return KC_OK;
}

void kc_gcl_revoked(kc_gcl_t *g)
{
    if (!g->revoke_active || --g->revoke_wait > 0)
        return;
    g->revoke_active = false;
    kc_classic_action_done(&g->m, g->revoke_seq, kc_now_ms());
    kc_gcl_drive(g);
}

void kc_gcl_close(kc_gcl_t *g)
{
    if (g->closing)
        return;
    g->closing = true;
    kc_opend_clear(&g->pending); /* leaving: nothing more to start */
    kc_classic_close(&g->m);
    kc_gcl_drive(g);
}

bool kc_gcl_closed(const kc_gcl_t *g)
{
    kc_classic_state_t s = g->m.state;
    bool done = s == KC_CLASSIC_ST_CLOSED || s == KC_CLASSIC_ST_FATAL || s == KC_CLASSIC_ST_IDLE ||
                g->closed_out;
    return done && !g->req_kind && !g->revoke_active;
}

void kc_gcl_free(kc_gcl_t *g)
{
    if (!g)
        return;
    g->dead = true;
    kc_loop_timer_stop(g->e->loop, &g->timer);
    if (g->conn)
        kc_conn_close(g->conn); /* its failing callbacks see `dead` */
    for (g_op_t *o = g->ops; o; o = o->next)
        o->g = NULL;
    kc_classic_free(&g->m);
    kc_opend_free(&g->pending);
    kc_gcl_racks_free(g); /* before the topics: it walks them */
    for (size_t i = 0; i < g->n_topics; i++)
        free(g->topics[i]);
    free(g->topics);
    free(g->counts);
    kc_wbuf_free(&g->req);
    free(g->group);
    free(g->instance);
    free(g->rack);
    free(g);
}

static const char *state_name(kc_classic_state_t s)
{
    static const char *const n[] = {"idle",   "unjoined", "joining", "syncing",
                                    "stable", "closing",  "closed",  "fatal"};
    return (unsigned)s < sizeof n / sizeof n[0] ? n[s] : "?";
}

size_t kc_gcl_stats_json(const kc_gcl_t *g, char *buf, size_t cap)
{
    size_t n = 0;
#define OUT(...)                                                                                   \
    do {                                                                                           \
        int w_ =                                                                                   \
            snprintf(buf ? buf + (n < cap ? n : cap) : NULL, n < cap ? cap - n : 0, __VA_ARGS__);  \
        if (w_ > 0)                                                                                \
            n += (size_t)w_;                                                                       \
    } while (0)
    OUT("{\"protocol\":\"classic\",\"state\":\"%s\",\"member_id\":\"%s\",\"epoch\":%d,"
        "\"leader\":%s,\"assignor\":\"%s\",\"assignment\":[",
        state_name(g->m.state), g->m.member_id ? g->m.member_id : "", (int)g->m.generation,
        g->m.is_leader ? "true" : "false", g->m.protocol ? g->m.protocol : "");
    for (size_t i = 0; i < g->m.owned.n; i++)
        OUT("%s[\"%s\",%d]", i ? "," : "", g->m.owned.items[i].topic,
            (int)g->m.owned.items[i].partition);
    OUT("],\"rebalances\":%llu,\"heartbeats\":%llu,\"heartbeat_errors\":%llu,\"commits\":%llu,"
        "\"commit_failures\":%llu,\"rediscoveries\":%llu,\"poll_leaves\":%llu,\"coordinator\":%d,"
        "\"self_fenced\":%s,\"self_fences\":%llu}",
        (unsigned long long)g->rebalances, (unsigned long long)g->heartbeats,
        (unsigned long long)g->hb_errors, (unsigned long long)g->commits,
        (unsigned long long)g->commit_failures, (unsigned long long)g->rediscoveries,
        (unsigned long long)g->poll_leaves, (int)g->coord_node, g->self_fenced ? "true" : "false",
        (unsigned long long)g->self_fences);
#undef OUT
    return n;
}

const char *kc_gcl_member_id(const kc_gcl_t *g)
{
    return g->m.member_id ? g->m.member_id : "";
}

kc_err_t kc_gcl_commit_identity(void *gp, kc_commit_identity_t *who, kc_error_t *err)
{
    kc_gcl_t *g = gp;
    if (kc_gcl_gone(g) || g->closed_out)
        return kc_fail(err, KC_ERR_STATE, "group %s: the member has left the group", g->group);
    if (!g->m.member_id || !*g->m.member_id || g->m.generation < 0)
        return kc_fail(err, KC_ERR_STATE,
                       "group %s: not a member yet (no generation: joining or rejoining)",
                       g->group);
    return kc_offsets_identity_member(who, g->group, g->m.member_id, g->m.generation, g->instance,
                                      err);
}

void kc_gcl_app_commit_result(kc_gcl_t *g, int16_t code)
{
    if (!code || kc_gcl_gone(g))
        return;
    kc_classic_app_commit_error(&g->m, code, kc_now_ms());
    kc_gcl_drive(g);
}
