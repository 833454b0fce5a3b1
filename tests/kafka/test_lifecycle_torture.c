/* kc-test-label: threads */
/*
 * Lifecycle torture: seeded random use of a manually assigned consumer by several app threads,
 * ending in kc_close from one or two of them at a random moment, checked on every event.
 *
 * Each iteration (its own seed) picks: push or pull mode, manual offset store or not, group.id
 * with auto-commit, without it, or no group. APP_THREADS app threads call kc_assign,
 * kc_incremental_assign, kc_unassign, kc_seek (every kind), kc_pause, kc_resume, kc_commit,
 * kc_commit_async, kc_store_offset, kc_position and, in pull mode, kc_poll + kc_records_release.
 * Callbacks (and pulled views) return CONTINUE / PAUSE / RETRY / STOP at random and sometimes
 * sleep. At a random moment one closer (sometimes two at once) calls kc_close; the app threads
 * stop at KC_ERR_CLOSED or the stop flag; kc_destroy follows once every app thread is joined.
 *
 * Checked (violations are counted in atomics and printed with the seed):
 *  - per partition never two callbacks at once (on_assign, on_records, on_revoke, on_lost; a
 *    pulled view counts as a callback while held); "copies": on_assign starts one, the end of
 *    on_revoke / on_lost ends it; two live copies at once, a record callback outside a live copy
 *    or after its copy's on_revoke started are violations;
 *  - delivery order, exactly: every assignment change and seek of a partition is bracketed
 *    (chg_begin before the call, chg_end after it returned, under pos_mu, so at most one is in
 *    progress); it takes effect at one unknown moment inside its bracket (kc_seek and the
 *    assignment calls run their command on the network thread before they return). A view's
 *    records are the partition's position at the moment its callback passed the gate, which
 *    lies between the end of the previous view (or of on_assign) and the start of this one;
 *    in pull mode that includes the time the view waited for kc_poll (pull.c: the worker passes
 *    the gate, then queues the view). So each partition keeps the set of library states
 *    ("worlds") consistent with what was observed, every order of the unobserved moments
 *    included: its position (the last change's start, or the continuation of the last view
 *    whose gate came after it), whether a view passed the gate, and whether a change took
 *    effect after that gate (then the view's continuation is void). A view must start where
 *    some world's gate read the position: exactly on the memory broker (no offset gaps), at or
 *    after it on a real cluster; the worlds that disagree are dropped. RETRY and STOP continue
 *    at the view's first offset; a change without a known start (KC_OFFSET_STORED with a
 *    group, a timestamp on a real cluster) allows any start; a revocation leaves no position,
 *    so only a view whose gate came before it may still be delivered; of the copies made, only
 *    the newest delivers. Before the first iteration the model rejects scripted faults
 *    (model_cases) and accepts their legitimate neighbours;
 *  - commits: the group's committed offsets, read at the end with a fresh consumer, never pass
 *    what callbacks finished or the app positioned explicitly (auto store: a seek or an explicit
 *    assign offset is a position, committed as Java does) or what was stored (manual store);
 *  - kc_close returns within its timeout + 1 s, and after a KC_OK no copy is live; a watchdog
 *    aborts an iteration past ITER_LIMIT_S. Leaks and races: ASan / TSan builds.
 *
 * Environment: KC_TORTURE_SEED=<seed> (the base seed; a failure prints the iteration's seed, and
 * KC_TORTURE_SEED=<it> KC_TORTURE_ITERS=1 replays its choices; thread timing differs between
 * runs), KC_TORTURE_ITERS=N (default 60). KC_TORTURE_BOOTSTRAP=host:port runs against a real
 * cluster instead of the memory broker the test spawns: the topic KC_TORTURE_TOPIC (default
 * "kc-torture") must exist and hold records (the first 8 partitions are used; create it e.g.
 * with 8 partitions and a few thousand small records each).
 * Owner: main runs iterations; app threads, callbacks and the watchdog share the atomics below.
 */
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define MAXP         8
#define MB_RECS      2000 /* records per partition on the memory broker */
#define APP_THREADS  3
#define ITER_LIMIT_S 30

static pid_t g_pid = -1;
static char g_bs[256];
static const char *g_topic = "T";
static bool g_exact = true; /* memory broker: no offset gaps, exact positions */
static int g_np = MAXP;
static int64_t g_low[MAXP], g_high[MAXP]; /* each partition's log start and end */

/* ---- random numbers ------------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int rnd(uint64_t *s, int n)
{
    return (int)(splitmix(s) % (uint64_t)n);
}

/* Callbacks run on workers, whose choices cannot be replayed anyway (timing decides which
 * worker runs what); each worker thread keeps its own generator, seeded from the iteration. */
static _Atomic uint64_t g_cb_seed;
static _Thread_local uint64_t tl_rng;
static _Thread_local uint64_t tl_rng_iter = 0;
static _Atomic uint64_t g_iter_no;

