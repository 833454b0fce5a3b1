/* Hostile-input and protocol-rule tests for the generated codec: array-count bounds, error
 * paths, unknown tags, header versions, negotiation, consumer-protocol version prefix.
 * Single-threaded test. */
#include "kc_test.h"

#include <stdlib.h>
#include <string.h>

#include "proto/kafka_errors.h"
#include "proto/proto.h"

/* A byte builder on top of the encoder primitives (only for writing test input). */
typedef struct {
    kc_wbuf_t w;
    kc_enc_t e;
} bld_t;

static void bld_init(bld_t *b)
{
    memset(b, 0, sizeof *b);
    b->e.w = &b->w;
    b->e.what = "test";
}

/* Copies the built bytes to a heap block of exactly that size, so ASan sees any overread. */
static uint8_t *bld_exact(bld_t *b)
{
    uint8_t *p = malloc(b->w.len ? b->w.len : 1);
    memcpy(p, b->w.data, b->w.len);
    return p;
}

static void test_huge_array_count_is_refused_without_allocation(void **state)
{
    (void)state;
    /* FetchResponse v4 (non-flexible): throttle, then responses claiming 2^31-1 elements in a
     * 100-byte frame. */
    bld_t b;
    bld_init(&b);
    kc_wire_put_i32(&b.e, 0);
    kc_wire_put_i32(&b.e, INT32_MAX);
    while (b.w.len < 100)
        kc_wire_put_i8(&b.e, 0);
    uint8_t *frame = bld_exact(&b);
    kc_rbuf_t r = kc_rbuf(frame, b.w.len);
    kc_arena_t a = {0};
    kc_error_t err;
    kc_fetch_response_t m;
    assert_int_equal(kc_fetch_response_decode(&m, 4, &r, &a, &err), KC_ERR_MALFORMED);
    assert_non_null(strstr(err.msg, "FetchResponse v4: responses: array of 2147483647"));
    assert_int_equal(a.total, 0);
    assert_null(a.head);
    free(frame);
    kc_wbuf_free(&b.w);

    /* MetadataResponse v12 (flexible): compact count 2^32-2 for brokers. */
    bld_init(&b);
    kc_wire_put_i32(&b.e, 0);
    kc_wire_put_uvarint(&b.e, UINT32_MAX);
    while (b.w.len < 100)
        kc_wire_put_i8(&b.e, 1);
    frame = bld_exact(&b);
    r = kc_rbuf(frame, b.w.len);
    kc_metadata_response_t mm;
    assert_int_equal(kc_metadata_response_decode(&mm, 12, &r, &a, &err), KC_ERR_MALFORMED);
    assert_non_null(strstr(err.msg, "MetadataResponse v12: brokers:"));
    assert_null(a.head);
    free(frame);
    kc_wbuf_free(&b.w);

    /* A claimed array of int64 must fit 8 bytes per element: 13 elements in 100 bytes fail. */
    bld_init(&b);
    kc_wire_put_uvarint(&b.e, 14); /* 13 elements */
    while (b.w.len < 100)
        kc_wire_put_i8(&b.e, 0);
    frame = bld_exact(&b);
    r = kc_rbuf(frame, b.w.len);
    kc_dec_t d = {&r, &a, &err, "X", 0, true, 0, {{0}}};
    int32_t n;
    assert_int_equal(kc_wire_get_array_len(&d, "f", &n, true, false, 8), KC_ERR_MALFORMED);
    r = kc_rbuf(frame, b.w.len);
    assert_int_equal(kc_wire_get_array_len(&d, "f", &n, true, false, 7), KC_OK);
    assert_int_equal(n, 13);
    free(frame);
    kc_wbuf_free(&b.w);
    kc_arena_free(&a);
}

