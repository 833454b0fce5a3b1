/* The connection layer against an in-test frame server on loopback, on both backends: many-MiB
 * frames, 1000 pipelined requests in order, request timeout -> reset -> reconnect, peer close
 * fails in-flight requests, backoff growth against a closed port. */
#include "kc_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "conn.h"
#include "loop.h"

/* ---- the server: answers ApiVersions, and Metadata(3) requests whose body is an int32 N with a
 * frame of N pattern bytes; N = -1: never answer; N = -2: close the connection. ---------------- */

typedef struct server {
    int lfd, port;
    atomic_int stop, accepted;
    pthread_t th;
} server;

static int read_full(int fd, void *p, size_t n)
{
    size_t d = 0;
    while (d < n) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 100) == 0)
            continue;
        ssize_t r = read(fd, (char *)p + d, n - d);
        if (r <= 0)
            return 0;
        d += (size_t)r;
    }
    return 1;
}

static int write_full(int fd, const void *p, size_t n)
{
    size_t d = 0;
    while (d < n) {
        ssize_t r = write(fd, (const char *)p + d, n - d);
        if (r <= 0)
            return 0;
        d += (size_t)r;
    }
    return 1;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static void serve(server *s, int fd)
{
    uint8_t hdr[4];
    int mute = 0; /* after a -1, stay silent: a later answer would overtake the stalled one */
    while (!atomic_load(&s->stop) && read_full(fd, hdr, 4)) {
        uint32_t n = get32(hdr);
        uint8_t *req = malloc(n);
        if (!read_full(fd, req, n)) {
            free(req);
            break;
        }
        int16_t key = (int16_t)(req[0] << 8 | req[1]);
        uint32_t corr = get32(req + 4);
        size_t off = 8;
        uint16_t cl = (uint16_t)(req[8] << 8 | req[9]);
        off = 10 + (cl == 0xffff ? 0 : cl) + 1; /* + empty tagged fields (header v2) */
        if (key == 18) {
            uint8_t r[64];
            size_t k = 4;
            put32(r + k, corr), k += 4;
            r[k++] = 0, r[k++] = 0;    /* error */
            r[k++] = 3;                /* 2 entries */
            int16_t ent[2][3] = {{18, 0, 3}, {3, 0, 12}};
            for (int i = 0; i < 2; i++) {
                for (int j = 0; j < 3; j++)
                    r[k++] = (uint8_t)(ent[i][j] >> 8), r[k++] = (uint8_t)ent[i][j];
                r[k++] = 0;
            }
            put32(r + k, 0), k += 4;   /* throttle */
            r[k++] = 0;
            put32(r, (uint32_t)(k - 4));
            write_full(fd, r, k);
        } else {
            int32_t want = (int32_t)get32(req + off);
            if (want == -2) {
                free(req);
                break;
            }
            if (want == -1)
                mute = 1;
            if (want >= 0 && !mute) {
                size_t fl = 4 + 1 + (size_t)want;
                uint8_t *r = malloc(4 + fl);
                put32(r, (uint32_t)fl);
                put32(r + 4, corr);
                r[8] = 0;
                for (int32_t i = 0; i < want; i++)
                    r[9 + i] = (uint8_t)(i * 7 + corr);
                write_full(fd, r, 4 + fl);
                free(r);
            }
        }
        free(req);
    }
    close(fd);
}

static void *server_main(void *arg)
{
    server *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd pf = {s->lfd, POLLIN, 0};
        if (poll(&pf, 1, 50) <= 0)
            continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        atomic_fetch_add(&s->accepted, 1);
        serve(s, fd);
    }
    return NULL;
}

static void server_start(server *s)
{
    memset(s, 0, sizeof *s);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 8), 0);
    socklen_t l = sizeof a;
    getsockname(s->lfd, (struct sockaddr *)&a, &l);
    s->port = ntohs(a.sin_port);
    pthread_create(&s->th, NULL, server_main, s);
}

static void server_stop(server *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->th, NULL);
    close(s->lfd);
}

/* ---- client side ----------------------------------------------------------------------------- */

typedef struct call {
    int32_t want;
    int idx;
    kc_err_t err;
    int done;
    int *order;
    int *norder;
    int ok_pattern;
} call;

static kc_err_t enc(kc_wbuf_t *out, int16_t v, void *opaque)
{
    (void)v;
    uint8_t b[4];
    put32(b, (uint32_t)((call *)opaque)->want);
    return kc_wire_append(out, b, 4);
}