static int cb_rnd(int n)
{
    uint64_t it = atomic_load(&g_iter_no);
    if (tl_rng_iter != it) {
        tl_rng_iter = it;
        tl_rng = atomic_load(&g_cb_seed) ^ (uint64_t)(uintptr_t)&tl_rng;
    }
    return rnd(&tl_rng, n);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- per-iteration state -------------------------------------------------------------------- */

#define POS_ANY  (-1) /* the change fixes no start: a view may start anywhere */
#define POS_NONE (-2) /* no copy (revoked, or never assigned): nothing passes the gate */
#define MAXW     512  /* worlds per partition; more is a model error (reported) */
#define NLOG     32   /* events per partition kept for a violation's report */

/* What a change does to one partition. */
enum { ACT_SEEK, ACT_ADD, ACT_GONE };

/* One library state the observed events allow (model_* below). */
typedef struct world {
    int64_t pos;    /* where the next view that passes the gate starts */
    int64_t vfirst; /* gate: where the view that passed it starts */
    int latest;     /* copies the assignment changes made so far (the newest one's number) */
    int ran;        /* the copy whose on_assign was seen last: only the newest one delivers */
    bool gate;      /* a view passed the gate and has not reached our code yet */
    bool over;      /* a change took effect after that gate: its continuation is void */
    bool applied;   /* the change in progress took effect (true when none is in progress) */
} world_t;

typedef struct tp {
    _Atomic int in_cb;  /* callbacks (and held views) of this partition running now */
    _Atomic int live;   /* copies whose on_assign started and whose on_revoke did not end */
    _Atomic int ending; /* the current copy's on_revoke / on_lost started */
    /* position changes (pos_mu): begun, returned */
    _Atomic uint64_t chg_begin, chg_end;
    /* the delivery-order model, under mu (app threads' changes, this partition's callbacks) */
    pthread_mutex_t mu;
    world_t w[MAXW];
    int nw;
    bool open;      /* between a view's (or on_assign's) end and the next view: a gate may pass */
    bool active;    /* a change is in progress */
    int active_act; /* what it does to this partition (ACT_*) */
    int64_t active_to; /* the start it gives (POS_ANY: not known) */
    bool overflow;     /* more than MAXW worlds: reported once */
    /* kinds: B change begun, E returned, A on_assign, R on_revoke / on_lost, V view, W its end */
    struct {
        char kind;
        uint64_t n;
        int64_t a, b;
    } log[NLOG];
    uint64_t nlog;
    /* where the copy's last view left off (-1: none yet): on_revoke's store */
    _Atomic int64_t last_next;
    /* commit bound: max finished / positioned (auto store) or stored (manual store) */
    _Atomic int64_t allowed;
} tp_t;

typedef struct iter {
    uint64_t seed;
    bool pull, manual_store, auto_commit;
    int group; /* 0: no group.id; 1: with one */
    char group_id[96];
    kc_consumer_t *c;
    tp_t tp[MAXP];
    pthread_mutex_t pos_mu; /* serialises position changes; guards assigned */
    unsigned assigned;      /* the manual assignment as the app made it (bit per partition) */
    _Atomic int stop;
    _Atomic int closing; /* a kc_close began: calls may fail from here on */
    _Atomic int closers_left;
    int64_t close_at; /* ms, monotonic */
    int nclosers;
    _Atomic int violations;
    _Atomic long views, records, inflight, polls, closes_ok, closes_timeout;
} iter_t;

static iter_t I;
static bool g_quiet; /* the model's self-check: violations are expected, not printed */

/* The iteration's mutexes: made before it (zeroed state), destroyed before the next. */
static void mutexes(bool make)
{
    for (int i = 0; i < MAXP; i++)
        if (make)
            pthread_mutex_init(&I.tp[i].mu, NULL);
        else
            pthread_mutex_destroy(&I.tp[i].mu);
    if (make)
        pthread_mutex_init(&I.pos_mu, NULL);
    else
        pthread_mutex_destroy(&I.pos_mu);
}

static _Atomic int64_t g_deadline; /* watchdog: abort past this (ms), 0: idle */
static _Atomic uint64_t g_cur_seed;
static long g_total_views, g_total_inflight;

static void viol(const char *fmt, ...)
{
    int n = atomic_fetch_add(&I.violations, 1);
    if (n >= 10 || g_quiet)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stdout, "VIOLATION (seed %" PRIu64 ", %s, %s store, %s): %s\n", I.seed,
            I.pull ? "pull" : "push", I.manual_store ? "manual" : "auto",
            !I.group        ? "no group"
            : I.auto_commit ? "auto-commit"
                            : "no auto-commit",
            msg);
    fflush(stdout);
}

/* ---- the delivery-order model (header: "delivery order") ------------------------------------ */

static void mlog(tp_t *t, char kind, uint64_t n, int64_t a, int64_t b)
{
    t->log[t->nlog % NLOG].kind = kind;
    t->log[t->nlog % NLOG].n = n;
    t->log[t->nlog % NLOG].a = a;
    t->log[t->nlog % NLOG].b = b;
    t->nlog++;
}

/* The partition's recent events and the starts its worlds allow, after a violation. Under mu. */
static void dump_model(int i)
{
    static const char *ops[] = {"?",           "assign",         "incremental", "unassign",
                                "seek-offset", "seek-beginning", "seek-end",    "seek-timestamp"};
    static const char *acts[] = {"seek", "add", "revoke"};
    static const char *res[] = {"continue", "pause", "retry", "stop"};
    tp_t *t = &I.tp[i];
    if (g_quiet || atomic_load(&I.violations) > 10)
        return;
    printf("#   partition %d, last events:", i);
    for (uint64_t k = t->nlog > NLOG ? t->nlog - NLOG : 0; k < t->nlog; k++) {
        int64_t a = t->log[k % NLOG].a, b = t->log[k % NLOG].b;
        uint64_t n = t->log[k % NLOG].n;
        switch (t->log[k % NLOG].kind) {
        case 'B':
            printf(" [change %" PRIu64 " %s: %s %" PRId64 "", n, ops[(a >> 8) & 7], acts[a & 3], b);
            break;
        case 'E':
            printf(" %s]", a ? "ok" : "failed");
            break;
        case 'A':
            printf(" on_assign");
            break;
        case 'R':
            printf(" on_revoke");
            break;
        case 'V':
            printf(" view@%" PRId64, a);
            break;
        case 'W':
            printf("-%" PRId64 "(%s)", a, res[b & 3]);
            break;
        }
    }
    printf("\n#   worlds:");
    for (int k = 0; k < t->nw; k++) {
        const world_t *w = &t->w[k];
        printf(" {copy %d/%d pos %" PRId64, w->ran, w->latest, w->pos);
        if (w->gate)
            printf(" gate@%" PRId64 "%s", w->vfirst, w->over ? " void" : "");
        printf("%s}", w->applied ? "" : " change pending");
    }
    printf("\n");
    fflush(stdout);
}

static bool world_eq(const world_t *a, const world_t *b)
{
    return a->pos == b->pos && a->latest == b->latest && a->ran == b->ran && a->gate == b->gate &&
           a->applied == b->applied && (!a->gate || (a->vfirst == b->vfirst && a->over == b->over));
}

static void add_world(tp_t *t, const world_t *w)
{
    for (int k = 0; k < t->nw; k++)
        if (world_eq(&t->w[k], w))
            return;
    if (t->nw == MAXW) {
        if (!t->overflow)
            viol("partition %" PRIdPTR ": the model holds more than %d worlds", t - I.tp, MAXW);
        t->overflow = true;
        return;
    }
    t->w[t->nw++] = *w;
}

/* Removes duplicates after the worlds were edited in place. */
static void compact(tp_t *t)
{
    int n = t->nw;
    t->nw = 0;
    for (int k = 0; k < n; k++) {
        world_t w = t->w[k];
        add_world(t, &w);
    }
}

/* Adds every world the unobserved moments can lead to by now: a view passing the gate (only
 * while one may: the window is open, the newest copy is the one running and has a position)
 * and the change in progress taking effect, in either order. The originals stay: neither has
 * to have happened yet. Worlds appended are expanded in turn. */
