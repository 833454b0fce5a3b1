/* engine/fetch/session: every KIP-227 rule as its own test, driven without a network. */
#include "kc_test.h"

#include <limits.h>
#include <string.h>

#include "base/log.h"
#include "fetch/session.h"

#define NOW 1000

static kc_session_part_t part(uint8_t topic, int32_t p, int64_t off)
{
    kc_session_part_t x;
    memset(&x, 0, sizeof x);
    x.tp.topic_id[15] = topic;
    x.tp.partition = p;
    x.fetch_offset = off;
    x.log_start_offset = -1;
    x.leader_epoch = 3;
    x.max_bytes = 1048576;
    return x;
}

static void want4(kc_session_part_t w[4])
{
    w[0] = part(1, 0, 10);
    w[1] = part(1, 1, 20);
    w[2] = part(2, 0, 30);
    w[3] = part(2, 1, 40);
}

static kc_session_resp_t ok_resp(int32_t id)
{
    kc_session_resp_t r = {0, id};
    return r;
}

static void build_ok(kc_session_t *s, const kc_session_part_t *w, size_t n, kc_session_req_t *r)
{
    kc_error_t e;
    assert_int_equal(kc_session_build(s, w, n, NOW, r, &e), KC_OK);
}

/* Opens (0,0) with the full set and reaches (77, 1). */
static void open_session(kc_session_t *s, kc_session_part_t *w, size_t n)
{
    kc_session_req_t r;
    build_ok(s, w, n, &r);
    kc_session_resp_t resp = ok_resp(77);
    assert_int_equal(kc_session_on_response(s, &resp, NOW), KC_SESSION_OK);
}

/* A session opened on want4's four partitions (its answer gives it id 77). */
static void open_four(kc_session_t *s, kc_session_part_t w[4])
{
    kc_session_init(s, 1, 60000);
    want4(w);
    open_session(s, w, 4);
}

static int count_lines;
static void count_sink(void *o, int level, const char *sub, const char *line)
{
    (void)o, (void)level, (void)sub, (void)line;
    count_lines++;
}

static void opens_with_0_0_and_full_set(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[4];
    want4(w);
    kc_session_req_t r;
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.session_id, 0);
    assert_int_equal(r.epoch, 0); /* never -1 */
    assert_true(r.full);
    assert_int_equal(r.n_parts, 4);
    assert_int_equal(r.n_forgotten, 0);
    kc_session_free(&s);
}

static void after_response_id_and_epoch_plus_one(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_part_t w[4];
    open_four(&s, w);
    kc_session_req_t r;
    for (int32_t want_epoch = 1; want_epoch <= 3; want_epoch++) {
        build_ok(&s, w, 4, &r);
        assert_int_equal(r.session_id, 77);
        assert_int_equal(r.epoch, want_epoch);
        assert_false(r.full);
        kc_session_resp_t resp = ok_resp(77);
        assert_int_equal(kc_session_on_response(&s, &resp, NOW), KC_SESSION_OK);
    }
    assert_int_equal(kc_session_stats(&s)->session_id, 77);
    assert_int_equal(kc_session_stats(&s)->epoch, 4);
    kc_session_free(&s);
}

static void epoch_wraps_int32_max_to_1(void **state)
{
    (void)state;
    assert_int_equal(kc_session_next_epoch(1), 2);
    assert_int_equal(kc_session_next_epoch(INT32_MAX - 1), INT32_MAX);
    assert_int_equal(kc_session_next_epoch(INT32_MAX), 1);

    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[1] = {part(1, 0, 0)};
    open_session(&s, w, 1);
    s.epoch = INT32_MAX; /* fast-forward the committed epoch */
    kc_session_req_t r;
    build_ok(&s, w, 1, &r);
    assert_int_equal(r.epoch, INT32_MAX);
    kc_session_resp_t resp = ok_resp(77);
    kc_session_on_response(&s, &resp, NOW);
    build_ok(&s, w, 1, &r);
    assert_int_equal(r.epoch, 1);
    kc_session_free(&s);
}

