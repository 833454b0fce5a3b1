/* kc-test-label: threads */
/*
 * kc_close under concurrent use, against the memory broker (the test starts it; no cluster):
 *  - the final commit: after kc_close the group's committed offsets equal exactly what callbacks
 *    finished (enable.auto.offset.store=true) or what on_revoke stored (manual store with
 *    auto-commit), in manual assignment, KIP-848 and classic groups; kc_store_offset and
 *    kc_commit_async from on_revoke during the close are accepted;
 *  - two threads closing at once: the second returns only once the consumer is closed, so its
 *    kc_destroy cannot free what the first is still using;
 *  - a classic member's LeaveGroup waits for an application thread's commit sent during the
 *    close (the broker must not take the leave first), but not past the close's budget;
 *  - timeout_ms bounds the whole call (a callback blocked past it), a negative one is refused;
 *  - pull mode: a view an app thread holds keeps its partition's on_revoke and final commit
 *    waiting until it is released; a release after a timed-out close is harmless; a view held by
 *    the closing thread itself does not hold the close up.
 * Owner: each case's main thread; callbacks and app threads share only the atomics below.
 */
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define NP    12
#define RECS  3000 /* per partition */
#define TOPIC "L"

static pid_t g_pid;
static char g_bs[256];

static int setup(void **state)
{
    (void)state;
    const char *args[] = {
        "--topic", TOPIC, "--partitions",  "12",   "--records", "3000", "--batch-records", "50",
        "--size",  "20",  "--compression", "none", NULL};
    g_pid = kc_testkit_spawn("kc-memory-broker", args, g_bs, sizeof g_bs);
    return g_pid > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return kc_testkit_stop(g_pid);
}

/* ---- shared per-case state (reset by each case) -------------------------------------------- */

typedef enum { MANUAL, KIP848, CLASSIC } cmode_t;
static const char *mode_name[] = {"manual", "consumer", "classic"};

static kc_consumer_t *g_c;
static _Atomic int64_t finished[NP]; /* next offset after the last callback that returned */
static _Atomic int64_t total;
static _Atomic int revoked, store_refused, async_refused, async_answered, async_calls, async_ok;
static _Atomic int cb_sleep_ms;
static _Atomic int manual_store; /* on_revoke stores finished[] */
static _Atomic int block_p0;     /* partition 0's callback blocks while this is 1 */
static _Atomic int blocked_now;

static void reset(void)
{
    for (int i = 0; i < NP; i++)
        atomic_store(&finished[i], 0);
    atomic_store(&total, 0);
    atomic_store(&revoked, 0);
    atomic_store(&store_refused, 0);
    atomic_store(&async_refused, 0);
    atomic_store(&async_answered, 0);
    atomic_store(&async_calls, 0);
    atomic_store(&async_ok, 0);
    atomic_store(&cb_sleep_ms, 20);
    atomic_store(&manual_store, 0);
    atomic_store(&block_p0, 0);
    atomic_store(&blocked_now, 0);
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    if (p->partition == 0 && atomic_load(&block_p0)) {
        atomic_store(&blocked_now, 1);
        while (atomic_load(&block_p0))
            kc_test_sleep_ms(5);
    }
    int64_t n = 0;
    while (kc_records_next(b))
        n++;
    kc_test_sleep_ms(atomic_load(&cb_sleep_ms));
    atomic_fetch_add(&total, n);
    atomic_store(&finished[p->partition], kc_records_next_offset(b));
    return KC_CB_CONTINUE;
}

static void async_done(void *o, kc_err_t rc, const kc_error_t *err)
{
    (void)o;
    if (rc == KC_OK)
        atomic_fetch_add(&async_ok, 1);
    else
        printf("# async commit from on_revoke answered %s: %s\n", kc_err_name(rc), err->msg);
    atomic_fetch_add(&async_answered, 1);
}

static kc_fp_t *g_slow; /* close_waits_for_async_commit: the proxy that slows answers */

