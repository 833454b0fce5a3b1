/* kc-test-label: threads */
/* kc_seek(KC_SEEK_TIMESTAMP) end to end against the suite's cluster. A Java producer
 * (tests/kafka/TsProducer.java, compiled here against the testkit's jars) writes records 0..199
 * to one partition with CreateTime BASE + 10*i ms, mostly in one batch, so the broker must find
 * the offset inside a batch. Then, through the public API:
 *  1. from on_assign, a time between records 36 and 37 → exactly 37..199 delivered;
 *  2. from the app thread, the exact time of record 50 (>= is inclusive) → exactly 50..199;
 *  3. a time before the first record → exactly 0..199 again;
 *  4. a fresh consumer assigned at the beginning seeks (on_assign) to a time after the last
 *     record → nothing is delivered (the position is the end, not the beginning), and the five
 *     records produced next, 200..204, are delivered exactly.
 * Every delivered record's timestamp is checked against BASE + 10*offset (the premise).
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR, javac. */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define RECS 200
#define STEP 10

static char topic[64], jdir[64], jars[1024]; /* jars: the fetch-kafka script's path */
static int64_t base_ms;
static kc_consumer_t *cons;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t log_off[8 * RECS];
static size_t n_log;
static int64_t bad_ts = -1;      /* the first offset whose timestamp was not BASE + 10*offset */
static int64_t assign_seek = -1; /* on_assign seeks to this timestamp when >= 0 */
static _Atomic int assign_rc = -1;

static void on_assign(void *o, kc_part_t *p)
{
    (void)o;
    if (assign_seek < 0)
        return;
    kc_error_t e;
    atomic_store(&assign_rc,
                 kc_seek(cons, p->topic, p->partition, KC_SEEK_TIMESTAMP, assign_seek, &e));
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        pthread_mutex_lock(&mu);
        if (n_log < sizeof log_off / sizeof log_off[0])
            log_off[n_log++] = off;
        if (kc_record_timestamp(r) != base_ms + STEP * off && bad_ts < 0)
            bad_ts = off;
        pthread_mutex_unlock(&mu);
    }
    return KC_CB_CONTINUE;
}

static void sh(const char *cmd)
{
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

static void produce(int from, int count)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cp=\"$(%s)/*\" && java -Xmx256m -cp \"$cp:%s\" TsProducer %s %s %d %d %lld %d "
             ">%s/java.log 2>&1 || { cat %s/java.log; exit 1; }",
             jars, jdir, kc_test_env("KC_BOOTSTRAP"), topic, from, count, (long long)base_ms, STEP,
             jdir, jdir);
    sh(cmd);
}

static size_t logged(void)
{
    pthread_mutex_lock(&mu);
    size_t n = n_log;
    pthread_mutex_unlock(&mu);
    return n;
}

static void wait_for(size_t n)
{
    for (int i = 0; i < 600 && logged() < n; i++)
        usleep(50 * 1000);
    usleep(300 * 1000); /* and nothing more arrives */
}

/* log_off[from..] must be exactly start, start+1, ..., end-1 */
static void expect_run(size_t from, int64_t start, int64_t end)
{
    pthread_mutex_lock(&mu);
    size_t n = n_log;
    pthread_mutex_unlock(&mu);
    printf("# from log[%zu]: first %lld, want %lld..%lld (%zu delivered)\n", from,
           (long long)(from < n ? log_off[from] : -1), (long long)start, (long long)end - 1,
           n - from);
    assert_int_equal(n - from, (size_t)(end - start));
    for (size_t i = from; i < n; i++)
        assert_int_equal(log_off[i], start + (int64_t)(i - from));
    assert_int_equal(bad_ts, -1);
}

static void start(int64_t seek_ts)
{
    assign_seek = seek_ts;
    atomic_store(&assign_rc, -1);
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"), &err),
                     KC_OK);
    assert_int_equal(kc_conf_set(conf, "callback.batch.max.records", "50", &err), KC_OK);
    kc_callbacks_t cbs = {.on_assign = on_assign, .on_records = on_records};
    if (kc_consumer_new(conf, &cbs, &cons, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    /* From the beginning: a seek that did nothing would deliver offset 0 first. */
    kc_topic_partition_t tp = {topic, 0, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(cons, &tp, 1, &err), KC_OK);
}

static void stop(void)
{
    kc_error_t err;
    assert_int_equal(kc_close(cons, 5000, &err), KC_OK);
    kc_destroy(cons);
    cons = NULL;
}

static void seek_to_timestamps(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-seekts-%d", (int)getpid());
    snprintf(jdir, sizeof jdir, "/tmp/kc-seekts-XXXXXX");
    assert_non_null(mkdtemp(jdir));
    /* An hour ago, on a whole second: inside any retention, and not "in the future" for the
     * broker's log.message.timestamp.after.max.ms. */
    base_ms = ((int64_t)time(NULL) - 3600) * 1000;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s topic create %s --partitions 1 --replication 3 --dir %s >/dev/null",
             kc_test_env("KC_TESTKIT"), topic, kc_test_env("KC_CLUSTER_DIR"));
    sh(cmd);
    /* kc_test_src_path answers in one static buffer: one call per statement. */
    snprintf(jars, sizeof jars, "%s", kc_test_src_path("tests/testkit/fetch-kafka"));
    snprintf(cmd, sizeof cmd, "cp=\"$(%s)/*\" && javac -cp \"$cp\" -d %s %s", jars, jdir,
             kc_test_src_path("tests/kafka/TsProducer.java"));
    sh(cmd);
    produce(0, RECS);

    /* 1. Between records 36 and 37, from on_assign. */
    start(base_ms + STEP * 37 - STEP / 2);
    wait_for(RECS - 37);
    assert_int_equal(atomic_load(&assign_rc), KC_OK);
    expect_run(0, 37, RECS);

    /* 2. Exactly record 50's time, from the app thread (a backward seek). */
    kc_error_t err;
    size_t mark = logged();
    assert_int_equal(kc_seek(cons, topic, 0, KC_SEEK_TIMESTAMP, base_ms + STEP * 50, &err), KC_OK);
    wait_for(mark + RECS - 50);
    expect_run(mark, 50, RECS);

    /* 3. Before the first record: the log start. */
    mark = logged();
    assert_int_equal(kc_seek(cons, topic, 0, KC_SEEK_TIMESTAMP, base_ms - 86400000, &err), KC_OK);
    wait_for(mark + RECS);
    expect_run(mark, 0, RECS);
    assert_int_equal(kc_seek(cons, topic, 0, KC_SEEK_TIMESTAMP, -5, &err), KC_ERR_INVALID_ARG);
    stop();

    /* 4. After the last record: the end. Nothing now; the next records produced, exactly. */
    mark = logged();
    start(base_ms + STEP * 100000);
    sleep(1); /* ListOffsets and a first fetch take milliseconds here */
    assert_int_equal(atomic_load(&assign_rc), KC_OK);
    expect_run(mark, 0, 0);
    produce(RECS, 5);
    wait_for(mark + 5);
    expect_run(mark, RECS, RECS + 5);
    stop();

    snprintf(cmd, sizeof cmd, "rm -rf %s", jdir);
    sh(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(seek_to_timestamps)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