static void steady_state_nothing_changed_sends_0_entries(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_part_t w[4];
    open_four(&s, w);
    kc_session_req_t r;
    for (int i = 0; i < 5; i++) {
        build_ok(&s, w, 4, &r);
        assert_int_equal(r.n_parts, 0);
        assert_int_equal(r.n_forgotten, 0);
        kc_session_resp_t resp = ok_resp(77);
        kc_session_on_response(&s, &resp, NOW);
    }
    /* Order of the wanted array does not matter. */
    kc_session_part_t rev[4] = {w[3], w[2], w[1], w[0]};
    build_ok(&s, rev, 4, &r);
    assert_int_equal(r.n_parts, 0);
    kc_session_free(&s);
}

/* The broker never advances its cached fetch offset (CachedPartition.updateRequestParams is its
 * only writer), so a partition that returned records must be re-sent with its new offset — and
 * only that one. */
static void consumed_partition_resent_others_not(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_part_t w[4];
    open_four(&s, w);
    w[2].fetch_offset += 500;
    kc_session_req_t r;
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.n_parts, 1);
    assert_int_equal(r.n_altered, 1);
    assert_int_equal(r.parts[0].fetch_offset, 530);
    kc_session_resp_t resp = ok_resp(77);
    kc_session_on_response(&s, &resp, NOW);
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.n_parts, 0); /* committed: not sent twice */
    kc_session_free(&s);
}

static void seek_epoch_maxbytes_each_one_altered(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_part_t w[4];
    open_four(&s, w);
    kc_session_resp_t resp = ok_resp(77);
    kc_session_req_t r;

    w[1].fetch_offset = 5; /* seek backwards */
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.n_parts, 1);
    assert_int_equal(r.n_altered, 1);
    assert_int_equal(r.n_added, 0);
    assert_int_equal(r.parts[0].tp.partition, 1);
    assert_int_equal(r.parts[0].fetch_offset, 5);
    kc_session_on_response(&s, &resp, NOW);

    w[0].leader_epoch = 4;
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.n_altered, 1);
    assert_int_equal(r.parts[0].leader_epoch, 4);
    kc_session_on_response(&s, &resp, NOW);

    w[3].max_bytes = 4096;
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.n_altered, 1);
    assert_int_equal(r.parts[0].max_bytes, 4096);
    kc_session_free(&s);
}

static void unassign_forgotten_exactly_once(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_part_t w[4];
    open_four(&s, w);
    kc_session_resp_t resp = ok_resp(77);
    kc_session_req_t r;
    build_ok(&s, w, 3, &r); /* w[3] (topic 2, p1) unassigned */
    assert_int_equal(r.n_parts, 0);
    assert_int_equal(r.n_forgotten, 1);
    assert_int_equal(r.forgotten[0].topic_id[15], 2);
    assert_int_equal(r.forgotten[0].partition, 1);
    kc_session_on_response(&s, &resp, NOW);
    build_ok(&s, w, 3, &r);
    assert_int_equal(r.n_forgotten, 0);
    assert_int_equal(kc_session_stats(&s)->forgotten_sent, 1);
    kc_session_free(&s);
}

static void pause_forgets_and_resume_adds(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_part_t w[4];
    open_four(&s, w);
    kc_session_resp_t resp = ok_resp(77);
    kc_session_req_t r;
    w[0].paused = 1;
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.n_forgotten, 1);
    assert_int_equal(r.forgotten[0].partition, 0);
    kc_session_on_response(&s, &resp, NOW);
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.n_forgotten + r.n_parts, 0);
    kc_session_on_response(&s, &resp, NOW);
    w[0].paused = 0;
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.n_parts, 1);
    assert_int_equal(r.n_added, 1);
    assert_int_equal(r.parts[0].fetch_offset, 10);
    kc_session_free(&s);
}

static void error_70_reopens_with_full_set_not_surfaced(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_part_t w[4];
    open_four(&s, w);
    kc_session_req_t r;
    build_ok(&s, w, 4, &r);
    kc_session_resp_t bad = {KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND, 0};
    assert_int_equal(kc_session_on_response(&s, &bad, NOW), KC_SESSION_RESET);
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.session_id, 0); /* the session is gone: nothing to close */
    assert_int_equal(r.epoch, 0);
    assert_true(r.full);
    assert_int_equal(r.n_parts, 4);
    kc_session_resp_t resp = ok_resp(90);
    assert_int_equal(kc_session_on_response(&s, &resp, NOW), KC_SESSION_OK);
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.session_id, 90);
    assert_int_equal(r.epoch, 1);
    assert_int_equal(r.n_parts, 0);
    kc_session_free(&s);
}

