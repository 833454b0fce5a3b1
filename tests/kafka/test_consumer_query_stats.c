/* kc-test-label: threads */
/* Against the suite's cluster: kc_topic_partitions (count, unknown topic → KC_ERR_NOT_FOUND),
 * kc_query_watermarks (low 0, the highs add up to what was produced, a partition that does not
 * exist → KC_ERR_NOT_FOUND, an unassigned partition works; the list form answers the same, a
 * missing entry failing alone), and the stats JSON on an idle
 * assignment (from the end): fetch_requests keeps growing while fetch_partitions_sent stays flat
 * (KIP-227 incremental sessions send nothing for unchanged partitions), every broker fetched
 * from has state "up" (its connection's), and every object matches the contract
 * (tests/support/check_stats.py). Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR. */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   3
#define RECS 600

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static char last[16384];
static int n_stats;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    while (kc_records_next(b))
        ;
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type != KC_EVENT_STATS)
        return;
    pthread_mutex_lock(&mu);
    fprintf(out, "%s\n", ev->json);
    snprintf(last, sizeof last, "%s", ev->json);
    n_stats++;
    pthread_mutex_unlock(&mu);
}

/* Sums a broker counter over the "brokers" array of one stats object. */
static unsigned long long broker_sum(const char *json, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *end = strstr(json, "\"partitions\":");
    unsigned long long s = 0;
    for (const char *p = strstr(json, key); p && (!end || p < end); p = strstr(p + 1, key))
        s += strtoull(p + strlen(key), NULL, 10);
    return s;
}

/* Every broker of one stats object: a broker fetched from is "up" (its connection is ready on an
 * idle, healthy cluster) and the others "idle" (never needed); returns how many are up. */
static int brokers_up(const char *json)
{
    const char *end = strstr(json, "\"partitions\":");
    int up = 0;
    for (const char *p = strstr(json, "{\"id\":"); p && (!end || p < end);
         p = strstr(p + 1, "{\"id\":")) {
        const char *st = strstr(p, "\"state\":\""), *fr = strstr(p, "\"fetch_requests\":");
        assert_non_null(st);
        assert_non_null(fr);
        st += strlen("\"state\":\"");
        unsigned long long requests = strtoull(fr + strlen("\"fetch_requests\":"), NULL, 10);
        int is_up = strncmp(st, "up\"", 3) == 0;
        printf("# broker %d: state %.*s, fetch_requests %llu\n", atoi(p + 6),
               (int)strcspn(st, "\""), st, requests);
        if (requests > 0)
            assert_true(is_up);
        else
            assert_true(is_up || strncmp(st, "idle\"", 5) == 0);
        up += is_up;
    }
    return up;
}

static void snapshot(char *dst, size_t cap)
{
    pthread_mutex_lock(&mu);
    snprintf(dst, cap, "%s", last);
    pthread_mutex_unlock(&mu);
}

static void query_and_idle_stats(void **state)
{
    (void)state;
    char topic[64], cmd[256];
    snprintf(topic, sizeof topic, "kc-query-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 3", topic, NP);
    kc_test_cluster("produce %s --records %d --size 50", topic, RECS);

    char path[] = "/tmp/kc-stats-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    out = fdopen(fd, "w");
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"), &err),
                     KC_OK);
    assert_int_equal(kc_conf_set(conf, "statistics.interval.ms", "250", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "fetch.max.wait.ms", "100", &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);

    int32_t n = 0;
    if (kc_topic_partitions(c, topic, &n, 10000, &err) != KC_OK)
        fail_msg("kc_topic_partitions: %s", err.msg);
    assert_int_equal(n, NP);
    assert_int_equal(kc_topic_partitions(c, "kc-no-such-topic-xyz", &n, 10000, &err),
                     KC_ERR_NOT_FOUND);
    int64_t sum = 0;
    for (int p = 0; p < NP; p++) {
        int64_t lo = -5, hi = -5;
        if (kc_query_watermarks(c, topic, p, &lo, &hi, 10000, &err) != KC_OK)
            fail_msg("kc_query_watermarks %d: %s", p, err.msg);
        assert_int_equal(lo, 0);
        assert_true(hi >= 0);
        sum += hi;
    }
    printf("# watermarks: highs add up to %lld\n", (long long)sum);
    assert_int_equal(sum, RECS);
    assert_int_equal(kc_query_watermarks(c, topic, NP + 4, NULL, NULL, 10000, &err),
                     KC_ERR_NOT_FOUND);
    /* The list form: the same answers in one question; an entry that does not exist fails
     * alone (its own err), the call names it, and the others are answered. */
    kc_watermarks_t wl[NP + 1];
    for (int p = 0; p < NP; p++)
        wl[p] = (kc_watermarks_t){.topic = topic, .partition = p, .low = -5, .high = -5};
    wl[NP] = (kc_watermarks_t){.topic = topic, .partition = NP + 4};
    assert_int_equal(kc_query_watermarks_list(c, wl, NP, 10000, &err), KC_OK);
    int64_t list_sum = 0;
    for (int p = 0; p < NP; p++) {
        assert_int_equal(wl[p].err, KC_OK);
        assert_int_equal(wl[p].low, 0);
        list_sum += wl[p].high;
    }
    assert_int_equal(list_sum, RECS);
    for (int p = 0; p < NP + 1; p++) /* nothing left from the first call */
        wl[p].low = wl[p].high = -5, wl[p].err = KC_ERR_TIMEOUT;
    assert_int_equal(kc_query_watermarks_list(c, wl, NP + 1, 10000, &err), KC_ERR_NOT_FOUND);
    printf("# watermarks list with a missing partition: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "[7]"));
    assert_non_null(strstr(err.msg, "(1 of 4 failed)"));
    list_sum = 0;
    for (int p = 0; p < NP; p++) {
        assert_int_equal(wl[p].err, KC_OK);
        assert_int_equal(wl[p].low, 0);
        list_sum += wl[p].high;
    }
    assert_int_equal(list_sum, RECS);
    assert_int_equal(wl[NP].err, KC_ERR_NOT_FOUND);
    assert_int_equal(wl[NP].low, -1);
    assert_int_equal(wl[NP].high, -1);

    kc_topic_partition_t tps[NP];
    for (int p = 0; p < NP; p++)
        tps[p] = (kc_topic_partition_t){topic, p, KC_OFFSET_END};
    assert_int_equal(kc_assign(c, tps, NP, &err), KC_OK);
    sleep(2); /* sessions established */
    char a[16384], b[16384];
    snapshot(a, sizeof a);
    sleep(3);
    snapshot(b, sizeof b);
    unsigned long long ra = broker_sum(a, "fetch_requests"), rb = broker_sum(b, "fetch_requests");
    unsigned long long pa = broker_sum(a, "fetch_partitions_sent"),
                       pb = broker_sum(b, "fetch_partitions_sent");
    printf("# idle 3 s: fetch_requests %llu -> %llu, fetch_partitions_sent %llu -> %llu\n", ra, rb,
           pa, pb);
    assert_true(rb >= ra + 5);
    assert_true(pa >= NP); /* the session's first request listed them */
    assert_true(pb == pa);
    assert_true(brokers_up(b) >= 1);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
    fclose(out);
    snprintf(cmd, sizeof cmd, "python3 %s %s", kc_test_src_path("tests/support/check_stats.py"),
             path);
    int rc = system(cmd);
    unlink(path);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(query_and_idle_stats)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
