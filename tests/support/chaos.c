/* The chaos harness: see chaos.h.
 * Owner: the test's main thread; per-record tables and member counters are atomics written by
 * the members' workers; stall figures are atomics written by the sampler thread. */
#include "chaos.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kc_test.h"

#define MAX_PARTS   64
#define MAX_MEMBERS 64
#define MAX_ALLOWED 8

typedef struct part {
    _Atomic uint16_t *count; /* deliveries per offset */
    _Atomic int32_t *tag;    /* (member << 16 | assignment number) of the last delivery */
    _Atomic int64_t end;     /* last known end offset (sampler's query) */
    _Atomic int64_t frontier, stall_ms, max_stall_ms;
    int64_t moved_at; /* sampler only: when the frontier last moved (or records appeared) */
    /* Per member, its span over this partition in its current assignment: when its first record
     * callback started (0: none yet, or ended by on_revoke/on_lost) and when a callback of it
     * last started or ended. Spans of two members must not overlap: the old owner's last
     * callback ends before the new owner's first begins (overlap(), on every callback start and
     * end). */
    _Atomic int64_t owner_since[MAX_MEMBERS], last_active[MAX_MEMBERS];
} part_t;

typedef struct skip {
    int32_t p;
    int64_t lo, hi;
} skip_t;

struct kc_chaos_member {
    kc_chaos_t *ch;
    int idx;
    kc_consumer_t *c;
    _Atomic int owned, lost, assigns, slow_ms, slow_left;
    _Atomic long rebalances, records;
    pthread_mutex_t mu;
    char group_json[1024]; /* the "group" part of the last stats event, for failure reports */
};

/* Per assigned partition, what the callbacks need; kc_part_t.app points here. */
typedef struct assignment {
    kc_chaos_member_t *m;
    int32_t tag;
    bool started;
} assignment_t;

struct kc_chaos {
    char fault[64], topic[128];
    int nparts;
    long cap;
    part_t p[MAX_PARTS];
    kc_chaos_member_t *members[MAX_MEMBERS];
    _Atomic int nmembers;
    _Atomic long delivered, beyond, bad_dups, dups_total;
    _Atomic long dup_pair[4][4]; /* [earlier member][later member] of duplicate deliveries */
    _Atomic long errors_allowed, errors_bad;
    /* Exclusivity: record callbacks of one partition on two members at once (part_t.owner_since),
     * and the members' self-fence reports. Both are printed; a suite that requires exclusivity
     * (kc_chaos_require_exclusive) fails on an overlap, and one that does not allow self-fences
     * (the default) fails on a self-fence. */
    _Atomic long overlaps, self_fences;
    bool exclusive, self_fence_ok;
    kc_err_t allowed[MAX_ALLOWED];
    int nallowed;
    char first_bad[512];
    /* Batches reported corrupt (KC_ERR_CRC names "topic[p] offsets A..B"): the contract skips
     * them, so their offsets count as skipped, not lost. */
    pthread_mutex_t mu;
    skip_t skipped[256];
    int nskipped;
    _Atomic int first_bad_set;
    kc_consumer_t *probe; /* watermark queries, straight to the brokers */
    pthread_t sampler;
    _Atomic int stop;
};

kc_chaos_scale_t kc_chaos_scale(void)
{
    const char *s = getenv("KC_CHAOS_SCALE");
    if (s && !strcmp(s, "soak"))
        return KC_CHAOS_SOAK;
    if (s && !strcmp(s, "long"))
        return KC_CHAOS_LONG;
    return KC_CHAOS_SHORT;
}

void kc_chaos_filter(void)
{
    if (getenv("KC_CHAOS_ONLY"))
        cmocka_set_test_filter(getenv("KC_CHAOS_ONLY"));
}

static int64_t kc_chaos_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t kc_chaos_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kc_chaos_cluster(const char *fmt, ...)
{
    char args[512], line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "'%s' %s --dir '%s' >/dev/null 2>&1", kc_test_env("KC_TESTKIT"),
             args, kc_test_env("KC_CLUSTER_DIR"));
    if (system(line) != 0)
        fail_msg("failed: %s", line);
}