static void error_71_reopens_closing_old_not_surfaced(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_part_t w[4];
    open_four(&s, w);
    kc_session_req_t r;
    build_ok(&s, w, 3, &r); /* carries a forgotten entry that the broker refuses */
    kc_session_resp_t bad = {KC_KAFKA_INVALID_FETCH_SESSION_EPOCH, 0};
    assert_int_equal(kc_session_on_response(&s, &bad, NOW), KC_SESSION_RESET);
    build_ok(&s, w, 3, &r);
    assert_int_equal(r.session_id, 77); /* (S, 0): close S and open a new one */
    assert_int_equal(r.epoch, 0);
    assert_true(r.full);
    assert_int_equal(r.n_parts, 3);
    assert_int_equal(r.n_forgotten, 0);
    kc_session_resp_t resp = ok_resp(91);
    assert_int_equal(kc_session_on_response(&s, &resp, NOW), KC_SESSION_OK);
    build_ok(&s, w, 3, &r);
    assert_int_equal(r.session_id, 91);
    assert_int_equal(r.epoch, 1);
    kc_session_free(&s);
}

static void failed_request_changes_nothing(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_part_t w[4];
    open_four(&s, w);
    w[1].fetch_offset = 7;
    kc_session_req_t a, b;
    build_ok(&s, w, 3, &a);
    size_t a_parts = a.n_parts, a_forg = a.n_forgotten;
    int32_t a_id = a.session_id, a_epoch = a.epoch;
    kc_session_part_t a_p0 = a.parts[0];
    kc_tp_t a_f0 = a.forgotten[0];
    kc_error_t e;
    /* One in flight per broker. */
    assert_int_equal(kc_session_build(&s, w, 3, NOW, &b, &e), KC_ERR_STATE);
    kc_session_on_failure(&s);
    build_ok(&s, w, 3, &b);
    assert_int_equal(b.session_id, a_id);
    assert_int_equal(b.epoch, a_epoch);
    assert_int_equal(b.n_parts, a_parts);
    assert_int_equal(b.n_forgotten, a_forg);
    assert_memory_equal(&b.parts[0], &a_p0, sizeof a_p0);
    assert_memory_equal(&b.forgotten[0], &a_f0, sizeof a_f0);
    kc_session_free(&s);
}

/* A repeat of the committed set: the next epoch, nothing named, and `held` unchanged whatever
 * the answer says, so a partition the session holds is still vouched for afterwards and a real
 * build then diffs against the same set. */
static void build_same_repeats_the_held_set(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[4];
    want4(w);
    kc_session_req_t r;
    kc_error_t e;
    /* Not open yet: nothing to repeat. */
    assert_int_equal(kc_session_build_same(&s, &r, &e), KC_ERR_STATE);
    open_session(&s, w, 4);
    for (int32_t epoch = 1; epoch <= 3; epoch++) {
        assert_int_equal(kc_session_build_same(&s, &r, &e), KC_OK);
        assert_int_equal(r.session_id, 77);
        assert_int_equal(r.epoch, epoch);
        assert_false(r.full);
        assert_int_equal(r.n_parts, 0);
        assert_int_equal(r.n_forgotten, 0);
        /* One in flight per broker, either way of building it. */
        assert_int_equal(kc_session_build_same(&s, &r, &e), KC_ERR_STATE);
        assert_int_equal(kc_session_build(&s, w, 4, NOW, &r, &e), KC_ERR_STATE);
        kc_session_resp_t resp = ok_resp(77);
        assert_int_equal(kc_session_on_response(&s, &resp, NOW), KC_SESSION_OK);
        for (int i = 0; i < 4; i++)
            assert_non_null(kc_session_held(&s, &w[i].tp));
    }
    /* The held set is the opening one: the same wanted set names nothing, a moved one itself. */
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.epoch, 4);
    assert_int_equal(r.n_parts, 0);
    kc_session_resp_t resp = ok_resp(77);
    assert_int_equal(kc_session_on_response(&s, &resp, NOW), KC_SESSION_OK);
    w[2].fetch_offset = 31;
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.n_parts, 1);
    assert_int_equal(r.parts[0].fetch_offset, 31);
    kc_session_free(&s);
}

