/* kc-test-label: threads-long */
/* Against the suite's cluster: kc_subscribe called again replaces the subscription, in both
 * protocols, with a Java console consumer in the same group (the member of another client):
 *   1. Java joins on topic A, then our member subscribes [A]: both share A.
 *   2. Our member subscribes [A, B]: it ends holding all of B (Java does not read B).
 *   3. Our member subscribes [B]: it ends holding exactly B's partitions; none of B's was ever
 *      revoked (only what leaves is revoked: classic cooperative-sticky, KIP-848) and nothing
 *      was lost.
 * After each step the last KC_EVENT_ASSIGNMENT lists exactly what on_assign / on_revoke say the
 * member holds.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "membership.h"

#define NA 4
#define NB 3

typedef struct want {
    const char *topic;
    size_t n;
} want_t;

/* Holds exactly w->n partitions of w->topic (and, w->n == 0, something of it) and the last
 * assignment event says the same. */
static bool holds_of(mb_tracker_t *t, const void *arg)
{
    const want_t *w = arg;
    size_t n = mb_held_of(t, w->topic);
    char held[1024];
    mb_held_str(t, held, sizeof held);
    bool count = w->n ? n == w->n : n > 0 && n < NA;
    return count && strcmp(held, t->last_event) == 0;
}

/* Holds exactly B's partitions, and the last event says so. */
static bool only_b(mb_tracker_t *t, const void *arg)
{
    const char *b = arg;
    char held[1024];
    mb_held_str(t, held, sizeof held);
    return t->n_held == NB && mb_held_of(t, b) == NB && strcmp(held, t->last_event) == 0;
}

/* The Java member, stopped by the teardown too: a failed assertion returns from the case. */
static pid_t java_pid = -1;

static int stop_java(void **state)
{
    (void)state;
    mb_java_stop(java_pid);
    java_pid = -1;
    return 0;
}

static void resubscribe(const char *protocol, const char *const *ours, const char *const *java,
                        const char *tag)
{
    char a[64], b[64], group[64];
    snprintf(a, sizeof a, "kc-resub-%s-a-%d", tag, (int)getpid());
    snprintf(b, sizeof b, "kc-resub-%s-b-%d", tag, (int)getpid());
    snprintf(group, sizeof group, "kc-resub-%s-%d", tag, (int)getpid());
    mb_topic(a, NA, 200);
    mb_topic(b, NB, 150);
    mb_tracker_t t;
    mb_init(&t);
    kc_error_t err;
    java_pid = mb_java(group, a, java);
    kc_test_sleep_ms(3000); /* Java first: it is in the group when we join */
    kc_consumer_t *c = mb_consumer(&t, group, protocol, ours);

    const char *s1[] = {a};
    assert_int_equal(kc_subscribe(c, s1, 1, &err), KC_OK);
    want_t share = {a, 0};
    if (!mb_wait(&t, holds_of, &share, 90000))
        fail_msg("%s: never shared %s with the Java member (held %zu, events %ld: '%s')", protocol,
                 a, t.n_held, t.events, t.last_event);

    const char *s2[] = {a, b};
    if (kc_subscribe(c, s2, 2, &err) != KC_OK)
        fail_msg("%s: second kc_subscribe: %s", protocol, err.msg);
    want_t all_b = {b, NB};
    if (!mb_wait(&t, holds_of, &all_b, 60000))
        fail_msg("%s: [A, B]: never held all of %s (held %zu: '%s')", protocol, b, t.n_held,
                 t.last_event);

    const char *s3[] = {b};
    if (kc_subscribe(c, s3, 1, &err) != KC_OK)
        fail_msg("%s: third kc_subscribe: %s", protocol, err.msg);
    if (!mb_wait(&t, only_b, b, 60000))
        fail_msg("%s: [B]: did not end with exactly %s (held %zu, event '%s')", protocol, b,
                 t.n_held, t.last_event);
    pthread_mutex_lock(&t.mu);
    long rb = mb_revoked_of(&t, b), ra = mb_revoked_of(&t, a), losts = t.losts;
    long events = t.events;
    pthread_mutex_unlock(&t.mu);
    printf("# %s: revoked %ld of A, %ld of B, lost %ld; %ld assignment events\n", protocol, ra, rb,
           losts, events);
    assert_int_equal(rb, 0);
    assert_int_equal(losts, 0);
    assert_true(ra >= 1);
    assert_int_equal(kc_close(c, 20000, &err), KC_OK);
    kc_destroy(c);
    stop_java(NULL);
}

static void classic_cooperative(void **state)
{
    (void)state;
    const char *ours[] = {"partition.assignment.strategy", "cooperative-sticky",
                          "heartbeat.interval.ms", "500", NULL};
    const char *java[] = {"group.protocol=classic",
                          "partition.assignment.strategy="
                          "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
                          "heartbeat.interval.ms=500", NULL};
    resubscribe("classic", ours, java, "cl");
}

static void kip848(void **state)
{
    (void)state;
    const char *java[] = {"group.protocol=consumer", NULL};
    resubscribe("consumer", NULL, java, "cg");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (getenv("KC_TEST_FILTER")) /* one case by name */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(classic_cooperative, stop_java),
        cmocka_unit_test_teardown(kip848, stop_java),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
