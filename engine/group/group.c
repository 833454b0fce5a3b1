/*
 * The group driver: see group.h.
 *
 * Owner: network thread, all of it. Each asynchronous answer (the protocol's requests, and the
 * OffsetFetch / OffsetCommit this file sends through engine/coordinator.h) comes back on the
 * same thread and then calls kc_group_drive(), the only place that pulls actions out of the
 * protocol. Answers after kc_group_free find no group: the ops' `g` is cleared there, and the
 * engine, closed before the group is freed, refuses its connections' callbacks (`e->closed`).
 */
#include "group/group.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "engine_int.h"
#include "group/offset_pending.h"
#include "group/self_fence.h"
#include "proto/kafka_errors.h"

struct kc_group_op {
    kc_group_t *g;
    uint64_t seq;
    kc_group_op_kind_t kind;
    bool cancelled;
    struct kc_group_op *next;
};

struct kc_group {
    kc_engine_t *e;
    const kc_group_proto_t *p;
    void *m; /* the protocol's member */
    kc_group_conf_t conf;
    char *group, *instance, *rack, *server_assignor, *assignors;
    kc_group_hooks_t h;
    kc_loop_timer_t timer;
    kc_group_op_t *ops;
    kc_opend_t pending; /* assigned partitions whose committed offset is still unread */
    bool driving, again, closing, dead, poll_expired;
    /* kc_group_commit's commits not answered yet, what the protocol was told of them, and
     * whether the leave stopped waiting for them (kc_group_leave_now). */
    unsigned commits_out;
    bool commits_told, commits_waived;
    /* The wait for a REVOKE/LOSE action's completions. */
    uint64_t revoke_seq;
    int revoke_wait;
    bool revoke_active;
    kc_group_counters_t n;
    kc_group_tp_t *parts; /* kc_group_parts */
    size_t parts_cap;
    /* group.protocol=auto: the subscription (kept to hand to the protocol chosen), the verdict
     * waiting for the next pass, the members retired by a choice (freed with the group: their
     * late answers still find them), and whether the running member ever joined (then it never
     * falls back). */
    bool finding;            /* a kc_group_find_coordinator lookup is on its way */
    kc_group_found_fn found; /* where its answer goes */
    bool auto_mode, joined, subscribed;
    char forced_by[96]; /* under auto, the setting that chose the protocol ("" otherwise) */
    char **sub_topics;
    size_t sub_n;
    char *sub_regex;
    const kc_group_proto_t *next_p;
    char next_why[240];
    struct retired {
        const kc_group_proto_t *p;
        void *m;
    } * retired;
    size_t n_retired;
    /* The self-fence: the send time of the last request whose answer kept the session (-1
     * before the first), and whether the member is fenced now. */
    int64_t answered_sent_ms;
    bool self_fenced;
    uint64_t self_fences;
    /* At the fence: answered_sent_ms and the session, to say what lifted it. */
    int64_t fenced_answered_ms, fenced_session_ms;
};

/* ---- ops ------------------------------------------------------------------------------------ */

kc_group_op_t *kc_group_op_new(kc_group_t *g, kc_group_op_kind_t kind, uint64_t seq)
{
    kc_group_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return NULL;
    *op = (kc_group_op_t){g, seq, kind, false, g->ops};
    g->ops = op;
    return op;
}

kc_group_t *kc_group_op_end(kc_group_op_t *op)
{
    kc_group_t *g = op->g;
    bool cancelled = op->cancelled;
    if (g)
        for (kc_group_op_t **pp = &g->ops; *pp; pp = &(*pp)->next)
            if (*pp == op) {
                *pp = op->next;
                break;
            }
    free(op);
    return cancelled ? NULL : g;
}

/* ---- the reconciliation's actions ------------------------------------------------------------ */

static void commit_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                        const kc_engine_offset_t *res, size_t n)
{
    kc_group_op_t *op = opaque;
    uint64_t seq = op->seq;
    kc_group_t *g = kc_group_op_end(op);
    if (!g || rc == KC_ERR_CLOSED)
        return;
    int16_t code = kc_engine_commit_code(rc, err, res, n);
    g->n.commits++;
    if (code) {
        g->n.commit_failures++;
        g->n.last_error_code = code;
    }
    /* acknowledgements refused or lost were reported per range (share/fetcher.c): the step is
     * over either way, never retried */
    g->p->commit_result(g->m, seq, g->p->commit_acks ? 0 : code, kc_now_ms());
    kc_group_drive(g);
}

