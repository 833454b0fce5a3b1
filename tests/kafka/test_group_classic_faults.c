/* group.protocol=classic, members as separate processes, the cases where a member
 * leaves or is refused:
 *  max_poll_leave: a callback overruns max.poll.interval.ms: its member leaves (the other gets
 *    every partition), dispatches nothing while out, and rejoins once the callback returned.
 *  inconsistent_protocol: range against a group a Java member runs with roundrobin: the fatal
 *    error names both (the group's side from DescribeGroups).
 *  close_while_join_parked: kc_close while the member's JoinGroup waits at the coordinator for
 *    a stopped member: it leaves at once, not when the rebalance ends.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR. kc-test-label: kafka */
#include "classic_procs.h"

/* ---- max.poll.interval.ms overrun -------------------------------------------------------------
 */

/* Member 0's first callback sleeps 8 s against max.poll.interval.ms=3000. Asserted: the watchdog
 * reports it; member 0 leaves (its stats count the leave) and loses its partitions; member 1
 * holds all 4 partitions before the slow callback returns; member 0 dispatches nothing between
 * the overrun and its rejoin; after the callback returned both members hold partitions again in
 * one generation; no partition other than the overrunning one ever has two owners (that one
 * cannot: its callback is still running when the group hands it on, as with Java); every record
 * is processed. */
