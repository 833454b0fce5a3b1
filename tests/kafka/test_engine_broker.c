/* engine/fetch/session against a real broker, over a blocking socket (no network thread needed):
 * - the broker does NOT advance a session partition's fetch offset by itself: an incremental
 *   Fetch that leaves a consumed partition out is served the same records again. This is why
 *   session.c re-sends a partition whose position moved (as Java does);
 * - the engine's requests consume every record exactly once: open (0,0), then (S, epoch+1) with
 *   the consumed partition altered, then 0 entries while idle, and new records arrive;
 * - INVALID_FETCH_SESSION_EPOCH and FETCH_SESSION_ID_NOT_FOUND are recovered with a new session;
 * - close (S,-1) is accepted;
 * - an anonymous OffsetCommit (member "", generation -1) is accepted by a group with no members,
 *   retried on coordinator errors within a deadline, and OffsetFetch returns what it stored;
 *   once the group has a live member the same commit is refused and the error reaches us.
 * Needs KC_BOOTSTRAP, KC_TESTKIT and KC_CLUSTER_DIR (tests/run-suite sets them). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker_blocking.h"
#include "fetch/codec.h"
#include "offsets_codec.h"
#include "proto/kafka_errors.h"
#include "proto/proto.h"

#define FETCH_V    13
#define METADATA_V 12

/* Offsets carried by a records blob: first base offset and (last offset + 1), or -1/-1. */
static void batch_span(kc_bytes_t rec, int64_t *first, int64_t *next)
{
    *first = *next = -1;
    int32_t pos = 0;
    while (rec.len - pos >= 61) {
        const uint8_t *b = rec.ptr + pos;
        int64_t base = 0;
        for (int i = 0; i < 8; i++)
            base = base << 8 | b[i];
        int32_t blen =
            (int32_t)((uint32_t)b[8] << 24 | (uint32_t)b[9] << 16 | (uint32_t)b[10] << 8 | b[11]);
        int32_t delta =
            (int32_t)((uint32_t)b[23] << 24 | (uint32_t)b[24] << 16 | (uint32_t)b[25] << 8 | b[26]);
        if (blen <= 0 || pos + 12 + blen > rec.len)
            break; /* a partial batch at the end of the response */
        if (*first < 0)
            *first = base;
        *next = base + delta + 1;
        pos += 12 + blen;
    }
}

typedef struct fetched {
    int16_t top_error;
    int32_t session_id;
    int16_t part_error;
    int n_parts;
    int64_t first, next, hw;
} fetched_t;

static fetched_t do_fetch(int fd, const kc_session_req_t *req)
{
    kc_fetch_settings_t st = {300, 1, 1 << 20, 1, NULL};
    kc_arena_t a = {0};
    kc_error_t e;
    kc_fetch_request_t m;
    assert_int_equal(kc_fetch_codec_request(&m, req, FETCH_V, &st, NULL, &a, &e), KC_OK);
    uint8_t *frame;
    kc_rbuf_t r;
    kc_tb_exchange(fd, KC_FETCH_REQUEST_API_KEY, FETCH_V, &m,
                   (kc_tb_encode_fn)kc_fetch_request_encode, &frame, &r);
    kc_fetch_response_t resp;
    if (kc_fetch_response_decode(&resp, FETCH_V, &r, &a, &e) != KC_OK)
        fail_msg("FetchResponse: %s", e.msg);
    fetched_t f = {resp.error_code, resp.session_id, 0, 0, -1, -1, -1};
    kc_fetch_codec_iter_t it;
    kc_fetch_codec_iter_init(&it, &resp, FETCH_V, NULL);
    kc_fetch_part_result_t pr;
    while (kc_fetch_codec_next(&it, &pr)) {
        f.n_parts++;
        f.part_error = pr.error_code;
        f.hw = pr.high_watermark;
        batch_span(pr.records, &f.first, &f.next);
    }
    free(frame);
    kc_arena_free(&a);
    return f;
}

/* "host:port" of the partition's leader, from the last lookup(): on a 3-broker cluster the
 * bootstrap broker is often not the leader, and a Fetch must go to the leader. */
