/* engine/fetch/plan and engine/fetch/partition: grouping by broker, one fetch in flight, draining,
 * throttling, per-partition errors and KIP-320 validation, without a network. */
#include "kc_test.h"

#include <string.h>

#include "fetch/plan.h"
#include "proto/kafka_errors.h"

#define NOW 100000

static kc_fetch_plan_conf_t conf(void)
{
    kc_fetch_plan_conf_t c;
    memset(&c, 0, sizeof c);
    c.part.reset = KC_RESET_EARLIEST;
    c.part.replica_ttl_ms = 300000;
    c.part.backoff_ms = 100;
    c.part.backoff_max_ms = 1000;
    c.sessionless_backoff_ms = 60000;
    return c;
}

/* 12 partitions: topic 1 p0..5, topic 2 p0..5; leader of partition i is broker (i % 3) + 1. */
static void twelve(kc_partition_t p[12])
{
    for (int i = 0; i < 12; i++) {
        kc_tp_t tp;
        memset(&tp, 0, sizeof tp);
        tp.topic_id[0] = (uint8_t)(1 + i / 6);
        tp.partition = i % 6;
        kc_partition_init(&p[i], &tp, 1048576);
        kc_partition_on_metadata(&p[i], (i % 3) + 1, 5);
        kc_partition_on_reset(&p[i], 100 * i, 5);
    }
}

/* A plan whose consumer has a rack (read replicas apply) over twelve's partitions. */
static void rack_plan(kc_fetch_plan_conf_t *c, kc_fetch_plan_t *plan, kc_partition_t p[12])
{
    *c = conf();
    c->part.has_rack = 1;
    kc_fetch_plan_init(plan, c);
    twelve(p);
}

static kc_fetch_send_t *send_for(kc_fetch_send_t *s, size_t n, int32_t broker)
{
    for (size_t i = 0; i < n; i++)
        if (s[i].fetcher->broker_id == broker)
            return &s[i];
    return NULL;
}

static void respond_all(kc_fetch_plan_t *plan, kc_fetch_send_t *s, size_t n, int64_t now)
{
    for (size_t i = 0; i < n; i++) {
        kc_session_resp_t r = {0, 1000 + s[i].fetcher->broker_id};
        assert_int_equal(kc_fetch_plan_on_response(plan, s[i].fetcher->broker_id, &r, 0, now),
                         KC_SESSION_OK);
    }
}

static void twelve_partitions_three_brokers_three_requests(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_fetch_plan_t plan;
    kc_fetch_plan_init(&plan, &c);
    kc_partition_t p[12];
    twelve(p);
    kc_error_t e;
    assert_int_equal(kc_fetch_plan_compute(&plan, p, 12, NOW, &e), KC_OK);
    kc_fetch_send_t s[16];
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    assert_int_equal(n, 3);
    for (int32_t b = 1; b <= 3; b++) {
        kc_fetch_send_t *x = send_for(s, n, b);
        assert_non_null(x);
        assert_int_equal(x->req.n_parts, 4);
        assert_int_equal(x->req.epoch, 0);
        for (size_t j = 0; j < x->req.n_parts; j++) {
            /* each entry belongs to this broker */
            int idx = (x->req.parts[j].tp.topic_id[0] - 1) * 6 + x->req.parts[j].tp.partition;
            assert_int_equal(idx % 3 + 1, b);
            assert_int_equal(x->req.parts[j].fetch_offset, 100 * idx);
        }
    }
    respond_all(&plan, s, n, NOW);
    /* Steady state: 3 requests, 0 partition entries each. */
    assert_int_equal(kc_fetch_plan_compute(&plan, p, 12, NOW, &e), KC_OK);
    n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(s[i].req.n_parts, 0);
        assert_int_equal(s[i].req.session_id, 1000 + s[i].fetcher->broker_id);
        assert_int_equal(s[i].req.epoch, 1);
    }
    kc_fetch_plan_free(&plan);
}

