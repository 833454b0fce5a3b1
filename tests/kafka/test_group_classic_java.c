/* kc-test-label: threads-long */
/* The classic protocol on the library's own driver (tests/support/group_harness.h) against a
 * real broker, in a mixed group with Java's kafka-console-consumer (group.protocol=classic),
 * each side joining first in turn (so each is leader once), for range and cooperative-sticky:
 * the assignments the broker relays (DescribeGroups, decoded) cover the topic exactly once, and
 * ours equals what our member holds. Kafka-only members: test_group_classic.c. Needs
 * KC_BOOTSTRAP, KC_TESTKIT and KC_CLUSTER_DIR (tests/run-suite sets them). */
#include "classic_members.h"

static pid_t start_java(const char *group, const char *strategy_class)
{
    char cp[1024];
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s classpath --dir %s", kc_test_env("KC_TESTKIT"),
             kc_test_env("KC_CLUSTER_DIR"));
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    assert_non_null(fgets(cp, sizeof cp, f));
    pclose(f);
    cp[strcspn(cp, "\n")] = 0;
    char strat[256], prot[] = "group.protocol=classic", hb[] = "heartbeat.interval.ms=500",
                     sess[] = "session.timeout.ms=10000";
    snprintf(strat, sizeof strat, "partition.assignment.strategy=%s", strategy_class);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        FILE *null = freopen("/dev/null", "w", stdout);
        (void)null;
        null = freopen("/dev/null", "w", stderr);
        execlp("java", "java", "-Xmx256m", "-cp", cp,
               "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
               kc_test_env("KC_BOOTSTRAP"), "--topic", topic_name, "--group", group,
               "--consumer-property", prot, "--consumer-property", strat, "--consumer-property", hb,
               "--consumer-property", sess, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void stop_java(pid_t pid)
{
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
}

/* One kconsume member and one Java console consumer; `java_first` makes Java the leader (the
 * first member is the leader of a new classic group). */
static void mixed(kc_assignor_t a, const char *java_class, bool java_first, const char *tag)
{
    make_topic(tag);
    char group[96];
    snprintf(group, sizeof group, "g-%s", topic_name);
    kc_gh_t *h = kc_gh_start();
    kc_gh_member_t *ms[1];
    kc_tpset_t d[2] = {{0}, {0}};
    char ids[2][128];
    pid_t java = -1;
    if (java_first) {
        java = start_java(group, java_class);
        if (!describe(group, 1, d, ids, 60000))
            fail_msg("the Java consumer did not join %s", group);
        kc_tpset_free(&d[0]);
        ms[0] = member_start(h, group, a, NULL);
    } else {
        ms[0] = member_start(h, group, a, NULL);
        assert_true(kc_gh_settle(ms, 1, NPART, 1000, 30000));
        java = start_java(group, java_class);
    }
    /* Run our member until the group is Stable with both and we hold a settled share. */
    bool ok = false;
    kc_gh_view_t v = {0};
    int64_t end = now_ms() + 90000;
    while (!ok && now_ms() < end) {
        v = kc_gh_view(ms[0]);
        if (!kc_gh_settle(ms, 1, v.held ? v.held : 1, 1500, 3000))
            continue;
        if (!describe(group, 2, d, ids, 1000))
            continue;
        v = kc_gh_view(ms[0]);
        size_t mine = strcmp(ids[0], v.member_id) == 0 ? 0 : 1;
        ok = holds_exactly(&v, &d[mine]) && d[1 - mine].n > 0;
        if (ok) {
            assert_exact_cover(d, 2);
            assert_string_equal(ids[mine], v.member_id);
            assert_int_equal(v.leader, !java_first);
        }
        kc_tpset_free(&d[0]);
        kc_tpset_free(&d[1]);
    }
    stop_java(java);
    if (!ok)
        fail_msg("mixed group did not converge (held %d, stable %d)", v.held, (int)v.stable);
    assert_true(kc_gh_close(ms[0], 10000));
    kc_gh_stop(h);
}

static void mixed_range_java_leader(void **state)
{
    (void)state;
    mixed(KC_ASSIGNOR_RANGE, "org.apache.kafka.clients.consumer.RangeAssignor", true, "mrj");
}

static void mixed_range_kconsume_leader(void **state)
{
    (void)state;
    mixed(KC_ASSIGNOR_RANGE, "org.apache.kafka.clients.consumer.RangeAssignor", false, "mrk");
}

static void mixed_cooperative_java_leader(void **state)
{
    (void)state;
    mixed(KC_ASSIGNOR_COOPERATIVE_STICKY,
          "org.apache.kafka.clients.consumer.CooperativeStickyAssignor", true, "mcj");
}

static void mixed_cooperative_kconsume_leader(void **state)
{
    (void)state;
    mixed(KC_ASSIGNOR_COOPERATIVE_STICKY,
          "org.apache.kafka.clients.consumer.CooperativeStickyAssignor", false, "mck");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (getenv("KC_TEST_FILTER")) /* one case by name */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mixed_range_java_leader),
        cmocka_unit_test(mixed_range_kconsume_leader),
        cmocka_unit_test(mixed_cooperative_java_leader),
        cmocka_unit_test(mixed_cooperative_kconsume_leader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
