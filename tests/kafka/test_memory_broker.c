/*
 * kc-memory-broker's protocol, seen with kconsume's codec over a raw socket: KIP-227 fetch
 * sessions (open, incremental, forgotten partitions, close, bad ids and epochs), fetch.max.bytes
 * and partition max bytes, max_wait, ListOffsets, and CRC-valid batches. Needs no cluster: the
 * test starts the broker itself.
 *
 * Owner: the test's main thread (the broker is a child process).
 */
#include "fault_proxy_client.h"
#include "kc_test.h"
#include "raw_client.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "batch/batch.h"
#include "proto/kafka_errors.h"

#define PARTS     4
#define RECORDS   1000
#define PER_BATCH 100

static pid_t g_pid;
static char g_bs[256];
static kc_uuid_t g_topic_id;

static int setup(void **state)
{
    (void)state;
    const char *args[] = {
        "--topic", "S",  "--partitions",  "4",    "--records", "1000", "--batch-records", "100",
        "--size",  "20", "--compression", "zstd", NULL};
    g_pid = kc_testkit_spawn("kc-memory-broker", args, g_bs, sizeof g_bs);
    return g_pid > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return kc_testkit_stop(g_pid); /* exit status 0 on SIGTERM */
}

typedef struct part_req {
    int32_t partition;
    int64_t offset;
    int32_t max_bytes;
} part_req_t;

static long g_elapsed_ms;

static kc_err_t fetch(kc_rc_t *c, int32_t sid, int32_t epoch, const part_req_t *ps, int n,
                      const int32_t *forget, int nf, int32_t max_bytes, int32_t max_wait,
                      kc_fetch_response_t *r)
{
    int16_t v = c->v.version[1];
    kc_fetch_request_t q;
    kc_fetch_request_init(&q);
    kc_fetch_request_fetch_partition_t fp[PARTS];
    for (int i = 0; i < n; i++)
        fp[i] = (kc_fetch_request_fetch_partition_t){.partition = ps[i].partition,
                                                     .current_leader_epoch = -1,
                                                     .fetch_offset = ps[i].offset,
                                                     .last_fetched_epoch = -1,
                                                     .log_start_offset = -1,
                                                     .partition_max_bytes = ps[i].max_bytes};
    kc_fetch_request_fetch_topic_t t = {.topic = kc_str("S"), .topic_id = g_topic_id};
    t.partitions.count = n;
    t.partitions.items = fp;
    kc_fetch_request_forgotten_topic_t ft = {.topic = kc_str("S"), .topic_id = g_topic_id};
    ft.partitions.count = nf;
    ft.partitions.items = (int32_t *)forget;
    q.replica_id = -1;
    q.max_wait_ms = max_wait;
    q.min_bytes = 1;
    q.max_bytes = max_bytes;
    q.session_id = sid;
    q.session_epoch = epoch;
    q.topics.count = n ? 1 : 0;
    q.topics.items = &t;
    q.forgotten_topics_data.count = nf ? 1 : 0;
    q.forgotten_topics_data.items = &ft;
    q.rack_id = kc_str("");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kc_rc_send(c, 1, v, &q);
    kc_err_t rc = kc_rc_recv(c, 1, v, r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    g_elapsed_ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    return rc;
}

static void open_client(kc_rc_t *c)
{
    kc_rc_open(c, g_bs);
    kc_metadata_request_t q;
    kc_metadata_request_init(&q);
    q.topics.count = -1;
    int16_t v = c->v.version[3];
    kc_rc_send(c, 3, v, &q);
    kc_metadata_response_t m;
    assert_int_equal(kc_rc_recv(c, 3, v, &m), KC_OK);
    assert_int_equal(m.brokers.count, 1);
    assert_int_equal(m.topics.count, 1);
    assert_int_equal(m.topics.items[0].partitions.count, PARTS);
    g_topic_id = m.topics.items[0].topic_id;
}

/* The partition entry for p in a response, or NULL. */
static const kc_fetch_response_partition_data_t *part(const kc_fetch_response_t *r, int32_t p)
{
    for (int32_t i = 0; i < r->responses.count; i++)
        for (int32_t j = 0; j < r->responses.items[i].partitions.count; j++)
            if (r->responses.items[i].partitions.items[j].partition_index == p)
                return &r->responses.items[i].partitions.items[j];
    return NULL;
}

static int n_parts(const kc_fetch_response_t *r)
{
    int n = 0;
    for (int32_t i = 0; i < r->responses.count; i++)
        n += r->responses.items[i].partitions.count;
    return n;
}

/* Verifies every batch's CRC; returns the number of batches, first base offset and last offset. */
static int batches(const kc_fetch_response_partition_data_t *d, int64_t *first, int64_t *last)
{
    kc_batch_splitter_t sp;
    kc_batch_splitter_init_bytes(&sp, d->records.ptr,
                                 (size_t)(d->records.len > 0 ? d->records.len : 0), "S",
                                 d->partition_index, true);
    kc_batch_t b;
    kc_error_t err;
    int n = 0;
    for (kc_err_t rc; (rc = kc_batch_next(&sp, &b, &err)) != KC_ERR_NOT_FOUND; n++) {
        if (rc != KC_OK)
            fail_msg("batch %d: %s", n, err.msg);
        if (n == 0)
            *first = b.h.base_offset;
        *last = kc_batch_last_offset(&b);
    }
    return n;
}

static void sessionless_full_fetch(void **state)
{
    (void)state;
    kc_rc_t c;
    open_client(&c);
    part_req_t ps[PARTS];
    for (int i = 0; i < PARTS; i++)
        ps[i] = (part_req_t){i, 0, 1 << 20};
    kc_fetch_response_t r;
    assert_int_equal(fetch(&c, 0, -1, ps, PARTS, NULL, 0, 64 << 20, 500, &r), KC_OK);
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.session_id, 0);
    assert_int_equal(n_parts(&r), PARTS);
    for (int p = 0; p < PARTS; p++) {
        const kc_fetch_response_partition_data_t *d = part(&r, p);
        assert_non_null(d);
        assert_int_equal(d->high_watermark, RECORDS);
        int64_t first = -1, last = -1;
        assert_int_equal(batches(d, &first, &last), RECORDS / PER_BATCH);
        assert_int_equal(first, 0);
        assert_int_equal(last, RECORDS - 1);
    }
    kc_rc_close(&c);
}

