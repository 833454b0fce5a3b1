/* engine/fetch/codec: session requests become real FetchRequests that decode back to the same
 * entries, at the newest version (topics by id) and at v7-v12 (topics by name, resolved through
 * kc_fetch_names_t); decoded FetchResponses of both forms feed the session and the fetcher with
 * the same keys. */
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

/* A names table as the engine's metadata cache keeps it: part()'s topic n is "t<n>"; a row may
 * also name an earlier key of the topic (`prev`), which a session may still forget. */
typedef struct row {
    uint8_t id[16], prev[16];
    const char *name;
} row_t;

static row_t g_rows[16];
static int g_nrows;

static void names_reset(void)
{
    g_nrows = 0;
    static const char *n[] = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"};
    for (uint8_t t = 0; t < 9; t++) {
        row_t *r = &g_rows[g_nrows++];
        memset(r, 0, sizeof *r);
        r->id[0] = 0xA0;
        r->id[15] = t;
        r->name = n[t];
    }
}

static const char *test_name_of(void *opaque, const uint8_t id[16])
{
    (void)opaque;
    static const uint8_t zero[16];
    for (int i = 0; i < g_nrows; i++)
        if (memcmp(g_rows[i].id, id, 16) == 0 ||
            (memcmp(g_rows[i].prev, zero, 16) != 0 && memcmp(g_rows[i].prev, id, 16) == 0))
            return g_rows[i].name;
    return NULL;
}

static int test_id_of(void *opaque, const char *name, size_t len, uint8_t id[16])
{
    (void)opaque;
    for (int i = 0; i < g_nrows; i++)
        if (strlen(g_rows[i].name) == len && memcmp(g_rows[i].name, name, len) == 0) {
            memcpy(id, g_rows[i].id, 16);
            return 1;
        }
    return 0;
}

static const kc_fetch_names_t NAMES = {test_name_of, test_id_of, NULL};

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
    assert_int_equal(
        kc_fetch_codec_request(&m, &req, KC_FETCH_REQUEST_MAX_VERSION, &SETTINGS, NULL, &a, &e),
        KC_OK);
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
    assert_int_equal(
        kc_fetch_codec_request(&m, &req, KC_FETCH_REQUEST_MAX_VERSION, &SETTINGS, NULL, &a, &e),
        KC_OK);
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
    assert_int_equal(
        kc_fetch_codec_request(&m, &req, KC_FETCH_CODEC_MIN_VERSION, &SETTINGS, &NAMES, &a, &e),
        KC_OK);
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
    kc_fetch_codec_iter_t it;
    kc_fetch_codec_iter_init(&it, &back, KC_FETCH_RESPONSE_MAX_VERSION, NULL);
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

static const kc_fetch_request_fetch_partition_t *find_named(const kc_fetch_request_t *m,
                                                            const char *topic, int32_t p)
{
    for (int32_t t = 0; t < m->topics.count; t++) {
        const kc_fetch_request_fetch_topic_t *ft = &m->topics.items[t];
        if (ft->topic.len != (int32_t)strlen(topic) ||
            memcmp(ft->topic.ptr, topic, strlen(topic)) != 0)
            continue;
        for (int32_t i = 0; i < ft->partitions.count; i++)
            if (ft->partitions.items[i].partition == p)
                return &ft->partitions.items[i];
    }
    return NULL;
}

