/* kc-test-label: threads */
/* engine/coordinator.c's member calls (kc_engine_commit_member / kc_engine_committed_member)
 * against real brokers. A KIP-848 member joins on the library's group driver
 * (tests/support/group_harness.h, its own network thread); the engine under test runs on
 * another. The identity source is the test's:
 *  - it gives a STALE epoch (the current one - 1) to the first two reads (the check at the call
 *    and the first request), then the current one: the broker answers STALE_MEMBER_EPOCH, the
 *    call asks again with the identity read afresh, and succeeds — so the identity is read when
 *    each request is built, not when the call starts; OffsetFetch as the member (v9 member id +
 *    epoch) returns the offsets, and goes through the same stale-then-fresh retry;
 *  - the fixed-identity call (kc_engine_commit) with the stale epoch is refused with
 *    STALE_MEMBER_EPOCH (its owner decides), and the message names the refused partitions;
 *  - a source saying "not a member" fails the call at once with its reason.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coordinator.h"
#include "engine.h"
#include "offsets_wait.h"
#include "group_driver.h"
#include "group_harness.h"
#include "netthread.h"
#include "proto/kafka_errors.h"

static kc_netthread_t *nt;
static kc_engine_t *eng;
static char group[64];

typedef kc_test_offsets_result_t result_t;

/* The identity source. Owner: the network thread while a call runs; the test thread reads it
 * after the call's result (kc_test_offsets_wait orders them). */
typedef struct who_src {
    char member_id[128];
    int32_t epoch;
    int stale_reads; /* this many first reads give epoch - 1 */
    int reads;
    int32_t seen[8];
    int not_member;
} who_src_t;

static who_src_t src;

static kc_err_t who(void *ctx, kc_commit_identity_t *w, kc_error_t *err)
{
    who_src_t *s = ctx;
    if (s->not_member)
        return kc_fail(err, KC_ERR_STATE, "test: not a member right now");
    int32_t e = s->reads < s->stale_reads ? s->epoch - 1 : s->epoch;
    if (s->reads < 8)
        s->seen[s->reads] = e;
    s->reads++;
    return kc_offsets_identity_member(w, group, s->member_id, e, NULL, err);
}

enum { OP_NEW, OP_COMMIT_MEMBER, OP_FETCH_MEMBER, OP_COMMIT_FIXED, OP_FREE };

typedef struct call {
    int op;
    result_t *r;
    kc_err_t rc;
    kc_error_t err;
} call_t;

static void on_net(kc_loop_t *loop, void *arg)
{
    call_t *c = arg;
    kc_engine_offset_t offs[2] = {{kc_gd_topic, 0, 11, -1, NULL, 0},
                                  {kc_gd_topic, 1, 22, -1, NULL, 0}};
    switch (c->op) {
    case OP_NEW: {
        kc_engine_conf_t conf;
        kc_engine_conf_defaults(&conf);
        conf.bootstrap_servers = kc_test_env("KC_BOOTSTRAP");
        kc_engine_sink_t sink = {kc_test_discard_records, NULL, NULL, NULL};
        c->rc = kc_engine_new(&eng, loop, &conf, &sink, &c->err);
        break;
    }
    case OP_COMMIT_MEMBER:
        c->rc = kc_engine_commit_member(eng, group, who, &src, offs, 2, 20000,
                                        kc_test_offsets_on_result, c->r, &c->err);
        break;
    case OP_FETCH_MEMBER:
        c->rc = kc_engine_committed_member(eng, group, who, &src, offs, 2, 20000,
                                           kc_test_offsets_on_result, c->r, &c->err);
        break;
    case OP_COMMIT_FIXED: {
        kc_commit_identity_t w;
        c->rc = kc_offsets_identity_member(&w, group, src.member_id, src.epoch - 1, NULL, &c->err);
        if (c->rc == KC_OK)
            c->rc =
                kc_engine_commit(eng, &w, offs, 2, 20000, kc_test_offsets_on_result, c->r, &c->err);
        break;
    }
    case OP_FREE:
        kc_engine_close(eng, 1000);
        kc_engine_free(eng);
        break;
    }
}