static char leader_addr[300];

static kc_session_part_t lookup(int fd, const char *topic)
{
    kc_metadata_request_t m;
    kc_metadata_request_init(&m);
    kc_metadata_request_topic_t t = {{{0}}, kc_str(topic)};
    m.topics.count = 1;
    m.topics.items = &t;
    uint8_t *frame;
    kc_rbuf_t r;
    kc_tb_exchange(fd, KC_METADATA_REQUEST_API_KEY, METADATA_V, &m,
                   (kc_tb_encode_fn)kc_metadata_request_encode, &frame, &r);
    kc_arena_t a = {0};
    kc_error_t e;
    kc_metadata_response_t resp;
    assert_int_equal(kc_metadata_response_decode(&resp, METADATA_V, &r, &a, &e), KC_OK);
    assert_int_equal(resp.topics.count, 1);
    assert_int_equal(resp.topics.items[0].error_code, 0);
    kc_session_part_t p;
    memset(&p, 0, sizeof p);
    memcpy(p.tp.topic_id, resp.topics.items[0].topic_id.b, 16);
    p.tp.partition = 0;
    p.leader_epoch = resp.topics.items[0].partitions.items[0].leader_epoch;
    p.log_start_offset = -1;
    p.max_bytes = 1 << 20;
    int32_t leader = resp.topics.items[0].partitions.items[0].leader_id;
    for (int32_t i = 0; i < resp.brokers.count; i++)
        if (resp.brokers.items[i].node_id == leader)
            snprintf(leader_addr, sizeof leader_addr, "%.*s:%d", resp.brokers.items[i].host.len,
                     (const char *)resp.brokers.items[i].host.ptr, resp.brokers.items[i].port);
    free(frame);
    kc_arena_free(&a);
    return p;
}