static void on_revoke(void *o, kc_part_t *p)
{
    (void)o;
    if (p->partition == 1 && g_slow) { /* the async commit below is answered 3 s later */
        char reply[256];
        if (kc_fp_cmd(g_slow, reply, sizeof reply, "delay api=OffsetCommit ms=3000") != 0)
            printf("# proxy: %s\n", reply);
    }
    if (atomic_load(&manual_store)) {
        int64_t f = atomic_load(&finished[p->partition]);
        kc_error_t e;
        if (f > 0 && kc_store_offset(g_c, p->topic, p->partition, f, &e) != KC_OK) {
            atomic_fetch_add(&store_refused, 1);
            printf("# store from on_revoke refused: %s\n", e.msg);
        }
        if (p->partition == 1) {
            kc_topic_partition_t tp = {p->topic, p->partition, f};
            atomic_fetch_add(&async_calls, 1);
            if (f > 0 && kc_commit_async(g_c, &tp, 1, async_done, NULL, &e) != KC_OK) {
                atomic_fetch_add(&async_refused, 1);
                atomic_fetch_sub(&async_calls, 1);
                printf("# commit_async from on_revoke refused: %s\n", e.msg);
            } else if (f <= 0) {
                atomic_fetch_sub(&async_calls, 1);
            }
        }
    }
    atomic_fetch_add(&revoked, 1);
}

static kc_consumer_t *start(cmode_t m, const char *group, int manual_store_conf, bool pull)
{
    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", g_bs);
    kc_test_conf_set(conf, "worker.threads", "4");
    kc_test_conf_set(conf, "callback.batch.max.records", "50");
    kc_test_conf_set(conf, "auto.offset.reset", "earliest");
    if (group) {
        kc_test_conf_set(conf, "group.id", group);
        kc_test_conf_set(conf, "enable.auto.commit", "true");
        kc_test_conf_set(conf, "auto.commit.interval.ms",
                         "600000"); /* only the close's commit counts */
        if (manual_store_conf)
            kc_test_conf_set(conf, "enable.auto.offset.store", "false");
        if (m != MANUAL)
            kc_test_conf_set(conf, "group.protocol", mode_name[m]);
    }
    kc_callbacks_t cbs = {.on_records = pull ? NULL : on_records, .on_revoke = on_revoke};
    kc_consumer_t *c;
    kc_error_t e;
    if (kc_consumer_new(conf, &cbs, &c, &e) != KC_OK)
        fail_msg("kc_consumer_new: %s", e.msg);
    g_c = c;
    if (m == MANUAL) {
        kc_topic_partition_t tps[NP];
        for (int i = 0; i < NP; i++)
            tps[i] = (kc_topic_partition_t){TOPIC, i, KC_OFFSET_BEGINNING};
        assert_int_equal(kc_assign(c, tps, NP, &e), KC_OK);
    } else {
        const char *topics[] = {TOPIC};
        if (kc_subscribe(c, topics, 1, &e) != KC_OK)
            fail_msg("kc_subscribe: %s", e.msg);
    }
    return c;
}

static void wait_total(int64_t n, int ms)
{
    for (int i = 0; i < ms / 10 && atomic_load(&total) < n; i++)
        kc_test_sleep_ms(10);
    if (atomic_load(&total) < n)
        fail_msg("only %lld records after %d ms", (long long)atomic_load(&total), ms);
}

/* The group's committed offsets, read by a fresh consumer (KC_OFFSET_INVALID: none). */
static void committed(const char *group, int64_t *out)
{
    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", g_bs);
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "enable.auto.commit", "false");
    kc_callbacks_t cbs = {.on_records = on_records};
    kc_consumer_t *c;
    kc_error_t e;
    if (kc_consumer_new(conf, &cbs, &c, &e) != KC_OK)
        fail_msg("kc_consumer_new: %s", e.msg);
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){TOPIC, i, 0};
    if (kc_committed(c, tps, NP, 5000, &e) != KC_OK)
        fail_msg("kc_committed: %s", e.msg);
    for (int i = 0; i < NP; i++)
        out[i] = tps[i].offset;
    kc_close(c, 1000, NULL);
    kc_destroy(c);
}

