/* kc-test-label: threads */
/* read_committed against a real transactional producer (tests/kafka/TxnProducer.java, compiled
 * here with javac against the testkit's Kafka jars): 10 transactions of 20 records, the odd ones
 * aborted. Under isolation.level=read_committed exactly the 100 committed records arrive and no
 * aborted one (the engine applies the Fetch response's aborted_transactions,
 * engine/fetch/fetcher.c); under read_uncommitted all 200 data records arrive (control batches
 * never do). Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR, javac. */
#include "kc_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

static _Atomic int n_commit, n_abort, n_other;

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        size_t len;
        const char *v = kc_record_value(r, &len);
        if (v && len > 2 && v[0] == 'c' && v[1] == '-')
            atomic_fetch_add(&n_commit, 1);
        else if (v && len > 2 && v[0] == 'a' && v[1] == '-')
            atomic_fetch_add(&n_abort, 1);
        else
            atomic_fetch_add(&n_other, 1);
    }
    return KC_CB_CONTINUE;
}

static void sh(const char *cmd)
{
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

static void consume(const char *topic, const char *iso)
{
    atomic_store(&n_commit, 0);
    atomic_store(&n_abort, 0);
    atomic_store(&n_other, 0);
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"), &err),
                     KC_OK);
    assert_int_equal(kc_conf_set(conf, "isolation.level", iso, &err), KC_OK);
    kc_callbacks_t cbs = {.on_records = on_records};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    kc_topic_partition_t tp = {topic, 0, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, &tp, 1, &err), KC_OK);
    int last = -1, stable = 0;
    for (int i = 0; i < 300 && stable < 20; i++) { /* until 2 s without news */
        usleep(100 * 1000);
        int now = atomic_load(&n_commit) + atomic_load(&n_abort) + atomic_load(&n_other);
        stable = now == last && now > 0 ? stable + 1 : 0;
        last = now;
    }
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
    printf("# %s: committed %d, aborted %d, other %d\n", iso, atomic_load(&n_commit),
           atomic_load(&n_abort), atomic_load(&n_other));
}

static void aborted_never_delivered(void **state)
{
    (void)state;
    char topic[64], dir[] = "/tmp/kc-txn-XXXXXX", cmd[2048];
    snprintf(topic, sizeof topic, "kc-txn-%d", (int)getpid());
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "%s topic create %s --partitions 1 --replication 3 --dir %s >/dev/null",
             kc_test_env("KC_TESTKIT"), topic, kc_test_env("KC_CLUSTER_DIR"));
    sh(cmd);
    char jars[1024];
    snprintf(jars, sizeof jars, "%s", kc_test_src_path("tests/testkit/fetch-kafka"));
    snprintf(cmd, sizeof cmd,
             "cp=\"$(%s)/*\" && javac -cp \"$cp\" -d %s %s && "
             "java -Xmx256m -cp \"$cp:%s\" TxnProducer %s %s kc-txn-%d >%s/java.log 2>&1 || "
             "{ cat %s/java.log; exit 1; }",
             jars, dir, kc_test_src_path("tests/kafka/TxnProducer.java"), dir,
             kc_test_env("KC_BOOTSTRAP"), topic, (int)getpid(), dir, dir);
    sh(cmd);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sh(cmd);

    consume(topic, "read_committed");
    assert_int_equal(atomic_load(&n_commit), 100);
    assert_int_equal(atomic_load(&n_abort), 0);
    assert_int_equal(atomic_load(&n_other), 0);
    consume(topic, "read_uncommitted");
    assert_int_equal(atomic_load(&n_commit), 100);
    assert_int_equal(atomic_load(&n_abort), 100);
    assert_int_equal(atomic_load(&n_other), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(aborted_never_delivered)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