/* v12: the same session, the same diff, topics and forgotten partitions by name. */
static void v12_request_names_topics(void **state)
{
    (void)state;
    names_reset();
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[4] = {part(1, 0, 10), part(1, 1, 11), part(2, 0, 20), part(2, 1, 21)};
    kc_session_req_t req;
    kc_error_t e;
    kc_arena_t a = {0}, a2 = {0};
    kc_fetch_request_t m, back;
    kc_wbuf_t wb = {0};
    assert_int_equal(kc_session_build(&s, w, 4, 0, &req, &e), KC_OK);
    assert_int_equal(kc_fetch_codec_max_version(&req), KC_FETCH_REQUEST_MAX_VERSION);
    assert_int_equal(kc_fetch_codec_request(&m, &req, 12, &SETTINGS, &NAMES, &a, &e), KC_OK);
    roundtrip(&m, 12, &back, &wb, &a2);
    assert_int_equal(back.topics.count, 2);
    assert_int_equal(find_named(&back, "t2", 1)->fetch_offset, 21);
    assert_int_equal(find_named(&back, "t1", 0)->current_leader_epoch, 7);
    assert_int_equal(back.rack_id.len, 6);
    kc_session_resp_t ok = {0, 4242};
    assert_int_equal(kc_session_on_response(&s, &ok, 0), KC_SESSION_OK);
    kc_session_part_t w2[3] = {part(1, 0, 10), part(1, 1, 3), part(3, 5, 0)};
    assert_int_equal(kc_session_build(&s, w2, 3, 0, &req, &e), KC_OK);
    kc_arena_reset(&a);
    kc_arena_reset(&a2);
    wb.len = 0;
    assert_int_equal(kc_fetch_codec_request(&m, &req, 12, &SETTINGS, &NAMES, &a, &e), KC_OK);
    roundtrip(&m, 12, &back, &wb, &a2);
    assert_int_equal(back.session_id, 4242);
    assert_int_equal(back.session_epoch, 1);
    assert_null(find_named(&back, "t1", 0)); /* unchanged: not sent */
    assert_int_equal(find_named(&back, "t1", 1)->fetch_offset, 3);
    assert_int_equal(find_named(&back, "t3", 5)->fetch_offset, 0);
    assert_int_equal(back.forgotten_topics_data.count, 1);
    assert_int_equal(back.forgotten_topics_data.items[0].topic.len, 2);
    assert_memory_equal(back.forgotten_topics_data.items[0].topic.ptr, "t2", 2);
    assert_int_equal(back.forgotten_topics_data.items[0].partitions.count, 2);
    /* v10 (Kafka 2.1's newest): no rack (v11+), no flexible framing; the same entries. */
    kc_arena_reset(&a);
    kc_arena_reset(&a2);
    wb.len = 0;
    assert_int_equal(kc_fetch_codec_request(&m, &req, 10, &SETTINGS, &NAMES, &a, &e), KC_OK);
    roundtrip(&m, 10, &back, &wb, &a2);
    assert_int_equal(find_named(&back, "t1", 1)->fetch_offset, 3);
    assert_int_equal(back.forgotten_topics_data.count, 1);
    assert_int_equal(back.rack_id.len, 0); /* not in v10: the schema default */
    /* An id the names do not know cannot be sent by name. */
    kc_session_on_failure(&s);
    kc_session_part_t w3[1] = {part(1, 0, 0)};
    w3[0].tp.topic_id[15] = 99;
    assert_int_equal(kc_session_build(&s, w3, 1, 0, &req, &e), KC_OK);
    kc_arena_reset(&a);
    assert_int_equal(kc_fetch_codec_request(&m, &req, 12, &SETTINGS, &NAMES, &a, &e), KC_ERR_STATE);
    kc_wbuf_free(&wb);
    kc_arena_free(&a);
    kc_arena_free(&a2);
    kc_session_free(&s);
}

/* A topic first keyed by a synthetic id (Metadata without ids), then by its real one (a broker
 * with topic ids answered): the session forgets the old key and adds the new. By name that is
 * one partition, which a broker would drop (it applies the forgotten list after the partitions),
 * so before v13 the forgotten entry is left out; by id (v13+) both entries are needed. */
