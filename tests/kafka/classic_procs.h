/* Helpers shared by the classic-group process tests (test_group_classic_procs.c,
 * test_group_classic_faults.c): one topic and group per case under /tmp, kconsume members as
 * processes (tests/support/g848_member, KC_GM_CONF selects classic), their logs read back,
 * ownership from callbacks, a background producer, and a Java kafka-console-consumer member
 * with ConsumerGroupCommand --describe. Owner: the test's thread. */
#ifndef KC_TEST_CLASSIC_PROCS_H
#define KC_TEST_CLASSIC_PROCS_H

#include "kc_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "g848_member.h"

#define MAXP 8

static char dir[256], group[96], topic[64];
static char parts[MAXP][96];

static inline void setup(const char *name, int nparts)
{
    int pid = (int)getpid();
    char tag[96];
    snprintf(tag, sizeof tag, "gcl-procs-%s", name);
    snprintf(dir, sizeof dir, "%s", kc_test_tmpdir(tag)); /* members' logs; removed at exit */
    snprintf(topic, sizeof topic, "kc-gcl-%s-%d", name, pid);
    snprintf(group, sizeof group, "kc-gcl-%s-%d", name, pid);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "topic create %s --partitions %d --replication 3", topic, nparts);
    assert_int_equal(kc_gm_testkit(cmd), 0);
    for (int p = 0; p < nparts; p++)
        snprintf(parts[p], sizeof parts[p], "%s/%d", topic, p);
}

static inline void logpath(char *out, size_t cap, int m)
{
    snprintf(out, cap, "%s/member-%d.log", dir, m);
}

static inline pid_t spawn(int m, const char *conf, const char *instance)
{
    char lp[400];
    logpath(lp, sizeof lp, m);
    setenv("KC_GM_CONF", conf, 1);
    return kc_gm_spawn(group, topic, lp, instance);
}

static inline void load_all(kc_gm_log_t *lg, int members)
{
    kc_gm_free(lg);
    for (int m = 0; m < members; m++) {
        char p[400];
        logpath(p, sizeof p, m);
        kc_gm_load(lg, p, m);
    }
}

/* A steady producer in the background: one JVM, `n` records at `rate`/s, round-robin over every
 * partition. Its jars are the testkit's default Kafka (a --dir without a cluster), whatever the
 * cluster runs: before Kafka 3.8 RoundRobinPartitioner skips a partition at each new batch, so
 * half the partitions get no records and a test of who keeps consuming during a rebalance would
 * measure the producer (the compatibility suite runs these tests against older brokers). */
static inline pid_t produce_bg(long n, int rate)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char cmd[1400];
        snprintf(cmd, sizeof cmd,
                 "%s tool ProducerPerformance --topic %s --num-records %ld "
                 "--record-size 64 --throughput %d --producer-props bootstrap.servers=%s acks=all "
                 "linger.ms=5 partitioner.class=org.apache.kafka.clients.producer."
                 "RoundRobinPartitioner --dir %s/no-cluster > %s/produce.log 2>&1",
                 kc_test_env("KC_TESTKIT"), topic, n, rate, kc_test_env("KC_BOOTSTRAP"), dir, dir);
        _exit(system(cmd) == 0 ? 0 : 1);
    }
    return pid;
}

/* Distinct (partition, offset) processed and duplicates. */
static inline void count(const kc_gm_log_t *lg, int nparts, long *distinct, long *dups)
{
    static uint8_t seen[MAXP][1 << 16];
    memset(seen, 0, sizeof seen);
    *distinct = *dups = 0;
    for (size_t i = 0; i < lg->n; i++) {
        const kc_gm_ev_t *e = &lg->ev[i];
        if (e->kind != 'R' || strcmp(e->topic, topic) != 0 || e->partition >= nparts)
            continue;
        for (int64_t o = e->first; o <= e->last && o < (1 << 16); o++) {
            if (seen[e->partition][o]++)
                (*dups)++;
            else
                (*distinct)++;
        }
    }
}

/* Does member m own partition p at time t (last A vs V/L before t)? */
static inline bool owns(const kc_gm_log_t *lg, int m, int p, int64_t t)
{
    bool own = false;
    for (size_t i = 0; i < lg->n; i++) {
        const kc_gm_ev_t *e = &lg->ev[i];
        if (e->member != m || e->partition != p || e->start > t || strcmp(e->topic, topic) != 0)
            continue;
        if (e->kind == 'A')
            own = true;
        else if (e->kind == 'V' || e->kind == 'L')
            own = false;
    }
    return own;
}

static inline int64_t first_event(const kc_gm_log_t *lg, int m, char kind, int64_t after)
{
    int64_t best = INT64_MAX;
    for (size_t i = 0; i < lg->n; i++)
        if (lg->ev[i].member == m && lg->ev[i].kind == kind && lg->ev[i].start >= after &&
            lg->ev[i].start < best)
            best = lg->ev[i].start;
    return best;
}

static inline long errors_of(const kc_gm_log_t *lg)
{
    long n = 0;
    for (size_t i = 0; i < lg->n; i++)
        if (lg->ev[i].kind == 'E') {
            n++;
            print_message("# member %d error %ld: %s\n", lg->ev[i].member, lg->ev[i].code,
                          lg->ev[i].text);
        }
    return n;
}

