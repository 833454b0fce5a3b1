/* Helpers shared by the classic-group engine tests against a real broker
 * (test_group_classic.c: kconsume members only; test_group_classic_java.c: mixed with Java's
 * console consumer): the test is the engine — one thread, one coordinator socket per member,
 * requests encoded with the generated codec, responses fed back to engine/group/classic/member's
 * state machine, actions completed at once, commits reported successful without being sent. Also
 * the topic under test, DescribeGroups, and the ownership checks. Header-only (tests need no CMake
 * change). Owner: the test's thread. */
#ifndef KC_TEST_CLASSIC_MEMBERS_H
#define KC_TEST_CLASSIC_MEMBERS_H

#include "kc_test.h"

#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "group/classic/assign/assign_int.h"
#include "group/classic/member.h"
#include "proto/describe_groups.gen.h"
#include "proto/find_coordinator.gen.h"
#include "proto/proto.h"

#define NPART 6

static inline int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int connect_host(const char *host, const char *port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

/* The first host:port of a bootstrap list ("a:1,b:2,c:3" -> a:1). */
static inline int connect_first(const char *bootstrap)
{
    char first[256], port[16];
    size_t n = strcspn(bootstrap, ",");
    if (n >= sizeof first)
        return -1;
    memcpy(first, bootstrap, n);
    first[n] = 0;
    char *colon = strrchr(first, ':');
    if (!colon)
        return -1;
    *colon = 0;
    snprintf(port, sizeof port, "%s", colon + 1);
    return connect_host(first, port);
}

static inline int io_full(int fd, uint8_t *p, size_t n, int writing)
{
    while (n > 0) {
        ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

typedef kc_err_t (*encode_fn)(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *e);

static inline void send_req(int fd, int16_t key, int16_t v, int32_t corr, const void *msg,
                            encode_fn enc)
{
    kc_wbuf_t w = {0};
    kc_error_t e;
    assert_int_equal(kc_wbuf_reserve(&w, 4), KC_OK);
    w.len = 4;
    kc_request_header_t h;
    kc_request_header_init(&h);
    h.request_api_key = key;
    h.request_api_version = v;
    h.correlation_id = corr;
    h.client_id = kc_str("kc-classic-test");
    assert_int_equal(kc_request_header_encode(&h, kc_proto_request_header_version(key, v), &w, &e),
                     KC_OK);
    if (enc(msg, v, &w, &e) != KC_OK)
        fail_msg("encode api %d: %s", key, e.msg);
    uint32_t n = (uint32_t)(w.len - 4);
    w.data[0] = (uint8_t)(n >> 24), w.data[1] = (uint8_t)(n >> 16);
    w.data[2] = (uint8_t)(n >> 8), w.data[3] = (uint8_t)n;
    assert_int_equal(io_full(fd, w.data, w.len, 1), 0);
    kc_wbuf_free(&w);
}

/* Reads one response frame; r is positioned after the header. */
static inline uint8_t *recv_resp(int fd, int16_t key, int16_t v, int32_t corr, kc_rbuf_t *r)
{
    uint8_t sz[4];
    assert_int_equal(io_full(fd, sz, 4, 0), 0);
    uint32_t len = (uint32_t)sz[0] << 24 | (uint32_t)sz[1] << 16 | (uint32_t)sz[2] << 8 | sz[3];
    uint8_t *frame = malloc(len ? len : 1);
    assert_non_null(frame);
    assert_int_equal(io_full(fd, frame, len, 0), 0);
    *r = kc_rbuf(frame, len);
    kc_response_header_t rh;
    kc_arena_t a = {0};
    kc_error_t e;
    assert_int_equal(
        kc_response_header_decode(&rh, kc_proto_response_header_version(key, v), r, &a, &e), KC_OK);
    assert_int_equal(rh.correlation_id, corr);
    kc_arena_free(&a);
    return frame;
}

static int32_t n_parts_of_topic = NPART;
static char topic_name[64], topic_b[80]; /* topic_b: a second topic, 3 partitions, when set */

static inline int32_t lookup(void *ctx, const char *t)
{
    (void)ctx;
    return strcmp(t, topic_name) == 0 ? n_parts_of_topic : strcmp(t, topic_b) == 0 ? 3 : 0;
}

typedef struct member {
    kc_classic_t m;
    int fd;
    int16_t key, ver; /* in flight; key -1 = none */
    int32_t corr;
    bool closed;
    long stray_assigns; /* ASSIGN outputs naming a topic outside the member's subscription */
} member_t;

/* FindCoordinator (v4) until the broker names one, as the engine's coordinator module will, and a
 * connection to it. On a fresh cluster this is also what creates __consumer_offsets: until then
 * every group request is answered NOT_COORDINATOR. With several brokers the coordinator is
 * whichever one owns the group's __consumer_offsets partition, so connect to the one named. */
static inline int coordinator_fd(const char *group)
{
    char host[256] = "", port[16] = "";
    int fd = connect_first(kc_test_env("KC_BOOTSTRAP"));
    assert_true(fd >= 0);
    int64_t end = now_ms() + 60000;
    int16_t code = -1;
    while (code != 0 && now_ms() < end) {
        kc_find_coordinator_request_t q;
        kc_find_coordinator_request_init(&q);
        kc_str_t k = kc_str(group);
        q.key_type = 0;
        q.coordinator_keys.count = 1;
        q.coordinator_keys.items = &k;
        send_req(fd, 10, 4, 3, &q, (encode_fn)kc_find_coordinator_request_encode);
        kc_rbuf_t r;
        uint8_t *frame = recv_resp(fd, 10, 4, 3, &r);
        kc_find_coordinator_response_t fr;
        kc_arena_t a = {0};
        kc_error_t e;
        assert_int_equal(kc_find_coordinator_response_decode(&fr, 4, &r, &a, &e), KC_OK);
        assert_int_equal(fr.coordinators.count, 1);
        code = fr.coordinators.items[0].error_code;
        if (code == 0) {
            const kc_str_t *h = &fr.coordinators.items[0].host;
            snprintf(host, sizeof host, "%.*s", (int)h->len, (const char *)h->ptr);
            snprintf(port, sizeof port, "%d", (int)fr.coordinators.items[0].port);
        }
        kc_arena_free(&a);
        free(frame);
        if (code != 0)
            usleep(200 * 1000);
    }
    close(fd);
    assert_int_equal(code, 0);
    int cfd = connect_host(host, port);
    assert_true(cfd >= 0);
    return cfd;
}

static inline void member_start_static(member_t *mb, const char *group, kc_assignor_t a,
                                       const char *instance)
{
    kc_classic_config_t c = {0};
    c.group_id = group;
    c.instance_id = instance;
    c.assignors[0] = a;
    c.n_assignors = 1;
    c.session_timeout_ms = 10000;
    c.rebalance_timeout_ms = 20000;
    c.heartbeat_interval_ms = 500;
    c.coordinator_timeout_ms = 10000;
    c.auto_commit = true;
    c.commit_timeout_ms = 5000;
    c.retry_backoff_ms = 100;
    kc_error_t e;
    memset(mb, 0, sizeof *mb);
    assert_int_equal(kc_classic_init(&mb->m, &c, lookup, NULL, &e), KC_OK);
    const char *topics[] = {topic_name};
    assert_int_equal(kc_classic_subscribe(&mb->m, topics, 1, &e), KC_OK);
    mb->fd = coordinator_fd(group);
    mb->key = -1;
    kc_classic_coordinator_known(&mb->m, now_ms());
}

static inline void member_start(member_t *mb, const char *group, kc_assignor_t a)
{
    member_start_static(mb, group, a, NULL);
}

static inline void member_free(member_t *mb)
{
    close(mb->fd);
    kc_classic_free(&mb->m);
}

/* Carries out every output the member has now. */
static inline void drive(member_t *mb, int64_t now)
{
    kc_classic_out_t o;
    static int32_t corr = 1;
    while (kc_classic_poll(&mb->m, now, &o)) {
        if (getenv("KC_TRACE"))
            fprintf(stderr, "%lld %p out %d\n", (long long)now, (void *)mb, o.kind);
        switch (o.kind) {
        case KC_CLASSIC_SEND_JOIN:
            mb->key = 11, mb->ver = 9;
            send_req(mb->fd, 11, 9, mb->corr = corr++, &o.req.join,
                     (encode_fn)kc_join_group_request_encode);
            break;
        case KC_CLASSIC_SEND_SYNC:
            mb->key = 14, mb->ver = 5;
            send_req(mb->fd, 14, 5, mb->corr = corr++, &o.req.sync,
                     (encode_fn)kc_sync_group_request_encode);
            break;
        case KC_CLASSIC_SEND_HEARTBEAT:
            mb->key = 12, mb->ver = 4;
            send_req(mb->fd, 12, 4, mb->corr = corr++, &o.req.heartbeat,
                     (encode_fn)kc_heartbeat_request_encode);
            break;
        case KC_CLASSIC_SEND_LEAVE:
            mb->key = 13, mb->ver = 5;
            send_req(mb->fd, 13, 5, mb->corr = corr++, &o.req.leave,
                     (encode_fn)kc_leave_group_request_encode);
            break;
        case KC_CLASSIC_ASSIGN:
            for (size_t i = 0; i < o.parts->n; i++) {
                bool sub = false;
                for (size_t t = 0; t < mb->m.n_topics; t++)
                    sub = sub || strcmp(mb->m.topics[t], o.parts->items[i].topic->name) == 0;
                mb->stray_assigns += !sub;
            }
            kc_classic_action_done(&mb->m, o.seq, now);
            break;
        case KC_CLASSIC_REVOKE:
        case KC_CLASSIC_LOSE:
        case KC_CLASSIC_DROP:
            kc_classic_action_done(&mb->m, o.seq, now);
            break;
        case KC_CLASSIC_COMMIT:
            kc_classic_commit_result(&mb->m, o.seq, 0, now);
            break;
        case KC_CLASSIC_REDISCOVER:
            close(mb->fd);
            mb->fd = coordinator_fd(mb->m.cfg.group_id);
            mb->key = -1;
            kc_classic_coordinator_known(&mb->m, now_ms());
            break;
        case KC_CLASSIC_ABANDON: /* as the engine does: the connection goes, the request fails */
            close(mb->fd);
            mb->fd = coordinator_fd(mb->m.cfg.group_id);
            mb->key = -1;
            kc_classic_request_failed(&mb->m, now);
            break;
        case KC_CLASSIC_CLOSED:
            mb->closed = true;
            break;
        case KC_CLASSIC_ERROR:
        case KC_CLASSIC_FATAL:
            fail_msg("member error: %s", o.error.msg);
            break;
        case KC_CLASSIC_DESCRIBE:
            kc_classic_describe_result(&mb->m, NULL, NULL);
            break;
        }
    }
}

static inline void on_readable(member_t *mb, int64_t now)
{
    kc_rbuf_t r;
    kc_arena_t a = {0};
    kc_error_t e;
    uint8_t *frame = recv_resp(mb->fd, mb->key, mb->ver, mb->corr, &r);
    int16_t key = mb->key;
    mb->key = -1;
    if (getenv("KC_TRACE") && kc_rbuf_remaining(&r) >= 8)
        fprintf(stderr, "%lld %p resp %d: %02x%02x%02x%02x%02x%02x\n", (long long)now, (void *)mb,
                key, r.p[0], r.p[1], r.p[2], r.p[3], r.p[4], r.p[5]);
    if (key == 11) {
        kc_join_group_response_t jr;
        assert_int_equal(kc_join_group_response_decode(&jr, 9, &r, &a, &e), KC_OK);
        kc_classic_join_response(&mb->m, &jr, now);
    } else if (key == 14) {
        kc_sync_group_response_t sr;
        assert_int_equal(kc_sync_group_response_decode(&sr, 5, &r, &a, &e), KC_OK);
        kc_classic_sync_response(&mb->m, &sr, now);
    } else if (key == 12) {
        kc_heartbeat_response_t hr;
        assert_int_equal(kc_heartbeat_response_decode(&hr, 4, &r, &a, &e), KC_OK);
        kc_classic_heartbeat_response(&mb->m, hr.error_code, now);
    } else if (key == 13) {
        kc_leave_group_response_t lr;
        assert_int_equal(kc_leave_group_response_decode(&lr, 5, &r, &a, &e), KC_OK);
        kc_classic_leave_response(&mb->m, lr.error_code, now);
    }
    kc_arena_free(&a);
    free(frame);
}

/* No partition has two owners right now (the sampled intersection). */
static inline void assert_disjoint(member_t *ms, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            for (size_t k = 0; k < ms[i].m.rc.owned.n; k++) {
                const kc_gtp_t *tp = &ms[i].m.rc.owned.items[k];
                if (kc_tpset_contains(&ms[j].m.rc.owned,
                                      kc_gtopics_find_name(&ms[j].m.interned, tp->topic->name),
                                      tp->partition))
                    fail_msg("partition %d owned by two members at once", tp->partition);
            }
}

static inline bool settled(member_t *ms, size_t n, size_t want_total)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ms[i].m.state != KC_CLASSIC_ST_STABLE || !kc_reconcile_idle(&ms[i].m.rc) ||
            ms[i].m.rejoin_needed)
            return false;
        total += ms[i].m.rc.owned.n;
    }
    return total == want_total;
}

