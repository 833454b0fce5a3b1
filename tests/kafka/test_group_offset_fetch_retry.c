/* kc-test-label: threads */
/* A group member whose OffsetFetch is refused for a retriable reason starts each partition
 * exactly at its committed offset, never from auto.offset.reset (engine/group/offset_pending.h).
 *
 * For group.protocol=consumer and =classic: a 3-partition topic, offsets committed half-way in
 * each partition (anonymously, straight to the cluster), then a member behind kc-fault-proxy
 * with auto.offset.reset=latest and request.timeout.ms=1500, while the proxy answers the next
 * OffsetFetch responses with UNSTABLE_OFFSET_COMMIT for partition 1 and, on fewer of them,
 * COORDINATOR_LOAD_IN_PROGRESS for the whole group: more refusals than the engine's own
 * re-asking fits in one request deadline, so the first fetch of the assignment fails. Expected:
 * every partition's first record is its committed offset and exactly the records after it
 * arrive (the code before this fix started them at the log end: nothing delivered), the proxy
 * fired its injections, and no error event was raised (all refusals are retriable). A KIP-848
 * member refused with GROUP_AUTHORIZATION_FAILED (starts_at_committed's `refused`) starts there
 * too once the refusals stop, having reported them. Then, for
 * both protocols, a close while the refusals go on (the driver's retries in flight) is clean.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
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

#define NP   3
#define RECS 300

static char topic[64];
static kc_fp_t *g_fp;
/* Written by workers, read by the test thread. */
static _Atomic int64_t first_off[NP], count[NP];
static _Atomic int errors;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-offretry-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 3", topic, NP);
    kc_test_cluster("produce %s --records %d --size 50 --keys 30", topic, RECS);
    g_fp = kc_fp_start(kc_test_env("KC_BOOTSTRAP"));
    return g_fp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return g_fp ? kc_fp_stop(g_fp) : 0;
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    const kc_record_t *r;
    while ((r = kc_records_next(b)) != NULL) {
        int64_t off = kc_record_offset(r);
        if (p->partition < 0 || p->partition >= NP)
            continue;
        int64_t unset = -1;
        atomic_compare_exchange_strong(&first_off[p->partition], &unset, off);
        atomic_fetch_add(&count[p->partition], 1);
    }
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type == KC_EVENT_ERROR) {
        atomic_fetch_add(&errors, 1);
        fprintf(stderr, "# error event: %s\n", ev->error->msg);
    }
}

