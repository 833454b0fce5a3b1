/* The manual assignment's table (runtime/consumer.c) under churn: thousands of partitions
 * assigned, taken away in a scattered order (each removal moves the last entry into the hole,
 * and its index entry with it), given back and replaced by kc_assign's difference; after every
 * step each partition's kc_position and kc_position_list answer agree with a model of what is
 * assigned where. No broker: partitions are assigned at explicit offsets, which kc_position
 * reports before anything is fetched.
 * kc-test-label: threads */
#include <string.h>

#include "kc_test.h"

#define NT   3
#define NP   1000 /* per topic */
#define NALL (NT * NP)

static const char *const topics[NT] = {"alpha", "beta", "alpha.beta"};
static int64_t model[NALL]; /* the start each partition was given; -1 not assigned */

static kc_topic_partition_t tp_of(int i, int64_t offset)
{
    return (kc_topic_partition_t){topics[i / NP], i % NP, offset};
}

/* Every partition, in a scrambled order, by both calls. */
static void check(kc_consumer_t *c, const char *step)
{
    static kc_topic_partition_t all[NALL];
    size_t missing = 0;
    for (int k = 0; k < NALL; k++) {
        int i = (int)(((long)k * 1237) % NALL); /* 1237 is prime to 3000: a permutation */
        all[k] = tp_of(i, 424242);
        missing += model[i] < 0;
    }
    kc_error_t err;
    kc_err_t rc = kc_position_list(c, all, NALL, &err);
    if (rc != (missing ? KC_ERR_NOT_FOUND : KC_OK))
        fail_msg("%s: kc_position_list gave %s (%s) with %zu not assigned", step, kc_err_name(rc),
                 err.msg, missing);
    for (int k = 0; k < NALL; k++) {
        int i = (int)(((long)k * 1237) % NALL);
        int64_t want = model[i] >= 0 ? model[i] : KC_OFFSET_INVALID;
        if (all[k].offset != want)
            fail_msg("%s: kc_position_list: %s[%d] at %lld, want %lld", step, all[k].topic,
                     (int)all[k].partition, (long long)all[k].offset, (long long)want);
        int64_t one = 0;
        rc = kc_position(c, all[k].topic, all[k].partition, &one, &err);
        if (model[i] >= 0 ? rc != KC_OK || one != want : rc != KC_ERR_NOT_FOUND)
            fail_msg("%s: kc_position: %s[%d] gave %s, %lld; want %lld", step, all[k].topic,
                     (int)all[k].partition, kc_err_name(rc), (long long)one, (long long)want);
    }
}

static void churn_keeps_every_lookup_right(void **state)
{
    (void)state;
    kc_error_t err;
    kc_conf_t *conf = kc_conf_new();
    assert_non_null(conf);
    assert_int_equal(kc_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", &err), KC_OK);
    assert_int_equal(kc_conf_set(conf, "worker.threads", "1", &err), KC_OK);
    kc_callbacks_t cbs = {0};
    kc_consumer_t *c = NULL;
    assert_int_equal(kc_consumer_new(conf, &cbs, &c, &err), KC_OK);
    static kc_topic_partition_t l[NALL];

    for (int i = 0; i < NALL; i++) {
        model[i] = 1000 * (i / NP) + i % NP;
        l[i] = tp_of(i, model[i]);
    }
    assert_int_equal(kc_assign(c, l, NALL, &err), KC_OK);
    check(c, "assigned");

    /* Every third, in a scattered order (so removals hit the middle, the end and entries that
     * an earlier removal moved). */
    size_t n = 0;
    for (int k = 0; k < NALL; k++) {
        int i = (int)(((long)k * 7919) % NALL);
        if (i % 3 == 0) {
            l[n++] = tp_of(i, 0);
            model[i] = -1;
        }
    }
    assert_int_equal(kc_incremental_unassign(c, l, n, &err), KC_OK);
    check(c, "every third taken away");

    /* Half of those back, at new offsets. */
    n = 0;
    for (int i = 0; i < NALL; i += 6) {
        model[i] = 5000000 + i;
        l[n++] = tp_of(i, model[i]);
    }
    assert_int_equal(kc_incremental_assign(c, l, n, &err), KC_OK);
    check(c, "half given back");

    /* kc_assign's difference: the even partitions stay (at their own offsets: a seek to where
     * they are), the odd ones go, and those of the last topic not held come in. */
    n = 0;
    for (int i = 0; i < NALL; i++) {
        bool last_topic = i / NP == NT - 1;
        if (model[i] >= 0 && i % 2 == 0)
            l[n++] = tp_of(i, model[i]);
        else if (model[i] < 0 && last_topic) {
            model[i] = 9000000 + i;
            l[n++] = tp_of(i, model[i]);
        } else
            model[i] = -1;
    }
    assert_int_equal(kc_assign(c, l, n, &err), KC_OK);
    check(c, "replaced");

    assert_int_equal(kc_unassign(c, &err), KC_OK);
    for (int i = 0; i < NALL; i++)
        model[i] = -1;
    check(c, "unassigned");
    kc_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(churn_keeps_every_lookup_right),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
