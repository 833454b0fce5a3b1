/* kc-test-label: threads-long */
/* KIP-848 acceptance with the public consumer, members as separate processes
 * (tests/support/g848_member: this binary re-executes itself as a member).
 *
 * group_churn: two topics, 12 partitions, a producer writing throughout; members 0 and 1 start,
 * 2 joins, 1 leaves gracefully, 3 joins, 0 is killed with -9. Asserted on the callback logs:
 *  - ownership (on_assign start .. on_revoke/on_lost end, or the kill) sampled every 5 ms: the
 *    pairwise intersection is always empty; once settled the union covers all 12;
 *  - no two members ran callbacks for the same partition in overlapping CLOCK_MONOTONIC intervals;
 *  - every produced record processed; duplicates only where member 0 (killed) processed first;
 *  - ConsumerGroupCommand --describe: both live members, 12 partitions, lag 0 after draining.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). kc-test-label: kafka */
#include "kc_test.h"

#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "g848_member.h"

#define NPT  6 /* partitions per topic */
#define RECS 1500

static char dir[256];

static void logpath(char *out, size_t cap, int m)
{
    snprintf(out, cap, "%s/member-%d.log", dir, m);
}

/* Distinct records processed (per partition offsets seen) and duplicates by first processor. */
typedef struct seen {
    int64_t *first_by; /* per offset: member+1 that processed it first, 0 none */
    int64_t cap;
} seen_t;

static void count_processed(const kc_gm_log_t *lg, char parts[][96], int nparts, seen_t *s,
                            long *distinct, long *dups, long *dups_not_killed, int killed)
{
    *distinct = *dups = *dups_not_killed = 0;
    for (int p = 0; p < nparts; p++)
        memset(s[p].first_by, 0, sizeof(int64_t) * (size_t)s[p].cap);
    for (size_t i = 0; i < lg->n; i++) {
        const kc_gm_ev_t *e = &lg->ev[i];
        if (e->kind != 'R')
            continue;
        char k[160];
        snprintf(k, sizeof k, "%s/%d", e->topic, (int)e->partition);
        int p = -1;
        for (int j = 0; j < nparts && p < 0; j++)
            if (strcmp(parts[j], k) == 0)
                p = j;
        if (p < 0)
            continue;
        for (int64_t o = e->first; o <= e->last && o < s[p].cap; o++) {
            if (!s[p].first_by[o]) {
                s[p].first_by[o] = e->member + 1;
                (*distinct)++;
            } else {
                (*dups)++;
                if (s[p].first_by[o] != killed + 1)
                    (*dups_not_killed)++;
            }
        }
    }
}

static long load_all(kc_gm_log_t *lg, int members)
{
    kc_gm_free(lg);
    for (int m = 0; m < members; m++) {
        char p[400];
        logpath(p, sizeof p, m);
        kc_gm_load(lg, p, m);
    }
    return (long)lg->n;
}

