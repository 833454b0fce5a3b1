/* KIP-392 read replicas against a real cluster: its own 3 brokers, broker N in rack "rN"
 * (testkit --rack-per-broker), the leaders choosing read replicas with Kafka's
 * RackAwareReplicaSelector. A topic with 3 partitions, replication 3; the consumer's client.rack
 * is the rack of broker F, which leads the fewest of them (so it follows at least two).
 *  1. Every record is consumed exactly once, and every record byte comes from F: the leaders'
 *     first answers name F as the preferred read replica (with no records), the partitions move
 *     to F's fetch session (F's requests carry all 3), and each other broker's session forgets
 *     its partitions exactly once.
 *  2. F is killed and more records are produced: the partitions reading from F fall back to
 *     their leaders (the new ones, for those F led), and every record is still consumed exactly
 *     once, now from the surviving brokers.
 * Ports: KC_PORT_BASE + 300 when KC_PORT_BASE is set, else 24392. Needs KC_SOURCE_DIR.
 * No threads marker, like the other engine tests: the network thread is only reached through
 * kc_netthread_call, and a TSan re-run would boot a second 3-broker cluster. */
#include "kc_test.h"
#include "slice_tally.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "batch/batch.h"
#include "engine.h"
#include "netthread.h"

#define NP  3
#define NB  3
#define N1  3000
#define N2  1000
#define SEL "org.apache.kafka.common.replica.RackAwareReplicaSelector"

static char g_dir[64], g_bootstrap[512], g_topic[64];

static int group_up(void **st)
{
    (void)st;
    const char *pb = getenv("KC_PORT_BASE");
    int base = pb && *pb ? atoi(pb) + 300 : 24392;
    snprintf(g_dir, sizeof g_dir, "/tmp/kc-rack-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    /* Fenced within ~3 s of a kill (default 9 s), so phase 2 does not wait long for the dead
     * broker to leave the ISRs and its leaderships to move. */
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "'%s/tests/testkit/cluster' up --dir '%s' --brokers 3 --port-base %d "
             "--rack-per-broker --broker-config replica.selector.class=" SEL
             " --broker-config broker.session.timeout.ms=3000"
             " --broker-config broker.heartbeat.interval.ms=500",
             kc_test_env("KC_SOURCE_DIR"), g_dir, base);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "BOOTSTRAP=", 10))
            snprintf(g_bootstrap, sizeof g_bootstrap, "%s", line + 10);
    }
    int rc = pclose(f);
    print_message("# dedicated cluster in %s: %s (up exit %d)\n", g_dir, g_bootstrap, rc);
    return rc == 0 && g_bootstrap[0] ? 0 : -1;
}