static void test_error_names_api_version_and_field_path(void **state)
{
    (void)state;
    bld_t b;
    bld_init(&b);
    kc_wire_put_i32(&b.e, 0);     /* throttle_time_ms */
    kc_wire_put_i16(&b.e, 0);     /* error_code */
    kc_wire_put_i32(&b.e, 0);     /* session_id */
    kc_wire_put_uvarint(&b.e, 2); /* responses: 1 */
    kc_uuid_t id = {{1}};
    kc_wire_put_uuid(&b.e, &id);
    kc_wire_put_uvarint(&b.e, 3); /* partitions: 2 */
    for (int p = 0; p < 2; p++) {
        kc_wire_put_i32(&b.e, p);     /* partition_index */
        kc_wire_put_i16(&b.e, 0);     /* error_code */
        kc_wire_put_i64(&b.e, 10);    /* high_watermark */
        kc_wire_put_i64(&b.e, 10);    /* last_stable_offset */
        kc_wire_put_i64(&b.e, 0);     /* log_start_offset */
        kc_wire_put_uvarint(&b.e, 0); /* aborted_transactions: null */
        kc_wire_put_i32(&b.e, -1);    /* preferred_read_replica */
        if (p == 0) {
            kc_wire_put_uvarint(&b.e, 1); /* records: empty */
            kc_wire_put_uvarint(&b.e, 0); /* tags */
        } else {
            kc_wire_put_uvarint(&b.e, 901); /* records: 900 bytes claimed */
        }
    }
    for (int i = 0; i < 12; i++)
        kc_wire_put_i8(&b.e, 0);
    uint8_t *frame = bld_exact(&b);
    kc_rbuf_t r = kc_rbuf(frame, b.w.len);
    kc_arena_t a = {0};
    kc_error_t err;
    kc_fetch_response_t m;
    assert_int_equal(kc_fetch_response_decode(&m, 16, &r, &a, &err), KC_ERR_MALFORMED);
    assert_string_equal(err.msg, "FetchResponse v16: responses[0].partitions[1].records: length "
                                 "900 exceeds remaining 12");
    free(frame);
    kc_wbuf_free(&b.w);
    kc_arena_free(&a);
}

static void test_unknown_tags_are_skipped_and_known_decoded(void **state)
{
    (void)state;
    bld_t b;
    bld_init(&b);
    kc_wire_put_i32(&b.e, 5);                              /* throttle_time_ms */
    kc_wire_put_i16(&b.e, KC_KAFKA_REBALANCE_IN_PROGRESS); /* error_code */
    kc_wire_put_uvarint(&b.e, 2); /* two tags, both unknown to HeartbeatResponse */
    kc_wire_put_uvarint(&b.e, 7);
    kc_wire_put_uvarint(&b.e, 3);
    kc_wire_put_raw(&b.e, "abc", 3);
    kc_wire_put_uvarint(&b.e, 9);
    kc_wire_put_uvarint(&b.e, 0);
    uint8_t *frame = bld_exact(&b);
    kc_rbuf_t r = kc_rbuf(frame, b.w.len);
    kc_arena_t a = {0};
    kc_error_t err;
    kc_heartbeat_response_t m;
    assert_int_equal(kc_heartbeat_response_decode(&m, 4, &r, &a, &err), KC_OK);
    assert_int_equal(m.throttle_time_ms, 5);
    assert_int_equal(m.error_code, KC_KAFKA_REBALANCE_IN_PROGRESS);
    assert_int_equal(kc_rbuf_remaining(&r), 0);
    /* A tag whose size runs past the frame is an error, not a skip into nowhere. */
    frame[b.w.len - 1] = 50;
    r = kc_rbuf(frame, b.w.len);
    assert_int_equal(kc_heartbeat_response_decode(&m, 4, &r, &a, &err), KC_ERR_MALFORMED);
    free(frame);
    kc_wbuf_free(&b.w);

    /* A known tag: FetchResponse partition's current_leader (tag 1) at v12. */
    kc_fetch_response_partition_data_t part = {0};
    kc_fetch_response_fetchable_topic_response_t topic = {0};
    kc_fetch_response_t fr;
    kc_fetch_response_init(&fr);
    part.records = KC_BYTES_NULL;
    part.has_current_leader = true;
    part.current_leader.leader_id = 3;
    part.current_leader.leader_epoch = 9;
    topic.topic = kc_str("t");
    topic.partitions.count = 1;
    topic.partitions.items = &part;
    fr.responses.count = 1;
    fr.responses.items = &topic;
    kc_wbuf_t w = {0};
    assert_int_equal(kc_fetch_response_encode(&fr, 12, &w, &err), KC_OK);
    r = kc_rbuf(w.data, w.len);
    kc_fetch_response_t out;
    assert_int_equal(kc_fetch_response_decode(&out, 12, &r, &a, &err), KC_OK);
    const kc_fetch_response_partition_data_t *op = &out.responses.items[0].partitions.items[0];
    assert_true(op->has_current_leader);
    assert_false(op->has_diverging_epoch);
    assert_int_equal(op->current_leader.leader_id, 3);
    assert_int_equal(op->current_leader.leader_epoch, 9);
    assert_int_equal(op->records.len, -1);
    /* Strings are views into the frame, not copies. */
    assert_ptr_equal((const void *)out.responses.items[0].topic.ptr,
                     (const void *)memchr(w.data, 't', w.len));
    kc_wbuf_free(&w);
    kc_arena_free(&a);
}