static void group_churn(void **state)
{
    (void)state;
    int pid = (int)getpid();
    snprintf(dir, sizeof dir, "%s", kc_test_tmpdir("g848-procs")); /* removed at exit */
    char cmd[1024], t1[64], t2[64], group[64], sub[160];
    snprintf(t1, sizeof t1, "kc-g848p-a-%d", pid);
    snprintf(t2, sizeof t2, "kc-g848p-b-%d", pid);
    snprintf(group, sizeof group, "kc-g848p-%d", pid);
    snprintf(sub, sizeof sub, "%s,%s", t1, t2);
    const char *topics[2] = {t1, t2};
    for (int t = 0; t < 2; t++) {
        snprintf(cmd, sizeof cmd, "topic create %s --partitions %d --replication 3", topics[t],
                 NPT);
        assert_int_equal(kc_gm_testkit(cmd), 0);
    }
    char parts[2 * NPT][96];
    for (int t = 0; t < 2; t++)
        for (int p = 0; p < NPT; p++)
            snprintf(parts[t * NPT + p], 96, "%s/%d", topics[t], p);

    /* The producer: 3 rounds per topic in the background, throughout the churn. */
    pid_t prod = fork();
    assert_true(prod >= 0);
    if (prod == 0) {
        for (int r = 0; r < 3; r++)
            for (int t = 0; t < 2; t++) {
                snprintf(cmd, sizeof cmd, "produce %s --records %d --size 64", topics[t], RECS);
                if (kc_gm_testkit(cmd) != 0)
                    _exit(1);
            }
        _exit(0);
    }
    int64_t t_start = kc_gm_now_ns();
    int64_t death[4] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    pid_t m[4];
    char lp[400];
    logpath(lp, sizeof lp, 0);
    m[0] = kc_gm_spawn(group, sub, lp, NULL);
    logpath(lp, sizeof lp, 1);
    m[1] = kc_gm_spawn(group, sub, lp, NULL);
    sleep(5);
    logpath(lp, sizeof lp, 2);
    m[2] = kc_gm_spawn(group, sub, lp, NULL); /* a join */
    sleep(4);
    int st1 = kc_gm_stop(m[1]); /* a graceful leave */
    death[1] = kc_gm_now_ns();
    logpath(lp, sizeof lp, 3);
    m[3] = kc_gm_spawn(group, sub, lp, NULL); /* another join */
    sleep(4);
    kc_gm_kill9(m[0]); /* its partitions move after the session timeout (6 s in the testkit) */
    death[0] = kc_gm_now_ns();
    int pst = 0;
    waitpid(prod, &pst, 0);
    assert_true(WIFEXITED(pst) && WEXITSTATUS(pst) == 0);
    int64_t t_produced = kc_gm_now_ns();

    /* Drain: every produced record processed by someone. */
    seen_t s[2 * NPT];
    for (int p = 0; p < 2 * NPT; p++) {
        s[p].cap = 4 * RECS;
        s[p].first_by = calloc((size_t)s[p].cap, sizeof(int64_t));
    }
    kc_gm_log_t lg = {0};
    long distinct = 0, dups = 0, dups_bad = 0;
    const long total = 3L * 2 * RECS;
    for (int i = 0; i < 300; i++) {
        load_all(&lg, 4);
        count_processed(&lg, parts, 2 * NPT, s, &distinct, &dups, &dups_bad, 0);
        /* ... and the killed member's partitions moved: session timeout (6 s) + margin. */
        if (distinct >= total && kc_gm_now_ns() > death[0] + 10000000000LL)
            break;
        usleep(200 * 1000);
    }
    int64_t t_drained = kc_gm_now_ns();
    sleep(2); /* auto-commit interval 500 ms: the positions reach the group */

    /* kafka-consumer-groups --describe while members 2 and 3 hold everything. */
    char out[400];
    snprintf(out, sizeof out, "%s/describe.txt", dir);
    snprintf(cmd, sizeof cmd,
             "%s tool ConsumerGroupCommand --bootstrap-server "
             "%s --describe --group %s --dir %s > %s 2>&1",
             kc_test_env("KC_TESTKIT"), kc_test_env("KC_BOOTSTRAP"), group,
             kc_test_env("KC_CLUSTER_DIR"), out);
    int drc = system(cmd);
    int rows = 0, lag0 = 0, with_member = 0;
    FILE *f = fopen(out, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        char g[128], t[128], cons[256];
        int p;
        char cur[32], end[32], lag[32];
        if (sscanf(line, "%127s %127s %d %31s %31s %31s %255s", g, t, &p, cur, end, lag, cons) ==
                7 &&
            strcmp(g, group) == 0) {
            rows++;
            /* "-" offsets: a partition the producer left empty, nothing to commit there */
            lag0 += strcmp(lag, "0") == 0 || (strcmp(lag, "-") == 0 && strcmp(end, "0") == 0);
            with_member += strcmp(cons, "-") != 0;
        }
    }
    if (f)
        fclose(f);

    int64_t t_end = kc_gm_now_ns();
    int st2 = kc_gm_stop(m[2]);
    death[2] = kc_gm_now_ns();
    int st3 = kc_gm_stop(m[3]);
    death[3] = kc_gm_now_ns();
    load_all(&lg, 4);
    count_processed(&lg, parts, 2 * NPT, s, &distinct, &dups, &dups_bad, 0);

    /* Settled: after the killed member's session ran out and its partitions moved (+ margin). */
    int64_t settle = death[0] + 10000000000LL;
    kc_gm_sample_result_t r =
        kc_gm_sample(&lg, 4, death, parts, 2 * NPT, t_start, t_end, 5000000, settle);
    char why[400] = "";
    long overlaps = kc_gm_overlaps(&lg, why, sizeof why);
    long errors = 0, callbacks = 0;
    for (size_t i = 0; i < lg.n; i++) {
        errors += lg.ev[i].kind == 'E';
        callbacks += lg.ev[i].kind == 'R';
        if (lg.ev[i].kind == 'E')
            print_message("# member %d error %ld: %s", lg.ev[i].member, lg.ev[i].code,
                          lg.ev[i].text);
    }
    print_message("# churn: %ld samples over %.1f s, max intersection %d, uncovered samples after "
                  "settle %ld; %ld record callbacks, %ld cross-member overlaps; processed %ld of "
                  "%ld, duplicates %ld (%ld not from the killed member); drained %.1f s after the "
                  "producer finished; describe rc %d: %d rows, %d lag 0, %d with a member; exit "
                  "codes %d %d %d\n",
                  r.samples, (t_drained - t_start) / 1e9, r.max_intersection,
                  r.uncovered_after_settle, callbacks, overlaps, distinct, total, dups, dups_bad,
                  (t_drained - t_produced) / 1e9, drc, rows, lag0, with_member, st1, st2, st3);
    if (r.max_intersection)
        print_message("# first conflict: %s\n", r.first_conflict);
    if (overlaps)
        print_message("# first overlap: %s\n", why);
    assert_true(r.samples > 1000);
    assert_true(t_end > settle + 1000000000LL); /* the union was checked for a while */
    assert_int_equal(r.max_intersection, 0);
    assert_int_equal(r.uncovered_after_settle, 0);
    assert_int_equal(overlaps, 0);
    assert_int_equal(distinct, total);
    assert_int_equal(dups_bad, 0);
    assert_int_equal(st1, 0);
    assert_int_equal(st2, 0);
    assert_int_equal(st3, 0);
    assert_int_equal(errors, 0);
    assert_int_equal(drc, 0);
    assert_int_equal(rows, 2 * NPT);
    assert_int_equal(lag0, 2 * NPT);
    assert_int_equal(with_member, 2 * NPT);
    for (int p = 0; p < 2 * NPT; p++)
        free(s[p].first_by);
    kc_gm_free(&lg);
}

int main(int argc, char **argv)
{
    kc_gm_maybe_member(argc, argv);
    const struct CMUnitTest tests[] = {cmocka_unit_test(group_churn)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
