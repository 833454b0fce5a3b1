/*
 * kc-fault-proxy against a real cluster (KC_BOOTSTRAP): each rule does what it says, seen with
 * kconsume's own codec over a raw blocking socket, and with no rule armed the proxy is
 * transparent to kcat.
 *
 * Owner: the test's main thread (the proxy is a child process).
 */
#include "fault_proxy_client.h"
#include "raw_client.h"
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "batch/batch.h"
#include "proto/kafka_errors.h"
#include "proto/proto.h"

/* A fresh topic per run, so the record count is exact. */
static char g_topic[64];
#define TOPIC   g_topic
#define RECORDS 2000

static kc_fp_t *g_fp;
static char g_upstreams[1024];

static int16_t ver(kc_rc_t *c, int16_t key)
{
    assert_true(c->v.version[key] >= 0);
    return c->v.version[key];
}

static kc_err_t metadata(kc_rc_t *c, kc_metadata_response_t *r)
{
    kc_metadata_request_t q;
    kc_metadata_request_init(&q);
    q.topics.count = -1;
    kc_rc_send(c, KC_METADATA_REQUEST_API_KEY, ver(c, 3), &q);
    return kc_rc_recv(c, KC_METADATA_REQUEST_API_KEY, ver(c, 3), r);
}

static int16_t find_coordinator(kc_rc_t *c, int32_t *port)
{
    int16_t v = ver(c, 10);
    kc_find_coordinator_request_t q;
    kc_find_coordinator_request_init(&q);
    kc_str_t key = kc_str("kc-fp-group");
    q.key = key;
    q.coordinator_keys.count = 1;
    q.coordinator_keys.items = &key;
    kc_rc_send(c, 10, v, &q);
    kc_find_coordinator_response_t r;
    assert_int_equal(kc_rc_recv(c, 10, v, &r), KC_OK);
    if (v >= 4) {
        assert_int_equal(r.coordinators.count, 1);
        *port = r.coordinators.items[0].port;
        return r.coordinators.items[0].error_code;
    }
    *port = r.port;
    return r.error_code;
}

static bool is_proxy_port(int32_t port)
{
    char want[32];
    snprintf(want, sizeof want, ":%d", port);
    const char *bs = kc_fp_bootstrap(g_fp);
    for (const char *p = strstr(bs, want); p; p = strstr(p + 1, want))
        if (p[strlen(want)] == '\0' || p[strlen(want)] == ',')
            return true;
    return false;
}

/* ---- setup ------------------------------------------------------------------------------------
 */

/* Keyed produce (--keys 4): the default partitioner puts keys 0-3 on both partitions, 1000
 * records each, deterministically (unkeyed, the sticky partitioner may fill one partition). */
static int setup(void **state)
{
    (void)state;
    snprintf(g_upstreams, sizeof g_upstreams, "%s", kc_test_env("KC_BOOTSTRAP"));
    snprintf(g_topic, sizeof g_topic, "kc-fault-proxy-%ld-%d", (long)time(NULL), (int)getpid());
    const char *kit = kc_test_env("KC_TESTKIT"), *dir = kc_test_env("KC_CLUSTER_DIR");
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s' topic create %s --partitions 2 --dir '%s' >/dev/null 2>&1; "
             "'%s' produce %s --records %d --size 200 --compression lz4 --keys 4 --dir '%s' "
             ">/dev/null 2>&1",
             kit, TOPIC, dir, kit, TOPIC, RECORDS, dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot produce the test topic: %s\n", cmd);
        return -1;
    }
    g_fp = kc_fp_start(g_upstreams);
    return g_fp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return g_fp ? kc_fp_stop(g_fp) : 0; /* a clean SIGTERM exit is part of the contract */
}

static void clear_rules(void)
{
    char reply[256];
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "clear"), 0);
}

/* ---- tests -------------------------------------------------------------------------------------
 */

