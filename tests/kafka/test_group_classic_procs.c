/* group.protocol=classic acceptance with the public consumer, members as separate
 * processes (tests/support/g848_member re-executes this binary; KC_GM_CONF selects classic).
 *
 *  scaleout_coop / scaleout_eager / scaleout_roundrobin (cooperative-sticky / range /
 *    roundrobin): 6 partitions, a steady producer (RoundRobinPartitioner,
 *    ~600 records/s); members 0 and 1 start, member 2 joins, then member 0 leaves (SIGTERM: its
 *    kc_close revokes, commits and sends LeaveGroup) while records still arrive. Asserted:
 *    sampled ownership never intersects, no overlapping callbacks across members, every record
 *    processed, none twice (graceful moves commit before revoking), and after the leave members 1
 *    and 2 hold every partition. Measured: the longest callback gap on partitions
 *    that kept their owner, against the rebalance (member 2 spawned → its first on_assign).
 *    Cooperative: unmoved partitions keep flowing (gap << rebalance); eager: every partition
 *    stops for the whole rebalance.
 *  static_restart: two static members; the follower is stopped (no LeaveGroup) and restarted
 *    with the same group.instance.id: the generation does not change, the other member sees no
 *    revoke, the restarted one gets its old partitions back.
 *  partitions_grow: one member, 2 → 4 partitions: the new ones are assigned.
 *  mixed_java_*: one kconsume member and one Java kafka-console-consumer (classic) in one group,
 *    for range, roundrobin and cooperative-sticky; kconsume leads first, then (restarted) the
 *    Java member leads. Each time ConsumerGroupCommand shows every partition owned by exactly one
 *    of the two members, and kconsume's own assignment (stats) matches what the broker shows.
 * make test runs a subset (main() says which); KC_PROCS_SCALE=long runs them all.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR. kc-test-label: kafka */
#include "classic_procs.h"

/* ---- scale-out 2 -> 3 ------------------------------------------------------------------------ */

