/*
 * group.protocol=classic: the protocol interface of group/group.h over the pure member
 * (member.h) and its requests (io.c); see proto_int.h.
 *
 * Owner: network thread, all of it. Every answer (group requests on our own coordinator
 * connection, FindCoordinator and Metadata on an engine connection) comes back on that thread and
 * calls kc_group_drive(), which pulls the member's outputs through p_next_action. Lifetime: the
 * group is freed after kc_engine_close (the engine's connections, and so the answers on them, are
 * gone: callbacks check e->closed); p_destroy closes our own connection while `dead` makes its
 * failing callbacks no-ops.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "group/classic/proto_int.h"

int32_t kc_classic_io_partitions(void *ctx, const char *topic)
{
    kc_classic_io_t *g = ctx;
    for (size_t i = 0; i < g->n_topics; i++)
        if (strcmp(g->topics[i], topic) == 0)
            return g->counts[i];
    for (size_t i = 0; i < g->n_others; i++)
        if (strcmp(g->others[i], topic) == 0)
            return g->other_counts[i];
    return 0;
}

/* true when the count is new or changed (the leader's assignment may need a rejoin). */
bool kc_classic_io_set_other(kc_classic_io_t *g, const char *topic, int32_t count)
{
    for (size_t i = 0; i < g->n_others; i++)
        if (strcmp(g->others[i], topic) == 0) {
            bool changed = g->other_counts[i] != count;
            g->other_counts[i] = count;
            return changed;
        }
    char **no = realloc(g->others, (g->n_others + 1) * sizeof *no);
    if (no)
        g->others = no;
    int32_t *nc = no ? realloc(g->other_counts, (g->n_others + 1) * sizeof *nc) : NULL;
    if (nc)
        g->other_counts = nc;
    char *t = nc ? strdup(topic) : NULL;
    if (!t)
        return false; /* out of memory: the assignment stays without this topic */
    g->others[g->n_others] = t;
    g->other_counts[g->n_others++] = count;
    return true;
}