/* Runs the members for up to `ms_max` ms; stops early once settled for `stable_ms`. */
static inline bool pump(member_t *ms, size_t n, int64_t ms_max, int64_t stable_ms,
                        size_t want_total)
{
    int64_t end = now_ms() + ms_max, since = -1;
    for (;;) {
        int64_t now = now_ms();
        for (size_t i = 0; i < n; i++)
            drive(&ms[i], now);
        assert_disjoint(ms, n);
        if (settled(ms, n, want_total)) {
            if (since < 0)
                since = now;
            if (now - since >= stable_ms)
                return true;
        } else {
            since = -1;
        }
        if (now >= end)
            return false;
        struct pollfd p[4];
        for (size_t i = 0; i < n; i++)
            p[i] = (struct pollfd){ms[i].fd, ms[i].key >= 0 ? POLLIN : 0, 0};
        if (poll(p, (nfds_t)n, 20) > 0)
            for (size_t i = 0; i < n; i++)
                if (p[i].revents & POLLIN)
                    on_readable(&ms[i], now_ms());
    }
}

static inline void run(const char *cmd)
{
    char line[1024];
    snprintf(line, sizeof line, "%s %s --dir %s >/dev/null 2>&1", kc_test_env("KC_TESTKIT"), cmd,
             kc_test_env("KC_CLUSTER_DIR"));
    if (system(line) != 0)
        fail_msg("failed: %s", line);
}

