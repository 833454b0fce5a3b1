/* kc-test-label: threads */
/* A consumer's log callback carries its lines and nothing reaches fd 2: a group member behind
 * the fault proxy at log.level=info joins (the rebalance's INFO line from engine/group), then the
 * proxy truncates a Fetch response and closes the connection (the reset's INFO line from
 * io/conn), and the member fetches again. Each line the callback gets names the consumer by its
 * client.id; the file fd 2 pointed at during the run stays empty. Needs KC_BOOTSTRAP, KC_TESTKIT,
 * KC_CLUSTER_DIR. */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault_proxy_client.h"
#include "kconsume.h"

#define CLIENT_ID "kc-logcb-member"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int n_lines, n_rebalance, n_reset, wrong_name;
static long records;

static void on_log(void *opaque, int level, const char *subsystem, const char *name,
                   const char *message)
{
    (void)opaque;
    pthread_mutex_lock(&mu);
    n_lines++;
    if (strcmp(name, CLIENT_ID) != 0)
        wrong_name++;
    if (level == KC_LOG_INFO && strcmp(subsystem, "group") == 0 && strstr(message, "rebalanced"))
        n_rebalance++;
    if (level == KC_LOG_INFO && strcmp(subsystem, "conn") == 0 && strstr(message, "reset"))
        n_reset++;
    printf("# log %d [%s] %s: %s\n", level, subsystem, name, message);
    pthread_mutex_unlock(&mu);
}

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

static int wait_for(int *counter, int at_least, int ms)
{
    int v = 0;
    for (int t = 0; t < ms; t += 50) {
        pthread_mutex_lock(&mu);
        v = *counter;
        pthread_mutex_unlock(&mu);
        if (v >= at_least)
            break;
        kc_test_sleep_ms(50);
    }
    return v;
}

static void reconnect_and_rebalance_through_callback(void **state)
{
    (void)state;
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "kc-logcb-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-logcb-g-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 2 --replication 1", topic);
    kc_test_cluster("produce %s --records 200 --size 50", topic);
    kc_fp_t *fp = kc_fp_start(kc_test_env("KC_BOOTSTRAP"));
    assert_non_null(fp);

    char path[] = "/tmp/kc-logcb-stderr-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0 && dup2(fd, STDERR_FILENO) >= 0);

    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", kc_fp_bootstrap(fp), &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "group.id", group, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "client.id", CLIENT_ID, &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "log.level", "info", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "auto.offset.reset", "earliest", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "fetch.max.wait.ms", "100", &err), KC_OK);
    assert_int_equal(kc_conf_set_log_cb(conf, on_log, NULL, &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    const char *topics[] = {topic};
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    int rebalances = wait_for(&n_rebalance, 1, 30000);
    char reply[256];
    assert_int_equal(kc_fp_cmd(fp, reply, sizeof reply, "truncate api=Fetch"), 0);
    int resets = wait_for(&n_reset, 1, 20000);
    kc_test_sleep_ms(500);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);

    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    if (st.st_size > 0) {
        char buf[512] = {0};
        ssize_t r = pread(fd, buf, sizeof buf - 1, 0);
        (void)r;
        printf("# on fd 2: %s\n", buf);
    }
    close(fd);
    unlink(path);
    long truncated = kc_fp_stat(fp, "fired.truncate");
    assert_int_equal(kc_fp_stop(fp), 0);

    printf("# %d lines; %d rebalance, %d reset lines; proxy truncated %ld; %ld records; "
           "fd 2 got %lld bytes\n",
           n_lines, rebalances, resets, truncated, records, (long long)st.st_size);
    assert_true(truncated >= 1);
    assert_true(rebalances >= 1);
    assert_true(resets >= 1);
    assert_int_equal(wrong_name, 0);
    assert_int_equal(st.st_size, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(reconnect_and_rebalance_through_callback)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
