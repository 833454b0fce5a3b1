/* Against the suite's cluster: commit metadata (kc_commit_metadata / kc_committed_metadata).
 *  1. Manual assignment with group.id (the anonymous commit): two partitions committed with and
 *     without a metadata string read back with their offsets and strings; a partition never
 *     committed reads back KC_OFFSET_INVALID and NULL; a later kc_commit without metadata
 *     clears it (the broker stores ""); a string past offset.metadata.max.bytes is refused with
 *     OFFSET_METADATA_TOO_LARGE and changes nothing.
 *  2. A group member, under each group protocol (classic and KIP-848): metadata committed under
 *     its own identity for the partitions it holds reads back the same.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p, (void)b;
    return KC_CB_CONTINUE;
}

static kc_consumer_t *consumer(const char *group, const char *protocol)
{
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", kc_test_env("KC_BOOTSTRAP")},
                           {"group.id", group},
                           {"group.protocol", protocol},
                           {"enable.auto.commit", "false"},
                           {"fetch.max.wait.ms", "100"}};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_callbacks_t cbs = {.on_records = on_records};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    return c;
}

static void expect_committed(kc_consumer_t *c, const char *topic, const int64_t *offs,
                             const char *const *meta, int np)
{
    kc_offset_meta_t q[8];
    for (int i = 0; i < np; i++)
        q[i] = (kc_offset_meta_t){topic, i, 12345, "junk"};
    char *block = (char *)"unset";
    kc_error_t err;
    if (kc_committed_metadata(c, q, (size_t)np, 15000, &block, &err) != KC_OK)
        fail_msg("kc_committed_metadata: %s", err.msg);
    int any = 0;
    for (int i = 0; i < np; i++) {
        if (q[i].offset != offs[i])
            fail_msg("partition %d: committed %lld, want %lld", i, (long long)q[i].offset,
                     (long long)offs[i]);
        if (!meta[i] != !q[i].metadata || (meta[i] && strcmp(meta[i], q[i].metadata)))
            fail_msg("partition %d: metadata '%s', want '%s'", i,
                     q[i].metadata ? q[i].metadata : "(null)", meta[i] ? meta[i] : "(null)");
        any |= meta[i] != NULL;
        if (q[i].metadata) /* every string lies in the one block */
            assert_true(q[i].metadata >= block);
    }
    if (any)
        assert_non_null(block);
    else
        assert_null(block);
    free(block);
}

static void manual_metadata(void **state)
{
    (void)state;
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "meta-manual-%d", (int)getpid());
    snprintf(group, sizeof group, "meta-manual-g-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 3", topic);
    kc_consumer_t *c = consumer(group, "classic");
    kc_error_t err;
    const kc_offset_meta_t commit[] = {{topic, 0, 5, "run=42;host=a \xc3\xa9"},
                                       {topic, 1, 3, NULL}};
    if (kc_commit_metadata(c, commit, 2, 15000, &err) != KC_OK)
        fail_msg("kc_commit_metadata: %s", err.msg);
    expect_committed(c, topic, (const int64_t[]){5, 3, KC_OFFSET_INVALID},
                     (const char *const[]){"run=42;host=a \xc3\xa9", NULL, NULL}, 3);
    /* the plain query still answers, without the strings */
    kc_topic_partition_t plain[] = {{topic, 0, 0}};
    assert_int_equal(kc_committed(c, plain, 1, 15000, &err), KC_OK);
    assert_int_equal(plain[0].offset, 5);

    /* too large: refused per partition, nothing stored */
    size_t big = 5000;
    char *huge = malloc(big + 1);
    memset(huge, 'm', big);
    huge[big] = '\0';
    const kc_offset_meta_t too[] = {{topic, 0, 9, huge}};
    assert_int_equal(kc_commit_metadata(c, too, 1, 15000, &err), KC_ERR_BROKER);
    assert_int_equal(err.kafka_code, 12); /* OFFSET_METADATA_TOO_LARGE */
    free(huge);
    expect_committed(c, topic, (const int64_t[]){5, 3, KC_OFFSET_INVALID},
                     (const char *const[]){"run=42;host=a \xc3\xa9", NULL, NULL}, 3);

    /* a commit without metadata stores "": read back as none */
    kc_topic_partition_t again[] = {{topic, 0, 6}};
    assert_int_equal(kc_commit(c, again, 1, 15000, &err), KC_OK);
    expect_committed(c, topic, (const int64_t[]){6, 3, KC_OFFSET_INVALID},
                     (const char *const[]){NULL, NULL, NULL}, 3);

    /* misuse */
    char *block;
    assert_int_equal(kc_commit_metadata(c, NULL, 0, 1000, &err), KC_ERR_INVALID_ARG);
    assert_int_equal(kc_committed_metadata(c, NULL, 0, 1000, &block, &err), KC_ERR_INVALID_ARG);
    assert_null(block);
    kc_offset_meta_t noname[] = {{NULL, 0, 0, NULL}};
    assert_int_equal(kc_commit_metadata(c, noname, 1, 1000, &err), KC_ERR_INVALID_ARG);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static void member_metadata(const char *protocol)
{
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "meta-%s-%d", protocol, (int)getpid());
    snprintf(group, sizeof group, "meta-%s-g-%d", protocol, (int)getpid());
    kc_test_cluster("topic create %s --partitions 2", topic);
    kc_consumer_t *c = consumer(group, protocol);
    kc_error_t err;
    const char *topics[] = {topic};
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    size_t n = 0;
    kc_topic_partition_t *held = NULL;
    for (int i = 0; i < 300 && n < 2; i++) {
        free(held);
        held = NULL;
        assert_int_equal(kc_assignment(c, &held, &n, &err), KC_OK);
        if (n < 2)
            kc_test_sleep_ms(100);
    }
    free(held);
    if (n < 2)
        fail_msg("%s: the member holds %zu of 2 partitions after 30 s", protocol, n);
    const kc_offset_meta_t commit[] = {{topic, 0, 0, "member-p0"}, {topic, 1, 0, "member-p1"}};
    kc_err_t rc = KC_ERR_AGAIN;
    /* a classic member's first commit may meet the end of its rebalance: asked again */
    for (int i = 0; i < 50 && rc != KC_OK; i++) {
        rc = kc_commit_metadata(c, commit, 2, 15000, &err);
        if (rc != KC_OK)
            kc_test_sleep_ms(200);
    }
    if (rc != KC_OK)
        fail_msg("%s: kc_commit_metadata: %s", protocol, err.msg);
    expect_committed(c, topic, (const int64_t[]){0, 0},
                     (const char *const[]){"member-p0", "member-p1"}, 2);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

static void member_classic(void **state)
{
    (void)state;
    member_metadata("classic");
}

static void member_848(void **state)
{
    (void)state;
    member_metadata("consumer");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(manual_metadata),
        cmocka_unit_test(member_classic),
        cmocka_unit_test(member_848),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
