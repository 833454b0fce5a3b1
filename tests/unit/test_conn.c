/* The connection layer against an in-test frame server on loopback, on both backends: many-MiB
 * frames, 1000 pipelined requests in order, request timeout -> reset -> reconnect, peer close
 * fails in-flight requests, backoff growth against a closed port. */
#include "kc_test.h"
#include "uring_setups.h"

#include <arpa/inet.h>
#include <dirent.h>
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
#include "conn_addr.h"
#include "loop.h"
#include "netthread.h"

/* ---- the server: answers ApiVersions, and Metadata(3) requests whose body is an int32 N with a
 * frame of N pattern bytes; N = -1: never answer; N = -2: close the connection. ---------------- */

typedef struct server {
    int lfd, port;
    int xor ;   /* speak the test transport: "KCHELLO\n" / "OK\n", then bytes XOR 0x5A */
    int refuse; /* with xor: answer the hello with "NO\n" */
    atomic_int stop, accepted;
    atomic_int byes; /* test transport goodbyes (close_notify stand-ins) received */
    pthread_t th;
} server;

static atomic_int srv_kill; /* every server drops its connections (a broker dying) */

static int read_full(int fd, void *p, size_t n)
{
    size_t d = 0;
    while (d < n) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 100) == 0) {
            if (atomic_load(&srv_kill))
                return 0;
            continue;
        }
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
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
}

static int srv_read(server *s, int fd, void *p, size_t n)
{
    if (!read_full(fd, p, n))
        return 0;
    for (size_t i = 0; s->xor &&i < n; i++)
        ((uint8_t *)p)[i] ^= 0x5A;
    return 1;
}

static int srv_write(server *s, int fd, void *p, size_t n)
{
    for (size_t i = 0; s->xor &&i < n; i++)
        ((uint8_t *)p)[i] ^= 0x5A;
    return write_full(fd, p, n);
}