/* commit_parts for a protocol that commits acknowledgements (group.h, commit_acks). */
static bool commit_acks(kc_group_t *g, const kc_group_action_t *a)
{
    kc_error_t err;
    bool none = false;
    kc_group_op_t *op = kc_group_op_new(g, KC_GROUP_OP_COMMIT, a->seq);
    bool sent = op &&
                kc_engine_share_commit(g->e, (int)g->conf.commit_timeout_ms, false, commit_done, op,
                                       &none, &err) == KC_OK &&
                !none;
    if (!sent && op)
        kc_group_op_end(op);
    return sent;
}

/* Commits the processed offsets of `a`'s partitions; false when nothing was sent (nothing
 * processed, self-fenced, or the request could not start): the step is then over at once. */
static bool commit_parts(kc_group_t *g, const kc_group_action_t *a)
{
    if (g->self_fenced) /* the partitions may be another member's by now: commit nothing */
        return false;
    if (g->p->commit_acks)
        return commit_acks(g, a);
    kc_engine_offset_t *offs = calloc(a->n ? a->n : 1, sizeof *offs);
    if (!offs)
        return false;
    size_t m = 0;
    for (size_t i = 0; i < a->n; i++) {
        int64_t o = g->h.committable(g->h.opaque, a->parts[i].topic, a->parts[i].partition);
        if (o >= 0)
            offs[m++] =
                (kc_engine_offset_t){a->parts[i].topic, a->parts[i].partition, o, -1, NULL, 0};
    }
    bool sent = false;
    if (m) {
        if (kc_log_enabled(KC_LOG_DEBUG)) {
            /* What a revocation hands over (or a periodic step commits), for a trace. */
            char list[512] = "";
            size_t len = 0;
            for (size_t i = 0; i < m && len < sizeof list; i++) {
                int w = snprintf(list + len, sizeof list - len, " %s[%d]@%lld", offs[i].topic,
                                 (int)offs[i].partition, (long long)offs[i].offset);
                len = w < 0 ? sizeof list : len + (size_t)w;
            }
            kc_log(KC_LOG_DEBUG, "group", "group %s: committing%s (%s %d)", g->group, list,
                   g->p->epoch_name, (int)a->who.generation_or_epoch);
        }
        kc_error_t err;
        kc_group_op_t *op = kc_group_op_new(g, KC_GROUP_OP_COMMIT, a->seq);
        sent = op && kc_engine_commit(g->e, &a->who, offs, m, (int)g->conf.commit_timeout_ms,
                                      commit_done, op, &err) == KC_OK;
        if (!sent && op)
            kc_group_op_end(op);
    }
    free(offs);
    return sent;
}

static void fetch_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                       const kc_engine_offset_t *res, size_t n)
{
    kc_group_op_t *op = opaque;
    uint64_t seq = op->seq;
    bool retry = op->kind == KC_GROUP_OP_OFFSETS;
    kc_group_t *g = kc_group_op_end(op);
    if (!g || rc == KC_ERR_CLOSED)
        return;
    if (rc == KC_ERR_UNSUPPORTED && err) {
        /* No OffsetFetch version in common with the coordinator: no partition could ever start
         * from its committed offset, and asking again would be refused again. */
        kc_group_report(g, err, true);
        return;
    }
    /* Otherwise each partition's outcome is in res[i] (group/offset_pending.c reads them). */
    /* A partition whose committed offset could not be read is not started from
     * auto.offset.reset (that skips or re-reads): it is asked again, the others start now, and
     * the assignment step completes for them (the reconciliation does not wait for retries). */
    kc_opend_apply(&g->pending, retry, rc, res, n, &g->h, g->group, kc_now_ms());
    if (!retry)
        g->p->action_done(g->m, seq, kc_now_ms());
    kc_group_drive(g);
}

static void *retry_op_new(void *g)
{
    return kc_group_op_new(g, KC_GROUP_OP_OFFSETS, 0);
}

static void retry_op_drop(void *op)
{
    (void)kc_group_op_end(op);
}