static void one_in_flight_per_broker_no_waiting_for_others(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_fetch_plan_t plan;
    kc_fetch_plan_init(&plan, &c);
    kc_partition_t p[12];
    twelve(p);
    kc_error_t e;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    kc_fetch_send_t s[16];
    assert_int_equal(kc_fetch_plan_ready(&plan, NOW, s, 16, NULL), 3);
    assert_int_equal(kc_fetch_plan_ready(&plan, NOW, s, 16, NULL), 0);
    kc_session_resp_t r = {0, 55};
    kc_fetch_plan_on_response(&plan, 2, &r, 0, NOW);
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].fetcher->broker_id, 2);
    assert_int_equal(s[0].req.session_id, 55);
    kc_fetch_plan_free(&plan);
}

/* A compute while brokers have a Fetch in flight leaves their wanted sets alone and does not
 * look at their partitions (no fetch target asked: a backoff that ended stays BACKOFF until the
 * broker answers); it rebuilds only the idle broker's, and a partition that moved from a busy
 * broker to an idle one is wanted there at once. */
static void compute_skips_brokers_in_flight(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_fetch_plan_t plan;
    kc_fetch_plan_init(&plan, &c);
    kc_partition_t p[12];
    twelve(p);
    kc_error_t e;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    kc_fetch_send_t s[16];
    assert_int_equal(kc_fetch_plan_ready(&plan, NOW, s, 16, NULL), 3);
    kc_session_resp_t r = {0, 55};
    kc_fetch_plan_on_response(&plan, 2, &r, 0, NOW); /* brokers 1 and 3 still in flight */
    assert_true(kc_fetch_plan_busy(&plan, 1));
    assert_false(kc_fetch_plan_busy(&plan, 2));
    assert_false(kc_fetch_plan_busy(&plan, KC_NO_BROKER));
    p[0].state = KC_FS_BACKOFF; /* broker 1's; its backoff is over at NOW */
    p[0].backoff_until_ms = NOW;
    kc_partition_on_metadata(&p[3], 2, 5); /* broker 1's partition 3 moves to broker 2 */
    p[3].state = KC_FS_ACTIVE;             /* and its position was validated there */
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    assert_int_equal(p[0].state, KC_FS_BACKOFF);
    assert_int_equal(kc_fetch_plan_find(&plan, 1)->n_wanted, 4); /* as the request had it */
    assert_int_equal(kc_fetch_plan_find(&plan, 3)->n_wanted, 4);
    assert_int_equal(kc_fetch_plan_find(&plan, 2)->n_wanted, 5);
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].req.n_parts, 1); /* the newcomer: the session held the other four */
    kc_fetch_plan_on_response(&plan, 1, &r, 0, NOW);
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    assert_int_equal(p[0].state, KC_FS_ACTIVE);
    assert_int_equal(kc_fetch_plan_find(&plan, 1)->n_wanted, 3);
    kc_fetch_plan_free(&plan);
}

static void emptied_broker_drains_forgotten_once_then_dropped(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_fetch_plan_t plan;
    kc_fetch_plan_init(&plan, &c);
    kc_partition_t p[12];
    twelve(p);
    kc_error_t e;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    kc_fetch_send_t s[16];
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    respond_all(&plan, s, n, NOW);
    /* Broker 3 loses leadership of its 4 partitions to broker 1. */
    for (int i = 2; i < 12; i += 3) {
        kc_partition_on_metadata(&p[i], 1, 6);
        p[i].state = KC_FS_ACTIVE; /* validated, to keep this test about the plan */
    }
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    assert_int_equal(n, 3);
    kc_fetch_send_t *b3 = send_for(s, n, 3), *b1 = send_for(s, n, 1);
    assert_true(b3->req.drain_only);
    assert_int_equal(b3->req.n_parts, 0);
    assert_int_equal(b3->req.n_forgotten, 4);
    assert_int_equal(b1->req.n_added, 4);
    assert_int_equal(b1->req.n_altered, 0);
    respond_all(&plan, s, n, NOW);
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    assert_int_equal(n, 2);
    assert_null(send_for(s, n, 3));
    assert_null(kc_fetch_plan_find(&plan, 3));
    assert_int_equal(plan.stats.fetchers_dropped, 1);
    kc_fetch_plan_free(&plan);
}

