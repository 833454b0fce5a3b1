/* kc-test-label: threads */
/* kc_assign applies the difference, and a partition assigned again while its old copy is still
 * being revoked starts only after that copy is done. Against kc-memory-broker, which the test
 * starts itself (no cluster): topic L, 2 partitions of RECS records each.
 *  1. reassign_in_flight: P0's on_records is held on a condition this test controls; meanwhile
 *     the test re-assigns P0 (kc_unassign + kc_assign, kc_assign without P0 then with it, or
 *     kc_unassign + kc_incremental_assign).
 *     The held callback then returns KC_CB_PAUSE, as the report had it. Asserted: never two
 *     callbacks of one partition at once, the new copy's on_assign after the old copy's
 *     on_revoke returned, and the new copy delivers P0 from 0 to the end, in order (the old
 *     copy's PAUSED must not pause the new copy's fetching).
 *  2. assign_difference: with both partitions running, kc_assign({P0 STORED}) revokes P1 only,
 *     P0 gets no on_revoke, no on_assign and no record twice; then kc_assign({P0 at 100}) is a
 *     seek of P0: no on_revoke/on_assign, delivery starts again at exactly 100 and goes on to
 *     the end.
 *  3. subscribe_after_unassign: as 1, but the new copy comes from a group: kc_unassign (which
 *     does not wait for on_revoke), then at once kc_subscribe to L with the same group.id, under
 *     KIP-848 and under classic. The group's copy of P0 must not start while the manual copy's
 *     held callback runs: its on_assign after the manual copy's on_revoke returned, never two
 *     callbacks of P0 at once, P0 delivered from 0 to the end in order.
 * Owner: the main thread drives; the callbacks run on the consumer's workers. */
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   2
#define RECS 3000

static pid_t g_pid;
static char g_bs[256];

typedef struct tpart {
    _Atomic int in_cb;            /* callbacks of this partition running now */
    _Atomic int overlap;          /* a callback started while another of it was running */
    _Atomic int assigns, revokes; /* on_assign entered, on_revoke returned */
    _Atomic int order;            /* an on_assign entered before the previous on_revoke returned */
    _Atomic int64_t expect;       /* next offset of the current copy */
    _Atomic int64_t disorder;     /* records out of order (or twice) within one copy */
    _Atomic int64_t delivered;    /* records delivered, all copies */
    _Atomic int64_t last;         /* last offset delivered */
    _Atomic int64_t restarts_at;  /* assign_difference: first offset after the seek, -1 */
} tpart_t;

static tpart_t T[NP];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool hold_armed, held, release_held; /* guarded by mu */
static _Atomic int seek_armed;              /* assign_difference: expect a jump back to 100 */
static _Atomic int slow_us;                 /* sleep per view (keeps partitions running) */

static void enter(tpart_t *t)
{
    if (atomic_fetch_add(&t->in_cb, 1) != 0)
        atomic_fetch_add(&t->overlap, 1);
}

static void leave(tpart_t *t)
{
    atomic_fetch_sub(&t->in_cb, 1);
}

static void on_assign(void *o, kc_part_t *p)
{
    (void)o;
    tpart_t *t = &T[p->partition];
    enter(t);
    /* every earlier copy of this partition was revoked: its on_revoke has returned */
    if (atomic_load(&t->revokes) != atomic_load(&t->assigns))
        atomic_fetch_add(&t->order, 1);
    atomic_fetch_add(&t->assigns, 1);
    atomic_store(&t->expect, 0); /* every assign in this test starts at 0 */
    usleep(2000);                /* widen the window in which an overlap would show */
    leave(t);
}

static void on_revoke(void *o, kc_part_t *p)
{
    (void)o;
    tpart_t *t = &T[p->partition];
    enter(t);
    usleep(2000);
    atomic_fetch_add(&t->revokes, 1);
    leave(t);
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    tpart_t *t = &T[p->partition];
    enter(t);
    kc_cb_result_t res = KC_CB_CONTINUE;
    if (p->partition == 0) {
        pthread_mutex_lock(&mu);
        if (hold_armed) {
            hold_armed = false;
            held = true;
            pthread_cond_broadcast(&cv);
            while (!release_held)
                pthread_cond_wait(&cv, &mu);
            res = KC_CB_PAUSE; /* the old copy pauses on its way out */
        }
        pthread_mutex_unlock(&mu);
    }
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        int64_t exp = atomic_load(&t->expect);
        if (atomic_load(&seek_armed) && off == 100 && exp > 100) {
            atomic_store(&seek_armed, 0);
            atomic_store(&t->restarts_at, off);
            exp = off;
        }
        if (off != exp)
            atomic_fetch_add(&t->disorder, 1);
        atomic_store(&t->expect, off + 1);
        atomic_store(&t->last, off);
        atomic_fetch_add(&t->delivered, 1);
    }
    int us = atomic_load(&slow_us);
    if (us)
        usleep((useconds_t)us);
    leave(t);
    return res;
}