static void do_assign(kc_group_t *g, const kc_group_action_t *a, int64_t now)
{
    if (g->p->broker_positions) {
        for (size_t i = 0; i < a->n; i++) {
            kc_error_t err;
            if (g->h.assign(g->h.opaque, a->parts[i].topic, a->parts[i].partition, -1, &err) !=
                KC_OK)
                kc_group_report(g, &err, false);
        }
        g->p->action_done(g->m, a->seq, now);
        return;
    }
    kc_engine_offset_t *offs = calloc(a->n ? a->n : 1, sizeof *offs);
    for (size_t i = 0; offs && i < a->n; i++)
        offs[i] = (kc_engine_offset_t){a->parts[i].topic, a->parts[i].partition, -1, -1, NULL, 0};
    kc_group_op_t *op = offs && a->n ? kc_group_op_new(g, KC_GROUP_OP_ASSIGN, a->seq) : NULL;
    kc_error_t err;
    if (!op || kc_engine_committed(g->e, g->group, offs, a->n, (int)g->conf.commit_timeout_ms,
                                   fetch_done, op, &err) != KC_OK) {
        if (op)
            kc_group_op_end(op);
        g->p->action_done(g->m, a->seq, now);
    }
    free(offs);
}

static void act(kc_group_t *g, const kc_group_action_t *a, int64_t now)
{
    switch (a->kind) {
    case KC_GROUP_ACT_REVOKE:
    case KC_GROUP_ACT_LOSE: {
        bool lost = a->kind == KC_GROUP_ACT_LOSE;
        if (lost) /* an assign still fetching offsets must not add what is being lost */
            for (kc_group_op_t *o = g->ops; o; o = o->next)
                if (o->kind == KC_GROUP_OP_ASSIGN)
                    o->cancelled = true;
        int wait = 0;
        for (size_t i = 0; i < a->n; i++) {
            kc_opend_remove(&g->pending, a->parts[i].topic, a->parts[i].partition);
            wait += g->h.revoke(g->h.opaque, a->parts[i].topic, a->parts[i].partition, lost);
        }
        g->revoke_seq = a->seq;
        g->revoke_wait = wait;
        g->revoke_active = wait > 0;
        if (!wait)
            g->p->action_done(g->m, a->seq, now);
        break;
    }
    case KC_GROUP_ACT_COMMIT:
        if (!commit_parts(g, a))
            g->p->commit_result(g->m, a->seq, 0, now); /* nothing processed: nothing due */
        break;
    case KC_GROUP_ACT_DROP:
        for (size_t i = 0; i < a->n; i++) {
            kc_opend_remove(&g->pending, a->parts[i].topic, a->parts[i].partition);
            g->h.drop(g->h.opaque, a->parts[i].topic, a->parts[i].partition);
        }
        g->p->action_done(g->m, a->seq, now);
        break;
    case KC_GROUP_ACT_ASSIGN:
        do_assign(g, a, now);
        break;
    default:
        break;
    }
}

/* ---- the self-fence ----------------------------------------------------------------------- */

void kc_group_session_answered(kc_group_t *g, int64_t sent_ms)
{
    if (sent_ms > g->answered_sent_ms)
        g->answered_sent_ms = sent_ms;
}

/* The self-fence rule (group/self_fence.h) at `now`. Raised only while the protocol says it applies
 * (the member holds partitions and is in its group: holding none there is nothing to stop and
 * nothing is reported). Lifted only by an answer that kept the session, never by losing the
 * membership: an answer that fenced us is followed by the LOSE action, and delivering in
 * between would be delivering partitions another member may already own. Checked before the
 * actions of each pass for that reason. */
