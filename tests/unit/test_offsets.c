/* engine/offsets: commit identity forms, result classification, deadline-bounded retries. */
#include "kc_test.h"

#include <string.h>

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
