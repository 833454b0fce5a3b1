/* KIP-848 acceptance, members as separate processes (tests/support/g848_member):
 *  static_member      a static member closed (leave -2) and restarted within the session keeps
 *                     its partitions, nothing moves to the other member; an instance frozen
 *                     past its session and replaced is fenced when it comes back (fatal error,
 *                     on_lost, no commit);
 *  regex_new_topic    a '^' regex subscription picks up a topic created after the join;
 *  max_poll_leave     a callback overrunning max.poll.interval.ms: the member reports it, leaves
 *                     (its partitions go to the other member, on_lost here once the callback
 *                     returned) and rejoins when the callback returns;
 *  coordinator_failover  the coordinator's broker is killed: members rediscover it, go on
 *                     consuming, and no error reaches them; the broker is restarted after.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "g848_member.h"

static char dir[256];

static void setup_dir(const char *name)
{
    char tag[96];
    snprintf(tag, sizeof tag, "g848-%s", name);
    snprintf(dir, sizeof dir, "%s", kc_test_tmpdir(tag)); /* members' logs; removed at exit */
}

static void lpath(char *out, size_t cap, int m)
{
    snprintf(out, cap, "%s/member-%d.log", dir, m);
}

/* The member's last stats line: 1 when STABLE; its assignment JSON and coordinator id out. */
static int last_stats(int m, char *assign, size_t cap, int *coord, int64_t *ts)
{
    char p[400];
    lpath(p, sizeof p, m);
    kc_gm_log_t lg = {0};
    kc_gm_load(&lg, p, m);
    int stable = 0;
    for (size_t i = lg.n; i-- > 0;) {
        if (lg.ev[i].kind != 'S')
            continue;
        const char *j = lg.ev[i].text;
        stable = strstr(j, "\"state\":\"STABLE\"") != NULL;
        const char *a = strstr(j, "\"assignment\":");
        const char *e = a ? strchr(a, ']') : NULL;
        while (e && e[1] == ',' && e[2] == '[') /* nested pairs: up to the outer ']' */
            e = strchr(e + 1, ']');
        if (a && e && assign)
            snprintf(assign, cap, "%.*s", (int)(e - a + 2), a);
        const char *c = strstr(j, "\"coordinator\":");
        if (c && coord)
            *coord = atoi(c + 14);
        if (ts)
            *ts = lg.ev[i].start;
        break;
    }
    kc_gm_free(&lg);
    return stable;
}

static long count_kind(int m, char kind, const char *topic, int64_t after, long *records)
{
    char p[400];
    lpath(p, sizeof p, m);
    kc_gm_log_t lg = {0};
    kc_gm_load(&lg, p, m);
    long n = 0;
    if (records)
        *records = 0;
    for (size_t i = 0; i < lg.n; i++) {
        const kc_gm_ev_t *e = &lg.ev[i];
        if (e->kind != kind || e->start < after || (topic && strcmp(e->topic, topic) != 0))
            continue;
        n++;
        if (records)
            *records += e->n;
    }
    kc_gm_free(&lg);
    return n;
}

/* The first error of member m whose text holds `a` or `b` into buf (else buf is ""); the
 * number of its errors into *n. */
static void error_matching(int m, const char *a, const char *b, char *buf, size_t cap, long *n)
{
    char p[400];
    lpath(p, sizeof p, m);
    kc_gm_log_t lg = {0};
    kc_gm_load(&lg, p, m);
    *n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < lg.n; i++)
        if (lg.ev[i].kind == 'E') {
            if (!buf[0] && (strstr(lg.ev[i].text, a) || strstr(lg.ev[i].text, b)))
                snprintf(buf, cap, "%ld %s", lg.ev[i].code, lg.ev[i].text);
            (*n)++;
        }
    kc_gm_free(&lg);
}

/* The first error of member m into buf, the number of its errors into *n. */
static void errors_of(int m, char *buf, size_t cap, long *n)
{
    error_matching(m, "", "", buf, cap, n); /* "" is in every text */
}

static void topic(const char *name, int parts)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "topic create %s --partitions %d --replication 3", name, parts);
    assert_int_equal(kc_gm_testkit(cmd), 0);
}

static void produce(const char *name, int n)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "produce %s --records %d --size 64", name, n);
    assert_int_equal(kc_gm_testkit(cmd), 0);
}

static bool wait_stable(int m, int secs)
{
    char a[2048];
    for (int i = 0; i < secs * 10; i++) {
        if (last_stats(m, a, sizeof a, NULL, NULL) && strstr(a, "[\""))
            return true;
        usleep(100 * 1000);
    }
    return false;
}

