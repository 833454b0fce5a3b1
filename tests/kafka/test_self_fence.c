/* kc-test-label: threads-long */
/*
 * The self-fence end to end, against kc-memory-broker (the test starts it; no cluster) behind
 * kc-fault-proxy: two members of one group, both protocols. Member A reaches the broker through
 * the proxy, member B directly; `blackhole on` cuts A off (coordinator and fetch), as a network
 * partition would.
 *
 *  - cut_off_*: A is cut off for longer than the session. B gets A's partitions once the
 *    broker expired A. Asserted, per partition A held: A's last callback ENDED before B's first
 *    callback of it after the cut BEGAN (CLOCK_MONOTONIC), A reported the self-fence once, no
 *    record is lost, and the duplicates are no more than what A finished at or after the offset
 *    B resumed from (the group's committed offset: what A finished after its last successful
 *    commit, up to its fence). Then the proxy lets A through again: A learns it was fenced
 *    (on_lost) and rejoins.
 *  - brief_outage_*: a cut shorter than the fence point: no self-fence, no on_lost, no
 *    duplicate.
 *  - fence_and_resume_848: a cut past the fence point but shorter than the session (a low
 *    ratio): A fences, the coordinator answers in time, A resumes at its epoch with nothing
 *    lost and nothing delivered twice.
 *
 * KIP-848's session is the memory broker's group.consumer.session.timeout.ms (10 s, mb.h) —
 * never configured here, so the member must read it with DescribeConfigs (the config key's
 * default is 45 s: with it the fence would come after the expiry and the exclusivity check
 * fails). Classic uses session.timeout.ms=6000.
 * KC_SELF_FENCE_RATIO overrides the ratio of the cut_off cases (0: the feature off; then the
 * exclusivity assertion fails, which is how this test was checked to be able to fail).
 *
 * Owner: the main thread drives; the callbacks run on the consumers' workers and only touch the
 * atomics below.
 */
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define PARTS 4
#define RECS  4000 /* per partition */
#define VIEW  10   /* callback.batch.max.records */

static pid_t g_pid;
static char g_bs[256];
static kc_fp_t *g_fp;
static int g_groups; /* a fresh group per case: each starts from offset 0 */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One member's view. Written by its workers (one partition's callbacks are serialised, so the
 * per-partition fields have one writer at a time), read by the main thread. */
typedef struct member {
    const char *name;
    kc_consumer_t *c;
    _Atomic int owned[PARTS];
    _Atomic int lost_cb, revoked_cb, fence_events, other_errors;
    _Atomic int64_t fence_event_ns;
    _Atomic int64_t last_end_ns[PARTS];    /* end of the latest callback */
    _Atomic int64_t first_start_ns[PARTS]; /* first callback that started after `watch_from` */
    _Atomic int64_t first_offset[PARTS];   /* its first offset */
    _Atomic int64_t max_done[PARTS];       /* highest offset a returned callback finished */
    _Atomic int64_t watch_from_ns;
    _Atomic int sleep_ms;
    _Atomic int commit_refused;
} member_t;

/* deliveries per offset, both members together; and what A finished per offset */
static _Atomic unsigned char seen[PARTS][RECS];
static _Atomic unsigned char by_a[PARTS][RECS];
static member_t *g_a;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    member_t *m = o;
    int part = p->partition;
    int64_t t0 = now_ns();
    if (t0 >= atomic_load(&m->watch_from_ns) && atomic_load(&m->first_start_ns[part]) == 0) {
        atomic_store(&m->first_start_ns[part], t0);
        atomic_store(&m->first_offset[part], kc_records_first_offset(b));
    }
    int ms = atomic_load(&m->sleep_ms);
    if (ms)
        usleep((useconds_t)ms * 1000);
    const kc_record_t *r;
    int64_t hi = -1;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        if (off >= 0 && off < RECS) {
            atomic_fetch_add(&seen[part][off], 1);
            if (m == g_a)
                atomic_fetch_add(&by_a[part][off], 1);
        }
        hi = off;
    }
    if (hi > atomic_load(&m->max_done[part]))
        atomic_store(&m->max_done[part], hi);
    atomic_store(&m->last_end_ns[part], now_ns());
    return KC_CB_CONTINUE;
}

static void on_assign(void *o, kc_part_t *p)
{
    atomic_store(&((member_t *)o)->owned[p->partition], 1);
}

static void on_revoke(void *o, kc_part_t *p)
{
    member_t *m = o;
    atomic_store(&m->owned[p->partition], 0);
    atomic_fetch_add(&m->revoked_cb, 1);
}

static void on_lost(void *o, kc_part_t *p)
{
    member_t *m = o;
    atomic_store(&m->owned[p->partition], 0);
    atomic_fetch_add(&m->lost_cb, 1);
}