/* A failed repeat changes nothing either; a repeat answered with a session error reopens with
 * the full set, as any request does. */
static void build_same_failure_and_reset(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_part_t w[4];
    open_four(&s, w);
    kc_session_req_t r;
    kc_error_t e;
    assert_int_equal(kc_session_build_same(&s, &r, &e), KC_OK);
    kc_session_on_failure(&s);
    assert_int_equal(kc_session_build_same(&s, &r, &e), KC_OK);
    assert_int_equal(r.epoch, 1);
    kc_session_resp_t gone = {KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND, 0};
    assert_int_equal(kc_session_on_response(&s, &gone, NOW), KC_SESSION_RESET);
    assert_int_equal(kc_session_build_same(&s, &r, &e), KC_ERR_STATE);
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.epoch, 0);
    assert_true(r.full);
    assert_int_equal(r.n_parts, 4);
    kc_session_free(&s);
}

static void failed_open_stays_opening(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[4];
    want4(w);
    kc_session_req_t r;
    build_ok(&s, w, 4, &r);
    kc_session_on_failure(&s);
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.session_id, 0);
    assert_int_equal(r.epoch, 0);
    assert_int_equal(r.n_parts, 4);
    kc_session_free(&s);
}

static void sessionless_fallback_logs_once_and_retries(void **state)
{
    (void)state;
    count_lines = 0;
    kc_log_configure(count_sink, NULL, KC_LOG_DEBUG);
    kc_session_t s;
    kc_session_init(&s, 4, 30000);
    kc_session_part_t w[4];
    want4(w);
    kc_session_req_t r;
    build_ok(&s, w, 4, &r);
    kc_session_resp_t no_session = ok_resp(0); /* cache full / sessions disabled */
    assert_int_equal(kc_session_on_response(&s, &no_session, NOW), KC_SESSION_FALLBACK);
    /* That answer was a full fetch: its partitions are vouched for. */
    assert_non_null(kc_session_held(&s, &w[2].tp));
    assert_int_equal(kc_session_held(&s, &w[2].tp)->fetch_offset, 30);
    assert_false(kc_session_holds_partitions(&s)); /* but nothing to forget on the broker */
    for (int i = 0; i < 3; i++) {
        kc_error_t e;
        assert_int_equal(kc_session_build(&s, w, 4, NOW + 1000 * i, &r, &e), KC_OK);
        assert_int_equal(r.session_id, 0);
        assert_int_equal(r.epoch, -1);
        assert_true(r.full);
        assert_int_equal(r.n_parts, 4);
        assert_int_equal(kc_session_on_response(&s, &no_session, NOW), KC_SESSION_OK);
    }
    /* Backoff over: try a session again. */
    kc_error_t e;
    assert_int_equal(kc_session_build(&s, w, 4, NOW + 30000, &r, &e), KC_OK);
    assert_int_equal(r.session_id, 0);
    assert_int_equal(r.epoch, 0);
    /* ID_NOT_FOUND on the opening request also means "cannot hold one"; not logged again. */
    kc_session_resp_t nf = {KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND, 0};
    assert_int_equal(kc_session_on_response(&s, &nf, NOW + 30000), KC_SESSION_FALLBACK);
    assert_int_equal(kc_session_build(&s, w, 4, NOW + 30001, &r, &e), KC_OK);
    assert_int_equal(r.epoch, -1);
    kc_session_on_response(&s, &no_session, NOW);
    assert_int_equal(kc_session_build(&s, w, 4, NOW + 60000, &r, &e), KC_OK);
    assert_int_equal(r.epoch, 0);
    kc_session_resp_t yes = ok_resp(5);
    assert_int_equal(kc_session_on_response(&s, &yes, NOW + 60000), KC_SESSION_OK);
    assert_int_equal(kc_session_stats(&s)->fallbacks, 2);
    assert_int_equal(kc_session_stats(&s)->fallback_logs, 1);
    assert_int_equal(count_lines, 1);
    kc_log_configure(NULL, NULL, KC_LOG_INFO);
    kc_session_free(&s);
}