/* Runs op on the network thread; waits for its result when the call was accepted. */
static kc_err_t run_wait(int op, result_t *r, kc_error_t *err)
{
    kc_test_offsets_reset(r);
    call_t c = {op, r, KC_OK, {0}};
    kc_netthread_call(nt, on_net, &c);
    if (c.rc != KC_OK) {
        *err = c.err;
        return c.rc;
    }
    if (op == OP_NEW) /* no callback: done */
        return KC_OK;
    kc_test_offsets_wait(r);
    return KC_OK;
}

static bool owns_all(const kc_gh_view_t *v, void *arg)
{
    (void)arg;
    return v->stable && v->held == 3;
}

static void member_identity_read_per_request(void **state)
{
    (void)state;
    snprintf(group, sizeof group, "kc-commit-member-%d", (int)getpid());
    const char *topics[] = {kc_gd_topic};
    kc_gh_t *h = kc_gh_start();
    kc_gh_opts_t o = {.proto = &kc_g848_proto, .group = group};
    kc_gh_member_t *a = kc_gh_join(h, &o, topics, 1);
    assert_true(kc_gh_run_until(a, owns_all, NULL, 30000));
    kc_gh_view_t va = kc_gh_view(a);
    assert_true(va.epoch >= 1);
    snprintf(src.member_id, sizeof src.member_id, "%s", va.member_id);
    src.epoch = va.epoch;

    kc_error_t err;
    assert_int_equal(kc_netthread_start(&nt, KC_LOOP_AUTO, NULL, &err), KC_OK);
    result_t r;
    if (run_wait(OP_NEW, &r, &err) != KC_OK) /* no callback: returns at once */
        fail_msg("engine: %s", err.msg);

    /* Stale for the check and the first request, then fresh: asked again, accepted. */
    src.stale_reads = 2;
    src.reads = 0;
    if (run_wait(OP_COMMIT_MEMBER, &r, &err) != KC_OK)
        fail_msg("commit_member: %s", err.msg);
    printf("# member commit: %s after %d identity reads (epochs %d %d %d), member epoch %d\n",
           kc_err_name(r.rc), src.reads, src.seen[0], src.seen[1], src.seen[2], src.epoch);
    if (r.rc != KC_OK)
        fail_msg("member commit: %s", r.err.msg);
    assert_true(src.reads >= 3);
    assert_int_equal(src.seen[1], src.epoch - 1);
    assert_int_equal(src.seen[src.reads - 1], src.epoch);

    /* OffsetFetch as the member, same stale-then-fresh schedule. */
    src.reads = 0;
    if (run_wait(OP_FETCH_MEMBER, &r, &err) != KC_OK)
        fail_msg("committed_member: %s", err.msg);
    if (r.rc != KC_OK)
        fail_msg("member fetch: %s", r.err.msg);
    assert_true(src.reads >= 3);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r.res[i].error, 0);
        assert_int_equal(r.res[i].offset, r.res[i].partition == 0 ? 11 : 22);
    }

    /* A fixed stale identity: refused, not retried; the message names the partitions. */
    if (run_wait(OP_COMMIT_FIXED, &r, &err) != KC_OK)
        fail_msg("commit: %s", err.msg);
    printf("# fixed stale identity: %s (%s)\n", kc_err_name(r.rc), r.err.msg);
    assert_int_equal(r.rc, KC_ERR_BROKER);
    assert_int_equal(r.err.kafka_code, KC_KAFKA_STALE_MEMBER_EPOCH);
    assert_non_null(strstr(r.err.msg, "STALE_MEMBER_EPOCH"));
    assert_non_null(strstr(r.err.msg, "[1]"));

    /* No identity now: refused at the call, with the source's reason. */
    src.not_member = 1;
    assert_int_equal(run_wait(OP_COMMIT_MEMBER, &r, &err), KC_ERR_STATE);
    assert_non_null(strstr(err.msg, "not a member"));
    src.not_member = 0;

    call_t c = {OP_FREE, NULL, KC_OK, {0}};
    kc_netthread_call(nt, on_net, &c);
    kc_netthread_stop(nt);
    assert_true(kc_gh_close(a, 10000));
    kc_gh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(member_identity_read_per_request)};
    return cmocka_run_group_tests(tests, kc_gd_create_topic, NULL);
}
