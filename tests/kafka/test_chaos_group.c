/* Group chaos (tests/support/chaos.h states the four checks), records produced while it happens:
 *  - coordinator_errors_848 / _classic: NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS injected
 *    (by kc-fault-proxy) into successful ConsumerGroupHeartbeat / Heartbeat and OffsetCommit
 *    responses: the member finds the coordinator again and retries; no error event, no partition
 *    lost, the group goes on;
 *  - blackhole: member A (through the proxy) is cut off: its session expires, its partitions move
 *    to B (direct), nothing is lost; when the proxy lets A through again it learns it was fenced
 *    (on_lost) and rejoins with a new epoch, and takes partitions again;
 *  - slow_callbacks: callbacks that sleep 7 s (longer than the broker's 6 s KIP-848 session):
 *    heartbeats run on the network thread, so no member is fenced and no rebalance follows.
 * The broker's KIP-848 session is 6 s (tests/testkit/cluster); classic members use 6 s too.
 * Short (label kafka) and long (label chaos, KC_CHAOS_SCALE=long) differ in records and rounds.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "chaos.h"
#include "fault_proxy_client.h"
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SESSION_MS 6000

static kc_fp_t *g_fp;

static int setup(void **state)
{
    (void)state;
    g_fp = kc_fp_start(kc_test_env("KC_BOOTSTRAP"));
    return g_fp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return g_fp ? kc_fp_stop(g_fp) : 0;
}

static bool is_long(void)
{
    return kc_chaos_scale() != KC_CHAOS_SHORT;
}

static void fp(const char *cmd)
{
    char reply[256];
    if (kc_fp_cmd(g_fp, reply, sizeof reply, "%s", cmd) != 0)
        fail_msg("proxy refused '%s': %s", cmd, reply);
}

static void group_name(char *b, size_t cap, const char *what)
{
    snprintf(b, cap, "kc-chaos-%s-%d", what, (int)getpid());
}

/* Waits until every member owns something and together they own `parts`. */
static bool settled(kc_chaos_member_t **m, int n, int parts, int timeout_ms)
{
    int64_t end = kc_chaos_now_ms() + timeout_ms;
    while (kc_chaos_now_ms() < end) {
        int sum = 0, all = 1;
        for (int i = 0; i < n; i++) {
            sum += kc_chaos_member_owned(m[i]);
            all &= kc_chaos_member_owned(m[i]) > 0;
        }
        if (all && sum == parts)
            return true;
        usleep(100 * 1000);
    }
    for (int i = 0; i < n; i++)
        printf("# not settled: member %d owns %d (on_lost %d, rebalances %ld)\n", i,
               kc_chaos_member_owned(m[i]), kc_chaos_member_lost(m[i]),
               kc_chaos_member_rebalances(m[i]));
    for (int i = 0; i < n; i++)
        kc_chaos_member_print_group(m[i]);
    return false;
}

