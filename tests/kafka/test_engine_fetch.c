/* The engine against the 3-broker testkit cluster, on a real network thread:
 * - 12 partitions over 2 topics on 3 brokers: the opening round is exactly 3 Fetch requests
 *   carrying 12 partition entries; while nothing changes, requests carry 0 entries (stats);
 * - every produced record is handed to the sink exactly once (offset bookkeeping per partition:
 *   no gap, no duplicate), CRCs verified by io/batch;
 * - unassigning a partition sends it in forgotten_topics_data exactly once;
 * - a topic's partition-count change is reported to the metadata listener;
 * - a broker killed mid-consumption (leaders move: replication 3) and restarted: consumption
 *   continues from the right offsets on the new leaders, the session is reopened silently, every
 *   record arrives exactly once, and no error reaches the sink;
 * - a partition's batches of one response reach the sink as one slice: a partition written by
 *   three producers in turn before it is assigned holds at least three batches, and its records
 *   come in fewer slices than that.
 * Needs KC_BOOTSTRAP, KC_TESTKIT, KC_CLUSTER_DIR (tests/run-suite). */
#include "kc_test.h"
#include "slice_tally.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "batch/batch.h"
#include "engine.h"
#include "netthread.h"

#define NT     2
#define NP     6
#define NPARTS (NT * NP)

static char topics[NT][64], span_topic[64];

typedef kc_slice_tally_t pstate_t;

typedef struct ctx {
    kc_netthread_t *nt;
    kc_engine_t *e;
    pstate_t ps[NPARTS];
    pstate_t span; /* span_topic's only partition */
    int64_t errors, crc_errors;
    int32_t md_topic_parts; /* last partition-count change reported for topics[1] */
    char last_error[256];
} ctx_t;

static ctx_t C;

static kc_err_t sink_records(void *opaque, void *user, const char *topic, int32_t partition,
                             int32_t broker, kc_slice_t *s, int64_t first, int64_t next)
{
    (void)opaque, (void)broker;
    pstate_t *ps = user;
    int64_t bad = ps->bad_batches;
    kc_slice_tally_add(ps, s, topic, partition, first, next);
    C.crc_errors += ps->bad_batches - bad;
    return KC_OK;
}

static void sink_error(void *opaque, void *user, const char *topic, int32_t partition,
                       const kc_error_t *e)
{
    (void)opaque, (void)user, (void)topic, (void)partition;
    C.errors++;
    snprintf(C.last_error, sizeof C.last_error, "%s", e->msg);
}

static void on_md_change(void *opaque, kc_engine_md_change_t what, const char *topic, int32_t value)
{
    (void)opaque;
    if (what == KC_ENGINE_MD_PARTITION_COUNT && strcmp(topic, topics[1]) == 0)
        C.md_topic_parts = value;
}

/* ---- calls on the network thread ---------------------------------------------------------- */

/* What a call does on the network thread. */
typedef enum { OP_NEW, OP_ADD_ALL, OP_ADD_SPAN, OP_REMOVE, OP_STATS, OP_CLOSE } op_t;

typedef struct call {
    op_t op;
    int topic, part;
    kc_err_t rc;
    kc_engine_broker_stats_t bs[8];
    size_t nb;
    kc_engine_stats_t es;
    int64_t records, dups, gaps, pos_lag;
} call_t;

static void on_net(kc_loop_t *loop, void *arg)
{
    call_t *c = arg;
    kc_error_t err;
    switch (c->op) {
    case OP_NEW: {
        kc_engine_conf_t conf;
        kc_engine_conf_defaults(&conf);
        conf.bootstrap_servers = kc_test_env("KC_BOOTSTRAP");
        conf.client_id = "kc-engine-fetch-test";
        conf.request_timeout_ms = 10000;
        conf.metadata_max_age_ms = 2000; /* so the partition-count change is seen quickly */
        kc_engine_sink_t sink = {sink_records, sink_error, NULL, &C};
        c->rc = kc_engine_new(&C.e, loop, &conf, &sink, &err);
        if (c->rc == KC_OK)
            kc_engine_on_metadata_change(C.e, on_md_change, NULL);
        break;
    }
    case OP_ADD_ALL: /* every partition in one network-thread turn: no request goes out between */
        for (int i = 0; i < NPARTS && c->rc == KC_OK; i++)
            c->rc = kc_engine_add(C.e, topics[i / NP], i % NP, 0, &C.ps[i], &err);
        break;
    case OP_ADD_SPAN:
        c->rc = kc_engine_add(C.e, span_topic, 0, 0, &C.span, &err);
        break;
    case OP_REMOVE:
        c->rc = kc_engine_remove(C.e, topics[c->topic], c->part, &err);
        break;
    case OP_STATS:
        c->nb = kc_engine_broker_stats(C.e, c->bs, 8);
        kc_engine_stats(C.e, &c->es);
        c->records = c->dups = c->gaps = c->pos_lag = 0;
        for (int i = 0; i < NPARTS; i++) {
            c->records += C.ps[i].records;
            c->dups += C.ps[i].dups;
            c->gaps += C.ps[i].gaps;
            kc_engine_part_stats_t st;
            if (kc_engine_part_stats(C.e, topics[i / NP], i % NP, &st, &err) == KC_OK &&
                st.high_watermark > st.position)
                c->pos_lag += st.high_watermark - st.position;
        }
        break;
    case OP_CLOSE:
        kc_engine_close(C.e, 5000);
        kc_engine_free(C.e);
        C.e = NULL;
        break;
    }
}