static void static_member(void **state)
{
    (void)state;
    setup_dir("static");
    char t[64], g[64], p0[400], p1[400], p2[400], p3[400], inst[64];
    snprintf(t, sizeof t, "kc-g848s-%d", (int)getpid());
    snprintf(g, sizeof g, "kc-g848s-%d", (int)getpid());
    snprintf(inst, sizeof inst, "static-%d", (int)getpid());
    topic(t, 6);
    lpath(p0, sizeof p0, 0);
    lpath(p1, sizeof p1, 1);
    lpath(p2, sizeof p2, 2);
    lpath(p3, sizeof p3, 3);
    pid_t s = kc_gm_spawn(g, t, p0, inst);
    pid_t d = kc_gm_spawn(g, t, p1, NULL);
    assert_true(wait_stable(0, 30));
    assert_true(wait_stable(1, 30));
    sleep(2); /* both settled on their share */
    char before[2048], after[2048], dyn[2048];
    assert_true(last_stats(0, before, sizeof before, NULL, NULL));
    assert_true(last_stats(1, dyn, sizeof dyn, NULL, NULL));
    /* Close (leave with -2) and restart within the session (6 s). */
    int64_t t_stop = kc_gm_now_ns();
    assert_int_equal(kc_gm_stop(s), 0);
    pid_t s2 = kc_gm_spawn(g, t, p2, inst);
    assert_true(wait_stable(2, 30));
    sleep(2);
    assert_true(last_stats(2, after, sizeof after, NULL, NULL));
    long moved = count_kind(1, 'A', NULL, t_stop, NULL);
    long dyn_revoked = count_kind(1, 'V', NULL, t_stop, NULL);
    int64_t t_back = kc_gm_now_ns();
    print_message("# static: before %s, after restart %s, the other member: %ld assigned / %ld "
                  "revoked since the restart began (%.1f s ago)\n",
                  before, after, moved, dyn_revoked, (t_back - t_stop) / 1e9);
    assert_string_equal(before, after);
    assert_int_equal(moved, 0);
    assert_int_equal(dyn_revoked, 0);

    /* Fencing: freeze the instance past its session; a new process with the same instance id
     * takes over; the frozen one, thawed, must be refused and lose its partitions. */
    kill(s2, SIGSTOP);
    int64_t t_freeze = kc_gm_now_ns();
    /* Until the coordinator ends the frozen session (6 s without a heartbeat) a join with the
     * same instance id is refused with UNRELEASED_INSTANCE_ID, which is fatal by design. The
     * end of the session shows as the frozen member's partitions moving to the other member, so
     * the new process starts after that move: when the coordinator's timer fires depends on the
     * broker's load. */
    long taken = 0;
    for (int i = 0; i < 300 && !taken; i++) {
        usleep(100 * 1000);
        taken = count_kind(1, 'A', NULL, t_freeze, NULL);
    }
    print_message(
        "# fencing: the frozen session ended (partitions moved) %.1f s after the freeze\n",
        (kc_gm_now_ns() - t_freeze) / 1e9);
    assert_true(taken >= 1);
    pid_t s3 = kc_gm_spawn(g, t, p3, inst);
    if (!wait_stable(3, 30)) {
        char e[600];
        long ne = 0;
        errors_of(3, e, sizeof e, &ne);
        print_message("# fencing: the new instance never became stable: %ld error(s), first: %s\n",
                      ne, e);
        fail();
    }
    kill(s2, SIGCONT);
    /* Thawed, it first fences itself (no heartbeat answered for longer than the fence point:
     * an error event saying so), then the coordinator's answer refuses the old instance. */
    char err[600] = "";
    long nerr = 0;
    for (int i = 0; i < 150 && !err[0]; i++) {
        usleep(100 * 1000);
        error_matching(2, "FENCED_INSTANCE_ID", "UNRELEASED_INSTANCE_ID", err, sizeof err, &nerr);
    }
    long lost = count_kind(2, 'L', NULL, t_freeze, NULL);
    long revoked = count_kind(2, 'V', NULL, t_freeze, NULL);
    char e3[600];
    long nerr3 = 0;
    errors_of(3, e3, sizeof e3, &nerr3);
    print_message(
        "# fencing: thawed instance: %ld error(s), the refusal: %s; on_lost %ld, on_revoke %ld; "
        "the new instance: %ld error(s)\n",
        nerr, err, lost, revoked, nerr3);
    assert_true(nerr >= 1);
    assert_true(strstr(err, "FENCED_INSTANCE_ID") || strstr(err, "UNRELEASED_INSTANCE_ID"));
    assert_true(lost >= 1);
    assert_int_equal(revoked, 0);
    assert_int_equal(nerr3, 0);
    kc_gm_stop(s2); /* failed member: closes what is left */
    assert_int_equal(kc_gm_stop(s3), 0);
    assert_int_equal(kc_gm_stop(d), 0);
}