static void expand(tp_t *t)
{
    for (int k = 0; k < t->nw; k++) {
        world_t w = t->w[k];
        if (t->open && !w.gate && w.ran == w.latest && w.pos != POS_NONE) {
            world_t g = w;
            g.gate = true;
            g.vfirst = w.pos;
            g.over = false;
            add_world(t, &g);
        }
        if (t->active && !w.applied) {
            world_t a = w;
            a.applied = true;
            if (t->active_act == ACT_ADD) {
                a.latest++;
                a.pos = t->active_to;
            } else if (t->active_act == ACT_GONE) {
                a.pos = POS_NONE;
            } else if (a.pos != POS_NONE) {
                a.pos = t->active_to;
            }
            a.over = w.gate; /* after the gate: the worker drops that view's continuation */
            add_world(t, &a);
        }
    }
}

static void model_change_begin(int i, uint64_t n, int op, int act, int64_t to)
{
    tp_t *t = &I.tp[i];
    pthread_mutex_lock(&t->mu);
    expand(t);
    for (int k = 0; k < t->nw; k++)
        t->w[k].applied = false;
    t->active = true;
    t->active_act = act;
    t->active_to = to;
    mlog(t, 'B', n, op << 8 | act, to);
    pthread_mutex_unlock(&t->mu);
}

/* The call returned: it took effect (KC_OK) or not at all (refused). */
static void model_change_end(int i, bool ok)
{
    tp_t *t = &I.tp[i];
    pthread_mutex_lock(&t->mu);
    expand(t);
    int n = 0;
    for (int k = 0; k < t->nw; k++)
        if (t->w[k].applied == ok) {
            t->w[n] = t->w[k];
            t->w[n++].applied = true;
        }
    t->nw = n;
    t->active = false;
    mlog(t, 'E', 0, ok, 0);
    pthread_mutex_unlock(&t->mu);
}

/* A copy's on_assign starts: it is one the changes made since the last one seen, and only the
 * newest can deliver (an older one was revoked before it ran, and gets no view). */
static void model_assign_begin(int i)
{
    tp_t *t = &I.tp[i];
    pthread_mutex_lock(&t->mu);
    expand(t);
    t->open = false;
    int n = t->nw;
    world_t old[MAXW];
    memcpy(old, t->w, sizeof old[0] * (size_t)n);
    t->nw = 0;
    for (int k = 0; k < n; k++)
        for (int c = old[k].ran + 1; c <= old[k].latest; c++) {
            world_t w = old[k];
            w.ran = c;
            w.gate = false;
            add_world(t, &w);
        }
    mlog(t, 'A', 0, 0, 0);
    if (t->nw == 0) {
        viol("partition %d: on_assign without an assignment that added it", i);
        dump_model(i);
        for (int k = 0; k < n; k++)
            add_world(t, &old[k]);
    }
    pthread_mutex_unlock(&t->mu);
}

/* on_assign returned: the copy's first view may pass the gate from here on. */
static void model_assign_end(int i)
{
    tp_t *t = &I.tp[i];
    pthread_mutex_lock(&t->mu);
    expand(t);
    t->open = true;
    pthread_mutex_unlock(&t->mu);
}

/* on_revoke / on_lost: no view of this copy follows (a pulled view that kc_close gave back
 * never reached us: its gate is forgotten). */
static void model_gone(int i)
{
    tp_t *t = &I.tp[i];
    pthread_mutex_lock(&t->mu);
    expand(t);
    t->open = false;
    for (int k = 0; k < t->nw; k++)
        t->w[k].gate = false;
    compact(t);
    mlog(t, 'R', 0, 0, 0);
    pthread_mutex_unlock(&t->mu);
}

static bool starts_at(int64_t first, int64_t at)
{
    return at == POS_ANY || (g_exact ? first == at : first >= at);
}

/* A view reached our code: some world's gate must have read its first offset. */
static void model_view_begin(int i, int64_t first)
{
    tp_t *t = &I.tp[i];
    pthread_mutex_lock(&t->mu);
    expand(t);
    t->open = false;
    mlog(t, 'V', 0, first, 0);
    int n = 0;
    bool inflight = true;
    for (int k = 0; k < t->nw; k++) {
        world_t w = t->w[k];
        if (w.gate && starts_at(first, w.vfirst)) {
            inflight = inflight && w.over;
            t->w[n++] = w;
        }
    }
    if (n == 0) {
        char allowed[256] = "";
        size_t len = 0;
        for (int k = 0; k < t->nw && len + 24 < sizeof allowed; k++)
            if (t->w[k].gate)
                len += (size_t)snprintf(allowed + len, sizeof allowed - len, " %" PRId64,
                                        t->w[k].vfirst);
        viol("partition %d: view starts at %" PRId64 ", where no possible position is (%s )", i,
             first, allowed);
        dump_model(i);
        /* go on from what was seen, so one fault is reported once */
        for (int k = 0; k < t->nw; k++) {
            world_t w = t->w[k];
            if (!w.gate && w.ran == w.latest) {
                w.gate = true;
                w.over = false;
                w.vfirst = first;
                t->w[n++] = w;
            }
        }
        inflight = false;
    }
    t->nw = n;
    compact(t);
    if (inflight)
        atomic_fetch_add(&I.inflight, 1);
    pthread_mutex_unlock(&t->mu);
}

/* The view's callback returns: the next one continues at `next` unless a change took effect
 * after its gate. */
static void model_view_end(int i, int64_t next, kc_cb_result_t res)
{
    tp_t *t = &I.tp[i];
    pthread_mutex_lock(&t->mu);
    expand(t);
    for (int k = 0; k < t->nw; k++) {
        world_t *w = &t->w[k];
        if (!w->over)
            w->pos = next;
        w->gate = false;
        w->over = false;
    }
    compact(t);
    t->open = true;
    mlog(t, 'W', 0, next, res);
    pthread_mutex_unlock(&t->mu);
}

static void raise_to(_Atomic int64_t *a, int64_t v)
{
    int64_t cur = atomic_load(a);
    while (v > cur && !atomic_compare_exchange_weak(a, &cur, v))
        ;
}

static int pidx(const kc_part_t *p)
{
    if (strcmp(p->topic, g_topic) != 0 || p->partition < 0 || p->partition >= g_np) {
        viol("callback for an unknown partition %s[%d]", p->topic, p->partition);
        return -1;
    }
    return p->partition;
}

