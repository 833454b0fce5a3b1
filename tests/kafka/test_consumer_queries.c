/* kc-test-label: threads */
/* kc_offsets_for_times and kc_metadata against the suite's cluster, each answer compared with the
 * Java client's on the same cluster (tests/kafka/QueryAnswers.java, compiled here against the
 * testkit's jars), line for line.
 *  1. offsets_for_times: a Java producer (TsProducer.java) writes records 0..199 to partition 0
 *     of a 3-partition topic with CreateTime BASE + 10*i ms, mostly in one batch; partitions 1
 *     and 2 stay empty. Asked together in one call: before the first record, exactly records 0,
 *     50 and 199, between 36 and 37, after the last (Java: null), the empty partitions, and one
 *     partition twice. Then per-entry failures: an unknown partition and an unknown topic
 *     (KC_ERR_NOT_FOUND on that entry, the others still answered), and a negative time refused.
 *  2. retries: through the fault proxy, ListOffsets answers NOT_LEADER_OR_FOLLOWER twice (what a
 *     partition whose leader moves answers) and the call still gets the right offsets; answered
 *     so without end, the call fails with that error within its timeout, also when the last
 *     try's answer would come after it, and with KC_ERR_TIMEOUT when nothing answers; Metadata
 *     answers that do not decode and a broker without ListOffsets end the call at once, naming
 *     the API; an unknown topic fails at once, not at the timeout.
 *  3. kc_metadata: the cluster id, the brokers (id, host, port, rack), every topic's name (all
 *     topics), and the test topic's id, partitions, leaders, replicas and ISR; a listed unknown
 *     topic comes back with UNKNOWN_TOPIC_OR_PARTITION; the answer outlives the consumer.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR, javac. */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fault_proxy_client.h"
#include "kconsume.h"

#define RECS 200
#define STEP 10

static char topic[64], jdir[64], jars[1024];
static int64_t base_ms;

static void sh(const char *cmd)
{
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

static int brokers(void)
{
    int n = 1;
    for (const char *s = kc_test_env("KC_BOOTSTRAP"); *s; s++)
        n += *s == ',';
    return n;
}

/* Java's answer lines for `args` (QueryAnswers MODE BOOTSTRAP TOPIC args...) into out. */
static void java(const char *mode, const char *args, char *out, size_t cap)
{
    char cmd[4096], path[128];
    snprintf(path, sizeof path, "%s/answers.txt", jdir);
    snprintf(cmd, sizeof cmd,
             "cp=\"$(%s)/*\" && java -Xmx256m -cp \"$cp:%s\" QueryAnswers %s %s %s %s >%s "
             "2>%s/java.log || { cat %s/java.log; exit 1; }",
             jars, jdir, mode, kc_test_env("KC_BOOTSTRAP"), topic, args, path, jdir, jdir);
    sh(cmd);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    fclose(f);
}

static void expect_same(const char *what, const char *ours, const char *theirs)
{
    printf("# %s, kconsume:\n%s# %s, Java:\n%s", what, ours, what, theirs);
    if (strcmp(ours, theirs) != 0)
        fail_msg("%s: kconsume's answer differs from Java's", what);
}

static kc_consumer_t *consumer_at(const char *bootstrap)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", bootstrap, &err), KC_OK);
    kc_callbacks_t cbs = {0};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

static kc_consumer_t *consumer(void)
{
    return consumer_at(kc_test_env("KC_BOOTSTRAP"));
}

static void setup_topic(void)
{
    snprintf(topic, sizeof topic, "kc-queries-%d", (int)getpid());
    snprintf(jdir, sizeof jdir, "/tmp/kc-queries-XXXXXX");
    assert_non_null(mkdtemp(jdir));
    base_ms = ((int64_t)time(NULL) - 3600) * 1000; /* see test_consumer_seek_ts */
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s topic create %s --partitions 3 --replication %d --dir %s >/dev/null",
             kc_test_env("KC_TESTKIT"), topic, brokers() < 3 ? brokers() : 3,
             kc_test_env("KC_CLUSTER_DIR"));
    sh(cmd);
    snprintf(jars, sizeof jars, "%s", kc_test_src_path("tests/testkit/fetch-kafka"));
    snprintf(cmd, sizeof cmd, "cp=\"$(%s)/*\" && javac -cp \"$cp\" -d %s %s", jars, jdir,
             kc_test_src_path("tests/kafka/TsProducer.java"));
    sh(cmd);
    snprintf(cmd, sizeof cmd, "cp=\"$(%s)/*\" && javac -cp \"$cp\" -d %s %s", jars, jdir,
             kc_test_src_path("tests/kafka/QueryAnswers.java"));
    sh(cmd);
    snprintf(cmd, sizeof cmd,
             "cp=\"$(%s)/*\" && java -Xmx256m -cp \"$cp:%s\" TsProducer %s %s 0 %d %lld %d "
             ">%s/java.log 2>&1 || { cat %s/java.log; exit 1; }",
             jars, jdir, kc_test_env("KC_BOOTSTRAP"), topic, RECS, (long long)base_ms, STEP, jdir,
             jdir);
    sh(cmd);
}