static void broker_needs_consumed_offsets_and_engine_sends_them(void **state)
{
    (void)state;
    int fd = kc_tb_connect(kc_test_env("KC_BOOTSTRAP"));
    assert_true(fd >= 0);
    char topic[64];
    snprintf(topic, sizeof topic, "kc-engine-session-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 1", topic);
    kc_test_cluster("produce %s --records 20 --size 100", topic);
    kc_session_part_t want = lookup(fd, topic);
    close(fd);
    fd = kc_tb_connect(leader_addr);
    assert_true(fd >= 0);

    /* 1. What the broker does with a consumed partition that is left out. */
    kc_session_req_t raw;
    memset(&raw, 0, sizeof raw);
    raw.full = 1;
    raw.parts = &want;
    raw.n_parts = 1;
    fetched_t f = do_fetch(fd, &raw);
    assert_int_equal(f.top_error, 0);
    assert_int_not_equal(f.session_id, 0);
    assert_int_equal(f.first, 0);
    assert_int_equal(f.next, 20);
    memset(&raw, 0, sizeof raw);
    raw.session_id = f.session_id;
    raw.epoch = 1; /* incremental, 0 entries: "the broker tracks it" — it does not */
    fetched_t again = do_fetch(fd, &raw);
    assert_int_equal(again.top_error, 0);
    assert_int_equal(again.n_parts, 1);
    assert_int_equal(again.first, 0); /* the same records, served a second time */

    /* 2. The engine's session: every record exactly once. */
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_req_t req;
    kc_error_t e;
    assert_int_equal(kc_session_build(&s, &want, 1, 0, &req, &e), KC_OK);
    assert_int_equal(req.epoch, 0);
    f = do_fetch(fd, &req);
    kc_session_resp_t sr = {f.top_error, f.session_id};
    assert_int_equal(kc_session_on_response(&s, &sr, 0), KC_SESSION_OK);
    assert_int_equal(f.first, 0);
    assert_int_equal(f.next, 20);
    want.fetch_offset = f.next; /* consumed */
    assert_int_equal(kc_session_build(&s, &want, 1, 0, &req, &e), KC_OK);
    assert_int_equal(req.epoch, 1);
    assert_int_equal(req.n_altered, 1);
    f = do_fetch(fd, &req);
    sr = (kc_session_resp_t){f.top_error, f.session_id};
    assert_int_equal(kc_session_on_response(&s, &sr, 0), KC_SESSION_OK);
    assert_int_equal(f.first, -1); /* nothing new, nothing repeated */
    assert_int_equal(kc_session_build(&s, &want, 1, 0, &req, &e), KC_OK);
    assert_int_equal(req.n_parts, 0); /* idle steady state: 0 entries */
    kc_test_cluster("produce %s --records 5 --size 100", topic);
    f = do_fetch(fd, &req);
    sr = (kc_session_resp_t){f.top_error, f.session_id};
    assert_int_equal(kc_session_on_response(&s, &sr, 0), KC_SESSION_OK);
    assert_int_equal(f.first, 20);
    assert_int_equal(f.next, 25);
    assert_int_equal(kc_session_stats(&s)->epoch, 3);

    /* 3. The broker's session errors, recovered without surfacing. An epoch the broker does
     * not expect (as after a lost answer): 71, then (S, 0) closes S and opens a new one. */
    int32_t first_id = kc_session_stats(&s)->session_id;
    want.fetch_offset = 25;
    s.epoch += 5;
    assert_int_equal(kc_session_build(&s, &want, 1, 0, &req, &e), KC_OK);
    f = do_fetch(fd, &req);
    assert_int_equal(f.top_error, KC_KAFKA_INVALID_FETCH_SESSION_EPOCH);
    sr = (kc_session_resp_t){f.top_error, f.session_id};
    assert_int_equal(kc_session_on_response(&s, &sr, 0), KC_SESSION_RESET);
    assert_int_equal(kc_session_build(&s, &want, 1, 0, &req, &e), KC_OK);
    assert_int_equal(req.session_id, first_id);
    assert_int_equal(req.epoch, 0);
    f = do_fetch(fd, &req);
    assert_int_equal(f.top_error, 0);
    assert_int_not_equal(f.session_id, 0);
    assert_int_not_equal(f.session_id, first_id);
    sr = (kc_session_resp_t){f.top_error, f.session_id};
    assert_int_equal(kc_session_on_response(&s, &sr, 0), KC_SESSION_OK);
    assert_int_equal(f.first, -1); /* position kept: nothing re-delivered */
    /* A session id the broker does not have (as after a restart or eviction): 70, then (0,0). */
    s.id = 0x7ffffff0;
    assert_int_equal(kc_session_build(&s, &want, 1, 0, &req, &e), KC_OK);
    f = do_fetch(fd, &req);
    assert_int_equal(f.top_error, KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND);
    sr = (kc_session_resp_t){f.top_error, f.session_id};
    assert_int_equal(kc_session_on_response(&s, &sr, 0), KC_SESSION_RESET);
    assert_int_equal(kc_session_build(&s, &want, 1, 0, &req, &e), KC_OK);
    assert_int_equal(req.session_id, 0);
    assert_int_equal(req.epoch, 0);
    f = do_fetch(fd, &req);
    sr = (kc_session_resp_t){f.top_error, f.session_id};
    assert_int_equal(kc_session_on_response(&s, &sr, 0), KC_SESSION_OK);
    assert_int_not_equal(kc_session_stats(&s)->session_id, 0);

    /* 4. Close. */
    assert_int_equal(kc_session_close(&s, &req, &e), KC_OK);
    f = do_fetch(fd, &req);
    assert_int_equal(f.top_error, 0);
    sr = (kc_session_resp_t){f.top_error, f.session_id};
    assert_int_equal(kc_session_on_response(&s, &sr, 0), KC_SESSION_CLOSED);
    kc_session_free(&s);
    close(fd);
}

/* The coordinator's "host:port" from the last successful find_coordinator(), "" before. */
static char coord_addr[300];

/* FindCoordinator v4 for a group; returns its error code and notes the coordinator's address
 * (on a 3-broker cluster it is usually not the bootstrap broker). */