/* committed == what callbacks finished, partition by partition (none where nothing finished). */
static void check_committed(const char *what, const char *group)
{
    int64_t got[NP];
    committed(group, got);
    int64_t sum_f = 0, sum_c = 0;
    int wrong = 0;
    for (int i = 0; i < NP; i++) {
        int64_t f = atomic_load(&finished[i]);
        int64_t want = f > 0 ? f : KC_OFFSET_INVALID;
        sum_f += f;
        sum_c += got[i] >= 0 ? got[i] : 0;
        if (got[i] != want) {
            wrong++;
            printf("# %s: partition %d committed %lld, callbacks finished %lld\n", what, i,
                   (long long)got[i], (long long)f);
        }
    }
    printf("# %s: finished %lld, committed %lld\n", what, (long long)sum_f, (long long)sum_c);
    assert_int_equal(wrong, 0);
}

/* ---- the final commit ----------------------------------------------------------------------- */

static void close_commits(cmode_t m, int manual_store_mode)
{
    reset();
    atomic_store(&manual_store, manual_store_mode);
    char group[64];
    snprintf(group, sizeof group, "close-%s-%s-%d", mode_name[m], manual_store_mode ? "ms" : "as",
             (int)getpid());
    kc_consumer_t *c = start(m, group, manual_store_mode, false);
    wait_total(2000, 20000);
    kc_error_t e;
    kc_err_t rc = kc_close(c, 10000, &e);
    if (rc != KC_OK)
        fail_msg("kc_close: %s", e.msg);
    printf("# %s: %d on_revoke, %d stores refused, %d/%d async commits answered (%d refused)\n",
           mode_name[m], atomic_load(&revoked), atomic_load(&store_refused),
           atomic_load(&async_answered), atomic_load(&async_calls), atomic_load(&async_refused));
    assert_int_equal(atomic_load(&revoked), NP);
    assert_int_equal(atomic_load(&store_refused), 0);
    assert_int_equal(atomic_load(&async_refused), 0);
    kc_destroy(c); /* every async commit is answered by now (on a worker or here) */
    assert_int_equal(atomic_load(&async_answered), atomic_load(&async_calls));
    assert_int_equal(atomic_load(&async_ok), atomic_load(&async_calls)); /* sent, so answered */
    check_committed(mode_name[m], group);
}

/* Manual store, no auto-commit: nothing but on_revoke's kc_commit_async of partition 1 commits.
 * Its answer comes 3 s later (a fault proxy's delay, armed from that on_revoke), longer than the
 * engine's bounded session close waits: kc_close waits for it before it closes the engine, so
 * the callback gets the broker's answer, not KC_ERR_CLOSED. */
static void close_waits_for_async_commit(void **s)
{
    (void)s;
    reset();
    atomic_store(&manual_store, 1);
    char group[64];
    snprintf(group, sizeof group, "close-async-%d", (int)getpid());
    g_slow = kc_fp_start(g_bs);
    assert_non_null(g_slow);
    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", kc_fp_bootstrap(g_slow));
    kc_test_conf_set(conf, "worker.threads", "4");
    kc_test_conf_set(conf, "callback.batch.max.records", "50");
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "enable.auto.commit", "false");
    kc_test_conf_set(conf, "enable.auto.offset.store", "false");
    kc_callbacks_t cbs = {.on_records = on_records, .on_revoke = on_revoke};
    kc_error_t e;
    if (kc_consumer_new(conf, &cbs, &g_c, &e) != KC_OK)
        fail_msg("kc_consumer_new: %s", e.msg);
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){TOPIC, i, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(g_c, tps, NP, &e), KC_OK);
    wait_total(1000, 20000);
    kc_err_t rc = kc_close(g_c, 10000, &e);
    kc_destroy(g_c);
    kc_fp_t *fp = g_slow;
    g_slow = NULL;
    kc_fp_stop(fp);
    if (rc != KC_OK)
        fail_msg("kc_close: %s", e.msg);
    printf("# async commit from on_revoke: %d sent, %d answered OK\n", atomic_load(&async_calls),
           atomic_load(&async_ok));
    assert_int_equal(atomic_load(&async_calls), 1);
    assert_int_equal(atomic_load(&async_ok), 1);
    int64_t got[NP];
    committed(group, got);
    assert_int_equal(got[1], atomic_load(&finished[1]));
}