static void offsets_for_times(void **state)
{
    (void)state;
    setup_topic();
    const struct {
        int32_t p;
        int64_t ts;
    } asks[] = {
        {0, base_ms - 86400000},             /* before everything: record 0 */
        {0, base_ms},                        /* exactly record 0 (>= is inclusive) */
        {0, base_ms + STEP * 37 - STEP / 2}, /* between 36 and 37 */
        {0, base_ms + STEP * 50},            /* exactly record 50 */
        {0, base_ms + STEP * 199},           /* the last record */
        {0, base_ms + STEP * 199 + 1},       /* after the last: none */
        {1, base_ms},                        /* empty partitions: none */
        {2, 0},
        {0, base_ms + STEP * 50}, /* the same partition again, same time */
    };
    size_t n = sizeof asks / sizeof asks[0];
    kc_offset_time_t q[16];
    char args[1024] = "", ours[4096] = "", theirs[4096];
    for (size_t i = 0; i < n; i++) {
        q[i] = (kc_offset_time_t){.topic = topic, .partition = asks[i].p, .timestamp = asks[i].ts};
        size_t l = strlen(args);
        snprintf(args + l, sizeof args - l, " %d:%lld", asks[i].p, (long long)asks[i].ts);
    }
    kc_consumer_t *c = consumer();
    kc_error_t err;
    kc_err_t rc = kc_offsets_for_times(c, q, n, 10000, &err);
    if (rc != KC_OK)
        fail_msg("kc_offsets_for_times: %s", err.msg);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(q[i].err, KC_OK);
        size_t l = strlen(ours);
        if (q[i].offset < 0)
            snprintf(ours + l, sizeof ours - l, "%d %lld -> none\n", q[i].partition,
                     (long long)q[i].timestamp);
        else
            snprintf(ours + l, sizeof ours - l, "%d %lld -> %lld %lld %d\n", q[i].partition,
                     (long long)q[i].timestamp, (long long)q[i].offset,
                     (long long)q[i].record_timestamp, q[i].leader_epoch);
    }
    java("times", args, theirs, sizeof theirs);
    expect_same("offsets for times", ours, theirs);
    /* The premise, so that agreeing with Java is not agreeing on nothing. */
    assert_int_equal(q[2].offset, 37);
    assert_int_equal(q[3].offset, 50);
    assert_int_equal(q[3].record_timestamp, base_ms + STEP * 50);
    assert_int_equal(q[5].offset, -1);

    /* Per-entry failures: the known entry is still answered. */
    kc_offset_time_t bad[3] = {
        {.topic = topic, .partition = 0, .timestamp = base_ms + STEP * 10},
        {.topic = topic, .partition = 7, .timestamp = base_ms},
        {.topic = "kc-queries-no-such-topic", .partition = 0, .timestamp = base_ms},
    };
    rc = kc_offsets_for_times(c, bad, 3, 10000, &err);
    printf("# with unknown entries: %s: %s\n", kc_err_name(rc), err.msg);
    assert_int_equal(rc, KC_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "2 of 3 failed"));
    assert_int_equal(bad[0].err, KC_OK);
    assert_int_equal(bad[0].offset, 10);
    assert_int_equal(bad[1].err, KC_ERR_NOT_FOUND);
    assert_int_equal(bad[1].offset, -1);
    assert_int_equal(bad[2].err, KC_ERR_NOT_FOUND);

    kc_offset_time_t neg = {.topic = topic, .partition = 0, .timestamp = -1};
    assert_int_equal(kc_offsets_for_times(c, &neg, 1, 1000, &err), KC_ERR_INVALID_ARG);

    /* The watermarks go through the same lookups: 0 and 200 on the written partition. */
    int64_t lo = -5, hi = -5;
    assert_int_equal(kc_query_watermarks(c, topic, 0, &lo, &hi, 10000, &err), KC_OK);
    assert_int_equal(lo, 0);
    assert_int_equal(hi, RECS);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

