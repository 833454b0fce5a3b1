/* kc-test-label: threads */
/* Against the suite's cluster: a KIP-848 member's stats JSON lists the partitions the group
 * assigned in "partitions" (with position, high_watermark, lag and worker, as for a manual
 * assignment), and kc_position answers for them; kconsume's group demo reads both. Once the
 * member has consumed everything, each listed partition's position equals its high watermark
 * and kc_position agrees (keyed records, so that every partition has some: a partition nothing
 * was delivered from has position -1 when it started from auto.offset.reset). After kc_commit,
 * each partition's "committed" equals its position. Needs KC_BOOTSTRAP,
 * KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   3
#define RECS 900

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char last[16384];
static long consumed; /* under mu */

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    long n = 0;
    while (kc_records_next(b))
        n++;
    pthread_mutex_lock(&mu);
    consumed += n;
    pthread_mutex_unlock(&mu);
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type != KC_EVENT_STATS)
        return;
    pthread_mutex_lock(&mu);
    snprintf(last, sizeof last, "%s", ev->json);
    pthread_mutex_unlock(&mu);
}

static void group_partitions_in_stats(void **state)
{
    (void)state;
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "kc-g848st-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-g848st-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 3", topic, NP);
    kc_test_cluster("produce %s --records %d --size 50 --keys 32", topic, RECS);

    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", kc_test_env("KC_BOOTSTRAP")},
                           {"group.id", group},
                           {"group.protocol", "consumer"},
                           {"auto.offset.reset", "earliest"},
                           {"statistics.interval.ms", "200"},
                           {"fetch.max.wait.ms", "100"}};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    const char *topics[] = {topic};
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);

    /* Everything consumed and a stats object taken after it lists every partition at its end. */
    char snap[16384] = "";
    int ok = 0;
    for (int i = 0; i < 300 && !ok; i++) { /* up to 30 s */
        usleep(100 * 1000);
        pthread_mutex_lock(&mu);
        long n = consumed;
        snprintf(snap, sizeof snap, "%s", last);
        pthread_mutex_unlock(&mu);
        ok = n >= RECS;
        for (int p = 0; p < NP && ok; p++) {
            long long pos = kc_test_stats_part(snap, topic, p, "position");
            ok = pos >= 0 && pos == kc_test_stats_part(snap, topic, p, "high_watermark");
        }
    }
    if (!ok)
        fail_msg("consumed %ld of %d; last stats: %.1500s", consumed, RECS,
                 strstr(snap, "\"partitions\"") ? strstr(snap, "\"partitions\"") : snap);
    long long sum = 0;
    for (int p = 0; p < NP; p++) {
        long long hw = kc_test_stats_part(snap, topic, p, "high_watermark");
        assert_int_equal(kc_test_stats_part(snap, topic, p, "lag"), 0);
        assert_true(kc_test_stats_part(snap, topic, p, "worker") >= 0);
        int64_t pos = -5;
        if (kc_position(c, topic, p, &pos, &err) != KC_OK)
            fail_msg("kc_position %d: %s", p, err.msg);
        assert_int_equal(pos, hw);
        sum += hw;
    }
    printf("# group stats: %d partitions listed, positions at the high watermarks (sum %lld)\n", NP,
           sum);
    assert_int_equal(sum, RECS);

    /* kc_commit (tps NULL) commits the positions; the stats' "committed" follows the commit
     * (before it: the committed offset the partition started from, or -1). */
    if (kc_commit(c, NULL, 0, 10000, &err) != KC_OK)
        fail_msg("kc_commit: %s", err.msg);
    ok = 0;
    for (int i = 0; i < 50 && !ok; i++) { /* a stats object after the commit: up to 5 s */
        usleep(100 * 1000);
        pthread_mutex_lock(&mu);
        snprintf(snap, sizeof snap, "%s", last);
        pthread_mutex_unlock(&mu);
        ok = 1;
        for (int p = 0; p < NP && ok; p++) {
            long long pos = kc_test_stats_part(snap, topic, p, "position");
            ok = pos > 0 && kc_test_stats_part(snap, topic, p, "committed") == pos;
        }
    }
    if (!ok)
        fail_msg("committed != position after kc_commit; last stats: %.1500s",
                 strstr(snap, "\"partitions\"") ? strstr(snap, "\"partitions\"") : snap);
    assert_int_equal(kc_position(c, topic, NP + 3, &(int64_t){0}, &err), KC_ERR_NOT_FOUND);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(group_partitions_in_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