static void session_lifecycle(void **state)
{
    (void)state;
    kc_rc_t c;
    open_client(&c);
    kc_fetch_response_t r;
    int64_t first, last;
    /* (0, 0) opens a session: a full response, a new id. */
    part_req_t two[] = {{0, 0, 1 << 20}, {1, 0, 1 << 20}};
    assert_int_equal(fetch(&c, 0, 0, two, 2, NULL, 0, 64 << 20, 500, &r), KC_OK);
    int32_t sid = r.session_id;
    assert_true(sid > 0);
    assert_int_equal(n_parts(&r), 2);
    /* Epoch 1: both partitions move to the end; nothing changed for the client to learn, so
     * the response is empty and only comes after max_wait. */
    part_req_t at_end[] = {{0, RECORDS, 1 << 20}, {1, RECORDS, 1 << 20}};
    assert_int_equal(fetch(&c, sid, 1, at_end, 2, NULL, 0, 64 << 20, 300, &r), KC_OK);
    assert_int_equal(r.error_code, 0);
    assert_int_equal(r.session_id, sid);
    assert_int_equal(n_parts(&r), 0);
    assert_true(g_elapsed_ms >= 280);
    /* Epoch 2: partition 0 rewinds to 500; only it is in the answer, from batch 5 on. */
    part_req_t rewind[] = {{0, 500, 1 << 20}};
    assert_int_equal(fetch(&c, sid, 2, rewind, 1, NULL, 0, 64 << 20, 300, &r), KC_OK);
    assert_int_equal(n_parts(&r), 1);
    assert_non_null(part(&r, 0));
    assert_int_equal(batches(part(&r, 0), &first, &last), 5);
    assert_int_equal(first, 500);
    /* Epoch 3: forget partition 0, add partition 2 at 0. Epoch 4 asks nothing new: partition 0
     * (which still has data from 500) must not come back; partition 2 does. */
    int32_t forget0[] = {0};
    part_req_t add2[] = {{2, 0, 1 << 20}};
    assert_int_equal(fetch(&c, sid, 3, add2, 1, forget0, 1, 64 << 20, 300, &r), KC_OK);
    assert_null(part(&r, 0));
    assert_non_null(part(&r, 2));
    assert_int_equal(fetch(&c, sid, 4, NULL, 0, NULL, 0, 64 << 20, 300, &r), KC_OK);
    assert_null(part(&r, 0));
    assert_null(part(&r, 1));
    assert_non_null(part(&r, 2));
    /* Wrong epoch, unknown id, incremental without an id. */
    assert_int_equal(fetch(&c, sid, 99, NULL, 0, NULL, 0, 64 << 20, 0, &r), KC_OK);
    assert_int_equal(r.error_code, KC_KAFKA_INVALID_FETCH_SESSION_EPOCH);
    assert_int_equal(fetch(&c, sid + 1000, 1, NULL, 0, NULL, 0, 64 << 20, 0, &r), KC_OK);
    assert_int_equal(r.error_code, KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND);
    assert_int_equal(fetch(&c, 0, 1, NULL, 0, NULL, 0, 64 << 20, 0, &r), KC_OK);
    assert_int_equal(r.error_code, KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND);
    /* (id, -1) closes the session and fetches sessionless; the id is then unknown. */
    assert_int_equal(fetch(&c, sid, -1, two, 2, NULL, 0, 64 << 20, 0, &r), KC_OK);
    assert_int_equal(r.session_id, 0);
    assert_int_equal(n_parts(&r), 2);
    assert_int_equal(fetch(&c, sid, 5, NULL, 0, NULL, 0, 64 << 20, 0, &r), KC_OK);
    assert_int_equal(r.error_code, KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND);
    kc_rc_close(&c);
}