/* ---- callbacks ------------------------------------------------------------------------------ */

static void cb_enter(tp_t *t, int i, const char *what)
{
    if (atomic_fetch_add(&t->in_cb, 1) != 0)
        viol("partition %d: %s while another callback of it runs", i, what);
}

static void cb_leave(tp_t *t)
{
    atomic_fetch_sub(&t->in_cb, 1);
}

static void cb_sleep(void)
{
    int r = cb_rnd(100);
    if (r < 60)
        return;
    sleep_ms(r < 98 ? cb_rnd(6) : 20);
}

static void on_assign(void *o, kc_part_t *p)
{
    (void)o;
    int i = pidx(p);
    if (i < 0)
        return;
    tp_t *t = &I.tp[i];
    cb_enter(t, i, "on_assign");
    if (atomic_fetch_add(&t->live, 1) != 0)
        viol("partition %d: on_assign while an older copy is live (two copies)", i);
    if (p->app)
        viol("partition %d: a new copy's kc_part_t carries app %p", i, p->app);
    p->app = t;
    atomic_store(&t->ending, 0);
    atomic_store(&t->last_next, -1);
    model_assign_begin(i);
    cb_sleep();
    model_assign_end(i);
    cb_leave(t);
}

static void on_gone(kc_part_t *p, const char *what)
{
    int i = pidx(p);
    if (i < 0)
        return;
    tp_t *t = &I.tp[i];
    cb_enter(t, i, what);
    if (p->app != t)
        viol("partition %d: %s for a copy without on_assign", i, what);
    if (atomic_exchange(&t->ending, 1))
        viol("partition %d: a second %s for one copy", i, what);
    model_gone(i);
    if (I.manual_store && I.group && cb_rnd(2)) {
        /* a store from on_revoke counts for the final commit: bound it first */
        int64_t n = atomic_load(&t->last_next);
        if (n >= 0) {
            raise_to(&t->allowed, n);
            kc_store_offset(I.c, p->topic, p->partition, n, NULL);
        }
    }
    cb_sleep();
    if (atomic_fetch_sub(&t->live, 1) != 1)
        viol("partition %d: %s without a live copy", i, what);
    cb_leave(t);
}

static void on_revoke(void *o, kc_part_t *p)
{
    (void)o;
    on_gone(p, "on_revoke");
}

static void on_lost(void *o, kc_part_t *p)
{
    (void)o;
    on_gone(p, "on_lost");
}

/* The model's self-check, before the first iteration: it must reject what the contracts
 * forbid, not only accept what the library does. Each case is a script of observed events on
 * partition 0: "+N" an assignment adding it at N ("+*": unknown start), "-" one revoking it,
 * "sN" a seek to N ("sN!": refused), "SN" a seek begun but not returned, "E" that seek
 * returned, "A" on_assign, "R" on_revoke, "vF" a view starting at F, "wN" its end continuing
 * at N, "vF:N" both. */
static const struct {
    const char *script;
    bool fails;
    const char *what;
} model_cases[] = {
    {"+0 A v0:20 v20:40", false, "a view continues the last one"},
    {"+0 A v0:20 v25", true, "records skipped"},
    {"+0 A v0:20 v10", true, "records delivered again without a seek"},
    {"+0 A v0:20 v40:60 v20", true, "out of order"},
    {"+0 A s500 v0:20", false, "a copy's first view passed the gate before a seek (pull)"},
    {"+0 A s500 v0:20 v20", true, "a second view from before a seek"},
    {"+0 A s500 v0:20 v500", false, "the view after it starts at the seek"},
    {"+0 A v0:20 s500 v20:40 v500", false, "one in-flight view, then the seek"},
    {"+0 A v0 s500 w20 v20", true, "a seek during a view voids its continuation"},
    {"+0 A v0 s500 w20 v500", false, "after a seek during a view, its target"},
    {"+0 A v0 S500 w20 v20:40 E v40", false, "a seek in progress takes effect at any moment"},
    {"+0 A v0 S500 w20 v20:40 E v40:60 v60", true, "but only once"},
    {"+0 A v0:20 s500! v500", true, "a refused seek moves nothing"},
    {"+0 A v0:20 s500! v20", false, "a refused seek moves nothing (continues)"},
    {"+0 A v0:20 s595 - R +307 A v595", true, "a new copy starts at the old copy's seek"},
    {"+0 A v0:20 s595 - R +307 A v307", false, "a new copy starts at its own start"},
    {"+0 A s595 - +307 v595:600 R A v307", false, "the old copy's in-flight view after a re-add"},
    {"+0 A s595 - +307 v595:600 R A v600", true, "a new copy continues the old one"},
    {"+0 A v0:20 - +307 v307", true, "the old copy delivers the new copy's records"},
    {"+0 A v0:20 - v20:40", false, "an in-flight view after the revocation returned"},
    {"+0 A v0:20 - v20:40 v40", true, "a view of a revoked copy that passed the gate after it"},
    {"+0 - +50 A v50", false, "only the newest copy delivers"},
    {"+0 - +50 A R A", false, "a copy revoked before it ran may still run on_assign"},
    {"+0 - +50 A v0", true, "but delivers nothing"},
    {"+0 - +50 A R A R A", true, "one on_assign per copy"},
    {"+* A v1234:1240 v1240", false, "an unknown start allows any first view"},
    {"v0", true, "a view before any assignment"},
};

static int run_model_case(const char *script)
{
    mutexes(false);
    memset(&I, 0, sizeof I);
    mutexes(true);
    I.tp[0].w[0] = (world_t){.pos = POS_NONE, .applied = true};
    I.tp[0].nw = 1;
    uint64_t n = 0;
    for (const char *c = script; *c;) {
        char *end, op = *c++;
        switch (op) {
        case '+':
            if (*c == '*') {
                c++;
                model_change_begin(0, ++n, 1, ACT_ADD, POS_ANY);
            } else {
                model_change_begin(0, ++n, 1, ACT_ADD, strtoll(c, &end, 10));
                c = end;
            }
            model_change_end(0, true);
            break;
        case '-':
            model_change_begin(0, ++n, 3, ACT_GONE, POS_NONE);
            model_change_end(0, true);
            break;
        case 's':
        case 'S':
            model_change_begin(0, ++n, 4, ACT_SEEK, strtoll(c, &end, 10));
            c = end;
            if (op == 'S')
                break;
            model_change_end(0, *c != '!');
            c += *c == '!';
            break;
        case 'E':
            model_change_end(0, true);
            break;
        case 'A':
            model_assign_begin(0);
            model_assign_end(0);
            break;
        case 'R':
            model_gone(0);
            break;
        case 'v':
            model_view_begin(0, strtoll(c, &end, 10));
            c = end;
            if (*c == ':') {
                model_view_end(0, strtoll(c + 1, &end, 10), KC_CB_CONTINUE);
                c = end;
            }
            break;
        case 'w':
            model_view_end(0, strtoll(c, &end, 10), KC_CB_CONTINUE);
            c = end;
            break;
        default:
            break;
        }
    }
    return atomic_load(&I.violations);
}