static void test_header_versions_follow_flexible_versions(void **state)
{
    (void)state;
    assert_int_equal(kc_proto_request_header_version(1, 12), 2);
    assert_int_equal(kc_proto_response_header_version(1, 12), 1);
    assert_int_equal(kc_proto_request_header_version(1, 11), 1);
    assert_int_equal(kc_proto_response_header_version(1, 11), 0);
    assert_int_equal(kc_proto_request_header_version(18, 3), 2);
    assert_int_equal(kc_proto_response_header_version(18, 3), 0); /* ApiVersions: always v0 */
    assert_int_equal(kc_proto_request_header_version(17, 1), 1);  /* SaslHandshake: never flex */
    assert_int_equal(kc_proto_response_header_version(68, 0), 1);
    assert_int_equal(kc_proto_request_header_version(999, 0), -1);

    /* Request header v2 keeps the client id a classic int16 string (flexibleVersions none). */
    kc_request_header_t h = {1, 12, 77, kc_str("ab")};
    kc_wbuf_t w = {0};
    kc_error_t err;
    assert_int_equal(kc_request_header_encode(&h, 2, &w, &err), KC_OK);
    const uint8_t want[] = {0, 1, 0, 12, 0, 0, 0, 77, 0, 2, 'a', 'b', 0};
    assert_int_equal(w.len, sizeof want);
    assert_memory_equal(w.data, want, sizeof want);
    kc_wbuf_free(&w);
}

static void test_negotiation_intersects_ranges(void **state)
{
    (void)state;
    kc_api_versions_response_api_version_t keys[] = {
        {1, 4, 17}, /* Fetch: ours 4-18 → 17 */
        {2, 1, 10}, /* ListOffsets → 10 */
        {10, 7, 9}, /* FindCoordinator: ours 0-6 → no overlap */
        {11, 0, 9}, /* JoinGroup → 9 */
        {8, 2, 10}, /* OffsetCommit */
        {57, 0, 3}, /* not ours: ignored */
    };
    kc_api_versions_response_t resp = {0};
    resp.api_keys.count = 6;
    resp.api_keys.items = keys;
    kc_proto_versions_t nv;
    kc_error_t err;
    assert_int_equal(kc_proto_negotiate(&resp, &nv, &err), KC_OK);
    assert_int_equal(nv.version[1], 17);
    assert_int_equal(nv.version[2], 10);
    /* OffsetCommit's newest schema version is marked unstable: never negotiated. */
    const kc_proto_api_t *oc = kc_proto_api_find(8);
    assert_non_null(oc);
    assert_int_equal(oc->max_stable, oc->max_version - 1);
    assert_int_equal(nv.version[8], oc->max_stable);
    assert_int_equal(nv.version[10], -1);
    assert_int_equal(nv.version[11], 9);
    assert_int_equal(nv.version[3], -1); /* Metadata absent from the answer */
    resp.error_code = KC_KAFKA_UNSUPPORTED_VERSION;
    assert_int_equal(kc_proto_negotiate(&resp, &nv, &err), KC_ERR_BROKER);
    assert_int_equal(err.kafka_code, KC_KAFKA_UNSUPPORTED_VERSION);
}

static void test_consumer_protocol_version_prefix(void **state)
{
    (void)state;
    kc_str_t topics[] = {kc_str("a"), kc_str("bc")};
    kc_consumer_protocol_subscription_t s;
    kc_consumer_protocol_subscription_init(&s);
    s.topics.count = 2;
    s.topics.items = topics;
    s.generation_id = 4;
    s.rack_id = kc_str("r1");
    kc_wbuf_t w = {0};
    kc_error_t err;
    assert_int_equal(kc_consumer_protocol_subscription_encode_versioned(&s, 3, &w, &err), KC_OK);
    assert_int_equal(w.data[0], 0);
    assert_int_equal(w.data[1], 3);
    /* Pretend a newer member wrote version 9 with extra trailing fields: we read what we know. */
    w.data[1] = 9;
    kc_wire_put_raw(&(kc_enc_t){&w, NULL, "t", 0, false}, "zz", 2);
    kc_rbuf_t r = kc_rbuf(w.data, w.len);
    kc_arena_t a = {0};
    kc_consumer_protocol_subscription_t out;
    int16_t ver;
    assert_int_equal(kc_consumer_protocol_subscription_decode_versioned(&out, &ver, &r, &a, &err),
                     KC_OK);
    assert_int_equal(ver, 9);
    assert_int_equal(out.topics.count, 2);
    assert_int_equal(out.generation_id, 4);
    assert_int_equal(out.rack_id.len, 2);
    assert_int_equal(out.user_data.len, -1);
    /* A negative version is refused. */
    w.data[0] = 0xff;
    r = kc_rbuf(w.data, w.len);
    assert_int_equal(kc_consumer_protocol_subscription_decode_versioned(&out, &ver, &r, &a, &err),
                     KC_ERR_MALFORMED);
    kc_wbuf_free(&w);
    kc_arena_free(&a);
}