static int16_t find_coordinator(int fd, const char *group)
{
    kc_find_coordinator_request_t m;
    kc_find_coordinator_request_init(&m);
    kc_str_t key = kc_str(group);
    m.key_type = 0;
    m.coordinator_keys.count = 1;
    m.coordinator_keys.items = &key;
    uint8_t *frame;
    kc_rbuf_t r;
    kc_tb_exchange(fd, KC_FIND_COORDINATOR_REQUEST_API_KEY, 4, &m,
                   (kc_tb_encode_fn)kc_find_coordinator_request_encode, &frame, &r);
    kc_arena_t a = {0};
    kc_error_t e;
    kc_find_coordinator_response_t resp;
    assert_int_equal(kc_find_coordinator_response_decode(&resp, 4, &r, &a, &e), KC_OK);
    assert_int_equal(resp.coordinators.count, 1);
    int16_t code = resp.coordinators.items[0].error_code;
    if (code == 0)
        snprintf(coord_addr, sizeof coord_addr, "%.*s:%d", resp.coordinators.items[0].host.len,
                 (const char *)resp.coordinators.items[0].host.ptr,
                 resp.coordinators.items[0].port);
    free(frame);
    kc_arena_free(&a);
    return code;
}

/* One OffsetCommit v9 of `req`; the classified result. */
static kc_offsets_result_t commit_once(int fd, const kc_commit_req_t *req)
{
    kc_arena_t a = {0};
    kc_error_t e;
    kc_offset_commit_request_t m;
    assert_int_equal(kc_offsets_codec_commit(&m, req, 9, &a, &e), KC_OK);
    uint8_t *frame;
    kc_rbuf_t r;
    kc_tb_exchange(fd, KC_OFFSET_COMMIT_REQUEST_API_KEY, 9, &m,
                   (kc_tb_encode_fn)kc_offset_commit_request_encode, &frame, &r);
    kc_offset_commit_response_t resp;
    assert_int_equal(kc_offset_commit_response_decode(&resp, 9, &r, &a, &e), KC_OK);
    kc_offsets_result_t res;
    assert_int_equal(kc_offsets_codec_commit_result(&resp, &a, &res, &e), KC_OK);
    free(frame);
    kc_arena_free(&a);
    return res;
}