static void on_event(void *o, const kc_event_t *ev)
{
    member_t *m = o;
    if (ev->type != KC_EVENT_ERROR)
        return;
    if (strstr(ev->error->msg, "self-fenced")) {
        if (atomic_fetch_add(&m->fence_events, 1) == 0)
            atomic_store(&m->fence_event_ns, now_ns());
        printf("# %s: %s\n", m->name, ev->error->msg);
    } else {
        atomic_fetch_add(&m->other_errors, 1);
        printf("# %s error: %s\n", m->name, ev->error->msg);
    }
}

static int setup(void **state)
{
    (void)state;
    char recs[16], parts[16];
    snprintf(recs, sizeof recs, "%d", RECS);
    snprintf(parts, sizeof parts, "%d", PARTS);
    const char *args[] = {"--topic", "F",  "--partitions",    parts, "--records", recs,
                          "--size",  "16", "--batch-records", "50",  NULL};
    return kc_test_proxied_broker(args, g_bs, sizeof g_bs, &g_pid, &g_fp);
}

static int teardown(void **state)
{
    (void)state;
    return kc_test_proxied_broker_stop(g_pid, g_fp);
}

static void fp(const char *cmd)
{
    char reply[256];
    if (kc_fp_cmd(g_fp, reply, sizeof reply, "%s", cmd) != 0)
        fail_msg("proxy refused '%s': %s", cmd, reply);
}

