/* engine/offsets: commit identity forms, result classification, deadline-bounded retries; the
 * OffsetCommit / OffsetFetch / FindCoordinator messages in every version the engine speaks. */
#include "kc_test.h"

#include <string.h>

#include "base/buf.h"
#include "engine_int.h"
#include "offsets_codec.h"
#include "proto/kafka_errors.h"

static const kc_commit_entry_t ENTRIES[2] = {
    {"orders", {0}, 0, 42, 3, NULL},
    {"orders", {0}, 1, 7, -1, "m"},
};

static void anonymous_commit_uses_sentinels(void **state)
{
    (void)state;
    kc_commit_identity_t who;
    kc_error_t e;
    assert_int_equal(kc_offsets_identity_anonymous(&who, "g1", &e), KC_OK);
    kc_commit_req_t req;
    assert_int_equal(kc_offsets_build_commit(&req, &who, ENTRIES, 2, &e), KC_OK);
    assert_string_equal(req.who.member_id, "");
    assert_int_equal(req.who.generation_or_epoch, -1);
    assert_null(req.who.group_instance_id);
    assert_string_equal(req.who.group_id, "g1");
    assert_int_equal(req.n_entries, 2);
}

static void member_commit_carries_identity(void **state)
{
    (void)state;
    kc_commit_identity_t who;
    kc_error_t e;
    assert_int_equal(kc_offsets_identity_member(&who, "g1", "m-123", 7, "inst-a", &e), KC_OK);
    kc_commit_req_t req;
    assert_int_equal(kc_offsets_build_commit(&req, &who, ENTRIES, 2, &e), KC_OK);
    assert_string_equal(req.who.member_id, "m-123");
    assert_int_equal(req.who.generation_or_epoch, 7);
    assert_string_equal(req.who.group_instance_id, "inst-a");
    /* Dynamic member: no instance id. */
    assert_int_equal(kc_offsets_identity_member(&who, "g1", "m-123", 7, NULL, &e), KC_OK);
    assert_null(who.group_instance_id);
}

static void mixed_identities_refused(void **state)
{
    (void)state;
    kc_error_t e;
    kc_commit_identity_t who;
    /* No made-up member id, no member id without an epoch, no epoch without a member id. */
    assert_int_equal(kc_offsets_identity_member(&who, "g1", "", 3, NULL, &e), KC_ERR_STATE);
    assert_int_equal(kc_offsets_identity_member(&who, "g1", "m", -1, NULL, &e), KC_ERR_STATE);
    assert_int_equal(kc_offsets_identity_anonymous(&who, "", &e), KC_ERR_CONFIG);
    kc_commit_req_t req;
    kc_commit_identity_t bad = {"g1", "", 5, NULL};
    assert_int_equal(kc_offsets_build_commit(&req, &bad, ENTRIES, 2, &e), KC_ERR_INVALID_ARG);
    kc_commit_identity_t bad2 = {"g1", "", -1, "inst"};
    assert_int_equal(kc_offsets_build_commit(&req, &bad2, ENTRIES, 2, &e), KC_ERR_INVALID_ARG);
    kc_commit_identity_t bad3 = {"g1", "invented", -1, NULL};
    assert_int_equal(kc_offsets_build_commit(&req, &bad3, ENTRIES, 2, &e), KC_ERR_INVALID_ARG);
    kc_commit_entry_t neg = {"t", {0}, 0, -5, -1, NULL};
    kc_offsets_identity_anonymous(&who, "g1", &e);
    assert_int_equal(kc_offsets_build_commit(&req, &who, &neg, 1, &e), KC_ERR_INVALID_ARG);
}