static void anonymous_commit_then_offset_fetch(void **state)
{
    (void)state;
    int fd = kc_tb_connect(kc_test_env("KC_BOOTSTRAP"));
    assert_true(fd >= 0);
    char topic[64], group[64];
    snprintf(topic, sizeof topic, "kc-engine-commit-%d", (int)getpid());
    snprintf(group, sizeof group, "kc-engine-anon-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 2", topic);
    kc_commit_entry_t ents[2] = {{topic, {0}, 0, 17, -1, NULL}, {topic, {0}, 1, 29, -1, "meta"}};
    kc_commit_identity_t who;
    kc_error_t e;
    assert_int_equal(kc_offsets_identity_anonymous(&who, group, &e), KC_OK);
    kc_commit_req_t req;
    assert_int_equal(kc_offsets_build_commit(&req, &who, ents, 2, &e), KC_OK);

    /* One broker: it is the coordinator, but FindCoordinator is still what creates
     * __consumer_offsets on a fresh cluster, so rediscovery means asking it; until the topic is
     * loaded, COORDINATOR_NOT_AVAILABLE / LOAD_IN_PROGRESS come back and the deadline policy
     * asks again. */
    kc_retry_t retry;
    kc_retry_start(&retry, 0, 60000, 100, 1000, 7);
    /* Talk to the group's coordinator: FindCoordinator first (asked again below while the
     * coordinator is not available), then a connection to the broker it names. */
    int boot = fd;
    fd = -1;
    for (int i = 0; i < 600 && fd < 0; i++) {
        if (find_coordinator(boot, group) == 0)
            fd = kc_tb_connect(coord_addr);
        else
            usleep(100 * 1000);
    }
    assert_true(fd >= 0);
    int64_t now = 0;
    int attempts = 0;
    for (;;) {
        kc_offsets_result_t res = commit_once(fd, &req);
        attempts++;
        if (res.verdict == KC_OFFSETS_OK)
            break;
        if (res.verdict != KC_OFFSETS_REDISCOVER)
            fail_msg("anonymous commit refused: %s", kc_kafka_err_name(res.first_error));
        if (find_coordinator(boot, group) == 0) {
            close(fd);
            fd = kc_tb_connect(coord_addr);
            assert_true(fd >= 0);
        }
        int64_t at;
        if (kc_retry_next(&retry, now, &at, &e) != KC_OK)
            fail_msg("coordinator still unavailable: %s", e.msg);
        usleep((useconds_t)(at - now) * 1000);
        now = at;
    }
    printf("# anonymous commit accepted after %d attempt(s)\n", attempts);

    kc_offset_fetch_request_t fm;
    kc_offset_fetch_request_init(&fm);
    int32_t parts[2] = {0, 1};
    kc_offset_fetch_request_topics_t ft = {kc_str(topic), {{0}}, {2, parts}};
    kc_offset_fetch_request_group_t g = {kc_str(group), KC_STR_NULL, -1, {1, &ft}};
    fm.groups.count = 1;
    fm.groups.items = &g;
    uint8_t *frame;
    kc_rbuf_t r;
    kc_tb_exchange(fd, KC_OFFSET_FETCH_REQUEST_API_KEY, 9, &fm,
                   (kc_tb_encode_fn)kc_offset_fetch_request_encode, &frame, &r);
    kc_arena_t a = {0};
    kc_offset_fetch_response_t fr;
    assert_int_equal(kc_offset_fetch_response_decode(&fr, 9, &r, &a, &e), KC_OK);
    assert_int_equal(fr.groups.count, 1);
    assert_int_equal(fr.groups.items[0].error_code, 0);
    assert_int_equal(fr.groups.items[0].topics.count, 1);
    const kc_offset_fetch_response_topics_t *t = &fr.groups.items[0].topics.items[0];
    assert_int_equal(t->partitions.count, 2);
    for (int i = 0; i < 2; i++) {
        const kc_offset_fetch_response_partitions_t *p = &t->partitions.items[i];
        assert_int_equal(p->error_code, 0);
        assert_int_equal(p->committed_offset, p->partition_index == 0 ? 17 : 29);
    }
    free(frame);
    kc_arena_free(&a);

    /* A live member joins (Java's console consumer, classic protocol): from then on the
     * anonymous form is refused, and the refusal reaches the caller as FAIL with the code. */
    char pidfile[128], line[1024];
    snprintf(pidfile, sizeof pidfile, "%s/engine-consumer-%d.pid", kc_test_env("KC_CLUSTER_DIR"),
             (int)getpid());
    snprintf(
        line, sizeof line,
        "java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp \"$(%s classpath --dir %s)\" "
        "org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server %s --topic %s "
        "--group %s >/dev/null 2>&1 & echo $! > %s",
        kc_test_env("KC_TESTKIT"), kc_test_env("KC_CLUSTER_DIR"), kc_test_env("KC_BOOTSTRAP"),
        topic, group, pidfile);
    assert_int_equal(system(line), 0);
    FILE *pf = fopen(pidfile, "r");
    assert_non_null(pf);
    int pid = 0;
    assert_int_equal(fscanf(pf, "%d", &pid), 1);
    fclose(pf);
    kc_offsets_result_t res = {0};
    for (int i = 0; i < 120; i++) { /* the JVM starts and joins within seconds */
        res = commit_once(fd, &req);
        if (res.verdict == KC_OFFSETS_FAIL)
            break;
        usleep(500 * 1000);
    }
    snprintf(line, sizeof line, "kill %d", pid); /* only the consumer we started */
    if (system(line) != 0)
        printf("# consumer %d already gone\n", pid);
    unlink(pidfile);
    printf("# anonymous commit on a live group: %s\n", kc_kafka_err_name(res.first_error));
    assert_int_equal(res.verdict, KC_OFFSETS_FAIL);
    assert_int_not_equal(res.first_error, 0);
    assert_int_equal(res.n_failed, 2);
    close(fd);
    close(boot);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(broker_needs_consumed_offsets_and_engine_sends_them),
        cmocka_unit_test(anonymous_commit_then_offset_fetch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