static void member_start(member_t *m, const char *name, const char *bs, const char *group,
                         const char *extra, const char *ratio)
{
    memset(m, 0, sizeof *m);
    m->name = name;
    for (int p = 0; p < PARTS; p++)
        atomic_store(&m->max_done[p], -1);
    kc_error_t err;
    kc_conf_t *conf = kc_conf_new();
    char buf[512];
    snprintf(buf, sizeof buf,
             "bootstrap.servers=%s;group.id=%s;worker.threads=%d;callback.batch.max.records=%d;"
             "auto.offset.reset=earliest;auto.commit.interval.ms=500;request.timeout.ms=5000;"
             "group.self.fence.ratio=%s%s%s",
             bs, group, PARTS, VIEW, ratio, extra[0] ? ";" : "", extra);
    kc_test_conf_set_all(conf, buf);
    kc_callbacks_t cbs = {.on_assign = on_assign,
                          .on_records = on_records,
                          .on_revoke = on_revoke,
                          .on_lost = on_lost,
                          .on_event = on_event,
                          .opaque = m};
    if (kc_consumer_new(conf, &cbs, &m->c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    const char *topics[] = {"F"};
    assert_int_equal(kc_subscribe(m->c, topics, 1, &err), KC_OK);
}

static void member_stop(member_t *m)
{
    kc_error_t err;
    (void)kc_close(m->c, 10000, &err);
    kc_destroy(m->c);
    m->c = NULL;
}

static int owned_count(member_t *m)
{
    int n = 0;
    for (int p = 0; p < PARTS; p++)
        n += atomic_load(&m->owned[p]);
    return n;
}

static bool wait_for(bool (*cond)(void), int timeout_ms)
{
    int64_t end = now_ns() + (int64_t)timeout_ms * 1000000;
    while (!cond()) {
        if (now_ns() > end)
            return false;
        usleep(20 * 1000);
    }
    return true;
}

static member_t A, B;

static bool split(void)
{
    return owned_count(&A) > 0 && owned_count(&B) > 0 && owned_count(&A) + owned_count(&B) == PARTS;
}

static bool b_has_all(void)
{
    return owned_count(&B) == PARTS;
}

static bool all_seen(void)
{
    for (int p = 0; p < PARTS; p++)
        for (int o = 0; o < RECS; o++)
            if (!atomic_load(&seen[p][o]))
                return false;
    return true;
}

static void reset_counts(void)
{
    for (int p = 0; p < PARTS; p++)
        for (int o = 0; o < RECS; o++) {
            atomic_store(&seen[p][o], 0);
            atomic_store(&by_a[p][o], 0);
        }
}

typedef struct tally {
    long lost, dups, a_since_commit;
} tally_t;

/* Lost: offsets nobody delivered. Duplicates: deliveries beyond the first. A's finished
 * records at or after the offset B resumed from, for the partitions B took over (`moved`). */
static tally_t count(const bool *moved)
{
    tally_t t = {0, 0, 0};
    for (int p = 0; p < PARTS; p++) {
        int64_t from = atomic_load(&B.first_offset[p]);
        for (int o = 0; o < RECS; o++) {
            int n = atomic_load(&seen[p][o]);
            t.lost += n == 0;
            t.dups += n > 1 ? n - 1 : 0;
            if (moved[p] && o >= from)
                t.a_since_commit += atomic_load(&by_a[p][o]) > 0;
        }
    }
    return t;
}

static const char *ratio_env(const char *dflt)
{
    const char *r = getenv("KC_SELF_FENCE_RATIO");
    return r && *r ? r : dflt;
}

/* A cut off for longer than the session: see the file comment. */
static void cut_off(const char *proto, const char *extra, int session_ms)
{
    reset_counts();
    char group[64];
    snprintf(group, sizeof group, "kc-sf-%s-%d-%d", proto, (int)getpid(), ++g_groups);
    const char *ratio = ratio_env("0.8");
    g_a = &A;
    member_start(&A, "A", kc_fp_bootstrap(g_fp), group, extra, ratio);
    atomic_store(&A.sleep_ms, 40); /* 250 records/s per partition: A is busy when cut off */
    member_start(&B, "B", g_bs, group, extra, ratio);
    atomic_store(&B.sleep_ms, 40);
    assert_true(wait_for(split, 30000));
    sleep(2); /* a few auto-commits */
    bool moved[PARTS];
    for (int p = 0; p < PARTS; p++)
        moved[p] = atomic_load(&A.owned[p]);
    int64_t t_cut = now_ns();
    atomic_store(&B.watch_from_ns, t_cut);
    for (int p = 0; p < PARTS; p++)
        atomic_store(&B.first_start_ns[p], 0);
    fp("blackhole on");
    /* B takes everything once the broker expired A (its session, and a heartbeat of B). */
    bool took = wait_for(b_has_all, session_ms + 15000);
    int64_t t_moved = now_ns();
    printf("# %s ratio %s: B owns all %d partitions %lld ms after the cut (%s)\n", proto, ratio,
           PARTS, (long long)((t_moved - t_cut) / 1000000), took ? "ok" : "TIMED OUT");
    assert_true(took);
    atomic_store(&B.sleep_ms, 0); /* B finishes quickly; A's buffered records are its own */
    sleep(3); /* the window in which A, without the fence, would still be delivering */
    int64_t fence_ms =
        atomic_load(&A.fence_event_ns) ? (atomic_load(&A.fence_event_ns) - t_cut) / 1000000 : -1;
    /* exclusivity, per partition B took over */
    int overlaps = 0;
    for (int p = 0; p < PARTS; p++) {
        if (!moved[p])
            continue;
        int64_t a_end = atomic_load(&A.last_end_ns[p]), b_start = atomic_load(&B.first_start_ns[p]);
        printf("# %s [%d]: A's last callback ended %+lld ms after the cut, B's first began %+lld "
               "ms after it (offset %lld); A finished up to %lld\n",
               proto, p, (long long)((a_end - t_cut) / 1000000),
               (long long)((b_start - t_cut) / 1000000), (long long)atomic_load(&B.first_offset[p]),
               (long long)atomic_load(&A.max_done[p]));
        if (!(b_start > 0 && a_end < b_start))
            overlaps++;
    }
    /* A's commits are refused while it is fenced */
    kc_error_t err;
    kc_err_t crc = kc_commit(A.c, NULL, 0, 2000, &err);
    printf("# %s: A self-fence events %d (%lld ms after the cut); A's kc_commit while cut off: "
           "%s (%s)\n",
           proto, atomic_load(&A.fence_events), (long long)fence_ms, kc_err_name(crc),
           crc ? err.msg : "");
    fp("blackhole off");
    bool done = wait_for(all_seen, 60000);
    int64_t end = now_ns() + 30000LL * 1000000;
    while (atomic_load(&A.lost_cb) == 0 && now_ns() < end)
        usleep(50 * 1000);
    tally_t t = count(moved);
    printf("# %s: complete %d, lost %ld, duplicates %ld, A finished since its last commit %ld, "
           "A on_lost %d, overlapping partitions %d\n",
           proto, done, t.lost, t.dups, t.a_since_commit, atomic_load(&A.lost_cb), overlaps);
    member_stop(&A);
    member_stop(&B);
    assert_int_equal(overlaps, 0);
    assert_true(done);
    assert_int_equal(t.lost, 0);
    assert_true(t.dups <= t.a_since_commit);
    assert_int_equal(atomic_load(&A.fence_events), 1);
    assert_int_equal(crc, KC_ERR_STATE);
    assert_true(atomic_load(&A.lost_cb) > 0); /* expired meanwhile: on_lost once it hears */
    assert_int_equal(atomic_load(&B.fence_events), 0);
}

static void cut_off_848(void **state)
{
    (void)state;
    cut_off("consumer", "group.protocol=consumer", 10000);
}

static void cut_off_classic(void **state)
{
    (void)state;
    cut_off("classic",
            "group.protocol=classic;session.timeout.ms=6000;heartbeat.interval.ms=500;"
            "rebalance.timeout.ms=10000",
            6000);
}

/* A cut of cut_ms with `ratio`; returns A's on_lost count, checks the rest. */
static void outage(const char *proto, const char *extra, const char *ratio, int cut_ms,
                   int fences_expected)
{
    reset_counts();
    char group[64];
    snprintf(group, sizeof group, "kc-sfo-%s-%d-%d", proto, (int)getpid(), ++g_groups);
    g_a = &A;
    member_start(&A, "A", kc_fp_bootstrap(g_fp), group, extra, ratio);
    atomic_store(&A.sleep_ms, 20);
    member_start(&B, "B", g_bs, group, extra, ratio);
    atomic_store(&B.sleep_ms, 20);
    assert_true(wait_for(split, 30000));
    sleep(1);
    int a_owned = owned_count(&A);
    int64_t t_cut = now_ns();
    fp("blackhole on");
    usleep((useconds_t)cut_ms * 1000);
    fp("blackhole off");
    int64_t t_back = now_ns();
    /* A resumes: it keeps its partitions (no on_lost, no rebalance), and delivers again */
    atomic_store(&A.watch_from_ns, t_back);
    for (int p = 0; p < PARTS; p++)
        atomic_store(&A.first_start_ns[p], 0);
    atomic_store(&A.sleep_ms, 0);
    atomic_store(&B.sleep_ms, 0);
    bool done = wait_for(all_seen, 60000);
    bool moved[PARTS] = {false};
    tally_t t = count(moved);
    int resumed = 0; /* A's partitions that A itself delivered again after the cut */
    for (int p = 0; p < PARTS; p++)
        resumed += atomic_load(&A.owned[p]) && atomic_load(&A.first_start_ns[p]) > 0;
    int a_now = owned_count(&A); /* before the close revokes them */
    printf("# %s outage %d ms ratio %s: self-fences %d (%lld ms after the cut), A on_lost %d, "
           "A owns %d (had %d) and resumed %d itself, complete %d, lost %ld, duplicates %ld\n",
           proto, cut_ms, ratio, atomic_load(&A.fence_events),
           atomic_load(&A.fence_event_ns)
               ? (long long)((atomic_load(&A.fence_event_ns) - t_cut) / 1000000)
               : -1LL,
           atomic_load(&A.lost_cb), a_now, a_owned, resumed, done, t.lost, t.dups);
    member_stop(&A);
    member_stop(&B);
    assert_int_equal(atomic_load(&A.fence_events), fences_expected);
    assert_int_equal(atomic_load(&A.lost_cb), 0);
    assert_int_equal(a_now, a_owned);
    assert_int_equal(resumed, a_owned);
    assert_true(done);
    assert_int_equal(t.lost, 0);
    assert_int_equal(t.dups, 0);
}

static void brief_outage_848(void **state)
{
    (void)state;
    outage("consumer", "group.protocol=consumer", "0.8", 2000, 0);
}

/* The proxy swallows what it gets during the cut (a real network delays it instead), so the
 * heartbeat in flight is lost and answered only after the classic driver reset it (5 s at the
 * least): the fence point must lie past that, hence a 10 s session here. */
static void brief_outage_classic(void **state)
{
    (void)state;
    outage("classic",
           "group.protocol=classic;session.timeout.ms=10000;heartbeat.interval.ms=500;"
           "rebalance.timeout.ms=10000",
           "0.8", 1500, 0);
}

/* fence at 2 s of the 10 s session; the cut lasts 4 s: fenced, then answered in time */
static void fence_and_resume_848(void **state)
{
    (void)state;
    outage("consumer", "group.protocol=consumer", "0.2", 4000, 1);
}

/* the same for classic: its lost heartbeat is reset after 5 s, answered by about 6 s */
static void fence_and_resume_classic(void **state)
{
    (void)state;
    outage("classic",
           "group.protocol=classic;session.timeout.ms=10000;heartbeat.interval.ms=500;"
           "rebalance.timeout.ms=10000",
           "0.2", 3000, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cut_off_848),          cmocka_unit_test(cut_off_classic),
        cmocka_unit_test(brief_outage_848),     cmocka_unit_test(brief_outage_classic),
        cmocka_unit_test(fence_and_resume_848), cmocka_unit_test(fence_and_resume_classic),
    };
    /* KC_SELF_FENCE_RATIO (a manual check of the checks): the cut_off cases alone */
    size_t n = getenv("KC_SELF_FENCE_RATIO") ? 2 : sizeof tests / sizeof tests[0];
    return _cmocka_run_group_tests("self_fence", tests, n, setup, teardown);
}