static void scaleout(const char *name, const char *assignor, bool coop)
{
    const int NP = 6;
    setup(name, NP);
    char conf[256];
    snprintf(conf, sizeof conf, "group.protocol=classic;partition.assignment.strategy=%s",
             assignor);
    const long total = 15000; /* 25 s at 600/s: the join at 9 s, the leave at 21 s */
    pid_t prod = produce_bg(total, 600);
    int64_t t_start = kc_gm_now_ns();
    int64_t death[3] = {INT64_MAX, INT64_MAX, INT64_MAX};
    int st[3] = {0};
    pid_t m[3];
    m[0] = spawn(0, conf, NULL);
    m[1] = spawn(1, conf, NULL);
    sleep(9);
    int64_t t_join = kc_gm_now_ns();
    m[2] = spawn(2, conf, NULL);
    sleep(12); /* past the join's rebalance, its settling and the window measured below */
    int64_t t_leave = kc_gm_now_ns();
    st[0] = kc_gm_stop(m[0]); /* a graceful leave under load */
    death[0] = kc_gm_now_ns();
    sleep(3);
    int pst = 0;
    waitpid(prod, &pst, 0);
    kc_gm_log_t lg = {0};
    long distinct = 0, dups = 0;
    for (int i = 0; i < 150; i++) {
        load_all(&lg, 3);
        count(&lg, NP, &distinct, &dups);
        if (distinct >= total)
            break;
        usleep(200 * 1000);
    }
    int64_t t_end = kc_gm_now_ns();
    /* After the leave, members 1 and 2 own all NP partitions between them (their stats). */
    int after_leave = 0;
    for (int p = 0; p < NP; p++)
        after_leave += owns(&lg, 1, p, t_end) || owns(&lg, 2, p, t_end);
    for (int i = 1; i < 3; i++) {
        st[i] = kc_gm_stop(m[i]);
        death[i] = kc_gm_now_ns();
    }
    load_all(&lg, 3);
    count(&lg, NP, &distinct, &dups);

    /* Never two owners, the whole run; every partition owned once the join settled, until the
     * leave (whose rebalance is checked by after_leave). */
    kc_gm_sample_result_t r =
        kc_gm_sample(&lg, 3, death, parts, NP, t_start, t_end, 5000000, INT64_MAX);
    kc_gm_sample_result_t settled = kc_gm_sample(&lg, 3, death, parts, NP, t_join + 8000000000LL,
                                                 t_leave, 5000000, t_join + 8000000000LL);
    r.uncovered_after_settle = settled.uncovered_after_settle;
    char why[400] = "";
    long overlaps = kc_gm_overlaps(&lg, why, sizeof why);
    /* The rebalance as member 2 sees it, and the callback gaps on partitions that kept their
     * owner across it (owned by the same member 1 s before the join and 2 s after it ended). */
    int64_t t_assigned = first_event(&lg, 2, 'A', t_join);
    int64_t w0 = t_join - 1000000000LL, w1 = t_assigned + 2000000000LL;
    int64_t max_gap = 0;
    int unmoved = 0, stopped = 0; /* unmoved partitions revoked (and re-assigned) meanwhile */
    for (int p = 0; p < NP && t_assigned != INT64_MAX; p++) {
        for (int mm = 0; mm < 2; mm++) {
            if (!owns(&lg, mm, p, w0) || !owns(&lg, mm, p, w1))
                continue;
            unmoved++;
            int64_t prev = w0;
            bool revoked = false;
            for (size_t i = 0; i < lg.n; i++) {
                const kc_gm_ev_t *e = &lg.ev[i];
                if (e->kind == 'V' && e->member == mm && e->partition == p && e->start >= w0 &&
                    e->start <= w1)
                    revoked = true;
                if (e->kind != 'R' || e->member != mm || e->partition != p || e->start < w0 ||
                    e->start > w1)
                    continue;
                if (e->start - prev > max_gap)
                    max_gap = e->start - prev;
                prev = e->start;
            }
            if (w1 - prev > max_gap)
                max_gap = w1 - prev;
            stopped += revoked;
        }
    }
    int64_t rebalance = t_assigned - t_join;
    long errs = errors_of(&lg);
    print_message(
        "# %s (%s): %ld samples, max intersection %d, uncovered after settle %ld, "
        "overlaps %ld; processed %ld of %ld, duplicates %ld; rebalance (join -> first "
        "on_assign of the new member) %.0f ms; %d unmoved partitions (%d revoked meanwhile), "
        "their max callback gap %.0f ms; member 0 left %.1f s after the join, then members 1 "
        "and 2 held %d of %d partitions; producer rc %d; exits %d %d %d; errors %ld\n",
        name, assignor, r.samples, r.max_intersection, r.uncovered_after_settle, overlaps, distinct,
        total, dups, rebalance / 1e6, unmoved, stopped, max_gap / 1e6,
        (double)(t_leave - t_join) / 1e9, after_leave, NP, WIFEXITED(pst) ? WEXITSTATUS(pst) : -1,
        st[0], st[1], st[2], errs);
    if (r.max_intersection)
        print_message("# first conflict: %s\n", r.first_conflict);
    if (overlaps)
        print_message("# first overlap: %s\n", why);
    if (r.max_intersection || r.uncovered_after_settle || overlaps || distinct != total || dups ||
        t_assigned == INT64_MAX || (st[0] | st[1] | st[2]) || errs || after_leave != NP)
        dump_members(&lg, 3);
    assert_true(r.samples > 1000);
    assert_int_equal(r.max_intersection, 0);
    assert_int_equal(r.uncovered_after_settle, 0);
    assert_int_equal(overlaps, 0);
    assert_int_equal(distinct, total);
    assert_int_equal(dups, 0);
    assert_true(t_assigned != INT64_MAX);
    assert_int_equal(st[0] | st[1] | st[2], 0);
    assert_int_equal(errs, 0);
    assert_int_equal(after_leave, NP);
    if (coop) {
        /* Unmoved partitions kept flowing: their longest pause is well under the rebalance. */
        assert_true(unmoved >= 2);
        assert_int_equal(stopped, 0);
        assert_true(max_gap < rebalance / 2);
    } else {
        /* eager, the comparison: every partition was revoked before the JoinGroup, kept or not */
        assert_true(unmoved >= 1);
        assert_int_equal(stopped, unmoved);
    }
    kc_gm_free(&lg);
}