static void close_commits_finished_manual(void **s)
{
    (void)s;
    close_commits(MANUAL, 0);
}
static void close_commits_finished_kip848(void **s)
{
    (void)s;
    close_commits(KIP848, 0);
}
static void close_commits_finished_classic(void **s)
{
    (void)s;
    close_commits(CLASSIC, 0);
}
static void close_commits_stored_manual(void **s)
{
    (void)s;
    close_commits(MANUAL, 1);
}
static void close_commits_stored_kip848(void **s)
{
    (void)s;
    close_commits(KIP848, 1);
}
static void close_commits_stored_classic(void **s)
{
    (void)s;
    close_commits(CLASSIC, 1);
}

/* An application thread's kc_commit_async while kc_close's revocation commit is unanswered, in
 * a classic group (the LeaveGroup goes out on the group's own coordinator connection, the
 * commits on the engine's): the LeaveGroup must wait for that commit's answer, or the broker may
 * take the leave first and refuse the commit with UNKNOWN_MEMBER_ID. A proxy holds every
 * OffsetCommit answer 1.5 s; the connection's answers queue behind each other, so the
 * revocation's comes about 1.5 s after it was sent and the application's about 1.5 s later
 * still. A LeaveGroup that does not wait is at the proxy about 1.5 s after the revocation
 * commit; one that waits, at least 3 s after it. */
static _Atomic int timed_rc;

static void *timed_closer(void *arg)
{
    (void)arg;
    kc_error_t e;
    kc_err_t rc = kc_close(g_c, 20000, &e);
    if (rc != KC_OK)
        printf("# kc_close: %s\n", e.msg);
    atomic_store(&timed_rc, rc);
    return NULL;
}

static long fp_count(kc_fp_t *fp, const char *api)
{
    long n = kc_fp_stat(fp, api);
    return n < 0 ? 0 : n;
}

/* reset(), then a classic group member subscribed through a new fault proxy (returned) that
 * has read 1000 records; auto-commit (every 10 min: only the revocation's) or none. */
static kc_fp_t *proxied_classic(const char *name, bool auto_commit)
{
    reset();
    char group[64];
    snprintf(group, sizeof group, "%s-%d", name, (int)getpid());
    kc_fp_t *fp = kc_fp_start(g_bs);
    assert_non_null(fp);
    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", kc_fp_bootstrap(fp));
    kc_test_conf_set(conf, "worker.threads", "4");
    kc_test_conf_set(conf, "callback.batch.max.records", "50");
    kc_test_conf_set(conf, "auto.offset.reset", "earliest");
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "group.protocol", "classic");
    kc_test_conf_set(conf, "enable.auto.commit", auto_commit ? "true" : "false");
    kc_test_conf_set(conf, "auto.commit.interval.ms", "600000");
    kc_callbacks_t cbs = {.on_records = on_records, .on_revoke = on_revoke};
    kc_error_t e;
    if (kc_consumer_new(conf, &cbs, &g_c, &e) != KC_OK)
        fail_msg("kc_consumer_new: %s", e.msg);
    const char *topics[] = {TOPIC};
    assert_int_equal(kc_subscribe(g_c, topics, 1, &e), KC_OK);
    wait_total(1000, 20000);
    return fp;
}

