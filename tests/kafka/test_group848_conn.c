/* engine/group/848/member on the real network path: io/loop + io/conn (the netloop branch) carry
 * the ConsumerGroupHeartbeat requests the member builds, at the version the connection
 * negotiated (ApiVersions), and FindCoordinator when the member asks to rediscover. One member,
 * one 3-partition topic: it must own all 3 at a stable, acknowledged epoch, and leave with -1.
 * Everything runs on this thread, which owns the loop (the network thread of this test).
 * Needs KC_BOOTSTRAP, KC_TESTKIT and KC_CLUSTER_DIR (tests/run-suite sets them). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "conn.h"
#include "group_driver.h"
#include "loop.h"

/* Owner: the test thread (the loop's owner). */
typedef struct ctx {
    kc_g848_t gc;
    kc_conn_t *conn;
    kc_consumer_group_heartbeat_request_t req; /* storage: gc's, valid while in flight */
    bool hb_inflight, fc_inflight, fc_pending;
    int beats, errors_seen, versions_seen;
    int16_t version;
    const char *group;
    kc_loop_t *loop;
    char coord[300];  /* the coordinator's host:port from the last FindCoordinator */
    bool coord_known; /* answered; drive() moves the connection there if needed */
    int moves;
} ctx_t;

static int64_t ms(void)
{
    return kc_now_ns() / 1000000;
}

static kc_err_t enc_hb(kc_wbuf_t *out, int16_t version, void *opaque)
{
    ctx_t *c = opaque;
    kc_error_t e;
    c->version = version;
    return kc_consumer_group_heartbeat_request_encode(&c->req, version, out, &e);
}

static void on_hb(kc_conn_t *conn, kc_err_t err, kc_buf_t *frame, size_t body_off, int16_t version,
                  void *opaque)
{
    (void)conn;
    ctx_t *c = opaque;
    c->hb_inflight = false;
    if (err != KC_OK) {
        kc_error_t why = {.code = err};
        kc_g848_on_heartbeat_failure(&c->gc, ms(), &why);
        return;
    }
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    kc_arena_t a = {0};
    kc_error_t e;
    kc_consumer_group_heartbeat_response_t resp;
    if (kc_consumer_group_heartbeat_response_decode(&resp, version, &r, &a, &e) != KC_OK)
        fail_msg("decode: %s", e.msg);
    c->beats++;
    c->errors_seen += resp.error_code != 0;
    kc_g848_on_heartbeat_response(&c->gc, ms(), &resp);
    kc_arena_free(&a);
    kc_buf_unref(frame);
}

static kc_err_t enc_fc(kc_wbuf_t *out, int16_t version, void *opaque)
{
    ctx_t *c = opaque;
    kc_find_coordinator_request_t m;
    kc_find_coordinator_request_init(&m);
    kc_str_t key = kc_str(c->group);
    m.key = key;
    m.coordinator_keys.count = 1;
    m.coordinator_keys.items = &key;
    kc_error_t e;
    return kc_find_coordinator_request_encode(&m, version, out, &e);
}

/* The member's REDISCOVER leads here; drive() moves the connection to the coordinator (with
 * several brokers the bootstrap node often is not it: the first heartbeat is then answered
 * NOT_COORDINATOR inside a successful response) and only then reports coordinator_ready. */
static void on_fc(kc_conn_t *conn, kc_err_t err, kc_buf_t *frame, size_t body_off, int16_t version,
                  void *opaque)
{
    (void)conn;
    ctx_t *c = opaque;
    c->fc_inflight = false;
    if (err != KC_OK) {
        c->fc_pending = true;
        return;
    }
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    kc_arena_t a = {0};
    kc_error_t e;
    kc_find_coordinator_response_t resp;
    assert_int_equal(kc_find_coordinator_response_decode(&resp, version, &r, &a, &e), KC_OK);
    assert_true(version >= 4);
    const kc_find_coordinator_response_coordinator_t *k = &resp.coordinators.items[0];
    if (k->error_code == 0) {
        snprintf(c->coord, sizeof c->coord, "%.*s:%d", (int)k->host.len, k->host.ptr, (int)k->port);
        c->coord_known = true;
    } else {
        c->fc_pending = true; /* not known yet (e.g. __consumer_offsets being created): ask again */
    }
    kc_arena_free(&a);
    kc_buf_unref(frame);
}