static void scaleout_coop(void **state)
{
    (void)state;
    scaleout("coop", "cooperative-sticky", true);
}

static void scaleout_eager(void **state)
{
    (void)state;
    scaleout("eager", "range", false);
}

/* The third assignor, eager too: the compatibility suite runs each assignor on every broker. */
static void scaleout_roundrobin(void **state)
{
    (void)state;
    scaleout("rr", "roundrobin", false);
}

/* ---- static member restart ------------------------------------------------------------------- */

static void static_restart(void **state)
{
    (void)state;
    const int NP = 4;
    setup("static", NP);
    const char *conf = "group.protocol=classic;partition.assignment.strategy=range;"
                       "session.timeout.ms=20000";
    pid_t m[3];
    m[0] = spawn(0, conf, "inst-a");
    m[1] = spawn(1, conf, "inst-b");
    kc_gm_log_t lg = {0};
    int gen = -1;
    for (int i = 0; i < 100; i++) { /* both stable in one generation */
        sleep(0);
        usleep(200 * 1000);
        load_all(&lg, 2);
        const char *a = last_stats(&lg, 0), *b = last_stats(&lg, 1);
        if (strstr(a, "\"stable\"") && strstr(b, "\"stable\"") &&
            json_int(a, "epoch") == json_int(b, "epoch") && strstr(a, "[[") && strstr(b, "[[")) {
            gen = json_int(a, "epoch");
            break;
        }
    }
    assert_true(gen > 0);
    sleep(1);
    load_all(&lg, 2);
    int follower = strstr(last_stats(&lg, 0), "\"leader\":true") ? 1 : 0;
    int other = 1 - follower;
    bool before[MAXP];
    int64_t t = kc_gm_now_ns();
    for (int p = 0; p < NP; p++)
        before[p] = owns(&lg, follower, p, t);
    int64_t t_stop = kc_gm_now_ns();
    int st = kc_gm_stop(m[follower]);
    m[2] = spawn(2, conf, follower ? "inst-b" : "inst-a");
    int64_t t_restart = kc_gm_now_ns();
    int64_t t_back = INT64_MAX;
    for (int i = 0; i < 100 && t_back == INT64_MAX; i++) {
        usleep(200 * 1000);
        load_all(&lg, 3);
        t_back = first_event(&lg, 2, 'A', 0);
    }
    sleep(4); /* a rebalance, had there been one, would show in this window */
    load_all(&lg, 3);
    int gen_other = json_int(last_stats(&lg, other), "epoch");
    int gen_new = json_int(last_stats(&lg, 2), "epoch");
    long revokes_other = 0;
    for (size_t i = 0; i < lg.n; i++)
        revokes_other += lg.ev[i].member == other && lg.ev[i].start >= t_stop &&
                         (lg.ev[i].kind == 'V' || lg.ev[i].kind == 'L');
    int same = 0, owned_before = 0;
    int64_t now = kc_gm_now_ns();
    for (int p = 0; p < NP; p++) {
        owned_before += before[p];
        same += before[p] == owns(&lg, 2, p, now);
    }
    int st_other = kc_gm_stop(m[other]), st_new = kc_gm_stop(m[2]);
    load_all(&lg, 3);
    long errs = errors_of(&lg);
    print_message("# static restart: generation %d before; after the restart: other member %d, "
                  "restarted member %d; other member's revokes %ld; restarted member assigned "
                  "%.0f ms after its start (stop took %.0f ms), %d of %d partitions as before "
                  "(%d owned); exits %d %d %d; errors %ld\n",
                  gen, gen_other, gen_new, revokes_other,
                  t_back == INT64_MAX ? -1.0 : (t_back - t_restart) / 1e6,
                  (t_restart - t_stop) / 1e6, same, NP, owned_before, st, st_other, st_new, errs);
    assert_int_equal(gen_other, gen);
    assert_int_equal(gen_new, gen);
    assert_int_equal(revokes_other, 0);
    assert_true(t_back != INT64_MAX);
    assert_int_equal(same, NP);
    assert_true(owned_before > 0);
    assert_int_equal(st | st_other | st_new, 0);
    assert_int_equal(errs, 0);
    kc_gm_free(&lg);
}