static int setup(void **state)
{
    (void)state;
    const char *args[] = {"--topic", "L",  "--partitions",    "2",  "--records", "3000",
                          "--size",  "16", "--batch-records", "50", NULL};
    g_pid = kc_testkit_spawn("kc-memory-broker", args, g_bs, sizeof g_bs);
    return g_pid > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return kc_testkit_stop(g_pid);
}

/* `group`: NULL, or a group.id and its group.protocol (no auto-commit: every copy of a
 * partition starts at 0, from auto.offset.reset). */
static kc_consumer_t *open_consumer_in(const char *group, const char *protocol)
{
    memset(T, 0, sizeof T);
    for (int i = 0; i < NP; i++)
        atomic_store(&T[i].restarts_at, -1);
    kc_error_t err;
    kc_conf_t *conf = kc_conf_new();
    if (group) {
        assert_int_equal(kc_conf_set(conf, "group.id", group, &err), KC_OK);
        assert_int_equal(kc_conf_set(conf, "group.protocol", protocol, &err), KC_OK);
        assert_int_equal(kc_conf_set(conf, "enable.auto.commit", "false", &err), KC_OK);
    }
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", g_bs, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "worker.threads", "4", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "callback.batch.max.records", "10", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "auto.offset.reset", "earliest", &err), KC_OK);
    kc_callbacks_t cbs = {.on_assign = on_assign, .on_records = on_records, .on_revoke = on_revoke};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

static kc_consumer_t *open_consumer(void)
{
    return open_consumer_in(NULL, NULL);
}

/* Waits until partition i delivered its last record, up to ms. */
static bool wait_end(int i, int ms)
{
    int64_t end = kc_test_now_ms() + ms;
    while (atomic_load(&T[i].last) != RECS - 1 || atomic_load(&T[i].in_cb)) {
        if (kc_test_now_ms() > end)
            return false;
        usleep(5000);
    }
    return true;
}

static void report(const char *tag)
{
    for (int i = 0; i < NP; i++)
        printf("%s: P%d assigns %d revokes %d overlap %d order %d disorder %lld delivered %lld "
               "last %lld\n",
               tag, i, atomic_load(&T[i].assigns), atomic_load(&T[i].revokes),
               atomic_load(&T[i].overlap), atomic_load(&T[i].order),
               (long long)atomic_load(&T[i].disorder), (long long)atomic_load(&T[i].delivered),
               (long long)atomic_load(&T[i].last));
}

static void hold_p0_records(void)
{
    pthread_mutex_lock(&mu);
    hold_armed = true;
    held = release_held = false;
    pthread_mutex_unlock(&mu);
}

static void wait_p0_held(void)
{
    pthread_mutex_lock(&mu);
    while (!held)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static void release_p0(void)
{
    pthread_mutex_lock(&mu);
    release_held = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* via_assign: 0 kc_unassign + kc_assign, 1 kc_assign without P0 then with it, 2 kc_unassign +
 * kc_incremental_assign */
static void reassign(int via_assign)
{
    kc_consumer_t *c = open_consumer();
    kc_error_t err;
    kc_topic_partition_t both[NP] = {{"L", 0, 0}, {"L", 1, 0}};
    kc_topic_partition_t only1[1] = {{"L", 1, KC_OFFSET_STORED}};
    /* STORED: P1 stays where it is when it stays; P0 (new again) starts at auto.offset.reset,
     * earliest */
    kc_topic_partition_t again[NP] = {{"L", 0, KC_OFFSET_STORED}, {"L", 1, KC_OFFSET_STORED}};
    hold_p0_records();
    assert_int_equal(kc_assign(c, both, NP, &err), KC_OK);
    wait_p0_held();
    /* P0's first on_records is held now. Re-assign P0 under it. */
    if (via_assign == 1)
        assert_int_equal(kc_assign(c, only1, 1, &err), KC_OK);
    else
        assert_int_equal(kc_unassign(c, &err), KC_OK);
    if (via_assign == 2)
        assert_int_equal(kc_incremental_assign(c, again, NP, &err), KC_OK);
    else
        assert_int_equal(kc_assign(c, again, NP, &err), KC_OK);
    usleep(300 * 1000); /* time for a wrongly started copy to run */
    int early = atomic_load(&T[0].assigns);
    release_p0();
    bool end0 = wait_end(0, 20000), end1 = wait_end(1, 20000);
    report(via_assign == 1   ? "assign-drop-readd"
           : via_assign == 2 ? "unassign-incremental"
                             : "unassign-assign");
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
    assert_int_equal(early, 1); /* the new copy did not start while the old one was held */
    for (int i = 0; i < NP; i++) {
        assert_int_equal(atomic_load(&T[i].overlap), 0);
        assert_int_equal(atomic_load(&T[i].order), 0);
    }
    assert_true(end0); /* the new copy of P0 kept being fetched up to the end */
    assert_true(end1);
    assert_int_equal(atomic_load(&T[0].assigns), 2);
    assert_int_equal(atomic_load(&T[0].disorder), 0);
    /* P1: re-assigned (on_revoke, on_assign again) by kc_unassign; kept by kc_assign({P1}) */
    assert_int_equal(atomic_load(&T[1].assigns), via_assign == 1 ? 1 : 2);
    assert_int_equal(atomic_load(&T[1].disorder), 0);
}

static void reassign_in_flight(void **state)
{
    (void)state;
    reassign(0); /* kc_unassign, kc_assign */
    reassign(1); /* kc_assign without P0, kc_assign with it */
    reassign(2); /* kc_unassign, kc_incremental_assign */
}

static void subscribe_after_unassign_under(const char *protocol)
{
    char group[64];
    snprintf(group, sizeof group, "lifecycle-sub-%s-%d", protocol, (int)getpid());
    kc_consumer_t *c = open_consumer_in(group, protocol);
    kc_error_t err;
    kc_topic_partition_t both[NP] = {{"L", 0, 0}, {"L", 1, 0}};
    hold_p0_records();
    assert_int_equal(kc_assign(c, both, NP, &err), KC_OK);
    wait_p0_held();
    /* P0's first on_records is held now: its manual copy cannot finish revoking. */
    assert_int_equal(kc_unassign(c, &err), KC_OK);
    const char *topics[] = {"L"};
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    /* The group's assignment has both partitions (P0's copy added, waiting). */
    size_t n = 0;
    int64_t end = kc_test_now_ms() + 20000;
    for (;;) {
        kc_topic_partition_t *tps = NULL;
        assert_int_equal(kc_assignment(c, &tps, &n, &err), KC_OK);
        free(tps);
        if (n == NP || kc_test_now_ms() > end)
            break;
        usleep(20 * 1000);
    }
    usleep(300 * 1000); /* time for a wrongly started copy to run */
    int early = atomic_load(&T[0].assigns);
    release_p0();
    bool end0 = wait_end(0, 20000), end1 = wait_end(1, 20000);
    report(protocol);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
    assert_int_equal(n, NP);    /* the group assigned both partitions while P0 was held */
    assert_int_equal(early, 1); /* and its copy of P0 did not start meanwhile */
    for (int i = 0; i < NP; i++) {
        assert_int_equal(atomic_load(&T[i].overlap), 0);
        assert_int_equal(atomic_load(&T[i].order), 0);
        assert_int_equal(atomic_load(&T[i].assigns), 2); /* the manual copy, the group's */
        assert_int_equal(atomic_load(&T[i].disorder), 0);
    }
    assert_true(end0);
    assert_true(end1);
}

static void subscribe_after_unassign(void **state)
{
    (void)state;
    subscribe_after_unassign_under("consumer");
    subscribe_after_unassign_under("classic");
}

static void assign_difference(void **state)
{
    (void)state;
    kc_consumer_t *c = open_consumer();
    kc_error_t err;
    atomic_store(&slow_us, 1000); /* ~10 records per ms: both are still running below */
    kc_topic_partition_t both[NP] = {{"L", 0, 0}, {"L", 1, 0}};
    assert_int_equal(kc_assign(c, both, NP, &err), KC_OK);
    int64_t end = kc_test_now_ms() + 10000;
    while (atomic_load(&T[0].delivered) < 200 || atomic_load(&T[1].delivered) < 200) {
        assert_true(kc_test_now_ms() < end);
        usleep(1000);
    }
    kc_topic_partition_t keep0[1] = {{"L", 0, KC_OFFSET_STORED}};
    assert_int_equal(kc_assign(c, keep0, 1, &err), KC_OK);
    end = kc_test_now_ms() + 10000;
    while (atomic_load(&T[1].revokes) < 1) {
        assert_true(kc_test_now_ms() < end);
        usleep(1000);
    }
    int64_t before = atomic_load(&T[0].last);
    if (before >= RECS - 1)
        fail_msg("P0 was done before the re-assign: the test proves nothing");
    atomic_store(&seek_armed, 1);
    kc_topic_partition_t seek0[1] = {{"L", 0, 100}};
    assert_int_equal(kc_assign(c, seek0, 1, &err), KC_OK);
    atomic_store(&slow_us, 0);
    bool done = wait_end(0, 20000);
    report("difference");
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
    assert_true(done);
    assert_int_equal(atomic_load(&T[0].assigns), 1);
    assert_int_equal(atomic_load(&T[0].revokes), 1); /* the one from kc_close */
    assert_int_equal(atomic_load(&T[1].assigns), 1);
    assert_int_equal(atomic_load(&T[1].revokes), 1);
    assert_int_equal(atomic_load(&T[0].restarts_at), 100);
    assert_int_equal(atomic_load(&T[0].disorder), 0);
    /* No disorder and one restart at 100: 0..X once, then 100..end once; X was past 100 */
    if (before <= 100)
        fail_msg("P0 was at %lld when seeked back to 100: the test proves nothing",
                 (long long)before);
    for (int i = 0; i < NP; i++)
        assert_int_equal(atomic_load(&T[i].overlap), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reassign_in_flight),
        cmocka_unit_test(assign_difference),
        cmocka_unit_test(subscribe_after_unassign),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