static inline void make_topic(const char *tag)
{
    n_parts_of_topic = NPART;
    snprintf(topic_name, sizeof topic_name, "kc-classic-%s-%ld", tag, (long)getpid());
    char cmd[256];
    snprintf(cmd, sizeof cmd, "topic create %s --partitions %d", topic_name, NPART);
    run(cmd);
}

/* The topics of the assignments describe() decodes: one table per test binary, never freed
 * (reachable to the end). */
static inline kc_gtopics_t *described_names(void)
{
    static kc_gtopics_t t;
    static bool ready;
    if (!ready) {
        kc_gtopics_init_by_name(&t, kc_jstr_cmp); /* the members' order */
        ready = true;
    }
    return &t;
}

/* A copy of a member's set that outlives the member: its topics in described_names(). */
static inline void copy_parts(kc_tpset_t *dst, const kc_tpset_t *src)
{
    kc_tpset_clear(dst);
    for (size_t i = 0; i < src->n; i++) {
        const kc_gtopic_t *t = kc_gtopics_name(described_names(), src->items[i].topic->name, -1);
        assert_non_null(t);
        assert_int_equal(kc_tpset_add(dst, t, src->items[i].partition), KC_OK);
    }
}

/* Two sets of different members' tables hold the same (topic name, partition)s. */
static inline bool same_parts(const kc_tpset_t *a, const kc_tpset_t *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) /* both tables order names alike: same order */
        if (strcmp(a->items[i].topic->name, b->items[i].topic->name) != 0 ||
            a->items[i].partition != b->items[i].partition)
            return false;
    return true;
}