/* ---- partition count increase ---------------------------------------------------------------- */

static void partitions_grow(void **state)
{
    (void)state;
    setup("grow", 2);
    const char *conf = "group.protocol=classic;partition.assignment.strategy=range";
    pid_t m = spawn(0, conf, NULL);
    kc_gm_log_t lg = {0};
    for (int i = 0; i < 100; i++) {
        usleep(200 * 1000);
        load_all(&lg, 1);
        if (owns(&lg, 0, 0, kc_gm_now_ns()) && owns(&lg, 0, 1, kc_gm_now_ns()) &&
            json_int(last_stats(&lg, 0), "epoch") > 0)
            break;
    }
    int gen0 = json_int(last_stats(&lg, 0), "epoch");
    assert_true(gen0 > 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "topic alter %s --partitions 4", topic);
    assert_int_equal(kc_gm_testkit(cmd), 0);
    int64_t t_alter = kc_gm_now_ns();
    int64_t t_got = INT64_MAX;
    for (int i = 0; i < 150 && t_got == INT64_MAX; i++) {
        usleep(200 * 1000);
        load_all(&lg, 1);
        int64_t now = kc_gm_now_ns();
        if (owns(&lg, 0, 2, now) && owns(&lg, 0, 3, now))
            t_got = now;
    }
    snprintf(cmd, sizeof cmd, "produce %s --records 400 --size 32", topic);
    assert_int_equal(kc_gm_testkit(cmd), 0);
    long distinct = 0, dups = 0;
    for (int i = 0; i < 100 && distinct < 400; i++) {
        usleep(200 * 1000);
        load_all(&lg, 1);
        count(&lg, 4, &distinct, &dups);
    }
    int gen1 = json_int(last_stats(&lg, 0), "epoch");
    int st = kc_gm_stop(m);
    load_all(&lg, 1);
    long errs = errors_of(&lg);
    print_message("# partitions 2 -> 4: new partitions assigned %.0f ms after the alter "
                  "(generation %d -> %d); 400 records produced after, %ld processed, %ld dups; "
                  "exit %d; errors %ld\n",
                  t_got == INT64_MAX ? -1.0 : (t_got - t_alter) / 1e6, gen0, gen1, distinct, dups,
                  st, errs);
    assert_true(t_got != INT64_MAX);
    assert_true(gen1 > gen0);
    assert_int_equal(distinct, 400);
    assert_int_equal(st, 0);
    assert_int_equal(errs, 0);
    kc_gm_free(&lg);
}