static void self_fence_check(kc_group_t *g, int64_t now)
{
    int64_t session = g->p->session_ms(g->m);
    double ratio = g->p->fence_ratio(g->m);
    bool due = kc_self_fence_due(g->answered_sent_ms, session, ratio, now, NULL);
    if (!due && g->self_fenced) {
        g->self_fenced = false;
        /* An answer that kept the session, or a longer session or later fence point known now
         * (KIP-848: the group's consumer.session.timeout.ms read with DescribeConfigs, the
         * heartbeat interval the coordinator chose): either moves the fence point past now. */
        if (g->answered_sent_ms != g->fenced_answered_ms)
            kc_log(KC_LOG_INFO, "group",
                   "group %s: the coordinator answered again; delivery resumes at %s %d", g->group,
                   g->p->epoch_name, (int)g->p->epoch(g->m));
        else
            kc_log(KC_LOG_INFO, "group",
                   "group %s: no answer yet, but the fence point moved (session timeout %lld ms, "
                   "was %lld; fence at %.0f%%); delivery resumes at %s %d",
                   g->group, (long long)session, (long long)g->fenced_session_ms, ratio * 100,
                   g->p->epoch_name, (int)g->p->epoch(g->m));
        if (g->h.fence)
            g->h.fence(g->h.opaque, false, NULL);
        return;
    }
    if (!due || g->self_fenced || !g->p->fence_applies(g->m))
        return;
    g->self_fenced = true;
    g->self_fences++;
    g->fenced_answered_ms = g->answered_sent_ms;
    g->fenced_session_ms = session;
    kc_error_t why;
    kc_fail(&why, KC_ERR_TIMEOUT,
            "group %s: self-fenced: no heartbeat answered for %lld ms; the coordinator may "
            "expire the member in %lld ms (session timeout %lld, fence at %.0f%%). No callback "
            "of its partitions starts, nothing is committed until it answers",
            g->group, (long long)(now - g->answered_sent_ms),
            (long long)(kc_self_fence_expiry(g->answered_sent_ms, session) - now),
            (long long)session, ratio * 100);
    kc_log(KC_LOG_WARN, "group", "%s", why.msg);
    if (g->h.fence)
        g->h.fence(g->h.opaque, true, &why);
}

/* ---- the drive loop ------------------------------------------------------------------------ */

static void switch_protocol(kc_group_t *g);

static void on_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    kc_group_drive(t->opaque);
}

void kc_group_drive(kc_group_t *g)
{
    if (kc_group_gone(g))
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
        if (g->next_p)
            switch_protocol(g);
        /* max.poll.interval.ms: Java's liveness rule; the runtime's watchdog decides. */
        unsigned over = g->h.poll_over ? g->h.poll_over(g->h.opaque) : 0;
        if ((over > 0) != g->poll_expired) {
            g->poll_expired = over > 0;
            g->p->poll_expired(g->m, g->poll_expired, now);
        }
        /* The application's commits: the leave waits for their answers (kc_group_commit). */
        bool holding = g->commits_out > 0 && !g->commits_waived;
        if (holding != g->commits_told) {
            g->commits_told = holding;
            if (g->p->commits_in_flight)
                g->p->commits_in_flight(g->m, g->commits_told, now);
        }
        self_fence_check(g, now);
        g->p->step(g->m, now);
        kc_group_action_t a;
        while (!g->next_p && g->p->next_action(g->m, now, &a))
            act(g, &a, now);
        if (g->p->epoch(g->m) > 0)
            g->joined = true;
        /* One OffsetFetch retry for the pending partitions at a time, never while closing. */
        if (!g->closing)
            kc_opend_send_due(&g->pending, now, g->e, g->group, (int)g->conf.commit_timeout_ms,
                              fetch_done, retry_op_new, retry_op_drop, g);
        g->p->finish(g->m, now);
    } while (g->again || g->next_p);
    g->driving = false;
    if (g->h.settled)
        g->h.settled(g->h.opaque);
    int64_t wake = g->p->next_wakeup(g->m, now) - now;
    int64_t fence_at;
    if (!g->self_fenced &&
        !kc_self_fence_due(g->answered_sent_ms, g->p->session_ms(g->m), g->p->fence_ratio(g->m),
                           now, &fence_at) &&
        fence_at - now < wake)
        wake = fence_at - now;
    /* Connecting, metadata and the watchdog have no event of their own: look this often. */
    if (wake > 100 || wake < 0)
        wake = 100;
    kc_loop_timer_start(g->e->loop, &g->timer, wake < 1 ? 1 : wake);
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

static void free_strings(kc_group_t *g)
{
    free(g->group);
    free(g->instance);
    free(g->rack);
    free(g->server_assignor);
    free(g->assignors);
}

