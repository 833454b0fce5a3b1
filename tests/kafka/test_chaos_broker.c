/* Chaos: brokers SIGKILLed and restarted under load (tests/support/chaos.h states the checks).
 * A KIP-848 group of two members consumes a 6-partition, 3-replica topic while the producer
 * runs; the group's coordinator is killed first (it leads some partitions too), then, in the
 * long version, every node in turn, repeatedly. Each kill is followed by a restart
 * (testkit start-broker returns once the node is ready).
 * Stall bound: a dead leader's partitions wait for the controller to notice (the broker session,
 * 9 s by default in KRaft) and for the new leader's metadata; the consumer's share of that must
 * stay under the group's session timeout on top, so the bound is 9 s + 6 s.
 * restart_default: a controlled restart of the coordinator, default group settings (below).
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "chaos.h"
#include "kc_test.h"
#include "raw_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/proto.h"

/* The node (1-based position in KC_BOOTSTRAP) coordinating `group`, or 0 when not known yet. */
static int coordinator_node(const char *group)
{
    const char *bs = kc_test_env("KC_BOOTSTRAP");
    kc_rc_t c;
    kc_rc_open(&c, bs);
    int16_t v = c.v.version[10];
    kc_find_coordinator_request_t q;
    kc_find_coordinator_request_init(&q);
    kc_str_t key = kc_str(group);
    q.key = key;
    q.coordinator_keys.count = 1;
    q.coordinator_keys.items = &key;
    kc_rc_send(&c, 10, v, &q);
    kc_find_coordinator_response_t r;
    int port = -1;
    if (kc_rc_recv(&c, 10, v, &r) == KC_OK) {
        if (v >= 4 && r.coordinators.count == 1 && r.coordinators.items[0].error_code == 0)
            port = r.coordinators.items[0].port;
        else if (v < 4 && r.error_code == 0)
            port = r.port;
    }
    kc_rc_close(&c);
    int node = 0, i = 1;
    for (const char *p = bs; p && *p; i++) {
        const char *colon = strchr(p, ':');
        if (colon && atoi(colon + 1) == port)
            node = i;
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    return node;
}

static void kill_restart(void **state)
{
    (void)state;
    bool lng = kc_chaos_scale() != KC_CHAOS_SHORT;
    long n = lng ? 240000 : 30000;
    int rate = 3000;
    kc_chaos_t *ch = kc_chaos_new("broker_kill", 6, 3, n);
    /* A member the coordinator fenced anyway gets on_lost, and the auto-commit of what it held
     * is refused and reported (kconsume.h, redelivery window). The figures line and the on_lost
     * counts below show how often; other errors stay violations. */
    kc_chaos_allow_error(ch, KC_ERR_BROKER);
    char group[128];
    snprintf(group, sizeof group, "kc-chaos-kill-%d", (int)getpid());
    /* The group's session outlasts a failover: the controller notices a dead broker after its
     * 9 s session, and until then a dead coordinator is not replaced and a dead follower of the
     * group's __consumer_offsets partition holds heartbeat answers (measured: 7-11 s). With
     * the cluster's 6 s a member would rightly self-fence (and could be expired) in every
     * failover; 20 s is what a cluster that loses brokers needs, and then no member may
     * self-fence here (kc_chaos_finish fails on one). The members read it with
     * DescribeConfigs. */
    kc_chaos_cluster("tool ConfigCommand --bootstrap-server %s --alter --entity-type "
                     "groups --entity-name %s --add-config consumer.session.timeout.ms=20000",
                     kc_test_env("KC_BOOTSTRAP"), group);
    const char *conf = "group.protocol=consumer";
    kc_chaos_member_t *m[2] = {kc_chaos_member_new(ch, kc_test_env("KC_BOOTSTRAP"), group, conf),
                               kc_chaos_member_new(ch, kc_test_env("KC_BOOTSTRAP"), group, conf)};
    int64_t end = kc_chaos_now_ms() + 30000;
    while (kc_chaos_now_ms() < end &&
           !(kc_chaos_member_owned(m[0]) > 0 && kc_chaos_member_owned(m[1]) > 0))
        usleep(100 * 1000);
    int coord = coordinator_node(group);
    assert_true(coord >= 1 && coord <= 3);
    pid_t prod = kc_chaos_produce_bg(ch, n, rate);
    int kills = 0, st = 0;
    /* The coordinator first; then (long) every node in turn while the producer runs. */
    for (int node = coord; waitpid(prod, &st, WNOHANG) == 0; node = node % 3 + 1) {
        sleep(2);
        int64_t t0 = kc_chaos_now_ms();
        kc_chaos_cluster("kill-broker %d", node);
        sleep(2);
        kc_chaos_cluster("start-broker %d", node);
        kills++;
        printf("# killed node %d%s, back after %lld ms, delivered so far %ld\n", node,
               node == coord ? " (coordinator)" : "", (long long)(kc_chaos_now_ms() - t0),
               kc_chaos_delivered(ch));
        if (!lng)
            break;
    }
    if (waitpid(prod, &st, 0) == prod)
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    bool done = kc_chaos_wait_complete(ch, 120000);
    printf("# kills %d, complete %d, rebalances %ld/%ld, on_lost %d/%d\n", kills, done,
           kc_chaos_member_rebalances(m[0]), kc_chaos_member_rebalances(m[1]),
           kc_chaos_member_lost(m[0]), kc_chaos_member_lost(m[1]));
    kc_chaos_member_close(m[0]);
    kc_chaos_member_close(m[1]);
    assert_true(kills >= 1);
    kc_chaos_finish(ch, n, 9000 + 6000);
}

/* A controlled restart (stop-broker: SIGTERM, the broker hands its leaderships over before it
 * exits) of the group's coordinator while the producer runs, with default group settings: the
 * group protocol is whichever group.protocol=auto picks on this broker (KIP-848 on 4.x, classic
 * before), so the same case runs on every supported Kafka version (the compatibility suite,
 * tests/compat/run-compat). Leadership moves at once, so the stall bound is the kill case's. */
static void restart_default(void **state)
{
    (void)state;
    long n = 30000;
    kc_chaos_t *ch = kc_chaos_new("broker_restart", 6, 3, n);
    kc_chaos_allow_error(ch, KC_ERR_BROKER);
    char group[128];
    snprintf(group, sizeof group, "kc-chaos-restart-%d", (int)getpid());
    kc_chaos_member_t *m[2] = {kc_chaos_member_new(ch, kc_test_env("KC_BOOTSTRAP"), group, ""),
                               kc_chaos_member_new(ch, kc_test_env("KC_BOOTSTRAP"), group, "")};
    int64_t end = kc_chaos_now_ms() + 30000;
    while (kc_chaos_now_ms() < end &&
           !(kc_chaos_member_owned(m[0]) > 0 && kc_chaos_member_owned(m[1]) > 0))
        usleep(100 * 1000);
    int coord = coordinator_node(group);
    assert_true(coord >= 1 && coord <= 3);
    pid_t prod = kc_chaos_produce_bg(ch, n, 3000);
    sleep(2);
    int64_t t0 = kc_chaos_now_ms();
    kc_chaos_cluster("stop-broker %d", coord);
    sleep(2);
    kc_chaos_cluster("start-broker %d", coord);
    printf("# restarted node %d (coordinator), back after %lld ms, delivered so far %ld\n", coord,
           (long long)(kc_chaos_now_ms() - t0), kc_chaos_delivered(ch));
    int st = 0;
    if (waitpid(prod, &st, 0) == prod)
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    bool done = kc_chaos_wait_complete(ch, 120000);
    printf("# complete %d, rebalances %ld/%ld, on_lost %d/%d\n", done,
           kc_chaos_member_rebalances(m[0]), kc_chaos_member_rebalances(m[1]),
           kc_chaos_member_lost(m[0]), kc_chaos_member_lost(m[1]));
    kc_chaos_member_close(m[0]);
    kc_chaos_member_close(m[1]);
    kc_chaos_finish(ch, n, 9000 + 6000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(kill_restart),
                                       cmocka_unit_test(restart_default)};
    kc_chaos_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
