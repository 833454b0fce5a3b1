/* engine/group_consumer against a real broker (KIP-848), over a blocking socket — the state
 * machine is pure, so the test is its driver: FindCoordinator, then ConsumerGroupHeartbeat v1
 * requests exactly as kc_gc_heartbeat_due builds them, responses fed back, actions carried out.
 * Asserts, from the broker's side (ConsumerGroupDescribe), that the single member subscribed to a
 * 3-partition topic owns all 3 partitions at a stable, acknowledged epoch, and that the leave
 * (epoch -1) removes it from the group. A second test joins two members while the first one's
 * on_revoke is slow (held 1.5 s): the second is never handed a partition the first still holds,
 * and the two end up with disjoint sets covering all 3. A third test: a static member leaves with
 * -2, its successor (same group.instance.id, new member id) gets the same partitions back, and a
 * second live instance with that id is refused UNRELEASED_INSTANCE_ID — fatal, caller-visible.
 * A fourth: FENCED_MEMBER_EPOCH from the broker → on_lost, rejoin; max.poll overrun → leave -1,
 * stale, rejoin when the callback returns. A fifth: a regex subscription picks up a topic created
 * after the member joined, resolved through a METADATA action.
 * Needs KC_BOOTSTRAP, KC_TESTKIT and KC_CLUSTER_DIR (tests/run-suite sets them). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker_blocking.h"
#include "group_consumer.h"
#include "proto/kafka_errors.h"
#include "proto/proto.h"

#define HB_V 1

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint8_t topic_id[16];
static char topic[64];
/* The regex test's second topic, created after the member joined: unknown to `lookup` until a
 * METADATA action fetches it — the path a real engine takes. */
static uint8_t topic2_id[16];
static char topic2[64];
static bool topic2_known;

static const char *lookup(void *ctx, const uint8_t id[16])
{
    (void)ctx;
    if (memcmp(id, topic_id, 16) == 0)
        return topic;
    return topic2_known && memcmp(id, topic2_id, 16) == 0 ? topic2 : NULL;
}

static void metadata_topic(int fd, const char *name, uint8_t id_out[16], int32_t partitions)
{
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
    assert_int_equal(resp.topics.items[0].error_code, 0);
    assert_int_equal(resp.topics.items[0].partitions.count, partitions);
    memcpy(id_out, resp.topics.items[0].topic_id.b, 16);
    free(frame);
    kc_arena_free(&a);
}

/* FindCoordinator v4 until the group's coordinator is known (a fresh cluster creates
 * __consumer_offsets on the first ask); returns a connection to it. */
static int coordinator(const char *bootstrap, const char *group)
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
static int describe(int fd, const char *group, const char *member_id, int32_t *epoch,
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
            assert_memory_equal(mb->assignment.topic_partitions.items[i].topic_id.b, topic_id, 16);
            *n_assigned += mb->assignment.topic_partitions.items[i].partitions.count;
        }
    }
    free(frame);
    kc_arena_free(&a);
    return n;
}

/* One heartbeat round trip, if one is due. Returns the response's error code, or -1 if none. */
static int heartbeat(int fd, kc_gc_t *gc, int *owned_sent)
{
    kc_consumer_group_heartbeat_request_t q;
    kc_error_t e;
    kc_err_t rc = kc_gc_heartbeat_due(gc, now_ms(), HB_V, &q, &e);
    if (rc == KC_ERR_AGAIN)
        return -1;
    if (rc != KC_OK)
        fail_msg("heartbeat_due: %s", e.msg);
    *owned_sent = 0;
    for (int32_t i = 0; i < q.topic_partitions.count; i++)
        *owned_sent += q.topic_partitions.items[i].partitions.count;
    if (q.topic_partitions.count < 0)
        *owned_sent = -1;
    kc_gc_heartbeat_sent(gc, now_ms());
    uint8_t *frame;
    kc_rbuf_t r;
    kc_tb_exchange(fd, KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY, HB_V, &q,
                   (kc_tb_encode_fn)kc_consumer_group_heartbeat_request_encode, &frame, &r);
    kc_arena_t a = {0};
    kc_consumer_group_heartbeat_response_t resp;
    assert_int_equal(kc_consumer_group_heartbeat_response_decode(&resp, HB_V, &r, &a, &e), KC_OK);
    int code = resp.error_code;
    kc_gc_on_heartbeat_response(gc, now_ms(), &resp);
    free(frame);
    kc_arena_free(&a);
    return code;
}

