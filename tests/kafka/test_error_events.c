/* Against the suite's cluster: what KC_EVENT_ERROR says besides the message (kc_event_t's
 * topic, partition, retriable, fatal).
 *  1. A partition whose on_records returns KC_CB_STOP: the event names that topic and partition
 *     (the one its message names);
 *     neither retriable nor fatal.
 *  2. A partition assigned past its end with auto.offset.reset=none: the fetch's refusal names
 *     the partition (from the engine, on the network thread); neither retriable nor fatal.
 *  3. A KIP-848 member asking for an assignor the broker lacks: KC_ERR_FATAL with fatal set, no
 *     partition.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int n;
    kc_err_t code;
    char topic[128];
    int32_t partition;
    bool retriable, fatal;
    char msg[256];
} got; /* the first error event, under mu */
static kc_cb_result_t answer = KC_CB_CONTINUE;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p, (void)b;
    return answer;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type != KC_EVENT_ERROR)
        return;
    pthread_mutex_lock(&mu);
    if (got.n++ == 0) {
        got.code = ev->error->code;
        snprintf(got.topic, sizeof got.topic, "%s", ev->topic ? ev->topic : "(null)");
        got.partition = ev->partition;
        got.retriable = ev->retriable;
        got.fatal = ev->fatal;
        snprintf(got.msg, sizeof got.msg, "%s", ev->error->msg);
    }
    pthread_mutex_unlock(&mu);
}

static void topic_with_records(char *topic, size_t len, const char *tag)
{
    snprintf(topic, len, "errev-%s-%d", tag, (int)getpid());
    kc_test_cluster("topic create %s --partitions 2", topic);
    kc_test_cluster("produce %s --records 20 --size 8", topic);
}

static kc_consumer_t *consumer(const char *const (*kv)[2], size_t n)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    if (kc_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"), &err) != KC_OK)
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < n; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_callbacks_t cbs = {
        .size = sizeof(kc_callbacks_t), .on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    memset(&got, 0, sizeof got);
    return c;
}

static void wait_event(void)
{
    for (int t = 0; t < 30000; t += 50) {
        pthread_mutex_lock(&mu);
        int n = got.n;
        pthread_mutex_unlock(&mu);
        if (n)
            return;
        kc_test_sleep_ms(50);
    }
    fail_msg("no error event in 30 s");
}

static void stop_names_partition(void **state)
{
    (void)state;
    char topic[96];
    topic_with_records(topic, sizeof topic, "stop");
    answer = KC_CB_STOP;
    kc_consumer_t *c = consumer(NULL, 0);
    kc_error_t err;
    /* The testkit's producer may put all 20 records in one partition: both are assigned, and the
     * event must name the one that stopped, as its message does. */
    kc_topic_partition_t tps[] = {{topic, 0, KC_OFFSET_BEGINNING}, {topic, 1, KC_OFFSET_BEGINNING}};
    assert_int_equal(kc_assign(c, tps, 2, &err), KC_OK);
    wait_event();
    printf("# KC_CB_STOP: %s %s[%d] retriable %d fatal %d: %s\n", kc_err_name(got.code), got.topic,
           got.partition, got.retriable, got.fatal, got.msg);
    assert_int_equal(got.code, KC_ERR_STATE);
    assert_string_equal(got.topic, topic);
    assert_true(got.partition == 0 || got.partition == 1);
    char named[160];
    snprintf(named, sizeof named, "%s[%d]: on_records returned KC_CB_STOP", topic, got.partition);
    assert_non_null(strstr(got.msg, named));
    assert_false(got.retriable);
    assert_false(got.fatal);
    answer = KC_CB_CONTINUE;
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static void out_of_range_names_partition(void **state)
{
    (void)state;
    char topic[96];
    topic_with_records(topic, sizeof topic, "range");
    const char *const kv[][2] = {{"auto.offset.reset", "none"}};
    kc_consumer_t *c = consumer(kv, 1);
    kc_error_t err;
    kc_topic_partition_t tps[] = {{topic, 0, 100000}};
    assert_int_equal(kc_assign(c, tps, 1, &err), KC_OK);
    wait_event();
    printf("# out of range: %s %s[%d] retriable %d fatal %d: %s\n", kc_err_name(got.code),
           got.topic, got.partition, got.retriable, got.fatal, got.msg);
    assert_string_equal(got.topic, topic);
    assert_int_equal(got.partition, 0);
    assert_non_null(strstr(got.msg, "OFFSET_OUT_OF_RANGE"));
    assert_false(got.retriable);
    assert_false(got.fatal);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static void fatal_is_fatal(void **state)
{
    (void)state;
    char topic[96], group[128];
    topic_with_records(topic, sizeof topic, "fatal");
    snprintf(group, sizeof group, "%s-g", topic);
    const char *const kv[][2] = {{"group.id", group},
                                 {"group.protocol", "consumer"},
                                 {"group.remote.assignor", "no-such-assignor"}};
    kc_consumer_t *c = consumer(kv, 3);
    kc_error_t err;
    const char *topics[] = {topic};
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    wait_event();
    printf("# unknown assignor: %s %s[%d] retriable %d fatal %d: %s\n", kc_err_name(got.code),
           got.topic, got.partition, got.retriable, got.fatal, got.msg);
    assert_int_equal(got.code, KC_ERR_FATAL);
    assert_true(got.fatal);
    assert_false(got.retriable);
    assert_string_equal(got.topic, "(null)");
    assert_int_equal(got.partition, -1);
    (void)kc_close(c, 5000, &err); /* the member stopped for good: whatever close says */
    kc_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stop_names_partition),
        cmocka_unit_test(out_of_range_names_partition),
        cmocka_unit_test(fatal_is_fatal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