static void throttle_and_failure_hold_back_that_broker_only(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_fetch_plan_t plan;
    kc_fetch_plan_init(&plan, &c);
    kc_partition_t p[12];
    twelve(p);
    kc_error_t e;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    kc_fetch_send_t s[16];
    kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    kc_session_resp_t r = {0, 7};
    kc_fetch_plan_on_response(&plan, 1, &r, 500, NOW); /* throttled 500 ms */
    kc_fetch_plan_on_response(&plan, 2, &r, 0, NOW);
    kc_fetch_plan_on_failure(&plan, 3, NOW); /* backoff 100 ms */
    int64_t wake;
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, &wake);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].fetcher->broker_id, 2);
    assert_int_equal(wake, NOW + 100);
    n = kc_fetch_plan_ready(&plan, NOW + 100, s, 16, &wake);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].fetcher->broker_id, 3);
    assert_int_equal(s[0].req.epoch, 0); /* the failed open is sent again */
    assert_int_equal(wake, NOW + 500);
    n = kc_fetch_plan_ready(&plan, NOW + 500, s, 16, NULL);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].fetcher->broker_id, 1);
    kc_fetch_plan_free(&plan);
}

static void paused_and_inactive_partitions_not_wanted(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_fetch_plan_t plan;
    kc_fetch_plan_init(&plan, &c);
    kc_partition_t p[12];
    twelve(p);
    p[0].paused = 1;
    p[3].state = KC_FS_AWAIT_VALIDATION;
    kc_error_t e;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    kc_fetch_send_t s[16];
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    assert_int_equal(send_for(s, n, 1)->req.n_parts, 2);
    assert_int_equal(send_for(s, n, 2)->req.n_parts, 4);
    kc_fetch_plan_free(&plan);
}

/* Which brokers' sets may go again without a pass (kc_fetch_plan_settled): a broker is unsettled
 * by a partition left out for what time alone ends (backoff, offsets awaited), also when that
 * partition comes before the broker's first wanted one in the pass, or routed through a read
 * replica; a pause leaves it settled. A settled broker's answered set repeats as a request naming
 * nothing; a pass clears that, and the next request is built from the set again. */
static void settled_brokers_and_repeats(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c;
    kc_fetch_plan_t plan;
    kc_partition_t p[12];
    rack_plan(&c, &plan, p);
    p[0].paused = 1;            /* broker 1: paused only */
    p[1].state = KC_FS_BACKOFF; /* broker 2: a backoff, first in the pass */
    p[1].backoff_until_ms = NOW + 500;
    p[5].state = KC_FS_AWAIT_VALIDATION; /* broker 3: offsets awaited */
    kc_error_t e;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    assert_true(kc_fetch_plan_settled(&plan, 1));
    assert_false(kc_fetch_plan_settled(&plan, 2));
    assert_false(kc_fetch_plan_settled(&plan, 3));
    assert_false(kc_fetch_plan_settled(&plan, 4)); /* no fetcher */
    kc_fetch_send_t s[16];
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    assert_int_equal(n, 3);
    assert_false(kc_fetch_plan_settled(&plan, 1)); /* in flight */
    respond_all(&plan, s, n, NOW);
    assert_true(kc_fetch_plan_settled(&plan, 1));
    /* Without a pass, broker 1's answered set goes again naming nothing (a repeat: its session
     * holds it), twice over. */
    for (int round = 0; round < 2; round++) {
        n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
        assert_int_equal(n, 3);
        kc_fetch_send_t *b1 = send_for(s, n, 1);
        assert_int_equal(b1->req.n_parts, 0);
        assert_int_equal(b1->req.n_forgotten, 0);
        assert_int_equal(b1->fetcher->session.stats.epoch, round + 1);
        respond_all(&plan, s, n, NOW);
    }
    /* A pass rebuilds every set: broker 1's partition 9 moved on, so its request names it. */
    p[9].position += 5;
    p[1].state = KC_FS_ACTIVE;
    p[5].state = KC_FS_ACTIVE;
    p[3].preferred_replica = 3; /* broker 1's partition 3 read from broker 3 */
    p[3].preferred_until_ms = NOW + 1000;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    assert_true(kc_fetch_plan_settled(&plan, 1));
    assert_true(kc_fetch_plan_settled(&plan, 2));
    assert_false(kc_fetch_plan_settled(&plan, 3)); /* a replica's route lapses with time */
    n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    kc_fetch_send_t *b1 = send_for(s, n, 1);
    assert_int_equal(b1->req.n_parts, 1);
    assert_int_equal(b1->req.n_forgotten, 1); /* partition 3, now broker 3's */
    assert_int_equal(b1->req.parts[0].fetch_offset, p[9].position);
    /* A change while the requests are out (say broker 1's partition 6 was unassigned): the pass
     * keeps the sets in flight as they were, so none of them is settled once answered, until a
     * pass after the answer rebuilds it. */
    kc_fetch_plan_changed(&plan);
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    respond_all(&plan, s, n, NOW);
    assert_false(kc_fetch_plan_settled(&plan, 1));
    assert_false(kc_fetch_plan_settled(&plan, 2));
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    assert_true(kc_fetch_plan_settled(&plan, 1));
    kc_fetch_plan_free(&plan);
}