static void close_leave_waits_for_app_commit(void **s)
{
    (void)s;
    kc_fp_t *fp = proxied_classic("close-leave", true);
    kc_error_t e;
    char reply[256];
    if (kc_fp_cmd(fp, reply, sizeof reply, "delay api=OffsetCommit ms=1500 count=2") != 0)
        fail_msg("proxy: %s", reply);
    long commits0 = fp_count(fp, "OffsetCommit");
    assert_int_equal(fp_count(fp, "LeaveGroup"), 0);
    pthread_t t;
    pthread_create(&t, NULL, timed_closer, NULL);
    int64_t t_rev = -1, t_leave = -1, deadline = kc_test_now_ms() + 15000;
    long commits_at_leave = -1;
    while (kc_test_now_ms() < deadline && t_leave < 0) {
        if (t_rev < 0 && fp_count(fp, "OffsetCommit") > commits0) {
            t_rev = kc_test_now_ms(); /* the revocation's commit is at the proxy */
            kc_topic_partition_t tp = {TOPIC, 1, atomic_load(&finished[1])};
            atomic_fetch_add(&async_calls, 1);
            if (kc_commit_async(g_c, &tp, 1, async_done, NULL, &e) != KC_OK)
                fail_msg("kc_commit_async during the close: %s", e.msg);
        }
        if (fp_count(fp, "LeaveGroup") > 0) {
            t_leave = kc_test_now_ms();
            commits_at_leave = fp_count(fp, "OffsetCommit") - commits0;
        }
        kc_test_sleep_ms(2);
    }
    pthread_join(t, NULL);
    kc_destroy(g_c);
    kc_fp_stop(fp);
    printf("# revocation commit at the proxy +0 ms, LeaveGroup +%lld ms, %ld commit(s) before "
           "it; the application's commit: %d answered, %d OK\n",
           (long long)(t_leave - t_rev), commits_at_leave, atomic_load(&async_answered),
           atomic_load(&async_ok));
    assert_int_equal(atomic_load(&timed_rc), KC_OK);
    assert_true(t_rev >= 0);
    assert_true(t_leave >= 0);
    assert_int_equal(commits_at_leave, 2); /* the application's was sent before the leave */
    /* Its answer came at least 3 s after the revocation's commit reached the proxy (sampling
     * may have seen that late, hence the margin); a leave that did not wait came ~1.5 s. */
    assert_true(t_leave - t_rev >= 2400);
    assert_int_equal(atomic_load(&async_ok), 1);
}

/* The same hold, cut short by the close's budget: an application commit whose answer the proxy
 * holds 8 s is in flight when kc_close(3000) starts (no auto-commit, so the revocation commits
 * nothing and only that commit holds the leave). With a quarter of the budget left the leave
 * goes regardless: a member that never leaves keeps its partitions from the others until its
 * session times out. */
static void close_leaves_when_commits_outlast_it(void **s)
{
    (void)s;
    kc_fp_t *fp = proxied_classic("close-leave-late", false);
    kc_error_t e;
    char reply[256];
    if (kc_fp_cmd(fp, reply, sizeof reply, "delay api=OffsetCommit ms=8000 count=1") != 0)
        fail_msg("proxy: %s", reply);
    long commits0 = fp_count(fp, "OffsetCommit");
    kc_topic_partition_t tp = {TOPIC, 1, atomic_load(&finished[1])};
    atomic_fetch_add(&async_calls, 1);
    assert_int_equal(kc_commit_async(g_c, &tp, 1, async_done, NULL, &e), KC_OK);
    for (int i = 0; i < 500 && fp_count(fp, "OffsetCommit") == commits0; i++)
        kc_test_sleep_ms(2); /* at the proxy: in flight */
    assert_true(fp_count(fp, "OffsetCommit") > commits0);
    int64_t t0 = kc_test_now_ms();
    kc_err_t rc = kc_close(g_c, 3000, &e);
    int64_t took = kc_test_now_ms() - t0;
    long leaves = fp_count(fp, "LeaveGroup");
    printf("# kc_close(3000) with a commit held 8 s: %s after %lld ms, LeaveGroup sent %ld, the "
           "commit answered %d\n",
           kc_err_name(rc), (long long)took, leaves, atomic_load(&async_answered));
    kc_destroy(g_c);
    kc_fp_stop(fp);
    assert_int_equal(leaves, 1);
    assert_true(took < 4000);
}