static void metadata_addresses_rewritten(void **state)
{
    (void)state;
    kc_rc_t c;
    kc_rc_open(&c, kc_fp_bootstrap(g_fp));
    kc_metadata_response_t r;
    assert_int_equal(metadata(&c, &r), KC_OK);
    assert_true(r.brokers.count >= 1);
    for (int32_t i = 0; i < r.brokers.count; i++) {
        assert_true(is_proxy_port(r.brokers.items[i].port));
        assert_int_equal(r.brokers.items[i].host.len, 9);
        assert_memory_equal(r.brokers.items[i].host.ptr, "127.0.0.1", 9);
    }
    kc_rc_close(&c);
    /* Straight to the broker, the same request names the broker's own port. */
    kc_rc_open(&c, g_upstreams);
    assert_int_equal(metadata(&c, &r), KC_OK);
    for (int32_t i = 0; i < r.brokers.count; i++)
        assert_false(is_proxy_port(r.brokers.items[i].port));
    kc_rc_close(&c);
}

static void find_coordinator_rewritten_and_injected(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    kc_rc_open(&c, kc_fp_bootstrap(g_fp));
    int32_t port = 0;
    /* On a fresh cluster the first lookup creates __consumer_offsets: COORDINATOR_NOT_AVAILABLE
     * until it is ready. */
    int16_t ec = KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
    for (int i = 0; i < 60 && ec == KC_KAFKA_COORDINATOR_NOT_AVAILABLE; i++)
        if ((ec = find_coordinator(&c, &port)) == KC_KAFKA_COORDINATOR_NOT_AVAILABLE)
            usleep(500 * 1000);
    assert_int_equal(ec, 0);
    assert_true(is_proxy_port(port));
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply,
                               "inject api=FindCoordinator error=NOT_COORDINATOR count=2"),
                     0);
    assert_int_equal(find_coordinator(&c, &port), KC_KAFKA_NOT_COORDINATOR);
    assert_int_equal(find_coordinator(&c, &port), KC_KAFKA_NOT_COORDINATOR);
    assert_int_equal(find_coordinator(&c, &port), 0); /* count=2 means two, not three */
    assert_true(is_proxy_port(port));
    kc_rc_close(&c);
}

static int16_t heartbeat(kc_rc_t *c)
{
    int16_t v = ver(c, 12);
    kc_heartbeat_request_t q;
    kc_heartbeat_request_init(&q);
    q.group_id = kc_str("kc-fp-group") /* same key as find_coordinator() */;
    q.generation_id = 1;
    q.member_id = kc_str("nobody");
    q.group_instance_id = KC_STR_NULL;
    kc_rc_send(c, 12, v, &q);
    kc_heartbeat_response_t r;
    assert_int_equal(kc_rc_recv(c, 12, v, &r), KC_OK);
    return r.error_code;
}

/* Opens c to the proxy listener of the coordinator of find_coordinator()'s group (one of three
 * brokers in run-suite's cluster). A young cluster answers COORDINATOR_NOT_AVAILABLE until
 * __consumer_offsets exists. */
static void open_coordinator(kc_rc_t *c)
{
    kc_rc_open(c, kc_fp_bootstrap(g_fp));
    int32_t port = 0;
    int16_t ec = KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
    for (int i = 0; i < 60 && ec == KC_KAFKA_COORDINATOR_NOT_AVAILABLE; i++)
        if ((ec = find_coordinator(c, &port)) == KC_KAFKA_COORDINATOR_NOT_AVAILABLE)
            usleep(500 * 1000);
    assert_int_equal(ec, 0);
    kc_rc_close(c);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    kc_rc_open(c, addr);
}

/* A standalone commit (generation -1, no member) of offset 1 for partitions 0 and 1; returns
 * the two partition error codes. */