/* A read replica lapses in a pass that passes the partition over because its leader's Fetch is
 * out: the leader's set, built while the partition read from the replica, lacks it, so it is
 * not settled once answered. */
static void replica_lapse_unsettles_a_busy_leader(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c;
    kc_fetch_plan_t plan;
    kc_partition_t p[12];
    rack_plan(&c, &plan, p);
    p[0].preferred_replica = 3; /* leader broker 1 */
    p[0].preferred_until_ms = NOW + 100;
    kc_error_t e;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    kc_fetch_send_t s[16];
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    respond_all(&plan, s, n, NOW);
    assert_true(kc_fetch_plan_settled(&plan, 1));
    n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL); /* repeats, all three out */
    assert_int_equal(n, 3);
    kc_fetch_plan_compute(&plan, p, 12, NOW + 200, &e);
    assert_int_equal(p[0].preferred_replica, KC_NO_BROKER);
    respond_all(&plan, s, n, NOW + 200);
    assert_false(kc_fetch_plan_settled(&plan, 1));
    assert_true(kc_fetch_plan_settled(&plan, 2));
    kc_fetch_plan_compute(&plan, p, 12, NOW + 200, &e);
    assert_true(kc_fetch_plan_settled(&plan, 1));
    assert_int_equal(kc_fetch_plan_find(&plan, 1)->n_wanted, 4);
    kc_fetch_plan_free(&plan);
}

static void close_sends_minus_1_to_open_sessions(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_fetch_plan_t plan;
    kc_fetch_plan_init(&plan, &c);
    kc_partition_t p[12];
    twelve(p);
    kc_error_t e;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    kc_fetch_send_t s[16];
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    respond_all(&plan, s, n, NOW);
    n = kc_fetch_plan_close(&plan, s, 16);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++) {
        assert_true(s[i].req.close);
        assert_int_equal(s[i].req.epoch, -1);
        assert_int_equal(s[i].req.session_id, 1000 + s[i].fetcher->broker_id);
    }
    kc_fetch_plan_free(&plan);
}

/* ---- per-partition decisions -------------------------------------------------------------- */

static void error_classification_table(void **state)
{
    (void)state;
    static const struct {
        int16_t code;
        kc_fetch_action_t want;
    } t[] = {
        {KC_KAFKA_NONE, KC_FA_NONE},
        {KC_KAFKA_NOT_LEADER_OR_FOLLOWER, KC_FA_MOVE},
        {KC_KAFKA_FENCED_LEADER_EPOCH, KC_FA_MOVE},
        {KC_KAFKA_UNKNOWN_LEADER_EPOCH, KC_FA_MOVE},
        {KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION, KC_FA_MOVE},
        {KC_KAFKA_UNKNOWN_TOPIC_ID, KC_FA_MOVE},
        {KC_KAFKA_OFFSET_OUT_OF_RANGE, KC_FA_OUT_OF_RANGE},
        {KC_KAFKA_KAFKA_STORAGE_ERROR, KC_FA_BACKOFF},
        {KC_KAFKA_UNKNOWN_SERVER_ERROR, KC_FA_BACKOFF},
        {9999, KC_FA_BACKOFF}, /* a code we have never seen */
        {KC_KAFKA_TOPIC_AUTHORIZATION_FAILED, KC_FA_REPORT},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (kc_fetch_classify_error(t[i].code) != t[i].want)
            fail_msg("code %d: got %d want %d", t[i].code, kc_fetch_classify_error(t[i].code),
                     t[i].want);
    }
}