kc_err_t kc_group_new(kc_group_t **out, kc_engine_t *e, const kc_group_proto_t *proto,
                      const char *why, const kc_group_conf_t *conf, const kc_group_hooks_t *hooks,
                      kc_error_t *err)
{
    bool auto_mode = proto == NULL;
    if (auto_mode)
        proto = &kc_group_auto_proto;
    if (!conf->group_id || !*conf->group_id)
        return kc_fail(err, KC_ERR_CONFIG, "group.protocol=%s needs group.id", proto->name);
    kc_group_t *g = calloc(1, sizeof *g);
    if (!g)
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    g->e = e;
    g->p = proto;
    g->auto_mode = auto_mode;
    g->conf = *conf;
    g->h = *hooks;
    g->group = strdup(conf->group_id);
    g->instance = dup_or_null(conf->group_instance_id);
    g->rack = dup_or_null(conf->rack_id);
    g->server_assignor = dup_or_null(conf->server_assignor);
    g->assignors = dup_or_null(conf->assignors);
    g->conf.group_id = g->group;
    g->conf.group_instance_id = g->instance;
    g->conf.rack_id = g->rack;
    g->conf.server_assignor = g->server_assignor;
    g->conf.assignors = g->assignors;
    g->answered_sent_ms = -1;
    g->timer.cb = on_timer;
    g->timer.opaque = g;
    kc_opend_init(&g->pending, e->conf.retry_backoff_ms, e->conf.retry_backoff_max_ms);
    kc_err_t rc = g->group ? proto->create(&g->m, g, err)
                           : kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    if (rc != KC_OK) {
        kc_opend_free(&g->pending);
        free_strings(g);
        free(g);
        return rc;
    }
    if (why)
        snprintf(g->forced_by, sizeof g->forced_by, "%s", why);
    if (why)
        kc_log(KC_LOG_INFO, "group", "group %s: group.protocol=auto chose %s: %s", g->group,
               proto == &kc_g848_proto ? "consumer (KIP-848)" : proto->name, why);
    *out = g;
    return KC_OK;
}

static void free_subscription(kc_group_t *g)
{
    for (size_t i = 0; i < g->sub_n; i++)
        free(g->sub_topics[i]);
    free(g->sub_topics);
    free(g->sub_regex);
    g->sub_topics = NULL;
    g->sub_regex = NULL;
    g->sub_n = 0;
}

/* Kept for the protocol group.protocol=auto chooses later. */
static kc_err_t keep_subscription(kc_group_t *g, const char *const *topics, size_t n,
                                  const char *regex, kc_error_t *err)
{
    free_subscription(g);
    g->sub_topics = calloc(n ? n : 1, sizeof *g->sub_topics);
    bool ok = g->sub_topics && (!regex || (g->sub_regex = strdup(regex)));
    for (size_t i = 0; ok && i < n; i++, g->sub_n++)
        ok = (g->sub_topics[i] = strdup(topics[i])) != NULL;
    if (!ok) {
        free_subscription(g);
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    }
    return KC_OK;
}

kc_err_t kc_group_subscribe(kc_group_t *g, const char *const *topics, size_t n, const char *regex,
                            kc_error_t *err)
{
    kc_err_t rc = g->auto_mode ? keep_subscription(g, topics, n, regex, err) : KC_OK;
    if (rc == KC_OK)
        rc = g->p->subscribe(g->m, topics, n, regex, err);
    if (rc == KC_OK) {
        g->subscribed = true;
        g->commits_waived = false; /* a new membership's leave waits for its commits again */
        kc_group_drive(g);
    }
    return rc;
}

void kc_group_leave_now(kc_group_t *g)
{
    if (g->commits_waived)
        return;
    g->commits_waived = true;
    kc_group_drive(g);
}

void kc_group_unsubscribe(kc_group_t *g)
{
    if (g->closing || !g->subscribed)
        return;
    /* A protocol group.protocol=auto chooses later must not join with the old subscription. */
    g->subscribed = false;
    kc_opend_clear(&g->pending); /* leaving: nothing more to start */
    g->p->unsubscribe(g->m, kc_now_ms());
    kc_group_drive(g);
}

void kc_group_revoked(kc_group_t *g)
{
    if (!g->revoke_active || --g->revoke_wait > 0)
        return;
    g->revoke_active = false;
    g->p->action_done(g->m, g->revoke_seq, kc_now_ms());
    kc_group_drive(g);
}

void kc_group_close(kc_group_t *g)
{
    if (g->closing)
        return;
    g->closing = true;
    kc_opend_clear(&g->pending); /* leaving: nothing more to start */
    g->p->close(g->m, kc_now_ms());
    kc_group_drive(g);
}

