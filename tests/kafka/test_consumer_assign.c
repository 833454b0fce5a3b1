/* The public API end to end with manual assignment (runtime/consumer.c): kc_consumer_new,
 * kc_assign from the beginning, per-partition on_records on the workers, every record delivered
 * exactly once in offset order per partition, kc_position, kc_commit of the processed offsets
 * (anonymous form), kc_committed reading them back, kc_unassign → on_revoke per partition,
 * kc_close. Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define NP   4
#define RECS 3000

static char topic[64];
static _Atomic int64_t total;
static _Atomic int assigned, revoked;
static int64_t next_off[NP]; /* written only by the worker running partition p (serialised) */
static _Atomic int64_t disorder;

static void on_assign(void *o, kc_part_t *p)
{
    (void)o, (void)p;
    atomic_fetch_add(&assigned, 1);
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    const kc_record_t *r;
    while ((r = kc_records_next(b))) {
        int64_t off = kc_record_offset(r);
        if (off != next_off[p->partition])
            atomic_fetch_add(&disorder, 1);
        next_off[p->partition] = off + 1;
        atomic_fetch_add(&total, 1);
    }
    return KC_CB_CONTINUE;
}

static void on_revoke(void *o, kc_part_t *p)
{
    (void)o, (void)p;
    atomic_fetch_add(&revoked, 1);
}

static void consume_commit_close(void **state)
{
    (void)state;
    snprintf(topic, sizeof topic, "kc-core-api-%d", (int)getpid());
    char group[64];
    snprintf(group, sizeof group, "kc-core-api-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions %d --replication 3", topic, NP);
    kc_test_cluster("produce %s --records %d --size 100 --compression zstd", topic, RECS);

    kc_conf_t *conf = kc_conf_new();
    kc_test_conf_set(conf, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"));
    kc_test_conf_set(conf, "group.id", group);
    kc_test_conf_set(conf, "worker.threads", "2");
    kc_test_conf_set(conf, "enable.auto.commit", "false");
    kc_callbacks_t cbs = {.on_assign = on_assign, .on_records = on_records, .on_revoke = on_revoke};
    kc_consumer_t *c = NULL;
    kc_error_t err;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    kc_topic_partition_t tps[NP];
    for (int i = 0; i < NP; i++)
        tps[i] = (kc_topic_partition_t){topic, i, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, tps, NP, &err), KC_OK);
    for (int i = 0; i < 600 && atomic_load(&total) < RECS; i++)
        usleep(100 * 1000);
    usleep(300 * 1000);
    printf("# delivered %lld of %d, out of order %lld\n", (long long)atomic_load(&total), RECS,
           (long long)atomic_load(&disorder));
    assert_int_equal(atomic_load(&total), RECS);
    assert_int_equal(atomic_load(&disorder), 0);
    assert_int_equal(atomic_load(&assigned), NP);

    for (int i = 0; i < NP; i++) {
        int64_t pos;
        assert_int_equal(kc_position(c, topic, i, &pos, &err), KC_OK);
        assert_int_equal(pos, next_off[i] ? next_off[i] : KC_OFFSET_INVALID);
    }
    /* The list form: the same answers in one call, in the caller's order, an entry not assigned
     * left KC_OFFSET_INVALID and named, the others filled all the same. */
    kc_topic_partition_t at[NP + 1];
    for (int i = 0; i < NP; i++)
        at[i] = (kc_topic_partition_t){topic, NP - 1 - i, 12345};
    assert_int_equal(kc_position_list(c, at, NP, &err), KC_OK);
    for (int i = 0; i < NP; i++)
        assert_int_equal(at[i].offset,
                         next_off[NP - 1 - i] ? next_off[NP - 1 - i] : KC_OFFSET_INVALID);
    at[NP] = at[0];
    at[0] = (kc_topic_partition_t){topic, NP + 5, 12345};
    assert_int_equal(kc_position_list(c, at, NP + 1, &err), KC_ERR_NOT_FOUND);
    printf("# %s\n", err.msg);
    assert_non_null(strstr(err.msg, "is not assigned (1 of"));
    assert_int_equal(at[0].offset, KC_OFFSET_INVALID);
    assert_int_equal(at[NP].offset, next_off[NP - 1] ? next_off[NP - 1] : KC_OFFSET_INVALID);
    for (int i = 1; i < NP; i++)
        assert_int_equal(at[i].offset,
                         next_off[NP - 1 - i] ? next_off[NP - 1 - i] : KC_OFFSET_INVALID);
    if (kc_commit(c, NULL, 0, 30000, &err) != KC_OK)
        fail_msg("kc_commit: %s", err.msg);
    kc_topic_partition_t got[NP];
    for (int i = 0; i < NP; i++)
        got[i] = (kc_topic_partition_t){topic, i, 0};
    if (kc_committed(c, got, NP, 30000, &err) != KC_OK)
        fail_msg("kc_committed: %s", err.msg);
    int64_t sum = 0;
    for (int i = 0; i < NP; i++) {
        /* a partition the producer left empty had nothing processed: nothing committed */
        assert_int_equal(got[i].offset, next_off[i] ? next_off[i] : KC_OFFSET_INVALID);
        sum += next_off[i] ? got[i].offset : 0;
    }
    assert_int_equal(sum, RECS); /* each partition committed at its end: all records */

    assert_int_equal(kc_unassign(c, &err), KC_OK);
    for (int i = 0; i < 100 && atomic_load(&revoked) < NP; i++)
        usleep(50 * 1000);
    assert_int_equal(atomic_load(&revoked), NP);
    assert_int_equal(kc_close(c, 5000, &err), KC_OK);
    kc_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(consume_commit_close)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
