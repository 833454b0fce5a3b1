/* kc-test-label: threads */
/*
 * Pull mode: a view a worker queued for kc_poll passed the rebalance gate when it was queued, which
 * can be long before an app thread polls it. Against the memory broker (the test starts it; no
 * cluster), topic Q of 2 partitions; nobody polls while the test changes something under the
 * queued views:
 *  - seek_gives_back_queued_view: kc_seek(P0, 1000) while P0's view of offsets 0..9 waits: the
 *    first view kc_poll returns starts at 1000, and no record below 1000 is polled after the
 *    seek returned (the same rule as push mode: no callback that starts after kc_seek returned
 *    sees a record from before it);
 *  - unassign_gives_back_queued_views: kc_unassign while both partitions' views wait: on_revoke
 *    runs for both without any kc_poll (the views go back to their workers unprocessed, at
 *    once), and kc_poll returns no record of a partition no longer assigned;
 *  - fence_gives_back_queued_views: the same under a group whose member fences itself: a view
 *    queued before the fence is not handed out while the member is fenced (see test_self_fence
 *    for the fence itself). Here the fence is made by cutting the member off through the fault
 *    proxy with a short session.
 * Owner: each case's main thread; callbacks touch only the atomics below.
 */
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   2
#define RECS 3000
#define VIEW 10 /* callback.batch.max.records */

static pid_t g_pid;
static char g_bs[256];
static kc_fp_t *g_fp;

static _Atomic int revoked[NP], assigned[NP], fences;

static int setup(void **state)
{
    (void)state;
    const char *args[] = {"--topic", "Q",  "--partitions",    "2",  "--records", "3000",
                          "--size",  "16", "--batch-records", "50", NULL};
    return kc_test_proxied_broker(args, g_bs, sizeof g_bs, &g_pid, &g_fp);
}

static int teardown(void **state)
{
    (void)state;
    return kc_test_proxied_broker_stop(g_pid, g_fp);
}

static void on_assign(void *o, kc_part_t *p)
{
    (void)o;
    atomic_fetch_add(&assigned[p->partition], 1);
}

static void on_revoke(void *o, kc_part_t *p)
{
    (void)o;
    atomic_fetch_add(&revoked[p->partition], 1);
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type == KC_EVENT_ERROR && strstr(ev->error->msg, "self-fenced"))
        atomic_fetch_add(&fences, 1);
}

/* A pull-mode consumer (no on_records); `extra`: more settings, "k=v;k=v". Four workers: two
 * hold the partitions' queued views, the others run on_event and the revocations. */
static kc_consumer_t *open_pull(const char *bs, const char *extra)
{
    for (int i = 0; i < NP; i++) {
        atomic_store(&revoked[i], 0);
        atomic_store(&assigned[i], 0);
    }
    atomic_store(&fences, 0);
    kc_conf_t *conf = kc_conf_new();
    char buf[512];
    snprintf(buf, sizeof buf,
             "bootstrap.servers=%s;worker.threads=4;callback.batch.max.records=%d;"
             "auto.offset.reset=earliest%s%s",
             bs, VIEW, extra[0] ? ";" : "", extra);
    kc_test_conf_set_all(conf, buf);
    kc_callbacks_t cbs = {.on_assign = on_assign, .on_revoke = on_revoke, .on_event = on_event};
    return kc_test_consumer(conf, &cbs);
}

static void close_pull(kc_consumer_t *c)
{
    kc_error_t err;
    kc_err_t rc = kc_close(c, 5000, &err);
    if (rc != KC_OK)
        fail_msg("kc_close: %s: %s", kc_err_name(rc), err.msg);
    kc_destroy(c);
}

/* Polls one view and releases it; its partition, first and last offsets (-1: none). */
static int poll_one(kc_consumer_t *c, int timeout_ms, int64_t *first, int64_t *last)
{
    kc_records_t *b = NULL;
    kc_error_t err;
    *first = *last = -1;
    assert_int_equal(kc_poll(c, timeout_ms, &b, &err), KC_OK);
    if (!b)
        return -1;
    int part = kc_records_partition(b)->partition;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        if (*first < 0)
            *first = kc_record_offset(r);
        *last = kc_record_offset(r);
    }
    kc_records_release(c, b, KC_CB_CONTINUE);
    return part;
}