static void on_resp(kc_conn_t *c, kc_err_t err, kc_buf_t *f, size_t off, int16_t v, void *opaque)
{
    (void)c;
    (void)v;
    call *x = opaque;
    x->err = err;
    x->done = 1;
    if (x->order)
        x->order[(*x->norder)++] = x->idx;
    if (err == KC_OK) {
        uint32_t corr = get32(f->data);
        x->ok_pattern = f->len - off == (size_t)x->want && f->len == f->cap;
        for (int32_t i = 0; x->ok_pattern && i < x->want; i += 4093)
            x->ok_pattern = f->data[off + i] == (uint8_t)(i * 7 + corr);
        kc_buf_unref(f);
    }
}

static kc_conn_t *open_conn(kc_loop_t *loop, const char *servers, int req_timeout)
{
    kc_conn_opts_t o = {.servers = servers, .client_id = "test", .request_timeout_ms = req_timeout,
                        .connect_timeout_ms = 2000, .reconnect_backoff_ms = 20,
                        .reconnect_backoff_max_ms = 200};
    kc_conn_t *c = NULL;
    assert_int_equal(kc_conn_new(&c, loop, &o, NULL), KC_OK);
    kc_conn_start(c);
    return c;
}

static void send_want(kc_conn_t *c, call *x)
{
    kc_conn_req_spec_t s = {.api_key = 3, .min_version = 12, .max_version = 12, .encode = enc,
                            .cb = on_resp, .opaque = x};
    assert_int_equal(kc_conn_send(c, &s, NULL), KC_OK);
}

static int run_until(kc_loop_t *loop, int *flag, int ms)
{
    int64_t end = kc_now_ns() + ms * 1000000LL;
    while (!*flag && kc_now_ns() < end)
        kc_loop_run_once(loop, 50);
    return *flag;
}

static void close_conn(kc_loop_t *loop, kc_conn_t *c)
{
    kc_conn_close(c);
    for (int i = 0; i < 20; i++)
        kc_loop_run_once(loop, 5); /* let the loop return the socket's ops so the conn frees */
}

static kc_loop_t *mkloop(kc_loop_backend_t b)
{
    kc_loop_t *l = NULL;
    if (kc_loop_new(&l, b, NULL) != KC_OK)
        skip();
    return l;
}

static void big_frames_and_pipelining(kc_loop_backend_t b)
{
    server s;
    server_start(&s);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    kc_loop_t *loop = mkloop(b);
    kc_conn_t *c = open_conn(loop, addr, 10000);
    /* Large and small frames interleaved, pipelined before the connection is even up. */
    int32_t sizes[] = {8 << 20, 100, 5 << 20, 0, 65536, 65531, 3 << 20};
    enum { NB = sizeof sizes / sizeof sizes[0], NP = 1000 };
    static call calls[NB + NP];
    int order[NB + NP], norder = 0;
    memset(calls, 0, sizeof calls);
    for (int i = 0; i < NB + NP; i++) {
        calls[i] = (call){.want = i < NB ? sizes[i] : (i % 300), .idx = i, .order = order,
                          .norder = &norder};
        send_want(c, &calls[i]);
    }
    assert_true(run_until(loop, &calls[NB + NP - 1].done, 20000));
    assert_int_equal(norder, NB + NP);
    for (int i = 0; i < NB + NP; i++) {
        assert_int_equal(order[i], i);
        assert_int_equal(calls[i].err, KC_OK);
        assert_true(calls[i].ok_pattern);
    }
    kc_conn_stats_t st;
    kc_conn_get_stats(c, &st);
    assert_true(st.frames_direct >= 3); /* the MiB frames went straight into their buffers */
    assert_int_equal(st.connects, 1);
    assert_int_equal(kc_conn_pick_version(c, 3, 0, 20), 12);
    assert_int_equal(kc_conn_pick_version(c, 3, 13, 20), -1);
    kc_loop_stats_t ls;
    kc_loop_get_stats(loop, &ls);
    print_message("# %s: submissions %llu completions %llu enters %llu\n", kc_loop_backend_name(loop),
                  (unsigned long long)ls.submissions, (unsigned long long)ls.completions,
                  (unsigned long long)ls.enters);
    close_conn(loop, c);
    kc_loop_free(loop);
    server_stop(&s);
}