static void coordinator_errors(const char *fault, const char *conf, const char *hb_api)
{
    long n = is_long() ? 100000 : 12000;
    kc_chaos_t *ch = kc_chaos_new(fault, 4, 1, n);
    char group[128];
    group_name(group, sizeof group, fault);
    long fired0 = kc_fp_stat(g_fp, "fired.inject");
    kc_chaos_member_t *m[2] = {kc_chaos_member_new(ch, kc_fp_bootstrap(g_fp), group, conf),
                               kc_chaos_member_new(ch, kc_fp_bootstrap(g_fp), group, conf)};
    assert_true(settled(m, 2, 4, 30000));
    pid_t prod = kc_chaos_produce_bg(ch, n, 4000);
    char rules[4][160];
    snprintf(rules[0], sizeof rules[0], "inject api=%s error=NOT_COORDINATOR count=2", hb_api);
    snprintf(rules[1], sizeof rules[1], "inject api=%s error=COORDINATOR_LOAD_IN_PROGRESS count=2",
             hb_api);
    snprintf(rules[2], sizeof rules[2],
             "inject api=OffsetCommit error=NOT_COORDINATOR scope=partition count=2");
    snprintf(rules[3], sizeof rules[3],
             "inject api=OffsetCommit error=COORDINATOR_LOAD_IN_PROGRESS scope=partition count=2");
    int armed = 0, st = 0;
    while (waitpid(prod, &st, WNOHANG) == 0) {
        usleep(700 * 1000);
        fp(rules[armed++ % 4]);
    }
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    bool done = kc_chaos_wait_complete(ch, 60000);
    long fired = kc_fp_stat(g_fp, "fired.inject") - fired0;
    usleep(1500 * 1000); /* a last commit round through the proxy */
    fp("clear");
    int lost = kc_chaos_member_lost(m[0]) + kc_chaos_member_lost(m[1]);
    printf("# %s: armed %d, fired %ld, complete %d, on_lost %d, rebalances %ld/%ld\n", fault, armed,
           fired, done, lost, kc_chaos_member_rebalances(m[0]), kc_chaos_member_rebalances(m[1]));
    kc_chaos_member_close(m[0]);
    kc_chaos_member_close(m[1]);
    assert_true(fired >= armed); /* each rule fired (count=2: up to two responses each) */
    assert_int_equal(lost, 0);   /* a coordinator move is no reason to drop partitions */
    kc_chaos_finish(ch, n, SESSION_MS);
}

static void coordinator_errors_848(void **state)
{
    (void)state;
    coordinator_errors("coordinator_errors_848", "group.protocol=consumer",
                       "ConsumerGroupHeartbeat");
}

static void coordinator_errors_classic(void **state)
{
    (void)state;
    coordinator_errors("coordinator_errors_classic",
                       "group.protocol=classic;session.timeout.ms=6000;heartbeat.interval.ms=500",
                       "Heartbeat");
}

static void blackhole(const char *fault, const char *conf)
{
    long n = is_long() ? 100000 : 16000;
    kc_chaos_t *ch = kc_chaos_new(fault, 4, 1, n);
    /* The cut-off member is told when it could not reach its coordinator for longer than the
     * coordinator deadline (engine/group/848/heartbeat.c), and when an auto-commit of its old
     * partitions fails: the errors this fault may raise, all from member A. */
    kc_chaos_allow_error(ch, KC_ERR_TIMEOUT);
    kc_chaos_allow_error(ch, KC_ERR_BROKER);
    /* ... and it fences itself before its session can expire, so its partitions are never
     * inside callbacks on both members at once (kconsume.h, the redelivery window). */
    kc_chaos_require_exclusive(ch);
    kc_chaos_allow_self_fence(ch);
    char group[128];
    group_name(group, sizeof group, fault);
    kc_chaos_member_t *m[2] = {kc_chaos_member_new(ch, kc_fp_bootstrap(g_fp), group, conf),
                               kc_chaos_member_new(ch, kc_test_env("KC_BOOTSTRAP"), group, conf)};
    assert_true(settled(m, 2, 4, 30000));
    pid_t prod = kc_chaos_produce_bg(ch, n, 2000);
    int rounds = is_long() ? 4 : 1;
    for (int r = 0; r < rounds; r++) {
        sleep(1);
        int lost0 = kc_chaos_member_lost(m[0]);
        fp("blackhole on");
        int64_t t0 = kc_chaos_now_ms();
        /* B takes everything once A's session (6 s) expired. */
        while (kc_chaos_member_owned(m[1]) < 4 && kc_chaos_now_ms() - t0 < 30000)
            usleep(100 * 1000);
        int64_t moved = kc_chaos_now_ms() - t0;
        assert_int_equal(kc_chaos_member_owned(m[1]), 4);
        sleep(2);
        fp("blackhole off");
        /* A learns it was fenced (on_lost, if its own session clock had not already said so)
         * and rejoins: both own partitions again. */
        assert_true(settled(m, 2, 4, 60000));
        int64_t back = kc_chaos_now_ms() - t0;
        printf("# round %d: partitions moved to B after %lld ms, A back after %lld ms, A on_lost "
               "%d\n",
               r, (long long)moved, (long long)back, kc_chaos_member_lost(m[0]) - lost0);
        assert_true(kc_chaos_member_lost(m[0]) > lost0);
    }
    int st = 0;
    assert_int_equal(waitpid(prod, &st, 0), prod);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    bool done = kc_chaos_wait_complete(ch, 60000);
    printf("# complete %d\n", done);
    kc_chaos_member_close(m[0]);
    kc_chaos_member_close(m[1]);
    /* A's partitions wait out the session (6 s) and B's reconciliation (a heartbeat or two). */
    kc_chaos_finish(ch, n, SESSION_MS + 3000);
}