static kc_consumer_t *consumer(const char *bootstrap, const char *group, const char *protocol)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", bootstrap}, {"group.id", group},
                           {"group.protocol", protocol},     {"enable.auto.commit", "false"},
                           {"auto.offset.reset", "latest"},  {"request.timeout.ms", "1500"},
                           {"worker.threads", "2"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

/* refused: instead of retriable refusals, the first 5 answers refuse the whole group with
 * GROUP_AUTHORIZATION_FAILED (as a missing ACL would): reported as error events, the partitions
 * are not started meanwhile, they are asked again, and once the answers are good (the ACL
 * fixed) they start exactly at their committed offsets, without a restart. */
static void starts_at_committed(const char *protocol, bool refused)
{
    char group[96], reply[256];
    snprintf(group, sizeof group, "kc-offretry-g-%s-%d", protocol, (int)getpid());
    for (int i = 0; i < NP; i++) {
        atomic_store(&first_off[i], -1);
        atomic_store(&count[i], 0);
    }
    atomic_store(&errors, 0);

    /* Half-way commits, straight to the cluster, by a non-member of the group. */
    kc_error_t err;
    kc_consumer_t *admin = consumer(kc_test_env("KC_BOOTSTRAP"), group, protocol);
    int64_t hi[NP], mid[NP];
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++) {
        assert_int_equal(kc_query_watermarks(admin, topic, i, NULL, &hi[i], 10000, &err), KC_OK);
        assert_true(hi[i] >= 4);
        mid[i] = hi[i] / 2;
        tps[i] = (kc_topic_partition_t){topic, i, mid[i]};
    }
    if (kc_commit(admin, tps, NP, 10000, &err) != KC_OK)
        fail_msg("kc_commit: %s", err.msg);
    for (int i = 0; i < NP; i++)
        tps[i].offset = 0;
    assert_int_equal(kc_committed(admin, tps, NP, 10000, &err), KC_OK);
    for (int i = 0; i < NP; i++)
        assert_int_equal(tps[i].offset, mid[i]);
    assert_int_equal(kc_close(admin, 10000, &err), KC_OK);
    kc_destroy(admin);

    /* The member, behind the proxy: its first OffsetFetch answers are refused. */
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "clear"), 0);
    long fired0 = kc_fp_stat(g_fp, "fired.inject");
    if (refused) {
        assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply,
                                   "inject api=OffsetFetch error=GROUP_AUTHORIZATION_FAILED "
                                   "scope=top count=5"),
                         0);
    } else {
        assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply,
                                   "inject api=OffsetFetch error=UNSTABLE_OFFSET_COMMIT "
                                   "scope=partition partition=1 count=14"),
                         0);
        assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply,
                                   "inject api=OffsetFetch error=COORDINATOR_LOAD_IN_PROGRESS "
                                   "scope=top count=6"),
                         0);
    }
    kc_consumer_t *c = consumer(kc_fp_bootstrap(g_fp), group, protocol);
    const char *sub[] = {topic};
    int64_t t0 = now_ms();
    assert_int_equal(kc_subscribe(c, sub, 1, &err), KC_OK);
    int64_t want = 0;
    for (int i = 0; i < NP; i++)
        want += hi[i] - mid[i];
    for (;;) {
        int64_t got = 0;
        for (int i = 0; i < NP; i++)
            got += atomic_load(&count[i]);
        if (got >= want || now_ms() - t0 > 45000)
            break;
        usleep(20 * 1000);
    }
    usleep(300 * 1000); /* anything extra (a re-read) would show now */
    long fired = kc_fp_stat(g_fp, "fired.inject") - fired0;
    printf("# %s%s: %lld ms, %ld injected refusals, %d error events\n", protocol,
           refused ? " (GROUP_AUTHORIZATION_FAILED)" : "", (long long)(now_ms() - t0), fired,
           atomic_load(&errors));
    for (int i = 0; i < NP; i++)
        printf("#   p%d: committed %lld, end %lld, first delivered %lld, delivered %lld\n", i,
               (long long)mid[i], (long long)hi[i], (long long)atomic_load(&first_off[i]),
               (long long)atomic_load(&count[i]));
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "clear"), 0);
    assert_true(fired >= (refused ? 5 : 10)); /* refused: every refusal was asked past; else
                                                  the refusals outlasted one request deadline */
    for (int i = 0; i < NP; i++) {
        assert_int_equal(atomic_load(&first_off[i]), mid[i]);
        assert_int_equal(atomic_load(&count[i]), hi[i] - mid[i]);
    }
    if (refused) /* reported (the first at once), not on every one of the 5 retries */
        assert_true(atomic_load(&errors) >= 1 && atomic_load(&errors) <= 2);
    else
        assert_int_equal(atomic_load(&errors), 0);
}

/* Closing while the committed offsets are still being asked for: the retry in flight ends with
 * the consumer (ASan: no leak, no use after free), nothing was delivered, no error event. */
static void close_during_retry(const char *protocol)
{
    char group[96], reply[256];
    snprintf(group, sizeof group, "kc-offretry-c-%s-%d", protocol, (int)getpid());
    for (int i = 0; i < NP; i++) {
        atomic_store(&first_off[i], -1);
        atomic_store(&count[i], 0);
    }
    atomic_store(&errors, 0);
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "clear"), 0);
    long fired0 = kc_fp_stat(g_fp, "fired.inject");
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply,
                               "inject api=OffsetFetch error=UNSTABLE_OFFSET_COMMIT "
                               "scope=partition count=1000"),
                     0);
    kc_error_t err;
    kc_consumer_t *c = consumer(kc_fp_bootstrap(g_fp), group, protocol);
    const char *sub[] = {topic};
    assert_int_equal(kc_subscribe(c, sub, 1, &err), KC_OK);
    int64_t t0 = now_ms();
    while (kc_fp_stat(g_fp, "fired.inject") - fired0 < 8 && now_ms() - t0 < 30000)
        usleep(50 * 1000); /* past the first request deadline: the driver's own retries */
    long fired = kc_fp_stat(g_fp, "fired.inject") - fired0;
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "clear"), 0);
    printf("# %s: closed after %ld refusals\n", protocol, fired);
    assert_true(fired >= 8);
    for (int i = 0; i < NP; i++)
        assert_int_equal(atomic_load(&count[i]), 0);
    assert_int_equal(atomic_load(&errors), 0);
}

static void close_during_retry_848(void **state)
{
    (void)state;
    close_during_retry("consumer");
}

static void close_during_retry_classic(void **state)
{
    (void)state;
    close_during_retry("classic");
}

static void kip848_member(void **state)
{
    (void)state;
    starts_at_committed("consumer", false);
}

static void classic_member(void **state)
{
    (void)state;
    starts_at_committed("classic", false);
}

static void kip848_member_refused_then_readable(void **state)
{
    (void)state;
    starts_at_committed("consumer", true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kip848_member),
        cmocka_unit_test(classic_member),
        cmocka_unit_test(kip848_member_refused_then_readable),
        cmocka_unit_test(close_during_retry_848),
        cmocka_unit_test(close_during_retry_classic),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