static void not_leader_keeps_position_and_validates_on_new_leader(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_partition_t p[12];
    twelve(p);
    kc_partition_event_t ev;
    kc_partition_on_fetch_error(&p[4], KC_KAFKA_NOT_LEADER_OR_FOLLOWER, 0, &c.part, NOW, &ev);
    assert_true(ev.refresh_metadata);
    assert_false(ev.report);
    assert_int_equal(p[4].state, KC_FS_AWAIT_METADATA);
    assert_int_equal(p[4].position, 400);
    assert_int_equal(kc_partition_fetch_target(&p[4], &c.part, NOW), KC_NO_BROKER);
    assert_int_equal(kc_partition_on_metadata(&p[4], 3, 6), 1);
    assert_int_equal(p[4].state, KC_FS_AWAIT_VALIDATION);
    kc_partition_on_validation(&p[4], 0, 5, 450, &c.part, NOW, &ev);
    assert_int_equal(p[4].state, KC_FS_ACTIVE);
    assert_false(ev.truncated);
    assert_int_equal(p[4].position, 400);
    assert_int_equal(kc_partition_fetch_target(&p[4], &c.part, NOW), 3);
}

static void validation_detects_truncation(void **state)
{
    (void)state;
    assert_int_equal(kc_partition_validate(400, 0, 5, 400), KC_VALID_OK);
    assert_int_equal(kc_partition_validate(400, 0, 5, 900), KC_VALID_OK);
    assert_int_equal(kc_partition_validate(400, 0, 5, 399), KC_VALID_TRUNCATED);
    assert_int_equal(kc_partition_validate(400, 0, -1, -1), KC_VALID_UNKNOWN);
    assert_int_equal(kc_partition_validate(400, KC_KAFKA_NOT_LEADER_OR_FOLLOWER, 5, 399),
                     KC_VALID_RETRY);

    kc_fetch_plan_conf_t c = conf();
    kc_partition_t p[12];
    twelve(p);
    kc_partition_on_metadata(&p[4], 3, 6);
    assert_int_equal(p[4].state, KC_FS_AWAIT_VALIDATION);
    kc_partition_event_t ev;
    kc_partition_on_validation(&p[4], 0, 5, 380, &c.part, NOW, &ev);
    assert_true(ev.truncated);
    assert_true(ev.report);
    assert_int_equal(ev.truncated_from, 400);
    assert_int_equal(p[4].position, 380);
    assert_int_equal(p[4].position_epoch, 5);
    assert_int_equal(p[4].state, KC_FS_ACTIVE);
}

static void seek_skips_validation(void **state)
{
    (void)state;
    kc_partition_t p[12];
    twelve(p);
    kc_partition_seek(&p[1], 7);
    assert_int_equal(kc_partition_on_metadata(&p[1], 3, 9), 0); /* no epoch to validate */
    assert_int_equal(p[1].state, KC_FS_ACTIVE);
}