static void retries(void **state)
{
    (void)state;
    if (!*topic)
        setup_topic();
    kc_fp_t *fp = kc_fp_start(kc_test_env("KC_BOOTSTRAP"));
    assert_non_null(fp);
    kc_consumer_t *c = consumer_at(kc_fp_bootstrap(fp));
    char reply[256];
    kc_error_t err;
    kc_offset_time_t q = {.topic = topic, .partition = 0, .timestamp = base_ms + STEP * 50};
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply,
                               "inject api=ListOffsets error=NOT_LEADER_OR_FOLLOWER "
                               "scope=partition count=2"),
                     0);
    int64_t t0 = kc_test_now_ms();
    kc_err_t rc = kc_offsets_for_times(c, &q, 1, 10000, &err);
    printf("# two refusals, then: %s offset %lld after %lld ms, fired %ld\n", kc_err_name(rc),
           (long long)q.offset, (long long)(kc_test_now_ms() - t0), kc_fp_stat(fp, "fired.inject"));
    assert_int_equal(rc, KC_OK);
    assert_int_equal(q.offset, 50);
    assert_int_equal(kc_fp_stat(fp, "fired.inject"), 2);

    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply,
                               "inject api=ListOffsets error=NOT_LEADER_OR_FOLLOWER "
                               "scope=partition count=100000"),
                     0);
    t0 = kc_test_now_ms();
    rc = kc_offsets_for_times(c, &q, 1, 1500, &err);
    int64_t took = kc_test_now_ms() - t0;
    printf("# refused without end: %s after %lld ms: %s\n", kc_err_name(rc), (long long)took,
           err.msg);
    assert_int_equal(rc, KC_ERR_BROKER);
    assert_int_equal(q.err, KC_ERR_BROKER);
    assert_int_equal(q.kafka_code, 6); /* NOT_LEADER_OR_FOLLOWER */
    assert_non_null(strstr(err.msg, "NOT_LEADER_OR_FOLLOWER"));
    assert_true(took >= 500 && took < 2500);
    assert_true(kc_fp_stat(fp, "fired.inject") > 3);
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "clear"), 0);

    /* Refused slowly: each refusal comes 700 ms after its request, so the second try is still
     * in flight when the call's time runs out. The call still ends within its timeout with the
     * refusal the first try got, not with a bare timeout. */
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply,
                               "inject api=ListOffsets error=NOT_LEADER_OR_FOLLOWER "
                               "scope=partition count=100000"),
                     0);
    assert_int_equal(
        kc_fp_cmd(fp, reply, sizeof reply, "delay api=ListOffsets ms=700 count=100000"), 0);
    t0 = kc_test_now_ms();
    rc = kc_offsets_for_times(c, &q, 1, 1500, &err);
    took = kc_test_now_ms() - t0;
    printf("# refused slowly: %s after %lld ms: %s\n", kc_err_name(rc), (long long)took, err.msg);
    assert_int_equal(rc, KC_ERR_BROKER);
    assert_int_equal(q.kafka_code, 6);
    assert_non_null(strstr(err.msg, "NOT_LEADER_OR_FOLLOWER"));
    assert_true(took >= 700 && took <= 1600);
    /* Nothing answers at all: the time runs out with the one request in flight. */
    t0 = kc_test_now_ms();
    rc = kc_offsets_for_times(c, &q, 1, 500, &err);
    took = kc_test_now_ms() - t0;
    printf("# never answered: %s after %lld ms: %s\n", kc_err_name(rc), (long long)took, err.msg);
    assert_int_equal(rc, KC_ERR_TIMEOUT);
    assert_true(took <= 600);
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "clear"), 0);

    /* The time runs out while the first Metadata request is out (its answer held back 1 s): a
     * timeout, not "no such topic". Then while a lookup waits for its leader's connection to be
     * ready (that connection's ApiVersions answer held back 1.5 s): a timeout, and the request,
     * encoded once the connection is ready, no longer touches the question the caller took
     * back. The consumer answers as before afterwards. */
    kc_consumer_t *fresh = consumer_at(kc_fp_bootstrap(fp));
    int32_t parts = -1;
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "delay api=Metadata ms=1000 count=1"), 0);
    rc = kc_topic_partitions(fresh, topic, &parts, 300, &err);
    printf("# Metadata held back: %s: %s\n", kc_err_name(rc), err.msg);
    assert_int_equal(rc, KC_ERR_TIMEOUT);
    kc_test_sleep_ms(1000);
    assert_int_equal(kc_topic_partitions(fresh, topic, &parts, 10000, &err), KC_OK);
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "delay api=ApiVersions ms=1500 count=1"),
                     0);
    rc = kc_offsets_for_times(fresh, &q, 1, 700, &err);
    printf("# leader connection held back: %s: %s\n", kc_err_name(rc), err.msg);
    assert_int_equal(rc, KC_ERR_TIMEOUT);
    kc_test_sleep_ms(1500);
    assert_int_equal(kc_offsets_for_times(fresh, &q, 1, 10000, &err), KC_OK);
    assert_int_equal(q.offset, 50);
    assert_int_equal(kc_close(fresh, 5000, &err), KC_OK);
    kc_destroy(fresh);
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "clear"), 0);

    /* Failures asking again cannot change end the call at once, naming the API: Metadata
     * answers that do not decode, then a broker without a ListOffsets version we speak. */
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "garbage api=Metadata count=100000"), 0);
    t0 = kc_test_now_ms();
    rc = kc_offsets_for_times(c, &q, 1, 10000, &err);
    took = kc_test_now_ms() - t0;
    printf("# undecodable Metadata: %s after %lld ms: %s\n", kc_err_name(rc), (long long)took,
           err.msg);
    assert_int_equal(rc, KC_ERR_MALFORMED);
    assert_non_null(strstr(err.msg, "Metadata"));
    assert_true(took < 3000);
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "clear"), 0);
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "cap-api api=ListOffsets max=0"), 0);
    kc_consumer_t *old = consumer_at(kc_fp_bootstrap(fp)); /* connects under the cap */
    t0 = kc_test_now_ms();
    rc = kc_offsets_for_times(old, &q, 1, 10000, &err);
    took = kc_test_now_ms() - t0;
    printf("# no ListOffsets: %s after %lld ms: %s\n", kc_err_name(rc), (long long)took, err.msg);
    assert_int_equal(rc, KC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "ListOffsets"));
    assert_true(took < 3000);
    assert_int_equal(kc_close(old, 5000, &err), KC_OK);
    kc_destroy(old);
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "clear"), 0);
    /* And the first consumer asks again as if nothing had happened. */
    rc = kc_offsets_for_times(c, &q, 1, 10000, &err);
    if (rc != KC_OK)
        fail_msg("after the lies: %s", err.msg);
    assert_int_equal(q.offset, 50);

    kc_offset_time_t u = {.topic = "kc-queries-no-such-topic", .partition = 0, .timestamp = 0};
    t0 = kc_test_now_ms();
    assert_int_equal(kc_offsets_for_times(c, &u, 1, 10000, &err), KC_ERR_NOT_FOUND);
    took = kc_test_now_ms() - t0;
    printf("# unknown topic: %lld ms\n", (long long)took);
    assert_true(took < 3000);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
    assert_int_equal(kc_fp_stop(fp), 0);
}