static void offset_commit(kc_rc_t *c, int16_t *e0, int16_t *e1)
{
    int16_t v = ver(c, 8);
    kc_offset_commit_request_t q;
    kc_offset_commit_request_init(&q);
    kc_offset_commit_request_partition_t ps[2] = {{.partition_index = 0,
                                                   .committed_offset = 1,
                                                   .committed_leader_epoch = -1,
                                                   .committed_metadata = kc_str("")},
                                                  {.partition_index = 1,
                                                   .committed_offset = 1,
                                                   .committed_leader_epoch = -1,
                                                   .committed_metadata = kc_str("")}};
    kc_offset_commit_request_topic_t t = {.name = kc_str(TOPIC)};
    t.partitions.count = 2;
    t.partitions.items = ps;
    q.group_id = kc_str("kc-fp-group");
    q.generation_id_or_member_epoch = -1;
    q.member_id = kc_str("");
    q.group_instance_id = KC_STR_NULL;
    q.retention_time_ms = -1;
    q.topics.count = 1;
    q.topics.items = &t;
    kc_rc_send(c, 8, v, &q);
    kc_offset_commit_response_t r;
    assert_int_equal(kc_rc_recv(c, 8, v, &r), KC_OK);
    assert_int_equal(r.topics.count, 1);
    assert_int_equal(r.topics.items[0].partitions.count, 2);
    *e0 = *e1 = -2;
    for (int j = 0; j < 2; j++) {
        const kc_offset_commit_response_partition_t *p = &r.topics.items[0].partitions.items[j];
        *(p->partition_index == 0 ? e0 : e1) = p->error_code;
    }
}

static void offset_commit_injected_per_partition(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    open_coordinator(&c);
    int16_t e0, e1;
    offset_commit(&c, &e0, &e1);
    assert_int_equal(e0, 0);
    assert_int_equal(e1, 0);
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply,
                               "inject api=OffsetCommit error=NOT_COORDINATOR partition=1"),
                     0);
    offset_commit(&c, &e0, &e1);
    assert_int_equal(e0, 0);
    assert_int_equal(e1, KC_KAFKA_NOT_COORDINATOR);
    offset_commit(&c, &e0, &e1);
    assert_int_equal(e1, 0);
    kc_rc_close(&c);
}

/* COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: what a coordinator
 * answers while it is still being elected or loaded. */
static int transient_coordinator_error(int16_t code)
{
    return code == KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS ||
           code == KC_KAFKA_COORDINATOR_NOT_AVAILABLE || code == KC_KAFKA_NOT_COORDINATOR;
}

static void heartbeat_injected(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    open_coordinator(&c); /* heartbeats go to the group coordinator */
    /* The broker's own answer for an unknown member, once the coordinator has loaded (the
     * transient coordinator errors of a young cluster come first). */
    int16_t own = KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
    for (int i = 0; i < 60 && transient_coordinator_error(own); i++)
        if (transient_coordinator_error(own = heartbeat(&c)))
            usleep(500 * 1000);
    assert_int_not_equal(own, 0);
    assert_int_not_equal(own, KC_KAFKA_NOT_COORDINATOR);
    assert_int_equal(
        kc_fp_cmd(g_fp, reply, sizeof reply, "inject api=Heartbeat error=NOT_COORDINATOR count=2"),
        0);
    assert_int_equal(heartbeat(&c), KC_KAFKA_NOT_COORDINATOR);
    assert_int_equal(heartbeat(&c), KC_KAFKA_NOT_COORDINATOR);
    assert_int_equal(heartbeat(&c), own);
    assert_true(kc_fp_stat(g_fp, "fired.inject") >= 2);
    kc_rc_close(&c);
}

/* A Fetch of both partitions from offset 0, sessionless; returns the decoded response. */
static kc_err_t fetch(kc_rc_t *c, kc_fetch_response_t *r, const kc_uuid_t *topic_id)
{
    int16_t v = ver(c, 1);
    kc_fetch_request_t q;
    kc_fetch_request_init(&q);
    kc_fetch_request_fetch_partition_t parts[2];
    for (int i = 0; i < 2; i++) {
        memset(&parts[i], 0, sizeof parts[i]);
        parts[i].partition = i;
        parts[i].current_leader_epoch = -1;
        parts[i].last_fetched_epoch = -1;
        parts[i].log_start_offset = -1;
        parts[i].partition_max_bytes = 1 << 20;
    }
    kc_fetch_request_fetch_topic_t t = {.topic = kc_str(TOPIC), .topic_id = *topic_id};
    t.partitions.count = 2;
    t.partitions.items = parts;
    q.replica_id = -1;
    q.max_wait_ms = 100;
    q.min_bytes = 1;
    q.max_bytes = 4 << 20;
    q.session_id = 0;
    q.session_epoch = -1;
    q.topics.count = 1;
    q.topics.items = &t;
    q.forgotten_topics_data.count = 0;
    q.rack_id = kc_str("");
    kc_rc_send(c, 1, v, &q);
    return kc_rc_recv(c, 1, v, r);
}