static void mixed(const char *name, const char *kc_assignor, const char *java_cls)
{
    const int NP = 6;
    setup(name, NP);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "produce %s --records 1500 --size 32 --keys 24", topic);
    char conf[256];
    snprintf(conf, sizeof conf, "group.protocol=classic;partition.assignment.strategy=%s",
             kc_assignor);
    int result[2][4]; /* per phase: rows, owners, kc partitions by describe, by stats */
    kc_gm_log_t lg = {0};
    pid_t j = -1, k = -1;
    for (int phase = 0; phase < 2; phase++) {
        /* phase 0: kconsume first (leader), Java joins; phase 1: Java alone, kconsume rejoins */
        if (phase == 0) {
            k = spawn(0, conf, NULL);
            sleep(5);
            j = java_member(java_cls, 0);
        } else {
            kc_gm_stop(k);
            /* Java alone (and so its leader) before kconsume comes back */
            for (int i = 0, owners = 0, kcp = 0; i < 40; i++) {
                sleep(1);
                if (describe(NP, &owners, "none", &kcp) == NP && owners == 1)
                    break;
            }
            k = spawn(1, conf, NULL);
        }
        int rows = -1, owners = 0, kcp = 0, kcs = -1;
        char id[256] = "";
        for (int i = 0; i < 40; i++) { /* until settled: both members, every partition */
            sleep(1);
            load_all(&lg, phase + 1);
            kc_view(&lg, phase, id, sizeof id, &kcs);
            rows = describe(NP, &owners, id, &kcp);
            if (rows == NP && owners == 2 && kcp == kcs && strstr(last_stats(&lg, phase), "stable"))
                break;
        }
        const char *s = last_stats(&lg, phase);
        print_message("# %s phase %d (%s leads): describe %d rows, %d owners, kconsume owns %d "
                      "by describe and %d by its stats (leader %s)\n",
                      name, phase, phase ? "Java" : "kconsume", rows, owners, kcp, kcs,
                      strstr(s, "\"leader\":true") ? "true" : "false");
        result[phase][0] = rows;
        result[phase][1] = owners;
        result[phase][2] = kcp;
        result[phase][3] = kcs;
        /* records for both members while this member leads */
        assert_int_equal(kc_gm_testkit(cmd), 0);
        sleep(6);
        assert_true(strstr(s, phase ? "\"leader\":false" : "\"leader\":true") != NULL);
    }
    kc_gm_stop(k);
    java_stop(j);
    load_all(&lg, 2);
    long distinct = 0, dups = 0;
    count(&lg, NP, &distinct, &dups);
    /* Java's records: "Partition:P\tOffset:O\t..." lines */
    char path[400], line[512];
    snprintf(path, sizeof path, "%s/java-0.out", dir);
    FILE *f = fopen(path, "r");
    long java_n = 0;
    static uint8_t jseen[MAXP][4096];
    memset(jseen, 0, sizeof jseen);
    while (f && fgets(line, sizeof line, f)) {
        int p;
        long o;
        if (sscanf(line, "Partition:%d\tOffset:%ld", &p, &o) == 2 && p >= 0 && p < NP && o >= 0 &&
            o < 4096) {
            java_n++;
            jseen[p][o] = 1;
        }
    }
    if (f)
        fclose(f);
    long both = 0, union_n = 0;
    static uint8_t kseen[MAXP][4096];
    memset(kseen, 0, sizeof kseen);
    for (size_t i = 0; i < lg.n; i++)
        if (lg.ev[i].kind == 'R' && lg.ev[i].partition < NP)
            for (int64_t o = lg.ev[i].first; o <= lg.ev[i].last && o < 4096; o++)
                kseen[lg.ev[i].partition][o] = 1;
    for (int p = 0; p < NP; p++)
        for (int o = 0; o < 4096; o++) {
            union_n += kseen[p][o] | jseen[p][o];
            both += kseen[p][o] & jseen[p][o];
        }
    long errs = errors_of(&lg);
    print_message("# %s: kconsume processed %ld distinct (%ld dups), Java printed %ld; union %ld "
                  "of 3000, processed by both %ld; errors %ld\n",
                  name, distinct, dups, java_n, union_n, both, errs);
    for (int phase = 0; phase < 2; phase++) {
        assert_int_equal(result[phase][0], NP);
        assert_int_equal(result[phase][1], 2);
        assert_int_equal(result[phase][2], result[phase][3]);
        assert_true(result[phase][2] > 0 && result[phase][2] < NP);
    }
    assert_int_equal(union_n, 3000);
    assert_true(java_n > 0 && distinct > 0); /* both members consumed */
    assert_int_equal(both, 0);               /* graceful moves commit first: nothing twice */
    assert_int_equal(errs, 0);
    kc_gm_free(&lg);
}

static void mixed_java_range(void **state)
{
    (void)state;
    mixed("mixrange", "range", "RangeAssignor");
}