static void close_sends_id_minus_1(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[4];
    want4(w);
    kc_session_req_t r;
    kc_error_t e;
    assert_int_equal(kc_session_close(&s, &r, &e), KC_ERR_AGAIN); /* nothing open */
    open_session(&s, w, 4);
    assert_int_equal(kc_session_close(&s, &r, &e), KC_OK);
    assert_int_equal(r.session_id, 77);
    assert_int_equal(r.epoch, -1);
    assert_true(r.close);
    assert_int_equal(r.n_parts, 0);
    assert_int_equal(kc_session_build(&s, w, 4, NOW, &r, &e), KC_ERR_STATE);
    kc_session_resp_t resp = ok_resp(0);
    assert_int_equal(kc_session_on_response(&s, &resp, NOW), KC_SESSION_CLOSED);
    assert_int_equal(kc_session_close(&s, &r, &e), KC_ERR_AGAIN);
    kc_session_free(&s);
}

static void empty_wanted_drains_forgotten_then_nothing(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[4];
    want4(w);
    open_session(&s, w, 2);
    kc_session_req_t r;
    kc_error_t e;
    assert_true(kc_session_holds_partitions(&s));
    assert_int_equal(kc_session_build(&s, NULL, 0, NOW, &r, &e), KC_OK);
    assert_true(r.drain_only);
    assert_int_equal(r.n_parts, 0);
    assert_int_equal(r.n_forgotten, 2);
    kc_session_resp_t resp = ok_resp(77);
    kc_session_on_response(&s, &resp, NOW);
    assert_false(kc_session_holds_partitions(&s));
    assert_int_equal(kc_session_build(&s, NULL, 0, NOW, &r, &e), KC_ERR_AGAIN);
    kc_session_free(&s);
}

static void other_top_level_error_reported_and_reopens(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_part_t w[4];
    open_four(&s, w);
    kc_session_req_t r;
    build_ok(&s, w, 4, &r);
    kc_session_resp_t bad = {KC_KAFKA_UNKNOWN_SERVER_ERROR, 0};
    assert_int_equal(kc_session_on_response(&s, &bad, NOW), KC_SESSION_FAILED);
    build_ok(&s, w, 4, &r);
    assert_int_equal(r.epoch, 0);
    assert_true(r.full);
    kc_session_free(&s);
}

static void duplicate_partition_rejected(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[2] = {part(1, 0, 1), part(1, 0, 2)};
    kc_session_req_t r;
    kc_error_t e;
    assert_int_equal(kc_session_build(&s, w, 2, NOW, &r, &e), KC_ERR_INVALID_ARG);
    build_ok(&s, w, 1, &r); /* and nothing was left pending */
    kc_session_free(&s);
}

/* The session is keyed by kc_tp_t whatever the broker's age: topics a name-only broker (Metadata
 * before v10) knows only by name carry synthetic ids, and sit in the same session as topics
 * with real ids, with the same rules (steady state 0 entries, held partitions found by key).
 * A topic whose key moves from synthetic to real is forgotten under the old key once and added
 * under the new one; the Fetch codec decides what that means on the wire (fetch/codec.h). */