/* Carries out every due action; returns partitions assigned by ASSIGN actions. */
static int run_actions(kc_gc_t *gc, int *fd, const char *bootstrap, const char *group)
{
    int assigned = 0;
    kc_gc_action_t act;
    while (kc_gc_next_action(gc, now_ms(), &act)) {
        switch (act.kind) {
        case KC_GC_ACT_ASSIGN:
            assigned += (int)act.parts->n;
            /* fallthrough */
        case KC_GC_ACT_REVOKE:
        case KC_GC_ACT_LOSE:
        case KC_GC_ACT_DROP:
            kc_gc_action_done(gc, act.seq, now_ms());
            break;
        case KC_GC_ACT_COMMIT:
            fail_msg("no commit expected (commit_on_revoke off)");
            break;
        case KC_GC_ACT_REDISCOVER:
            close(*fd);
            *fd = coordinator(bootstrap, group);
            kc_gc_coordinator_ready(gc, now_ms());
            break;
        case KC_GC_ACT_METADATA:
            kc_gc_on_metadata(gc, now_ms());
            break;
        case KC_GC_ACT_ERROR:
            fail_msg("group error: %s", act.error.msg);
            break;
        default:
            break;
        }
    }
    return assigned;
}

static void single_member_gets_all_and_leaves(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64];
    snprintf(group, sizeof group, "kc-g848-group-%d", (int)getpid());
    int fd = coordinator(bootstrap, group);

    kc_gc_config_t c = {0};
    c.group_id = group;
    c.rebalance_timeout_ms = 30000;
    c.commit_on_revoke = false;
    c.commit_timeout_ms = 5000;
    c.coordinator_timeout_ms = 30000;
    c.retry_backoff_ms = 100;
    c.retry_backoff_max_ms = 1000;
    c.lookup = lookup;
    kc_gc_t gc;
    kc_error_t e;
    assert_int_equal(kc_gc_init(&gc, &c, &e), KC_OK);
    const char *topics[] = {topic};
    assert_int_equal(kc_gc_subscribe(&gc, topics, 1, NULL, now_ms(), &e), KC_OK);

    int assigned = 0, beats = 0, acked_with = -1;
    int64_t end = now_ms() + 30000;
    bool acked = false;
    while (now_ms() < end && !acked) {
        assigned += run_actions(&gc, &fd, bootstrap, group);
        int sent;
        int code = heartbeat(fd, &gc, &sent);
        if (code >= 0) {
            beats++;
            if (code != 0)
                fprintf(stderr, "heartbeat answered %s\n", kc_kafka_err_name((int16_t)code));
            /* The ack is the beat that carried the reconciled set; its answer must be clean. */
            if (code == 0 && sent == 3 && gc.state == KC_GC_STABLE) {
                acked = true;
                acked_with = sent;
            }
        }
        assigned += run_actions(&gc, &fd, bootstrap, group);
        int64_t wake = kc_gc_next_wakeup(&gc, now_ms());
        int64_t nap = wake - now_ms();
        usleep((useconds_t)(nap < 5 ? 5 : nap > 200 ? 200 : nap) * 1000);
    }
    assert_true(acked);
    assert_int_equal(acked_with, 3);
    assert_int_equal(assigned, 3);
    assert_int_equal(gc.rc.owned.n, 3);
    assert_true(gc.epoch > 0);
    fprintf(stderr, "joined: epoch %d after %d heartbeats, interval %d ms\n", gc.epoch, beats,
            gc.interval_ms);

    /* The broker agrees: one member, our id, our epoch, all 3 partitions. */
    int32_t epoch;
    int n_assigned;
    assert_int_equal(describe(fd, group, gc.member_id, &epoch, &n_assigned), 1);
    assert_int_equal(epoch, gc.epoch);
    assert_int_equal(n_assigned, 3);

    /* Leave: revoke (no commit), drop, then the epoch -1 heartbeat. */
    kc_gc_close(&gc, now_ms());
    end = now_ms() + 10000;
    int leave_code = -1;
    while (gc.state != KC_GC_UNSUBSCRIBED && now_ms() < end) {
        run_actions(&gc, &fd, bootstrap, group);
        kc_consumer_group_heartbeat_request_t q;
        if (gc.state == KC_GC_LEAVING &&
            kc_gc_heartbeat_due(&gc, now_ms(), HB_V, &q, &e) == KC_OK) {
            assert_int_equal(q.member_epoch, -1);
            uint8_t *frame;
            kc_rbuf_t r;
            kc_tb_exchange(fd, KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY, HB_V, &q,
                           (kc_tb_encode_fn)kc_consumer_group_heartbeat_request_encode, &frame, &r);
            kc_arena_t a = {0};
            kc_consumer_group_heartbeat_response_t resp;
            assert_int_equal(kc_consumer_group_heartbeat_response_decode(&resp, HB_V, &r, &a, &e),
                             KC_OK);
            leave_code = resp.error_code;
            assert_int_equal(resp.member_epoch, -1);
            kc_gc_on_heartbeat_response(&gc, now_ms(), &resp);
            free(frame);
            kc_arena_free(&a);
        } else {
            int sent;
            heartbeat(fd, &gc, &sent); /* regular beats while revoking, if due */
            usleep(10 * 1000);
        }
    }
    assert_int_equal(gc.state, KC_GC_UNSUBSCRIBED);
    assert_int_equal(leave_code, 0);
    assert_int_equal(gc.rc.owned.n, 0);
    assert_int_equal(describe(fd, group, gc.member_id, &epoch, &n_assigned), 0);
    kc_gc_free(&gc);
    close(fd);
}

