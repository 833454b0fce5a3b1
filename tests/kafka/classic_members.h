/* Helpers shared by the classic-group tests against a real broker (test_group_classic.c:
 * kconsume members only; test_group_classic_java.c: mixed with Java's console consumer). The
 * members run on the library's own driver (tests/support/group_harness.h, group.protocol=classic);
 * here: the topic under test, the broker's view of the group (DescribeGroups, each member's
 * assignment decoded) and the checks against it. Header-only (tests need no CMake change).
 * Owner: the test's thread. */
#ifndef KC_TEST_CLASSIC_MEMBERS_H
#define KC_TEST_CLASSIC_MEMBERS_H

#include "kc_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "broker_blocking.h"
#include "group/classic/assign/assign_int.h"
#include "group/classic/member.h"
#include "group_driver.h"
#include "group_harness.h"
#include "proto/describe_groups.gen.h"
#include "proto/proto.h"

#define NPART 6

static inline int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int32_t n_parts_of_topic = NPART;
static char topic_name[64];

/* A classic member's settings: heartbeats every 500 ms, so that rebalances end quickly. */
static inline kc_gh_opts_t classic_opts(const char *group, kc_assignor_t a, const char *instance)
{
    kc_gh_opts_t o = {.proto = &kc_classic_proto,
                      .group = group,
                      .instance = instance,
                      .assignors = kc_assignor_name(a),
                      .session_timeout_ms = 10000,
                      .heartbeat_interval_ms = 500};
    return o;
}

static inline kc_gh_member_t *member_start(kc_gh_t *h, const char *group, kc_assignor_t a,
                                           const char *instance)
{
    kc_gh_opts_t o = classic_opts(group, a, instance);
    const char *topics[] = {topic_name};
    return kc_gh_join(h, &o, topics, 1);
}

static inline void run(const char *cmd)
{
    char line[1024];
    snprintf(line, sizeof line, "%s %s --dir %s >/dev/null 2>&1", kc_test_env("KC_TESTKIT"), cmd,
             kc_test_env("KC_CLUSTER_DIR"));
    if (system(line) != 0)
        fail_msg("failed: %s", line);
}

static inline void make_topic(const char *tag)
{
    n_parts_of_topic = NPART;
    snprintf(topic_name, sizeof topic_name, "kc-classic-%s-%ld", tag, (long)getpid());
    char cmd[256];
    snprintf(cmd, sizeof cmd, "topic create %s --partitions %d", topic_name, NPART);
    run(cmd);
}

/* The topics of the assignments describe() decodes: one table per test binary, never freed
 * (reachable to the end). */
static inline kc_gtopics_t *described_names(void)
{
    static kc_gtopics_t t;
    static bool ready;
    if (!ready) {
        kc_gtopics_init_by_name(&t, kc_jstr_cmp); /* the members' order */
        ready = true;
    }
    return &t;
}

/* What the broker relays for a member is what it holds: the same (topic, partition)s. */
static inline bool holds_exactly(const kc_gh_view_t *v, const kc_tpset_t *s)
{
    if ((size_t)v->held != s->n)
        return false;
    for (int i = 0; i < v->held; i++) {
        const kc_gtopic_t *t = kc_gtopics_find_name(described_names(), v->parts[i].topic);
        if (!kc_tpset_contains(s, t, v->parts[i].partition))
            return false;
    }
    return true;
}

/* DescribeGroups: each member's assignment (decoded), once the group is Stable with `want`
 * members; false if it does not get there in time. */
static inline bool describe(const char *group, size_t want, kc_tpset_t *out, char ids[][128],
                            int64_t within_ms)
{
    int fd = kc_gd_coordinator(kc_test_env("KC_BOOTSTRAP"), group);
    int64_t end = now_ms() + within_ms;
    bool ok = false;
    while (!ok && now_ms() < end) {
        kc_describe_groups_request_t q;
        kc_describe_groups_request_init(&q);
        kc_str_t g = kc_str(group);
        q.groups.count = 1;
        q.groups.items = &g;
        uint8_t *frame;
        kc_rbuf_t r;
        kc_tb_exchange(fd, KC_DESCRIBE_GROUPS_REQUEST_API_KEY, 5, &q,
                       (kc_tb_encode_fn)kc_describe_groups_request_encode, &frame, &r);
        kc_describe_groups_response_t d;
        kc_arena_t a = {0};
        kc_error_t e;
        assert_int_equal(kc_describe_groups_response_decode(&d, 5, &r, &a, &e), KC_OK);
        const kc_describe_groups_response_described_group_t *dg = &d.groups.items[0];
        if (dg->error_code == 0 && dg->group_state.len == 6 &&
            memcmp(dg->group_state.ptr, "Stable", 6) == 0 && (size_t)dg->members.count == want) {
            ok = true;
            for (size_t i = 0; i < want; i++) {
                assert_int_equal(
                    kc_classic_decode_assignment(
                        described_names(), dg->members.items[i].member_assignment, &out[i], &e),
                    KC_OK);
                snprintf(ids[i], 128, "%.*s", (int)dg->members.items[i].member_id.len,
                         dg->members.items[i].member_id.ptr);
            }
        }
        kc_arena_free(&a);
        free(frame);
        if (!ok)
            usleep(200 * 1000);
    }
    close(fd);
    return ok;
}

/* Exactly-once coverage of the topic by the member assignments. */
static inline void assert_exact_cover(kc_tpset_t *as, size_t n)
{
    const kc_gtopic_t *t = kc_gtopics_find_name(described_names(), topic_name);
    for (int32_t p = 0; p < n_parts_of_topic; p++) {
        int owners = 0;
        for (size_t i = 0; i < n; i++)
            owners += kc_tpset_contains(&as[i], t, p);
        if (owners != 1)
            fail_msg("partition %d has %d owners", p, owners);
    }
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += as[i].n;
    assert_int_equal(total, n_parts_of_topic);
}

#endif
