/* Group members on the library's driver (group_harness.h). Owner: see there. */
#include "group_harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "group/classic/proto_int.h"
#include "kc_test.h"
#include "netthread.h"
#include "offsets_wait.h"

#define GH_MAX_MEMBERS 8 /* members ever joined to one harness (a closed one keeps its slot) */

typedef struct gh_part {
    char topic[96];
    int32_t partition;
    bool revoking;
    int64_t revoke_at; /* when its on_revoke "returns" */
} gh_part_t;

/* Owner: the network thread (the handle's fields set at join are read-only after it). */
struct kc_gh_member {
    kc_gh_t *h;
    kc_gh_opts_t o;
    char group[128], instance[128], assignors[128];
    kc_engine_t *e;
    kc_group_t *g;
    gh_part_t held[KC_GH_MAX_PARTS];
    int n_held;
    char topics[8][96]; /* the subscription (names; a regex: none) */
    int n_topics;
    kc_loop_t *loop;
    kc_loop_timer_t revoke_timer; /* the earliest revoke_at of the partitions being revoked */
    unsigned overrun;
    kc_gh_view_t v; /* counters and the last error; the rest is filled by kc_gh_view */
};

/* Owner: the network thread for `m`, `n` (members are added and removed there, where the hooks
 * read the list) and `violation` (written by the hooks); the test thread reads them only after
 * a call there returned (kc_netthread_call orders the two). A hook cannot fail the test itself:
 * cmocka's failure unwinds the thread it runs on. */
struct kc_gh {
    kc_netthread_t *nt;
    kc_gh_member_t *m[GH_MAX_MEMBERS];
    int n;
    char violation[512]; /* the first, "" while none */
};

