/* engine/fetch/codec: session requests become real FetchRequests (newest version) that decode
 * back to the same entries; decoded FetchResponses feed the session and the fetcher. */
#include "kc_test.h"

#include <string.h>

#include "fetch/codec.h"
#include "proto/kafka_errors.h"

static kc_session_part_t part(uint8_t topic, int32_t p, int64_t off)
{
    kc_session_part_t x;
    memset(&x, 0, sizeof x);
    x.tp.topic_id[0] = 0xA0;
    x.tp.topic_id[15] = topic;
    x.tp.partition = p;
    x.fetch_offset = off;
    x.log_start_offset = -1;
    x.leader_epoch = 7;
    x.max_bytes = 65536;
    return x;
}

static const kc_fetch_settings_t SETTINGS = {500, 1, 52428800, 1, "rack-a"};

/* Encodes at `version`, decodes back into `out` (arrays in `a`). */
static void roundtrip(const kc_fetch_request_t *m, int16_t version, kc_fetch_request_t *out,
                      kc_wbuf_t *w, kc_arena_t *a)
{
    kc_error_t e;
    assert_int_equal(kc_fetch_request_encode(m, version, w, &e), KC_OK);
    kc_rbuf_t r = kc_rbuf(w->data, w->len);
    if (kc_fetch_request_decode(out, version, &r, a, &e) != KC_OK)
        fail_msg("decode: %s", e.msg);
    assert_int_equal(kc_rbuf_remaining(&r), 0);
}

static const kc_fetch_request_fetch_partition_t *find_part(const kc_fetch_request_t *m,
                                                           uint8_t topic, int32_t p)
{
    for (int32_t t = 0; t < m->topics.count; t++) {
        const kc_fetch_request_fetch_topic_t *ft = &m->topics.items[t];
        if (ft->topic_id.b[15] != topic || ft->topic_id.b[0] != 0xA0)
            continue;
        for (int32_t i = 0; i < ft->partitions.count; i++)
            if (ft->partitions.items[i].partition == p)
                return &ft->partitions.items[i];
    }
    return NULL;
}

static void opening_request_newest_version_roundtrips(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[5] = {part(2, 1, 200), part(1, 0, 10), part(1, 1, 11), part(2, 0, 20),
                              part(1, 2, 12)};
    kc_session_req_t req;
    kc_error_t e;
    assert_int_equal(kc_session_build(&s, w, 5, 0, &req, &e), KC_OK);
    kc_arena_t a = {0}, a2 = {0};
    kc_fetch_request_t m, back;
    assert_int_equal(kc_fetch_codec_request(&m, &req, &SETTINGS, &a, &e), KC_OK);
    kc_wbuf_t wb = {0};
    roundtrip(&m, KC_FETCH_REQUEST_MAX_VERSION, &back, &wb, &a2);
    assert_int_equal(back.session_id, 0);
    assert_int_equal(back.session_epoch, 0);
    assert_int_equal(back.max_wait_ms, 500);
    assert_int_equal(back.min_bytes, 1);
    assert_int_equal(back.max_bytes, 52428800);
    assert_int_equal(back.isolation_level, 1);
    assert_int_equal(back.rack_id.len, 6);
    assert_memory_equal(back.rack_id.ptr, "rack-a", 6);
    assert_int_equal(back.topics.count, 2); /* grouped per topic, not one entry per partition */
    assert_int_equal(back.forgotten_topics_data.count, 0);
    for (int i = 0; i < 5; i++) {
        const kc_fetch_request_fetch_partition_t *fp =
            find_part(&back, w[i].tp.topic_id[15], w[i].tp.partition);
        assert_non_null(fp);
        assert_int_equal(fp->fetch_offset, w[i].fetch_offset);
        assert_int_equal(fp->current_leader_epoch, 7);
        assert_int_equal(fp->partition_max_bytes, 65536);
        assert_int_equal(fp->log_start_offset, -1);
        assert_int_equal(fp->last_fetched_epoch, -1);
    }
    kc_wbuf_free(&wb);
    kc_arena_free(&a);
    kc_arena_free(&a2);
    kc_session_free(&s);
}

static void incremental_request_carries_changes_and_forgotten(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[4] = {part(1, 0, 10), part(1, 1, 11), part(2, 0, 20), part(2, 1, 21)};
    kc_session_req_t req;
    kc_error_t e;
    kc_session_build(&s, w, 4, 0, &req, &e);
    kc_session_resp_t ok = {0, 4242};
    kc_session_on_response(&s, &ok, 0);
    /* seek 1/1, drop 2/0 and 2/1, add 3/5 */
    kc_session_part_t w2[3] = {part(1, 0, 10), part(1, 1, 3), part(3, 5, 0)};
    assert_int_equal(kc_session_build(&s, w2, 3, 0, &req, &e), KC_OK);
    kc_arena_t a = {0}, a2 = {0};
    kc_fetch_request_t m, back;
    assert_int_equal(kc_fetch_codec_request(&m, &req, &SETTINGS, &a, &e), KC_OK);
    kc_wbuf_t wb = {0};
    roundtrip(&m, KC_FETCH_REQUEST_MAX_VERSION, &back, &wb, &a2);
    assert_int_equal(back.session_id, 4242);
    assert_int_equal(back.session_epoch, 1);
    assert_int_equal(back.topics.count, 2);
    assert_null(find_part(&back, 1, 0)); /* unchanged: not sent */
    assert_int_equal(find_part(&back, 1, 1)->fetch_offset, 3);
    assert_int_equal(find_part(&back, 3, 5)->fetch_offset, 0);
    assert_int_equal(back.forgotten_topics_data.count, 1);
    const kc_fetch_request_forgotten_topic_t *ft = &back.forgotten_topics_data.items[0];
    assert_int_equal(ft->topic_id.b[15], 2);
    assert_int_equal(ft->partitions.count, 2);
    assert_int_equal(ft->partitions.items[0] + ft->partitions.items[1], 1);
    kc_wbuf_free(&wb);
    kc_arena_free(&a);
    kc_arena_free(&a2);
    kc_session_free(&s);
}