bool kc_group_closed(const kc_group_t *g)
{
    return g->p->closed(g->m) && !g->revoke_active;
}

void kc_group_free(kc_group_t *g)
{
    if (!g)
        return;
    g->dead = true;
    kc_loop_timer_stop(g->e->loop, &g->timer);
    /* Ops still at the coordinator: their callbacks come later (or at engine close) and find no
     * group. The protocol closes its own connections; their failing callbacks see `dead`. */
    for (kc_group_op_t *o = g->ops; o; o = o->next)
        o->g = NULL;
    g->p->destroy(g->m);
    for (size_t i = 0; i < g->n_retired; i++)
        g->retired[i].p->destroy(g->retired[i].m);
    free(g->retired);
    free_subscription(g);
    kc_opend_free(&g->pending);
    free(g->parts);
    free_strings(g);
    free(g);
}

/* ---- accessors ------------------------------------------------------------------------------ */

const kc_group_proto_t *kc_group_protocol(const kc_group_t *g)
{
    return g->p;
}

const char *kc_group_member_id(const kc_group_t *g)
{
    return g->p->member_id(g->m);
}

int32_t kc_group_epoch(const kc_group_t *g)
{
    return g->p->epoch(g->m);
}

kc_err_t kc_group_commit_identity(void *gp, kc_commit_identity_t *who, kc_error_t *err)
{
    kc_group_t *g = gp;
    /* Also a commit already on its way, asked again: its partitions may be moving. */
    if (g->self_fenced)
        return kc_fail(err, KC_ERR_STATE,
                       "group %s: self-fenced: nothing is committed until the coordinator answers",
                       g->group);
    return g->p->identity(g->m, who, err);
}

/* OffsetFetch: a KIP-848 member names itself once it holds an epoch (the broker then checks it);
 * before that, and always for classic (whose OffsetFetch has no member fields the broker reads),
 * the anonymous form. */
kc_err_t kc_group_fetch_identity(void *gp, kc_commit_identity_t *who, kc_error_t *err)
{
    kc_group_t *g = gp;
    if (g->p->offset_fetch_names_member && g->p->identity(g->m, who, NULL) == KC_OK)
        return KC_OK;
    return kc_offsets_identity_anonymous(who, g->group, err);
}

/* kc_group_commit's callback context: the op finds the group (or not, once it is freed). */
typedef struct app_commit {
    kc_group_op_t *op;
    kc_engine_offsets_cb cb;
    void *opaque;
} app_commit_t;

static void app_commit_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                            const kc_engine_offset_t *res, size_t n)
{
    app_commit_t *ac = opaque;
    kc_group_t *g = kc_group_op_end(ac->op);
    kc_engine_offsets_cb cb = ac->cb;
    void *cb_opaque = ac->opaque;
    free(ac);
    if (g)
        g->commits_out--;
    cb(cb_opaque, rc, err, res, n);
    if (g)
        kc_group_drive(g); /* a leave that waited for this answer goes now */
}

kc_err_t kc_group_commit(kc_group_t *g, const kc_commit_identity_t *who,
                         const kc_engine_offset_t *offs, size_t n, int timeout_ms,
                         kc_engine_offsets_cb cb, void *opaque, kc_error_t *err)
{
    app_commit_t *ac = calloc(1, sizeof *ac);
    kc_group_op_t *op = ac ? kc_group_op_new(g, KC_GROUP_OP_APP_COMMIT, 0) : NULL;
    if (!op) {
        free(ac);
        return kc_fail(err, KC_ERR_NOMEM, "commit: out of memory");
    }
    *ac = (app_commit_t){op, cb, opaque};
    /* Counted before the start: the engine may answer inside it. */
    g->commits_out++;
    kc_err_t rc = who ? kc_engine_commit(g->e, who, offs, n, timeout_ms, app_commit_done, ac, err)
                      : kc_engine_commit_member(g->e, g->group, kc_group_commit_identity, g, offs,
                                                n, timeout_ms, app_commit_done, ac, err);
    if (rc != KC_OK) { /* refused before it started: no answer comes */
        g->commits_out--;
        kc_group_op_end(op);
        free(ac);
    }
    return rc;
}

