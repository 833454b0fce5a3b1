/* kc-test-label: threads */
/*
 * kc_commit and kc_committed wait for an answer that the network thread hands over after the
 * command itself returned (runtime/consumer.c, kc_consumer_call_wait). The answer may arrive
 * before the calling thread has read the command's own result; it must not overwrite that
 * result (a data race, and an error answer read as the command's would let the caller return
 * while the network thread still signals its stack frame). Against the memory broker, fast
 * answers: several app threads call both in a loop with deadlines from 0 to 2000 ms, and each
 * call returns KC_OK or KC_ERR_TIMEOUT with the offsets it asked for (TSan: no race).
 * Owner: main; the app threads share only the consumer and the failure counter.
 */
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "kconsume.h"

#define THREADS 3
#define ROUNDS  2000

static pid_t g_pid;
static char g_bs[256];
static kc_consumer_t *g_c;
static _Atomic int g_bad;

static int setup(void **state)
{
    (void)state;
    const char *args[] = {"--topic", "A", "--partitions", "2", "--records", "100", NULL};
    g_pid = kc_testkit_spawn("kc-memory-broker", args, g_bs, sizeof g_bs);
    return g_pid > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return kc_testkit_stop(g_pid);
}

static void *app(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        int timeout = (r + id) % 3 == 0 ? 0 : (r + id) % 3 == 1 ? 1 : 2000;
        kc_error_t e;
        kc_err_t rc;
        if (r % 2) {
            kc_topic_partition_t tp = {"A", id % 2, 10 + r};
            rc = kc_commit(g_c, &tp, 1, timeout, &e);
        } else {
            kc_topic_partition_t tp = {"A", id % 2, 0};
            rc = kc_committed(g_c, &tp, 1, timeout, &e);
            if (rc == KC_OK && tp.offset != KC_OFFSET_INVALID && tp.offset < 10) {
                printf("kc_committed: offset %lld was never committed\n", (long long)tp.offset);
                atomic_fetch_add(&g_bad, 1);
            }
        }
        if (rc != KC_OK && rc != KC_ERR_TIMEOUT) {
            printf("round %d (timeout %d): %s: %s\n", r, timeout, kc_err_name(rc), e.msg);
            atomic_fetch_add(&g_bad, 1);
        }
    }
    return NULL;
}

static void answers_after_the_command(void **state)
{
    (void)state;
    kc_conf_t *conf = kc_conf_new();
    kc_error_t e;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", g_bs, &e), KC_OK);
    assert_int_equal(kc_conf_set(conf, "group.id", "answers", &e), KC_OK);
    assert_int_equal(kc_conf_set(conf, "enable.auto.commit", "false", &e), KC_OK);
    kc_callbacks_t cbs = {0};
    assert_int_equal(kc_consumer_new(conf, &cbs, &g_c, &e), KC_OK);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, app, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(kc_close(g_c, 5000, &e), KC_OK);
    kc_destroy(g_c);
    assert_int_equal(atomic_load(&g_bad), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(answers_after_the_command),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