/* Two members; A's revokes complete only 1.5 s after they are asked for (a slow on_revoke). */
typedef struct member {
    kc_gc_t gc;
    int fd;
    bool revoke_pending;
    uint64_t revoke_seq;
    int64_t revoke_at;
    int revokes;
    bool expect_error, error_fatal;
    int metadata_asks;
    kc_error_t error;
} member_t;

static void member_start_regex(member_t *m, const char *bootstrap, const char *group,
                               const char *instance, const char *regex)
{
    memset(m, 0, sizeof *m);
    kc_gc_config_t c = {0};
    c.group_id = group;
    c.group_instance_id = instance;
    c.rebalance_timeout_ms = 30000;
    c.commit_timeout_ms = 5000;
    c.coordinator_timeout_ms = 30000;
    c.retry_backoff_ms = 100;
    c.retry_backoff_max_ms = 1000;
    c.lookup = lookup;
    kc_error_t e;
    assert_int_equal(kc_gc_init(&m->gc, &c, &e), KC_OK);
    const char *topics[] = {topic};
    assert_int_equal(
        kc_gc_subscribe(&m->gc, regex ? NULL : topics, regex ? 0 : 1, regex, now_ms(), &e), KC_OK);
    m->fd = coordinator(bootstrap, group);
}

static void member_start(member_t *m, const char *bootstrap, const char *group,
                         const char *instance)
{
    member_start_regex(m, bootstrap, group, instance, NULL);
}