static void close_request_waits_for_nothing(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[1] = {part(1, 0, 10)};
    kc_session_req_t req;
    kc_error_t e;
    kc_session_build(&s, w, 1, 0, &req, &e);
    kc_session_resp_t ok = {0, 9};
    kc_session_on_response(&s, &ok, 0);
    assert_int_equal(kc_session_close(&s, &req, &e), KC_OK);
    kc_arena_t a = {0}, a2 = {0};
    kc_fetch_request_t m, back;
    kc_fetch_codec_request(&m, &req, &SETTINGS, &a, &e);
    kc_wbuf_t wb = {0};
    roundtrip(&m, KC_FETCH_CODEC_MIN_VERSION, &back, &wb, &a2);
    assert_int_equal(back.session_id, 9);
    assert_int_equal(back.session_epoch, -1);
    assert_int_equal(back.max_wait_ms, 0);
    assert_int_equal(back.min_bytes, 0);
    assert_int_equal(back.topics.count, 0);
    kc_wbuf_free(&wb);
    kc_arena_free(&a);
    kc_arena_free(&a2);
    kc_session_free(&s);
}

static void response_partitions_iterate(void **state)
{
    (void)state;
    kc_fetch_response_t m;
    kc_fetch_response_init(&m);
    m.session_id = 77;
    kc_fetch_response_partition_data_t parts[2];
    memset(parts, 0, sizeof parts);
    parts[0].partition_index = 3;
    parts[0].error_code = 0;
    parts[0].high_watermark = 100;
    parts[0].last_stable_offset = 90;
    parts[0].log_start_offset = 5;
    parts[0].preferred_read_replica = -1;
    parts[0].aborted_transactions.count = -1;
    static const uint8_t rec[4] = {1, 2, 3, 4};
    parts[0].records.ptr = rec;
    parts[0].records.len = 4;
    parts[1].partition_index = 4;
    parts[1].error_code = KC_KAFKA_NOT_LEADER_OR_FOLLOWER;
    parts[1].high_watermark = -1;
    parts[1].last_stable_offset = -1;
    parts[1].log_start_offset = -1;
    parts[1].preferred_read_replica = -1;
    parts[1].has_current_leader = true;
    parts[1].current_leader.leader_id = 2;
    parts[1].current_leader.leader_epoch = 12;
    parts[1].aborted_transactions.count = -1;
    parts[1].records = KC_BYTES_NULL;
    kc_fetch_response_fetchable_topic_response_t topic;
    memset(&topic, 0, sizeof topic);
    topic.topic = KC_STR_NULL;
    topic.topic_id.b[15] = 1;
    topic.partitions.count = 2;
    topic.partitions.items = parts;
    m.responses.count = 1;
    m.responses.items = &topic;

    kc_wbuf_t wb = {0};
    kc_error_t e;
    assert_int_equal(kc_fetch_response_encode(&m, KC_FETCH_RESPONSE_MAX_VERSION, &wb, &e), KC_OK);
    kc_rbuf_t r = kc_rbuf(wb.data, wb.len);
    kc_arena_t a = {0};
    kc_fetch_response_t back;
    assert_int_equal(kc_fetch_response_decode(&back, KC_FETCH_RESPONSE_MAX_VERSION, &r, &a, &e),
                     KC_OK);
    kc_session_resp_t sr = kc_fetch_codec_session_resp(&back);
    assert_int_equal(sr.session_id, 77);
    assert_int_equal(sr.error_code, 0);
    kc_fetch_codec_iter_t it = {&back, 0, 0};
    kc_fetch_part_result_t pr;
    assert_int_equal(kc_fetch_codec_next(&it, &pr), 1);
    assert_int_equal(pr.tp.partition, 3);
    assert_int_equal(pr.tp.topic_id[15], 1);
    assert_int_equal(pr.high_watermark, 100);
    assert_int_equal(pr.last_stable_offset, 90);
    assert_int_equal(pr.records.len, 4);
    assert_memory_equal(pr.records.ptr, rec, 4);
    assert_false(pr.has_current_leader);
    assert_int_equal(kc_fetch_codec_next(&it, &pr), 1);
    assert_int_equal(pr.tp.partition, 4);
    assert_int_equal(pr.error_code, KC_KAFKA_NOT_LEADER_OR_FOLLOWER);
    assert_true(pr.has_current_leader);
    assert_int_equal(pr.leader_id, 2);
    assert_int_equal(pr.leader_epoch, 12);
    assert_int_equal(pr.records.len, 0);
    assert_int_equal(kc_fetch_codec_next(&it, &pr), 0);
    kc_wbuf_free(&wb);
    kc_arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opening_request_newest_version_roundtrips),
        cmocka_unit_test(incremental_request_carries_changes_and_forgotten),
        cmocka_unit_test(close_request_waits_for_nothing),
        cmocka_unit_test(response_partitions_iterate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