static void max_poll_leave(void **state)
{
    (void)state;
    const int NP = 4;
    const int64_t MAX_POLL_NS = 3000000000LL;
    setup("maxpoll", NP);
    const char *conf = "group.protocol=classic;partition.assignment.strategy=range;"
                       "heartbeat.interval.ms=500;max.poll.interval.ms=3000";
    setenv("KC_GM_SLOW_MS", "8000", 1);
    pid_t m0 = spawn(0, conf, NULL);
    unsetenv("KC_GM_SLOW_MS");
    pid_t m1 = spawn(1, conf, NULL);
    kc_gm_log_t lg = {0};
    bool both = false;
    for (int i = 0; i < 150 && !both; i++) { /* both hold partitions in one generation */
        usleep(200 * 1000);
        load_all(&lg, 2);
        const char *a = last_stats(&lg, 0), *b = last_stats(&lg, 1);
        both = strstr(a, "\"stable\"") && strstr(b, "\"stable\"") && strstr(a, "[[") &&
               strstr(b, "[[") && json_int(a, "epoch") == json_int(b, "epoch");
    }
    assert_true(both);
    int64_t t0 = kc_gm_now_ns();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "produce %s --records 400 --size 32 --keys 32", topic);
    assert_int_equal(kc_gm_testkit(cmd), 0);
    /* W: the slow callback returned. Then member 0 must be back with partitions. */
    const kc_gm_ev_t *w = NULL;
    bool back = false;
    for (int i = 0; i < 300 && !back; i++) {
        usleep(200 * 1000);
        load_all(&lg, 2);
        w = NULL;
        for (size_t k = 0; k < lg.n; k++)
            if (lg.ev[k].kind == 'W')
                w = &lg.ev[k];
        const char *a = last_stats(&lg, 0), *b = last_stats(&lg, 1);
        back = w && strstr(a, "\"stable\"") && strstr(b, "\"stable\"") && strstr(a, "[[") &&
               strstr(b, "[[") && json_int(a, "epoch") == json_int(b, "epoch") &&
               json_int(a, "poll_leaves") == 1;
    }
    assert_non_null(w);
    char wtopic[96];
    int wpart = w->partition;
    int64_t w_start = w->start, w_end = w->end;
    snprintf(wtopic, sizeof wtopic, "%s", w->topic);
    long distinct = 0, dups = 0;
    for (int i = 0; i < 100 && distinct < 400; i++) {
        usleep(200 * 1000);
        load_all(&lg, 2);
        count(&lg, NP, &distinct, &dups);
    }
    int64_t t_end = kc_gm_now_ns();
    int64_t death[2] = {INT64_MAX, INT64_MAX};
    int st0 = kc_gm_stop(m0);
    death[0] = kc_gm_now_ns();
    int st1 = kc_gm_stop(m1);
    death[1] = kc_gm_now_ns();
    load_all(&lg, 2);
    /* The overrun as reported, the leave, and what member 0 lost. */
    long n_err = 0, n_pollerr = 0, lost0 = 0, stray = 0;
    for (size_t k = 0; k < lg.n; k++) {
        const kc_gm_ev_t *e = &lg.ev[k];
        if (e->kind == 'E' && e->member == 0) {
            n_err++;
            n_pollerr += strstr(e->text, "max.poll.interval.ms") != NULL;
        }
        lost0 += e->kind == 'L' && e->member == 0 && e->start >= t0;
    }
    /* Member 0 dispatches nothing after the overrun was seen (a margin for the watchdog's 100 ms
     * tick and a callback already started) until it is assigned again after the callback. */
    int64_t t_over = w_start + MAX_POLL_NS + 500000000LL;
    int64_t t_reassigned = first_event(&lg, 0, 'A', w_end);
    for (size_t k = 0; k < lg.n; k++) {
        const kc_gm_ev_t *e = &lg.ev[k];
        stray += e->kind == 'R' && e->member == 0 && e->start > t_over && e->start < t_reassigned;
    }
    /* Member 1 held every partition before the slow callback returned. */
    int all1 = 0;
    for (int p = 0; p < NP; p++)
        all1 += owns(&lg, 1, p, w_end - 200000000LL);
    /* Ownership of the partitions other than the overrunning one: never two owners. */
    char others[MAXP][96];
    int no = 0;
    for (int p = 0; p < NP; p++)
        if (!(p == wpart && strcmp(wtopic, topic) == 0))
            snprintf(others[no++], 96, "%.95s", parts[p]);
    kc_gm_sample_result_t r =
        kc_gm_sample(&lg, 2, death, others, no, t0, t_end, 5000000, INT64_MAX);
    long errs = errors_of(&lg);
    print_message(
        "# max.poll: slow callback on %s[%d] ran %.0f ms; member 0: %ld error event(s), %ld "
        "naming max.poll.interval.ms, on_lost %ld, callbacks dispatched while out %ld, "
        "re-assigned %.0f ms after the callback returned; member 1 held %d of %d partitions "
        "200 ms before it returned; back in one generation with partitions on both: %s; other "
        "partitions: %ld samples, max intersection %d; processed %ld of 400 (%ld again); exits "
        "%d %d; errors %ld\n",
        wtopic, wpart, (w_end - w_start) / 1e6, n_err, n_pollerr, lost0, stray,
        t_reassigned == INT64_MAX ? -1.0 : (t_reassigned - w_end) / 1e6, all1, NP,
        back ? "yes" : "no", r.samples, r.max_intersection, distinct, dups, st0, st1, errs);
    if (r.max_intersection)
        print_message("# first conflict: %s\n", r.first_conflict);
    assert_true(n_pollerr >= 1);
    assert_int_equal(n_err, n_pollerr); /* nothing else went wrong */
    assert_true(lost0 >= 1);
    assert_int_equal(stray, 0);
    assert_int_equal(all1, NP);
    assert_true(back);
    assert_true(t_reassigned != INT64_MAX);
    assert_true(r.samples > 100);
    assert_int_equal(r.max_intersection, 0);
    assert_int_equal(distinct, 400);
    assert_int_equal(st0 | st1, 0);
    assert_int_equal(errs, n_err);
    kc_gm_free(&lg);
}

/* ---- a group that runs another protocol ------------------------------------------------------ */

static void inconsistent_protocol(void **state)
{
    (void)state;
    const int NP = 2;
    setup("incons", NP);
    pid_t j = java_member("RoundRobinAssignor", 0);
    for (int i = 0, owners = 0, kcp = 0; i < 40; i++) { /* the Java member owns the group */
        sleep(1);
        if (describe(NP, &owners, "none", &kcp) == NP && owners == 1)
            break;
    }
    pid_t k = spawn(0, "group.protocol=classic;partition.assignment.strategy=range", NULL);
    kc_gm_log_t lg = {0};
    char text[sizeof lg.ev[0].text] = "";
    for (int i = 0; i < 150 && !text[0]; i++) {
        usleep(200 * 1000);
        load_all(&lg, 1);
        for (size_t e = 0; e < lg.n; e++)
            if (lg.ev[e].kind == 'E' && strstr(lg.ev[e].text, "INCONSISTENT_GROUP_PROTOCOL")) {
                snprintf(text, sizeof text, "%s", lg.ev[e].text);
                break;
            }
    }
    kc_gm_stop(k); /* a member stopped by a fatal error: its exit status is not the point */
    int owners = 0, kcp = 0;
    int rows = describe(NP, &owners, "none", &kcp);
    java_stop(j);
    print_message("# inconsistent protocol: kconsume's error: %s; the Java member still owns "
                  "%d of %d partitions alone (%d owner)\n",
                  text[0] ? text : "(none)", rows, NP, owners);
    assert_true(text[0] != 0);
    assert_non_null(strstr(text, "[range]"));
    assert_non_null(strstr(text, "'roundrobin'"));
    assert_int_equal(rows, NP);
    assert_int_equal(owners, 1);
    kc_gm_free(&lg);
}