static void rekeyed_topic_is_not_forgotten_by_name(void **state)
{
    (void)state;
    names_reset();
    row_t *r = &g_rows[g_nrows++];
    memset(r, 0, sizeof *r);
    r->name = "legacy";
    kc_tp_synthetic_id(r->id, 0);
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[3] = {part(0, 0, 5), part(0, 1, 6), part(1, 0, 7)};
    memcpy(w[0].tp.topic_id, r->id, 16);
    memcpy(w[1].tp.topic_id, r->id, 16);
    kc_session_req_t req;
    kc_error_t e;
    assert_int_equal(kc_session_build(&s, w, 3, 0, &req, &e), KC_OK);
    assert_int_equal(kc_fetch_codec_max_version(&req), 12); /* a synthetic id goes by name */
    kc_session_resp_t ok = {0, 7};
    assert_int_equal(kc_session_on_response(&s, &ok, 0), KC_SESSION_OK);
    /* The cache learns the real id; the old key stays nameable. */
    memcpy(r->prev, r->id, 16);
    memset(r->id, 0, 16);
    r->id[0] = 0xB0;
    memcpy(w[0].tp.topic_id, r->id, 16);
    memcpy(w[1].tp.topic_id, r->id, 16);
    w[1].paused = 1; /* and one of them leaves the session for real */
    assert_int_equal(kc_session_build(&s, w, 3, 0, &req, &e), KC_OK);
    assert_int_equal(req.n_added, 1);
    assert_int_equal(req.n_forgotten, 2);
    assert_int_equal(kc_fetch_codec_max_version(&req), 12); /* forgotten under the synthetic id */
    kc_arena_t a = {0}, a2 = {0};
    kc_fetch_request_t m, back;
    kc_wbuf_t wb = {0};
    assert_int_equal(kc_fetch_codec_request(&m, &req, 12, &SETTINGS, &NAMES, &a, &e), KC_OK);
    roundtrip(&m, 12, &back, &wb, &a2);
    assert_int_equal(find_named(&back, "legacy", 0)->fetch_offset, 5);
    assert_int_equal(back.forgotten_topics_data.count, 1);
    assert_int_equal(back.forgotten_topics_data.items[0].topic.len, 6);
    assert_memory_equal(back.forgotten_topics_data.items[0].topic.ptr, "legacy", 6);
    assert_int_equal(back.forgotten_topics_data.items[0].partitions.count, 1);
    assert_int_equal(back.forgotten_topics_data.items[0].partitions.items[0], 1);
    /* By id, both keys are distinct partitions: both forgotten. */
    kc_arena_reset(&a);
    kc_arena_reset(&a2);
    wb.len = 0;
    assert_int_equal(
        kc_fetch_codec_request(&m, &req, KC_FETCH_REQUEST_MAX_VERSION, &SETTINGS, &NAMES, &a, &e),
        KC_OK);
    roundtrip(&m, KC_FETCH_REQUEST_MAX_VERSION, &back, &wb, &a2);
    assert_int_equal(back.forgotten_topics_data.count, 1);
    assert_int_equal(back.forgotten_topics_data.items[0].partitions.count, 2);
    kc_wbuf_free(&wb);
    kc_arena_free(&a);
    kc_arena_free(&a2);
    kc_session_free(&s);
}

/* A v7-v12 answer names topics: the codec turns each name into the key the request used, so
 * the fetcher and the session see the same kc_tp_t as with v13+; a topic it cannot name is
 * skipped. */