static void model_selfcheck(void)
{
    bool exact = g_exact;
    g_exact = true;
    g_quiet = true;
    mutexes(true); /* I is still zero: nothing to destroy */
    size_t bad = 0;
    for (size_t k = 0; k < sizeof model_cases / sizeof model_cases[0]; k++) {
        bool failed = run_model_case(model_cases[k].script) > 0;
        if (failed != model_cases[k].fails) {
            printf("MODEL: \"%s\" (%s) %s\n", model_cases[k].script, model_cases[k].what,
                   failed ? "is rejected" : "is accepted");
            bad++;
        }
    }
    g_quiet = false;
    g_exact = exact;
    mutexes(false);
    memset(&I, 0, sizeof I);
    mutexes(true);
    printf("# model self-check: %zu cases, %zu wrong\n", sizeof model_cases / sizeof model_cases[0],
           bad);
    fflush(stdout);
    if (bad)
        fail_msg("the delivery-order model is wrong in %zu case(s)", bad);
}

/* Walks the view's records (checking their order) and returns the offset after the last. */
static int64_t walk(kc_records_t *b, int i, int64_t first, bool partial)
{
    int64_t prev = first - 1;
    const kc_record_t *r;
    int n = 0;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        if (g_exact ? off != prev + 1 : off <= prev)
            viol("partition %d: record %" PRId64 " after %" PRId64 " in one view", i, off, prev);
        prev = off;
        n++;
        if (partial && n >= 3)
            break;
    }
    atomic_fetch_add(&I.records, n);
    return kc_records_next_offset(b);
}

static kc_cb_result_t pick_result(void)
{
    int r = cb_rnd(100);
    return r < 65 ? KC_CB_CONTINUE : r < 75 ? KC_CB_PAUSE : r < 95 ? KC_CB_RETRY : KC_CB_STOP;
}

/* One view, pushed or pulled: the checks, the work, the result. */
static kc_cb_result_t handle_view(kc_part_t *p, kc_records_t *b, bool pulled)
{
    int i = pidx(p);
    if (i < 0)
        return KC_CB_CONTINUE;
    tp_t *t = &I.tp[i];
    cb_enter(t, i, pulled ? "a pulled view" : "on_records");
    atomic_fetch_add(&I.views, 1);
    if (p->app != t || !atomic_load(&t->live))
        viol("partition %d: records outside a live copy", i);
    if (atomic_load(&t->ending))
        viol("partition %d: records after the copy's on_revoke / on_lost started", i);
    int64_t first = kc_records_first_offset(b);
    model_view_begin(i, first);
    kc_cb_result_t res = pick_result();
    bool done = res == KC_CB_CONTINUE || res == KC_CB_PAUSE;
    int64_t end = walk(b, i, first, !done && cb_rnd(2));
    cb_sleep();
    if (done) {
        if (I.manual_store) {
            if (cb_rnd(4)) { /* store after processing, bounded first */
                raise_to(&t->allowed, end);
                kc_store_offset(I.c, p->topic, p->partition, end, NULL);
            }
        } else {
            raise_to(&t->allowed, end); /* committable moves there once we return */
        }
    }
    if (!pulled && cb_rnd(20) == 0) {
        int64_t pos;
        kc_position(I.c, p->topic, p->partition, &pos, NULL);
    }
    if (!pulled && I.group && cb_rnd(30) == 0)
        kc_commit_async(I.c, NULL, 0, NULL, NULL, NULL);
    atomic_store(&t->last_next, done ? end : first);
    model_view_end(i, done ? end : first, res);
    cb_leave(t);
    return res;
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    return handle_view(p, b, false);
}

/* ---- app threads ---------------------------------------------------------------------------- */

/* A position change of partitions `mask`, each with its fixed start (or -1), around `call`. */
typedef struct change {
    int op; /* 1 assign, 2 incremental, 3 unassign, 4 seek + kind */
    unsigned mask;
    int act[MAXP];         /* ACT_SEEK, ACT_ADD or ACT_GONE */
    int64_t start[MAXP];   /* where delivery must start, POS_ANY: not known */
    bool positioned[MAXP]; /* an explicit offset: the committable offset goes there */
} change_t;

static void chg_begin(const change_t *ch)
{
    for (int i = 0; i < g_np; i++) {
        if (!(ch->mask & (1u << i)))
            continue;
        tp_t *t = &I.tp[i];
        uint64_t k = atomic_load(&t->chg_begin) + 1;
        if (ch->positioned[i] && !I.manual_store)
            raise_to(&t->allowed, ch->start[i]); /* a position: committable goes there */
        model_change_begin(i, k, ch->op, ch->act[i], ch->start[i]);
        atomic_store(&t->chg_begin, k);
    }
}

static void chg_end(const change_t *ch, bool ok)
{
    for (int i = 0; i < g_np; i++) {
        if (!(ch->mask & (1u << i)))
            continue;
        tp_t *t = &I.tp[i];
        model_change_end(i, ok);
        atomic_store(&t->chg_end, atomic_load(&t->chg_begin));
    }
}

static int64_t rand_offset(uint64_t *s, int i)
{
    int64_t span = g_high[i] - g_low[i];
    return span > 0 ? g_low[i] + (int64_t)(splitmix(s) % (uint64_t)span) : g_low[i];
}

/* Where delivery starts for an assign offset or a seek to the log's ends: exact on the memory
 * broker, whose logs never move; on a real cluster only an explicit offset is known. An added
 * KC_OFFSET_STORED without group.id is auto.offset.reset (earliest); with one, the committed
 * offset, which this model does not follow. */
static int64_t known_start(int i, int64_t off)
{
    if (off >= 0)
        return off;
    if (!g_exact)
        return POS_ANY;
    return off == KC_OFFSET_BEGINNING            ? g_low[i]
           : off == KC_OFFSET_END                ? g_high[i]
           : off == KC_OFFSET_STORED && !I.group ? g_low[i]
                                                 : POS_ANY;
}