/* Member B (a process) holds the group and is stopped (SIGSTOP, 30 s session): a new member A
 * (in this process) joins, so the coordinator parks A's JoinGroup until B rejoins or its session
 * ends. kc_close(A, 10 s) meanwhile must leave at once: A's LeaveGroup cannot be answered behind
 * the parked JoinGroup on the same connection (a close that waits for it runs out its timeout
 * and returns KC_ERR_TIMEOUT without having left). Asserted: KC_OK within 5 s; and once B resumes,
 * the rebalance ends with B alone holding both partitions (had A not left, the coordinator would
 * give A one of them until A's 30 s session ran out). */
static void close_while_join_parked(void **state)
{
    (void)state;
    const int NP = 2;
    setup("parked", NP);
    const char *conf = "group.protocol=classic;partition.assignment.strategy=range;"
                       "session.timeout.ms=30000;heartbeat.interval.ms=1000;"
                       "rebalance.timeout.ms=60000";
    pid_t b = spawn(0, conf, NULL);
    kc_gm_log_t lg = {0};
    int epoch0 = -1;
    for (int i = 0; i < 150 && epoch0 < 0; i++) {
        usleep(200 * 1000);
        load_all(&lg, 1);
        const char *s = last_stats(&lg, 0);
        if (strstr(s, "\"stable\"") && strstr(s, "[["))
            epoch0 = json_int(s, "epoch");
    }
    assert_true(epoch0 >= 0);
    assert_int_equal(kill(b, SIGSTOP), 0);
    kc_conf_t *c = kc_conf_new();
    kc_test_conf_set(c, "bootstrap.servers", kc_test_env("KC_BOOTSTRAP"));
    kc_test_conf_set(c, "group.id", group);
    kc_test_conf_set_all(c, conf); /* B's settings */
    kc_callbacks_t cbs = {0};
    kc_consumer_t *a = kc_test_consumer(c, &cbs);
    const char *topics[] = {topic};
    kc_error_t err;
    assert_int_equal(kc_subscribe(a, topics, 1, &err), KC_OK);
    sleep(4); /* A's JoinGroup is at the coordinator, waiting for B */
    int64_t t0 = kc_test_now_ms();
    kc_err_t rc = kc_close(a, 10000, &err);
    int64_t took = kc_test_now_ms() - t0;
    kc_destroy(a);
    assert_int_equal(kill(b, SIGCONT), 0);
    /* B rejoins: the rebalance ends in a later generation, with or without A */
    int epoch = epoch0, owners = 0, rows = 0, kcp = 0;
    for (int i = 0; i < 100 && epoch <= epoch0; i++) {
        usleep(200 * 1000);
        load_all(&lg, 1);
        const char *s = last_stats(&lg, 0);
        if (strstr(s, "\"stable\""))
            epoch = json_int(s, "epoch");
    }
    if (epoch > epoch0)
        rows = describe(NP, &owners, "none", &kcp);
    kc_gm_stop(b);
    print_message("# close with the JoinGroup parked: %s after %lld ms; after B resumed, "
                  "generation %d -> %d, %d partitions with %d owner(s)\n",
                  kc_err_name(rc), (long long)took, epoch0, epoch, rows, owners);
    kc_gm_free(&lg);
    assert_int_equal(rc, KC_OK);
    assert_true(took < 5000);
    assert_true(epoch > epoch0);
    assert_int_equal(rows, NP);
    assert_int_equal(owners, 1); /* B alone: A left */
}

/* The group's TYPE in GroupsCommand --list ("Classic" / "Consumer"), "" when not listed. */

int main(int argc, char **argv)
{
    kc_gm_maybe_member(argc, argv);
    if (getenv("KC_TEST_FILTER")) /* one case by name, e.g. max_poll_leave */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(max_poll_leave),
        cmocka_unit_test_teardown(inconsistent_protocol, java_teardown),
        cmocka_unit_test(close_while_join_parked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