static void out_of_range_applies_reset_policy(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_partition_t p[12];
    kc_partition_event_t ev;
    twelve(p);

    c.part.reset = KC_RESET_EARLIEST;
    kc_partition_on_fetch_error(&p[0], KC_KAFKA_OFFSET_OUT_OF_RANGE, 0, &c.part, NOW, &ev);
    assert_int_equal(p[0].state, KC_FS_AWAIT_RESET);
    assert_true(ev.needs_list_offsets);
    assert_int_equal(ev.reset_timestamp, -2);
    assert_false(ev.report);

    c.part.reset = KC_RESET_LATEST;
    kc_partition_on_fetch_error(&p[1], KC_KAFKA_OFFSET_OUT_OF_RANGE, 0, &c.part, NOW, &ev);
    assert_int_equal(ev.reset_timestamp, -1);

    c.part.reset = KC_RESET_NONE;
    kc_partition_on_fetch_error(&p[2], KC_KAFKA_OFFSET_OUT_OF_RANGE, 0, &c.part, NOW, &ev);
    assert_int_equal(p[2].state, KC_FS_STOPPED);
    assert_true(ev.report);
    assert_false(ev.needs_list_offsets);
    assert_int_equal(p[2].position, 200); /* no silent jump */
    kc_partition_seek(&p[2], 0);
    assert_int_equal(p[2].state, KC_FS_ACTIVE);

    /* From a preferred read replica: back to the leader, no reset. */
    c.part.has_rack = 1;
    p[3].preferred_replica = 2;
    p[3].preferred_until_ms = NOW + 1000;
    kc_partition_on_fetch_error(&p[3], KC_KAFKA_OFFSET_OUT_OF_RANGE, 1, &c.part, NOW, &ev);
    assert_int_equal(p[3].state, KC_FS_ACTIVE);
    assert_int_equal(p[3].preferred_replica, KC_NO_BROKER);
    assert_int_equal(p[3].position, 300);
}

static void storage_error_backs_off_that_partition_only(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_fetch_plan_t plan;
    kc_fetch_plan_init(&plan, &c);
    kc_partition_t p[12];
    twelve(p);
    kc_partition_event_t ev;
    kc_partition_on_fetch_error(&p[0], KC_KAFKA_KAFKA_STORAGE_ERROR, 0, &c.part, NOW, &ev);
    assert_int_equal(p[0].state, KC_FS_BACKOFF);
    assert_int_equal(p[0].backoff_until_ms, NOW + 100);
    kc_error_t e;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    kc_fetch_send_t s[16];
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    assert_int_equal(send_for(s, n, 1)->req.n_parts, 3); /* the other 3 keep flowing */
    /* A second error doubles the backoff. */
    kc_partition_on_fetch_error(&p[0], KC_KAFKA_KAFKA_STORAGE_ERROR, 0, &c.part, NOW, &ev);
    assert_int_equal(p[0].backoff_until_ms, NOW + 200);
    assert_int_equal(kc_partition_fetch_target(&p[0], &c.part, NOW + 199), KC_NO_BROKER);
    assert_int_equal(kc_partition_fetch_target(&p[0], &c.part, NOW + 200), 1);
    assert_int_equal(p[0].state, KC_FS_ACTIVE);
    kc_fetch_plan_free(&plan);
}

static void preferred_replica_with_rack_expires_to_leader(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_partition_t p[12];
    twelve(p);
    /* Without client.rack the replica named by a broker is ignored. */
    kc_partition_on_fetch_ok(&p[0], 1000, 1000, 0, 2, &c.part, NOW);
    assert_int_equal(kc_partition_fetch_target(&p[0], &c.part, NOW), 1);
    c.part.has_rack = 1;
    kc_partition_on_fetch_ok(&p[0], 1000, 1000, 0, 2, &c.part, NOW);
    assert_int_equal(kc_partition_fetch_target(&p[0], &c.part, NOW), 2);
    assert_int_equal(kc_partition_fetch_target(&p[0], &c.part, NOW + 300000 - 1), 2);
    assert_int_equal(kc_partition_fetch_target(&p[0], &c.part, NOW + 300000), 1);
    /* An error while reading from the replica also sends us back. */
    kc_partition_on_fetch_ok(&p[0], 1000, 1000, 0, 2, &c.part, NOW);
    kc_partition_event_t ev;
    kc_partition_on_fetch_error(&p[0], KC_KAFKA_NOT_LEADER_OR_FOLLOWER, 1, &c.part, NOW, &ev);
    assert_int_equal(p[0].preferred_replica, KC_NO_BROKER);
    assert_int_equal(p[0].lag, 1000);
}