static void setc(kc_conf_t *conf, const char *k, const char *v)
{
    kc_error_t e;
    if (kc_conf_set(conf, k, v, &e) != KC_OK)
        fail_msg("conf %s=%s: %s", k, v, e.msg);
}

static bool is_skipped(kc_chaos_t *ch, int32_t p, int64_t o);

/* ---- the sampler: end offsets and stalls ----------------------------------------------------- */

static void sample(kc_chaos_t *ch, int64_t now)
{
    for (int i = 0; i < ch->nparts; i++) {
        part_t *p = &ch->p[i];
        int64_t high = -1;
        kc_error_t e;
        /* A short timeout: during a broker's death the query fails and the last answer holds. */
        if (kc_query_watermarks(ch->probe, ch->topic, i, NULL, &high, 1000, &e) == KC_OK &&
            high > atomic_load(&p->end))
            atomic_store(&p->end, high > ch->cap ? ch->cap : high);
        int64_t f = atomic_load(&p->frontier), end = atomic_load(&p->end);
        while (f < end && (atomic_load(&p->count[f]) > 0 || is_skipped(ch, i, f)))
            f++;
        if (f != atomic_load(&p->frontier) || f >= end) {
            atomic_store(&p->frontier, f);
            p->moved_at = now; /* progress, or nothing waiting: no stall */
        }
        int64_t st = now - p->moved_at;
        atomic_store(&p->stall_ms, st);
        if (st > atomic_load(&p->max_stall_ms))
            atomic_store(&p->max_stall_ms, st);
    }
}

static void *sampler_main(void *arg)
{
    kc_chaos_t *ch = arg;
    while (!atomic_load(&ch->stop)) {
        sample(ch, kc_chaos_now_ms());
        usleep(200 * 1000);
    }
    return NULL;
}

/* ---- topic and producer ---------------------------------------------------------------------- */

