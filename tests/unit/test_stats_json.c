/* kc-test-label: threads */
/* The stats JSON without a cluster (bootstrap points at a closed port): statistics.interval.ms
 * delivers KC_EVENT_STATS to on_event on a worker (never the app's thread), every object parses
 * and carries the contracted names (tests/support/check_stats.py), the group object says
 * protocol "none" / state "manual" and lists the manual assignment, and the partitions array
 * names the assigned partitions. kc_stats gives the same object on demand (KC_ERR_CLOSED after
 * kc_close). Also kc_member_id: "" without a group module. */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static int n_stats, on_app_thread;
static pthread_t app;
static char last[8192];

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p, (void)b;
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    (void)o;
    if (ev->type != KC_EVENT_STATS)
        return;
    pthread_mutex_lock(&mu);
    if (pthread_equal(pthread_self(), app))
        on_app_thread++;
    fprintf(out, "%s\n", ev->json);
    fflush(out);
    snprintf(last, sizeof last, "%s", ev->json);
    n_stats++;
    pthread_mutex_unlock(&mu);
}

static void stats_contract(void **state)
{
    (void)state;
    app = pthread_self();
    char path[] = "/tmp/kc-stats-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    out = fdopen(fd, "w");
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "statistics.interval.ms", "50", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "worker.threads", "2", &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    char mid[64] = "x";
    assert_int_equal(kc_member_id(c, mid, sizeof mid), KC_OK);
    assert_string_equal(mid, "");
    kc_topic_partition_t tps[2] = {{"stats-t", 0, 5}, {"stats-t", 3, 7}};
    assert_int_equal(kc_assign(c, tps, 2, &err), KC_OK);
    for (int i = 0; i < 100 * kc_test_time_scale(); i++) {
        pthread_mutex_lock(&mu);
        int n = n_stats; /* and the newest one already shows the assignment */
        int shows = strstr(last, "\"assignment\":[[") != NULL;
        pthread_mutex_unlock(&mu);
        if (n >= 5 && shows)
            break;
        usleep(20 * 1000);
    }
    /* The contract is about a stats object of the assigned consumer: take it now, since a tick
     * during kc_close (slow under valgrind) reports the partitions already revoked. */
    static char assigned[sizeof last];
    pthread_mutex_lock(&mu);
    memcpy(assigned, last, sizeof last);
    pthread_mutex_unlock(&mu);
    /* kc_stats: the same object on demand, written beside the interval's for the same check */
    char *now = NULL;
    size_t now_len = 0;
    assert_int_equal(kc_stats(c, &now, &now_len, &err), KC_OK);
    assert_int_equal(now_len, strlen(now));
    assert_non_null(strstr(now, "\"assignment\":[[\"stats-t\",0],[\"stats-t\",3]]"));
    pthread_mutex_lock(&mu);
    fprintf(out, "%s\n", now);
    pthread_mutex_unlock(&mu);
    free(now);
    assert_int_equal(kc_stats(c, NULL, NULL, &err), KC_ERR_INVALID_ARG);
    assert_int_equal(kc_close(c, 2000, &err), KC_OK);
    assert_int_equal(kc_stats(c, &now, NULL, &err), KC_ERR_CLOSED);
    kc_destroy(c);
    fclose(out);
    printf("# %d stats objects; last: %.300s\n", n_stats, last);
    assert_true(n_stats >= 5);
    assert_int_equal(on_app_thread, 0);
    assert_non_null(strstr(assigned, "\"protocol\":\"none\",\"state\":\"manual\""));
    assert_non_null(strstr(assigned, "\"assignment\":[[\"stats-t\",0],[\"stats-t\",3]]"));
    assert_non_null(strstr(assigned, "{\"topic\":\"stats-t\",\"partition\":3,"));
    char cmd[512];
    snprintf(cmd, sizeof cmd, "python3 %s %s", kc_test_src_path("tests/support/check_stats.py"),
             path);
    int rc = system(cmd);
    unlink(path);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(stats_contract)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
