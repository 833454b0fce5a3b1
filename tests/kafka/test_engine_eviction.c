/* kc-test-label: background */
/* Fetch-session eviction: a separate 1-broker cluster with a small session cache, and more
 * consumers (engines) than it has slots. Kafka 4.1 splits max.incremental.fetch.session.cache.
 * slots over 8 shards and gives new sessions a shard round-robin, so slots=8 is one session per
 * shard (slots=1 would be zero: no sessions at all). Ten consumers: eight with one partition, then
 * (after the broker's 120 s eviction age) two with four, which evict smaller sessions (the broker
 * prefers bigger ones); more records are produced; the evicted get
 * FETCH_SESSION_ID_NOT_FOUND, reopen, and evict or are refused in turn (answered with session id
 * 0: sessionless). Consumption must still complete: every record of every assigned partition
 * exactly once per consumer, no error surfaced.
 * Needs KC_TESTKIT (tests/run-suite); boots and stops its own cluster. */
#include "kc_test.h"
#include "slice_tally.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "batch/batch.h"
#include "engine.h"
#include "netthread.h"

#define NCONS 10
#define NP    4
#define RECS  4000

static char dir[256], bootstrap[256], topic[64];
static bool cluster_is_up; /* main thread */
static const int nparts[NCONS] = {1, 1, 1, 1, 1, 1, 1, 1, 4, 4};

typedef kc_slice_tally_t pst_t;

typedef struct cons {
    kc_engine_t *e;
    pst_t ps[NP];
    int64_t errors;
} cons_t;

static cons_t cons[NCONS];
static kc_netthread_t *nt;

static kc_err_t sink_records(void *opaque, void *user, const char *t, int32_t part, int32_t broker,
                             kc_slice_t *s, int64_t first, int64_t next)
{
    (void)opaque, (void)broker;
    kc_slice_tally_add(user, s, t, part, first, next);
    return KC_OK;
}

static void sink_error(void *opaque, void *user, const char *t, int32_t p, const kc_error_t *e)
{
    (void)user;
    ((cons_t *)opaque)->errors++;
    printf("# error %s[%d]: %s\n", t, p, e->msg);
}

typedef struct call {
    int op, from, to;
    int64_t records[NCONS], want[NCONS], dups, gaps, bad_batches, errors;
    uint64_t resets, fallbacks, requests;
} call_t;

static void on_net(kc_loop_t *loop, void *arg)
{
    call_t *c = arg;
    kc_error_t err;
    for (int k = 0; k < NCONS; k++) {
        cons_t *cs = &cons[k];
        if (c->op == 0 && (k < c->from || k >= c->to))
            continue;
        if (c->op != 0 && !cs->e)
            continue;
        if (c->op == 3) {
            kc_engine_broker_stats_t bs[4];
            if (kc_engine_broker_stats(cs->e, bs, 4) >= 1 && bs[0].fetch_session_id > 0)
                c->resets++; /* here: consumers holding a session */
            continue;
        }
        if (c->op == 0) {
            kc_engine_conf_t conf;
            kc_engine_conf_defaults(&conf);
            conf.bootstrap_servers = bootstrap;
            conf.fetch_max_wait_ms = 100;
            conf.max_partition_fetch_bytes = 16384; /* many rounds, so sessions matter */
            kc_engine_sink_t sink = {sink_records, sink_error, NULL, cs};
            assert_int_equal(kc_engine_new(&cs->e, loop, &conf, &sink, &err), KC_OK);
            for (int j = 0; j < nparts[k]; j++) {
                int p = nparts[k] == 1 ? k % NP : j;
                assert_int_equal(kc_engine_add(cs->e, topic, p, 0, &cs->ps[p], &err), KC_OK);
            }
        } else if (c->op == 1) {
            kc_engine_broker_stats_t bs[4];
            size_t nb = kc_engine_broker_stats(cs->e, bs, 4);
            for (size_t i = 0; i < nb && i < 4; i++) {
                c->resets += bs[i].fetch_session_resets;
                c->fallbacks += bs[i].fetch_session_fallbacks;
                c->requests += bs[i].fetch_requests;
            }
            for (int p = 0; p < NP; p++) {
                kc_engine_part_stats_t st;
                if (kc_engine_part_stats(cs->e, topic, p, &st, &err) == KC_OK)
                    c->want[k] += st.high_watermark > 0 ? st.high_watermark : 0;
                c->records[k] += cs->ps[p].records;
                c->dups += cs->ps[p].dups;
                c->gaps += cs->ps[p].gaps;
                c->bad_batches += cs->ps[p].bad_batches;
            }
            c->errors += cs->errors;
        } else {
            kc_engine_close(cs->e, 2000);
            kc_engine_free(cs->e);
        }
    }
}

static int cluster_try(const char *args, char *out, size_t cap)
{
    return kc_test_cluster_in(dir, out, cap, "%s", args);
}

static void cluster(const char *args, char *out, size_t cap)
{
    if (cluster_try(args, out, cap) != 0)
        fail_msg("failed: cluster %s --dir %s", args, dir);
}