static void failed_replica_sends_its_partitions_to_the_leader(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c;
    kc_fetch_plan_t plan;
    kc_partition_t p[12];
    rack_plan(&c, &plan, p); /* p[0] and p[3] lead on broker 1 */
    kc_partition_on_fetch_ok(&p[0], 1000, 1000, 0, 2, &c.part, NOW);
    kc_partition_on_fetch_ok(&p[3], 1000, 1000, 0, 3, &c.part, NOW);
    kc_error_t e;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    kc_fetch_send_t s[16];
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    assert_int_equal(send_for(s, n, 1)->req.n_parts, 2); /* 4 led, 2 read elsewhere */
    assert_int_equal(send_for(s, n, 2)->req.n_parts, 5);
    /* Broker 2's Fetch fails: only the partition reading from it as a replica moves; broker
     * 2's own leaderships stay (metadata moves those), and p[3] keeps replica 3. */
    kc_fetch_plan_on_failure(&plan, 2, NOW);
    int moved = 0;
    for (int i = 0; i < 12; i++)
        moved += kc_partition_on_broker_failure(&p[i], 2);
    assert_int_equal(moved, 1);
    assert_int_equal(kc_partition_fetch_target(&p[0], &c.part, NOW), 1);
    assert_int_equal(kc_partition_fetch_target(&p[3], &c.part, NOW), 3);
    assert_int_equal(kc_partition_fetch_target(&p[1], &c.part, NOW), 2);
    /* The leader is never "failed away" from. */
    assert_int_equal(kc_partition_on_broker_failure(&p[1], 2), 0);
    assert_int_equal(kc_partition_fetch_target(&p[1], &c.part, NOW), 2);
    kc_fetch_plan_free(&plan);
}

static void stale_response_records_dropped(void **state)
{
    (void)state;
    kc_fetch_plan_conf_t c = conf();
    kc_fetch_plan_t plan;
    kc_fetch_plan_init(&plan, &c);
    kc_partition_t p[12];
    twelve(p);
    kc_error_t e;
    kc_fetch_plan_compute(&plan, p, 12, NOW, &e);
    kc_fetch_send_t s[16];
    size_t n = kc_fetch_plan_ready(&plan, NOW, s, 16, NULL);
    respond_all(&plan, s, n, NOW);
    kc_fetcher_t *f1 = kc_fetch_plan_find(&plan, 1);
    const kc_session_part_t *held = kc_session_held(&f1->session, &p[0].tp);
    assert_non_null(held);
    assert_int_equal(held->fetch_offset, 0);
    assert_null(kc_session_held(&f1->session, &p[1].tp)); /* p[1] is broker 2's */
    assert_true(kc_fetch_plan_accepts(&p[0], 1, held->fetch_offset, &c, NOW));
    assert_false(kc_fetch_plan_accepts(&p[0], 2, held->fetch_offset, &c, NOW)); /* moved */
    kc_partition_seek(&p[0], 50); /* seeked while in flight */
    assert_false(kc_fetch_plan_accepts(&p[0], 1, held->fetch_offset, &c, NOW));
    kc_partition_seek(&p[0], 0);
    p[0].paused = 1;
    assert_false(kc_fetch_plan_accepts(&p[0], 1, held->fetch_offset, &c, NOW));
    kc_fetch_plan_free(&plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(twelve_partitions_three_brokers_three_requests),
        cmocka_unit_test(one_in_flight_per_broker_no_waiting_for_others),
        cmocka_unit_test(compute_skips_brokers_in_flight),
        cmocka_unit_test(emptied_broker_drains_forgotten_once_then_dropped),
        cmocka_unit_test(throttle_and_failure_hold_back_that_broker_only),
        cmocka_unit_test(paused_and_inactive_partitions_not_wanted),
        cmocka_unit_test(settled_brokers_and_repeats),
        cmocka_unit_test(replica_lapse_unsettles_a_busy_leader),
        cmocka_unit_test(close_sends_minus_1_to_open_sessions),
        cmocka_unit_test(error_classification_table),
        cmocka_unit_test(not_leader_keeps_position_and_validates_on_new_leader),
        cmocka_unit_test(validation_detects_truncation),
        cmocka_unit_test(seek_skips_validation),
        cmocka_unit_test(out_of_range_applies_reset_policy),
        cmocka_unit_test(storage_error_backs_off_that_partition_only),
        cmocka_unit_test(preferred_replica_with_rack_expires_to_leader),
        cmocka_unit_test(failed_replica_sends_its_partitions_to_the_leader),
        cmocka_unit_test(stale_response_records_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