void kc_group_app_commit_result(kc_group_t *g, int16_t code)
{
    if (!code || kc_group_gone(g) || !g->p->app_commit_result)
        return;
    g->p->app_commit_result(g->m, code, kc_now_ms());
    kc_group_drive(g);
}

void kc_group_count_commit(kc_group_t *g, int16_t code)
{
    g->n.commits++;
    if (code) {
        g->n.commit_failures++;
        g->n.last_error_code = code;
    }
}

bool kc_group_may_auto_commit(const kc_group_t *g)
{
    return !g->closing && !g->self_fenced && !kc_group_gone(g) && g->p->stable(g->m);
}

kc_engine_t *kc_group_engine(const kc_group_t *g)
{
    return g->e;
}

const kc_group_conf_t *kc_group_config(const kc_group_t *g)
{
    return &g->conf;
}

void kc_group_rebalanced(kc_group_t *g)
{
    g->n.rebalances++;
    kc_log(KC_LOG_INFO, "group", "group %s: rebalanced: %s %d (%s, rebalance %llu)", g->group,
           g->p->epoch_name, (int)g->p->epoch(g->m), g->p->name,
           (unsigned long long)g->n.rebalances);
}

kc_group_counters_t *kc_group_counters(kc_group_t *g)
{
    return &g->n;
}

/* A KIP-848 member refused for want of the protocol (the API missing, or UNSUPPORTED_VERSION
 * from a broker that lists it without running it). */
static bool no_kip848(const kc_error_t *e)
{
    return e->code == KC_ERR_UNSUPPORTED ||
           (e->code == KC_ERR_BROKER && e->kafka_code == KC_KAFKA_UNSUPPORTED_VERSION);
}

void kc_group_report(kc_group_t *g, const kc_error_t *e, bool fatal)
{
    /* A regex subscription stays KIP-848 under auto (auto.c: the two protocols' pattern dialects
     * differ); its refusal says what it needs by itself (group.protocol=classic). */
    if (fatal && g->p == &kc_g848_proto && no_kip848(e) && !g->sub_regex) {
        if (g->auto_mode && !g->joined && !g->closing) {
            kc_group_choose(g, &kc_classic_proto, "the KIP-848 member was refused: ");
            size_t len = strlen(g->next_why);
            snprintf(g->next_why + len, sizeof g->next_why - len, "%.*s",
                     (int)(sizeof g->next_why - len - 1), e->msg);
            return;
        }
        /* The fix first, then the broker's words: a long refusal may be cut at the end of the
         * message, the fix never. */
        kc_error_t hint = *e;
        int n = snprintf(hint.msg, sizeof hint.msg,
                         "set group.protocol=classic%s%s%s: the coordinator does not run KIP-848 "
                         "(Kafka 4.0+ does; 3.7-3.9 with "
                         "group.coordinator.rebalance.protocols=classic,consumer); ",
                         g->forced_by[0] ? " or drop " : "", g->forced_by,
                         g->forced_by[0] ? ", which chose KIP-848" : "");
        size_t len = n > 0 && (size_t)n < sizeof hint.msg ? (size_t)n : sizeof hint.msg - 1;
        snprintf(hint.msg + len, sizeof hint.msg - len, "%.*s", (int)(sizeof hint.msg - len - 1),
                 e->msg);
        hint.code = KC_ERR_UNSUPPORTED;
        g->h.error(g->h.opaque, &hint, fatal);
        return;
    }
    g->h.error(g->h.opaque, e, fatal);
}

static void find_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                      const kc_engine_offset_t *res, size_t n)
{
    (void)res, (void)n;
    kc_group_t *g = kc_group_op_end(opaque);
    if (!g) /* freed, or its member replaced (switch_protocol cleared `finding`) */
        return;
    g->finding = false;
    if (rc == KC_ERR_CLOSED)
        return;
    g->found(g->m, rc, err);
    kc_group_drive(g);
}

bool kc_group_find_coordinator(kc_group_t *g, kc_group_found_fn found)
{
    if (g->finding)
        return true;
    kc_group_op_t *op = kc_group_op_new(g, KC_GROUP_OP_FIND, 0);
    if (!op)
        return false;
    kc_error_t err;
    g->found = found;
    g->finding = true; /* cleared by find_done, which may run inside this call (cached) */
    if (kc_engine_find_coordinator(g->e, g->group, (int)g->conf.coordinator_timeout_ms, find_done,
                                   op, &err) != KC_OK) {
        kc_group_op_end(op);
        g->finding = false;
        return false;
    }
    return true;
}

