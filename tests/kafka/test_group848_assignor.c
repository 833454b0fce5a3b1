/* group.remote.assignor (KIP-848, the broker computes the assignment) with the public consumer:
 * two members in one process subscribed to two topics of 3 partitions each.
 *  - range: the broker's range assignor gives each member the same partition numbers of both
 *    topics (co-partitioned, as Java's RangeAssignor does), 2 + 1 per topic: 4 and 2 in all;
 *  - uniform: 3 and 3 (6 partitions spread evenly across the two members);
 *  - an assignor the broker does not have: UNSUPPORTED_ASSIGNOR reaches on_event as a fatal
 *    error naming the code, and the member never gets a partition.
 * Ownership is what the callbacks saw: on_assign adds, on_revoke / on_lost removes. Settled =
 * both members' sets disjoint, covering all 6, unchanged for 2 s.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"
#include "proto/kafka_errors.h"

#define NP 3

static char topics[2][64];

/* Written by the member's workers, read by the test thread: atomics only. */
typedef struct member {
    kc_consumer_t *c;
    _Atomic int owned[2][NP];
    _Atomic int changes, assigns, fatal, fatal_kafka, errors;
    char fatal_msg[256]; /* written before fatal's release store */
} member_t;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int topic_index(const char *t)
{
    return strcmp(t, topics[0]) == 0 ? 0 : strcmp(t, topics[1]) == 0 ? 1 : -1;
}

static void own(member_t *m, const kc_part_t *p, int v)
{
    int t = topic_index(p->topic);
    if (t < 0 || p->partition < 0 || p->partition >= NP)
        return;
    atomic_store(&m->owned[t][p->partition], v);
    atomic_fetch_add(&m->changes, 1);
}

static void on_assign(void *o, kc_part_t *p)
{
    atomic_fetch_add(&((member_t *)o)->assigns, 1);
    own(o, p, 1);
}

static void on_revoke(void *o, kc_part_t *p)
{
    own(o, p, 0);
}

static kc_cb_result_t on_records(void *o, kc_part_t *p, kc_records_t *b)
{
    (void)o, (void)p;
    while (kc_records_next(b))
        ;
    return KC_CB_CONTINUE;
}

static void on_event(void *o, const kc_event_t *ev)
{
    member_t *m = o;
    if (ev->type != KC_EVENT_ERROR)
        return;
    atomic_fetch_add(&m->errors, 1);
    if (ev->error->code == KC_ERR_FATAL && atomic_load(&m->fatal) == 0) {
        snprintf(m->fatal_msg, sizeof m->fatal_msg, "%s", ev->error->msg);
        atomic_store(&m->fatal_kafka, ev->error->kafka_code);
        atomic_store_explicit(&m->fatal, 1, memory_order_release);
    }
}

static void start(member_t *m, const char *group, const char *assignor)
{
    memset(m, 0, sizeof *m);
    kc_conf_t *conf = kc_conf_new();
    kc_error_t err;
    const char *kv[][2] = {{"bootstrap.servers", kc_test_env("KC_BOOTSTRAP")},
                           {"group.id", group},
                           {"group.protocol", "consumer"},
                           {"group.remote.assignor", assignor},
                           {"worker.threads", "1"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK)
            fail_msg("%s: %s", kv[i][0], err.msg);
    kc_callbacks_t cbs = {.on_assign = on_assign,
                          .on_records = on_records,
                          .on_revoke = on_revoke,
                          .on_lost = on_revoke,
                          .on_event = on_event,
                          .opaque = m};
    if (kc_consumer_new(conf, &cbs, &m->c, &err) != KC_OK)
        fail_msg("kc_consumer_new: %s", err.msg);
    const char *sub[] = {topics[0], topics[1]};
    if (kc_subscribe(m->c, sub, 2, &err) != KC_OK)
        fail_msg("kc_subscribe: %s", err.msg);
}

static void stop(member_t *m)
{
    kc_error_t err;
    kc_err_t rc = kc_close(m->c, 10000, &err);
    if (rc != KC_OK)
        fail_msg("kc_close: %s", err.msg);
    kc_destroy(m->c);
}

static int count(member_t *m, int t)
{
    int n = 0;
    for (int p = 0; p < NP; p++)
        n += atomic_load(&m->owned[t][p]);
    return n;
}

/* Disjoint and covering every partition of both topics. */
static int covering(member_t *m)
{
    for (int t = 0; t < 2; t++)
        for (int p = 0; p < NP; p++)
            if (atomic_load(&m[0].owned[t][p]) + atomic_load(&m[1].owned[t][p]) != 1)
                return 0;
    return 1;
}

/* Waits until the two members' sets are disjoint, cover all, and stay unchanged for 2 s. */
static int settle(member_t *m, int64_t ms)
{
    int64_t end = now_ms() + ms, since = -1;
    int last = -1;
    while (now_ms() < end) {
        int ch = atomic_load(&m[0].changes) + atomic_load(&m[1].changes);
        if (covering(m) && count(&m[0], 0) + count(&m[0], 1) > 0 &&
            count(&m[1], 0) + count(&m[1], 1) > 0) {
            if (ch != last || since < 0)
                since = now_ms(), last = ch;
            else if (now_ms() - since >= 2000)
                return 1;
        } else {
            since = -1;
        }
        usleep(20 * 1000);
    }
    return 0;
}

static void make_topics(const char *tag)
{
    for (int t = 0; t < 2; t++) {
        snprintf(topics[t], sizeof topics[t], "kc-asg-%s-%c-%d", tag, 'a' + t, (int)getpid());
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s topic create %s --partitions %d --dir %s >/dev/null",
                 kc_test_env("KC_TESTKIT"), topics[t], NP, kc_test_env("KC_CLUSTER_DIR"));
        if (system(cmd) != 0)
            fail_msg("failed: %s", cmd);
    }
}

