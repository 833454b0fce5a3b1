/* kc-test-label: threads-long */
/* Against the suite's cluster: kc_unsubscribe, in both protocols. Two members X and Y of one
 * group share topic A (all of it consumed):
 *   1. kc_unsubscribe(X) returns once X has left: every partition X was assigned got on_revoke
 *      (none lost), the revocation committed exactly where X's delivery got to, the last
 *      KC_EVENT_ASSIGNMENT is empty, and Y holds all of A well inside the session timeout
 *      (45 s): the coordinator was told, rather than waiting for X's session to run out.
 *   2. X subscribes again, to topic B: it joins anew and holds and reads all of B.
 * kc_group_generation gives the generation / epoch (> 0) and member id while X is in the group,
 * -1 and "" once it left.
 *   3. kc_assign is refused while subscribed; after a second kc_unsubscribe it works, and the
 *      manual partition is assigned, delivered, and announced by KC_EVENT_ASSIGNMENT.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "membership.h"

#define NA   4
#define NB   3
#define RECA 400
#define RECB 150

static bool settled_share(mb_tracker_t *t, const void *arg)
{
    const char *a = arg;
    char held[1024];
    mb_held_str(t, held, sizeof held);
    return mb_held_of(t, a) == NA / 2 && t->n_held == NA / 2 && strcmp(held, t->last_event) == 0;
}

static bool holds_n_of(mb_tracker_t *t, const void *arg)
{
    const char *topic = arg;
    size_t want = strstr(topic, "-b-") ? NB : NA;
    return mb_held_of(t, topic) == want && t->n_held == want;
}

static bool read_all(mb_tracker_t *t, const void *arg)
{
    return t->records >= *(const long *)arg;
}

static bool event_is(mb_tracker_t *t, const void *arg)
{
    return t->events > 0 && strcmp(t->last_event, arg) == 0 && t->n_held == (*(char *)arg != 0);
}

static void unsubscribe(const char *protocol, const char *const *extra, const char *tag)
{
    char a[64], b[64], group[64];
    snprintf(a, sizeof a, "kc-unsub-%s-a-%d", tag, (int)getpid());
    snprintf(b, sizeof b, "kc-unsub-%s-b-%d", tag, (int)getpid());
    snprintf(group, sizeof group, "kc-unsub-%s-%d", tag, (int)getpid());
    mb_topic(a, NA, RECA);
    mb_topic(b, NB, RECB);
    mb_tracker_t x, y;
    mb_init(&x);
    mb_init(&y);
    kc_error_t err;
    kc_consumer_t *cy = mb_consumer(&y, group, protocol, extra);
    kc_consumer_t *cx = mb_consumer(&x, group, protocol, extra);
    const char *sa[] = {a};
    assert_int_equal(kc_subscribe(cy, sa, 1, &err), KC_OK);
    assert_int_equal(kc_subscribe(cx, sa, 1, &err), KC_OK);
    if (!mb_wait(&x, settled_share, a, 90000) || !mb_wait(&y, settled_share, a, 30000))
        fail_msg("%s: X and Y never shared %s (X %zu '%s', Y %zu '%s')", protocol, a, x.n_held,
                 x.last_event, y.n_held, y.last_event);
    int64_t end = kc_test_now_ms() + 60000;
    while (records_of_tracker(&x) + records_of_tracker(&y) < RECA && kc_test_now_ms() < end)
        kc_test_sleep_ms(50);
    assert_int_equal(records_of_tracker(&x) + records_of_tracker(&y), RECA);

    /* The generation / epoch and member id, together: X is in the group. */
    int32_t gen = -5;
    char id[256], id2[256];
    assert_int_equal(kc_group_generation(cx, &gen, id, sizeof id, &err), KC_OK);
    assert_int_equal(kc_member_id(cx, id2, sizeof id2), KC_OK);
    assert_true(gen > 0);
    assert_true(id[0] != '\0');
    assert_string_equal(id, id2);
    assert_int_equal(kc_group_generation(cx, &gen, id, 2, &err), KC_ERR_TOO_LARGE);

    /* 1: X leaves. */
    mb_tp_t held[MB_MAXP];
    pthread_mutex_lock(&x.mu);
    size_t nheld = x.n_held;
    memcpy(held, x.held, sizeof held);
    for (size_t i = 0; i < nheld; i++) {
        mb_tp_t *s = mb_find(x.seen, x.n_seen, held[i].topic, held[i].partition);
        held[i].end = s ? s->end : -1;
    }
    pthread_mutex_unlock(&x.mu);
    int64_t t0 = kc_test_now_ms();
    if (kc_unsubscribe(cx, 30000, &err) != KC_OK)
        fail_msg("%s: kc_unsubscribe: %s", protocol, err.msg);
    int64_t left_ms = kc_test_now_ms() - t0;
    assert_int_equal(kc_group_generation(cx, &gen, id, sizeof id, &err), KC_OK);
    assert_int_equal(gen, -1);
    assert_string_equal(id, "");
    pthread_mutex_lock(&x.mu);
    assert_int_equal(x.n_held, 0);
    assert_int_equal(x.revokes, x.assigns);
    assert_int_equal(x.losts, 0);
    assert_string_equal(x.last_event, "");
    pthread_mutex_unlock(&x.mu);
    kc_topic_partition_t tps[MB_MAXP];
    for (size_t i = 0; i < nheld; i++)
        tps[i] = (kc_topic_partition_t){held[i].topic, held[i].partition, -7};
    if (kc_committed(cx, tps, nheld, 10000, &err) != KC_OK)
        fail_msg("%s: kc_committed: %s", protocol, err.msg);
    for (size_t i = 0; i < nheld; i++) {
        if (held[i].end < 0) /* nothing of it delivered: nothing committed */
            continue;
        if (tps[i].offset != held[i].end)
            fail_msg("%s: %s[%d] committed %lld, delivered up to %lld", protocol, held[i].topic,
                     (int)held[i].partition, (long long)tps[i].offset, (long long)held[i].end);
    }
    int64_t t1 = kc_test_now_ms();
    if (!mb_wait(&y, holds_n_of, a, 15000))
        fail_msg("%s: Y did not take over all of %s within 15 s (holds %zu)", protocol, a,
                 y.n_held);
    printf("# %s: kc_unsubscribe took %lld ms; Y held all of A %lld ms later; X had %zu "
           "partitions, commits checked\n",
           protocol, (long long)left_ms, (long long)(kc_test_now_ms() - t1), nheld);

    /* 2: X joins again, on B. */
    long before = records_of_tracker(&x);
    const char *sb[] = {b};
    if (kc_subscribe(cx, sb, 1, &err) != KC_OK)
        fail_msg("%s: kc_subscribe after kc_unsubscribe: %s", protocol, err.msg);
    if (!mb_wait(&x, holds_n_of, b, 60000))
        fail_msg("%s: X did not get all of %s (holds %zu)", protocol, b, x.n_held);
    assert_int_equal(kc_group_generation(cx, &gen, id, sizeof id, &err), KC_OK);
    assert_true(gen > 0);
    long want = before + RECB;
    if (!mb_wait(&x, read_all, &want, 60000))
        fail_msg("%s: X read %ld of %s's %d records", protocol, records_of_tracker(&x) - before, b,
                 RECB);

    /* 3: manual assignment only once the group no longer owns the assignment. */
    kc_topic_partition_t one = {a, 0, KC_OFFSET_BEGINNING};
    assert_int_equal(kc_assign(cx, &one, 1, &err), KC_ERR_STATE);
    if (kc_unsubscribe(cx, 30000, &err) != KC_OK)
        fail_msg("%s: second kc_unsubscribe: %s", protocol, err.msg);
    before = records_of_tracker(&x);
    if (kc_assign(cx, &one, 1, &err) != KC_OK)
        fail_msg("%s: kc_assign after kc_unsubscribe: %s", protocol, err.msg);
    char a0[80];
    snprintf(a0, sizeof a0, "%s:0", a);
    if (!mb_wait(&x, event_is, a0, 30000))
        fail_msg("%s: manual assignment: last event '%s', held %zu", protocol, x.last_event,
                 x.n_held);
    want = before + 1;
    if (!mb_wait(&x, read_all, &want, 30000))
        fail_msg("%s: nothing delivered from the manual %s", protocol, a0);
    assert_int_equal(kc_unassign(cx, &err), KC_OK);
    if (!mb_wait(&x, event_is, "", 30000))
        fail_msg("%s: kc_unassign: last event '%s'", protocol, x.last_event);

    assert_int_equal(kc_close(cx, 20000, &err), KC_OK);
    assert_int_equal(kc_close(cy, 20000, &err), KC_OK);
    kc_destroy(cx);
    kc_destroy(cy);
}

static void classic(void **state)
{
    (void)state;
    const char *extra[] = {"partition.assignment.strategy", "cooperative-sticky",
                           "session.timeout.ms", "45000", NULL};
    unsubscribe("classic", extra, "cl");
}

static void kip848(void **state)
{
    (void)state;
    unsubscribe("consumer", NULL, "cg");
}

int main(void)
{
    if (getenv("KC_TEST_FILTER")) /* one case by name */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classic),
        cmocka_unit_test(kip848),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