static void classification_table(void **state)
{
    (void)state;
    static const struct {
        int16_t code;
        kc_offsets_verdict_t want;
    } t[] = {
        {KC_KAFKA_NONE, KC_OFFSETS_OK},
        {KC_KAFKA_NOT_COORDINATOR, KC_OFFSETS_REDISCOVER},
        {KC_KAFKA_COORDINATOR_NOT_AVAILABLE, KC_OFFSETS_REDISCOVER},
        {KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS, KC_OFFSETS_REDISCOVER},
        {KC_KAFKA_STALE_MEMBER_EPOCH, KC_OFFSETS_RETRY_FRESH_EPOCH},
        {KC_KAFKA_UNSTABLE_OFFSET_COMMIT, KC_OFFSETS_RETRY},
        {KC_KAFKA_UNKNOWN_MEMBER_ID, KC_OFFSETS_FAIL},
        {KC_KAFKA_ILLEGAL_GENERATION, KC_OFFSETS_FAIL},
        {KC_KAFKA_REBALANCE_IN_PROGRESS, KC_OFFSETS_FAIL},
        {KC_KAFKA_GROUP_AUTHORIZATION_FAILED, KC_OFFSETS_FAIL},
        {KC_KAFKA_OFFSET_METADATA_TOO_LARGE, KC_OFFSETS_FAIL},
        {KC_KAFKA_FENCED_INSTANCE_ID, KC_OFFSETS_FAIL},
        {KC_KAFKA_FENCED_MEMBER_EPOCH, KC_OFFSETS_FAIL},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (kc_offsets_classify(t[i].code) != t[i].want)
            fail_msg("code %d: got %d want %d", t[i].code, kc_offsets_classify(t[i].code),
                     t[i].want);
}

static void not_coordinator_per_partition_means_rediscover(void **state)
{
    (void)state;
    int16_t codes[3] = {0, KC_KAFKA_NOT_COORDINATOR, 0};
    kc_offsets_verdict_t pv[3];
    kc_offsets_result_t r;
    kc_offsets_classify_response(0, codes, 3, pv, &r);
    assert_int_equal(r.verdict, KC_OFFSETS_REDISCOVER);
    assert_int_equal(r.first_error, KC_KAFKA_NOT_COORDINATOR);
    assert_int_equal(r.n_retry, 1);
    assert_int_equal(r.n_failed, 0);
    assert_int_equal(pv[0], KC_OFFSETS_OK);
    assert_int_equal(pv[1], KC_OFFSETS_REDISCOVER);
}

static void top_level_error_applies_to_every_partition(void **state)
{
    (void)state;
    int16_t codes[2] = {0, 0};
    kc_offsets_verdict_t pv[2];
    kc_offsets_result_t r;
    kc_offsets_classify_response(KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS, codes, 2, pv, &r);
    assert_int_equal(r.verdict, KC_OFFSETS_REDISCOVER);
    assert_int_equal(r.n_retry, 2);
    assert_int_equal(pv[1], KC_OFFSETS_REDISCOVER);
    kc_offsets_classify_response(KC_KAFKA_COORDINATOR_NOT_AVAILABLE, NULL, 0, NULL,
                                 &r); /* no partitions listed */
    assert_int_equal(r.verdict, KC_OFFSETS_REDISCOVER);
}

static void per_partition_failure_reported_alongside_retries(void **state)
{
    (void)state;
    int16_t codes[4] = {0, KC_KAFKA_OFFSET_METADATA_TOO_LARGE, KC_KAFKA_STALE_MEMBER_EPOCH, 0};
    kc_offsets_verdict_t pv[4];
    kc_offsets_result_t r;
    kc_offsets_classify_response(0, codes, 4, pv, &r);
    assert_int_equal(r.verdict, KC_OFFSETS_RETRY_FRESH_EPOCH);
    assert_int_equal(r.n_failed, 1);
    assert_int_equal(pv[1], KC_OFFSETS_FAIL);
    assert_int_equal(r.first_error, KC_KAFKA_OFFSET_METADATA_TOO_LARGE);
    int16_t only_fail[2] = {0, KC_KAFKA_UNKNOWN_MEMBER_ID};
    kc_offsets_classify_response(0, only_fail, 2, NULL, &r);
    assert_int_equal(r.verdict, KC_OFFSETS_FAIL);
    assert_int_equal(r.first_error, KC_KAFKA_UNKNOWN_MEMBER_ID);
    int16_t all_ok[2] = {0, 0};
    kc_offsets_classify_response(0, all_ok, 2, NULL, &r);
    assert_int_equal(r.verdict, KC_OFFSETS_OK);
    assert_int_equal(r.first_error, 0);
}

static void retry_is_bounded_by_deadline_not_attempts(void **state)
{
    (void)state;
    kc_retry_t r;
    kc_error_t e;
    int64_t now = 1000, at;
    /* Deadline 10 s with a 100 ms..1 s backoff: many attempts, all before the deadline. */
    kc_retry_start(&r, now, 10000, 100, 1000, 42);
    int n = 0;
    int64_t prev_gap = 0;
    while (kc_retry_next(&r, now, &at, &e) == KC_OK) {
        assert_true(at > now);
        assert_true(at < 11000);
        int64_t gap = at - now;
        assert_true(gap >= 80 && gap <= 1200); /* 100 ms .. 1 s, ±20% */
        if (n < 3)
            assert_true(gap > prev_gap); /* growing early on (doubling, ±20%) */
        prev_gap = gap;
        now = at;
        n++;
    }
    assert_int_equal(e.code, KC_ERR_TIMEOUT);
    assert_true(n >= 10 && n <= 20);
    assert_true(now < 11000);
    /* A deadline shorter than one backoff: no retry at all. */
    kc_retry_start(&r, 0, 50, 100, 1000, 1);
    assert_int_equal(kc_retry_next(&r, 0, &at, &e), KC_ERR_TIMEOUT);
    assert_int_equal(kc_retry_remaining(&r, 20), 30);
    assert_int_equal(kc_retry_remaining(&r, 60), 0);
}

static void commit_roundtrip(int16_t version, const kc_commit_req_t *req,
                             kc_offset_commit_request_t *back, kc_wbuf_t *w, kc_arena_t *a)
{
    kc_error_t e;
    kc_offset_commit_request_t m;
    assert_int_equal(kc_offsets_codec_commit(&m, req, version, a, &e), KC_OK);
    assert_int_equal(kc_offset_commit_request_encode(&m, version, w, &e), KC_OK);
    kc_rbuf_t r = kc_rbuf(w->data, w->len);
    if (kc_offset_commit_request_decode(back, version, &r, a, &e) != KC_OK)
        fail_msg("decode v%d: %s", version, e.msg);
}

static void anonymous_commit_encodes_empty_member_and_minus_1(void **state)
{
    (void)state;
    kc_commit_entry_t ents[3] = {
        {"orders", {1}, 0, 42, 3, NULL},
        {"audit", {2}, 4, 9, -1, NULL},
        {"orders", {1}, 1, 7, -1, "m"},
    };
    kc_commit_identity_t who;
    kc_error_t e;
    kc_offsets_identity_anonymous(&who, "g1", &e);
    kc_commit_req_t req;
    assert_int_equal(kc_offsets_build_commit(&req, &who, ents, 3, &e), KC_OK);
    for (int16_t v = 9; v <= 10; v++) {
        kc_wbuf_t w = {0};
        kc_arena_t a = {0};
        kc_offset_commit_request_t back;
        commit_roundtrip(v, &req, &back, &w, &a);
        assert_int_equal(back.member_id.len, 0); /* empty, not null, not invented */
        assert_non_null(back.member_id.ptr);
        assert_int_equal(back.generation_id_or_member_epoch, -1);
        assert_int_equal(back.group_instance_id.len, -1);
        assert_int_equal(back.group_id.len, 2);
        assert_int_equal(back.topics.count, 2); /* grouped per topic */
        const kc_offset_commit_request_topic_t *orders = &back.topics.items[0];
        if (v == 10)
            assert_int_equal(orders->topic_id.b[0], 1);
        else
            assert_memory_equal(orders->name.ptr, "orders", 6);
        assert_int_equal(orders->partitions.count, 2);
        assert_int_equal(orders->partitions.items[0].committed_offset, 42);
        assert_int_equal(orders->partitions.items[0].committed_leader_epoch, 3);
        assert_int_equal(orders->partitions.items[1].committed_offset, 7);
        assert_int_equal(back.topics.items[1].partitions.items[0].partition_index, 4);
        kc_wbuf_free(&w);
        kc_arena_free(&a);
    }
}

static void member_commit_encodes_identity(void **state)
{
    (void)state;
    kc_commit_identity_t who;
    kc_error_t e;
    kc_offsets_identity_member(&who, "g1", "m-9", 12, "static-1", &e);
    kc_commit_req_t req;
    kc_offsets_build_commit(&req, &who, ENTRIES, 2, &e);
    kc_wbuf_t w = {0};
    kc_arena_t a = {0};
    kc_offset_commit_request_t back;
    commit_roundtrip(9, &req, &back, &w, &a);
    assert_int_equal(back.member_id.len, 3);
    assert_memory_equal(back.member_id.ptr, "m-9", 3);
    assert_int_equal(back.generation_id_or_member_epoch, 12);
    assert_int_equal(back.group_instance_id.len, 8);
    kc_wbuf_free(&w);
    kc_arena_free(&a);
    /* v10 needs topic ids: ENTRIES have none. */
    kc_offset_commit_request_t m;
    assert_int_equal(kc_offsets_codec_commit(&m, &req, 10, &a, &e), KC_ERR_INVALID_ARG);
    kc_arena_free(&a);
}

static void commit_response_not_coordinator_per_partition(void **state)
{
    (void)state;
    kc_offset_commit_response_partition_t p1[2] = {{0, 0}, {1, KC_KAFKA_NOT_COORDINATOR}};
    kc_offset_commit_response_partition_t p2[1] = {{0, 0}};
    kc_offset_commit_response_topic_t t[2];
    memset(t, 0, sizeof t);
    t[0].partitions.count = 2;
    t[0].partitions.items = p1;
    t[1].partitions.count = 1;
    t[1].partitions.items = p2;
    kc_offset_commit_response_t m;
    kc_offset_commit_response_init(&m);
    m.topics.count = 2;
    m.topics.items = t;
    kc_arena_t a = {0};
    kc_offsets_result_t r;
    kc_error_t e;
    assert_int_equal(kc_offsets_codec_commit_result(&m, &a, &r, &e), KC_OK);
    assert_int_equal(r.verdict, KC_OFFSETS_REDISCOVER);
    assert_int_equal(r.first_error, KC_KAFKA_NOT_COORDINATOR);
    assert_int_equal(r.n_retry, 1);
    p1[1].error_code = 0;
    kc_offsets_codec_commit_result(&m, &a, &r, &e);
    assert_int_equal(r.verdict, KC_OFFSETS_OK);
    kc_arena_free(&a);
}

/* OffsetFetch for one group goes in the form of the version picked: a group and its topics
 * before v8 (Kafka 2.1 speaks v5), a groups array from v8; member fields only from v9. */
static void offset_fetch_request_both_forms(void **state)
{
    (void)state;
    const kc_offsets_tp_t tps[3] = {{"audit", 4}, {"orders", 0}, {"orders", 1}};
    for (int16_t v = 1; v <= 9; v++) {
        kc_arena_t a = {0};
        kc_wbuf_t w = {0};
        kc_error_t e;
        kc_offset_fetch_request_t m, back;
        assert_int_equal(kc_offsets_codec_fetch(&m, "g1", v == 9 ? "m-1" : NULL, 5, tps, 3, &a, &e),
                         KC_OK);
        assert_int_equal(kc_offset_fetch_request_encode(&m, v, &w, &e), KC_OK);
        kc_rbuf_t r = kc_rbuf(w.data, w.len);
        if (kc_offset_fetch_request_decode(&back, v, &r, &a, &e) != KC_OK)
            fail_msg("decode v%d: %s", v, e.msg);
        assert_int_equal(kc_rbuf_remaining(&r), 0);
        if (v < 8) {
            assert_memory_equal(back.group_id.ptr, "g1", 2);
            assert_int_equal(back.topics.count, 2);
            assert_memory_equal(back.topics.items[1].name.ptr, "orders", 6);
            assert_int_equal(back.topics.items[1].partition_indexes.count, 2);
            assert_int_equal(back.topics.items[1].partition_indexes.items[1], 1);
            assert_int_equal(back.require_stable, v >= 7);
        } else {
            assert_int_equal(back.groups.count, 1);
            const kc_offset_fetch_request_group_t *g = &back.groups.items[0];
            assert_memory_equal(g->group_id.ptr, "g1", 2);
            assert_int_equal(g->topics.count, 2);
            assert_int_equal(g->topics.items[0].partition_indexes.items[0], 4);
            assert_int_equal(g->member_id.len, v == 9 ? 3 : -1);
            assert_int_equal(g->member_epoch, v == 9 ? 5 : -1);
            assert_true(back.require_stable);
        }
        kc_wbuf_free(&w);
        kc_arena_free(&a);
    }
}

/* Both forms of the answer read the same way: the group's error code (none before v2), each
 * partition's offset, leader epoch (-1 before v5) and code. */
static void offset_fetch_response_both_forms(void **state)
{
    (void)state;
    kc_offset_fetch_response_partition_t op[2] = {
        {0, 42, 3, {NULL, -1}, 0}, {1, -1, -1, {NULL, -1}, KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION}};
    kc_offset_fetch_response_topic_t ot = {kc_str("orders"), {2, op}};
    kc_offset_fetch_response_partitions_t gp[2] = {
        {0, 42, 3, {NULL, -1}, 0}, {1, -1, -1, {NULL, -1}, KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION}};
    kc_offset_fetch_response_topics_t gt;
    memset(&gt, 0, sizeof gt);
    gt.name = kc_str("orders");
    gt.partitions.count = 2;
    gt.partitions.items = gp;
    kc_offset_fetch_response_group_t g;
    memset(&g, 0, sizeof g);
    g.group_id = kc_str("g1");
    g.topics.count = 1;
    g.topics.items = &gt;
    g.error_code = KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
    kc_offset_fetch_response_t m;
    kc_offset_fetch_response_init(&m);
    m.topics.count = 1;
    m.topics.items = &ot;
    m.error_code = KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
    m.groups.count = 1;
    m.groups.items = &g;
    for (int16_t v = 1; v <= 9; v++) {
        kc_arena_t a = {0};
        kc_wbuf_t w = {0};
        kc_error_t e;
        kc_offset_fetch_response_t back;
        assert_int_equal(kc_offset_fetch_response_encode(&m, v, &w, &e), KC_OK);
        kc_rbuf_t r = kc_rbuf(w.data, w.len);
        assert_int_equal(kc_offset_fetch_response_decode(&back, v, &r, &a, &e), KC_OK);
        kc_offsets_fetched_iter_t it;
        int16_t top = -1;
        assert_int_equal(kc_offsets_codec_fetched_init(&it, &back, v, &top), 1);
        assert_int_equal(top, v >= 2 ? KC_KAFKA_COORDINATOR_NOT_AVAILABLE : 0);
        kc_offsets_fetched_t f;
        assert_int_equal(kc_offsets_codec_fetched_next(&it, &f), 1);
        assert_int_equal(f.topic.len, 6);
        assert_memory_equal(f.topic.ptr, "orders", 6);
        assert_int_equal(f.partition, 0);
        assert_int_equal(f.offset, 42);
        assert_int_equal(f.leader_epoch, v >= 5 ? 3 : -1);
        assert_int_equal(f.error_code, 0);
        assert_int_equal(kc_offsets_codec_fetched_next(&it, &f), 1);
        assert_int_equal(f.partition, 1);
        assert_int_equal(f.offset, -1);
        assert_int_equal(f.error_code, KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
        assert_int_equal(kc_offsets_codec_fetched_next(&it, &f), 0);
        kc_wbuf_free(&w);
        kc_arena_free(&a);
    }
    /* From v8 an answer that does not hold exactly our group is not ours to read. */
    m.groups.count = 0;
    kc_offsets_fetched_iter_t it;
    int16_t top;
    assert_int_equal(kc_offsets_codec_fetched_init(&it, &m, 8, &top), 0);
}

/* FindCoordinator: one key before v4 (Kafka 2.1 speaks v0-v2, 2.8 v0-v3), a batch of keys from
 * v4; kc_eng_fc_encode/decode write and read both, IPv6 hosts bracketed. */
static void find_coordinator_both_forms(void **state)
{
    (void)state;
    for (int16_t v = 0; v <= KC_FIND_COORDINATOR_REQUEST_MAX_VERSION; v++) {
        kc_wbuf_t w = {0};
        kc_arena_t a = {0};
        kc_error_t e;
        assert_int_equal(kc_eng_fc_encode(&w, v, "grp"), KC_OK);
        kc_rbuf_t r = kc_rbuf(w.data, w.len);
        kc_find_coordinator_request_t q;
        assert_int_equal(kc_find_coordinator_request_decode(&q, v, &r, &a, &e), KC_OK);
        assert_int_equal(kc_rbuf_remaining(&r), 0);
        if (v < 4) {
            assert_int_equal(q.key.len, 3);
            assert_memory_equal(q.key.ptr, "grp", 3);
        } else {
            assert_int_equal(q.coordinator_keys.count, 1);
            assert_memory_equal(q.coordinator_keys.items[0].ptr, "grp", 3);
        }
        kc_find_coordinator_response_coordinator_t c;
        memset(&c, 0, sizeof c);
        c.key = kc_str("grp");
        c.node_id = 3;
        c.host = kc_str("::1");
        c.port = 9093;
        c.error_message = KC_STR_NULL;
        kc_find_coordinator_response_t m;
        kc_find_coordinator_response_init(&m);
        m.node_id = 3;
        m.host = kc_str("::1");
        m.port = 9093;
        m.error_message = KC_STR_NULL;
        m.coordinators.count = 1;
        m.coordinators.items = &c;
        w.len = 0;
        assert_int_equal(kc_find_coordinator_response_encode(&m, v, &w, &e), KC_OK);
        kc_buf_t *frame = kc_buf_new(w.len);
        assert_non_null(frame);
        memcpy(frame->data, w.data, w.len);
        frame->len = w.len;
        char addr[64] = "";
        int32_t node = -1;
        assert_int_equal(kc_eng_fc_decode(frame, 0, v, addr, sizeof addr, &node), 0);
        assert_string_equal(addr, "[::1]:9093");
        assert_int_equal(node, 3);
        m.error_code = c.error_code = KC_KAFKA_COORDINATOR_NOT_AVAILABLE; /* either form */
        w.len = 0;
        assert_int_equal(kc_find_coordinator_response_encode(&m, v, &w, &e), KC_OK);
        memcpy(frame->data, w.data, w.len);
        assert_int_equal(kc_eng_fc_decode(frame, 0, v, addr, sizeof addr, &node),
                         KC_KAFKA_COORDINATOR_NOT_AVAILABLE);
        kc_buf_unref(frame);
        kc_wbuf_free(&w);
        kc_arena_free(&a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(anonymous_commit_uses_sentinels),
        cmocka_unit_test(member_commit_carries_identity),
        cmocka_unit_test(mixed_identities_refused),
        cmocka_unit_test(classification_table),
        cmocka_unit_test(not_coordinator_per_partition_means_rediscover),
        cmocka_unit_test(top_level_error_applies_to_every_partition),
        cmocka_unit_test(per_partition_failure_reported_alongside_retries),
        cmocka_unit_test(retry_is_bounded_by_deadline_not_attempts),
        cmocka_unit_test(anonymous_commit_encodes_empty_member_and_minus_1),
        cmocka_unit_test(member_commit_encodes_identity),
        cmocka_unit_test(commit_response_not_coordinator_per_partition),
        cmocka_unit_test(offset_fetch_request_both_forms),
        cmocka_unit_test(offset_fetch_response_both_forms),
        cmocka_unit_test(find_coordinator_both_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
