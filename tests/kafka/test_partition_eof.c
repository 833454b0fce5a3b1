/* Against the suite's cluster: enable.partition.eof (KC_EVENT_PARTITION_EOF).
 *  1. Manual assignment of a 2-partition topic, 10 records in partition 0 and none in 1, delivered
 *     slowly (one record per callback, 30 ms each, so the fetch reaches the end long before the
 *     callbacks do): one event per partition, partition 0's at offset 10 only after all 10
 *     on_records returned, partition 1's at 0; nothing repeated over many empty long polls; 5
 *     more records give one more event, at 15, after those 5.
 *  2. The same without enable.partition.eof: no event.
 *  3. A KIP-848 group member gets the events for the partitions it is assigned.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define MAXEV 32

static atomic_long recs[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int partition;
    int64_t offset;
    long recs_then; /* the partition's delivered records when the event came */
    int topic_ok;
} evs[MAXEV];
static int n_ev; /* under mu */
static char cur_topic[64];

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    long n = 0;
    while (kc_records_next(b))
        n++;
    kc_test_sleep_ms(30);
    atomic_fetch_add(&recs[p->partition & 1], n);
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type != KC_EVENT_PARTITION_EOF)
        return;
    pthread_mutex_lock(&mu);
    if (n_ev < MAXEV) {
        evs[n_ev].partition = ev->partition;
        evs[n_ev].offset = ev->offset;
        evs[n_ev].recs_then = atomic_load(&recs[ev->partition & 1]);
        evs[n_ev].topic_ok = ev->topic && strcmp(ev->topic, cur_topic) == 0;
    }
    n_ev++;
    pthread_mutex_unlock(&mu);
}

static int events(void)
{
    pthread_mutex_lock(&mu);
    int n = n_ev;
    pthread_mutex_unlock(&mu);
    return n;
}

static void reset(const char *tag)
{
    pthread_mutex_lock(&mu);
    n_ev = 0;
    pthread_mutex_unlock(&mu);
    atomic_store(&recs[0], 0);
    atomic_store(&recs[1], 0);
    snprintf(cur_topic, sizeof cur_topic, "eof-%s-%d", tag, (int)getpid());
}

static void sh(const char *fmt, const char *a, const char *b)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

static void create_and_fill(int records)
{
    char line[512];
    snprintf(line, sizeof line, "%s topic create %s --partitions 2 --dir %s >/dev/null",
             kc_test_env("KC_TESTKIT"), cur_topic, kc_test_env("KC_CLUSTER_DIR"));
    if (system(line) != 0)
        fail_msg("failed: %s", line);
    char n[16];
    snprintf(n, sizeof n, "%d", records);
    snprintf(line, sizeof line, "seq 1 %s | kcat -P -b %s -t %%s -p 0", n,
             kc_test_env("KC_BOOTSTRAP"));
    sh(line, cur_topic, "");
}

static kc_consumer_t *consumer(const char *eof, const char *group)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", kc_test_env("KC_BOOTSTRAP")},
                           {"enable.partition.eof", eof},
                           {"callback.batch.max.records", "1"},
                           {"fetch.max.wait.ms", "100"},
                           {"auto.offset.reset", "earliest"},
                           {"group.id", group ? group : ""},
                           {"group.protocol", "consumer"}};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++) {
        if (!strcmp(kv[i][0], "group.id") && !group)
            continue;
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    }
    kc_callbacks_t cbs = {
        .size = sizeof(kc_callbacks_t), .on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

static void wait_events(int want, int ms)
{
    for (int t = 0; t < ms && events() < want; t += 50)
        kc_test_sleep_ms(50);
}

/* The events so far are exactly `n`, each (partition, offset, records delivered by then). */
static void expect(int n, const int *part, const int64_t *off, const long *then)
{
    pthread_mutex_lock(&mu);
    int got = n_ev;
    pthread_mutex_unlock(&mu);
    if (got != n)
        fail_msg("%d EOF events, want %d", got, n);
    for (int i = 0; i < n; i++) {
        int j = -1; /* the two partitions' events may come in either order */
        for (int k = 0; k < n && j < 0; k++)
            if (evs[k].partition == part[i] && evs[k].offset == off[i])
                j = k;
        if (j < 0)
            fail_msg("no EOF event for partition %d at %lld", part[i], (long long)off[i]);
        assert_true(evs[j].topic_ok);
        if (evs[j].recs_then != then[i])
            fail_msg("EOF of partition %d at %lld came with %ld records delivered, want %ld",
                     part[i], (long long)off[i], evs[j].recs_then, then[i]);
    }
}

static void manual_eof(void **state)
{
    (void)state;
    reset("manual");
    create_and_fill(10);
    kc_consumer_t *c = consumer("true", NULL);
    kc_error_t err;
    kc_topic_partition_t tps[] = {{cur_topic, 0, KC_OFFSET_BEGINNING},
                                  {cur_topic, 1, KC_OFFSET_BEGINNING}};
    assert_int_equal(kc_assign(c, tps, 2, &err), KC_OK);
    wait_events(2, 20000);
    kc_test_sleep_ms(1500); /* ~15 empty long polls per partition: nothing more */
    expect(2, (const int[]){0, 1}, (const int64_t[]){10, 0}, (const long[]){10, 0});
    sh("seq 11 15 | kcat -P -b %s -t %s -p 0", kc_test_env("KC_BOOTSTRAP"), cur_topic);
    wait_events(3, 20000);
    kc_test_sleep_ms(1000);
    expect(3, (const int[]){0, 1, 0}, (const int64_t[]){10, 0, 15}, (const long[]){10, 0, 15});
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static void off_by_default(void **state)
{
    (void)state;
    reset("off");
    create_and_fill(10);
    kc_consumer_t *c = consumer("false", NULL);
    kc_error_t err;
    kc_topic_partition_t tps[] = {{cur_topic, 0, KC_OFFSET_BEGINNING},
                                  {cur_topic, 1, KC_OFFSET_BEGINNING}};
    assert_int_equal(kc_assign(c, tps, 2, &err), KC_OK);
    for (int t = 0; t < 20000 && atomic_load(&recs[0]) < 10; t += 50)
        kc_test_sleep_ms(50);
    assert_int_equal(atomic_load(&recs[0]), 10);
    kc_test_sleep_ms(1000);
    assert_int_equal(events(), 0);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static void group_eof(void **state)
{
    (void)state;
    reset("group");
    create_and_fill(6);
    char group[80];
    snprintf(group, sizeof group, "%s-g", cur_topic);
    kc_consumer_t *c = consumer("true", group);
    kc_error_t err;
    const char *topics[] = {cur_topic};
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    wait_events(2, 30000);
    kc_test_sleep_ms(1000);
    expect(2, (const int[]){0, 1}, (const int64_t[]){6, 0}, (const long[]){6, 0});
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(manual_eof),
        cmocka_unit_test(off_by_default),
        cmocka_unit_test(group_eof),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