static void two_members(const char *assignor, member_t m[2])
{
    char group[64];
    make_topics(assignor);
    snprintf(group, sizeof group, "kc-asg-%s-%d", assignor, (int)getpid());
    start(&m[0], group, assignor);
    start(&m[1], group, assignor);
    int ok = settle(m, 45000);
    for (int i = 0; i < 2; i++) {
        printf("# %s: member %d owns", assignor, i);
        for (int t = 0; t < 2; t++)
            for (int p = 0; p < NP; p++)
                if (atomic_load(&m[i].owned[t][p]))
                    printf(" %c%d", 'a' + t, p);
        printf(" (%d error events)\n", atomic_load(&m[i].errors));
    }
    assert_true(ok);
    assert_int_equal(atomic_load(&m[0].errors) + atomic_load(&m[1].errors), 0);
}

static void range_is_copartitioned(void **state)
{
    (void)state;
    member_t m[2];
    two_members("range", m);
    int totals[2];
    for (int i = 0; i < 2; i++) {
        /* The same partition numbers of both topics. */
        for (int p = 0; p < NP; p++)
            assert_int_equal(atomic_load(&m[i].owned[0][p]), atomic_load(&m[i].owned[1][p]));
        totals[i] = count(&m[i], 0) + count(&m[i], 1);
    }
    /* 3 partitions over 2 members per topic: 2 + 1, the same member taking 2 in both. */
    assert_true((totals[0] == 4 && totals[1] == 2) || (totals[0] == 2 && totals[1] == 4));
    stop(&m[0]);
    stop(&m[1]);
}

static void uniform_is_even(void **state)
{
    (void)state;
    member_t m[2];
    two_members("uniform", m);
    assert_int_equal(count(&m[0], 0) + count(&m[0], 1), 3);
    assert_int_equal(count(&m[1], 0) + count(&m[1], 1), 3);
    stop(&m[0]);
    stop(&m[1]);
}

static void unknown_assignor_is_fatal(void **state)
{
    (void)state;
    make_topics("bogus");
    char group[64];
    snprintf(group, sizeof group, "kc-asg-bogus-%d", (int)getpid());
    member_t m;
    start(&m, group, "no-such-assignor");
    int64_t end = now_ms() + 20000;
    while (now_ms() < end && !atomic_load_explicit(&m.fatal, memory_order_acquire))
        usleep(20 * 1000);
    assert_int_equal(atomic_load_explicit(&m.fatal, memory_order_acquire), 1);
    printf("# unknown assignor: kafka %d: %s\n", atomic_load(&m.fatal_kafka), m.fatal_msg);
    assert_int_equal(atomic_load(&m.fatal_kafka), KC_KAFKA_UNSUPPORTED_ASSIGNOR);
    assert_non_null(strstr(m.fatal_msg, "UNSUPPORTED_ASSIGNOR"));
    assert_int_equal(atomic_load(&m.assigns), 0);
    kc_error_t err;
    (void)kc_close(m.c, 5000, &err); /* the member stopped for good: whatever close says */
    kc_destroy(m.c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(range_is_copartitioned),
        cmocka_unit_test(uniform_is_even),
        cmocka_unit_test(unknown_assignor_is_fatal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