static void regex_new_topic(void **state)
{
    (void)state;
    setup_dir("regex");
    char a[64], b[64], g[64], re[80], p0[400];
    snprintf(a, sizeof a, "kc-rx-%d-a", (int)getpid());
    snprintf(b, sizeof b, "kc-rx-%d-b", (int)getpid());
    snprintf(g, sizeof g, "kc-g848rx-%d", (int)getpid());
    snprintf(re, sizeof re, "^kc-rx-%d-.*", (int)getpid());
    topic(a, 2);
    lpath(p0, sizeof p0, 0);
    pid_t m = kc_gm_spawn(g, re, p0, NULL);
    assert_true(wait_stable(0, 30));
    int64_t t_create = kc_gm_now_ns();
    topic(b, 2);
    produce(b, 300);
    long recs = 0, assigned = 0;
    int64_t t_got = 0;
    for (int i = 0; i < 600 && recs < 300; i++) {
        usleep(100 * 1000);
        assigned = count_kind(0, 'A', b, 0, NULL);
        count_kind(0, 'R', b, 0, &recs);
        if (assigned == 2 && !t_got)
            t_got = kc_gm_now_ns();
    }
    print_message("# regex: the new topic's 2 partitions assigned %.1f s after its creation; "
                  "%ld of 300 records processed\n",
                  t_got ? (t_got - t_create) / 1e9 : -1.0, recs);
    assert_int_equal(assigned, 2);
    assert_int_equal(recs, 300);
    assert_int_equal(kc_gm_stop(m), 0);
}

static const char *cmd_keyed(const char *t, int n)
{
    static char cmd[300];
    snprintf(cmd, sizeof cmd, "produce %s --records %d --size 64 --keys 32", t, n);
    return cmd;
}

static void max_poll_leave(void **state)
{
    (void)state;
    setup_dir("maxpoll");
    char t[64], g[64], p0[400], p1[400];
    snprintf(t, sizeof t, "kc-g848m-%d", (int)getpid());
    snprintf(g, sizeof g, "kc-g848m-%d", (int)getpid());
    topic(t, 4);
    lpath(p0, sizeof p0, 0);
    lpath(p1, sizeof p1, 1);
    setenv("KC_GM_SLOW_MS", "6000", 1);
    setenv("KC_GM_MAX_POLL_MS", "2000", 1);
    pid_t slow = kc_gm_spawn(g, t, p0, NULL);
    unsetenv("KC_GM_SLOW_MS");
    unsetenv("KC_GM_MAX_POLL_MS");
    assert_true(wait_stable(0, 30));
    pid_t other = kc_gm_spawn(g, t, p1, NULL);
    assert_true(wait_stable(1, 30));
    int64_t t0 = kc_gm_now_ns();
    /* Keyed: every partition gets records, so the slow member's first callback starts (and
     * sleeps 6 s) whichever partitions it holds. */
    assert_int_equal(kc_gm_testkit(cmd_keyed(t, 400)), 0);
    long slow_done = 0, reassigned = 0, lost = 0, back = 0;
    for (int i = 0; i < 300; i++) {
        usleep(100 * 1000);
        slow_done = count_kind(0, 'W', NULL, 0, NULL);
        lost = count_kind(0, 'L', NULL, t0, NULL);
        reassigned = count_kind(1, 'A', NULL, t0, NULL);
        char a[2048];
        int64_t ts = 0;
        back = slow_done && last_stats(0, a, sizeof a, NULL, &ts) && strstr(a, "[\"") ? 1 : 0;
        if (slow_done && lost && back && reassigned)
            break;
    }
    char e0[600];
    long n0 = 0;
    errors_of(0, e0, sizeof e0, &n0);
    long r0 = 0, r1 = 0;
    for (int i = 0; i < 100 && r0 + r1 < 400; i++) {
        usleep(100 * 1000);
        count_kind(0, 'R', t, 0, &r0);
        count_kind(1, 'R', t, 0, &r1);
    }
    print_message("# max.poll: slow callback returned %ld, error events %ld (first: %s), on_lost "
                  "%ld, the other member assigned %ld partition(s) meanwhile, rejoined and "
                  "stable with partitions: %ld; records %ld + %ld of 400 (at least once)\n",
                  slow_done, n0, e0, lost, reassigned, back, r0, r1);
    assert_int_equal(slow_done, 1);
    assert_true(n0 >= 1 && strstr(e0, "max.poll.interval.ms"));
    assert_true(lost >= 1);
    assert_true(reassigned >= 1);
    assert_int_equal(back, 1);
    assert_true(r0 + r1 >= 400);
    assert_int_equal(kc_gm_stop(slow), 0);
    assert_int_equal(kc_gm_stop(other), 0);
}