/* Opens c to the proxy listener of partition 0's leader (a 3-broker cluster spreads leaders;
 * the rewritten Metadata names proxy ports) and returns the topic id. */
static kc_uuid_t open_leader0(kc_rc_t *c)
{
    kc_rc_open(c, kc_fp_bootstrap(g_fp));
    kc_metadata_response_t r;
    assert_int_equal(metadata(c, &r), KC_OK);
    char addr[64] = "";
    kc_uuid_t id = {0};
    for (int32_t i = 0; i < r.topics.count; i++) {
        const kc_metadata_response_topic_t *t = &r.topics.items[i];
        if (t->name.len != (int32_t)strlen(TOPIC) || memcmp(t->name.ptr, TOPIC, strlen(TOPIC)))
            continue;
        id = t->topic_id;
        for (int32_t j = 0; j < t->partitions.count; j++)
            for (int32_t b = 0; t->partitions.items[j].partition_index == 0 && b < r.brokers.count;
                 b++)
                if (r.brokers.items[b].node_id == t->partitions.items[j].leader_id)
                    snprintf(addr, sizeof addr, "127.0.0.1:%d", r.brokers.items[b].port);
    }
    assert_true(addr[0] != '\0');
    assert_true(is_proxy_port(atoi(strrchr(addr, ':') + 1)));
    kc_rc_close(c);
    kc_rc_open(c, addr);
    return id;
}

/* Counts batches by CRC verdict over every partition of a Fetch response. */
static void crc_verdicts(const kc_fetch_response_t *r, int *good, int *bad)
{
    *good = *bad = 0;
    for (int32_t i = 0; i < r->responses.count; i++)
        for (int32_t j = 0; j < r->responses.items[i].partitions.count; j++) {
            const kc_fetch_response_partition_data_t *d =
                &r->responses.items[i].partitions.items[j];
            /* Partition 1 may be led by another broker (NOT_LEADER_OR_FOLLOWER here). */
            if (d->partition_index == 0)
                assert_int_equal(d->error_code, 0);
            if (d->error_code != 0 || d->records.len <= 0)
                continue;
            kc_batch_splitter_t sp;
            kc_batch_splitter_init_bytes(&sp, d->records.ptr, (size_t)d->records.len, TOPIC,
                                         d->partition_index, true);
            kc_batch_t b;
            kc_error_t err;
            for (kc_err_t rc; (rc = kc_batch_next(&sp, &b, &err)) != KC_ERR_NOT_FOUND;) {
                if (rc == KC_OK)
                    (*good)++;
                else if (rc == KC_ERR_CRC)
                    (*bad)++;
                else
                    fail_msg("splitter: %s", err.msg);
                if (sp.stopped)
                    break;
            }
        }
}

static void fetch_corruption_fails_crc(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    kc_uuid_t id = open_leader0(&c);
    kc_fetch_response_t r;
    int good, bad;
    assert_int_equal(fetch(&c, &r, &id), KC_OK);
    crc_verdicts(&r, &good, &bad);
    assert_true(good > 0); /* control: through the idle proxy every batch verifies */
    assert_int_equal(bad, 0);
    int total = good;
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "corrupt api=Fetch count=1"), 0);
    assert_int_equal(fetch(&c, &r, &id), KC_OK);
    crc_verdicts(&r, &good, &bad);
    assert_int_equal(bad, 1);
    assert_int_equal(good, total - 1);
    assert_int_equal(kc_fp_stat(g_fp, "fired.corrupt"), 1);
    kc_rc_close(&c);
}