/* One round for member m; `other` is the other member, whose held set m must never be given. */
static void member_step(member_t *m, member_t *other, const char *bootstrap, const char *group,
                        int64_t revoke_delay)
{
    kc_gc_action_t act;
    if (m->revoke_pending && now_ms() >= m->revoke_at) {
        m->revoke_pending = false;
        kc_gc_action_done(&m->gc, m->revoke_seq, now_ms());
    }
    while (kc_gc_next_action(&m->gc, now_ms(), &act)) {
        switch (act.kind) {
        case KC_GC_ACT_ASSIGN:
            /* The property: a partition arrives only after its previous owner finished on_revoke
             * and acknowledged — so it is never in the other member's held set. */
            for (size_t i = 0; other && i < act.parts->n; i++)
                if (kc_tpset_contains(&other->gc.rc.held, act.parts->items[i].topic_id,
                                      act.parts->items[i].partition))
                    fail_msg(
                        "partition %d assigned (epoch %d) while the other member (%s, epoch %d, "
                        "step %d, revoke pending %d, held %zu, owned %zu) still holds it",
                        act.parts->items[i].partition, m->gc.epoch,
                        kc_gc_state_name(other->gc.state), other->gc.epoch, other->gc.rc.step,
                        other->revoke_pending, other->gc.rc.held.n, other->gc.rc.owned.n);
            kc_gc_action_done(&m->gc, act.seq, now_ms());
            break;
        case KC_GC_ACT_REVOKE:
            m->revokes++;
            m->revoke_pending = true;
            m->revoke_seq = act.seq;
            m->revoke_at = now_ms() + revoke_delay;
            break;
        case KC_GC_ACT_LOSE:
        case KC_GC_ACT_DROP:
            kc_gc_action_done(&m->gc, act.seq, now_ms());
            break;
        case KC_GC_ACT_COMMIT:
            kc_gc_on_commit_result(&m->gc, act.seq, 0, now_ms()); /* nothing was consumed */
            break;
        case KC_GC_ACT_REDISCOVER:
            close(m->fd);
            m->fd = coordinator(bootstrap, group);
            kc_gc_coordinator_ready(&m->gc, now_ms());
            break;
        case KC_GC_ACT_METADATA:
            m->metadata_asks++;
            if (topic2[0] && !topic2_known) {
                int fd = kc_tb_connect(bootstrap);
                assert_true(fd >= 0);
                metadata_topic(fd, topic2, topic2_id, 2);
                close(fd);
                topic2_known = true;
            }
            kc_gc_on_metadata(&m->gc, now_ms());
            break;
        case KC_GC_ACT_ERROR:
            if (!m->expect_error)
                fail_msg("group error: %s", act.error.msg);
            m->error = act.error;
            m->error_fatal = act.fatal;
            break;
        default:
            break;
        }
    }
    int sent;
    heartbeat(m->fd, &m->gc, &sent);
}

static bool settled(const member_t *m)
{
    return m->gc.state == KC_GC_STABLE && !m->revoke_pending && kc_reconcile_idle(&m->gc.rc) &&
           m->gc.rc.owned.n > 0;
}

static void second_member_waits_for_revoke(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64];
    snprintf(group, sizeof group, "kc-g848-two-%d", (int)getpid());
    member_t a, b;
    member_start(&a, bootstrap, group, NULL);
    int64_t end = now_ms() + 30000;
    while (now_ms() < end && !(settled(&a) && a.gc.rc.owned.n == 3)) {
        member_step(&a, NULL, bootstrap, group, 1500);
        usleep(20 * 1000);
    }
    assert_int_equal(a.gc.rc.owned.n, 3);
    member_start(&b, bootstrap, group, NULL);
    end = now_ms() + 60000;
    int64_t stable_since = -1;
    while (now_ms() < end) {
        member_step(&a, &b, bootstrap, group, 1500);
        member_step(&b, &a, bootstrap, group, 0);
        /* Held sets never overlap, at any instant. */
        for (size_t i = 0; i < a.gc.rc.held.n; i++)
            if (kc_tpset_contains(&b.gc.rc.held, a.gc.rc.held.items[i].topic_id,
                                  a.gc.rc.held.items[i].partition))
                fail_msg("partition %d held by both members", a.gc.rc.held.items[i].partition);
        if (settled(&a) && settled(&b) && a.gc.rc.owned.n + b.gc.rc.owned.n == 3) {
            if (stable_since < 0)
                stable_since = now_ms();
            else if (now_ms() - stable_since > 1500)
                break; /* stayed settled for a few beats */
        } else {
            stable_since = -1;
        }
        usleep(20 * 1000);
    }
    assert_true(a.revokes >= 1);
    assert_true(settled(&a) && settled(&b));
    assert_int_equal(a.gc.rc.owned.n + b.gc.rc.owned.n, 3);
    kc_tpset_t u = {0};
    assert_int_equal(kc_tpset_union(&u, &a.gc.rc.owned, &b.gc.rc.owned), KC_OK);
    assert_int_equal(u.n, 3); /* disjoint and covering */
    kc_tpset_free(&u);
    fprintf(stderr, "two members: A owns %zu (revoked %d time(s), 1.5 s each), B owns %zu\n",
            a.gc.rc.owned.n, a.revokes, b.gc.rc.owned.n);
    kc_gc_free(&a.gc);
    kc_gc_free(&b.gc);
    close(a.fd);
    close(b.fd);
}