/* The last stats line of member m: its JSON, or "" */
static inline const char *last_stats(const kc_gm_log_t *lg, int m)
{
    const char *s = "";
    for (size_t i = 0; i < lg->n; i++)
        if (lg->ev[i].member == m && lg->ev[i].kind == 'S')
            s = lg->ev[i].text;
    return s;
}

/* For a failed case: each member's last group stats, its error and exit lines, and the end of
 * what it wrote to stderr (its log lines), so that a failure seen once can be read afterwards. */
static inline void dump_members(const kc_gm_log_t *lg, int members)
{
    for (int m = 0; m < members; m++) {
        print_message("# member %d: last group stats %s\n", m, last_stats(lg, m));
        for (size_t i = 0; i < lg->n; i++)
            if (lg->ev[i].member == m && (lg->ev[i].kind == 'E' || lg->ev[i].kind == 'X'))
                print_message("# member %d: %c %ld %s\n", m, lg->ev[i].kind, lg->ev[i].code,
                              lg->ev[i].text);
        char cmd[600];
        snprintf(cmd, sizeof cmd,
                 "tail -n 25 %s/member-%d.log.err | sed 's/^/# member %d stderr: /'", dir, m, m);
        if (system(cmd) != 0)
            print_message("# member %d: no stderr file\n", m);
    }
}

static inline int json_int(const char *js, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(js, k);
    return p ? atoi(p + strlen(k)) : -1000;
}

/* ---- a Java member (kafka-console-consumer, classic) ------------------------------------------
 */

static pid_t g_java = -1; /* the Java member, killed by the teardown if an assert skipped it */

static inline pid_t java_member(const char *cls, int n)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setsid(); /* its own process group: the JVM under the testkit script goes with it */
        char cmd[1600];
        snprintf(cmd, sizeof cmd,
                 "exec %s tool ConsoleConsumer --bootstrap-server "
                 "%s --topic %s --group %s --consumer-property group.protocol=classic "
                 "--consumer-property partition.assignment.strategy=org.apache.kafka.clients."
                 "consumer.%s --consumer-property auto.offset.reset=earliest --property "
                 "print.partition=true --property print.offset=true --dir %s > %s/java-%d.out "
                 "2>&1",
                 kc_test_env("KC_TESTKIT"), kc_test_env("KC_BOOTSTRAP"), topic, group, cls,
                 kc_test_env("KC_CLUSTER_DIR"), dir, n);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    g_java = pid;
    return pid;
}

static inline void java_stop(pid_t pid)
{
    kill(-pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    g_java = -1;
}

static inline int java_teardown(void **state)
{
    (void)state;
    if (g_java > 0)
        java_stop(g_java);
    return 0;
}

/* ConsumerGroupCommand --describe: per partition the owner's consumer id. Returns the number of
 * partition rows with an owner; distinct owners in *owners; `kc_parts` gets how many rows name
 * `kc_member`. */
static inline int describe(int np, int *owners, const char *kc_member, int *kc_parts)
{
    char out[400], cmd[1400];
    snprintf(out, sizeof out, "%s/describe.txt", dir);
    snprintf(cmd, sizeof cmd,
             "%s tool ConsumerGroupCommand --bootstrap-server "
             "%s --describe --group %s --dir %s > %s 2>&1",
             kc_test_env("KC_TESTKIT"), kc_test_env("KC_BOOTSTRAP"), group,
             kc_test_env("KC_CLUSTER_DIR"), out);
    if (system(cmd) != 0)
        return -1;
    FILE *f = fopen(out, "r");
    char line[1024], ids[MAXP][256];
    int rows = 0, n_ids = 0, seen[MAXP] = {0};
    *kc_parts = 0;
    while (f && fgets(line, sizeof line, f)) {
        char g[128], t[128], cons[256], cur[32], end[32], lag[32];
        int p;
        if (sscanf(line, "%127s %127s %d %31s %31s %31s %255s", g, t, &p, cur, end, lag, cons) !=
                7 ||
            strcmp(g, group) != 0 || p < 0 || p >= np || strcmp(cons, "-") == 0)
            continue;
        seen[p]++;
        rows++;
        *kc_parts += strcmp(cons, kc_member) == 0;
        bool known = false;
        for (int i = 0; i < n_ids; i++)
            known = known || strcmp(ids[i], cons) == 0;
        if (!known && n_ids < MAXP)
            snprintf(ids[n_ids++], 256, "%s", cons);
    }
    if (f)
        fclose(f);
    for (int p = 0; p < np; p++)
        if (seen[p] != 1)
            return -2;
    *owners = n_ids;
    return rows;
}

/* kconsume's member id and the number of partitions its stats say it owns. */
static inline void kc_view(const kc_gm_log_t *lg, int m, char *id, size_t cap, int *nparts)
{
    const char *s = last_stats(lg, m);
    const char *p = strstr(s, "\"member_id\":\"");
    *id = 0;
    if (p) {
        p += 13;
        size_t n = strcspn(p, "\"");
        snprintf(id, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    }
    *nparts = 0;
    const char *a = strstr(s, "\"assignment\":[");
    const char *end = a ? strstr(a, "],\"rebalances\"") : NULL;
    for (const char *q = a ? a + 14 : NULL; q && q < end; q++)
        *nparts += *q == '['; /* one pair ["topic",p] per owned partition */
}

#endif