static void fetch_session_errors_injected(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    kc_uuid_t id = open_leader0(&c);
    kc_fetch_response_t r;
    static const int16_t codes[] = {KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND,
                                    KC_KAFKA_INVALID_FETCH_SESSION_EPOCH};
    static const char *names[] = {"FETCH_SESSION_ID_NOT_FOUND", "INVALID_FETCH_SESSION_EPOCH"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(
            kc_fp_cmd(g_fp, reply, sizeof reply, "inject api=Fetch error=%s", names[i]), 0);
        assert_int_equal(fetch(&c, &r, &id), KC_OK);
        assert_int_equal(r.error_code, codes[i]);
        assert_int_equal(r.responses.count, 0);
    }
    /* Per partition: only partition 1 carries the error, partition 0 still has its records. */
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply,
                               "inject api=Fetch error=KAFKA_STORAGE_ERROR partition=1"),
                     0);
    assert_int_equal(fetch(&c, &r, &id), KC_OK);
    assert_int_equal(r.error_code, 0);
    for (int32_t j = 0; j < r.responses.items[0].partitions.count; j++) {
        const kc_fetch_response_partition_data_t *d = &r.responses.items[0].partitions.items[j];
        /* KAFKA_STORAGE_ERROR is ours, not the broker's (which could say NOT_LEADER_OR_FOLLOWER
         * for 1). */
        assert_int_equal(d->error_code, d->partition_index == 1 ? KC_KAFKA_KAFKA_STORAGE_ERROR : 0);
        if (d->partition_index == 0)
            assert_true(d->records.len > 0);
    }
    assert_int_equal(fetch(&c, &r, &id), KC_OK);
    assert_int_equal(r.error_code, 0);
    kc_rc_close(&c);
}

static void truncate_closes_connection(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    kc_rc_open(&c, kc_fp_bootstrap(g_fp));
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "truncate api=Metadata"), 0);
    kc_metadata_response_t r;
    assert_int_equal(metadata(&c, &r), KC_ERR_TRANSPORT);
    uint8_t b;
    assert_int_equal(read(c.fd, &b, 1), 0); /* EOF: the proxy closed the connection */
    kc_rc_close(&c);
}

static void garbage_is_not_a_response(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    kc_rc_open(&c, kc_fp_bootstrap(g_fp));
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "garbage api=Metadata"), 0);
    kc_metadata_response_t r;
    assert_int_not_equal(metadata(&c, &r), KC_OK); /* random correlation id or body */
    kc_rc_close(&c);
}

static void close_after_bytes(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "close-after bytes=10"), 0);
    c = (kc_rc_t){.fd = kc_rc_connect(kc_fp_bootstrap(g_fp), 5000)};
    assert_true(c.fd >= 0);
    kc_metadata_request_t q;
    kc_metadata_request_init(&q);
    q.topics.count = -1;
    kc_rc_send(&c, 3, 1, &q);
    uint8_t buf[64];
    size_t got = 0;
    for (ssize_t n; (n = read(c.fd, buf + got, sizeof buf - got)) > 0;)
        got += (size_t)n;
    assert_int_equal(got, 10);
    kc_rc_close(&c);
}

static void blackhole_never_answers(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    kc_rc_open(&c, kc_fp_bootstrap(g_fp));
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "blackhole on"), 0);
    c.fd = (close(c.fd), kc_rc_connect(kc_fp_bootstrap(g_fp), 1500)); /* accepted... */
    assert_true(c.fd >= 0);
    kc_metadata_response_t r;
    assert_int_equal(metadata(&c, &r), KC_ERR_TRANSPORT); /* ...but no answer in 1.5 s */
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "blackhole off"), 0);
    kc_rc_close(&c);
    kc_rc_open(&c, kc_fp_bootstrap(g_fp));
    assert_int_equal(metadata(&c, &r), KC_OK);
    kc_rc_close(&c);
}

/* A partition that heals delivers what it held, in order: a request sent during it reaches the
 * broker afterwards, and an answer on its way when it began arrives afterwards. Nothing is cut
 * out of the stream, so a client sees only lateness, never a correlation id out of turn. */
