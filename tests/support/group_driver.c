/* KIP-848 tests' broker helpers over blocking sockets (group_driver.h): coordinator lookup,
 * ConsumerGroupDescribe, Metadata, heartbeats, and the pure member whose actions complete at
 * once. Owner: the test's thread. */
#include "group_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker_blocking.h"
#include "kc_test.h"
#include "proto/kafka_errors.h"
#include "proto/proto.h"

int64_t kc_gd_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint8_t kc_gd_topic_id[16];
char kc_gd_topic[64];
const char *kc_gd_lookup(void *ctx, const uint8_t id[16])
{
    (void)ctx;
    return memcmp(id, kc_gd_topic_id, 16) == 0 ? kc_gd_topic : NULL;
}

/* Metadata for one topic, asked again while the broker does not know it yet (a topic just
 * created reaches every broker's metadata cache a moment later). */
void kc_gd_metadata_topic(int fd, const char *name, uint8_t id_out[16], int32_t partitions)
{
    for (int attempt = 0;; attempt++) {
        kc_metadata_request_t m;
        kc_metadata_request_init(&m);
        kc_metadata_request_topic_t t = {{{0}}, kc_str(name)};
        m.topics.count = 1;
        m.topics.items = &t;
        uint8_t *frame;
        kc_rbuf_t r;
        kc_tb_exchange(fd, KC_METADATA_REQUEST_API_KEY, 12, &m,
                       (kc_tb_encode_fn)kc_metadata_request_encode, &frame, &r);
        kc_arena_t a = {0};
        kc_error_t e;
        kc_metadata_response_t resp;
        assert_int_equal(kc_metadata_response_decode(&resp, 12, &r, &a, &e), KC_OK);
        assert_int_equal(resp.topics.count, 1);
        int16_t code = resp.topics.items[0].error_code;
        if (code == 0 && resp.topics.items[0].partitions.count == partitions) {
            memcpy(id_out, resp.topics.items[0].topic_id.b, 16);
            free(frame);
            kc_arena_free(&a);
            return;
        }
        free(frame);
        kc_arena_free(&a);
        if (attempt >= 100)
            fail_msg("metadata for %s: error %d after %d attempts", name, code, attempt);
        usleep(100 * 1000);
    }
}

/* FindCoordinator v4 until the group's coordinator is known (a fresh cluster creates
 * __consumer_offsets on the first ask); returns a connection to it. */
int kc_gd_coordinator(const char *bootstrap, const char *group)
{
    int fd = kc_tb_connect(bootstrap);
    assert_true(fd >= 0);
    for (int i = 0; i < 100; i++) {
        kc_find_coordinator_request_t m;
        kc_find_coordinator_request_init(&m);
        kc_str_t key = kc_str(group);
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
        const kc_find_coordinator_response_coordinator_t *c = &resp.coordinators.items[0];
        if (c->error_code == 0) {
            char addr[300];
            snprintf(addr, sizeof addr, "%.*s:%d", (int)c->host.len, c->host.ptr, (int)c->port);
            free(frame);
            kc_arena_free(&a);
            close(fd);
            fd = kc_tb_connect(addr);
            assert_true(fd >= 0);
            return fd;
        }
        free(frame);
        kc_arena_free(&a);
        usleep(200 * 1000);
    }
    fail_msg("no coordinator for %s", group);
    return -1;
}

/* ConsumerGroupDescribe v0: number of members; the first member's epoch and assignment size. */
int kc_gd_describe(int fd, const char *group, const char *member_id, int32_t *epoch,
                   int *n_assigned)
{
    kc_consumer_group_describe_request_t m;
    kc_consumer_group_describe_request_init(&m);
    kc_str_t g = kc_str(group);
    m.group_ids.count = 1;
    m.group_ids.items = &g;
    uint8_t *frame;
    kc_rbuf_t r;
    kc_tb_exchange(fd, KC_CONSUMER_GROUP_DESCRIBE_REQUEST_API_KEY, 0, &m,
                   (kc_tb_encode_fn)kc_consumer_group_describe_request_encode, &frame, &r);
    kc_arena_t a = {0};
    kc_error_t e;
    kc_consumer_group_describe_response_t resp;
    assert_int_equal(kc_consumer_group_describe_response_decode(&resp, 0, &r, &a, &e), KC_OK);
    assert_int_equal(resp.groups.count, 1);
    const kc_consumer_group_describe_response_described_group_t *dg = &resp.groups.items[0];
    assert_int_equal(dg->error_code, 0);
    int n = dg->members.count;
    *epoch = -99;
    *n_assigned = -1;
    if (n >= 1) {
        const kc_consumer_group_describe_response_member_t *mb = &dg->members.items[0];
        assert_int_equal(mb->member_id.len, (int32_t)strlen(member_id));
        assert_memory_equal(mb->member_id.ptr, member_id, strlen(member_id));
        *epoch = mb->member_epoch;
        *n_assigned = 0;
        for (int32_t i = 0; i < mb->assignment.topic_partitions.count; i++) {
            assert_memory_equal(mb->assignment.topic_partitions.items[i].topic_id.b, kc_gd_topic_id,
                                16);
            *n_assigned += mb->assignment.topic_partitions.items[i].partitions.count;
        }
    }
    free(frame);
    kc_arena_free(&a);
    return n;
}

