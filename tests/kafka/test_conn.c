/* The connection layer against a real broker (KC_BOOTSTRAP), on both backends: ApiVersions
 * handshake and version selection, 1,000 Metadata requests in flight on one connection answered
 * in order, io_uring really used (submission counter), and idle CPU with the connection open.
 * Metadata is encoded and decoded with the generated codec at the newest common version. */
#include "kc_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/clock.h"
#include "conn.h"
#include "loop.h"

typedef struct mreq {
    int idx;
    int *order, *n;
    kc_err_t err;
    int brokers;
} mreq;

static kc_err_t enc_metadata(kc_wbuf_t *out, int16_t v, void *opaque)
{
    (void)opaque;
    kc_metadata_request_t m;
    kc_metadata_request_init(&m);
    m.topics.count = -1; /* null: all topics */
    m.allow_auto_topic_creation = false;
    return kc_metadata_request_encode(&m, v, out, NULL);
}

static void on_metadata(kc_conn_t *c, kc_err_t err, kc_buf_t *f, size_t off, int16_t v, void *op)
{
    (void)c;
    mreq *m = op;
    m->err = err;
    m->order[(*m->n)++] = m->idx;
    if (err == KC_OK) {
        kc_rbuf_t r = kc_rbuf(f->data + off, f->len - off);
        kc_arena_t a = {0};
        kc_metadata_response_t resp;
        m->brokers = -1;
        if (kc_metadata_response_decode(&resp, v, &r, &a, NULL) == KC_OK)
            m->brokers = resp.brokers.count;
        kc_arena_free(&a);
        kc_buf_unref(f);
    }
}

static void on_state(kc_conn_t *c, kc_conn_state_t st, const kc_error_t *why, void *opaque)
{
    (void)c;
    if (st == KC_CONN_READY)
        *(int *)opaque = 1;
    if (why)
        print_message("# state %d: %s\n", (int)st, why->msg);
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void noop_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    *(int *)t->opaque = 1;
}

static void run_backend(kc_loop_backend_t b, int idle_seconds)
{
    const char *boot = kc_test_env("KC_BOOTSTRAP");
    kc_loop_t *loop = NULL;
    kc_error_t e = {0};
    if (kc_loop_new(&loop, b, &e) != KC_OK)
        fail_msg("loop: %s", e.msg);
    int ready = 0;
    kc_conn_opts_t o = {.servers = boot,
                        .client_id = "kc-test-conn",
                        .request_timeout_ms = 30000,
                        .on_state = on_state,
                        .state_opaque = &ready};
    kc_conn_t *c = NULL;
    assert_int_equal(kc_conn_new(&c, loop, &o, NULL), KC_OK);
    kc_conn_start(c);
    int64_t end = kc_now_ns() + 15000000000LL;
    while (!ready && kc_now_ns() < end)
        kc_loop_run_once(loop, 100);
    assert_true(ready);
    /* Kafka 4.x: ApiVersions up to >= 3, Metadata including v12. */
    assert_true(kc_conn_api_ranges(c)->max[18] >= 3);
    assert_int_equal(kc_conn_pick_version(c, 3, 12, 12), 12);
    assert_true(kc_conn_pick_version(c, 3, 0, 32000) >= 12);
    /* Intersection: our [0,2] against the broker's [min,max] is 2 exactly when min <= 2. */
    assert_int_equal(kc_conn_pick_version(c, 3, 0, 2), kc_conn_api_ranges(c)->min[3] <= 2 ? 2 : -1);
    assert_int_equal(kc_conn_pick_version(c, 3, 32000, 32001), -1);

    enum { N = 1000 };
    static mreq reqs[N];
    int order[N], n = 0;
    for (int i = 0; i < N; i++) {
        reqs[i] = (mreq){.idx = i, .order = order, .n = &n, .err = KC_ERR_STATE};
        kc_conn_req_spec_t s = {.api_key = 3,
                                .min_version = KC_METADATA_REQUEST_MIN_VERSION,
                                .max_version = KC_METADATA_REQUEST_MAX_VERSION,
                                .encode = enc_metadata,
                                .cb = on_metadata,
                                .opaque = &reqs[i]};
        assert_int_equal(kc_conn_send(c, &s, NULL), KC_OK);
    }
    end = kc_now_ns() + 60000000000LL;
    while (n < N && kc_now_ns() < end)
        kc_loop_run_once(loop, 100);
    assert_int_equal(n, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(order[i], i);
        assert_int_equal(reqs[i].err, KC_OK);
        assert_true(reqs[i].brokers >= 1);
    }
    kc_conn_stats_t cs;
    kc_conn_get_stats(c, &cs);
    assert_int_equal(cs.connects, 1);
    assert_int_equal(cs.responses, N + 1); /* + ApiVersions */
    kc_loop_stats_t ls;
    kc_loop_get_stats(loop, &ls);
    print_message("# %s (flags 0x%x): submissions %llu completions %llu enters %llu\n",
                  kc_loop_backend_name(loop), kc_loop_uring_flags(loop),
                  (unsigned long long)ls.submissions, (unsigned long long)ls.completions,
                  (unsigned long long)ls.enters);
    if (b == KC_LOOP_URING) {
        assert_string_equal(kc_loop_backend_name(loop), "io_uring");
        assert_true(ls.submissions > 0);
    }

    /* Idle: the connection stays open, the loop waits for a timer `idle_seconds` away. */
    int fired = 0;
    kc_loop_timer_t t = {.cb = noop_timer, .opaque = &fired};
    kc_loop_timer_start(loop, &t, idle_seconds * 1000);
    double c0 = cpu_s();
    int64_t w0 = kc_now_ns();
    while (!fired)
        kc_loop_run_once(loop, -1);
    double cpu = cpu_s() - c0, wall = (double)(kc_now_ns() - w0) / 1e9;
    kc_loop_stats_t ls2;
    kc_loop_get_stats(loop, &ls2);
    print_message("# %s idle: %.4f s CPU over %.1f s = %.3f%%, %llu enters\n",
                  kc_loop_backend_name(loop), cpu, wall, 100 * cpu / wall,
                  (unsigned long long)(ls2.enters - ls.enters));
    assert_true(cpu / wall < 0.01);
    assert_int_equal(kc_conn_state(c), KC_CONN_READY);

    kc_conn_close(c);
    for (int i = 0; i < 20; i++)
        kc_loop_run_once(loop, 5);
    kc_loop_free(loop);
}

static void conn_io_uring(void **s)
{
    (void)s;
    kc_loop_t *l = NULL;
    if (kc_loop_new(&l, KC_LOOP_URING, NULL) != KC_OK)
        skip();
    kc_loop_free(l);
    run_backend(KC_LOOP_URING, 10);
}

static void conn_epoll(void **s)
{
    (void)s;
    run_backend(KC_LOOP_EPOLL, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conn_io_uring),
        cmocka_unit_test(conn_epoll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