kc_chaos_t *kc_chaos_new(const char *fault, int partitions, int replication, long cap)
{
    assert_true(partitions > 0 && partitions <= MAX_PARTS);
    kc_chaos_t *ch = calloc(1, sizeof *ch);
    assert_non_null(ch);
    snprintf(ch->fault, sizeof ch->fault, "%s", fault);
    snprintf(ch->topic, sizeof ch->topic, "kc-chaos-%s-%d-%ld", fault, (int)getpid(),
             (long)time(NULL));
    ch->nparts = partitions;
    ch->cap = cap;
    pthread_mutex_init(&ch->mu, NULL);
    for (int i = 0; i < partitions; i++) {
        ch->p[i].count = calloc((size_t)cap, sizeof *ch->p[i].count);
        ch->p[i].tag = calloc((size_t)cap, sizeof *ch->p[i].tag);
        assert_true(ch->p[i].count && ch->p[i].tag);
    }
    kc_chaos_cluster("topic create %s --partitions %d --replication %d", ch->topic, partitions,
                     replication);
    kc_conf_t *conf = kc_conf_new();
    setc(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"));
    setc(conf, "worker.threads", "1");
    kc_error_t e;
    if (kc_consumer_new(conf, &(kc_callbacks_t){0}, &ch->probe, &e) != KC_OK)
        fail_msg("probe consumer: %s", e.msg);
    int64_t now = kc_chaos_now_ms();
    for (int i = 0; i < partitions; i++)
        ch->p[i].moved_at = now;
    pthread_create(&ch->sampler, NULL, sampler_main, ch);
    return ch;
}

const char *kc_chaos_topic(const kc_chaos_t *ch)
{
    return ch->topic;
}

void kc_chaos_require_exclusive(kc_chaos_t *ch)
{
    ch->exclusive = true;
}

void kc_chaos_allow_self_fence(kc_chaos_t *ch)
{
    ch->self_fence_ok = true;
}

void kc_chaos_allow_error(kc_chaos_t *ch, kc_err_t code)
{
    assert_true(ch->nallowed < MAX_ALLOWED);
    ch->allowed[ch->nallowed++] = code;
}

pid_t kc_chaos_produce_bg(kc_chaos_t *ch, long n, int rate)
{
    char cmd[2048];
    /* ProducerPerformance (acks=all, idempotent by default: a retried send after a broker's
     * death is not written twice, so the log holds each produced record once). */
    snprintf(cmd, sizeof cmd,
             "exec '%s' tool ProducerPerformance --topic %s "
             "--num-records %ld --record-size 100 --throughput %d --producer-props "
             "bootstrap.servers=%s acks=all linger.ms=5 batch.size=16384 "
             "delivery.timeout.ms=300000 --dir '%s' >/dev/null 2>&1",
             kc_test_env("KC_TESTKIT"), ch->topic, n, rate > 0 ? rate : -1,
             kc_test_env("KC_BOOTSTRAP"), kc_test_env("KC_CLUSTER_DIR"));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

int kc_chaos_produce_wait(pid_t pid)
{
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void kc_chaos_produce(kc_chaos_t *ch, long n)
{
    assert_int_equal(kc_chaos_produce_wait(kc_chaos_produce_bg(ch, n, 0)), 0);
}

/* ---- members --------------------------------------------------------------------------------- */

static void bad(kc_chaos_t *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(kc_chaos_t *ch, const char *fmt, ...)
{
    if (atomic_exchange(&ch->first_bad_set, 1))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ch->first_bad, sizeof ch->first_bad, fmt, ap);
    va_end(ap);
}

static void on_assign(void *o, kc_part_t *kp)
{
    kc_chaos_member_t *m = o;
    assignment_t *a = calloc(1, sizeof *a);
    a->m = m;
    a->tag = (int32_t)(m->idx << 16 | (atomic_fetch_add(&m->assigns, 1) & 0xffff));
    kp->app = a;
    atomic_fetch_add(&m->owned, 1);
}

/* Member me is in a callback of partition p at `now`: does another member's span overlap its
 * own (part_t.owner_since)? */
static void overlap(kc_chaos_t *ch, part_t *cp, int me, int p, int64_t now)
{
    int64_t mine = atomic_load(&cp->owner_since[me]);
    for (int j = 0; j < MAX_MEMBERS; j++) {
        int64_t since = j == me ? 0 : atomic_load(&cp->owner_since[j]);
        if (since && since < now && atomic_load(&cp->last_active[j]) > mine) {
            atomic_fetch_add(&ch->overlaps, 1);
            if (ch->exclusive)
                bad(ch, "partition %d: members %d and %d in callbacks of it within %lld ms", p, me,
                    j, (long long)((atomic_load(&cp->last_active[j]) - mine) / 1000000));
            return;
        }
    }
}

static kc_cb_result_t on_records(void *o, kc_part_t *kp, kc_records_t *b)
{
    kc_chaos_member_t *m = o;
    kc_chaos_t *ch = m->ch;
    assignment_t *a = kp->app;
    int32_t tag = a ? a->tag : -1;
    if (!a)
        bad(ch, "on_records of %s/%d without on_assign", kp->topic, (int)kp->partition);
    if (a && !a->started) {
        a->started = true;
        if (getenv("KC_CHAOS_VERBOSE"))
            printf("# member %d: partition %d (assignment %d) starts at offset %lld\n", m->idx,
                   (int)kp->partition, (int)(a->tag & 0xffff),
                   (long long)kc_records_first_offset(b));
    }
    part_t *cp = kp->partition >= 0 && kp->partition < ch->nparts ? &ch->p[kp->partition] : NULL;
    if (cp && a) {
        int64_t now = kc_chaos_now_ns();
        if (!atomic_load(&cp->owner_since[m->idx]))
            atomic_store(&cp->owner_since[m->idx], now);
        atomic_store(&cp->last_active[m->idx], now);
        overlap(ch, cp, m->idx, (int)kp->partition, now);
    }
    const kc_record_t *r;
    long n = 0;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        n++;
        if (kp->partition < 0 || kp->partition >= ch->nparts || off < 0 || off >= ch->cap) {
            atomic_fetch_add(&ch->beyond, 1);
            continue;
        }
        part_t *p = &ch->p[kp->partition];
        if (atomic_fetch_add(&p->count[off], 1) > 0) {
            atomic_fetch_add(&ch->dups_total, 1);
            int32_t prev = atomic_load(&p->tag[off]);
            if (prev >= 0 && (prev >> 16) < 4 && m->idx < 4)
                atomic_fetch_add(&ch->dup_pair[prev >> 16][m->idx], 1);
            /* Same member, same assignment: a redelivery no rebalance explains. */
            if (atomic_load(&p->tag[off]) == tag) {
                atomic_fetch_add(&ch->bad_dups, 1);
                bad(ch, "offset %lld of partition %d delivered twice within one assignment",
                    (long long)off, (int)kp->partition);
            }
        }
        atomic_store(&p->tag[off], tag);
    }
    atomic_fetch_add(&ch->delivered, n);
    atomic_fetch_add(&m->records, n);
    int slow = atomic_load(&m->slow_ms);
    if (slow > 0 && atomic_fetch_sub(&m->slow_left, 1) > 0)
        usleep((useconds_t)slow * 1000);
    if (cp && a) {
        int64_t now = kc_chaos_now_ns();
        atomic_store(&cp->last_active[m->idx], now);
        overlap(ch, cp, m->idx, (int)kp->partition, now);
    }
    return KC_CB_CONTINUE;
}

static void on_gone(void *o, kc_part_t *kp)
{
    kc_chaos_member_t *m = o;
    if (kp->partition >= 0 && kp->partition < m->ch->nparts)
        atomic_store(&m->ch->p[kp->partition].owner_since[m->idx], 0),
            atomic_store(&m->ch->p[kp->partition].last_active[m->idx], 0);
    free(kp->app);
    kp->app = NULL;
    atomic_fetch_sub(&m->owned, 1);
}

static void on_lost(void *o, kc_part_t *kp)
{
    atomic_fetch_add(&((kc_chaos_member_t *)o)->lost, 1);
    on_gone(o, kp);
}

static void on_event(void *o, const kc_event_t *ev)
{
    kc_chaos_member_t *m = o;
    kc_chaos_t *ch = m->ch;
    if (ev->type == KC_EVENT_ERROR && strstr(ev->error->msg, "self-fenced"))
        atomic_fetch_add(&ch->self_fences, 1);
    if (ev->type == KC_EVENT_ERROR) {
        for (int i = 0; i < ch->nallowed; i++)
            if (ev->error->code == ch->allowed[i]) {
                if (atomic_fetch_add(&ch->errors_allowed, 1) < 20)
                    printf("# member %d, allowed error event %s: %s\n", m->idx,
                           kc_err_name(ev->error->code), ev->error->msg);
                const char *at = ev->error->code == KC_ERR_CRC ? strstr(ev->error->msg, "[") : NULL;
                int pn;
                long long lo, hi;
                if (at && sscanf(at, "[%d] offsets %lld..%lld", &pn, &lo, &hi) == 3) {
                    pthread_mutex_lock(&ch->mu);
                    if (ch->nskipped < 256)
                        ch->skipped[ch->nskipped++] = (skip_t){pn, lo, hi};
                    pthread_mutex_unlock(&ch->mu);
                }
                return;
            }
        atomic_fetch_add(&ch->errors_bad, 1);
        bad(ch, "member %d error event %s: %s", m->idx, kc_err_name(ev->error->code),
            ev->error->msg);
    } else if (ev->type == KC_EVENT_STATS) {
        const char *g = strstr(ev->json, "\"rebalances\":");
        if (g)
            atomic_store(&m->rebalances, atol(g + 13));
        const char *gj = strstr(ev->json, "\"group\":");
        if (gj) {
            pthread_mutex_lock(&m->mu);
            snprintf(m->group_json, sizeof m->group_json, "%s", gj);
            pthread_mutex_unlock(&m->mu);
        }
    }
}

kc_chaos_member_t *kc_chaos_member_new(kc_chaos_t *ch, const char *bootstrap, const char *group,
                                       const char *conf_s)
{
    int idx = atomic_fetch_add(&ch->nmembers, 1);
    assert_true(idx < MAX_MEMBERS);
    kc_chaos_member_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->ch = ch;
    m->idx = idx;
    m->rebalances = -1;
    pthread_mutex_init(&m->mu, NULL);
    ch->members[idx] = m;
    kc_conf_t *conf = kc_conf_new();
    setc(conf, "bootstrap.servers", bootstrap);
    setc(conf, "worker.threads", "2");
    setc(conf, "statistics.interval.ms", "500");
    setc(conf, "auto.offset.reset", "earliest");
    if (group) { /* auto-commit needs a group (kc_conf_validate refuses it without one) */
        setc(conf, "group.id", group);
        setc(conf, "enable.auto.commit", "true");
        setc(conf, "auto.commit.interval.ms", "1000");
    }
    char *extra = conf_s ? strdup(conf_s) : NULL, *save = NULL;
    for (char *kv = extra ? strtok_r(extra, ";", &save) : NULL; kv;
         kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        assert_non_null(eq);
        *eq = 0;
        setc(conf, kv, eq + 1);
    }
    free(extra);
    kc_callbacks_t cbs = {.on_assign = on_assign,
                          .on_records = on_records,
                          .on_revoke = on_gone,
                          .on_lost = on_lost,
                          .on_event = on_event,
                          .opaque = m};
    kc_error_t e;
    if (kc_consumer_new(conf, &cbs, &m->c, &e) != KC_OK) {
        kc_conf_destroy(conf); /* still ours on failure */
        fail_msg("kc_consumer_new: %s", e.msg);
    }
    if (group) {
        const char *topics[1] = {ch->topic};
        if (kc_subscribe(m->c, topics, 1, &e) != KC_OK)
            fail_msg("kc_subscribe: %s", e.msg);
    } else {
        kc_topic_partition_t tps[MAX_PARTS];
        for (int i = 0; i < ch->nparts; i++)
            tps[i] = (kc_topic_partition_t){ch->topic, i, KC_OFFSET_BEGINNING};
        if (kc_assign(m->c, tps, (size_t)ch->nparts, &e) != KC_OK)
            fail_msg("kc_assign: %s", e.msg);
    }
    return m;
}

void kc_chaos_member_close(kc_chaos_member_t *m)
{
    if (!m->c)
        return;
    kc_error_t e;
    kc_err_t rc = kc_close(m->c, 10000, &e);
    if (rc != KC_OK)
        fprintf(stderr, "# member %d close: %s (%s)\n", m->idx, kc_err_name(rc), e.msg);
    kc_destroy(m->c);
    m->c = NULL;
}

void kc_chaos_member_set_slow(kc_chaos_member_t *m, int ms, int count)
{
    atomic_store(&m->slow_left, count);
    atomic_store(&m->slow_ms, ms);
}

long kc_chaos_member_rebalances(kc_chaos_member_t *m)
{
    return atomic_load(&m->rebalances);
}

int kc_chaos_member_owned(kc_chaos_member_t *m)
{
    return atomic_load(&m->owned);
}

int kc_chaos_member_lost(kc_chaos_member_t *m)
{
    return atomic_load(&m->lost);
}

void kc_chaos_member_print_group(kc_chaos_member_t *m)
{
    pthread_mutex_lock(&m->mu);
    printf("# member %d stats: %.600s\n", m->idx, m->group_json);
    pthread_mutex_unlock(&m->mu);
}

long kc_chaos_member_records(kc_chaos_member_t *m)
{
    return atomic_load(&m->records);
}

long kc_chaos_delivered(kc_chaos_t *ch)
{
    return atomic_load(&ch->delivered);
}

/* ---- the verdict ----------------------------------------------------------------------------- */

static bool is_skipped(kc_chaos_t *ch, int32_t p, int64_t o)
{
    pthread_mutex_lock(&ch->mu);
    bool r = false;
    for (int i = 0; i < ch->nskipped && !r; i++)
        r = ch->skipped[i].p == p && o >= ch->skipped[i].lo && o <= ch->skipped[i].hi;
    pthread_mutex_unlock(&ch->mu);
    return r;
}

static bool complete(kc_chaos_t *ch)
{
    for (int i = 0; i < ch->nparts; i++) {
        part_t *p = &ch->p[i];
        int64_t end = atomic_load(&p->end);
        for (int64_t o = 0; o < end; o++)
            if (atomic_load(&p->count[o]) == 0 && !is_skipped(ch, i, o))
                return false;
    }
    return true;
}

bool kc_chaos_wait_complete(kc_chaos_t *ch, int timeout_ms)
{
    /* The produced set: the end offsets once production is over, read until two agree (a
     * query may fail while a broker restarts). */
    int64_t deadline = kc_chaos_now_ms() + timeout_ms;
    for (int i = 0; i < ch->nparts; i++) {
        int64_t high = -1;
        kc_error_t e;
        while (kc_query_watermarks(ch->probe, ch->topic, i, NULL, &high, 5000, &e) != KC_OK) {
            if (kc_chaos_now_ms() > deadline)
                fail_msg("end offset of partition %d: %s", i, e.msg);
            usleep(200 * 1000);
        }
        assert_true(high <= ch->cap);
        if (high > atomic_load(&ch->p[i].end))
            atomic_store(&ch->p[i].end, high);
    }
    while (kc_chaos_now_ms() < deadline) {
        if (complete(ch))
            return true;
        usleep(100 * 1000);
    }
    return complete(ch);
}

void kc_chaos_finish(kc_chaos_t *ch, long requested, int64_t max_stall_ms)
{
    atomic_store(&ch->stop, 1);
    pthread_join(ch->sampler, NULL);
    long produced = 0, consumed = 0, dup = 0, lost = 0, skipped = 0;
    int64_t stall = 0;
    int stall_part = -1;
    for (int i = 0; i < ch->nparts; i++) {
        part_t *p = &ch->p[i];
        int64_t end = atomic_load(&p->end);
        produced += end;
        long pd = 0;
        int64_t dlo = -1, dhi = -1;
        for (int64_t o = 0; o < end; o++) {
            uint16_t n = atomic_load(&p->count[o]);
            if (n > 1) {
                pd += n - 1;
                dhi = o;
                if (dlo < 0)
                    dlo = o;
            }
            consumed += n;
            if (n == 0 && is_skipped(ch, i, o))
                skipped++;
            else if (n == 0)
                lost++;
            else
                dup += n - 1;
        }
        if (pd)
            printf("# partition %d: %ld duplicate deliveries within offsets %lld..%lld of %lld\n",
                   i, pd, (long long)dlo, (long long)dhi, (long long)end);
        if (atomic_load(&p->max_stall_ms) > stall) {
            stall = atomic_load(&p->max_stall_ms);
            stall_part = i;
        }
    }
    printf("chaos: %s produced=%ld consumed=%ld dup=%ld lost=%ld skipped_corrupt=%ld bad_dup=%ld "
           "max_stall_ms=%lld (p%d) errors_allowed=%ld errors_bad=%ld requested=%ld\n",
           ch->fault, produced, consumed, dup, lost, skipped, atomic_load(&ch->bad_dups),
           (long long)stall, stall_part, atomic_load(&ch->errors_allowed),
           atomic_load(&ch->errors_bad), requested);
    printf("chaos: %s overlapping_callbacks=%ld self_fences=%ld\n", ch->fault,
           atomic_load(&ch->overlaps), atomic_load(&ch->self_fences));
    fflush(stdout);
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            if (atomic_load(&ch->dup_pair[a][b]))
                printf("# duplicates first delivered by member %d, again by member %d: %ld\n", a, b,
                       atomic_load(&ch->dup_pair[a][b]));
    if (ch->first_bad_set)
        printf("# first violation: %s\n", ch->first_bad);
    kc_destroy(ch->probe);
    for (int i = 0; i < ch->nparts; i++) {
        free(ch->p[i].count);
        free(ch->p[i].tag);
    }
    long bad_dups = atomic_load(&ch->bad_dups), errors_bad = atomic_load(&ch->errors_bad),
         beyond = atomic_load(&ch->beyond), overlaps = atomic_load(&ch->overlaps),
         self_fences = atomic_load(&ch->self_fences);
    bool exclusive = ch->exclusive, self_fence_ok = ch->self_fence_ok;
    for (int i = 0; i < atomic_load(&ch->nmembers); i++)
        free(ch->members[i]);
    free(ch);
    assert_true(produced >= requested); /* the producer's records are all in the log */
    assert_int_equal(lost, 0);
    assert_int_equal(bad_dups, 0);
    assert_int_equal(errors_bad, 0);
    assert_int_equal(beyond, 0);
    if (exclusive)
        assert_int_equal(overlaps, 0);
    if (!self_fence_ok)
        assert_int_equal(self_fences, 0);
    assert_true(stall <= max_stall_ms);
}
