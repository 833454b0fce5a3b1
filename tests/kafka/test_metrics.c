/* kc-test-label: threads */
/* kc_metrics against the suite's cluster: a group member whose client.id holds a double quote, a
 * backslash and a newline (each needs escaping in a Prometheus label value) consumes a topic to
 * its end; its metrics text then parses whole with the Prometheus reference parser
 * (tests/support/check_metrics.py: prometheus_client), carries the families the README names
 * (consumer, broker, partition with lag, group, worker), labels every sample with that exact
 * client.id, and its numbers are the consumption's: the workers' records add up to what was
 * produced and no partition lags. After kc_close the call says KC_ERR_CLOSED. Needs KC_BOOTSTRAP,
 * KC_TESTKIT, KC_CLUSTER_DIR. */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define RECS 300
static const char CLIENT_ID[] = "kc\"met\\rics\nend";

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long records;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    long n = 0;
    while (kc_records_next(b))
        n++;
    pthread_mutex_lock(&mu);
    records += n;
    pthread_mutex_unlock(&mu);
    return KC_CB_CONTINUE;
}

static void metrics_parse_and_add_up(void **state)
{
    (void)state;
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "kc-metrics-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-metrics-g-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 3 --replication 1", topic);
    kc_test_cluster("produce %s --records %d --size 40", topic, RECS);

    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"), &err),
                     KC_OK);
    assert_int_equal(kc_conf_set(conf, "group.id", group, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "client.id", CLIENT_ID, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "auto.offset.reset", "earliest", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "fetch.max.wait.ms", "100", &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    const char *topics[] = {topic};
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    long got = 0;
    for (int i = 0; i < 300 && got < RECS; i++) {
        kc_test_sleep_ms(100);
        pthread_mutex_lock(&mu);
        got = records;
        pthread_mutex_unlock(&mu);
    }
    assert_int_equal(got, RECS);
    kc_test_sleep_ms(500); /* the last callbacks' positions are published */

    char *text = NULL;
    size_t len = 0;
    if (kc_metrics(c, &text, &len, &err) != KC_OK)
        fail_msg("kc_metrics: %s", err.msg);
    assert_int_equal(strlen(text), len);
    char path[] = "/tmp/kc-metrics-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    free(text);

    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    assert_int_equal(kc_metrics(c, &text, NULL, &err), KC_ERR_CLOSED);
    kc_destroy(c);

    char hex[2 * sizeof CLIENT_ID + 1];
    for (size_t i = 0; i + 1 < sizeof CLIENT_ID; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)CLIENT_ID[i]);
    char check[1024];
    /* Debian's interpreter: python3-prometheus-client (tests/testkit/install-deps) is its module,
     * and another python3 may come first on PATH. */
    snprintf(check, sizeof check, "/usr/bin/python3 %s %s --client-id-hex %s --records %d",
             kc_test_src_path("tests/support/check_metrics.py"), path, hex, RECS);
    int rc = system(check);
    if (rc != 0)
        printf("# the text is kept in %s\n", path);
    else
        unlink(path);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(metrics_parse_and_add_up)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