static kc_err_t do_assign(uint64_t *s, int kind) /* 0 assign, 1 incremental, 2 unassign */
{
    kc_topic_partition_t tps[MAXP];
    size_t n = 0;
    change_t ch = {.op = 1 + kind};
    unsigned want = 0;
    for (int i = 0; i < g_np; i++) {
        if (kind == 2 || rnd(s, 2) == 0)
            continue;
        int r = rnd(s, 10);
        int64_t off = r < 4   ? KC_OFFSET_STORED
                      : r < 6 ? KC_OFFSET_BEGINNING
                      : r < 7 ? KC_OFFSET_END
                              : rand_offset(s, i);
        tps[n++] = (kc_topic_partition_t){g_topic, i, off};
        want |= 1u << i;
    }
    if (kind != 2 && n == 0)
        return KC_OK;
    pthread_mutex_lock(&I.pos_mu);
    unsigned had = I.assigned;
    for (size_t k = 0; k < n; k++) {
        int i = tps[k].partition;
        bool held = had & (1u << i);
        int64_t off = tps[k].offset;
        if (held && (kind == 1 || off == KC_OFFSET_STORED))
            continue; /* left as it is */
        ch.mask |= 1u << i;
        ch.act[i] = held ? ACT_SEEK : ACT_ADD;
        ch.start[i] = known_start(i, off);
        ch.positioned[i] = off >= 0;
    }
    unsigned gone = kind == 0 ? had & ~want : kind == 2 ? had : 0;
    for (int i = 0; i < g_np; i++)
        if (gone & (1u << i)) {
            ch.mask |= 1u << i;
            ch.act[i] = ACT_GONE;
            ch.start[i] = POS_NONE;
        }
    chg_begin(&ch);
    kc_err_t rc = kind == 0   ? kc_assign(I.c, tps, n, NULL)
                  : kind == 1 ? kc_incremental_assign(I.c, tps, n, NULL)
                              : kc_unassign(I.c, NULL);
    if (rc == KC_OK)
        I.assigned = kind == 0 ? want : kind == 1 ? had | want : 0;
    chg_end(&ch, rc == KC_OK);
    pthread_mutex_unlock(&I.pos_mu);
    if (rc != KC_OK && !atomic_load(&I.closing))
        viol("%s: %s",
             kind == 0   ? "kc_assign"
             : kind == 1 ? "kc_incremental_assign"
                         : "kc_unassign",
             kc_err_name(rc));
    return rc;
}

static kc_err_t do_seek(uint64_t *s)
{
    int i = rnd(s, g_np);
    int k = rnd(s, 10);
    kc_seek_kind_t kind = k < 6   ? KC_SEEK_OFFSET
                          : k < 7 ? KC_SEEK_BEGINNING
                          : k < 8 ? KC_SEEK_END
                                  : KC_SEEK_TIMESTAMP;
    int64_t value = kind == KC_SEEK_OFFSET      ? rand_offset(s, i)
                    : kind == KC_SEEK_TIMESTAMP ? (rnd(s, 2) ? 0 : (int64_t)time(NULL) * 2000)
                                                : 0;
    change_t ch = {.op = 4 + (int)kind, .mask = 1u << i};
    ch.start[i] = kind == KC_SEEK_OFFSET      ? value
                  : kind == KC_SEEK_BEGINNING ? known_start(i, KC_OFFSET_BEGINNING)
                  : kind == KC_SEEK_END       ? known_start(i, KC_OFFSET_END)
                  : !g_exact                  ? POS_ANY
                  : value > 1767225600000 ? g_high[i] /* the memory broker: after every record */
                                          : g_low[i];
    ch.positioned[i] = kind == KC_SEEK_OFFSET;
    pthread_mutex_lock(&I.pos_mu);
    bool held = I.assigned & (1u << i);
    chg_begin(&ch);
    kc_err_t rc = kc_seek(I.c, g_topic, i, kind, value, NULL);
    chg_end(&ch, rc == KC_OK);
    pthread_mutex_unlock(&I.pos_mu);
    if (held && rc != KC_OK && !atomic_load(&I.closing))
        viol("kc_seek of assigned partition %d: %s", i, kc_err_name(rc));
    return held ? rc : KC_OK;
}

static void some_parts(uint64_t *s, kc_topic_partition_t *tps, size_t *n)
{
    *n = 0;
    for (int i = 0; i < g_np; i++)
        if (rnd(s, 3) == 0)
            tps[(*n)++] = (kc_topic_partition_t){g_topic, i, 0};
}

static void do_poll(uint64_t *s)
{
    kc_records_t *b = NULL;
    kc_err_t rc = kc_poll(I.c, rnd(s, 20), &b, NULL);
    if (rc != KC_OK || !b)
        return;
    atomic_fetch_add(&I.polls, 1);
    kc_part_t *p = (kc_part_t *)kc_records_partition(b);
    kc_cb_result_t res = handle_view(p, b, true);
    kc_records_release(I.c, b, res);
}

static void do_close(int id)
{
    uint64_t cs = I.seed + (uint64_t)id;
    int r = rnd(&cs, 4);
    atomic_store(&I.closing, 1);
    int timeout = r == 0 ? 0 : r == 1 ? 300 : 5000;
    kc_error_t e = {0};
    int64_t t0 = now_ms();
    kc_err_t rc = kc_close(I.c, timeout, &e);
    int64_t took = now_ms() - t0;
    if (took > timeout + 1000)
        viol("kc_close(%d) took %" PRId64 " ms", timeout, took);
    if (rc == KC_OK) {
        atomic_fetch_add(&I.closes_ok, 1);
    } else if (rc == KC_ERR_TIMEOUT) {
        atomic_fetch_add(&I.closes_timeout, 1);
    } else {
        viol("kc_close(%d): %s (%s)", timeout, kc_err_name(rc), e.msg);
    }
    atomic_store(&I.stop, 1);
}

typedef struct app {
    int id;
    uint64_t rng;
} app_t;