/* One heartbeat round trip, if one is due. Returns the response's error code, or -1 if none. */
int kc_gd_heartbeat(int fd, kc_g848_t *gc, int *owned_sent)
{
    kc_consumer_group_heartbeat_request_t q;
    kc_error_t e;
    kc_err_t rc = kc_g848_heartbeat_due(gc, kc_gd_now_ms(), KC_GD_HB_V, &q, &e);
    if (rc == KC_ERR_AGAIN)
        return -1;
    if (rc != KC_OK)
        fail_msg("heartbeat_due: %s", e.msg);
    *owned_sent = 0;
    for (int32_t i = 0; i < q.topic_partitions.count; i++)
        *owned_sent += q.topic_partitions.items[i].partitions.count;
    if (q.topic_partitions.count < 0)
        *owned_sent = -1;
    kc_g848_heartbeat_sent(gc, kc_gd_now_ms());
    uint8_t *frame;
    kc_rbuf_t r;
    kc_tb_exchange(fd, KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY, KC_GD_HB_V, &q,
                   (kc_tb_encode_fn)kc_consumer_group_heartbeat_request_encode, &frame, &r);
    kc_arena_t a = {0};
    kc_consumer_group_heartbeat_response_t resp;
    assert_int_equal(kc_consumer_group_heartbeat_response_decode(&resp, KC_GD_HB_V, &r, &a, &e),
                     KC_OK);
    int code = resp.error_code;
    kc_g848_on_heartbeat_response(gc, kc_gd_now_ms(), &resp);
    free(frame);
    kc_arena_free(&a);
    return code;
}

void kc_gd_member_start(kc_gd_member_t *m, const char *bootstrap, const char *group,
                        const char *instance)
{
    memset(m, 0, sizeof *m);
    kc_g848_config_t c = {0};
    c.group_id = group;
    c.group_instance_id = instance;
    c.rebalance_timeout_ms = 30000;
    c.commit_timeout_ms = 5000;
    c.coordinator_timeout_ms = 30000;
    c.retry_backoff_ms = 100;
    c.retry_backoff_max_ms = 1000;
    c.lookup = kc_gd_lookup;
    kc_error_t e;
    assert_int_equal(kc_g848_init(&m->gc, &c, &e), KC_OK);
    const char *topics[] = {kc_gd_topic};
    assert_int_equal(kc_g848_subscribe(&m->gc, topics, 1, NULL, kc_gd_now_ms(), &e), KC_OK);
    m->fd = kc_gd_coordinator(bootstrap, group);
}

/* Every due action completed at once, then a heartbeat if one is due. */
static void step(kc_gd_member_t *m, const char *bootstrap, const char *group)
{
    kc_g848_action_t act;
    while (kc_g848_next_action(&m->gc, kc_gd_now_ms(), &act)) {
        switch (act.kind) {
        case KC_G848_ACT_ASSIGN:
        case KC_G848_ACT_REVOKE:
        case KC_G848_ACT_LOSE:
        case KC_G848_ACT_DROP:
            kc_g848_action_done(&m->gc, act.seq, kc_gd_now_ms());
            break;
        case KC_G848_ACT_COMMIT:
            kc_g848_on_commit_result(&m->gc, act.seq, 0, kc_gd_now_ms()); /* nothing consumed */
            break;
        case KC_G848_ACT_REDISCOVER:
            close(m->fd);
            m->fd = kc_gd_coordinator(bootstrap, group);
            kc_g848_coordinator_ready(&m->gc, kc_gd_now_ms());
            break;
        case KC_G848_ACT_METADATA:
            kc_g848_on_metadata(&m->gc, kc_gd_now_ms());
            break;
        case KC_G848_ACT_ERROR:
            fail_msg("group error: %s", act.error.msg);
            break;
        default:
            break;
        }
    }
    int sent;
    kc_gd_heartbeat(m->fd, &m->gc, &sent);
}

void kc_gd_run_until(kc_gd_member_t *m, const char *bootstrap, const char *group,
                     bool (*done)(const kc_gd_member_t *), int64_t ms)
{
    int64_t end = kc_gd_now_ms() + ms;
    while (kc_gd_now_ms() < end && !done(m)) {
        step(m, bootstrap, group);
        usleep(20 * 1000);
    }
}

bool kc_gd_owns_all(const kc_gd_member_t *m)
{
    return m->gc.state == KC_G848_STABLE && kc_reconcile_idle(&m->gc.rc) && m->gc.rc.owned.n == 3;
}

/* Every test subscribes to the same 3-partition topic, created once here. */
int kc_gd_create_topic(void **state)
{
    (void)state;
    snprintf(kc_gd_topic, sizeof kc_gd_topic, "kc-g848-%d", (int)getpid());
    kc_test_cluster("topic create %s --partitions 3", kc_gd_topic);
    int fd = kc_tb_connect(kc_test_env("KC_BOOTSTRAP"));
    assert_true(fd >= 0);
    kc_gd_metadata_topic(fd, kc_gd_topic, kc_gd_topic_id, 3);
    close(fd);
    return 0;
}