static void mixed_java_roundrobin(void **state)
{
    (void)state;
    mixed("mixrr", "roundrobin", "RoundRobinAssignor");
}

static void mixed_java_coop(void **state)
{
    (void)state;
    mixed("mixcoop", "cooperative-sticky", "CooperativeStickyAssignor");
}

/* INCONSISTENT_GROUP_PROTOCOL: a Java member runs the group with roundrobin; kconsume offers
 * range only. Its fatal error must name both sides: ours (range) and the group's (roundrobin,
 * asked of the coordinator with DescribeGroups). */
static void group_type(char *out, size_t cap)
{
    char path[400], cmd[1200], line[512];
    snprintf(path, sizeof path, "%s/groups.txt", dir);
    snprintf(cmd, sizeof cmd,
             "%s tool org.apache.kafka.tools.GroupsCommand --bootstrap-server %s --list --dir %s > "
             "%s 2>&1",
             kc_test_env("KC_TESTKIT"), kc_test_env("KC_BOOTSTRAP"), kc_test_env("KC_CLUSTER_DIR"),
             path);
    *out = 0;
    if (system(cmd) != 0)
        return;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        char g[128], t[64];
        if (sscanf(line, "%127s %63s", g, t) == 2 && strcmp(g, group) == 0)
            snprintf(out, cap, "%s", t);
    }
    if (f)
        fclose(f);
}

/* ---- rolling upgrade classic -> consumer -> classic ------------------------------------------ */

static void rolling_upgrade(void **state)
{
    (void)state;
    const int NP = 6, N = 9;
    setup("roll", NP);
    const char *classic = "group.protocol=classic;partition.assignment.strategy=cooperative-sticky";
    const char *consumer = "group.protocol=consumer";
    const long total = 36000;
    pid_t prod = produce_bg(total, 600);
    int64_t t_start = kc_gm_now_ns();
    int64_t death[9];
    pid_t m[9];
    char type_upgraded[64] = "", type_back[64] = "";
    for (int i = 0; i < N; i++)
        death[i] = INT64_MAX;
    for (int i = 0; i < 3; i++)
        m[i] = spawn(i, classic, NULL);
    sleep(8);
    /* members 0-2 (classic) replaced one by one by 3-5 (consumer), then those by 6-8 (classic) */
    for (int i = 3; i < N; i++) {
        int old = i - 3;
        int st = kc_gm_stop(m[old]);
        death[old] = kc_gm_now_ns();
        assert_int_equal(st, 0);
        m[i] = spawn(i, i < 6 ? consumer : classic, NULL);
        sleep(7);
        if (i == 2 + 3) /* every member speaks the consumer protocol now */
            group_type(type_upgraded, sizeof type_upgraded);
    }
    group_type(type_back, sizeof type_back);
    int pst = 0;
    waitpid(prod, &pst, 0);
    kc_gm_log_t lg = {0};
    long distinct = 0, dups = 0;
    for (int i = 0; i < 150; i++) {
        load_all(&lg, N);
        count(&lg, NP, &distinct, &dups);
        if (distinct >= total)
            break;
        usleep(200 * 1000);
    }
    int64_t t_end = kc_gm_now_ns();
    int st_end = 0;
    for (int i = 6; i < N; i++) {
        st_end |= kc_gm_stop(m[i]);
        death[i] = kc_gm_now_ns();
    }
    load_all(&lg, N);
    count(&lg, NP, &distinct, &dups);
    kc_gm_sample_result_t r =
        kc_gm_sample(&lg, N, death, parts, NP, t_start, t_end, 5000000, INT64_MAX);
    char why[400] = "";
    long overlaps = kc_gm_overlaps(&lg, why, sizeof why);
    /* The longest pause of any partition (callbacks by anyone) while the producer ran. */
    int64_t max_gap = 0;
    int gap_p = -1;
    for (int p = 0; p < NP; p++) {
        int64_t prev = -1;
        for (int64_t t = t_start; t < t_end; t += 50000000) { /* 50 ms buckets */
            bool any = false;
            for (size_t i = 0; i < lg.n && !any; i++)
                any = lg.ev[i].kind == 'R' && lg.ev[i].partition == p && lg.ev[i].start >= t &&
                      lg.ev[i].start < t + 50000000;
            if (!any)
                continue;
            if (prev >= 0 && t - prev > max_gap) {
                max_gap = t - prev;
                gap_p = p;
            }
            prev = t;
        }
    }
    /* generations/epochs seen in the stats, by protocol */
    long classic_stats = 0, consumer_stats = 0;
    for (size_t i = 0; i < lg.n; i++)
        if (lg.ev[i].kind == 'S') {
            classic_stats += strstr(lg.ev[i].text, "\"protocol\":\"classic\"") != NULL;
            consumer_stats += strstr(lg.ev[i].text, "\"protocol\":\"consumer\"") != NULL;
        }
    long errs = errors_of(&lg);
    print_message(
        "# rolling classic -> consumer -> classic: %ld samples, max intersection %d, "
        "overlaps %ld; processed %ld of %ld, duplicates %ld; longest pause of a "
        "partition %.0f ms (partition %d); stats lines classic %ld consumer %ld; group type "
        "all-consumer '%s', back '%s'; producer rc %d; exits %d; errors %ld\n",
        r.samples, r.max_intersection, overlaps, distinct, total, dups, max_gap / 1e6, gap_p,
        classic_stats, consumer_stats, type_upgraded, type_back,
        WIFEXITED(pst) ? WEXITSTATUS(pst) : -1, st_end, errs);
    if (r.max_intersection)
        print_message("# first conflict: %s\n", r.first_conflict);
    if (overlaps)
        print_message("# first overlap: %s\n", why);
    assert_int_equal(distinct, total);
    assert_true(max_gap < 45000000000LL); /* never stopped longer than a session timeout */
    assert_int_equal(r.max_intersection, 0);
    assert_int_equal(overlaps, 0);
    assert_int_equal(st_end, 0);
    assert_true(consumer_stats > 0 && classic_stats > 0);
    assert_string_equal(type_upgraded, "Consumer"); /* converted once the last classic left */
    assert_string_equal(type_back, "Classic");      /* and back */
    kc_gm_free(&lg);
}