static void sessions_evicted_consumption_completes(void **state)
{
    (void)state;
    /* The cluster's data and logs: removed at exit, after `down` (here or in the teardown). */
    snprintf(dir, sizeof dir, "%s", kc_test_tmpdir("evict"));
    char args[512];
    /* Its own ports: a few bases, since `up` refuses ports someone else holds. */
    int up = -1;
    for (int attempt = 0; attempt < 4 && up != 0; attempt++) {
        int base = 30000 + (int)((getpid() + attempt * 97) % 900) * 10;
        snprintf(args, sizeof args,
                 "up --brokers 1 --port-base %d "
                 "--broker-config max.incremental.fetch.session.cache.slots=8",
                 base);
        up = cluster_try(args, bootstrap, sizeof bootstrap);
    }
    assert_int_equal(up, 0);
    cluster_is_up = true;
    assert_true(bootstrap[0] != '\0');
    snprintf(topic, sizeof topic, "evict-%d", (int)getpid());
    snprintf(args, sizeof args, "topic create %s --partitions %d", topic, NP);
    cluster(args, NULL, 0);
    snprintf(args, sizeof args, "produce %s --records %d --size 200 --keys 64 >/dev/null", topic,
             RECS);
    cluster(args, NULL, 0);

    kc_error_t err;
    assert_int_equal(kc_netthread_start(&nt, KC_LOOP_AUTO, NULL, &err), KC_OK);
    /* The eight small consumers take one shard each; then the two big ones arrive. */
    call_t c = {.op = 0, .from = 0, .to = 8};
    kc_netthread_call(nt, on_net, &c);
    int64_t until = kc_now_ms() + 30000;
    call_t h;
    do {
        usleep(50 * 1000);
        h = (call_t){.op = 3};
        kc_netthread_call(nt, on_net, &h);
    } while (h.resets < 8 && kc_now_ms() < until);
    printf("# small consumers holding a session: %" PRIu64 " of 8\n", h.resets);
    uint64_t small_sessions = h.resets; /* asserted after `down`: never leave a cluster up */
    /* A broker lets a new session evict another only once that one is older than its eviction
     * age (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, 120 s); a bigger session wins. */
    sleep(125);
    c = (call_t){.op = 0, .from = 8, .to = NCONS};
    kc_netthread_call(nt, on_net, &c);
    snprintf(args, sizeof args, "produce %s --records %d --size 200 --keys 64 >/dev/null", topic,
             RECS);
    cluster(args, NULL, 0); /* the evicted consumers must still get these */
    /* Expected per consumer: the records in its partitions (the key spreads them). */
    int64_t deadline = kc_now_ms() + 120000;
    call_t s;
    int done;
    do {
        usleep(200 * 1000);
        memset(&s, 0, sizeof s);
        s.op = 1;
        kc_netthread_call(nt, on_net, &s);
        done = 1;
        for (int k = 0; k < NCONS; k++)
            done &= s.records[k] == s.want[k];
        done &= s.records[NCONS - 1] == 2 * RECS;
    } while (!done && kc_now_ms() < deadline);
    sleep(1);
    memset(&s, 0, sizeof s);
    s.op = 1;
    kc_netthread_call(nt, on_net, &s);
    for (int k = 0; k < NCONS; k++)
        printf("# consumer %d: %" PRId64 " of %" PRId64 " records\n", k, s.records[k], s.want[k]);
    printf("# requests %" PRIu64 ", session resets (evicted) %" PRIu64
           ", sessionless answers %" PRIu64 "\n",
           s.requests, s.resets, s.fallbacks);
    /* The chaos figures line: every consumer's partitions, summed. */
    int64_t produced = 0, consumed = 0;
    for (int k = 0; k < NCONS; k++) {
        produced += s.want[k];
        consumed += s.records[k]; /* duplicates included */
    }
    int64_t lost = produced - (consumed - s.dups);
    printf("chaos: fetch_session_evict produced=%" PRId64 " consumed=%" PRId64 " dup=%" PRId64
           " lost=%" PRId64 " evicted=%" PRIu64 "\n",
           produced, consumed, s.dups, lost > 0 ? lost : 0, s.resets);
    c.op = 2;
    kc_netthread_call(nt, on_net, &c);
    kc_netthread_stop(nt);
    cluster("down", NULL, 0);
    cluster_is_up = false;

    assert_int_equal(small_sessions, 8);
    for (int k = 0; k < NCONS; k++) {
        assert_true(s.want[k] > 0);
        assert_int_equal(s.records[k], s.want[k]);
    }
    assert_int_equal(s.records[NCONS - 1], 2 * RECS);
    assert_int_equal(s.dups, 0);
    assert_int_equal(s.gaps, 0);
    assert_int_equal(s.bad_batches, 0);
    assert_int_equal(s.errors, 0);
    /* Eight slots for ten consumers: the big sessions evicted small ones, which were told
     * FETCH_SESSION_ID_NOT_FOUND and recovered without surfacing it. */
    assert_true(s.resets > 0);
}

/* A failed assertion leaves the test early: its brokers must not outlive it. */
static int teardown(void **state)
{
    (void)state;
    if (cluster_is_up)
        (void)cluster_try("down", NULL, 0);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(sessions_evicted_consumption_completes)};
    return cmocka_run_group_tests(tests, NULL, teardown);
}