static void timeout_resets_and_reconnects(kc_loop_backend_t b)
{
    server s;
    server_start(&s);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    kc_loop_t *loop = mkloop(b);
    kc_conn_t *c = open_conn(loop, addr, 300);
    call stall = {.want = -1}, behind = {.want = 10}, after = {.want = 10};
    send_want(c, &stall);
    send_want(c, &behind);
    int64_t t0 = kc_now_ns();
    assert_true(run_until(loop, &behind.done, 5000));
    int64_t el = (kc_now_ns() - t0) / 1000000;
    assert_int_equal(stall.err, KC_ERR_TIMEOUT);
    assert_int_equal(behind.err, KC_ERR_TRANSPORT); /* in flight behind it: failed by the reset */
    assert_true(el >= 290 && el < 2000);
    send_want(c, &after); /* the connection comes back and serves it */
    assert_true(run_until(loop, &after.done, 5000));
    assert_int_equal(after.err, KC_OK);
    kc_conn_stats_t st;
    kc_conn_get_stats(c, &st);
    assert_int_equal(st.connects, 2);
    assert_int_equal(st.resets, 1);
    close_conn(loop, c);
    kc_loop_free(loop);
    server_stop(&s);
}

static void peer_close_fails_inflight(kc_loop_backend_t b)
{
    server s;
    server_start(&s);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    kc_loop_t *loop = mkloop(b);
    kc_conn_t *c = open_conn(loop, addr, 10000);
    call first = {.want = 1000}, boom = {.want = -2}, lost[3] = {{.want = 5}, {.want = 6}, {.want = 7}};
    send_want(c, &first);
    send_want(c, &boom);
    for (int i = 0; i < 3; i++)
        send_want(c, &lost[i]);
    int64_t t0 = kc_now_ns();
    assert_true(run_until(loop, &lost[2].done, 5000));
    assert_true(kc_now_ns() - t0 < 2000000000LL); /* fails fast, not at the request timeout */
    assert_int_equal(first.err, KC_OK);
    assert_int_equal(boom.err, KC_ERR_TRANSPORT);
    for (int i = 0; i < 3; i++)
        assert_int_equal(lost[i].err, KC_ERR_TRANSPORT);
    close_conn(loop, c);
    kc_loop_free(loop);
    server_stop(&s);
}

static void backoff_against_closed_port(kc_loop_backend_t b)
{
    /* A port nobody listens on: every connect is refused; failures and delays must grow. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    char addr[64];
    snprintf(addr, sizeof addr, "localhost:%d,127.0.0.1:%d", ntohs(a.sin_port), ntohs(a.sin_port));
    kc_loop_t *loop = mkloop(b);
    kc_conn_t *c = open_conn(loop, addr, 1500);
    call x = {.want = 1};
    send_want(c, &x);
    int64_t prev = 0;
    int grew = 0, seen = 0;
    int64_t end = kc_now_ns() + 3000000000LL;
    while (!x.done && kc_now_ns() < end) {
        kc_loop_run_once(loop, 20);
        int f = kc_conn_failures(c);
        if (f > seen) {
            int64_t d = kc_conn_last_backoff_ms(c);
            double base = 20;
            for (int i = 1; i < f && base < 200; i++)
                base *= 2;
            base = base > 200 ? 200 : base;
            assert_true(d >= (int64_t)(base * 0.8) && d <= (int64_t)(base * 1.2));
            grew += d > prev;
            prev = d;
            seen = f;
        }
    }
    assert_true(x.done);
    assert_int_equal(x.err, KC_ERR_TIMEOUT); /* queued request: failed at its timeout, not never */
    assert_true(seen >= 4);
    assert_true(grew >= 3);
    close_conn(loop, c);
    kc_loop_free(loop);
}

#define BOTH(fn)                                                                                   \
    static void fn##_uring(void **s)                                                               \
    {                                                                                              \
        (void)s;                                                                                   \
        fn(KC_LOOP_URING);                                                                         \
    }                                                                                              \
    static void fn##_epoll(void **s)                                                               \
    {                                                                                              \
        (void)s;                                                                                   \
        fn(KC_LOOP_EPOLL);                                                                         \
    }

BOTH(big_frames_and_pipelining)
BOTH(timeout_resets_and_reconnects)
BOTH(peer_close_fails_inflight)
BOTH(backoff_against_closed_port)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(big_frames_and_pipelining_uring),
        cmocka_unit_test(big_frames_and_pipelining_epoll),
        cmocka_unit_test(timeout_resets_and_reconnects_uring),
        cmocka_unit_test(timeout_resets_and_reconnects_epoll),
        cmocka_unit_test(peer_close_fails_inflight_uring),
        cmocka_unit_test(peer_close_fails_inflight_epoll),
        cmocka_unit_test(backoff_against_closed_port_uring),
        cmocka_unit_test(backoff_against_closed_port_epoll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