static void coordinator_failover(void **state)
{
    (void)state;
    setup_dir("failover");
    char t[64], g[64], p0[400], p1[400];
    snprintf(t, sizeof t, "kc-g848f-%d", (int)getpid());
    snprintf(g, sizeof g, "kc-g848f-%d", (int)getpid());
    topic(t, 6);
    lpath(p0, sizeof p0, 0);
    lpath(p1, sizeof p1, 1);
    /* The group's session outlasts the failover (the controller notices the dead coordinator
     * after its 9 s broker session): with the cluster's 6 s the members would rightly fence
     * themselves while no coordinator answers. The members read it with DescribeConfigs. */
    char gc[400];
    snprintf(gc, sizeof gc,
             "tool ConfigCommand --bootstrap-server %s --alter --entity-type groups "
             "--entity-name %s --add-config consumer.session.timeout.ms=20000",
             kc_test_env("KC_BOOTSTRAP"), g);
    assert_int_equal(kc_gm_testkit(gc), 0);
    pid_t m0 = kc_gm_spawn(g, t, p0, NULL);
    pid_t m1 = kc_gm_spawn(g, t, p1, NULL);
    assert_true(wait_stable(0, 30));
    assert_true(wait_stable(1, 30));
    assert_int_equal(kc_gm_testkit(cmd_keyed(t, 500)), 0);
    int coord = -1;
    char as[2048];
    last_stats(0, as, sizeof as, &coord, NULL);
    assert_true(coord >= 1 && coord <= 3);
    char cmd[100];
    snprintf(cmd, sizeof cmd, "kill-broker %d", coord);
    int64_t t_kill = kc_gm_now_ns();
    assert_int_equal(kc_gm_testkit(cmd), 0);
    /* Rediscovery: each member's stats name another coordinator and say STABLE again. */
    double took[2] = {-1, -1};
    for (int i = 0; i < 600 && (took[0] < 0 || took[1] < 0); i++) {
        usleep(100 * 1000);
        for (int m = 0; m < 2; m++) {
            int c = -1;
            int64_t ts = 0;
            if (took[m] < 0 && last_stats(m, NULL, 0, &c, &ts) && c >= 1 && c != coord &&
                ts > t_kill)
                took[m] = (ts - t_kill) / 1e9;
        }
    }
    assert_int_equal(kc_gm_testkit(cmd_keyed(t, 500)), 0);
    long r0 = 0, r1 = 0;
    for (int i = 0; i < 600 && r0 + r1 < 1000; i++) {
        usleep(100 * 1000);
        count_kind(0, 'R', t, 0, &r0);
        count_kind(1, 'R', t, 0, &r1);
    }
    char e0[600], e1[600];
    long n0, n1;
    errors_of(0, e0, sizeof e0, &n0);
    errors_of(1, e1, sizeof e1, &n1);
    double all = (kc_gm_now_ns() - t_kill) / 1e9;
    print_message("# failover: coordinator node %d killed; rediscovered after %.1f s / %.1f s; "
                  "records processed %ld of 1000 (%.1f s after the kill); errors %ld %ld %s%s\n",
                  coord, took[0], took[1], r0 + r1, all, n0, n1, e0, e1);
    snprintf(cmd, sizeof cmd, "start-broker %d", coord);
    int restarted = kc_gm_testkit(cmd);
    int s0 = kc_gm_stop(m0), s1 = kc_gm_stop(m1);
    assert_int_equal(restarted, 0);
    assert_true(took[0] >= 0 && took[1] >= 0);
    assert_int_equal(r0 + r1, 1000);
    assert_int_equal(n0, 0);
    assert_int_equal(n1, 0);
    assert_int_equal(s0, 0);
    assert_int_equal(s1, 0);
}

int main(int argc, char **argv)
{
    kc_gm_maybe_member(argc, argv);
    if (getenv("KC_TEST_FILTER")) /* e.g. KC_TEST_FILTER=coordinator_failover */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(static_member),
        cmocka_unit_test(regex_new_topic),
        cmocka_unit_test(max_poll_leave),
        cmocka_unit_test(coordinator_failover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