static void run_until(member_t *m, member_t *other, const char *bootstrap, const char *group,
                      bool (*done)(const member_t *), int64_t ms)
{
    int64_t end = now_ms() + ms;
    while (now_ms() < end && !done(m)) {
        member_step(m, other, bootstrap, group, 0);
        if (other)
            member_step(other, m, bootstrap, group, 0);
        usleep(20 * 1000);
    }
}

static bool owns_all(const member_t *m)
{
    return settled(m) && m->gc.rc.owned.n == 3;
}
static bool gone(const member_t *m)
{
    return m->gc.state == KC_GC_UNSUBSCRIBED;
}
static bool failed(const member_t *m)
{
    return m->gc.state == KC_GC_FATAL;
}

static void static_member_leaves_with_minus_two(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64];
    snprintf(group, sizeof group, "kc-g848-static-%d", (int)getpid());
    member_t a, a2, a3;
    member_start(&a, bootstrap, group, "inst-1");
    run_until(&a, NULL, bootstrap, group, owns_all, 30000);
    assert_true(owns_all(&a));
    kc_gc_close(&a.gc, now_ms());
    run_until(&a, NULL, bootstrap, group, gone, 10000);
    assert_true(gone(&a));
    /* The broker kept the static member (epoch -2 = "coming back"): still listed, assignment
     * intact, not handed to anyone. */
    int32_t epoch;
    int n_assigned;
    assert_int_equal(describe(a.fd, group, a.gc.member_id, &epoch, &n_assigned), 1);
    assert_int_equal(epoch, -2);
    assert_int_equal(n_assigned, 3);
    /* The restart: same instance id, new member id, gets all 3 back. */
    member_start(&a2, bootstrap, group, "inst-1");
    assert_string_not_equal(a2.gc.member_id, a.gc.member_id);
    run_until(&a2, NULL, bootstrap, group, owns_all, 30000);
    assert_true(owns_all(&a2));
    /* A second live instance with the same id: UNRELEASED_INSTANCE_ID, fatal, on_lost of nothing.
     */
    member_start(&a3, bootstrap, group, "inst-1");
    a3.expect_error = true;
    run_until(&a3, &a2, bootstrap, group, failed, 15000);
    assert_true(failed(&a3));
    member_step(&a3, &a2, bootstrap, group, 0); /* collect the actions the failure queued */
    assert_true(a3.error_fatal);
    assert_int_equal(a3.error.kafka_code, 111);
    assert_true(owns_all(&a2)); /* the live one is untouched */
    fprintf(stderr, "static: left with -2, successor got 3 back; duplicate: %s\n", a3.error.msg);
    kc_gc_free(&a.gc);
    kc_gc_free(&a2.gc);
    kc_gc_free(&a3.gc);
    close(a.fd);
    close(a2.fd);
    close(a3.fd);
}

static bool stale(const member_t *m)
{
    return m->gc.state == KC_GC_STALE;
}

/* The broker's answers to the two ways a member loses its partitions. A wrong epoch is answered
 * FENCED_MEMBER_EPOCH: on_lost, then a rejoin at epoch 0 under the same member id that gets the
 * partitions back. A callback that overran max.poll.interval.ms: leave with -1, STALE (no
 * heartbeats) until it returns, then rejoin and get them back. */
