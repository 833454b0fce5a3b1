/* Against the suite's cluster: a pattern subscription under group.protocol=classic, matched by
 * the member against all topics' metadata (kc_subscribe's one "^..." entry).
 *  1. Two matching topics exist, one that does not match too: the member is assigned exactly the
 *     matching topics' partitions; kc_subscription gives the pattern.
 *  2. A matching topic created afterwards: the member rejoins and holds its partition too, and
 *     delivers its records; the non-matching topic is never assigned.
 *  3. A matching topic deleted: it leaves the assignment.
 *  4. A pattern that does not compile: KC_ERR_INVALID_ARG, and the subscription stays.
 *  5. Every matching topic deleted: the member holds nothing (Java's classic consumer drops
 *     them too); a matching topic created then is assigned again.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

static atomic_long late_records; /* records of the topic created after the subscription */
static char late_topic[64];

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o;
    long n = 0;
    while (kc_records_next(b))
        n++;
    if (!strcmp(p->topic, late_topic))
        atomic_fetch_add(&late_records, n);
    return KC_CB_CONTINUE;
}

/* The assignment as "topic:partition " sorted by the call's order (kc_assignment's), or "". */
static void held(kc_consumer_t *c, char *out, size_t len)
{
    kc_topic_partition_t *tps = NULL;
    size_t n = 0;
    kc_error_t err;
    out[0] = '\0';
    if (kc_assignment(c, &tps, &n, &err) != KC_OK)
        fail_msg("kc_assignment: %s", err.msg);
    /* sorted, so the comparison does not depend on the order the member lists them in */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            int d = strcmp(tps[i].topic, tps[j].topic);
            if (d > 0 || (d == 0 && tps[i].partition > tps[j].partition)) {
                kc_topic_partition_t t = tps[i];
                tps[i] = tps[j];
                tps[j] = t;
            }
        }
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s:%d ", tps[i].topic, (int)tps[i].partition);
    }
    free(tps);
}

static void wait_held(kc_consumer_t *c, const char *want, int ms)
{
    char got[1024] = "";
    for (int t = 0; t < ms; t += 100) {
        held(c, got, sizeof got);
        if (!strcmp(got, want))
            return;
        kc_test_sleep_ms(100);
    }
    fail_msg("holds '%s', want '%s'", got, want);
}

static void classic_pattern(void **state)
{
    (void)state;
    int pid = (int)getpid();
    char a[64], b[64], other[64], partial[64], pattern[80], group[80], want[512];
    snprintf(a, sizeof a, "rx-%d-a", pid);
    snprintf(b, sizeof b, "rx-%d-b", pid);
    snprintf(late_topic, sizeof late_topic, "rx-%d-late", pid);
    snprintf(other, sizeof other, "other-rx-%d-a",
             pid); /* contains the prefix, does not start so */
    /* [a-z]+ to the end: "rx-<pid>-c9" starts with a match but is not one as a whole, so it is
     * never subscribed (Java's whole-name rule; regexec alone would take it). */
    snprintf(pattern, sizeof pattern, "^rx-%d-[a-z]+", pid);
    snprintf(partial, sizeof partial, "rx-%d-c9", pid);
    snprintf(group, sizeof group, "rx-g-%d", pid);
    kc_test_cluster("topic create %s --partitions 2", a);
    kc_test_cluster("topic create %s --partitions 1", b);
    kc_test_cluster("topic create %s --partitions 1", other);
    kc_test_cluster("topic create %s --partitions 1", partial);

    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", kc_test_env("KC_BOOTSTRAP")},
                           {"group.id", group},
                           {"group.protocol", "classic"},
                           {"auto.offset.reset", "earliest"},
                           {"fetch.max.wait.ms", "100"}};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_callbacks_t cbs = {.size = sizeof(kc_callbacks_t), .on_records = on_records};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    const char *sub[] = {pattern};
    assert_int_equal(kc_subscribe(c, sub, 1, &err), KC_OK);
    snprintf(want, sizeof want, "%s:0 %s:1 %s:0 ", a, a, b);
    wait_held(c, want, 30000);
    char **topics;
    size_t nt;
    assert_int_equal(kc_subscription(c, &topics, &nt, &err), KC_OK);
    assert_int_equal(nt, 1);
    assert_string_equal(topics[0], pattern);
    free(topics);
    printf("# matched at start: %s\n", want);

    kc_test_cluster("topic create %s --partitions 1", late_topic);
    kc_test_cluster("produce %s --records 25 --size 8", late_topic);
    snprintf(want, sizeof want, "%s:0 %s:1 %s:0 %s:0 ", a, a, b, late_topic);
    wait_held(c, want, 30000);
    for (int t = 0; t < 20000 && atomic_load(&late_records) < 25; t += 100)
        kc_test_sleep_ms(100);
    assert_int_equal(atomic_load(&late_records), 25);
    printf("# after a matching topic was created: %s(25 records of it)\n", want);

    const char *bad[] = {"^rx-(unclosed"};
    assert_int_equal(kc_subscribe(c, bad, 1, &err), KC_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "^rx-(unclosed"));
    assert_int_equal(kc_subscription(c, &topics, &nt, &err), KC_OK);
    assert_string_equal(topics[0], pattern);
    free(topics);

    kc_test_cluster("topic delete %s", b);
    snprintf(want, sizeof want, "%s:0 %s:1 %s:0 ", a, a, late_topic);
    wait_held(c, want, 40000);
    printf("# after a matching topic was deleted: %s\n", want);

    kc_test_cluster("topic delete %s", a);
    kc_test_cluster("topic delete %s", late_topic);
    wait_held(c, "", 40000);
    printf("# after every matching topic was deleted: nothing held\n");
    char again[64];
    snprintf(again, sizeof again, "rx-%d-again", pid);
    kc_test_cluster("topic create %s --partitions 1", again);
    snprintf(want, sizeof want, "%s:0 ", again);
    wait_held(c, want, 40000);
    printf("# after a matching topic was created again: %s\n", want);
    assert_int_equal(kc_close(c, 10000, &err), KC_OK);
    kc_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classic_pattern),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