static void seek_gives_back_queued_view(void **state)
{
    (void)state;
    kc_consumer_t *c = open_pull(g_bs, "");
    kc_error_t err;
    kc_topic_partition_t p0[1] = {{"Q", 0, 0}};
    assert_int_equal(kc_assign(c, p0, 1, &err), KC_OK);
    usleep(500 * 1000); /* P0's first view (0..9) is queued; nobody polls */
    assert_int_equal(kc_seek(c, "Q", 0, KC_SEEK_OFFSET, 1000, &err), KC_OK);
    int64_t first, last, expect = 1000, polled = 0, stale = 0, disorder = 0, first_seen = -1;
    int64_t end = kc_test_now_ms() + 20000;
    while (expect < RECS && kc_test_now_ms() < end) {
        if (poll_one(c, 200, &first, &last) < 0)
            continue;
        if (first_seen < 0)
            first_seen = first;
        stale += first < 1000;
        disorder += first != expect;
        polled += last - first + 1;
        expect = last + 1;
    }
    printf("# seek: first view polled after the seek starts at %lld; stale views %lld, "
           "out of order %lld, records %lld\n",
           (long long)first_seen, (long long)stale, (long long)disorder, (long long)polled);
    close_pull(c);
    assert_int_equal(first_seen, 1000);
    assert_int_equal(stale, 0);
    assert_int_equal(disorder, 0);
    assert_int_equal(polled, RECS - 1000);
}

static void unassign_gives_back_queued_views(void **state)
{
    (void)state;
    kc_consumer_t *c = open_pull(g_bs, "");
    kc_error_t err;
    kc_topic_partition_t both[NP] = {{"Q", 0, 0}, {"Q", 1, 0}};
    assert_int_equal(kc_assign(c, both, NP, &err), KC_OK);
    usleep(500 * 1000); /* a view of each partition is queued (a worker each) */
    assert_int_equal(kc_unassign(c, &err), KC_OK);
    /* No kc_poll: the queued views go back to their workers, which run on_revoke. */
    int64_t t0 = kc_test_now_ms();
    while ((atomic_load(&revoked[0]) < 1 || atomic_load(&revoked[1]) < 1) &&
           kc_test_now_ms() - t0 < 3000)
        usleep(10 * 1000);
    int64_t revoke_ms = kc_test_now_ms() - t0;
    int64_t first, last;
    int part = poll_one(c, 300, &first, &last);
    printf("# unassign: on_revoke %d + %d after %lld ms without a poll; the poll after it got "
           "partition %d (offsets %lld..%lld)\n",
           atomic_load(&revoked[0]), atomic_load(&revoked[1]), (long long)revoke_ms, part,
           (long long)first, (long long)last);
    close_pull(c);
    assert_int_equal(atomic_load(&revoked[0]), 1);
    assert_int_equal(atomic_load(&revoked[1]), 1);
    assert_true(revoke_ms < 3000);
    assert_int_equal(part, -1); /* nothing of a partition no longer assigned */
}

static void fence_gives_back_queued_views(void **state)
{
    (void)state;
    char extra[256];
    snprintf(extra, sizeof extra,
             "group.id=kc-pull-fence-%d;group.protocol=classic;session.timeout.ms=6000;"
             "heartbeat.interval.ms=500;request.timeout.ms=5000;rebalance.timeout.ms=10000",
             (int)getpid());
    kc_consumer_t *c = open_pull(kc_fp_bootstrap(g_fp), extra);
    kc_error_t err;
    const char *topics[] = {"Q"};
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    int64_t first, last, end = kc_test_now_ms() + 30000;
    while ((atomic_load(&assigned[0]) < 1 || atomic_load(&assigned[1]) < 1) &&
           kc_test_now_ms() < end)
        poll_one(c, 100, &first, &last);
    assert_int_equal(atomic_load(&assigned[0]) + atomic_load(&assigned[1]), 2);
    usleep(300 * 1000); /* views of both partitions are queued again; nobody polls */
    char reply[256];
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "blackhole on"), 0);
    end = kc_test_now_ms() + 15000;
    while (atomic_load(&fences) < 1 && kc_test_now_ms() < end)
        usleep(20 * 1000);
    int fenced = atomic_load(&fences);
    /* Fenced: the views queued before it are not handed out. */
    int part = poll_one(c, 500, &first, &last);
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "blackhole off"), 0);
    printf("# fence: self-fence events %d; the poll while fenced got partition %d (offsets "
           "%lld..%lld)\n",
           fenced, part, (long long)first, (long long)last);
    close_pull(c);
    assert_int_equal(fenced, 1);
    assert_int_equal(part, -1);
}

int main(void)
{
    kc_test_filter();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seek_gives_back_queued_view),
        cmocka_unit_test(unassign_gives_back_queued_views),
        cmocka_unit_test(fence_gives_back_queued_views),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