static void fenced_and_max_poll_rejoin(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64], id[64];
    snprintf(group, sizeof group, "kc-g848-fence-%d", (int)getpid());
    member_t a;
    member_start(&a, bootstrap, group, NULL);
    run_until(&a, NULL, bootstrap, group, owns_all, 30000);
    assert_true(owns_all(&a));
    strcpy(id, a.gc.member_id);
    int32_t before = a.gc.epoch;
    a.gc.epoch += 7; /* what a member that missed its own epoch bump would send */
    a.gc.hb_now = true;
    int sent;
    assert_int_equal(heartbeat(a.fd, &a.gc, &sent), 110 /* FENCED_MEMBER_EPOCH */);
    assert_int_equal(a.gc.state, KC_GC_FENCED);
    kc_gc_action_t act;
    assert_true(kc_gc_next_action(&a.gc, now_ms(), &act));
    assert_int_equal(act.kind, KC_GC_ACT_LOSE);
    assert_int_equal(act.parts->n, 3);
    kc_gc_action_done(&a.gc, act.seq, now_ms());
    run_until(&a, NULL, bootstrap, group, owns_all, 30000);
    assert_true(owns_all(&a));
    assert_string_equal(a.gc.member_id, id);
    int32_t epoch;
    int n_assigned;
    assert_int_equal(describe(a.fd, group, id, &epoch, &n_assigned), 1);
    assert_int_equal(n_assigned, 3);
    assert_int_equal(epoch, a.gc.epoch); /* the broker and the member agree again */
    fprintf(stderr, "fenced: epoch %d → rejoined at %d with all 3\n", before, epoch);

    /* max.poll.interval.ms overrun. */
    kc_gc_poll_expired(&a.gc, now_ms());
    run_until(&a, NULL, bootstrap, group, stale, 10000);
    assert_true(stale(&a));
    assert_int_equal(describe(a.fd, group, id, &epoch, &n_assigned), 0); /* left: -1 */
    usleep(1200 * 1000);
    member_step(&a, NULL, bootstrap, group, 0); /* no heartbeat while stale */
    assert_true(stale(&a));
    kc_gc_poll_resumed(&a.gc, now_ms());
    run_until(&a, NULL, bootstrap, group, owns_all, 30000);
    assert_true(owns_all(&a));
    assert_int_equal(describe(a.fd, group, id, &epoch, &n_assigned), 1);
    assert_int_equal(n_assigned, 3);
    kc_gc_free(&a.gc);
    close(a.fd);
}

static bool owns_five(const member_t *m)
{
    return settled(m) && m->gc.rc.owned.n == 5;
}

/* subscribed_topic_regex (v1), evaluated by the broker: the member gets the matching topic, and a
 * topic created after it joined arrives too — by an id `lookup` does not know yet, so the
 * partitions wait for the METADATA action (never acknowledged before they are resolved). */
static void regex_picks_up_new_topic(void **state)
{
    (void)state;
    const char *bootstrap = kc_test_env("KC_BOOTSTRAP");
    char group[64], regex[96], cmd[256];
    snprintf(group, sizeof group, "kc-g848-rx-%d", (int)getpid());
    snprintf(regex, sizeof regex, "kc-g848-%d.*", (int)getpid()); /* matches `topic` */
    member_t a;
    member_start_regex(&a, bootstrap, group, NULL, regex);
    run_until(&a, NULL, bootstrap, group, owns_all, 30000);
    assert_true(owns_all(&a));
    snprintf(topic2, sizeof topic2, "kc-g848-%d-late", (int)getpid());
    snprintf(cmd, sizeof cmd, "topic create %s --partitions 2", topic2);
    kc_tb_testkit(cmd);
    int64_t t0 = now_ms();
    run_until(&a, NULL, bootstrap, group, owns_five, 60000);
    assert_true(owns_five(&a));
    assert_true(a.metadata_asks >= 1);
    fprintf(stderr,
            "regex: new topic's 2 partitions owned %lld ms after creation (%d metadata asks)\n",
            (long long)(now_ms() - t0), a.metadata_asks);
    kc_gc_free(&a.gc);
    close(a.fd);
}

/* Every test subscribes to the same 3-partition topic, created once here. */
static int create_topic(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(topic, sizeof topic, "kc-g848-%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "topic create %s --partitions 3", topic);
    kc_tb_testkit(cmd);
    int fd = kc_tb_connect(kc_test_env("KC_BOOTSTRAP"));
    assert_true(fd >= 0);
    metadata_topic(fd, topic, topic_id, 3);
    close(fd);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(single_member_gets_all_and_leaves),
        cmocka_unit_test(second_member_waits_for_revoke),
        cmocka_unit_test(static_member_leaves_with_minus_two),
        cmocka_unit_test(fenced_and_max_poll_rejoin),
        cmocka_unit_test(regex_picks_up_new_topic),
    };
    return cmocka_run_group_tests(tests, create_topic, NULL);
}