static void serve(server *s, int fd)
{
    if (s->xor) {
        char hello[8];
        if (!read_full(fd, hello, 8) || memcmp(hello, "KCHELLO\n", 8) != 0 ||
            !write_full(fd, s->refuse ? "NO\n" : "OK\n", 3) || s->refuse) {
            close(fd);
            return;
        }
    }
    uint8_t hdr[4];
    int mute = 0; /* after a -1, stay silent: a later answer would overtake the stalled one */
    while (!atomic_load(&s->stop) && srv_read(s, fd, hdr, 4)) {
        uint32_t n = get32(hdr);
        if (n == 0xFFFFFFFFu) { /* the test transport's goodbye */
            atomic_fetch_add(&s->byes, 1);
            break;
        }
        uint8_t *req = malloc(n);
        if (!srv_read(s, fd, req, n)) {
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
            r[k++] = 0, r[k++] = 0; /* error */
            r[k++] = 3;             /* 2 entries */
            int16_t ent[2][3] = {{18, 0, 3}, {3, 0, 12}};
            for (int i = 0; i < 2; i++) {
                for (int j = 0; j < 3; j++)
                    r[k++] = (uint8_t)(ent[i][j] >> 8), r[k++] = (uint8_t)ent[i][j];
                r[k++] = 0;
            }
            put32(r + k, 0), k += 4; /* throttle */
            r[k++] = 0;
            put32(r, (uint32_t)(k - 4));
            srv_write(s, fd, r, k);
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
                srv_write(s, fd, r, 4 + fl);
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

/* A listening socket on loopback (IPv4 or IPv6); returns the fd, sets *port. */
static int listen_on(int family, int backlog, int *port)
{
    int fd = socket(family, SOCK_STREAM, 0);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t l;
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        l = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        l = sizeof *a;
    }
    if (bind(fd, (struct sockaddr *)&ss, l) != 0) {
        close(fd);
        return -1;
    }
    assert_int_equal(listen(fd, backlog), 0);
    getsockname(fd, (struct sockaddr *)&ss, &l);
    *port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                     : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

static int next_xor, next_refuse; /* flags for the next server_start (set before its thread) */

static int server_start_family(server *s, int family)
{
    memset(s, 0, sizeof *s);
    s->xor = next_xor;
    s->refuse = next_refuse;
    s->lfd = listen_on(family, 8, &s->port);
    if (s->lfd < 0)
        return 0;
    pthread_create(&s->th, NULL, server_main, s);
    return 1;
}

static void server_start(server *s)
{
    assert_true(server_start_family(s, AF_INET));
}

static void server_stop(server *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->th, NULL);
    close(s->lfd);
}

/* ---- a test transport (stands in for TLS): hello/OK handshake, then XOR 0x5A; reads hand out
 * at most 1000 bytes at a time, like TLS records, so frames complete over many reads ---------- */

typedef struct xt {
    int hs;
    uint8_t *q, *f, *in;
    size_t qlen, qcap, flen, fcap, foff, inlen, incap, inoff;
} xt;

static void grow_append(uint8_t **b, size_t *len, size_t *cap, const uint8_t *p, size_t n, int x)
{
    if (*len + n > *cap) {
        *cap = (*len + n) * 2;
        *b = realloc(*b, *cap);
    }
    for (size_t i = 0; i < n; i++)
        (*b)[*len + i] = x ? p[i] ^ 0x5A : p[i];
    *len += n;
}

static kc_err_t xt_handshake(void *t, kc_error_t *err)
{
    xt *x = t;
    if (x->hs == 0) {
        grow_append(&x->q, &x->qlen, &x->qcap, (const uint8_t *)"KCHELLO\n", 8, 0);
        x->hs = 1;
        return KC_ERR_AGAIN;
    }
    if (x->hs == 2)
        return KC_OK;
    if (x->inlen - x->inoff < 3)
        return KC_ERR_AGAIN;
    if (memcmp(x->in + x->inoff, "OK\n", 3) != 0)
        return kc_fail(err, KC_ERR_TLS, "test transport: the peer refused the handshake");
    x->inoff += 3;
    x->hs = 2;
    return KC_OK;
}

static kc_err_t xt_write(void *t, const void *d, size_t n, kc_error_t *err)
{
    (void)err;
    xt *x = t;
    grow_append(&x->q, &x->qlen, &x->qcap, d, n, 1);
    return KC_OK;
}

static size_t xt_peek(void *t, const uint8_t **d)
{
    xt *x = t;
    if (x->foff == x->flen) { /* swap: the frozen buffer never moves while it is being sent */
        uint8_t *b = x->f;
        size_t c = x->fcap;
        x->f = x->q, x->fcap = x->qcap, x->flen = x->qlen, x->foff = 0;
        x->q = b, x->qcap = c, x->qlen = 0;
    }
    *d = x->f + x->foff;
    return x->flen - x->foff;
}

static void xt_consume(void *t, size_t n)
{
    ((xt *)t)->foff += n;
}

static kc_err_t xt_feed(void *t, const uint8_t *d, size_t n, kc_error_t *err)
{
    (void)err;
    xt *x = t;
    if (x->inoff == x->inlen)
        x->inoff = x->inlen = 0;
    grow_append(&x->in, &x->inlen, &x->incap, d, n, 0);
    return KC_OK;
}

static kc_err_t xt_read(void *t, void *buf, size_t cap, size_t *n, kc_error_t *err)
{
    (void)err;
    xt *x = t;
    size_t a = x->inlen - x->inoff;
    *n = 0;
    if (a == 0)
        return KC_ERR_AGAIN;
    size_t k = a < cap ? a : cap;
    k = k < 1000 ? k : 1000;
    for (size_t i = 0; i < k; i++)
        ((uint8_t *)buf)[i] = x->in[x->inoff + i] ^ 0x5A;
    x->inoff += k;
    *n = k;
    return KC_OK;
}

static void xt_free(void *t)
{
    xt *x = t;
    free(x->q);
    free(x->f);
    free(x->in);
    free(x);
}

/* The close_notify stand-in: four 0xFF bytes, a frame size no request has. */
static kc_err_t xt_shutdown(void *t, kc_error_t *err)
{
    static const uint8_t bye[4] = {0xFF, 0xFF, 0xFF, 0xFF};
    return xt_write(t, bye, 4, err);
}

static const kc_conn_transport_vt xt_vt = {xt_handshake, xt_write, xt_peek, xt_consume,
                                           xt_feed,      xt_read,  xt_free, xt_shutdown};

static kc_err_t xt_new(void *opaque, const char *host, const kc_conn_transport_vt **vt, void **t,
                       kc_error_t *err)
{
    (void)err;
    assert_string_equal(host, "127.0.0.1"); /* the configured host, for SNI / name checks */
    (*(int *)opaque)++;
    *vt = &xt_vt;
    *t = calloc(1, sizeof(xt));
    return KC_OK;
}

static int xt_made;

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

static int use_transport; /* set by the transport variants of the tests */

static kc_conn_t *open_conn(kc_loop_t *loop, const char *servers, int req_timeout)
{
    kc_conn_opts_t o = {.servers = servers,
                        .client_id = "test",
                        .request_timeout_ms = req_timeout,
                        .connect_timeout_ms = 2000,
                        .reconnect_backoff_ms = 20,
                        .reconnect_backoff_max_ms = 200};
    if (use_transport) {
        o.transport_new = xt_new;
        o.transport_opaque = &xt_made;
    }
    kc_conn_t *c = NULL;
    assert_int_equal(kc_conn_new(&c, loop, &o, NULL), KC_OK);
    kc_conn_start(c);
    return c;
}

static void send_want(kc_conn_t *c, call *x)
{
    kc_conn_req_spec_t s = {.api_key = 3,
                            .min_version = 12,
                            .max_version = 12,
                            .encode = enc,
                            .cb = on_resp,
                            .opaque = x};
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
    next_xor = use_transport;
    server_start(&s);
    next_xor = 0;
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
        calls[i] = (call){
            .want = i < NB ? sizes[i] : (i % 300), .idx = i, .order = order, .norder = &norder};
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
    print_message("# %s: submissions %llu completions %llu enters %llu\n",
                  kc_loop_backend_name(loop), (unsigned long long)ls.submissions,
                  (unsigned long long)ls.completions, (unsigned long long)ls.enters);
    close_conn(loop, c);
    kc_loop_free(loop);
    server_stop(&s);
}

/* A request with no version in common is refused with a message naming the API, the broker's
 * range and ours, both when sent to a READY connection (kc_conn_send's error) and when it waited
 * for READY (the callback's code, explained by kc_conn_refusal), and the connection stays up. */
static void version_refusal_names_both_ranges(kc_loop_backend_t b)
{
    kc_api_ranges_t r;
    for (int i = 0; i < KC_API_KEY_MAX; i++)
        r.min[i] = r.max[i] = -1;
    r.min[1] = 4, r.max[1] = 6;
    kc_error_t e;
    assert_int_equal(kc_wire_version_refusal(&e, "h:1", &r, 1, 7, 18), KC_ERR_UNSUPPORTED);
    assert_string_equal(
        e.msg, "Fetch: broker h:1 offers v4-v6, kconsume speaks v7-v18: no version in common");
    assert_int_equal(kc_wire_version_refusal(&e, "h:1", &r, 68, 0, 1), KC_ERR_UNSUPPORTED);
    assert_string_equal(
        e.msg, "ConsumerGroupHeartbeat: broker h:1 does not offer it, kconsume speaks v0-v1");

    server s;
    server_start(&s);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    kc_loop_t *loop = mkloop(b);
    kc_conn_t *c = open_conn(loop, addr, 10000);
    call early = {.want = 8}, ok = {.want = 16};
    kc_conn_req_spec_t sp = {.api_key = 3,
                             .min_version = 13, /* the server offers Metadata v0-v12 */
                             .max_version = 20,
                             .encode = enc,
                             .cb = on_resp,
                             .opaque = &early};
    assert_int_equal(kc_conn_send(c, &sp, NULL), KC_OK); /* waits for READY */
    assert_true(run_until(loop, &early.done, 5000));
    assert_int_equal(early.err, KC_ERR_UNSUPPORTED);
    assert_non_null(strstr(kc_conn_refusal(c)->msg, "Metadata: broker 127.0.0.1:"));
    assert_non_null(strstr(kc_conn_refusal(c)->msg, "offers v0-v12, kconsume speaks v13-v20"));
    sp.opaque = &ok;
    assert_int_equal(kc_conn_send(c, &sp, &e), KC_ERR_UNSUPPORTED); /* READY: refused at once */
    assert_non_null(strstr(e.msg, "offers v0-v12, kconsume speaks v13-v20"));
    assert_int_equal(kc_conn_state(c), KC_CONN_READY);
    send_want(c, &ok); /* a version in common still goes */
    assert_true(run_until(loop, &ok.done, 5000));
    assert_int_equal(ok.err, KC_OK);
    assert_true(ok.ok_pattern);
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
    next_xor = use_transport;
    server_start(&s);
    next_xor = 0;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    kc_loop_t *loop = mkloop(b);
    kc_conn_t *c = open_conn(loop, addr, 10000);
    call first = {.want = 1000}, boom = {.want = -2},
         lost[3] = {{.want = 5}, {.want = 6}, {.want = 7}};
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

/* The broker was up, then died: a request queued while the connection is down (the caller's
 * retry, or a request for the partition's old leader) fails with KC_ERR_TRANSPORT at the next
 * failed connect, not after request.timeout.ms (10 s here). */
static void dead_broker_fails_queued_at_once(kc_loop_backend_t b)
{
    server s;
    next_xor = use_transport;
    server_start(&s);
    next_xor = 0;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    kc_loop_t *loop = mkloop(b);
    kc_conn_t *c = open_conn(loop, addr, 10000);
    call first = {.want = 10};
    send_want(c, &first);
    assert_true(run_until(loop, &first.done, 5000));
    assert_int_equal(first.err, KC_OK);
    atomic_store(&srv_kill, 1);
    server_stop(&s); /* closes the served socket and the listener: connects are refused */
    atomic_store(&srv_kill, 0);
    int64_t end = kc_now_ns() + 5000000000LL;
    while (kc_conn_state(c) == KC_CONN_READY && kc_now_ns() < end)
        kc_loop_run_once(loop, 20);
    assert_true(kc_conn_state(c) != KC_CONN_READY);
    call queued = {.want = 10};
    send_want(c, &queued); /* not READY: it waits in the pending queue */
    int64_t t0 = kc_now_ns();
    assert_true(run_until(loop, &queued.done, 9000));
    assert_int_equal(queued.err, KC_ERR_TRANSPORT);
    assert_true(kc_now_ns() - t0 < 2000000000LL);
    close_conn(loop, c);
    kc_loop_free(loop);
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

/* Auth hook: runs after ApiVersions, may send on the not-yet-ready connection; success makes
 * it READY, failure is final (no reconnect, clear error to queued and later requests). */
typedef struct auth_ctx {
    int calls;
    int fail;
    call probe;
} auth_ctx;

static void auth_probe_done(kc_conn_t *c, kc_err_t err, kc_buf_t *f, size_t off, int16_t v,
                            void *op)
{
    auth_ctx *a = op;
    on_resp(c, err, f, off, v, &a->probe);
    kc_error_t e = {0};
    if (a->fail)
        kc_fail(&e, KC_ERR_AUTH, "SASL PLAIN authentication to broker test failed: bad password");
    kc_conn_auth_done(c, &e);
}

static void auth_hook(kc_conn_t *c, void *opaque)
{
    auth_ctx *a = opaque;
    a->calls++;
    assert_int_equal(kc_conn_state(c), KC_CONN_AUTH);
    a->probe = (call){.want = 4};
    kc_conn_req_spec_t s = {.api_key = 3,
                            .min_version = 12,
                            .max_version = 12,
                            .encode = enc,
                            .cb = auth_probe_done,
                            .opaque = a};
    /* The plain send must wait for READY; the internal one goes out now. */
    assert_int_equal(kc_conn_send_internal(c, &s, NULL), KC_OK);
}

static void auth_hook_gates_ready(kc_loop_backend_t b, int fail)
{
    server s;
    server_start(&s);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    kc_loop_t *loop = mkloop(b);
    auth_ctx a = {.fail = fail};
    kc_conn_opts_t o = {.servers = addr,
                        .request_timeout_ms = 5000,
                        .reconnect_backoff_ms = 20,
                        .reconnect_backoff_max_ms = 50,
                        .authenticate = auth_hook,
                        .auth_opaque = &a};
    kc_conn_t *c = NULL;
    assert_int_equal(kc_conn_new(&c, loop, &o, NULL), KC_OK);
    kc_conn_start(c);
    call x = {.want = 9};
    send_want(c, &x);
    assert_true(run_until(loop, &x.done, 5000));
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.probe.err, KC_OK);
    if (!fail) {
        assert_int_equal(x.err, KC_OK);
        assert_int_equal(kc_conn_state(c), KC_CONN_READY);
    } else {
        assert_int_equal(x.err, KC_ERR_AUTH);
        int never = 0;
        run_until(loop, &never, 300); /* a retry would reconnect within 50 ms */
        assert_int_equal(kc_conn_state(c), KC_CONN_FAILED);
        assert_int_equal(atomic_load(&s.accepted), 1);
        assert_int_equal(a.calls, 1);
        kc_error_t e = {0};
        call y = {.want = 1};
        kc_conn_req_spec_t sp = {.api_key = 3,
                                 .min_version = 12,
                                 .max_version = 12,
                                 .encode = enc,
                                 .cb = on_resp,
                                 .opaque = &y};
        assert_int_equal(kc_conn_send(c, &sp, &e), KC_ERR_AUTH);
        assert_non_null(strstr(e.msg, "PLAIN"));
    }
    close_conn(loop, c);
    kc_loop_free(loop);
    server_stop(&s);
}

static void auth_ok(kc_loop_backend_t b)
{
    auth_hook_gates_ready(b, 0);
}

static void auth_fail_is_final(kc_loop_backend_t b)
{
    auth_hook_gates_ready(b, 1);
}

/* KIP-368 re-authentication: the hook schedules itself again; the second run happens on the
 * same READY connection >= 1 s later, requests sent meanwhile wait for its end (nothing may be
 * interleaved with the exchange), and a refused re-authentication is final. */
typedef struct reauth_ctx {
    int calls, fail_second;
    int64_t ready_ns, second_ns;
    call probe, held;
} reauth_ctx;

static void reauth_probe_done(kc_conn_t *c, kc_err_t err, kc_buf_t *f, size_t off, int16_t v,
                              void *op)
{
    reauth_ctx *a = op;
    on_resp(c, err, f, off, v, &a->probe);
    kc_error_t e = {0};
    if (a->calls == 1)
        kc_conn_schedule_reauth(c, 10); /* asks for 10 ms: at least 1 s is what it gets */
    else if (a->fail_second)
        kc_fail(&e, KC_ERR_AUTH, "SASL PLAIN authentication to broker test failed: expired");
    kc_conn_auth_done(c, &e);
}

static void reauth_hook(kc_conn_t *c, void *opaque)
{
    reauth_ctx *a = opaque;
    a->calls++;
    if (a->calls == 1) {
        assert_int_equal(kc_conn_state(c), KC_CONN_AUTH);
    } else {
        a->second_ns = kc_now_ns();
        assert_int_equal(kc_conn_state(c), KC_CONN_READY);
        assert_true(kc_conn_reauthenticating(c));
        /* A plain request now must wait for the exchange to end. */
        kc_conn_stats_t st;
        kc_conn_get_stats(c, &st);
        a->held = (call){.want = 7};
        send_want(c, &a->held);
        kc_conn_stats_t st2;
        kc_conn_get_stats(c, &st2);
        assert_int_equal(st2.requests, st.requests);
    }
    a->probe = (call){.want = 4};
    kc_conn_req_spec_t s = {.api_key = 3,
                            .min_version = 12,
                            .max_version = 12,
                            .encode = enc,
                            .cb = reauth_probe_done,
                            .opaque = a};
    assert_int_equal(kc_conn_send_internal(c, &s, NULL), KC_OK);
}

static void reauth_on_live_conn(kc_loop_backend_t b, int fail_second)
{
    server s;
    server_start(&s);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    kc_loop_t *loop = mkloop(b);
    reauth_ctx a = {.fail_second = fail_second};
    kc_conn_opts_t o = {.servers = addr,
                        .request_timeout_ms = 5000,
                        .reconnect_backoff_ms = 20,
                        .reconnect_backoff_max_ms = 50,
                        .authenticate = reauth_hook,
                        .auth_opaque = &a};
    kc_conn_t *c = NULL;
    assert_int_equal(kc_conn_new(&c, loop, &o, NULL), KC_OK);
    kc_conn_start(c);
    call x = {.want = 9};
    send_want(c, &x);
    assert_true(run_until(loop, &x.done, 5000));
    assert_int_equal(x.err, KC_OK);
    a.ready_ns = kc_now_ns();
    assert_true(run_until(loop, &a.held.done, 5000));
    kc_conn_stats_t st;
    kc_conn_get_stats(c, &st);
    assert_int_equal(a.calls, 2);
    assert_true(a.second_ns - a.ready_ns >= 990000000LL);
    assert_int_equal(st.connects, 1);
    if (!fail_second) {
        assert_int_equal(a.held.err, KC_OK);
        assert_int_equal(st.reauths, 1);
        assert_int_equal(kc_conn_state(c), KC_CONN_READY);
        assert_false(kc_conn_reauthenticating(c));
    } else {
        assert_int_equal(a.held.err, KC_ERR_AUTH);
        assert_int_equal(st.reauths, 0);
        int never = 0;
        run_until(loop, &never, 200);
        assert_int_equal(kc_conn_state(c), KC_CONN_FAILED);
        assert_int_equal(atomic_load(&s.accepted), 1);
    }
    close_conn(loop, c);
    kc_loop_free(loop);
    server_stop(&s);
}

static void reauth_ok(kc_loop_backend_t b)
{
    reauth_on_live_conn(b, 0);
}

static void reauth_refused_is_final(kc_loop_backend_t b)
{
    reauth_on_live_conn(b, 1);
}

/* A listener whose accept queue is full drops our SYN: the connect hangs until our timer ends
 * it; the pending connect op must come back (ASan would report the leaked conn otherwise). */
static void connect_timeout_then_close(kc_loop_backend_t b)
{
    int port;
    int lfd = listen_on(AF_INET, 0, &port);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fillers[4];
    for (int i = 0; i < 4; i++) {
        fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fillers[i], (struct sockaddr *)&a, sizeof a);
    }
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    kc_loop_t *loop = mkloop(b);
    kc_conn_opts_t o = {.servers = addr,
                        .connect_timeout_ms = 200,
                        .request_timeout_ms = 10000,
                        .reconnect_backoff_ms = 10,
                        .reconnect_backoff_max_ms = 20};
    kc_conn_t *c = NULL;
    assert_int_equal(kc_conn_new(&c, loop, &o, NULL), KC_OK);
    kc_conn_start(c);
    int64_t t0 = kc_now_ns();
    int never = 0;
    run_until(loop, &never, 1000);
    int64_t el = (kc_now_ns() - t0) / 1000000;
    kc_conn_stats_t st;
    kc_conn_get_stats(c, &st);
    assert_int_equal(st.connects, 0);
    /* Each attempt lasts the 200 ms timeout (plus <= 24 ms backoff): 4 or 5 in a second. */
    assert_true(kc_conn_failures(c) >= 3 && kc_conn_failures(c) <= (int)(el / 200) + 1);
    close_conn(loop, c);
    kc_loop_free(loop);
    for (int i = 0; i < 4; i++)
        close(fillers[i]);
    close(lfd);
}

/* Several bootstrap entries: a dead one first, then IPv6 loopback; the connection walks on. */
static void bootstrap_list_and_ipv6(kc_loop_backend_t b)
{
    server s;
    if (!server_start_family(&s, AF_INET6))
        skip(); /* no IPv6 loopback in this sandbox */
    int dead;
    int dfd = listen_on(AF_INET, 1, &dead);
    close(dfd);
    char addr[128];
    snprintf(addr, sizeof addr, "127.0.0.1:%d, [::1]:%d", dead, s.port);
    kc_loop_t *loop = mkloop(b);
    kc_conn_t *c = open_conn(loop, addr, 5000);
    call x = {.want = 100};
    send_want(c, &x);
    assert_true(run_until(loop, &x.done, 5000));
    assert_int_equal(x.err, KC_OK);
    assert_true(x.ok_pattern);
    assert_int_equal(kc_conn_failures(c), 0); /* reset by READY */
    kc_conn_stats_t st;
    kc_conn_get_stats(c, &st);
    assert_int_equal(st.connects, 1);
    char want_peer[64];
    snprintf(want_peer, sizeof want_peer, "::1:%d", s.port);
    assert_string_equal(kc_conn_peer(c), want_peer);
    close_conn(loop, c);
    kc_loop_free(loop);
    server_stop(&s);
}

static void transport_frames(kc_loop_backend_t b)
{
    use_transport = 1;
    xt_made = 0;
    big_frames_and_pipelining(b);
    assert_int_equal(xt_made, 1);
    peer_close_fails_inflight(b);
    use_transport = 0;
}

/* A refused transport handshake (TLS verification failure) is final, like an auth failure. */
static void transport_refused_is_final(kc_loop_backend_t b)
{
    server s;
    next_xor = next_refuse = 1;
    server_start(&s);
    next_xor = next_refuse = 0;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    kc_loop_t *loop = mkloop(b);
    use_transport = 1;
    kc_conn_t *c = open_conn(loop, addr, 5000);
    use_transport = 0;
    call x = {.want = 1};
    send_want(c, &x);
    assert_true(run_until(loop, &x.done, 3000));
    assert_int_equal(x.err, KC_ERR_TLS);
    int never = 0;
    run_until(loop, &never, 300);
    assert_int_equal(kc_conn_state(c), KC_CONN_FAILED);
    assert_int_equal(atomic_load(&s.accepted), 1);
    close_conn(loop, c);
    kc_loop_free(loop);
    server_stop(&s);
}

/* The intended shape: the application thread never touches the connection; it runs functions on
 * the network thread (kc_netthread_call) which own the conn and its callbacks. */
typedef struct nt_ctx {
    const char *addr;
    kc_conn_t *c;
    call calls[100];
    int done; /* network thread only; read through kc_netthread_call */
} nt_ctx;

static void nt_resp(kc_conn_t *c, kc_err_t err, kc_buf_t *f, size_t off, int16_t v, void *opaque)
{
    call *x = opaque;
    on_resp(c, err, f, off, v, x);
    ((nt_ctx *)((char *)(x - x->idx) - offsetof(nt_ctx, calls)))->done++;
}

static void nt_open(kc_loop_t *loop, void *arg)
{
    nt_ctx *n = arg;
    n->c = open_conn(loop, n->addr, 5000);
    for (int i = 0; i < 100; i++) {
        n->calls[i] = (call){.want = 1000 + i, .idx = i};
        kc_conn_req_spec_t s = {.api_key = 3,
                                .min_version = 12,
                                .max_version = 12,
                                .encode = enc,
                                .cb = nt_resp,
                                .opaque = &n->calls[i]};
        assert_int_equal(kc_conn_send(n->c, &s, NULL), KC_OK);
    }
}

static void nt_read(kc_loop_t *loop, void *arg)
{
    (void)loop;
    nt_ctx *n = ((void **)arg)[0];
    *(int *)((void **)arg)[1] = n->done;
}

static void nt_close(kc_loop_t *loop, void *arg)
{
    (void)loop;
    kc_conn_close(((nt_ctx *)arg)->c);
}

static void netthread_drives_conn(kc_loop_backend_t b)
{
    server s;
    server_start(&s);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    kc_netthread_t *nt = NULL;
    if (kc_netthread_start(&nt, b, NULL, NULL) != KC_OK)
        skip();
    static nt_ctx n;
    memset(&n, 0, sizeof n);
    n.addr = addr;
    kc_netthread_call(nt, nt_open, &n);
    int done = 0;
    void *args[2] = {&n, &done};
    int64_t end = kc_now_ns() + 10000000000LL;
    while (done < 100 && kc_now_ns() < end) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        kc_netthread_call(nt, nt_read, args);
    }
    assert_int_equal(done, 100);
    kc_netthread_call(nt, nt_close, &n); /* the loop keeps running and frees the conn */
    kc_netthread_stop(nt);
    for (int i = 0; i < 100; i++) { /* after the join, the network thread's writes are visible */
        assert_int_equal(n.calls[i].err, KC_OK);
        assert_true(n.calls[i].ok_pattern);
    }
    server_stop(&s);
}

static void bad_bootstrap_is_config_error(void **state)
{
    (void)state;
    kc_addr_t out[4];
    int n;
    kc_error_t e;
    assert_int_equal(kc_addr_resolve("localhost", 0, out, 4, &n, &e), KC_ERR_CONFIG);
    assert_int_equal(kc_addr_resolve("[::1:9092", 0, out, 4, &n, &e), KC_ERR_CONFIG);
    assert_int_equal(kc_addr_resolve("", 0, out, 4, &n, &e), KC_ERR_CONFIG);
    assert_int_equal(kc_addr_resolve("127.0.0.1:1, 127.0.0.2:2", 0, out, 4, &n, &e), KC_OK);
    assert_int_equal(n, 2);
    assert_string_equal(out[1].name, "127.0.0.2:2");
}

/* client.dns.lookup=resolve_canonical_bootstrap_servers_only: an IP literal becomes the name its
 * reverse lookup gives (the literal itself when there is none), and that name is what is resolved
 * and kept as host and name (TLS server name, Kerberos host); without the flag the host stays as
 * configured. A host that does not resolve fails with its name. */
static void canonical_bootstrap_names(void **state)
{
    (void)state;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    char want[KC_ADDR_HOST_MAX];
    int has_name = getnameinfo((struct sockaddr *)&sin, sizeof sin, want, sizeof want, NULL, 0,
                               NI_NAMEREQD) == 0;
    if (!has_name)
        snprintf(want, sizeof want, "127.0.0.1");
    kc_addr_t out[8];
    int n;
    kc_error_t e;
    assert_int_equal(kc_addr_resolve("127.0.0.1:9092", KC_ADDR_CANONICAL, out, 8, &n, &e), KC_OK);
    assert_true(n >= 1);
    char want_name[KC_ADDR_HOST_MAX + 8];
    snprintf(want_name, sizeof want_name, "%s:9092", want);
    int loopback = 0;
    for (int i = 0; i < n; i++) {
        assert_string_equal(out[i].host, want);
        assert_string_equal(out[i].name, want_name);
        loopback |= out[i].sa.ss_family == AF_INET &&
                    ((struct sockaddr_in *)&out[i].sa)->sin_addr.s_addr == sin.sin_addr.s_addr;
    }
    assert_true(loopback); /* the name leads back to the address */
    if (has_name)          /* the point of the option: a name, not the literal */
        assert_string_not_equal(out[0].host, "127.0.0.1");
    assert_int_equal(kc_addr_resolve("127.0.0.1:9092", 0, out, 8, &n, &e), KC_OK);
    assert_int_equal(n, 1);
    assert_string_equal(out[0].host, "127.0.0.1");
    char names[4][KC_ADDR_HOST_MAX];
    assert_int_equal(kc_addr_canonical_names("127.0.0.1", names, 4, &e), 1);
    assert_string_equal(names[0], want);
    assert_int_equal(kc_addr_canonical_names("kc-no-such-host.invalid", names, 4, &e), -1);
    assert_non_null(strstr(e.msg, "kc-no-such-host.invalid"));
    assert_int_equal(
        kc_addr_resolve("kc-no-such-host.invalid:1", KC_ADDR_CANONICAL, out, 8, &n, &e),
        KC_ERR_TRANSPORT);
    assert_non_null(strstr(e.msg, "kc-no-such-host.invalid"));
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* kc_conn_close() on a secured transport sends its goodbye (TLS close_notify) before shutting
 * the socket down, with requests still in flight; afterwards no fd is left behind. */
static void transport_goodbye_on_close(kc_loop_backend_t b)
{
    int fds0 = count_fds();
    server s;
    next_xor = 1;
    server_start(&s);
    next_xor = 0;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    kc_loop_t *loop = mkloop(b);
    use_transport = 1;
    kc_conn_t *c = open_conn(loop, addr, 5000);
    use_transport = 0;
    call x = {.want = 100}, stuck = {.want = -1};
    send_want(c, &x);
    assert_true(run_until(loop, &x.done, 3000));
    assert_int_equal(x.err, KC_OK);
    send_want(c, &stuck); /* never answered: in flight at close */
    int never = 0;
    run_until(loop, &never, 50);
    kc_conn_close(c);
    assert_true(stuck.done);
    assert_int_equal(stuck.err, KC_ERR_CLOSED);
    for (int i = 0; i < 100 && atomic_load(&s.byes) == 0; i++)
        kc_loop_run_once(loop, 10);
    for (int i = 0; i < 20; i++)
        kc_loop_run_once(loop, 5);
    assert_int_equal(atomic_load(&s.byes), 1);
    kc_loop_free(loop);
    server_stop(&s);
    assert_int_equal(count_fds(), fds0);
}

/* io_uring refused here: skip before the test starts a server thread, which a skip() from
 * inside would leave running on a dead stack frame. */
static void uring_or_skip(void)
{
    kc_loop_t *l = NULL;
    if (kc_loop_new(&l, KC_LOOP_URING, NULL) != KC_OK)
        skip();
    kc_loop_free(l);
}

#define BOTH(fn)                                                                                   \
    static void fn##_uring(void **s)                                                               \
    {                                                                                              \
        (void)s;                                                                                   \
        uring_or_skip();                                                                           \
        fn(KC_LOOP_URING);                                                                         \
    }                                                                                              \
    static void fn##_epoll(void **s)                                                               \
    {                                                                                              \
        (void)s;                                                                                   \
        fn(KC_LOOP_EPOLL);                                                                         \
    }

/* The ring setups loop_uring.c falls back to on older kernels (KC_URING_SETUP starts its probe
 * at one) carry the same frames: on this kernel each is what it names, on an older one a later
 * step at least works. */
static void older_ring_setups_carry_frames(void **state)
{
    (void)state;
    bool newest = kc_test_uring_newest(); /* skips here, before any server thread, if refused */
    for (size_t i = 0; i < KC_TEST_URING_SETUPS; i++) {
        kc_test_uring_setup_use(i, newest);
        big_frames_and_pipelining(KC_LOOP_URING);
        netthread_drives_conn(KC_LOOP_URING);
    }
}

BOTH(big_frames_and_pipelining)
BOTH(timeout_resets_and_reconnects)
BOTH(peer_close_fails_inflight)
BOTH(backoff_against_closed_port)
BOTH(dead_broker_fails_queued_at_once)
BOTH(auth_ok)
BOTH(auth_fail_is_final)
BOTH(connect_timeout_then_close)
BOTH(bootstrap_list_and_ipv6)
BOTH(transport_frames)
BOTH(transport_refused_is_final)
BOTH(transport_goodbye_on_close)
BOTH(reauth_ok)
BOTH(reauth_refused_is_final)
BOTH(netthread_drives_conn)
BOTH(version_refusal_names_both_ranges)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reauth_ok_uring),
        cmocka_unit_test(reauth_ok_epoll),
        cmocka_unit_test(reauth_refused_is_final_uring),
        cmocka_unit_test(reauth_refused_is_final_epoll),
        cmocka_unit_test(transport_goodbye_on_close_uring),
        cmocka_unit_test(transport_goodbye_on_close_epoll),
        cmocka_unit_test(big_frames_and_pipelining_uring),
        cmocka_unit_test_teardown(older_ring_setups_carry_frames, kc_test_uring_setup_unset),
        cmocka_unit_test(big_frames_and_pipelining_epoll),
        cmocka_unit_test(timeout_resets_and_reconnects_uring),
        cmocka_unit_test(timeout_resets_and_reconnects_epoll),
        cmocka_unit_test(peer_close_fails_inflight_uring),
        cmocka_unit_test(peer_close_fails_inflight_epoll),
        cmocka_unit_test(backoff_against_closed_port_uring),
        cmocka_unit_test(backoff_against_closed_port_epoll),
        cmocka_unit_test(dead_broker_fails_queued_at_once_uring),
        cmocka_unit_test(dead_broker_fails_queued_at_once_epoll),
        cmocka_unit_test(auth_ok_uring),
        cmocka_unit_test(auth_ok_epoll),
        cmocka_unit_test(auth_fail_is_final_uring),
        cmocka_unit_test(auth_fail_is_final_epoll),
        cmocka_unit_test(connect_timeout_then_close_uring),
        cmocka_unit_test(connect_timeout_then_close_epoll),
        cmocka_unit_test(bootstrap_list_and_ipv6_uring),
        cmocka_unit_test(bootstrap_list_and_ipv6_epoll),
        cmocka_unit_test(transport_frames_uring),
        cmocka_unit_test(transport_frames_epoll),
        cmocka_unit_test(transport_refused_is_final_uring),
        cmocka_unit_test(transport_refused_is_final_epoll),
        cmocka_unit_test(netthread_drives_conn_uring),
        cmocka_unit_test(netthread_drives_conn_epoll),
        cmocka_unit_test(bad_bootstrap_is_config_error),
        cmocka_unit_test(canonical_bootstrap_names),
        cmocka_unit_test(version_refusal_names_both_ranges_uring),
        cmocka_unit_test(version_refusal_names_both_ranges_epoll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