static void drive(ctx_t *c)
{
    kc_g848_action_t act;
    while (kc_g848_next_action(&c->gc, ms(), &act)) {
        switch (act.kind) {
        case KC_G848_ACT_ASSIGN:
        case KC_G848_ACT_REVOKE:
        case KC_G848_ACT_LOSE:
        case KC_G848_ACT_DROP:
            kc_g848_action_done(&c->gc, act.seq, ms());
            break;
        case KC_G848_ACT_COMMIT:
            kc_g848_on_commit_result(&c->gc, act.seq, 0, ms());
            break;
        case KC_G848_ACT_REDISCOVER: {
            kc_conn_req_spec_t s = {10,     4,     KC_FIND_COORDINATOR_REQUEST_MAX_VERSION,
                                    enc_fc, on_fc, c};
            assert_int_equal(kc_conn_send(c->conn, &s, NULL), KC_OK);
            c->fc_inflight = true;
            break;
        }
        case KC_G848_ACT_METADATA:
            kc_g848_on_metadata(&c->gc, ms());
            break;
        case KC_G848_ACT_ERROR:
            fail_msg("group error: %s", act.error.msg);
            break;
        default:
            break;
        }
    }
    if (c->coord_known && !c->hb_inflight) {
        c->coord_known = false;
        if (strcmp(kc_conn_peer(c->conn), c->coord) != 0) {
            kc_conn_close(c->conn);
            kc_conn_opts_t o = {
                .servers = c->coord, .client_id = "kc-g848-conn", .request_timeout_ms = 30000};
            assert_int_equal(kc_conn_new(&c->conn, c->loop, &o, NULL), KC_OK);
            kc_conn_start(c->conn);
            c->moves++;
        }
        kc_g848_coordinator_ready(&c->gc, ms());
    }
    if (c->fc_pending && !c->fc_inflight && !c->hb_inflight) {
        kc_conn_req_spec_t s = {10, 4, KC_FIND_COORDINATOR_REQUEST_MAX_VERSION, enc_fc, on_fc, c};
        assert_int_equal(kc_conn_send(c->conn, &s, NULL), KC_OK);
        c->fc_inflight = true;
        c->fc_pending = false;
    }
    if (c->hb_inflight || kc_conn_state(c->conn) != KC_CONN_READY)
        return;
    int v = kc_conn_pick_version(c->conn, KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY, 0, 1);
    assert_true(v >= 0);
    kc_error_t e;
    kc_err_t rc = kc_g848_heartbeat_due(&c->gc, ms(), (int16_t)v, &c->req, &e);
    if (rc == KC_ERR_AGAIN)
        return;
    if (rc != KC_OK)
        fail_msg("heartbeat: %s", e.msg);
    kc_conn_req_spec_t s = {
        KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY, (int16_t)v, (int16_t)v, enc_hb, on_hb, c};
    assert_int_equal(kc_conn_send(c->conn, &s, NULL), KC_OK);
    c->hb_inflight = true;
    kc_g848_heartbeat_sent(&c->gc, ms());
}

static void run_until(ctx_t *c, kc_loop_t *loop, bool (*done)(const ctx_t *), int64_t limit_ms)
{
    int64_t end = ms() + limit_ms;
    while (ms() < end && !done(c)) {
        drive(c);
        int64_t wait = kc_g848_next_wakeup(&c->gc, ms()) - ms();
        kc_loop_run_once(loop, (int)(wait < 1 ? 1 : wait > 50 ? 50 : wait));
    }
}

static bool owns_all(const ctx_t *c)
{
    return c->gc.state == KC_G848_STABLE && c->gc.rc.owned.n == 3 && !c->hb_inflight;
}

static bool gone(const ctx_t *c)
{
    return c->gc.state == KC_G848_UNSUBSCRIBED;
}

static void member_over_conn(void **state)
{
    (void)state;
    kc_loop_t *loop = NULL;
    kc_error_t e = {0};
    if (kc_loop_new(&loop, KC_LOOP_AUTO, &e) != KC_OK)
        fail_msg("loop: %s", e.msg);
    static ctx_t c;
    char group[64];
    snprintf(group, sizeof group, "kc-g848-conn-%d", (int)getpid());
    c.group = group;
    c.loop = loop;
    kc_conn_opts_t o = {.servers = kc_test_env("KC_BOOTSTRAP"),
                        .client_id = "kc-g848-conn",
                        .request_timeout_ms = 30000};
    assert_int_equal(kc_conn_new(&c.conn, loop, &o, NULL), KC_OK);
    kc_conn_start(c.conn);
    kc_g848_config_t cfg = {0};
    cfg.group_id = group;
    cfg.rebalance_timeout_ms = 30000;
    cfg.commit_on_revoke = true;
    cfg.commit_timeout_ms = 5000;
    cfg.coordinator_timeout_ms = 30000;
    cfg.retry_backoff_ms = 100;
    cfg.retry_backoff_max_ms = 1000;
    cfg.lookup = kc_gd_lookup;
    assert_int_equal(kc_g848_init(&c.gc, &cfg, &e), KC_OK);
    const char *topics[] = {kc_gd_topic};
    assert_int_equal(kc_g848_subscribe(&c.gc, topics, 1, NULL, ms(), &e), KC_OK);
    run_until(&c, loop, owns_all, 30000);
    assert_true(owns_all(&c));
    assert_int_equal(c.version, 1); /* Kafka 4.1: v1, client-generated member id */
    assert_true(c.gc.epoch > 0);
    print_message("# over io/conn: epoch %d, %d heartbeats (%d answered with an error), "
                  "%d coordinator move(s)\n",
                  c.gc.epoch, c.beats, c.errors_seen, c.moves);
    kc_g848_close(&c.gc, ms());
    run_until(&c, loop, gone, 10000);
    assert_true(gone(&c));
    assert_int_equal(c.gc.rc.owned.n, 0);
    kc_g848_free(&c.gc);
    kc_conn_close(c.conn);
    for (int i = 0; i < 20; i++)
        kc_loop_run_once(loop, 10);
    kc_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(member_over_conn),
    };
    return cmocka_run_group_tests(tests, kc_gd_create_topic, NULL);
}