static void *app_main(void *arg)
{
    app_t *a = arg;
    uint64_t *s = &a->rng;
    bool closer = a->id < I.nclosers;
    while (!atomic_load(&I.stop)) {
        if (closer && now_ms() >= I.close_at) {
            do_close(a->id);
            break;
        }
        kc_err_t rc = KC_OK;
        kc_topic_partition_t tps[MAXP];
        size_t n;
        int op = rnd(s, I.pull ? 120 : 100);
        if (op < 6) {
            rc = do_assign(s, 0);
        } else if (op < 10) {
            rc = do_assign(s, 1);
        } else if (op < 11) {
            rc = do_assign(s, 2);
        } else if (op < 30) {
            rc = do_seek(s);
        } else if (op < 38) {
            some_parts(s, tps, &n);
            rc = n ? kc_pause(I.c, tps, n, NULL) : KC_OK;
        } else if (op < 55) {
            some_parts(s, tps, &n);
            rc = n ? kc_resume(I.c, tps, n, NULL) : KC_OK;
        } else if (op < 60) {
            if (I.group && rnd(s, 2)) {
                some_parts(s, tps, &n);
                size_t m = 0;
                for (size_t k = 0; k < n; k++) {
                    int64_t v = atomic_load(&I.tp[tps[k].partition].allowed);
                    if (v >= 0)
                        tps[m++] = (kc_topic_partition_t){g_topic, tps[k].partition, v};
                }
                rc = m ? kc_commit(I.c, tps, m, 2000, NULL) : KC_OK;
            } else {
                rc = kc_commit(I.c, NULL, 0, 2000, NULL);
            }
        } else if (op < 65) {
            rc = kc_commit_async(I.c, NULL, 0, NULL, NULL, NULL);
        } else if (op < 70) {
            if (I.manual_store) {
                /* store what is already bounded: never past what was finished or stored */
                int i = rnd(s, g_np);
                int64_t v = atomic_load(&I.tp[i].allowed);
                if (v >= 0)
                    rc = kc_store_offset(I.c, g_topic, i, v, NULL);
            }
        } else if (op < 78) {
            int64_t pos;
            rc = kc_position(I.c, g_topic, rnd(s, g_np), &pos, NULL);
        } else if (op < 100) {
            sleep_ms(rnd(s, 4));
        } else {
            do_poll(s);
        }
        if (rc == KC_ERR_CLOSED)
            break;
    }
    return NULL;
}

/* ---- one iteration -------------------------------------------------------------------------- */

static kc_consumer_t *new_consumer(const char *group, const kc_callbacks_t *cbs,
                                   const char *const *kv)
{
    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", g_bs);
    kc_test_conf_set(conf, "fetch.max.wait.ms", "50");
    if (group)
        kc_test_conf_set(conf, "group.id", group);
    for (; kv && kv[0]; kv += 2)
        kc_test_conf_set(conf, kv[0], kv[1]);
    kc_consumer_t *c;
    kc_error_t e;
    if (kc_consumer_new(conf, cbs, &c, &e) != KC_OK)
        fail_msg("kc_consumer_new: %s", e.msg);
    return c;
}

/* The group's committed offsets, read by a fresh consumer, against the bound. */
static void check_committed(void)
{
    kc_callbacks_t cbs = {0};
    const char *kv[] = {"enable.auto.commit", "false", NULL};
    kc_consumer_t *c = new_consumer(I.group_id, &cbs, kv);
    kc_topic_partition_t tps[MAXP];
    for (int i = 0; i < g_np; i++)
        tps[i] = (kc_topic_partition_t){g_topic, i, 0};
    kc_error_t e;
    kc_err_t rc = kc_committed(c, tps, (size_t)g_np, 5000, &e);
    if (rc != KC_OK)
        viol("kc_committed: %s", e.msg);
    for (int i = 0; rc == KC_OK && i < g_np; i++) {
        int64_t bound = atomic_load(&I.tp[i].allowed);
        if (tps[i].offset != KC_OFFSET_INVALID && tps[i].offset > bound)
            viol("partition %d: committed %" PRId64 " passes what was %s (%" PRId64 ")", i,
                 tps[i].offset, I.manual_store ? "stored" : "finished or positioned", bound);
    }
    kc_close(c, 1000, NULL);
    kc_destroy(c);
}

static void run_iteration(uint64_t seed)
{
    uint64_t s = seed;
    mutexes(false);
    memset(&I, 0, sizeof I);
    mutexes(true);
    I.seed = seed;
    atomic_store(&g_cur_seed, seed);
    atomic_store(&g_cb_seed, splitmix(&s));
    atomic_fetch_add(&g_iter_no, 1);
    I.pull = rnd(&s, 3) == 0;
    I.group = rnd(&s, 4) != 0;
    I.auto_commit = I.group && rnd(&s, 3) != 0;
    I.manual_store = I.group && rnd(&s, 2) == 0;
    snprintf(I.group_id, sizeof I.group_id, "torture-%d-%" PRIu64, (int)getpid(), seed);
    for (int i = 0; i < MAXP; i++) {
        atomic_store(&I.tp[i].allowed, -1);
        atomic_store(&I.tp[i].last_next, -1);
        /* before the first kc_assign: no copy */
        I.tp[i].w[0] = (world_t){.pos = POS_NONE, .applied = true};
        I.tp[i].nw = 1;
    }
    char workers[8], maxrec[8], interval[16];
    snprintf(workers, sizeof workers, "%d", 1 + rnd(&s, 4));
    snprintf(maxrec, sizeof maxrec, "%d", 1 + rnd(&s, 30));
    snprintf(interval, sizeof interval, "%d", 20 + rnd(&s, 300));
    const char *kv[16] = {"worker.threads",    workers,   "callback.batch.max.records", maxrec,
                          "auto.offset.reset", "earliest"};
    int k = 6;
    if (I.group) {
        kv[k++] = "enable.auto.commit";
        kv[k++] = I.auto_commit ? "true" : "false";
        kv[k++] = "auto.commit.interval.ms";
        kv[k++] = interval;
        if (I.manual_store) {
            kv[k++] = "enable.auto.offset.store";
            kv[k++] = "false";
        }
    }
    kc_callbacks_t cbs = {.on_assign = on_assign,
                          .on_records = I.pull ? NULL : on_records,
                          .on_revoke = on_revoke,
                          .on_lost = on_lost};
    I.c = new_consumer(I.group ? I.group_id : NULL, &cbs, kv);
    I.nclosers = rnd(&s, 5) == 0 ? 2 : 1;
    I.close_at = now_ms() + 20 + rnd(&s, 400);
    atomic_store(&g_deadline, now_ms() + ITER_LIMIT_S * 1000);
    /* start with everything assigned from the beginning */
    change_t ch = {.op = 1, .mask = (1u << g_np) - 1};
    kc_topic_partition_t tps[MAXP];
    for (int i = 0; i < g_np; i++) {
        tps[i] = (kc_topic_partition_t){g_topic, i, KC_OFFSET_BEGINNING};
        ch.act[i] = ACT_ADD;
        ch.start[i] = known_start(i, KC_OFFSET_BEGINNING);
    }
    pthread_mutex_lock(&I.pos_mu);
    chg_begin(&ch);
    kc_err_t rc = kc_assign(I.c, tps, (size_t)g_np, NULL);
    if (rc == KC_OK)
        I.assigned = (unsigned)ch.mask;
    chg_end(&ch, rc == KC_OK);
    pthread_mutex_unlock(&I.pos_mu);
    if (rc != KC_OK)
        viol("the first kc_assign: %s", kc_err_name(rc));
    pthread_t th[APP_THREADS];
    app_t apps[APP_THREADS];
    for (int i = 0; i < APP_THREADS; i++) {
        apps[i] = (app_t){i, splitmix(&s)};
        pthread_create(&th[i], NULL, app_main, &apps[i]);
    }
    for (int i = 0; i < APP_THREADS; i++)
        pthread_join(th[i], NULL);
    /* Every closer returned KC_OK: the close ran to its end, so every copy's on_revoke ran.
     * (A closer that waited for another's close returns KC_OK once that close is over, even
     * one cut short by its own timeout: then only the KC_ERR_TIMEOUT is a promise.) */
    if (!atomic_load(&I.closes_timeout))
        for (int i = 0; i < g_np; i++)
            if (atomic_load(&I.tp[i].live))
                viol("partition %d: a copy still live after kc_close returned KC_OK", i);
    kc_destroy(I.c); /* every app thread stopped calling the API */
    I.c = NULL;
    for (int i = 0; i < g_np; i++)
        if (atomic_load(&I.tp[i].in_cb))
            viol("partition %d: a callback still running after kc_destroy", i);
    if (I.group)
        check_committed();
    atomic_store(&g_deadline, 0);
    g_total_views += atomic_load(&I.views);
    g_total_inflight += atomic_load(&I.inflight);
}

