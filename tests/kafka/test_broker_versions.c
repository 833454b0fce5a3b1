/* kc-test-label: threads */
/* kconsume against the protocol versions of every broker it supports (Kafka 2.1 and newer), on
 * the suite's cluster (Kafka 4.x) and through the fault proxy in front of it, whose cap-api rule
 * lowers each API's newest version in the ApiVersions answers to what an older broker offers
 * and refuses (closing the connection, counted in over_cap) any request above the cap, so a
 * client that ignored the answer fails here instead of passing against the 4.x broker behind.
 *  newest_versions      no proxy: manual assignment reads every record of a 4-partition topic
 *                       written by gzip, lz4, zstd and snappy producers exactly once, commits
 *                       and reads the committed offsets back; a classic group (group.protocol
 *                       auto, default settings) consumes everything.
 *  kafka_2_8_versions   Kafka 2.8.2's ranges (Fetch v12: topics by name, with the topic ids
 *                       Metadata v11 gives; FindCoordinator v3: one key; OffsetFetch v7: one
 *                       group; no ConsumerGroupHeartbeat): the same, with a real incremental
 *                       fetch session (session id set, idle requests carry 0 partitions).
 *  kafka_2_1_versions   Kafka 2.1's ranges (Fetch v10; Metadata v7: no topic ids, so synthetic
 *                       keys; ListOffsets v4; OffsetCommit v6; OffsetFetch v5; FindCoordinator
 *                       v2; JoinGroup v3: no MEMBER_ID_REQUIRED round): the same.
 *  below_floor_fails_fast  a broker older than kconsume's floor: Fetch capped at v6 (before
 *                       KIP-227 sessions), Metadata at v6, JoinGroup below the broker's own
 *                       floor (no version at all): each fails within 5 s with KC_ERR_UNSUPPORTED
 *                       (KC_ERR_FATAL for the group) naming the API, the broker's range and
 *                       ours, once, and nothing of that API is sent.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite); runs against a testkit
 * cluster of any Kafka version too (the profiles then cap that broker's own ranges). */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_proxy_client.h"
#include "kconsume.h"

#define NP      4
#define PER_RUN 250 /* records per producer run, one run per compression codec */
#define RUNS    4
#define RECS    (PER_RUN * RUNS)
#define MAXOFF  4096

typedef struct seen {
    pthread_mutex_t mu;
    uint8_t count[NP][MAXOFF]; /* deliveries per (partition, offset) */
    long records, dups;
    char stats[32768];
    char error[512];
    kc_err_t error_code;
    long errors;
    int64_t error_ms;
} seen_t;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    seen_t *s = o;
    const kc_record_t *r;
    pthread_mutex_lock(&s->mu);
    while ((r = kc_records_next(b)) != NULL) {
        int64_t off = kc_record_offset(r);
        if (p->partition < 0 || p->partition >= NP || off < 0 || off >= MAXOFF)
            continue;
        if (s->count[p->partition][off]++)
            s->dups++;
        s->records++;
    }
    pthread_mutex_unlock(&s->mu);
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    seen_t *s = o;
    pthread_mutex_lock(&s->mu);
    if (ev->type == KC_EVENT_STATS)
        snprintf(s->stats, sizeof s->stats, "%s", ev->json);
    if (ev->type == KC_EVENT_ERROR) {
        printf("# error: %s: %s\n", kc_err_name(ev->error->code), ev->error->msg);
        if ((ev->error->code == KC_ERR_UNSUPPORTED || ev->error->code == KC_ERR_FATAL) &&
            s->errors++ == 0) {
            snprintf(s->error, sizeof s->error, "%s", ev->error->msg);
            s->error_code = ev->error->code;
            s->error_ms = kc_test_now_ms();
        }
    }
    pthread_mutex_unlock(&s->mu);
}

static char topic[64];
static int64_t high[NP]; /* each partition's end after the producers */

/* One topic for every case: four producer runs, one per codec, keyed so that every partition
 * gets batches of each. */