static void violated(kc_gh_t *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violated(kc_gh_t *h, const char *fmt, ...)
{
    if (h->violation[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->violation, sizeof h->violation, fmt, ap);
    va_end(ap);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int find(const kc_gh_member_t *m, const char *topic, int32_t partition)
{
    for (int i = 0; i < m->n_held; i++)
        if (m->held[i].partition == partition && strcmp(m->held[i].topic, topic) == 0)
            return i;
    return -1;
}

static void unhold(kc_gh_member_t *m, int i)
{
    m->held[i] = m->held[--m->n_held];
}

/* ---- revokes (network thread) --------------------------------------------------------------- */

/* The partitions whose on_revoke "returned": no longer held, and the driver hears it. */
static void complete_due(kc_gh_member_t *m)
{
    int64_t now = now_ms();
    for (int i = 0; i < m->n_held;) {
        if (m->held[i].revoking && now >= m->held[i].revoke_at) {
            unhold(m, i);
            kc_group_revoked(m->g);
        } else {
            i++;
        }
    }
}

static void arm(kc_gh_member_t *m);

static void revoke_due(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    kc_gh_member_t *m = t->opaque;
    complete_due(m);
    arm(m);
}

/* The timer for the earliest revoke still running. */
static void arm(kc_gh_member_t *m)
{
    int64_t at = INT64_MAX;
    for (int i = 0; i < m->n_held; i++)
        if (m->held[i].revoking && m->held[i].revoke_at < at)
            at = m->held[i].revoke_at;
    if (kc_loop_timer_armed(&m->revoke_timer))
        kc_loop_timer_stop(m->loop, &m->revoke_timer);
    if (at == INT64_MAX)
        return;
    int64_t delay = at - now_ms();
    m->revoke_timer.cb = revoke_due;
    m->revoke_timer.opaque = m;
    kc_loop_timer_start(m->loop, &m->revoke_timer, delay > 0 ? delay : 0);
}

/* ---- hooks (network thread) ---------------------------------------------------------------- */

static int h_revoke(void *o, const char *topic, int32_t partition, bool lost)
{
    kc_gh_member_t *m = o;
    int i = find(m, topic, partition);
    if (i < 0)
        return 0; /* nothing held: nothing to wait for */
    if (lost)
        m->v.loses++;
    else
        m->v.revokes++;
    if (!m->held[i].revoking) {
        m->held[i].revoking = true;
        m->held[i].revoke_at = now_ms() + m->o.revoke_delay_ms;
        arm(m);
    }
    return 1;
}

static int64_t h_committable(void *o, const char *topic, int32_t partition)
{
    (void)o, (void)topic, (void)partition;
    return -1;
}

static void h_drop(void *o, const char *topic, int32_t partition)
{
    kc_gh_member_t *m = o;
    (void)topic, (void)partition;
    m->v.drops++;
}

static kc_err_t h_assign(void *o, const char *topic, int32_t partition, int64_t start,
                         kc_error_t *err)
{
    (void)start;
    kc_gh_member_t *m = o;
    for (int k = 0; k < m->h->n; k++) {
        kc_gh_member_t *other = m->h->m[k];
        if (other && other != m && find(other, topic, partition) >= 0)
            violated(m->h,
                     "%s[%d] assigned to a member while another member of group %s still holds "
                     "it (its on_revoke has not returned)",
                     topic, (int)partition, m->group);
    }
    if (m->n_held == KC_GH_MAX_PARTS)
        return kc_fail(err, KC_ERR_NOMEM, "harness: more than %d partitions", KC_GH_MAX_PARTS);
    int i = find(m, topic, partition);
    if (i >= 0 && m->held[i].revoking) { /* the runtime refuses it too (KC_ERR_STATE) */
        violated(m->h, "%s[%d] assigned again while its on_revoke runs", topic, (int)partition);
        return kc_fail(err, KC_ERR_STATE, "harness: %s[%d] is being revoked", topic,
                       (int)partition);
    }
    if (i < 0) {
        gh_part_t *p = &m->held[m->n_held++];
        memset(p, 0, sizeof *p);
        snprintf(p->topic, sizeof p->topic, "%s", topic);
        p->partition = partition;
    }
    bool sub = m->n_topics == 0;
    for (int k = 0; k < m->n_topics; k++)
        sub = sub || strcmp(m->topics[k], topic) == 0;
    m->v.stray_assigns += !sub;
    m->v.assigns++;
    return KC_OK;
}

static unsigned h_poll_over(void *o)
{
    return ((kc_gh_member_t *)o)->overrun;
}

static void h_error(void *o, const kc_error_t *e, bool fatal)
{
    kc_gh_member_t *m = o;
    if (!m->o.expect_error)
        violated(m->h, "group %s: unexpected error: %s", m->group, e->msg);
    m->v.errors++;
    m->v.error = *e;
    m->v.fatal = m->v.fatal || fatal;
}

/* ---- the network thread's side of the calls -------------------------------------------------- */

typedef struct call {
    kc_gh_member_t *m;
    const char *const *topics;
    size_t n;
    kc_gh_view_t v;
    kc_err_t rc;
    kc_error_t err;
    const char *bootstrap; /* read on the test thread: kc_test_env may fail the test */
    char violation[512];   /* the harness's, copied on the network thread */
} call_t;

static void subscribe(call_t *c)
{
    kc_gh_member_t *m = c->m;
    bool re = c->n == 1 && c->topics[0][0] == '^';
    m->n_topics = 0;
    for (size_t i = 0; !re && i < c->n && i < 8; i++)
        snprintf(m->topics[m->n_topics++], sizeof m->topics[0], "%s", c->topics[i]);
    c->rc = kc_group_subscribe(m->g, re ? NULL : c->topics, re ? 0 : c->n, re ? c->topics[0] : NULL,
                               &c->err);
}

static void on_subscribe(kc_loop_t *loop, void *arg)
{
    (void)loop;
    subscribe(arg);
}

static void on_subscribe_during_join(kc_loop_t *loop, void *arg)
{
    (void)loop;
    call_t *c = arg;
    const kc_classic_t *cm = &((const kc_classic_io_t *)kc_group_member(c->m->g))->m;
    if (cm->inflight == KC_CLASSIC_IF_JOIN && cm->member_id[0])
        subscribe(c);
    else
        c->rc = KC_ERR_AGAIN;
}

static int by_tp(const void *a, const void *b)
{
    const kc_gh_tp_t *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

static void on_join(kc_loop_t *loop, void *arg)
{
    call_t *c = arg;
    kc_gh_member_t *m = c->m;
    m->h->m[m->h->n++] = m; /* here, where the other members' hooks read the list */
    m->loop = loop;
    kc_engine_conf_t ec;
    kc_engine_conf_defaults(&ec);
    ec.bootstrap_servers = c->bootstrap;
    kc_engine_sink_t sink = {kc_test_discard_records, NULL, NULL, NULL};
    if ((c->rc = kc_engine_new(&m->e, loop, &ec, &sink, &c->err)) != KC_OK)
        return;
    kc_group_conf_t gc = {0};
    gc.group_id = m->group;
    gc.group_instance_id = m->o.instance ? m->instance : NULL;
    gc.assignors = m->o.assignors ? m->assignors : "range";
    gc.session_timeout_ms = m->o.session_timeout_ms ? m->o.session_timeout_ms : 10000;
    gc.consumer_session_timeout_ms = 45000;
    gc.heartbeat_interval_ms = m->o.heartbeat_interval_ms ? m->o.heartbeat_interval_ms : 1000;
    gc.rebalance_timeout_ms = 30000;
    gc.classic_rebalance_timeout_ms = 30000;
    gc.commit_on_revoke = true;
    gc.request_timeout_ms = 10000;
    gc.commit_timeout_ms = 10000;
    gc.coordinator_timeout_ms = 10000;
    kc_group_hooks_t hooks = {h_revoke, h_committable, h_drop, h_assign, h_poll_over, h_error,
                              m,        NULL,          NULL};
    if ((c->rc = kc_group_new(&m->g, m->e, m->o.proto, NULL, &gc, &hooks, &c->err)) != KC_OK)
        return;
    subscribe(c);
}

static void on_view(kc_loop_t *loop, void *arg)
{
    (void)loop;
    call_t *c = arg;
    kc_gh_member_t *m = c->m;
    c->v = m->v;
    snprintf(c->violation, sizeof c->violation, "%s", m->h->violation);
    c->v.held = m->n_held;
    for (int i = 0; i < m->n_held; i++) {
        snprintf(c->v.parts[i].topic, sizeof c->v.parts[i].topic, "%s", m->held[i].topic);
        c->v.parts[i].partition = m->held[i].partition;
    }
    qsort(c->v.parts, (size_t)m->n_held, sizeof c->v.parts[0], by_tp);
    c->v.epoch = kc_group_epoch(m->g);
    snprintf(c->v.member_id, sizeof c->v.member_id, "%s", kc_group_member_id(m->g));
    c->v.stable = kc_group_may_auto_commit(m->g);
    c->v.closed = kc_group_closed(m->g);
    if (kc_group_protocol(m->g) == &kc_classic_proto) {
        const kc_classic_t *cm = &((const kc_classic_io_t *)kc_group_member(m->g))->m;
        c->v.leader = cm->is_leader;
        c->v.mismatched = cm->mismatched_assignments;
        c->v.stable = c->v.stable && !cm->rejoin_needed; /* a rejoin is already decided */
    }
}

static void on_overrun(kc_loop_t *loop, void *arg)
{
    (void)loop;
    call_t *c = arg;
    c->m->overrun = (unsigned)c->n;
    kc_group_drive(c->m->g);
}

static void on_close(kc_loop_t *loop, void *arg)
{
    (void)loop;
    kc_group_close(((call_t *)arg)->m->g);
}

static void on_free(kc_loop_t *loop, void *arg)
{
    call_t *c = arg;
    kc_gh_member_t *m = c->m;
    if (kc_loop_timer_armed(&m->revoke_timer))
        kc_loop_timer_stop(loop, &m->revoke_timer);
    kc_engine_close(m->e, 2000);
    kc_group_free(m->g);
    kc_engine_free(m->e);
    kc_gh_t *h = m->h;
    for (int k = 0; k < h->n; k++)
        if (h->m[k] == m)
            h->m[k] = NULL;
    snprintf(c->violation, sizeof c->violation, "%s", h->violation);
}

/* ---- the test thread's calls ---------------------------------------------------------------- */

kc_gh_t *kc_gh_start(void)
{
    kc_gh_t *h = calloc(1, sizeof *h);
    assert_non_null(h);
    kc_error_t err;
    if (kc_netthread_start(&h->nt, KC_LOOP_AUTO, NULL, &err) != KC_OK)
        fail_msg("network thread: %s", err.msg);
    return h;
}

void kc_gh_stop(kc_gh_t *h)
{
    for (int k = 0; k < h->n; k++)
        assert_null(h->m[k]); /* every member closed first */
    kc_netthread_stop(h->nt); /* joined: its writes are visible */
    char why[sizeof h->violation];
    snprintf(why, sizeof why, "%s", h->violation);
    free(h);
    if (why[0])
        fail_msg("%s", why);
}

kc_gh_member_t *kc_gh_join(kc_gh_t *h, const kc_gh_opts_t *o, const char *const *topics, size_t n)
{
    assert_true(h->n < GH_MAX_MEMBERS); /* written only on the network thread, ordered by calls */
    kc_gh_member_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->h = h;
    m->o = *o;
    snprintf(m->group, sizeof m->group, "%s", o->group);
    snprintf(m->instance, sizeof m->instance, "%s", o->instance ? o->instance : "");
    snprintf(m->assignors, sizeof m->assignors, "%s", o->assignors ? o->assignors : "");
    call_t c = {m, topics, n, {0}, KC_OK, {0}, kc_test_env("KC_BOOTSTRAP"), ""};
    kc_netthread_call(h->nt, on_join, &c);
    if (c.rc != KC_OK)
        fail_msg("member of %s: %s", o->group, c.err.msg);
    return m;
}

kc_gh_view_t kc_gh_view(kc_gh_member_t *m)
{
    call_t c = {m, NULL, 0, {0}, KC_OK, {0}, NULL, ""};
    kc_netthread_call(m->h->nt, on_view, &c);
    if (c.violation[0])
        fail_msg("%s", c.violation);
    return c.v;
}

bool kc_gh_run_until(kc_gh_member_t *m, bool (*done)(const kc_gh_view_t *v, void *arg), void *arg,
                     int64_t ms)
{
    int64_t end = now_ms() + ms;
    for (;;) {
        kc_gh_view_t v = kc_gh_view(m);
        if (done(&v, arg))
            return true;
        if (now_ms() >= end)
            return false;
        usleep(20 * 1000);
    }
}

void kc_gh_subscribe(kc_gh_member_t *m, const char *const *topics, size_t n)
{
    call_t c = {m, topics, n, {0}, KC_OK, {0}, NULL, ""};
    kc_netthread_call(m->h->nt, on_subscribe, &c);
    if (c.rc != KC_OK)
        fail_msg("subscribe: %s", c.err.msg);
}

bool kc_gh_subscribe_during_join(kc_gh_member_t *m, const char *const *topics, size_t n)
{
    assert_ptr_equal(m->o.proto, &kc_classic_proto);
    call_t c = {m, topics, n, {0}, KC_OK, {0}, NULL, ""};
    kc_netthread_call(m->h->nt, on_subscribe_during_join, &c);
    if (c.rc != KC_OK && c.rc != KC_ERR_AGAIN)
        fail_msg("subscribe: %s", c.err.msg);
    return c.rc == KC_OK;
}

bool kc_gh_settle(kc_gh_member_t *const *ms, int n, int total, int64_t stable_ms, int64_t ms_max)
{
    int64_t end = now_ms() + ms_max, since = -1;
    for (;;) {
        int sum = 0;
        bool all = true;
        for (int i = 0; i < n; i++) {
            kc_gh_view_t v = kc_gh_view(ms[i]);
            all = all && v.stable;
            sum += v.held;
        }
        int64_t now = now_ms();
        if (all && sum == total) {
            if (since < 0)
                since = now;
            if (now - since >= stable_ms)
                return true;
        } else {
            since = -1;
        }
        if (now >= end)
            return false;
        usleep(20 * 1000);
    }
}

void kc_gh_overrun(kc_gh_member_t *m, unsigned n)
{
    call_t c = {m, NULL, n, {0}, KC_OK, {0}, NULL, ""};
    kc_netthread_call(m->h->nt, on_overrun, &c);
}

static bool closed(const kc_gh_view_t *v, void *arg)
{
    (void)arg;
    return v->closed;
}

bool kc_gh_close(kc_gh_member_t *m, int64_t ms)
{
    call_t c = {m, NULL, 0, {0}, KC_OK, {0}, NULL, ""};
    kc_netthread_call(m->h->nt, on_close, &c);
    bool ok = kc_gh_run_until(m, closed, NULL, ms);
    kc_netthread_call(m->h->nt, on_free, &c);
    free(m);
    if (c.violation[0]) /* raised while it left */
        fail_msg("%s", c.violation);
    return ok;
}