int main(int argc, char **argv)
{
    kc_gm_maybe_member(argc, argv);
    /* make test runs the cases that each show a different rule; KC_PROCS_SCALE=long (label
     * long, make test-long) adds the ones that repeat a rule with another assignor (range and
     * roundrobin are byte-checked against Java's in interop/assignors) and the rolling upgrade,
     * the longest at 70 s. */
    const struct CMUnitTest short_tests[] = {
        cmocka_unit_test(partitions_grow), cmocka_unit_test(static_restart),
        cmocka_unit_test(scaleout_coop), cmocka_unit_test(scaleout_eager),
        cmocka_unit_test_teardown(mixed_java_coop, java_teardown)};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(partitions_grow),
        cmocka_unit_test(static_restart),
        cmocka_unit_test(scaleout_coop),
        cmocka_unit_test(scaleout_eager),
        cmocka_unit_test(scaleout_roundrobin),
        cmocka_unit_test_teardown(mixed_java_range, java_teardown),
        cmocka_unit_test_teardown(mixed_java_roundrobin, java_teardown),
        cmocka_unit_test_teardown(mixed_java_coop, java_teardown),
        cmocka_unit_test(rolling_upgrade)};
    if (getenv("KC_TEST_FILTER")) /* one test while developing, e.g. KC_TEST_FILTER=static* */
        cmocka_set_test_filter(getenv("KC_TEST_FILTER"));
    const char *scale = getenv("KC_PROCS_SCALE");
    if ((scale && strcmp(scale, "long") == 0) || getenv("KC_TEST_FILTER"))
        return cmocka_run_group_tests(tests, NULL, NULL);
    return cmocka_run_group_tests(short_tests, NULL, NULL);
}