static int setup(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-vers-%d", (int)getpid());
    /* Replicated over the suite's three brokers; a one-broker cluster of an older Kafka
     * (KAFKA_VERSION=2.8.2 tests/testkit/cluster up --brokers 1) runs this test too. */
    int brokers = 1;
    for (const char *b = kc_test_env("KC_BOOTSTRAP"); *b; b++)
        brokers += *b == ',';
    kc_test_cluster("topic create %s --partitions %d --replication %d", topic, NP,
                    brokers < 3 ? brokers : 3);
    static const char *codecs[RUNS] = {"gzip", "lz4", "zstd", "snappy"};
    for (int i = 0; i < RUNS; i++) {
        kc_test_cluster("produce %s --records %d --size 64 --keys 16 --compression %s", topic,
                        PER_RUN, codecs[i]);
    }
    return 0;
}

static kc_consumer_t *consumer(seen_t *s, const char *bootstrap, const char *group)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", bootstrap},  {"group.id", group},
                           {"auto.offset.reset", "earliest"}, {"enable.auto.commit", "false"},
                           {"statistics.interval.ms", "100"}, {"fetch.max.wait.ms", "100"}};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event, .opaque = s};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

static long records_of(seen_t *s)
{
    pthread_mutex_lock(&s->mu);
    long n = s->records;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void wait_records(seen_t *s, long n, int ms)
{
    for (int64_t end = kc_test_now_ms() + ms; kc_test_now_ms() < end && records_of(s) < n;)
        kc_test_sleep_ms(50);
}

/* Every offset below each partition's end delivered exactly once. */
static void assert_exactly_once(seen_t *s)
{
    pthread_mutex_lock(&s->mu);
    long missing = 0, total = 0;
    for (int p = 0; p < NP; p++)
        for (int64_t o = 0; o < high[p] && o < MAXOFF; o++)
            missing += s->count[p][o] == 0;
    for (int p = 0; p < NP; p++)
        total += high[p];
    long recs = s->records, dups = s->dups;
    pthread_mutex_unlock(&s->mu);
    printf("#   records %ld of %ld, missing %ld, duplicates %ld\n", recs, total, missing, dups);
    assert_int_equal(total, RECS);
    assert_int_equal(missing, 0);
    assert_int_equal(dups, 0);
    assert_int_equal(recs, RECS);
}

/* The integer after `"key":` in the first broker object of the stats carrying it, -1 if none. */
static long broker_stat(seen_t *s, const char *key, int broker)
{
    pthread_mutex_lock(&s->mu);
    char pat[64];
    snprintf(pat, sizeof pat, "{\"id\":%d,", broker);
    const char *b = strstr(s->stats, pat);
    long v = -1;
    if (b) {
        char k[64];
        snprintf(k, sizeof k, "\"%s\":", key);
        const char *q = strstr(b, k);
        const char *end = strchr(b, '}');
        if (q && end && q < end)
            v = strtol(q + strlen(k), NULL, 10);
    }
    pthread_mutex_unlock(&s->mu);
    return v;
}

/* Manual assignment of every partition from the beginning, every record exactly once, then a
 * commit of each partition's end and OffsetFetch reading it back. */
static void manual_round(const char *bootstrap, const char *tag, bool check_session)
{
    char group[96];
    snprintf(group, sizeof group, "kc-vers-%s-%d", tag, (int)getpid());
    seen_t *s = calloc(1, sizeof *s);
    kc_consumer_t *c = consumer(s, bootstrap, group);
    kc_error_t err;
    int32_t n = 0;
    if (kc_topic_partitions(c, topic, &n, 15000, &err) != KC_OK)
        fail_msg("kc_topic_partitions: %s", err.msg);
    assert_int_equal(n, NP);
    for (int p = 0; p < NP; p++) {
        int64_t lo = -1, hi = -1;
        if (kc_query_watermarks(c, topic, p, &lo, &hi, 15000, &err) != KC_OK)
            fail_msg("kc_query_watermarks: %s", err.msg);
        high[p] = hi;
        assert_int_equal(lo, 0);
    }
    kc_topic_partition_t tps[NP];
    for (int p = 0; p < NP; p++)
        tps[p] = (kc_topic_partition_t){topic, p, KC_OFFSET_BEGINNING};
    if (kc_assign(c, tps, NP, &err) != KC_OK)
        fail_msg("kc_assign: %s", err.msg);
    wait_records(s, RECS, 30000);
    assert_exactly_once(s);
    if (check_session) {
        /* A session, not sessionless full fetches: an id, and idle requests carrying nothing. */
        kc_test_sleep_ms(1000);
        int sessions = 0, idle = 0;
        for (int b = 0; b < 8; b++) {
            long id = broker_stat(s, "fetch_session_id", b);
            long parts = broker_stat(s, "fetch_request_parts_last", b);
            if (id < 0)
                continue;
            printf("#   broker %d: fetch_session_id %ld, fetch_request_parts_last %ld\n", b, id,
                   parts);
            sessions += id > 0;
            idle += parts == 0;
        }
        assert_true(sessions >= 1);
        assert_int_equal(idle, sessions);
    }
    for (int p = 0; p < NP; p++)
        tps[p].offset = high[p];
    if (kc_commit(c, tps, NP, 15000, &err) != KC_OK)
        fail_msg("kc_commit: %s", err.msg);
    kc_topic_partition_t back[NP];
    for (int p = 0; p < NP; p++)
        back[p] = (kc_topic_partition_t){topic, p, -42};
    if (kc_committed(c, back, NP, 15000, &err) != KC_OK)
        fail_msg("kc_committed: %s", err.msg);
    for (int p = 0; p < NP; p++)
        assert_int_equal(back[p].offset, high[p]);
    printf("#   committed and read back %d offsets\n", NP);
    pthread_mutex_lock(&s->mu);
    long errors = s->errors;
    pthread_mutex_unlock(&s->mu);
    assert_int_equal(errors, 0);
    if (kc_close(c, 10000, &err) != KC_OK)
        fail_msg("kc_close: %s", err.msg);
    kc_destroy(c);
    free(s);
}

/* A group member with default group settings (group.protocol=auto): every record once. */
static void group_round(const char *bootstrap, const char *tag)
{
    char group[96];
    snprintf(group, sizeof group, "kc-vers-g-%s-%d", tag, (int)getpid());
    seen_t *s = calloc(1, sizeof *s);
    kc_consumer_t *c = consumer(s, bootstrap, group);
    kc_error_t err;
    const char *topics[] = {topic};
    if (kc_subscribe(c, topics, 1, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
    wait_records(s, RECS, 60000);
    pthread_mutex_lock(&s->mu);
    const char *g = strstr(s->stats, "\"group\":{\"protocol\":\"");
    char proto[32] = "";
    if (g)
        snprintf(proto, sizeof proto, "%.*s", (int)strcspn(g + 21, "\""), g + 21);
    pthread_mutex_unlock(&s->mu);
    printf("#   group %s: protocol %s\n", group, proto);
    assert_exactly_once(s);
    if (kc_close(c, 15000, &err) != KC_OK)
        fail_msg("kc_close: %s", err.msg);
    kc_destroy(c);
    free(s);
}

static kc_fp_t *proxy_with(const char *const *rules)
{
    kc_fp_t *fp = kc_fp_start(kc_test_env("KC_BOOTSTRAP"));
    assert_non_null(fp);
    char reply[256];
    for (const char *const *r = rules; *r; r++)
        if (kc_fp_cmd(fp, reply, sizeof reply, "%s", *r) != 0)
            fail_msg("%s: %s", *r, reply);
    return fp;
}

/* Nothing went above a cap, and the capped APIs were used. */
static void proxy_done(kc_fp_t *fp, const char *const *used)
{
    long over = kc_fp_stat(fp, "over_cap");
    printf("#   proxy: over_cap %ld", over);
    for (const char *const *u = used; *u; u++) {
        long n = kc_fp_stat(fp, *u);
        printf(", %s %ld", *u, n);
        assert_true(n > 0);
    }
    printf("\n");
    assert_int_equal(over, 0);
    assert_int_equal(kc_fp_stat(fp, "decode_failures"), 0);
    assert_int_equal(kc_fp_stop(fp), 0);
}

static void newest_versions(void **state)
{
    (void)state;
    manual_round(kc_test_env("KC_BOOTSTRAP"), "new", true);
    group_round(kc_test_env("KC_BOOTSTRAP"), "new");
}

/* Each profile lists a broker's newest versions; where Kafka 4.x no longer offers that version
 * (its floor is higher), the cap is 4.x's floor, the closest a 4.x broker can come. */
static const char *const KAFKA_2_8[] = {"cap-api api=Fetch max=12",
                                        "cap-api api=Metadata max=11",
                                        "cap-api api=ListOffsets max=6",
                                        "cap-api api=OffsetForLeaderEpoch max=4",
                                        "cap-api api=OffsetCommit max=8",
                                        "cap-api api=OffsetFetch max=7",
                                        "cap-api api=FindCoordinator max=3",
                                        "cap-api api=JoinGroup max=7",
                                        "cap-api api=SyncGroup max=5",
                                        "cap-api api=Heartbeat max=4",
                                        "cap-api api=LeaveGroup max=4",
                                        "cap-api api=DescribeGroups max=5",
                                        "hide-api api=ConsumerGroupHeartbeat",
                                        "hide-api api=ConsumerGroupDescribe",
                                        NULL};

static const char *const KAFKA_2_1[] = {"cap-api api=Fetch max=10",
                                        "cap-api api=Metadata max=7",
                                        "cap-api api=ListOffsets max=4",
                                        "cap-api api=OffsetForLeaderEpoch max=2",
                                        "cap-api api=OffsetCommit max=6",
                                        "cap-api api=OffsetFetch max=5",
                                        "cap-api api=FindCoordinator max=2",
                                        "cap-api api=JoinGroup max=3",
                                        "cap-api api=SyncGroup max=2",
                                        "cap-api api=Heartbeat max=2",
                                        "cap-api api=LeaveGroup max=2",
                                        "cap-api api=DescribeGroups max=2",
                                        "hide-api api=ConsumerGroupHeartbeat",
                                        "hide-api api=ConsumerGroupDescribe",
                                        NULL};

static void profile(const char *const *rules, const char *tag)
{
    static const char *const manual_used[] = {
        "Fetch", "Metadata", "ListOffsets", "OffsetCommit", "OffsetFetch", "FindCoordinator", NULL};
    static const char *const group_used[] = {"Fetch",     "FindCoordinator", "JoinGroup",
                                             "SyncGroup", "OffsetFetch",     NULL};
    kc_fp_t *fp = proxy_with(rules);
    manual_round(kc_fp_bootstrap(fp), tag, true);
    proxy_done(fp, manual_used);
    fp = proxy_with(rules);
    group_round(kc_fp_bootstrap(fp), tag);
    proxy_done(fp, group_used);
}

static void kafka_2_8_versions(void **state)
{
    (void)state;
    profile(KAFKA_2_8, "28");
}

static void kafka_2_1_versions(void **state)
{
    (void)state;
    profile(KAFKA_2_1, "21");
}

/* The first refusal event within 5 s, naming `api` and both ranges; exactly one. */
static void assert_refused(seen_t *s, int64_t t0, const char *api, const char *ranges)
{
    for (int64_t end = t0 + 5000; kc_test_now_ms() < end;) {
        pthread_mutex_lock(&s->mu);
        long n = s->errors;
        pthread_mutex_unlock(&s->mu);
        if (n)
            break;
        kc_test_sleep_ms(50);
    }
    kc_test_sleep_ms(2000); /* long enough for a retry loop to say it again */
    pthread_mutex_lock(&s->mu);
    printf("#   after %lld ms: %s (%ld refusal(s))\n", (long long)(s->error_ms - t0), s->error,
           s->errors);
    assert_int_equal(s->errors, 1);
    assert_true(s->error_ms - t0 < 5000);
    assert_non_null(strstr(s->error, api));
    assert_non_null(strstr(s->error, ranges));
    pthread_mutex_unlock(&s->mu);
}

static void below_floor_fails_fast(void **state)
{
    (void)state;
    char group[96];
    kc_error_t err;
    /* Fetch v4-v6 (Kafka before 1.1): assigned partitions are never fetched. */
    const char *const fetch6[] = {"cap-api api=Fetch max=6", NULL};
    kc_fp_t *fp = proxy_with(fetch6);
    snprintf(group, sizeof group, "kc-vers-f6-%d", (int)getpid());
    seen_t *s = calloc(1, sizeof *s);
    kc_consumer_t *c = consumer(s, kc_fp_bootstrap(fp), group);
    kc_topic_partition_t tps[NP];
    for (int p = 0; p < NP; p++)
        tps[p] = (kc_topic_partition_t){topic, p, KC_OFFSET_BEGINNING};
    int64_t t0 = kc_test_now_ms();
    if (kc_assign(c, tps, NP, &err) != KC_OK)
        fail_msg("kc_assign: %s", err.msg);
    assert_refused(s, t0, "Fetch: broker 127.0.0.1:", "-v6, kconsume speaks v7-v");
    assert_int_equal(s->error_code, KC_ERR_UNSUPPORTED);
    assert_int_equal(records_of(s), 0);
    (void)kc_close(c, 5000, &err);
    kc_destroy(c);
    assert_int_equal(kc_fp_stat(fp, "Fetch"), -1); /* never sent: no counter at all */
    assert_int_equal(kc_fp_stat(fp, "over_cap"), 0);
    assert_int_equal(kc_fp_stop(fp), 0);

    /* Metadata v0-v6 (Kafka before 2.0, no leader epochs): the partition count is refused. */
    const char *const md6[] = {"cap-api api=Metadata max=6", NULL};
    fp = proxy_with(md6);
    c = consumer(s, kc_fp_bootstrap(fp), group);
    int32_t n = 0;
    t0 = kc_test_now_ms();
    kc_err_t rc = kc_topic_partitions(c, topic, &n, 15000, &err);
    printf("#   kc_topic_partitions after %lld ms: %s: %s\n", (long long)(kc_test_now_ms() - t0),
           kc_err_name(rc), err.msg);
    assert_int_equal(rc, KC_ERR_UNSUPPORTED);
    assert_true(kc_test_now_ms() - t0 < 5000);
    assert_non_null(strstr(err.msg, "Metadata: broker 127.0.0.1:"));
    assert_non_null(strstr(err.msg, "-v6, kconsume speaks v7-v13"));
    (void)kc_close(c, 5000, &err);
    kc_destroy(c);
    assert_int_equal(kc_fp_stat(fp, "over_cap"), 0);
    assert_int_equal(kc_fp_stop(fp), 0);

    /* JoinGroup capped below the broker's own floor: the coordinator offers none (and no
     * KIP-848 either, so group.protocol=auto runs the classic protocol). */
    const char *const join[] = {"cap-api api=JoinGroup max=0",
                                "hide-api api=ConsumerGroupHeartbeat", NULL};
    fp = proxy_with(join);
    snprintf(group, sizeof group, "kc-vers-j-%d", (int)getpid());
    c = consumer(s, kc_fp_bootstrap(fp), group);
    const char *topics[] = {topic};
    t0 = kc_test_now_ms();
    if (kc_subscribe(c, topics, 1, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
    assert_refused(s, t0, "JoinGroup: broker 127.0.0.1:", "kconsume speaks v2-v9");
    assert_int_equal(s->error_code, KC_ERR_FATAL);
    (void)kc_close(c, 5000, &err);
    kc_destroy(c);
    assert_int_equal(kc_fp_stat(fp, "JoinGroup"), -1);
    assert_int_equal(kc_fp_stat(fp, "over_cap"), 0);
    assert_int_equal(kc_fp_stop(fp), 0);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(newest_versions),
        cmocka_unit_test(kafka_2_8_versions),
        cmocka_unit_test(kafka_2_1_versions),
        cmocka_unit_test(below_floor_fails_fast),
    };
    kc_test_filter();
    return cmocka_run_group_tests(tests, setup, NULL);
}