static void named_response_keys_topics(void **state)
{
    (void)state;
    names_reset();
    kc_fetch_response_t m;
    kc_fetch_response_init(&m);
    m.session_id = 5;
    kc_fetch_response_partition_data_t parts[3];
    memset(parts, 0, sizeof parts);
    for (int i = 0; i < 3; i++) {
        parts[i].partition_index = i;
        parts[i].high_watermark = 10 + i;
        parts[i].last_stable_offset = -1;
        parts[i].log_start_offset = -1;
        parts[i].preferred_read_replica = -1;
        parts[i].aborted_transactions.count = -1;
        parts[i].records = KC_BYTES_NULL;
    }
    kc_fetch_response_fetchable_topic_response_t topics[3];
    memset(topics, 0, sizeof topics);
    topics[0].topic = kc_str("t3");
    topics[0].partitions.count = 2;
    topics[0].partitions.items = parts;
    topics[1].topic = kc_str("gone"); /* not in the cache */
    topics[1].partitions.count = 1;
    topics[1].partitions.items = &parts[2];
    topics[2].topic = kc_str("t4");
    topics[2].partitions.count = 1;
    topics[2].partitions.items = &parts[2];
    m.responses.count = 3;
    m.responses.items = topics;
    for (int16_t v = KC_FETCH_CODEC_MIN_VERSION; v < KC_FETCH_CODEC_ID_VERSION; v++) {
        kc_wbuf_t wb = {0};
        kc_error_t e;
        assert_int_equal(kc_fetch_response_encode(&m, v, &wb, &e), KC_OK);
        kc_rbuf_t r = kc_rbuf(wb.data, wb.len);
        kc_arena_t a = {0};
        kc_fetch_response_t back;
        assert_int_equal(kc_fetch_response_decode(&back, v, &r, &a, &e), KC_OK);
        assert_int_equal(kc_fetch_codec_session_resp(&back).session_id, 5);
        kc_fetch_codec_iter_t it;
        kc_fetch_codec_iter_init(&it, &back, v, &NAMES);
        kc_fetch_part_result_t pr;
        assert_int_equal(kc_fetch_codec_next(&it, &pr), 1);
        assert_int_equal(pr.tp.topic_id[0], 0xA0);
        assert_int_equal(pr.tp.topic_id[15], 3);
        assert_int_equal(pr.tp.partition, 0);
        assert_int_equal(pr.preferred_read_replica, -1);
        assert_int_equal(kc_fetch_codec_next(&it, &pr), 1);
        assert_int_equal(pr.tp.topic_id[15], 3);
        assert_int_equal(pr.tp.partition, 1);
        assert_int_equal(pr.high_watermark, 11);
        assert_int_equal(kc_fetch_codec_next(&it, &pr), 1); /* "gone" skipped */
        assert_int_equal(pr.tp.topic_id[15], 4);
        assert_int_equal(pr.tp.partition, 2);
        assert_int_equal(kc_fetch_codec_next(&it, &pr), 0);
        kc_wbuf_free(&wb);
        kc_arena_free(&a);
    }
}

/* Synthetic ids are never ids Kafka hands out (random version-4 UUIDs), nor its reserved ones. */
static void synthetic_ids_are_apart(void **state)
{
    (void)state;
    uint8_t id[16], other[16];
    kc_tp_synthetic_id(id, 0);
    kc_tp_synthetic_id(other, 1);
    assert_true(kc_tp_id_is_synthetic(id));
    assert_true(kc_tp_id_is_synthetic(other));
    assert_memory_not_equal(id, other, 16);
    static const uint8_t zero[16];
    uint8_t metadata_topic[16] = {0};
    metadata_topic[15] = 1;
    assert_false(kc_tp_id_is_synthetic(zero));
    assert_false(kc_tp_id_is_synthetic(metadata_topic));
    const uint8_t v4[16] = {0x3f, 0x1c, 0x22, 0x90, 0x4e, 0x11, 0x4a, 0x2b,
                            0x9c, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07};
    assert_false(kc_tp_id_is_synthetic(v4));
}

int main(void)
{
    names_reset();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opening_request_newest_version_roundtrips),
        cmocka_unit_test(incremental_request_carries_changes_and_forgotten),
        cmocka_unit_test(close_request_waits_for_nothing),
        cmocka_unit_test(response_partitions_iterate),
        cmocka_unit_test(v12_request_names_topics),
        cmocka_unit_test(rekeyed_topic_is_not_forgotten_by_name),
        cmocka_unit_test(named_response_keys_topics),
        cmocka_unit_test(synthetic_ids_are_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
