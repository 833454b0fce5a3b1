/* engine/coordinator.c against real brokers, through the network thread:
 * - an anonymous commit (member "", generation -1) of two partitions succeeds, retried over
 *   coordinator errors on a fresh group within its deadline; OffsetFetch returns the offsets;
 * - once the group has a live member (Java's console consumer), the same anonymous commit is
 *   refused by the broker and the refusal reaches the caller's callback (KC_ERR_BROKER with the
 *   Kafka code, per-partition codes set).
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coordinator.h"
#include "engine.h"
#include "offsets_wait.h"
#include "netthread.h"
#include "proto/kafka_errors.h"

static kc_netthread_t *nt;
static kc_engine_t *eng;
static char topic[64], group[64];

typedef kc_test_offsets_result_t result_t;

typedef struct call {
    int op;
    result_t *r;
    kc_err_t rc;
} call_t;

static void on_net(kc_loop_t *loop, void *arg)
{
    call_t *c = arg;
    kc_error_t err;
    kc_engine_offset_t offs[2] = {{topic, 0, 17, -1, NULL, 0}, {topic, 1, 29, -1, "meta", 0}};
    switch (c->op) {
    case 0: {
        kc_engine_conf_t conf;
        kc_engine_conf_defaults(&conf);
        conf.bootstrap_servers = kc_test_env("KC_BOOTSTRAP");
        kc_engine_sink_t sink = {kc_test_discard_records, NULL, NULL, NULL};
        c->rc = kc_engine_new(&eng, loop, &conf, &sink, &err);
        break;
    }
    case 1: {
        kc_commit_identity_t who;
        assert_int_equal(kc_offsets_identity_anonymous(&who, group, &err), KC_OK);
        c->rc = kc_engine_commit(eng, &who, offs, 2, 60000, kc_test_offsets_on_result, c->r, &err);
        break;
    }
    case 2:
        c->rc =
            kc_engine_committed(eng, group, offs, 2, 30000, kc_test_offsets_on_result, c->r, &err);
        break;
    case 3:
        kc_engine_close(eng, 1000);
        kc_engine_free(eng);
        break;
    }
}

static void run_wait(int op, result_t *r)
{
    kc_test_offsets_reset(r);
    call_t c = {op, r, KC_OK};
    kc_netthread_call(nt, on_net, &c);
    assert_int_equal(c.rc, KC_OK);
    kc_test_offsets_wait(r);
}

static void anonymous_commit_fetch_and_refusal(void **state)
{
    (void)state;
    kc_error_t err;
    snprintf(topic, sizeof topic, "kc-core-commit-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-core-anon-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 2", topic);
    assert_int_equal(kc_netthread_start(&nt, KC_LOOP_AUTO, NULL, &err), KC_OK);
    call_t c = {0, NULL, KC_OK};
    kc_netthread_call(nt, on_net, &c);
    assert_int_equal(c.rc, KC_OK);

    result_t r;
    run_wait(1, &r);
    if (r.rc != KC_OK)
        fail_msg("anonymous commit: %s", r.err.msg);
    run_wait(2, &r);
    if (r.rc != KC_OK)
        fail_msg("committed: %s", r.err.msg);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r.res[i].error, 0);
        assert_int_equal(r.res[i].offset, r.res[i].partition == 0 ? 17 : 29);
    }

    /* A live member joins; the anonymous form is refused from then on. */
    char pidfile[128], line[1024];
    snprintf(pidfile, sizeof pidfile, "%s/core-consumer-%d.pid", kc_test_env("KC_CLUSTER_DIR"),
             (int)getpid());
    snprintf(
        line, sizeof line,
        "java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp \"$(%s classpath --dir %s)\" "
        "org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server %s --topic %s "
        "--group %s >/dev/null 2>&1 & echo $! > %s",
        kc_test_env("KC_TESTKIT"), kc_test_env("KC_CLUSTER_DIR"), kc_test_env("KC_BOOTSTRAP"),
        topic, group, pidfile);
    assert_int_equal(system(line), 0);
    FILE *pf = fopen(pidfile, "r");
    assert_non_null(pf);
    int pid = 0;
    assert_int_equal(fscanf(pf, "%d", &pid), 1);
    fclose(pf);
    for (int i = 0; i < 120; i++) {
        run_wait(1, &r);
        if (r.rc != KC_OK)
            break;
        usleep(500 * 1000);
    }
    snprintf(line, sizeof line, "kill %d", pid); /* only the consumer this test started */
    if (system(line) != 0)
        printf("# consumer %d already gone\n", pid);
    unlink(pidfile);
    printf("# anonymous commit on a live group: %s (%s)\n", kc_err_name(r.rc), r.err.msg);
    assert_int_equal(r.rc, KC_ERR_BROKER);
    assert_int_not_equal(r.err.kafka_code, 0);
    assert_int_not_equal(r.res[0].error, 0);
    assert_int_not_equal(r.res[1].error, 0);

    c.op = 3;
    kc_netthread_call(nt, on_net, &c);
    kc_netthread_stop(nt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(anonymous_commit_fetch_and_refusal)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