static call_t net(op_t op, int topic, int part)
{
    call_t c = {.op = op, .topic = topic, .part = part};
    kc_netthread_call(C.nt, on_net, &c);
    return c;
}

static uint64_t sum(const call_t *c, size_t off)
{
    uint64_t s = 0;
    for (size_t i = 0; i < c->nb; i++)
        s += *(const uint64_t *)((const char *)&c->bs[i] + off);
    return s;
}
#define SUM(c, f) sum(&(c), offsetof(kc_engine_broker_stats_t, f))

static void wait_records(int64_t want, int secs)
{
    int64_t deadline = kc_now_ms() + secs * 1000;
    call_t s;
    do {
        usleep(100 * 1000);
        s = net(OP_STATS, 0, 0);
    } while (s.records < want && kc_now_ms() < deadline);
    if (s.records != want || s.dups || s.gaps)
        fail_msg("consumed %" PRId64 " of %" PRId64 " (dups %" PRId64 ", gaps %" PRId64 ")",
                 s.records, want, s.dups, s.gaps);
}

static void test_engine_fetch(void **state)
{
    (void)state;
    kc_error_t err;
    unsigned tag = (unsigned)time(NULL) ^ (unsigned)getpid();
    for (int t = 0; t < NT; t++) {
        snprintf(topics[t], sizeof topics[t], "core-%c-%x", 'a' + t, tag);
        kc_test_cluster("topic create %s --partitions %d --replication 3", topics[t], NP);
    }
    assert_int_equal(kc_netthread_start(&C.nt, KC_LOOP_AUTO, NULL, &err), KC_OK);
    assert_int_equal(net(OP_NEW, 0, 0).rc, KC_OK);
    /* All at once: added one call at a time, a slow test thread let the first round leave with
     * the partitions added so far (seen under make test's load: 4 of 12). */
    assert_int_equal(net(OP_ADD_ALL, 0, 0).rc, KC_OK);

    /* Opening round: every broker has sent one request; the topics are empty, so the broker
     * holds each for fetch.max.wait.ms and nothing else can be sent meanwhile. */
    call_t s;
    int64_t deadline = kc_now_ms() + 30000;
    do {
        usleep(5 * 1000);
        s = net(OP_STATS, 0, 0);
    } while ((s.nb < 3 || s.bs[0].fetch_requests < 1 || s.bs[1].fetch_requests < 1 ||
              s.bs[2].fetch_requests < 1) &&
             kc_now_ms() < deadline);
    assert_int_equal(s.nb, 3);
    printf("opening round: %" PRIu64 " requests, %" PRIu64 " partition entries\n",
           SUM(s, fetch_requests), SUM(s, fetch_partitions_sent));
    assert_int_equal(SUM(s, fetch_requests), 3);
    assert_int_equal(SUM(s, fetch_partitions_sent), NPARTS);

    /* Idle: requests keep going, with 0 partition entries. */
    sleep(1);
    call_t a = net(OP_STATS, 0, 0);
    sleep(3);
    call_t b = net(OP_STATS, 0, 0);
    uint64_t dreq = SUM(b, fetch_requests) - SUM(a, fetch_requests);
    uint64_t dbytes = SUM(b, fetch_request_bytes) - SUM(a, fetch_request_bytes);
    printf("idle 3 s: %" PRIu64 " requests, %" PRIu64 " entries, %" PRIu64
           " forgotten, %.1f bytes/request\n",
           dreq, SUM(b, fetch_partitions_sent) - SUM(a, fetch_partitions_sent),
           SUM(b, fetch_forgotten_sent) - SUM(a, fetch_forgotten_sent),
           dreq ? (double)dbytes / (double)dreq : 0.0);
    assert_true(dreq >= 3);
    /* one in flight per broker, each held ~500 ms: at most 3 s / 0.5 s + 1 per broker */
    assert_true(dreq <= 3 * 8);
    assert_int_equal(SUM(b, fetch_partitions_sent), SUM(a, fetch_partitions_sent));
    /* (a partition may have left and re-entered a session before this window: a topic just
     * created can answer UNKNOWN_TOPIC_ID until every broker has its metadata) */
    assert_int_equal(SUM(b, fetch_forgotten_sent), SUM(a, fetch_forgotten_sent));
    for (size_t i = 0; i < b.nb; i++) {
        assert_true(b.bs[i].fetch_session_id != 0);
        assert_true(b.bs[i].fetch_session_epoch > 1);
        printf("broker %d: session %d epoch %d backend %s\n", b.bs[i].broker_id,
               b.bs[i].fetch_session_id, b.bs[i].fetch_session_epoch, b.bs[i].io_backend);
    }

    /* Consumption, exactly once. */
    kc_test_cluster("produce %s --records 3000 --size 100", topics[0]);
    kc_test_cluster("produce %s --records 2000 --size 100 --compression lz4", topics[1]);
    wait_records(5000, 60);

    /* Unassign one partition: forgotten exactly once. */
    call_t f0 = net(OP_STATS, 0, 0);
    assert_int_equal(net(OP_REMOVE, 1, NP - 1).rc, KC_OK);
    sleep(2);
    call_t f1 = net(OP_STATS, 0, 0);
    sleep(2);
    call_t f2 = net(OP_STATS, 0, 0);
    printf("unassign: forgotten entries %" PRIu64 " then %" PRIu64 "\n",
           SUM(f1, fetch_forgotten_sent) - SUM(f0, fetch_forgotten_sent),
           SUM(f2, fetch_forgotten_sent) - SUM(f0, fetch_forgotten_sent));
    assert_int_equal(SUM(f1, fetch_forgotten_sent) - SUM(f0, fetch_forgotten_sent), 1);
    assert_int_equal(SUM(f2, fetch_forgotten_sent) - SUM(f0, fetch_forgotten_sent), 1);
    int64_t removed = C.ps[NPARTS - 1].records;
    C.ps[NPARTS - 1].records = 0; /* no longer counted: it is not assigned */

    /* A broker dies mid-consumption: leaders move (replication 3), then it comes back. */
    kc_test_cluster("kill-broker 3");
    kc_test_cluster("produce %s --records 1500 --size 100", topics[0]);
    int64_t base = 5000 - removed;
    wait_records(base + 1500, 90);
    kc_test_cluster("start-broker 3");
    kc_test_cluster("produce %s --records 1500 --size 100", topics[0]);
    wait_records(base + 3000, 90);
    call_t r = net(OP_STATS, 0, 0);
    printf("restart: session resets %" PRIu64 ", fetch errors %" PRIu64
           ", metadata changes %" PRIu64 ", validations %" PRIu64 ", truncations %" PRIu64
           ", sink errors %" PRId64 "\n",
           SUM(r, fetch_session_resets), SUM(r, fetch_errors), r.es.metadata_changes,
           r.es.validations, r.es.truncations, C.errors);
    if (C.errors)
        fail_msg("an error reached the sink: %s", C.last_error);
    assert_int_equal(C.crc_errors, 0);
    assert_int_equal(r.es.truncations, 0);
    assert_true(r.es.metadata_changes > 0);

    /* A partition-count change reaches the metadata listener (metadata.max.age.ms = 2 s). */
    kc_test_cluster("topic alter %s --partitions %d", topics[1], NP + 2);
    for (int i = 0; i < 100; i++) {
        usleep(100 * 1000);
        net(OP_STATS, 0, 0); /* on the network thread: orders the read of md_topic_parts */
        if (C.md_topic_parts == NP + 2)
            break;
    }
    printf("partition count change reported: %d\n", C.md_topic_parts);
    assert_int_equal(C.md_topic_parts, NP + 2);

    /* One slice per partition and response: three producers in turn leave at least three
     * batches, all in the partition's first response once it is assigned. */
    snprintf(span_topic, sizeof span_topic, "core-s-%x", tag);
    kc_test_cluster("topic create %s --partitions 1 --replication 3", span_topic);
    for (int i = 0; i < 3; i++)
        kc_test_cluster("produce %s --records 100 --size 100", span_topic);
    assert_int_equal(net(OP_ADD_SPAN, 0, 0).rc, KC_OK);
    for (int i = 0; i < 300 && C.span.records < 300; i++) {
        usleep(100 * 1000);
        net(OP_STATS, 0, 0); /* on the network thread: orders the read of C.span */
    }
    printf("one partition's 300 records: %" PRId64 " batches in %" PRId64 " slice(s)\n",
           C.span.batches, C.span.slices);
    assert_int_equal(C.span.records, 300);
    assert_int_equal(C.span.dups + C.span.gaps + C.span.bad_batches, 0);
    assert_true(C.span.batches >= 3);
    assert_true(C.span.slices < C.span.batches);

    net(OP_CLOSE, 0, 0);
    kc_netthread_stop(C.nt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_engine_fetch)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