static void max_bytes_honoured(void **state)
{
    (void)state;
    kc_rc_t c;
    open_client(&c);
    kc_fetch_response_t r;
    int64_t first, last;
    part_req_t two[] = {{0, 0, 1 << 20}, {1, 0, 1 << 20}};
    /* fetch.max.bytes = 1: exactly one batch (KIP-74: the first batch always goes out). */
    assert_int_equal(fetch(&c, 0, -1, two, 2, NULL, 0, 1, 0, &r), KC_OK);
    int total = 0;
    for (int p = 0; p < 2; p++)
        total += part(&r, p) ? batches(part(&r, p), &first, &last) : 0;
    assert_int_equal(total, 1);
    /* Partition max bytes = 1 on both: one batch in all, again. */
    part_req_t small[] = {{0, 0, 1}, {1, 0, 1}};
    assert_int_equal(fetch(&c, 0, -1, small, 2, NULL, 0, 64 << 20, 0, &r), KC_OK);
    total = 0;
    for (int p = 0; p < 2; p++)
        total += part(&r, p) ? batches(part(&r, p), &first, &last) : 0;
    assert_int_equal(total, 1);
    /* Out of range → OFFSET_OUT_OF_RANGE. */
    part_req_t beyond[] = {{3, RECORDS + 1, 1 << 20}};
    assert_int_equal(fetch(&c, 0, -1, beyond, 1, NULL, 0, 64 << 20, 0, &r), KC_OK);
    assert_int_equal(part(&r, 3)->error_code, KC_KAFKA_OFFSET_OUT_OF_RANGE);
    kc_rc_close(&c);
}

static void list_offsets_earliest_latest(void **state)
{
    (void)state;
    kc_rc_t c;
    open_client(&c);
    int16_t v = c.v.version[2];
    kc_list_offsets_request_t q;
    kc_list_offsets_request_init(&q);
    kc_list_offsets_request_list_offsets_partition_t ps[2] = {
        {.partition_index = 0, .timestamp = -2}, {.partition_index = 1, .timestamp = -1}};
    kc_list_offsets_request_list_offsets_topic_t t = {.name = kc_str("S")};
    t.partitions.count = 2;
    t.partitions.items = ps;
    q.replica_id = -1;
    q.topics.count = 1;
    q.topics.items = &t;
    kc_rc_send(&c, 2, v, &q);
    kc_list_offsets_response_t r;
    assert_int_equal(kc_rc_recv(&c, 2, v, &r), KC_OK);
    assert_int_equal(r.topics.items[0].partitions.items[0].offset, 0);
    assert_int_equal(r.topics.items[0].partitions.items[1].offset, RECORDS);
    kc_rc_close(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sessionless_full_fetch),
        cmocka_unit_test(session_lifecycle),
        cmocka_unit_test(max_bytes_honoured),
        cmocka_unit_test(list_offsets_earliest_latest),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