static void synthetic_and_real_keys_share_one_session(void **state)
{
    (void)state;
    kc_session_t s;
    kc_session_init(&s, 1, 60000);
    kc_session_part_t w[4];
    want4(w);                                /* topics 1 and 2: real ids */
    kc_tp_synthetic_id(w[0].tp.topic_id, 0); /* topic 1 becomes name-only, with two ids apart */
    kc_tp_synthetic_id(w[1].tp.topic_id, 0);
    kc_session_part_t other = part(3, 0, 50);
    kc_tp_synthetic_id(other.tp.topic_id, 1);
    kc_session_part_t all[5] = {w[0], w[1], w[2], w[3], other};
    open_session(&s, all, 5);
    kc_session_req_t r;
    build_ok(&s, all, 5, &r);
    assert_int_equal(r.n_parts, 0); /* nothing changed: 0 entries, as with ids */
    assert_int_equal(r.n_forgotten, 0);
    kc_session_resp_t resp = ok_resp(77);
    kc_session_on_response(&s, &resp, NOW);
    assert_non_null(kc_session_held(&s, &w[0].tp));
    assert_int_equal(kc_session_held(&s, &other.tp)->fetch_offset, 50);
    kc_tp_t same_partition_other_topic = other.tp;
    same_partition_other_topic.topic_id[15] ^= 2; /* synthetic id 3: never handed out */
    assert_null(kc_session_held(&s, &same_partition_other_topic));
    /* Topic 1 gets its real id (a broker with ids answered Metadata). */
    kc_session_part_t rekeyed[5] = {part(1, 0, 10), part(1, 1, 20), w[2], w[3], other};
    build_ok(&s, rekeyed, 5, &r);
    assert_int_equal(r.n_added, 2);
    assert_int_equal(r.n_altered, 0);
    assert_int_equal(r.n_forgotten, 2);
    for (size_t i = 0; i < r.n_forgotten; i++)
        assert_true(kc_tp_id_is_synthetic(r.forgotten[i].topic_id));
    kc_session_on_response(&s, &resp, NOW);
    assert_null(kc_session_held(&s, &w[0].tp));
    assert_non_null(kc_session_held(&s, &rekeyed[0].tp));
    build_ok(&s, rekeyed, 5, &r);
    assert_int_equal(r.n_parts, 0); /* and steady again */
    assert_int_equal(r.n_forgotten, 0);
    kc_session_free(&s);
}

/* The session's order of partitions (kc_tp_cmp, which compares ids as big-endian words) is
 * memcmp's order of the ids, then the partition number: ids that differ in one byte anywhere,
 * in either direction, and equal ids. */
static int sign(int v)
{
    return (v > 0) - (v < 0);
}

static void tp_order_is_byte_order(void **state)
{
    (void)state;
    uint32_t x = 2463534242u;
    for (int n = 0; n < 20000; n++) {
        kc_tp_t a, b;
        for (int i = 0; i < 16; i++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            a.topic_id[i] = (uint8_t)x;
        }
        b = a;
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        if (n % 4) /* three in four differ in one byte (0x00..0xff either way), one in four not */
            b.topic_id[x % 16] = (uint8_t)(x >> 8);
        a.partition = (int32_t)(x >> 20) % 7, b.partition = (int32_t)(x >> 24) % 7;
        int want = memcmp(a.topic_id, b.topic_id, 16);
        if (!want)
            want = (a.partition > b.partition) - (a.partition < b.partition);
        assert_int_equal(sign(kc_tp_cmp(&a, &b)), sign(want));
        assert_int_equal(sign(kc_tp_cmp(&b, &a)), -sign(want));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tp_order_is_byte_order),
        cmocka_unit_test(opens_with_0_0_and_full_set),
        cmocka_unit_test(after_response_id_and_epoch_plus_one),
        cmocka_unit_test(epoch_wraps_int32_max_to_1),
        cmocka_unit_test(steady_state_nothing_changed_sends_0_entries),
        cmocka_unit_test(consumed_partition_resent_others_not),
        cmocka_unit_test(seek_epoch_maxbytes_each_one_altered),
        cmocka_unit_test(unassign_forgotten_exactly_once),
        cmocka_unit_test(pause_forgets_and_resume_adds),
        cmocka_unit_test(error_70_reopens_with_full_set_not_surfaced),
        cmocka_unit_test(error_71_reopens_closing_old_not_surfaced),
        cmocka_unit_test(failed_request_changes_nothing),
        cmocka_unit_test(build_same_repeats_the_held_set),
        cmocka_unit_test(build_same_failure_and_reset),
        cmocka_unit_test(failed_open_stays_opening),
        cmocka_unit_test(sessionless_fallback_logs_once_and_retries),
        cmocka_unit_test(close_sends_id_minus_1),
        cmocka_unit_test(empty_wanted_drains_forgotten_then_nothing),
        cmocka_unit_test(other_top_level_error_reported_and_reopens),
        cmocka_unit_test(duplicate_partition_rejected),
        cmocka_unit_test(synthetic_and_real_keys_share_one_session),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