static int32_t partitions_of(void *ctx, const char *topic)
{
    return kc_classic_io_partitions(ctx, topic);
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

static kc_err_t p_create(void **out, kc_group_t *grp, kc_error_t *err)
{
    kc_classic_io_t *g = calloc(1, sizeof *g);
    if (!g)
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    g->grp = grp;
    g->e = kc_group_engine(grp);
    g->conf = kc_group_config(grp);
    g->last_generation = -1;
    g->coord_node = -1;
    const kc_group_conf_t *conf = g->conf;
    kc_classic_config_t c = {0};
    c.group_id = conf->group_id;
    c.instance_id = conf->group_instance_id;
    c.rack = conf->rack_id;
    c.session_timeout_ms = (int32_t)conf->session_timeout_ms;
    c.rebalance_timeout_ms = conf->classic_rebalance_timeout_ms;
    c.heartbeat_interval_ms = conf->heartbeat_interval_ms;
    c.coordinator_timeout_ms = conf->coordinator_timeout_ms;
    c.auto_commit = conf->commit_on_revoke;
    c.commit_timeout_ms = conf->commit_timeout_ms;
    c.retry_backoff_ms = g->e->conf.retry_backoff_ms;
    c.retry_backoff_max_ms = g->e->conf.retry_backoff_max_ms;
    kc_err_t rc = parse_assignors(&c, conf->assignors, err);
    if (rc == KC_OK)
        rc = kc_classic_init(&g->m, &c, partitions_of, g, err);
    if (rc != KC_OK) {
        free(g);
        return rc;
    }
    kc_classic_set_racks(&g->m, kc_classic_io_racks_of);
    *out = g;
    return KC_OK;
}

static void free_topics(char **t, size_t n)
{
    for (size_t i = 0; t && i < n; i++)
        free(t[i]);
    free(t);
}

static void p_destroy(void *m)
{
    kc_classic_io_t *g = m;
    g->dead = true;
    if (g->conn)
        kc_conn_close(g->conn); /* its failing callbacks see `dead` */
    kc_classic_free(&g->m);
    kc_classic_io_racks_free(g); /* before the topics: it walks them */
    free_topics(g->topics, g->n_topics);
    free(g->counts);
    if (g->has_re)
        regfree(&g->re);
    free_topics(g->others, g->n_others);
    free(g->other_counts);
    kc_wbuf_free(&g->req);
    free(g);
}

/* The first subscription and every later one: the new list replaces the old, and goes to the
 * member (which rejoins when it differs, revoking per its protocol: cooperative only what left)
 * once the Metadata answer for this very list gave its partition counts, because the leader's
 * assignors read them. Counts of topics the old list had are kept, so they are not unknown in
 * between. */
static kc_err_t p_subscribe(void *m, const char *const *topics, size_t n, const char *regex,
                            kc_error_t *err)
{
    kc_classic_io_t *g = m;
    if (g->m.state == KC_CLASSIC_ST_CLOSING || g->m.state == KC_CLASSIC_ST_CLOSED)
        return kc_fail(err, KC_ERR_STATE, "group %s: leaving; subscribe after it has left",
                       g->conf->group_id);
    if (regex) {
        /* The list stays as it is until the first answer for all topics says what matches.
         * The whole name must match, as in Java (Pattern.matcher(topic).matches(), in the
         * classic consumer and in the broker's KIP-848 regex resolution), not a part of it as
         * regexec alone finds: "^(pattern)$", which anchors every alternative of it. */
        size_t len = strlen(regex);
        char *whole = malloc(len + 5);
        if (!whole)
            return kc_fail(err, KC_ERR_NOMEM, "subscribe: out of memory");
        snprintf(whole, len + 5, "^(%s)$", regex);
        regex_t re;
        int rc = regcomp(&re, whole, REG_EXTENDED | REG_NOSUB);
        free(whole);
        if (rc != 0) {
            char why[160];
            regerror(rc, &re, why, sizeof why);
            return kc_fail(err, KC_ERR_INVALID_ARG, "subscribe: pattern '%s': %s", regex, why);
        }
        if (g->has_re)
            regfree(&g->re);
        g->re = re;
        g->has_re = true;
        g->md_gen++;
        g->next_md_ms = 0; /* ask now */
        return KC_OK;
    }
    if (g->has_re) {
        regfree(&g->re);
        g->has_re = false;
    }
    return kc_classic_io_set_topics(g, topics, n, err);
}

kc_err_t kc_classic_io_set_topics(kc_classic_io_t *g, const char *const *topics, size_t n,
                                  kc_error_t *err)
{
    char **t = calloc(n ? n : 1, sizeof *t);
    int32_t *counts = calloc(n ? n : 1, sizeof *counts);
    bool ok = t && counts;
    for (size_t i = 0; ok && i < n; i++) {
        ok = (t[i] = strdup(topics[i])) != NULL;
        counts[i] = ok ? partitions_of(g, topics[i]) : 0;
    }
    if (!ok) {
        free_topics(t, n);
        free(counts);
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    }
    kc_classic_io_racks_free(g); /* indexed by the old list; the next Metadata answer refills */
    free_topics(g->topics, g->n_topics);
    free(g->counts);
    g->topics = t;
    g->counts = counts;
    g->n_topics = n;
    g->md_known = false;
    g->md_gen++;       /* an answer already on its way was asked for the old list */
    g->next_md_ms = 0; /* ask now */
    g->sub_pending = true;
    return KC_OK;
}

static void p_step(void *m, int64_t now)
{
    kc_classic_io_t *g = m;
    bool closing = kc_group_closing(g->grp);
    kc_classic_io_md_maybe_send(g, now);
    if (g->sub_pending && (g->md_known || closing)) {
        /* The leader's assignors need the partition counts: join once they are known. */
        kc_error_t err;
        g->sub_pending = false;
        g->subscribed = true;
        if (!closing &&
            kc_classic_subscribe(&g->m, (const char *const *)g->topics, g->n_topics, &err) != KC_OK)
            kc_group_report(g->grp, &err, true);
        g->find_retry_ms = 0;
    }
    /* Also while the machine has lost its coordinator and no new connection is on its way: the
     * machine asks for one lookup per loss (KC_CLASSIC_REDISCOVER), and a lookup that failed
     * (unanswered past the request timeout: a partitioned network) must be retried here, or the
     * member waits for a coordinator forever. find_retry_ms paces it. While closing, only a
     * member that dropped its connection to leave looks (it owes the LeaveGroup). */
    if (g->subscribed && (!closing || g->m.abandoned_for_leave) &&
        (!g->conn || (!g->m.coord_known && !g->want_known)))
        kc_classic_io_find_maybe_send(g, now);
    if (g->req_kind && g->req_kind != KC_CLASSIC_SEND_JOIN && g->conn) {
        /* A coordinator killed mid-request would hold the answer for the whole (rebalance-sized)
         * request timeout: past a few heartbeat intervals the connection resets. */
        int64_t limit = 3 * (int64_t)g->conf->heartbeat_interval_ms;
        if (limit < 5000)
            limit = 5000;
        if (now - g->req_sent_ms > limit)
            kc_conn_reset(g->conn, KC_ERR_TIMEOUT, "group request unanswered");
    }
}

/* Out of memory: no partitions, and the step completes with nothing done. */
static void set_parts(kc_classic_io_t *g, const kc_tpset_t *s, kc_group_action_t *out)
{
    kc_group_tp_t *parts = kc_group_parts(g->grp, s->n);
    out->parts = parts;
    out->n = parts ? s->n : 0;
    for (size_t i = 0; i < out->n; i++)
        parts[i] = (kc_group_tp_t){s->items[i].topic->name, s->items[i].partition};
}

/* The member's outputs in order: the group requests and errors are carried out here, the
 * reconciliation's actions go to the driver. The machine keeps at most one group request in
 * flight itself. */
static bool p_next_action(void *m, int64_t now, kc_group_action_t *out)
{
    kc_classic_io_t *g = m;
    kc_classic_out_t o;
    while (kc_classic_poll(&g->m, now, &o)) {
        memset(out, 0, sizeof *out);
        out->seq = o.seq;
        switch (o.kind) {
        case KC_CLASSIC_SEND_JOIN:
        case KC_CLASSIC_SEND_SYNC:
        case KC_CLASSIC_SEND_HEARTBEAT:
        case KC_CLASSIC_SEND_LEAVE:
        case KC_CLASSIC_DESCRIBE:
            /* DESCRIBE asks the coordinator which protocol the group runs, for the text of
             * INCONSISTENT_GROUP_PROTOCOL; any failure raises the error without it. */
            kc_classic_io_send_group(g, &o, now);
            continue;
        case KC_CLASSIC_ABANDON:
            /* Its request fails (req_done: kc_classic_request_failed), the machine looks the
             * coordinator up again and leaves on a new connection. */
            if (g->conn)
                kc_conn_reset(g->conn, KC_ERR_CLOSED,
                              "leaving the group: the request waiting for the rebalance is "
                              "dropped");
            else
                kc_classic_request_failed(&g->m, now);
            continue;
        case KC_CLASSIC_REDISCOVER:
            kc_group_counters(g->grp)->rediscoveries++;
            g->find_retry_ms = 0;
            kc_classic_io_find_maybe_send(g, now);
            continue;
        case KC_CLASSIC_ERROR:
            kc_group_report(g->grp, &o.error, false);
            continue;
        case KC_CLASSIC_FATAL:
            kc_group_report(g->grp, &o.error, true);
            continue;
        case KC_CLASSIC_CLOSED:
            g->closed_out = true;
            continue;
        case KC_CLASSIC_REVOKE:
            out->kind = KC_GROUP_ACT_REVOKE;
            break;
        case KC_CLASSIC_LOSE:
            out->kind = KC_GROUP_ACT_LOSE;
            break;
        case KC_CLASSIC_COMMIT:
            out->kind = KC_GROUP_ACT_COMMIT;
            out->who = o.who;
            break;
        case KC_CLASSIC_DROP:
            out->kind = KC_GROUP_ACT_DROP;
            break;
        case KC_CLASSIC_ASSIGN:
            out->kind = KC_GROUP_ACT_ASSIGN;
            break;
        }
        set_parts(g, o.parts, out);
        return true;
    }
    return false;
}

static void p_action_done(void *m, uint64_t seq, int64_t now)
{
    kc_classic_io_t *g = m;
    kc_classic_action_done(&g->m, seq, now);
}

static void p_commit_result(void *m, uint64_t seq, int16_t code, int64_t now)
{
    kc_classic_io_t *g = m;
    kc_classic_commit_result(&g->m, seq, code, now);
}

static void p_finish(void *m, int64_t now)
{
    (void)now;
    kc_classic_io_t *g = m;
    if (g->m.generation != g->last_generation && g->m.generation >= 0) {
        g->last_generation = g->m.generation;
        kc_group_rebalanced(g->grp);
    }
}

static int64_t p_next_wakeup(void *m, int64_t now)
{
    (void)now;
    kc_classic_io_t *g = m;
    return kc_classic_next_wakeup(&g->m);
}

/* The member leaves while a callback overruns and joins again once it returned. */
static void p_poll_expired(void *m, bool expired, int64_t now)
{
    kc_classic_io_t *g = m;
    if (expired) {
        g->poll_leaves++;
        kc_classic_poll_expired(&g->m, now);
    } else {
        kc_classic_poll_resumed(&g->m, now);
    }
}

static void p_commits_in_flight(void *m, bool in_flight, int64_t now)
{
    kc_classic_io_t *g = m;
    kc_classic_commits_in_flight(&g->m, in_flight, now);
}

/* Revoke (commit under our identity), then LeaveGroup when dynamic (a static member keeps its
 * place for session.timeout.ms). */
static void p_close(void *m, int64_t now)
{
    (void)now;
    kc_classic_io_t *g = m;
    kc_classic_close(&g->m);
}

/* Revoke, commit, LeaveGroup when dynamic (as close), then IDLE: a later subscribe joins anew
 * (Java forgets the member id once it has left). A list still waiting for its Metadata is not
 * handed to the member any more. */
static void p_unsubscribe(void *m, int64_t now)
{
    (void)now;
    kc_classic_io_t *g = m;
    g->sub_pending = false;
    kc_classic_unsubscribe(&g->m);
}

static bool p_closed(const void *m)
{
    const kc_classic_io_t *g = m;
    kc_classic_state_t s = g->m.state;
    bool done = s == KC_CLASSIC_ST_CLOSED || s == KC_CLASSIC_ST_FATAL || s == KC_CLASSIC_ST_IDLE ||
                g->closed_out;
    return done && !g->req_kind;
}

/* member id + the CURRENT generation + group.instance.id; KC_ERR_STATE before the first
 * JoinGroup answer and after leaving. During a rebalance the broker answers
 * REBALANCE_IN_PROGRESS, which the caller reports. */
static kc_err_t p_identity(void *m, kc_commit_identity_t *who, kc_error_t *err)
{
    kc_classic_io_t *g = m;
    if (kc_classic_io_gone(g) || g->closed_out)
        return kc_fail(err, KC_ERR_STATE, "group %s: the member has left the group",
                       g->conf->group_id);
    if (!g->m.member_id || !*g->m.member_id || g->m.generation < 0)
        return kc_fail(err, KC_ERR_STATE,
                       "group %s: not a member yet (no generation: joining or rejoining)",
                       g->conf->group_id);
    return kc_offsets_identity_member(who, g->conf->group_id, g->m.member_id, g->m.generation,
                                      g->conf->group_instance_id, err);
}

/* ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID mean our membership is gone, so
 * the member rejoins (as the Java client does). */
static void p_app_commit_result(void *m, int16_t code, int64_t now)
{
    kc_classic_io_t *g = m;
    kc_classic_app_commit_error(&g->m, code, now);
}

static bool p_stable(const void *m)
{
    const kc_classic_io_t *g = m;
    return g->m.state == KC_CLASSIC_ST_STABLE && kc_reconcile_idle(&g->m.rc);
}

static int64_t p_session_ms(const void *m)
{
    return ((const kc_classic_io_t *)m)->conf->session_timeout_ms;
}

static double p_fence_ratio(const void *m)
{
    return ((const kc_classic_io_t *)m)->conf->self_fence_ratio;
}

/* Holding nothing (an eager rebalance revoked everything) there is nothing to stop. */
static bool p_fence_applies(const void *m)
{
    return ((const kc_classic_io_t *)m)->m.rc.held.n > 0;
}

static int32_t p_epoch(const void *m)
{
    return ((const kc_classic_io_t *)m)->m.generation;
}

static const char *p_member_id(const void *m)
{
    const kc_classic_io_t *g = m;
    return g->m.member_id ? g->m.member_id : "";
}

static int32_t p_coordinator(const void *m)
{
    return ((const kc_classic_io_t *)m)->coord_node;
}

static const char *state_name(kc_classic_state_t s)
{
    static const char *const n[] = {"idle",   "unjoined", "joining", "syncing",
                                    "stable", "closing",  "closed",  "fatal"};
    return (unsigned)s < sizeof n / sizeof n[0] ? n[s] : "?";
}

/* Where a member that does not move on is waiting: the reconciliation step it is in, and the
 * group request it has in flight. */
static const char *step_name(kc_recon_step_t s)
{
    static const char *const n[] = {"idle", "revoke", "commit", "drop", "assign"};
    return (unsigned)s < sizeof n / sizeof n[0] ? n[s] : "?";
}

static const char *inflight_name(kc_classic_inflight_t f)
{
    static const char *const n[] = {"none", "join", "sync", "heartbeat", "leave"};
    return (unsigned)f < sizeof n / sizeof n[0] ? n[f] : "?";
}

/* The member id is the coordinator's (client.id + "-" + a UUID in Kafka), and client.id is
 * any string: it goes through kc_json_str like every other string. */
static void p_stats_head(const void *m, kc_json_t *w)
{
    const kc_classic_io_t *g = m;
    kc_json_raw(w, "\"state\":");
    kc_json_str(w, state_name(g->m.state));
    /* next to the state: tools that keep only a line's start (the process tests) still see it */
    kc_json_raw(w, ",\"reconcile\":");
    kc_json_str(w, step_name(g->m.rc.step));
    kc_json_raw(w, ",\"in_flight\":");
    kc_json_str(w, inflight_name(g->m.inflight));
    kc_json_raw(w, ",\"member_id\":");
    kc_json_str(w, g->m.member_id);
    kc_json_raw(w, ",\"epoch\":%d,\"leader\":%s,\"assignor\":", (int)g->m.generation,
                g->m.is_leader ? "true" : "false");
    kc_json_str(w, g->m.protocol);
    kc_json_raw(w, ",\"assignment\":[");
    const kc_tpset_t *owned = &g->m.rc.owned;
    for (size_t i = 0; i < owned->n; i++) {
        kc_json_lit(w, i ? ",[" : "[");
        kc_json_str(w, owned->items[i].topic->name);
        kc_json_field(w, ",", owned->items[i].partition);
        kc_json_lit(w, "]");
    }
    kc_json_raw(w, "]");
}

static void p_stats_extra(const void *m, kc_json_t *w)
{
    const kc_classic_io_t *g = m;
    kc_json_raw(w, ",\"poll_leaves\":%llu", (unsigned long long)g->poll_leaves);
}
const kc_group_proto_t kc_classic_proto = {
    .name = "classic",
    .epoch_name = "generation",
    .create = p_create,
    .destroy = p_destroy,
    .subscribe = p_subscribe,
    .step = p_step,
    .next_action = p_next_action,
    .action_done = p_action_done,
    .commit_result = p_commit_result,
    .finish = p_finish,
    .next_wakeup = p_next_wakeup,
    .poll_expired = p_poll_expired,
    .commits_in_flight = p_commits_in_flight,
    .close = p_close,
    .unsubscribe = p_unsubscribe,
    .closed = p_closed,
    .identity = p_identity,
    .offset_fetch_names_member = false,
    .app_commit_result = p_app_commit_result,
    .stable = p_stable,
    .session_ms = p_session_ms,
    .fence_ratio = p_fence_ratio,
    .fence_applies = p_fence_applies,
    .epoch = p_epoch,
    .member_id = p_member_id,
    .coordinator = p_coordinator,
    .stats_head = p_stats_head,
    .stats_extra = p_stats_extra,
};
