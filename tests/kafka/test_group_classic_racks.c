/* KIP-881 rack-aware assignment in a classic group, against real brokers with racks.
 *
 * The suite's cluster has no broker.rack, so this test boots its own: 2 brokers (racks "ra" and
 * "rb", tests/testkit/cluster --node-config), port base KC_RACK_PORT_BASE or the suite's first
 * port + 500, and ends it in the teardown. A 4-partition topic with one replica each is placed
 * alternately on the two brokers (--replica-assignment 1,2,1,2). Two kconsume members (processes,
 * tests/support/g848_member) with client.rack ra and rb join one classic group under range.
 * Asserted: each member owns exactly the partitions whose replica is in its own rack, which plain
 * range ({0,1}/{2,3}) would not give for this placement — so the leader's racks came from live
 * Metadata. Needs KC_BOOTSTRAP (for the port base), KC_TESTKIT. */
#include "kc_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "g848_member.h"

#define NP 4

static char dir[200], cdir[256], topic[64], group[64];
static pid_t members[2] = {-1, -1};
static bool cluster_up;

static int sh(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++)
        if (members[i] > 0) {
            kc_gm_stop(members[i]);
            members[i] = -1;
        }
    if (cluster_up) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "%s down --dir %s > /dev/null 2>&1", kc_test_env("KC_TESTKIT"),
                 cdir);
        sh(cmd);
        cluster_up = false;
    }
    return 0;
}

/* Broker (node id) of each partition's only replica once it leads it (-1 before), from
 * TopicCommand --describe. */
static void placement(int *node)
{
    char out[400], cmd[1200], line[512];
    snprintf(out, sizeof out, "%s/describe.txt", dir);
    snprintf(cmd, sizeof cmd,
             "%s tool TopicCommand --bootstrap-server %s --describe "
             "--topic %s --dir %s > %s 2>&1",
             kc_test_env("KC_TESTKIT"), getenv("KC_BOOTSTRAP"), topic, cdir, out);
    assert_int_equal(sh(cmd), 0);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    for (int p = 0; p < NP; p++)
        node[p] = -1;
    while (fgets(line, sizeof line, f)) {
        const char *a = strstr(line, "Partition: "), *r = strstr(line, "Replicas: "),
                   *l = strstr(line, "Leader: ");
        if (!a || !r || !l)
            continue;
        int p = atoi(a + 11), n = atoi(r + 10);
        if (p >= 0 && p < NP && atoi(l + 8) == n) /* led by its replica: ready */
            node[p] = n;
    }
    fclose(f);
}

/* Partitions member m owns now (from its callbacks), as a bit set. */
static int owned(int m)
{
    char p[400];
    snprintf(p, sizeof p, "%s/member-%d.log", dir, m);
    kc_gm_log_t lg = {0};
    kc_gm_load(&lg, p, m);
    int set = 0;
    for (size_t i = 0; i < lg.n; i++) {
        const kc_gm_ev_t *e = &lg.ev[i];
        if (strcmp(e->topic, topic) != 0 || e->partition < 0 || e->partition >= NP)
            continue;
        if (e->kind == 'A')
            set |= 1 << e->partition;
        else if (e->kind == 'V' || e->kind == 'L')
            set &= ~(1 << e->partition);
    }
    kc_gm_free(&lg);
    return set;
}