/* ---- two closers, one destroys -------------------------------------------------------------- */

static _Atomic int closer_revoked_at_return[2];
static _Atomic int closer_rc[2];

static void *closer(void *arg)
{
    int id = (int)(intptr_t)arg;
    kc_error_t e;
    atomic_store(&closer_rc[id], kc_close(g_c, 10000, &e));
    atomic_store(&closer_revoked_at_return[id], atomic_load(&revoked));
    if (id == 1)
        kc_destroy(g_c); /* after its own kc_close returned: must be safe */
    return NULL;
}

static void concurrent_close_then_destroy(void **s)
{
    (void)s;
    reset();
    atomic_store(&cb_sleep_ms, 150); /* the close waits for these */
    start(MANUAL, NULL, 0, false);
    wait_total(200, 20000);
    pthread_t t[2];
    pthread_create(&t[0], NULL, closer, (void *)(intptr_t)0);
    pthread_create(&t[1], NULL, closer, (void *)(intptr_t)1);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    printf("# closers: rc %d %d, on_revoke seen at return %d %d of %d\n",
           atomic_load(&closer_rc[0]), atomic_load(&closer_rc[1]),
           atomic_load(&closer_revoked_at_return[0]), atomic_load(&closer_revoked_at_return[1]),
           NP);
    assert_int_equal(atomic_load(&closer_rc[0]), KC_OK);
    assert_int_equal(atomic_load(&closer_rc[1]), KC_OK);
    assert_int_equal(atomic_load(&closer_revoked_at_return[0]), NP);
    assert_int_equal(atomic_load(&closer_revoked_at_return[1]), NP);
}

/* A manual consumer whose partition 0 callback is blocked (until block_p0 is cleared). */
static kc_consumer_t *start_p0_blocked(void)
{
    reset();
    atomic_store(&block_p0, 1);
    kc_consumer_t *c = start(MANUAL, NULL, 0, false);
    for (int i = 0; i < 2000 && !atomic_load(&blocked_now); i++)
        kc_test_sleep_ms(10);
    assert_int_equal(atomic_load(&blocked_now), 1);
    return c;
}

/* A close cut short by its own timeout is cut short for the caller that waited for it too. */
static void *short_closer(void *arg)
{
    (void)arg;
    kc_error_t e;
    atomic_store(&closer_rc[0], kc_close(g_c, 300, &e));
    return NULL;
}

static void waiting_closer_gets_the_result(void **s)
{
    (void)s;
    kc_consumer_t *c = start_p0_blocked();
    pthread_t t;
    pthread_create(&t, NULL, short_closer, NULL);
    kc_test_sleep_ms(100); /* the short close is running */
    kc_error_t e;
    int64_t t0 = kc_test_now_ms();
    kc_err_t rc = kc_close(c, 5000, &e);
    int64_t took = kc_test_now_ms() - t0;
    pthread_join(t, NULL);
    printf("# waiting closer: %s after %lld ms (%s); the running close: %s\n", kc_err_name(rc),
           (long long)took, rc == KC_OK ? "" : e.msg, kc_err_name(atomic_load(&closer_rc[0])));
    assert_int_equal(atomic_load(&closer_rc[0]), KC_ERR_TIMEOUT);
    assert_int_equal(rc, KC_ERR_TIMEOUT);
    assert_true(took < 1000);
    assert_int_equal(kc_close(c, 100, &e), KC_OK); /* closed before this call */
    atomic_store(&block_p0, 0);
    kc_destroy(c);
}

/* ---- the timeout bounds the call ------------------------------------------------------------ */