/* ---- watchdog, setup, main ------------------------------------------------------------------ */

static void *watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        sleep_ms(200);
        int64_t d = atomic_load(&g_deadline);
        if (d > 0 && now_ms() > d) {
            fprintf(stdout, "HANG: iteration with seed %" PRIu64 " ran past %d s; aborting\n",
                    atomic_load(&g_cur_seed), ITER_LIMIT_S);
            fflush(stdout);
            abort();
        }
    }
    return NULL;
}

static int setup(void **state)
{
    (void)state;
    const char *bs = getenv("KC_TORTURE_BOOTSTRAP");
    if (bs && *bs) {
        snprintf(g_bs, sizeof g_bs, "%s", bs);
        const char *t = getenv("KC_TORTURE_TOPIC");
        g_topic = t && *t ? t : "kc-torture";
        g_exact = false;
        return 0;
    }
    char recs[16];
    snprintf(recs, sizeof recs, "%d", MB_RECS);
    const char *args[] = {
        "--topic", g_topic,         "--partitions", "8",      "--records", recs, "--batch-records",
        "20",      "--compression", "none",         "--size", "16",        NULL};
    g_pid = kc_testkit_spawn("kc-memory-broker", args, g_bs, sizeof g_bs);
    return g_pid > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return g_pid > 0 ? kc_testkit_stop(g_pid) : 0;
}

/* The partitions and their offsets: fixed on the memory broker, asked on a real cluster. */
static void learn_topic(void)
{
    if (g_exact) {
        for (int i = 0; i < MAXP; i++)
            g_low[i] = 0, g_high[i] = MB_RECS;
        return;
    }
    kc_callbacks_t cbs = {0};
    kc_consumer_t *c = new_consumer(NULL, &cbs, NULL);
    int32_t n = 0;
    kc_error_t e;
    if (kc_topic_partitions(c, g_topic, &n, 10000, &e) != KC_OK)
        fail_msg("topic %s: %s", g_topic, e.msg);
    g_np = n < MAXP ? (int)n : MAXP;
    for (int i = 0; i < g_np; i++)
        if (kc_query_watermarks(c, g_topic, i, &g_low[i], &g_high[i], 10000, &e) != KC_OK)
            fail_msg("watermarks of %s[%d]: %s", g_topic, i, e.msg);
    kc_close(c, 2000, NULL);
    kc_destroy(c);
}

static void torture(void **state)
{
    (void)state;
    const char *se = getenv("KC_TORTURE_SEED");
    const char *ie = getenv("KC_TORTURE_ITERS");
    uint64_t base = se && *se ? strtoull(se, NULL, 0) : (uint64_t)time(NULL) * 1000003u;
    long iters = ie && *ie ? strtol(ie, NULL, 0) : 60;
    printf("# lifecycle torture: base seed %" PRIu64 ", %ld iterations, %s\n", base, iters,
           g_exact ? "memory broker" : g_bs);
    fflush(stdout);
    model_selfcheck();
    learn_topic();
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog, NULL);
    pthread_detach(wd);
    int64_t t0 = now_ms();
    long failed = 0;
    for (long it = 0; it < iters; it++) {
        uint64_t seed = base + (uint64_t)it * 0x9e3779b97f4a7c15ULL;
        run_iteration(seed);
        if (atomic_load(&I.violations)) {
            printf("FAILED: iteration %ld, seed %" PRIu64 " (KC_TORTURE_SEED=%" PRIu64
                   " KC_TORTURE_ITERS=1 replays its choices): %d violation(s)\n",
                   it, seed, seed, atomic_load(&I.violations));
            failed++;
            break;
        }
        if (iters <= 100 || it % 100 == 99)
            printf("# iteration %ld seed %" PRIu64 ": %s %s store %s, %ld views (%ld pulled), "
                   "%ld records, closes ok %ld timed out %ld, in-flight views %ld\n",
                   it, seed, I.pull ? "pull" : "push", I.manual_store ? "manual" : "auto",
                   !I.group        ? "no group"
                   : I.auto_commit ? "auto-commit"
                                   : "no auto-commit",
                   atomic_load(&I.views), atomic_load(&I.polls), atomic_load(&I.records),
                   atomic_load(&I.closes_ok), atomic_load(&I.closes_timeout),
                   atomic_load(&I.inflight));
        fflush(stdout);
    }
    printf("# done: %ld iterations in %" PRId64 " ms, %ld views, %ld of them passed the gate "
           "before a change took effect\n",
           iters, now_ms() - t0, g_total_views, g_total_inflight);
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(torture),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