static void blackhole_heals_in_order(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    kc_rc_open(&c, kc_fp_bootstrap(g_fp));
    struct timeval tv = {.tv_sec = 1, .tv_usec = 500000};
    setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    kc_metadata_request_t q;
    kc_metadata_request_init(&q);
    q.topics.count = -1;
    kc_metadata_response_t r;
    /* A request sent into the partition. */
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "blackhole on"), 0);
    kc_rc_send(&c, KC_METADATA_REQUEST_API_KEY, ver(&c, 3), &q);
    assert_int_equal(kc_rc_recv(&c, KC_METADATA_REQUEST_API_KEY, ver(&c, 3), &r),
                     KC_ERR_TRANSPORT); /* no answer while it lasts */
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "blackhole off"), 0);
    assert_int_equal(kc_rc_recv(&c, KC_METADATA_REQUEST_API_KEY, ver(&c, 3), &r), KC_OK);
    /* An answer on its way (delayed 500 ms in the proxy) when the partition begins. */
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "delay api=Metadata ms=500"), 0);
    kc_rc_send(&c, KC_METADATA_REQUEST_API_KEY, ver(&c, 3), &q);
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "blackhole on"), 0);
    assert_int_equal(kc_rc_recv(&c, KC_METADATA_REQUEST_API_KEY, ver(&c, 3), &r), KC_ERR_TRANSPORT);
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "blackhole off"), 0);
    assert_int_equal(kc_rc_recv(&c, KC_METADATA_REQUEST_API_KEY, ver(&c, 3), &r), KC_OK);
    /* And the connection goes on. */
    assert_int_equal(metadata(&c, &r), KC_OK);
    kc_rc_close(&c);
}

static void latency_delays(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    kc_rc_open(&c, kc_fp_bootstrap(g_fp));
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "latency ms=400"), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kc_metadata_response_t r;
    assert_int_equal(metadata(&c, &r), KC_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 400);
    kc_rc_close(&c);
}

static void bandwidth_paces(void **state)
{
    (void)state;
    kc_rc_t c;
    char reply[256];
    kc_uuid_t id = open_leader0(&c);
    kc_fetch_response_t r;
    assert_int_equal(fetch(&c, &r, &id), KC_OK);
    long bytes = 0;
    for (int32_t j = 0; j < r.responses.items[0].partitions.count; j++)
        bytes += r.responses.items[0].partitions.items[j].records.len;
    assert_true(bytes > 10000);
    /* Half the response's records bytes per second: the same response now takes >= 2 s
     * (allowing for 20% slack in the pacing). */
    assert_int_equal(kc_fp_cmd(g_fp, reply, sizeof reply, "bandwidth bytes_per_sec=%ld", bytes / 2),
                     0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(fetch(&c, &r, &id), KC_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 1600);
    long again = 0;
    for (int32_t j = 0; j < r.responses.items[0].partitions.count; j++)
        again += r.responses.items[0].partitions.items[j].records.len;
    assert_int_equal(again, bytes); /* paced, not altered */
    kc_rc_close(&c);
}

static void kcat_through_idle_proxy(void **state)
{
    (void)state;
    long before = kc_fp_stat(g_fp, "fired.inject") + kc_fp_stat(g_fp, "fired.corrupt");
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "timeout 60 kcat -b %s -C -t %s -e -o beginning -q -X check.crcs=true | wc -l",
             kc_fp_bootstrap(g_fp), TOPIC);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    long n = -1;
    assert_int_equal(fscanf(p, "%ld", &n), 1);
    pclose(p);
    assert_int_equal(n, RECORDS);
    assert_int_equal(kc_fp_stat(g_fp, "fired.inject") + kc_fp_stat(g_fp, "fired.corrupt"), before);
    assert_int_equal(kc_fp_stat(g_fp, "decode_failures"), 0);
}

#define T(f) cmocka_unit_test_teardown(f, clear_rules_td)
static int clear_rules_td(void **state)
{
    (void)state;
    clear_rules();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(metadata_addresses_rewritten),
        T(find_coordinator_rewritten_and_injected),
        T(heartbeat_injected),
        T(offset_commit_injected_per_partition),
        T(fetch_corruption_fails_crc),
        T(fetch_session_errors_injected),
        T(truncate_closes_connection),
        T(garbage_is_not_a_response),
        T(close_after_bytes),
        T(blackhole_never_answers),
        T(blackhole_heals_in_order),
        T(latency_delays),
        T(bandwidth_paces),
        T(kcat_through_idle_proxy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