/* DescribeGroups: each member's assignment (decoded), once the group is Stable with `want`
 * members; false if it does not get there in time. */
static inline bool describe(const char *group, size_t want, kc_tpset_t *out, char ids[][128],
                            int64_t within_ms)
{
    int fd = coordinator_fd(group);
    int64_t end = now_ms() + within_ms;
    bool ok = false;
    while (!ok && now_ms() < end) {
        kc_describe_groups_request_t q;
        kc_describe_groups_request_init(&q);
        kc_str_t g = kc_str(group);
        q.groups.count = 1;
        q.groups.items = &g;
        send_req(fd, 15, 5, 7, &q, (encode_fn)kc_describe_groups_request_encode);
        kc_rbuf_t r;
        uint8_t *frame = recv_resp(fd, 15, 5, 7, &r);
        kc_describe_groups_response_t d;
        kc_arena_t a = {0};
        kc_error_t e;
        assert_int_equal(kc_describe_groups_response_decode(&d, 5, &r, &a, &e), KC_OK);
        const kc_describe_groups_response_described_group_t *dg = &d.groups.items[0];
        if (dg->error_code == 0 && dg->group_state.len == 6 &&
            memcmp(dg->group_state.ptr, "Stable", 6) == 0 && (size_t)dg->members.count == want) {
            ok = true;
            for (size_t i = 0; i < want; i++) {
                assert_int_equal(
                    kc_classic_decode_assignment(
                        described_names(), dg->members.items[i].member_assignment, &out[i], &e),
                    KC_OK);
                snprintf(ids[i], 128, "%.*s", (int)dg->members.items[i].member_id.len,
                         dg->members.items[i].member_id.ptr);
            }
        }
        kc_arena_free(&a);
        free(frame);
        if (!ok)
            usleep(200 * 1000);
    }
    close(fd);
    return ok;
}

/* Exactly-once coverage of the topic by the member assignments. */
static inline void assert_exact_cover(kc_tpset_t *as, size_t n)
{
    const kc_gtopic_t *t = kc_gtopics_find_name(described_names(), topic_name);
    for (int32_t p = 0; p < n_parts_of_topic; p++) {
        int owners = 0;
        for (size_t i = 0; i < n; i++)
            owners += kc_tpset_contains(&as[i], t, p);
        if (owners != 1)
            fail_msg("partition %d has %d owners", p, owners);
    }
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += as[i].n;
    assert_int_equal(total, n_parts_of_topic);
}

#endif