static void close_timeout_bounds_call(void **s)
{
    (void)s;
    kc_consumer_t *c = start_p0_blocked();
    kc_error_t e;
    assert_int_equal(kc_close(c, -1, &e), KC_ERR_INVALID_ARG);
    int64_t pos;
    assert_int_equal(kc_position(c, TOPIC, 1, &pos, &e), KC_OK); /* still open */
    const int timeout = 600;
    int64_t t0 = kc_test_now_ms();
    kc_err_t rc = kc_close(c, timeout, &e);
    int64_t took = kc_test_now_ms() - t0;
    printf("# kc_close(%d) with a callback blocked: %s after %lld ms (%s)\n", timeout,
           kc_err_name(rc), (long long)took, rc == KC_OK ? "" : e.msg);
    assert_int_equal(rc, KC_ERR_TIMEOUT);
    assert_true(took < timeout + 400);
    assert_int_equal(kc_close(c, 100, &e), KC_OK); /* closed (cut short) */
    atomic_store(&block_p0, 0);
    kc_destroy(c); /* waits for the blocked callback */
}

/* ---- pull mode: held views ------------------------------------------------------------------ */

static _Atomic int holding = -1; /* the partition whose view the holder thread holds */
static _Atomic int revoked_while_held, hold_ms, release_after_close, released;
static _Atomic int64_t held_next;

static void on_revoke_pull(void *o, kc_part_t *p)
{
    (void)o;
    if (atomic_load(&holding) == p->partition)
        atomic_fetch_add(&revoked_while_held, 1);
    atomic_fetch_add(&revoked, 1);
}

static void *holder(void *arg)
{
    (void)arg;
    kc_records_t *b = NULL;
    kc_error_t e;
    while (!b)
        if (kc_poll(g_c, 100, &b, &e) != KC_OK)
            return NULL;
    int pi = kc_records_partition(b)->partition;
    atomic_store(&holding, pi);
    int64_t t0 = kc_test_now_ms();
    size_t bytes = 0;
    while (kc_test_now_ms() - t0 <
           atomic_load(&hold_ms)) { /* reads the view while the close runs */
        const kc_record_t *r;
        while ((r = kc_records_next(b))) {
            size_t len;
            const unsigned char *v = kc_record_value(r, &len);
            for (size_t i = 0; i < len; i++)
                bytes += v[i] != 0;
        }
        kc_test_sleep_ms(20);
    }
    (void)bytes;
    while (atomic_load(&release_after_close) == 1)
        kc_test_sleep_ms(5);
    atomic_store(&held_next, kc_records_next_offset(b));
    atomic_store(&holding, -1);
    kc_records_release(g_c, b, KC_CB_CONTINUE);
    atomic_store(&released, 1);
    return NULL;
}

static kc_consumer_t *start_pull(const char *group)
{
    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", g_bs);
    kc_test_conf_set(conf, "worker.threads", "4");
    kc_test_conf_set(conf, "callback.batch.max.records", "50");
    if (group) {
        kc_test_conf_set(conf, "group.id", group);
        kc_test_conf_set(conf, "enable.auto.commit", "true");
        kc_test_conf_set(conf, "auto.commit.interval.ms", "600000");
    }
    kc_callbacks_t cbs = {.on_revoke = on_revoke_pull};
    kc_consumer_t *c;
    kc_error_t e;
    if (kc_consumer_new(conf, &cbs, &c, &e) != KC_OK)
        fail_msg("kc_consumer_new: %s", e.msg);
    g_c = c;
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){TOPIC, i, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, tps, NP, &e), KC_OK);
    return c;
}

static void pull_close_waits_for_held_view(void **s)
{
    (void)s;
    reset();
    atomic_store(&holding, -1);
    atomic_store(&revoked_while_held, 0);
    atomic_store(&hold_ms, 600);
    atomic_store(&release_after_close, 0);
    atomic_store(&released, 0);
    char group[64];
    snprintf(group, sizeof group, "pull-close-%d", (int)getpid());
    kc_consumer_t *c = start_pull(group);
    pthread_t t;
    pthread_create(&t, NULL, holder, NULL);
    for (int i = 0; i < 2000 && atomic_load(&holding) < 0; i++)
        kc_test_sleep_ms(5);
    int pi = atomic_load(&holding);
    assert_true(pi >= 0);
    kc_error_t e;
    int64_t t0 = kc_test_now_ms();
    kc_err_t rc = kc_close(c, 10000, &e);
    int64_t took = kc_test_now_ms() - t0;
    pthread_join(t, NULL);
    printf("# pull close: %s after %lld ms; on_revoke while the view was held: %d\n",
           kc_err_name(rc), (long long)took, atomic_load(&revoked_while_held));
    assert_int_equal(rc, KC_OK);
    assert_int_equal(atomic_load(&revoked_while_held), 0);
    assert_int_equal(atomic_load(&revoked), NP);
    kc_destroy(c);
    /* The held view was released with CONTINUE before the final commit: it is committed. */
    int64_t got[NP];
    committed(group, got);
    printf("# partition %d: view ended at %lld, committed %lld\n", pi,
           (long long)atomic_load(&held_next), (long long)got[pi]);
    assert_int_equal(got[pi], atomic_load(&held_next));
}