bool kc_group_finding(const kc_group_t *g)
{
    return g->finding;
}

void kc_group_choose(kc_group_t *g, const kc_group_proto_t *p, const char *why)
{
    /* Only the placeholder's verdict, or a KIP-848 member that never joined falling back: a
     * member that joined holds partitions a switch would abandon. */
    if (g->p != &kc_group_auto_proto && (g->p != &kc_g848_proto || g->joined))
        return;
    g->next_p = p;
    snprintf(g->next_why, sizeof g->next_why, "%s", why ? why : "");
}

/* Carries out a verdict at the start of a drive pass, where no protocol call is on the stack:
 * the running member is retired (its late answers find it, and its coordinator lookups are
 * cancelled, since they would find the new member), the chosen one made and subscribed. */
static void switch_protocol(kc_group_t *g)
{
    const kc_group_proto_t *p = g->next_p;
    g->next_p = NULL;
    if (g->closing)
        return;
    /* The old member's coordinator lookups would find the new member (cancelled before it
     * exists: a lookup the new one starts is its own). */
    for (kc_group_op_t *o = g->ops; o; o = o->next)
        if (o->kind == KC_GROUP_OP_FIND)
            o->cancelled = true;
    g->finding = false;
    struct retired *r = realloc(g->retired, (g->n_retired + 1) * sizeof *r);
    void *m = NULL;
    kc_error_t err;
    kc_err_t rc = r ? p->create(&m, g, &err) : kc_fail(&err, KC_ERR_NOMEM, "out of memory");
    if (r)
        g->retired = r;
    if (rc == KC_OK && g->subscribed)
        rc = p->subscribe(m, (const char *const *)g->sub_topics, g->sub_n, g->sub_regex, &err);
    if (rc != KC_OK) {
        if (m)
            p->destroy(m);
        kc_error_t e;
        kc_fail(&e, rc, "group %s: group.protocol=auto chose %s (%s), which failed: %s", g->group,
                p->name, g->next_why, err.msg);
        g->h.error(g->h.opaque, &e, true);
        return;
    }
    g->retired[g->n_retired++] = (struct retired){g->p, g->m};
    kc_log(KC_LOG_INFO, "group", "group %s: group.protocol=auto chose %s: %s", g->group,
           p == &kc_g848_proto ? "consumer (KIP-848)" : p->name, g->next_why);
    g->p = p;
    g->m = m;
    g->joined = false;
    g->commits_told = false; /* the new member hears of commits in flight on this pass */
}

bool kc_group_closing(const kc_group_t *g)
{
    return g->closing;
}

bool kc_group_gone(const kc_group_t *g)
{
    return g->dead || g->e->closed;
}

void *kc_group_member(const kc_group_t *g)
{
    return g->m;
}

kc_group_tp_t *kc_group_parts(kc_group_t *g, size_t n)
{
    if (n > g->parts_cap) {
        kc_group_tp_t *np = realloc(g->parts, n * sizeof *np);
        if (!np)
            return NULL;
        g->parts = np;
        g->parts_cap = n;
    }
    return g->parts;
}

void kc_group_stats_json(const kc_group_t *g, kc_json_t *w)
{
    kc_json_raw(w, "{\"protocol\":");
    kc_json_str(w, g->p->name);
    kc_json_raw(w, ",");
    g->p->stats_head(g->m, w);
    kc_json_raw(w,
                ",\"rebalances\":%llu,\"heartbeats\":%llu,\"heartbeat_errors\":%llu,"
                "\"commits\":%llu,\"commit_failures\":%llu,\"rediscoveries\":%llu",
                (unsigned long long)g->n.rebalances, (unsigned long long)g->n.heartbeats,
                (unsigned long long)g->n.hb_errors, (unsigned long long)g->n.commits,
                (unsigned long long)g->n.commit_failures, (unsigned long long)g->n.rediscoveries);
    g->p->stats_extra(g->m, w);
    kc_json_raw(w, ",\"coordinator\":%d,\"self_fenced\":%s,\"self_fences\":%llu}",
                (int)g->p->coordinator(g->m), g->self_fenced ? "true" : "false",
                (unsigned long long)g->self_fences);
}