static int group_down(void **st)
{
    (void)st;
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "'%s/tests/testkit/cluster' down --dir '%s' >/dev/null && rm -rf '%s'",
             kc_test_env("KC_SOURCE_DIR"), g_dir, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void cluster(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/tests/testkit/cluster' %s --dir '%s' >/dev/null",
             kc_test_env("KC_SOURCE_DIR"), args, g_dir);
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

/* ---- the consumer (network thread) -------------------------------------------------------- */

typedef kc_slice_tally_t pst_t;

static kc_netthread_t *nt;
static kc_engine_t *eng;
static pst_t ps[NP];
static int64_t n_errors;

static kc_err_t sink_records(void *opaque, void *user, const char *t, int32_t part, int32_t broker,
                             kc_slice_t *s, int64_t first, int64_t next)
{
    (void)opaque, (void)broker;
    if (!user) {
        kc_slice_release(s); /* the leader probe: not counted */
        return KC_OK;
    }
    kc_slice_tally_add(user, s, t, part, first, next);
    return KC_OK;
}

static void sink_error(void *opaque, void *user, const char *t, int32_t p, const kc_error_t *e)
{
    (void)opaque, (void)user;
    n_errors++;
    printf("# error %s[%d]: %s\n", t, p, e->msg);
}

enum { OP_NEW, OP_READ, OP_FREE };

typedef struct call {
    int op;
    const char *rack; /* OP_NEW: NULL = the leader probe (no rack, nothing counted) */
    /* OP_READ */
    int32_t leader[NP];
    int64_t records, dups, gaps, bad_batches, errors;
    kc_engine_broker_stats_t bs[NB + 1]; /* by broker id 1..3 */
    kc_engine_stats_t es;
} call_t;

static void on_net(kc_loop_t *loop, void *arg)
{
    call_t *c = arg;
    kc_error_t err;
    if (c->op == OP_NEW) {
        kc_engine_conf_t conf;
        kc_engine_conf_defaults(&conf);
        conf.bootstrap_servers = g_bootstrap;
        conf.client_rack = c->rack;
        conf.fetch_max_wait_ms = 200;
        conf.max_partition_fetch_bytes = 16384; /* many rounds, so the session path matters */
        kc_engine_sink_t sink = {sink_records, sink_error, NULL, NULL, NULL};
        if (kc_engine_new(&eng, loop, &conf, &sink, &err) != KC_OK)
            fail_msg("kc_engine_new: %s", err.msg);
        for (int p = 0; p < NP; p++)
            if (kc_engine_add(eng, g_topic, p, c->rack ? 0 : KC_ENGINE_START_LATEST,
                              c->rack ? &ps[p] : NULL, &err) != KC_OK)
                fail_msg("kc_engine_add: %s", err.msg);
    } else if (c->op == OP_READ) {
        for (int p = 0; p < NP; p++) {
            kc_engine_part_stats_t st;
            c->leader[p] = kc_engine_part_stats(eng, g_topic, p, &st, &err) == KC_OK ? st.leader_id
                                                                                     : KC_NO_BROKER;
            c->records += ps[p].records;
            c->dups += ps[p].dups;
            c->gaps += ps[p].gaps;
            c->bad_batches += ps[p].bad_batches;
        }
        c->errors = n_errors;
        kc_engine_broker_stats_t bs[8];
        size_t nb = kc_engine_broker_stats(eng, bs, 8);
        for (size_t i = 0; i < nb && i < 8; i++)
            if (bs[i].broker_id >= 1 && bs[i].broker_id <= NB)
                c->bs[bs[i].broker_id] = bs[i];
        kc_engine_stats(eng, &c->es);
    } else {
        kc_engine_close(eng, 2000);
        kc_engine_free(eng);
        eng = NULL;
    }
}

static call_t read_state(void)
{
    call_t c = {.op = OP_READ};
    kc_netthread_call(nt, on_net, &c);
    return c;
}

static call_t wait_records(int64_t want, int64_t timeout_ms)
{
    int64_t until = kc_now_ms() + timeout_ms;
    call_t c;
    do {
        usleep(100 * 1000);
        c = read_state();
    } while (c.records < want && kc_now_ms() < until);
    usleep(300 * 1000); /* anything beyond `want` (a duplicate) has a moment to show */
    return read_state();
}

static void print_brokers(const char *when, const call_t *c)
{
    for (int b = 1; b <= NB; b++)
        printf("# %s: broker %d: requests %" PRIu64 ", partitions sent %" PRIu64
               ", forgotten %" PRIu64 ", record bytes %" PRIu64 ", errors %" PRIu64 "\n",
               when, b, c->bs[b].fetch_requests, c->bs[b].fetch_partitions_sent,
               c->bs[b].fetch_forgotten_sent, c->bs[b].fetch_record_bytes, c->bs[b].fetch_errors);
}

static void reads_from_the_rack_replica_then_falls_back(void **state)
{
    (void)state;
    snprintf(g_topic, sizeof g_topic, "rack-%d", (int)getpid());
    char args[256];
    snprintf(args, sizeof args, "topic create %s --partitions %d --replication 3", g_topic, NP);
    cluster(args);
    snprintf(args, sizeof args, "produce %s --records %d --size 100 --keys 64", g_topic, N1);
    cluster(args);
    kc_error_t err;
    assert_int_equal(kc_netthread_start(&nt, KC_LOOP_AUTO, NULL, &err), KC_OK);

    /* Who leads what, from a probe consumer without a rack. */
    call_t c = {.op = OP_NEW, .rack = NULL};
    kc_netthread_call(nt, on_net, &c);
    int64_t until = kc_now_ms() + 20000;
    int known;
    do {
        usleep(50 * 1000);
        c = read_state();
        known = 1;
        for (int p = 0; p < NP; p++)
            known &= c.leader[p] >= 1 && c.leader[p] <= NB;
    } while (!known && kc_now_ms() < until);
    assert_true(known);
    int32_t leader[NP];
    int led[NB + 1] = {0};
    for (int p = 0; p < NP; p++)
        led[leader[p] = c.leader[p]]++;
    c.op = OP_FREE;
    kc_netthread_call(nt, on_net, &c);
    int f = 1;
    for (int b = 2; b <= NB; b++)
        if (led[b] < led[f])
            f = b;
    char rack[8];
    snprintf(rack, sizeof rack, "r%d", f);
    printf("# leaders %d %d %d; client.rack %s (broker %d leads %d)\n", leader[0], leader[1],
           leader[2], rack, f, led[f]);
    assert_true(led[f] < NP); /* F follows at least one partition */

    /* 1. Everything from F. */
    c = (call_t){.op = OP_NEW, .rack = rack};
    kc_netthread_call(nt, on_net, &c);
    c = wait_records(N1, 30000);
    print_brokers("phase 1", &c);
    assert_int_equal(c.records, N1);
    assert_int_equal(c.dups, 0);
    assert_int_equal(c.gaps, 0);
    assert_int_equal(c.bad_batches, 0);
    assert_int_equal(c.errors, 0);
    for (int b = 1; b <= NB; b++) {
        if (b == f) {
            assert_true(c.bs[b].fetch_record_bytes > 0);
            assert_true(c.bs[b].fetch_partitions_sent >= NP); /* all of them moved in */
            continue;
        }
        /* A leader other than F: asked once for its partitions, named F, forgot them once, and
         * handed over no record at all. */
        assert_int_equal(c.bs[b].fetch_record_bytes, 0);
        assert_int_equal(c.bs[b].fetch_partitions_sent, (uint64_t)led[b]);
        assert_int_equal(c.bs[b].fetch_forgotten_sent, (uint64_t)led[b]);
    }
    assert_int_equal(c.es.replica_fallbacks, 0);
    uint64_t bytes1[NB + 1];
    for (int b = 1; b <= NB; b++)
        bytes1[b] = c.bs[b].fetch_record_bytes;

    /* 2. F dies; the records produced now come from the survivors. */
    int64_t t0 = kc_now_ms();
    snprintf(args, sizeof args, "kill-broker %d", f);
    cluster(args);
    snprintf(args, sizeof args, "produce %s --records %d --size 100 --keys 64", g_topic, N2);
    cluster(args);
    c = wait_records(N1 + N2, 60000);
    printf("# phase 2: all records %" PRId64 " ms after the kill; replica fallbacks %" PRIu64
           ", dead replica passed over %" PRIu64 " times\n",
           kc_now_ms() - t0, c.es.replica_fallbacks, c.es.replica_avoided);
    print_brokers("phase 2", &c);
    c.op = OP_FREE;
    kc_netthread_call(nt, on_net, &c);
    kc_netthread_stop(nt);
    call_t fin = c;
    assert_int_equal(fin.records, N1 + N2);
    assert_int_equal(fin.dups, 0);
    assert_int_equal(fin.gaps, 0);
    assert_int_equal(fin.bad_batches, 0);
    assert_int_equal(fin.errors, 0);
    assert_true(fin.es.replica_fallbacks >= 1);
    /* Each partition leaves the dead follower once: while the leaders still name it (it is in
     * the ISR for a few seconds more) it is passed over, not tried again (the old code bounced
     * 8-10 times per run). */
    assert_true(fin.es.replica_fallbacks <= NP);
    uint64_t survivors = 0;
    for (int b = 1; b <= NB; b++)
        if (b != f)
            survivors += fin.bs[b].fetch_record_bytes - bytes1[b];
    assert_true(survivors > 0);
    assert_int_equal(fin.bs[f].fetch_record_bytes, bytes1[f]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_from_the_rack_replica_then_falls_back)};
    return cmocka_run_group_tests(tests, group_up, group_down);
}