/* request.timeout.ms 10 s: the cut-off member's unanswered heartbeat fails after it, which is
 * when it learns (on reconnecting) that it was fenced. */
static void blackhole_848(void **state)
{
    (void)state;
    blackhole("blackhole_member_848", "group.protocol=consumer;request.timeout.ms=10000");
}

static void blackhole_classic(void **state)
{
    (void)state;
    if (!is_long()) {
        printf("# blackhole_classic runs in the long version only (make test-long)\n");
        skip();
    }
    /* A JoinGroup waits at the coordinator for the rebalance, so its request timeout is the
     * rebalance timeout + 5 s (as in Java): one sent into the black hole holds the member that
     * long after the proxy lets it through again. rebalance.timeout.ms=10000 keeps that short. */
    blackhole("blackhole_member_classic", "group.protocol=classic;session.timeout.ms=6000;"
                                          "heartbeat.interval.ms=500;request.timeout.ms=10000;"
                                          "rebalance.timeout.ms=10000");
}

static void slow_callbacks(void **state)
{
    (void)state;
    long n = is_long() ? 40000 : 8000;
    kc_chaos_t *ch = kc_chaos_new("slow_callbacks", 4, 1, n);
    char group[128];
    group_name(group, sizeof group, "slow");
    const char *conf = "group.protocol=consumer";
    kc_chaos_member_t *m[2] = {kc_chaos_member_new(ch, kc_test_env("KC_BOOTSTRAP"), group, conf),
                               kc_chaos_member_new(ch, kc_test_env("KC_BOOTSTRAP"), group, conf)};
    assert_true(settled(m, 2, 4, 30000));
    sleep(1); /* a stats event after the settled assignment */
    long r0[2] = {kc_chaos_member_rebalances(m[0]), kc_chaos_member_rebalances(m[1])};
    int slow = is_long() ? 6 : 2; /* slow callbacks per member (two workers each) */
    kc_chaos_member_set_slow(m[0], 7000, slow);
    kc_chaos_member_set_slow(m[1], 7000, slow);
    kc_chaos_produce(ch, n);
    bool done = kc_chaos_wait_complete(ch, 120000);
    sleep(1);
    long r1[2] = {kc_chaos_member_rebalances(m[0]), kc_chaos_member_rebalances(m[1])};
    int lost = kc_chaos_member_lost(m[0]) + kc_chaos_member_lost(m[1]);
    printf("# complete %d, rebalances during the slow phase %ld + %ld, on_lost %d\n", done,
           r1[0] - r0[0], r1[1] - r0[1], lost);
    kc_chaos_member_close(m[0]);
    kc_chaos_member_close(m[1]);
    assert_true(r0[0] >= 0 && r0[1] >= 0);
    assert_int_equal(r1[0] - r0[0], 0);
    assert_int_equal(r1[1] - r0[1], 0);
    assert_int_equal(lost, 0);
    /* A partition waits behind its own slow callback (7 s) by design: that is not a stall of
     * the consumer, so the bound here is the callback time plus the session timeout. */
    kc_chaos_finish(ch, n, 7000 + SESSION_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(coordinator_errors_848), cmocka_unit_test(coordinator_errors_classic),
        cmocka_unit_test(blackhole_848),          cmocka_unit_test(blackhole_classic),
        cmocka_unit_test(slow_callbacks),
    };
    kc_chaos_filter();
    return cmocka_run_group_tests(tests, setup, teardown);
}