static void pull_release_after_timed_out_close(void **s)
{
    (void)s;
    reset();
    atomic_store(&holding, -1);
    atomic_store(&revoked_while_held, 0);
    atomic_store(&hold_ms, 0);
    atomic_store(&release_after_close, 1); /* hold until the close returned */
    atomic_store(&released, 0);
    kc_consumer_t *c = start_pull(NULL);
    pthread_t t;
    pthread_create(&t, NULL, holder, NULL);
    for (int i = 0; i < 2000 && atomic_load(&holding) < 0; i++)
        kc_test_sleep_ms(5);
    assert_true(atomic_load(&holding) >= 0);
    kc_error_t e;
    kc_err_t rc = kc_close(c, 300, &e);
    printf("# pull close with a view held past it: %s (%s); on_revoke while held %d\n",
           kc_err_name(rc), rc == KC_OK ? "" : e.msg, atomic_load(&revoked_while_held));
    assert_int_equal(rc, KC_ERR_TIMEOUT);
    assert_int_equal(atomic_load(&revoked_while_held), 0);
    atomic_store(&release_after_close, 0); /* the release comes after kc_close returned */
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&released), 1);
    assert_int_equal(atomic_load(&revoked_while_held), 0);
    kc_destroy(c);
}

/* A single-threaded app: poll, then close while still holding the view. */
static void pull_close_by_the_holder(void **s)
{
    (void)s;
    reset();
    kc_consumer_t *c = start_pull(NULL);
    kc_records_t *b = NULL;
    kc_error_t e;
    for (int i = 0; i < 100 && !b; i++)
        assert_int_equal(kc_poll(c, 100, &b, &e), KC_OK);
    assert_non_null(b);
    int64_t t0 = kc_test_now_ms();
    kc_err_t rc = kc_close(c, 5000, &e);
    int64_t took = kc_test_now_ms() - t0;
    printf("# close by the view's holder: %s after %lld ms\n", kc_err_name(rc), (long long)took);
    assert_int_equal(rc, KC_OK);
    assert_true(took < 2500);
    kc_records_release(c, b, KC_CB_CONTINUE); /* after close: harmless */
    assert_int_equal(kc_poll(c, 0, &b, &e), KC_ERR_CLOSED);
    kc_destroy(c);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]); /* one case by name (a glob) */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(close_commits_finished_manual),
        cmocka_unit_test(close_commits_finished_kip848),
        cmocka_unit_test(close_commits_finished_classic),
        cmocka_unit_test(close_commits_stored_manual),
        cmocka_unit_test(close_commits_stored_kip848),
        cmocka_unit_test(close_commits_stored_classic),
        cmocka_unit_test(close_waits_for_async_commit),
        cmocka_unit_test(close_leave_waits_for_app_commit),
        cmocka_unit_test(close_leaves_when_commits_outlast_it),
        cmocka_unit_test(concurrent_close_then_destroy),
        cmocka_unit_test(close_timeout_bounds_call),
        cmocka_unit_test(waiting_closer_gets_the_result),
        cmocka_unit_test(pull_close_waits_for_held_view),
        cmocka_unit_test(pull_release_after_timed_out_close),
        cmocka_unit_test(pull_close_by_the_holder),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