static int tp_cmp(const void *a, const void *b)
{
    const kc_metadata_partition_t *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void ids(char *out, size_t cap, const int32_t *v, size_t n)
{
    size_t l = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        l += (size_t)snprintf(out + l, cap - l, "%s%d", i ? "," : "", v[i]);
}

static void metadata(void **state)
{
    (void)state;
    if (!*topic)
        setup_topic();
    kc_consumer_t *c = consumer();
    kc_error_t err;
    kc_metadata_t *md = NULL;
    if (kc_metadata(c, NULL, 0, 10000, &md, &err) != KC_OK)
        fail_msg("kc_metadata: %s", err.msg);
    const char *listed[2] = {topic, "kc-queries-no-such-topic"};
    kc_metadata_t *one = NULL;
    if (kc_metadata(c, listed, 2, 10000, &one, &err) != KC_OK)
        fail_msg("kc_metadata(listed): %s", err.msg);
    /* The answers are the caller's: they outlive the consumer. */
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);

    char ours[16384] = "", theirs[16384], line[1024];
#define OUT(...)                                                                                   \
    do {                                                                                           \
        snprintf(line, sizeof line, __VA_ARGS__);                                                  \
        strncat(ours, line, sizeof ours - strlen(ours) - 1);                                       \
    } while (0)
    assert_non_null(md->cluster_id);
    OUT("cluster %s\n", md->cluster_id);
    int controller_known = 0;
    for (size_t i = 0; i < md->n_brokers; i++) {
        const kc_metadata_broker_t *b = &md->brokers[i];
        OUT("broker %d %s %d %s\n", b->id, b->host, b->port, b->rack ? b->rack : "-");
        controller_known |= b->id == md->controller_id;
    }
    const char **names = calloc(md->n_topics + 1, sizeof *names);
    for (size_t i = 0; i < md->n_topics; i++)
        names[i] = md->topics[i].name;
    qsort(names, md->n_topics, sizeof *names, name_cmp);
    OUT("topics ");
    for (size_t i = 0; i < md->n_topics; i++)
        OUT("%s%s", i ? "," : "", names[i]);
    OUT("\n");
    free(names);
    const kc_metadata_topic_t *t = NULL;
    for (size_t i = 0; i < md->n_topics; i++)
        if (strcmp(md->topics[i].name, topic) == 0)
            t = &md->topics[i];
    if (!t) { /* an explicit return: cmocka's asserts are not noreturn, and GCC -O2 then sees a
               * NULL t->id (stringop-overread) */
        fail_msg("%s is not in the metadata", topic);
        return;
    }
    char uid[23];
    kc_topic_id_str(t->id, uid);
    OUT("topic %s %s internal %s\n", t->name, uid, t->internal ? "true" : "false");
    kc_metadata_partition_t parts[16];
    assert_true(t->n_partitions == 3);
    memcpy(parts, t->partitions, t->n_partitions * sizeof parts[0]);
    qsort(parts, t->n_partitions, sizeof parts[0], tp_cmp);
    for (size_t i = 0; i < t->n_partitions; i++) {
        char r[256], s[256];
        ids(r, sizeof r, parts[i].replicas, parts[i].n_replicas);
        ids(s, sizeof s, parts[i].isr, parts[i].n_isr);
        OUT("partition %d leader %d replicas %s isr %s\n", parts[i].id, parts[i].leader, r, s);
    }
    java("metadata", "", theirs, sizeof theirs);
    expect_same("metadata", ours, theirs);
    /* Under KRaft the controller a broker names is one of the brokers (the quorum's own nodes are
     * not reachable to clients); under ZooKeeper it is the controlling broker. Either way one of
     * the brokers listed. */
    printf("# controller %d\n", md->controller_id);
    assert_true(controller_known);
    assert_true(md->n_brokers == (size_t)brokers());

    /* Listed topics: the known one with its partitions, the unknown one with its error. */
    assert_int_equal(one->n_topics, 2);
    int seen = 0;
    for (size_t i = 0; i < one->n_topics; i++) {
        const kc_metadata_topic_t *x = &one->topics[i];
        if (strcmp(x->name, topic) == 0) {
            assert_int_equal(x->error_code, 0);
            assert_int_equal(x->n_partitions, 3);
            assert_memory_equal(x->id, t->id, 16);
            seen |= 1;
        } else {
            assert_string_equal(x->name, "kc-queries-no-such-topic");
            assert_int_equal(x->error_code, 3); /* UNKNOWN_TOPIC_OR_PARTITION */
            assert_int_equal(x->n_partitions, 0);
            seen |= 2;
        }
    }
    assert_int_equal(seen, 3);
    kc_metadata_destroy(md);
    kc_metadata_destroy(one);
    kc_metadata_destroy(NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", jdir);
    sh(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(offsets_for_times),
                                       cmocka_unit_test(retries), cmocka_unit_test(metadata)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