static void test_null_in_non_nullable_field_is_an_error(void **state)
{
    (void)state;
    kc_find_coordinator_request_t m;
    kc_find_coordinator_request_init(&m);
    m.key = KC_STR_NULL;
    kc_wbuf_t w = {0};
    kc_error_t err;
    assert_int_equal(kc_find_coordinator_request_encode(&m, 0, &w, &err), KC_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "FindCoordinatorRequest v0: key"));
    kc_wbuf_free(&w);
    const uint8_t bytes[] = {0xff, 0xff};
    kc_rbuf_t r = kc_rbuf(bytes, sizeof bytes);
    kc_arena_t a = {0};
    assert_int_equal(kc_find_coordinator_request_decode(&m, 0, &r, &a, &err), KC_ERR_MALFORMED);
    assert_int_equal(kc_find_coordinator_request_decode(&m, 99, &r, &a, &err), KC_ERR_UNSUPPORTED);
}

static void test_varints_round_trip_and_reject_overlong(void **state)
{
    (void)state;
    const int64_t longs[] = {0, 1, -1, 63, -64, 64, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
    kc_arena_t a = {0};
    kc_error_t err;
    for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++) {
        bld_t b;
        bld_init(&b);
        kc_wire_put_varlong(&b.e, longs[i]);
        if (longs[i] >= INT32_MIN && longs[i] <= INT32_MAX)
            kc_wire_put_varint(&b.e, (int32_t)longs[i]);
        uint8_t *frame = bld_exact(&b);
        kc_rbuf_t r = kc_rbuf(frame, b.w.len);
        kc_dec_t d = {&r, &a, &err, "X", 0, true, 0, {{0}}};
        int64_t l;
        assert_int_equal(kc_wire_get_varlong(&d, "l", &l), KC_OK);
        assert_true(l == longs[i]);
        if (longs[i] >= INT32_MIN && longs[i] <= INT32_MAX) {
            int32_t v;
            assert_int_equal(kc_wire_get_varint(&d, "v", &v), KC_OK);
            assert_int_equal(v, longs[i]);
        }
        assert_int_equal(kc_rbuf_remaining(&r), 0);
        free(frame);
        kc_wbuf_free(&b.w);
    }
    /* -1 zigzags to 1, 64 to 128 (two bytes): the wire form is Kafka's, not just self-consistent.
     */
    bld_t b;
    bld_init(&b);
    kc_wire_put_varint(&b.e, -1);
    kc_wire_put_varint(&b.e, 64);
    kc_wire_put_uvarint(&b.e, 300);
    const uint8_t want[] = {0x01, 0x80, 0x01, 0xac, 0x02};
    assert_int_equal(b.w.len, sizeof want);
    assert_memory_equal(b.w.data, want, sizeof want);
    kc_wbuf_free(&b.w);

    /* Unsigned varint over 32 bits, a 6-byte varint, and a varint cut short: all errors. */
    const uint8_t big[] = {0xff, 0xff, 0xff, 0xff, 0x1f};
    const uint8_t longer[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    const uint8_t cut[] = {0x80, 0x80};
    const uint8_t *bad[] = {big, longer, cut};
    const size_t lens[] = {sizeof big, sizeof longer, sizeof cut};
    for (int i = 0; i < 3; i++) {
        kc_rbuf_t r = kc_rbuf(bad[i], lens[i]);
        kc_dec_t d = {&r, &a, &err, "X", 0, true, 0, {{0}}};
        uint32_t u;
        assert_int_equal(kc_wire_get_uvarint(&d, "u", &u), KC_ERR_MALFORMED);
    }
    const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    kc_rbuf_t r = kc_rbuf(eleven, sizeof eleven);
    kc_dec_t d = {&r, &a, &err, "X", 0, true, 0, {{0}}};
    int64_t l;
    assert_int_equal(kc_wire_get_varlong(&d, "l", &l), KC_ERR_MALFORMED);
}

/* uint16, uint32 and float64: no generated API has such a field today, but the generator maps
 * the schema types to these primitives, so they are checked here: big-endian, IEEE 754. */
static void test_unsigned_and_float64_round_trip(void **state)
{
    (void)state;
    bld_t b;
    bld_init(&b);
    kc_wire_put_u16(&b.e, 0xfedc);
    kc_wire_put_u32(&b.e, 0xfedcba98u);
    kc_wire_put_f64(&b.e, -2.5);
    const uint8_t want[] = {0xfe, 0xdc, 0xfe, 0xdc, 0xba, 0x98, 0xc0, 0x04, 0, 0, 0, 0, 0, 0};
    assert_int_equal(b.w.len, sizeof want);
    assert_memory_equal(b.w.data, want, sizeof want);
    uint8_t *frame = bld_exact(&b);
    kc_rbuf_t r = kc_rbuf(frame, b.w.len);
    kc_arena_t a = {0};
    kc_error_t err;
    kc_dec_t d = {&r, &a, &err, "X", 0, true, 0, {{0}}};
    uint16_t u16;
    uint32_t u32;
    double f64;
    assert_int_equal(kc_wire_get_u16(&d, "u16", &u16), KC_OK);
    assert_int_equal(kc_wire_get_u32(&d, "u32", &u32), KC_OK);
    assert_int_equal(kc_wire_get_f64(&d, "f64", &f64), KC_OK);
    assert_int_equal(u16, 0xfedc);
    assert_int_equal(u32, 0xfedcba98u);
    assert_true(f64 == -2.5);
    assert_int_equal(kc_rbuf_remaining(&r), 0);
    free(frame);
    kc_wbuf_free(&b.w);
}

static void test_request_frame_and_response_header(void **state)
{
    (void)state;
    kc_heartbeat_request_t hb;
    kc_heartbeat_request_init(&hb);
    hb.group_id = kc_str("g");
    hb.generation_id = 3;
    hb.member_id = kc_str("m");
    kc_wbuf_t w = {0};
    kc_error_t err;
    assert_int_equal(kc_proto_write_request(&w, 12, 4, 99, kc_str("cli"), &hb, &err), KC_OK);
    /* size | key 12 | v4 | corr 99 | client id as int16 string | header tags | body: compact
     * group id, generation, member id, null group instance id, tags. */
    const uint8_t want[] = {0,   0,   0,   24, 0, 12,  0, 4, 0, 0, 0, 99,  0, 3,
                            'c', 'l', 'i', 0,  2, 'g', 0, 0, 0, 3, 2, 'm', 0, 0};
    assert_int_equal(w.len, sizeof want);
    assert_memory_equal(w.data, want, sizeof want);
    /* A failing body leaves the writer as it was. */
    hb.member_id = KC_STR_NULL;
    assert_int_equal(kc_proto_write_request(&w, 12, 4, 100, kc_str("cli"), &hb, &err),
                     KC_ERR_INVALID_ARG);
    assert_int_equal(w.len, sizeof want);
    kc_wbuf_free(&w);

    /* Response header v1 (Fetch v12) has a tag section; ApiVersions v3 uses v0 (none). */
    const uint8_t fetch_hdr[] = {0, 0, 0, 7, 0, 0xaa};
    kc_rbuf_t r = kc_rbuf(fetch_hdr, sizeof fetch_hdr);
    int32_t corr;
    assert_int_equal(kc_proto_read_response_header(&r, 1, 12, &corr, &err), KC_OK);
    assert_int_equal(corr, 7);
    assert_int_equal(kc_rbuf_remaining(&r), 1);
    r = kc_rbuf(fetch_hdr, sizeof fetch_hdr);
    assert_int_equal(kc_proto_read_response_header(&r, 18, 3, &corr, &err), KC_OK);
    assert_int_equal(kc_rbuf_remaining(&r), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_array_count_is_refused_without_allocation),
        cmocka_unit_test(test_error_names_api_version_and_field_path),
        cmocka_unit_test(test_unknown_tags_are_skipped_and_known_decoded),
        cmocka_unit_test(test_header_versions_follow_flexible_versions),
        cmocka_unit_test(test_negotiation_intersects_ranges),
        cmocka_unit_test(test_consumer_protocol_version_prefix),
        cmocka_unit_test(test_null_in_non_nullable_field_is_an_error),
        cmocka_unit_test(test_varints_round_trip_and_reject_overlong),
        cmocka_unit_test(test_unsigned_and_float64_round_trip),
        cmocka_unit_test(test_request_frame_and_response_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
