/* kc-test-label: threads */
/* Against the suite's cluster: the list calls of the consumer API.
 *  1. kc_assign of a topic's 3 partitions: kc_assignment lists exactly them, and so does the last
 *     KC_EVENT_ASSIGNMENT; everything is delivered.
 *  2. kc_incremental_unassign of one: on_revoke for it alone, the others keep running (no new
 *     on_assign), kc_assignment and the event list the other two; asked again for the removed
 *     one: KC_ERR_NOT_FOUND and nothing changes.
 *  3. kc_seek_partitions moves two partitions at once (one to the beginning, one to offset 5):
 *     exactly those records are delivered again; a bad offset is refused before anything moves.
 *  4. kc_subscription: the topics of the last kc_subscribe while subscribed, none after
 *     kc_unsubscribe; kc_assignment then lists the group's partitions.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "membership.h"

#define NP   3
#define RECS 300

static bool read_n(mb_tracker_t *t, const void *arg)
{
    return t->records >= *(const long *)arg;
}

static bool event_is(mb_tracker_t *t, const void *arg)
{
    return strcmp(t->last_event, arg) == 0;
}

static bool holds(mb_tracker_t *t, const void *arg)
{
    return t->n_held == *(const size_t *)arg;
}

/* kc_assignment's answer in mb_join's form; frees it. */
static void assignment_str(kc_consumer_t *c, char *out, size_t cap)
{
    kc_topic_partition_t *tps = (kc_topic_partition_t *)(uintptr_t)1;
    size_t n = 99;
    kc_error_t err;
    if (kc_assignment(c, &tps, &n, &err) != KC_OK)
        fail_msg("kc_assignment: %s", err.msg);
    const char *topics[MB_MAXP];
    int32_t parts[MB_MAXP];
    assert_true(n <= MB_MAXP);
    assert_true(n > 0 || tps == NULL);
    for (size_t i = 0; i < n; i++) {
        topics[i] = tps[i].topic;
        parts[i] = tps[i].partition;
    }
    mb_join(out, cap, topics, parts, n);
    free(tps);
}

static void lists(void **state)
{
    (void)state;
    char t[64], group[64], want[256], got[256];
    snprintf(t, sizeof t, "kc-lists-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-lists-%d", (int)getpid());
    mb_topic(t, NP, RECS);
    mb_tracker_t x;
    mb_init(&x);
    kc_error_t err;
    const char *extra[] = {"enable.auto.commit", "false", NULL};
    kc_consumer_t *c = mb_consumer(&x, group, "consumer", extra);

    /* 1 */
    kc_topic_partition_t all[NP];
    for (int p = 0; p < NP; p++)
        all[p] = (kc_topic_partition_t){t, p, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(c, all, NP, &err), KC_OK);
    snprintf(want, sizeof want, "%s:0,%s:1,%s:2", t, t, t);
    assignment_str(c, got, sizeof got);
    assert_string_equal(got, want);
    long n = RECS;
    if (!mb_wait(&x, read_n, &n, 30000) || !mb_wait(&x, event_is, want, 10000))
        fail_msg("assign: %ld records, event '%s'", x.records, x.last_event);

    /* 2 */
    kc_topic_partition_t one = {t, 1, 0};
    assert_int_equal(kc_incremental_unassign(c, &one, 1, &err), KC_OK);
    snprintf(want, sizeof want, "%s:0,%s:2", t, t);
    size_t two = 2;
    if (!mb_wait(&x, holds, &two, 10000) || !mb_wait(&x, event_is, want, 10000))
        fail_msg("incremental_unassign: held %zu, event '%s'", x.n_held, x.last_event);
    assignment_str(c, got, sizeof got);
    assert_string_equal(got, want);
    pthread_mutex_lock(&x.mu);
    assert_int_equal(x.revokes, 1);
    assert_int_equal(x.assigns, NP);
    char held[256];
    mb_held_str(&x, held, sizeof held);
    assert_string_equal(held, want);
    long events = x.events;
    pthread_mutex_unlock(&x.mu);
    assert_int_equal(kc_incremental_unassign(c, &one, 1, &err), KC_ERR_NOT_FOUND);
    kc_topic_partition_t mixed[2] = {{t, 0, 0}, {t, 1, 0}};
    assert_int_equal(kc_incremental_unassign(c, mixed, 2, &err), KC_ERR_NOT_FOUND);
    assignment_str(c, got, sizeof got);
    assert_string_equal(got, want); /* partition 0 was not removed either */
    kc_test_sleep_ms(300);
    pthread_mutex_lock(&x.mu);
    assert_int_equal(x.events, events); /* nothing changed: no event */
    int64_t end0 = mb_find(x.seen, x.n_seen, t, 0)->end;
    int64_t end2 = mb_find(x.seen, x.n_seen, t, 2)->end;
    long before = x.records;
    pthread_mutex_unlock(&x.mu);

    /* 3 */
    assert_true(end2 > 5);
    kc_topic_partition_t bad[2] = {{t, 0, KC_OFFSET_BEGINNING}, {t, 2, -7}};
    assert_int_equal(kc_seek_partitions(c, bad, 2, &err), KC_ERR_INVALID_ARG);
    kc_test_sleep_ms(500);
    assert_int_equal(records_of_tracker(&x), before); /* the valid entry did not move either */
    kc_topic_partition_t seeks[2] = {{t, 0, KC_OFFSET_BEGINNING}, {t, 2, 5}};
    assert_int_equal(kc_seek_partitions(c, seeks, 2, &err), KC_OK);
    n = before + (long)end0 + (long)(end2 - 5);
    if (!mb_wait(&x, read_n, &n, 30000))
        fail_msg("seek_partitions: %ld records again, want %ld", x.records - before, n - before);
    kc_test_sleep_ms(500);
    assert_int_equal(records_of_tracker(&x), n);
    printf("# seek_partitions re-delivered %ld records (%lld of p0 + %lld of p2)\n", n - before,
           (long long)end0, (long long)(end2 - 5));

    /* 4 */
    assert_int_equal(kc_unassign(c, &err), KC_OK);
    char **sub = (char **)(uintptr_t)1;
    size_t ns = 99;
    assert_int_equal(kc_subscription(c, &sub, &ns, &err), KC_OK);
    assert_null(sub);
    assert_int_equal(ns, 0);
    const char *topics[] = {t};
    assert_int_equal(kc_subscribe(c, topics, 1, &err), KC_OK);
    assert_int_equal(kc_subscription(c, &sub, &ns, &err), KC_OK);
    assert_int_equal(ns, 1);
    assert_string_equal(sub[0], t);
    free(sub);
    size_t three = NP;
    if (!mb_wait(&x, holds, &three, 60000))
        fail_msg("subscribe: held %zu", x.n_held);
    snprintf(want, sizeof want, "%s:0,%s:1,%s:2", t, t, t);
    assignment_str(c, got, sizeof got);
    assert_string_equal(got, want);
    assert_int_equal(kc_unsubscribe(c, 30000, &err), KC_OK);
    assert_int_equal(kc_subscription(c, &sub, &ns, &err), KC_OK);
    assert_null(sub);
    assert_int_equal(ns, 0);
    assignment_str(c, got, sizeof got);
    assert_string_equal(got, "");
    assert_int_equal(kc_close(c, 20000, &err), KC_OK);
    kc_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