static void rack_aware_range(void **state)
{
    (void)state;
    int pid = (int)getpid();
    /* Its own cluster's data and logs: removed at exit, after the teardown's `down`. */
    snprintf(dir, sizeof dir, "%s", kc_test_tmpdir("gcl-racks"));
    snprintf(cdir, sizeof cdir, "%s/cluster", dir);
    snprintf(topic, sizeof topic, "kc-gcl-racks-%d", pid);
    snprintf(group, sizeof group, "kc-gcl-racks-%d", pid);
    int base = getenv("KC_RACK_PORT_BASE") ? atoi(getenv("KC_RACK_PORT_BASE")) : 0;
    if (!base) {
        const char *b = kc_test_env("KC_BOOTSTRAP");
        const char *colon = strchr(b, ':');
        assert_non_null(colon);
        base = atoi(colon + 1) + 500;
    }
    char cmd[1200];
    int64_t t0 = kc_gm_now_ns();
    snprintf(cmd, sizeof cmd,
             "%s up --dir %s --brokers 2 --port-base %d --node-config 1:broker.rack=ra "
             "--node-config 2:broker.rack=rb > %s/up.log 2>&1",
             kc_test_env("KC_TESTKIT"), cdir, base, dir);
    cluster_up = true; /* even a half-started cluster is ended by the teardown */
    assert_int_equal(sh(cmd), 0);
    int64_t t_up = kc_gm_now_ns();
    char bootstrap[128];
    snprintf(bootstrap, sizeof bootstrap, "127.0.0.1:%d,127.0.0.1:%d", base, base + 10);
    setenv("KC_BOOTSTRAP", bootstrap, 1); /* read by kc_gm_spawn, TopicCommand */
    setenv("KC_CLUSTER_DIR", cdir, 1);    /* read by kc_gm_testkit */
    /* The placement is given (the controller's own is not even: seen 1,2,2,2): partition p's
     * only replica on node 1 + p % 2. */
    snprintf(cmd, sizeof cmd,
             "%s tool TopicCommand --bootstrap-server %s --create "
             "--topic %s --replica-assignment 1,2,1,2 --dir %s > %s/create.log 2>&1",
             kc_test_env("KC_TESTKIT"), bootstrap, topic, cdir, dir);
    assert_int_equal(sh(cmd), 0);
    int node[NP];
    for (int i = 0; i < 100; i++) { /* until every partition has its replica (and leader) */
        placement(node);
        bool all = true;
        for (int p = 0; p < NP; p++)
            all = all && node[p] > 0;
        if (all)
            break;
        usleep(100 * 1000);
    }
    int want[2] = {0, 0}; /* member 0 is in rack ra (node 1), member 1 in rb (node 2) */
    for (int p = 0; p < NP; p++) {
        assert_true(node[p] == 1 || node[p] == 2);
        want[node[p] - 1] |= 1 << p;
    }
    const char *racks[2] = {"ra", "rb"};
    for (int m = 0; m < 2; m++) {
        char conf[200], log[400];
        snprintf(conf, sizeof conf,
                 "group.protocol=classic;partition.assignment.strategy=range;client.rack=%s",
                 racks[m]);
        snprintf(log, sizeof log, "%s/member-%d.log", dir, m);
        setenv("KC_GM_CONF", conf, 1);
        members[m] = kc_gm_spawn(group, topic, log, NULL);
    }
    unsetenv("KC_GM_CONF");
    int got[2] = {0, 0};
    for (int i = 0; i < 300; i++) { /* settled: both own something and together all */
        usleep(100 * 1000);
        got[0] = owned(0);
        got[1] = owned(1);
        if (got[0] && got[1] && (got[0] | got[1]) == (1 << NP) - 1 && !(got[0] & got[1]))
            break;
    }
    print_message("# racks: cluster up in %.1f s; placement p0..p3 on nodes %d %d %d %d; "
                  "member ra owns 0x%x (rack-local 0x%x), member rb owns 0x%x (rack-local 0x%x); "
                  "plain range would give 0x3 / 0xc\n",
                  (t_up - t0) / 1e9, node[0], node[1], node[2], node[3], got[0], want[0], got[1],
                  want[1]);
    assert_int_equal(__builtin_popcount(want[0]), 2); /* one replica each, spread evenly */
    assert_int_equal(got[0], want[0]);
    assert_int_equal(got[1], want[1]);
    /* The placement alternates, so plain range would differ: the racks made the difference. */
    assert_int_equal(want[0], 0x5);
}

int main(int argc, char **argv)
{
    kc_gm_maybe_member(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(rack_aware_range, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
