/* kc-test-label: threads */
/* Name resolution off the network thread (io/resolver.c), on both backends: localhost resolves
 * and the answer comes back through the loop; a .invalid name fails with a clear error naming the
 * host, in bounded time; the loop keeps running timers while a lookup is out; a cancelled lookup
 * never calls back; freeing the loop with lookups out leaks nothing (ASan); a connection to a
 * name that does not resolve does not block its loop and fails its request by its timeout. */
#include "kc_test.h"

#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "conn.h"
#include "loop.h"
#include "resolver.h"

typedef struct res {
    int calls;
    kc_err_t rc;
    int n;
    char msg[256];
    int family0;
} res;

static void on_res(kc_err_t rc, const kc_addr_t *addrs, int n, const kc_error_t *err, void *op)
{
    res *r = op;
    r->calls++;
    r->rc = rc;
    r->n = n;
    if (rc != KC_OK)
        snprintf(r->msg, sizeof r->msg, "%s", err->msg);
    else
        r->family0 = addrs[0].sa.ss_family;
}

static kc_loop_t *new_loop(kc_loop_backend_t b)
{
    kc_loop_t *l = NULL;
    if (kc_loop_new(&l, b, NULL) != KC_OK)
        skip();
    return l;
}

static void wait_for(kc_loop_t *l, const int *flag, int64_t ms)
{
    int64_t end = kc_now_ns() + ms * 1000000LL;
    while (!*flag && kc_now_ns() < end)
        kc_loop_run_once(l, 20);
}

static void resolve_names(kc_loop_backend_t b)
{
    kc_loop_t *l = new_loop(b);
    kc_error_t e;
    res ok = {0}, bad = {0};
    kc_resolve_job_t *j1, *j2;
    int64_t t0 = kc_now_ns();
    assert_int_equal(kc_resolve_start(l, "localhost:9092", 0, on_res, &ok, &j1, &e), KC_OK);
    assert_int_equal(kc_resolve_start(l, "kc-no-such-host.invalid:9092", 0, on_res, &bad, &j2, &e),
                     KC_OK);
    assert_int_equal(ok.calls + bad.calls, 0);  /* never from inside the call */
    assert_true(kc_now_ns() - t0 < 50000000LL); /* starting a lookup does not block */
    wait_for(l, &ok.calls, 10000);
    wait_for(l, &bad.calls, 30000);
    print_message("# %s: localhost -> %d address(es); invalid -> \"%s\" after %.1f ms\n",
                  kc_loop_backend_name(l), ok.n, bad.msg, (kc_now_ns() - t0) / 1e6);
    assert_int_equal(ok.calls, 1);
    assert_int_equal(ok.rc, KC_OK);
    assert_true(ok.n >= 1);
    assert_true(ok.family0 == AF_INET || ok.family0 == AF_INET6);
    assert_int_equal(bad.calls, 1);
    assert_int_equal(bad.rc, KC_ERR_TRANSPORT);
    assert_non_null(strstr(bad.msg, "kc-no-such-host.invalid"));
    kc_loop_free(l);
}

static void noop_timer(kc_loop_t *l, kc_loop_timer_t *t)
{
    (void)l;
    ++*(int *)t->opaque;
}

static void cancel_and_free(kc_loop_backend_t b)
{
    kc_loop_t *l = new_loop(b);
    kc_error_t e;
    res a = {0}, c = {0}, d = {0};
    kc_resolve_job_t *ja, *jc, *jd;
    /* a is picked up at once (being resolved or done when cancelled); c most likely still
     * queued behind it: both cancel paths run, and neither may call back. */
    assert_int_equal(kc_resolve_start(l, "localhost:1", 0, on_res, &a, &ja, &e), KC_OK);
    assert_int_equal(kc_resolve_start(l, "localhost:2", 0, on_res, &c, &jc, &e), KC_OK);
    kc_resolve_cancel(jc);
    kc_resolve_cancel(ja);
    int fired = 0;
    kc_loop_timer_t t = {.cb = noop_timer, .opaque = &fired};
    kc_loop_timer_start(l, &t, 200);
    wait_for(l, &fired, 5000);
    assert_int_equal(a.calls + c.calls, 0);
    /* A lookup still out when the loop is freed: joined and freed, no callback, no leak. */
    assert_int_equal(kc_resolve_start(l, "localhost:3", 0, on_res, &d, &jd, &e), KC_OK);
    kc_loop_free(l);
    assert_int_equal(d.calls, 0);
}

static void conn_unresolvable(kc_loop_backend_t b)
{
    kc_loop_t *l = new_loop(b);
    kc_conn_opts_t o = {.servers = "kc-no-such-host.invalid:9092",
                        .request_timeout_ms = 1500,
                        .reconnect_backoff_ms = 50,
                        .reconnect_backoff_max_ms = 200};
    kc_conn_t *c = NULL;
    assert_int_equal(kc_conn_new(&c, l, &o, NULL), KC_OK);
    int64_t t0 = kc_now_ns();
    kc_conn_start(c);
    assert_true(kc_now_ns() - t0 < 50000000LL);
    /* A timer on the same loop fires on time while lookups are out. */
    int fired = 0;
    kc_loop_timer_t t = {.cb = noop_timer, .opaque = &fired};
    kc_loop_timer_start(l, &t, 100);
    wait_for(l, &fired, 2000);
    int64_t late_ms = (kc_now_ns() - t0) / 1000000 - 100;
    assert_int_equal(fired, 1);
    assert_true(late_ms < 100);
    assert_true(kc_conn_state(c) != KC_CONN_READY);
    kc_conn_close(c); /* with a lookup possibly out: cancelled, no callback into freed memory */
    for (int i = 0; i < 10; i++)
        kc_loop_run_once(l, 10);
    kc_loop_free(l);
}

static void t_names_uring(void **s)
{
    (void)s;
    resolve_names(KC_LOOP_URING);
}
static void t_names_epoll(void **s)
{
    (void)s;
    resolve_names(KC_LOOP_EPOLL);
}
static void t_cancel_uring(void **s)
{
    (void)s;
    cancel_and_free(KC_LOOP_URING);
}
static void t_cancel_epoll(void **s)
{
    (void)s;
    cancel_and_free(KC_LOOP_EPOLL);
}
static void t_conn_uring(void **s)
{
    (void)s;
    conn_unresolvable(KC_LOOP_URING);
}
static void t_conn_epoll(void **s)
{
    (void)s;
    conn_unresolvable(KC_LOOP_EPOLL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_names_uring),  cmocka_unit_test(t_names_epoll),
        cmocka_unit_test(t_cancel_uring), cmocka_unit_test(t_cancel_epoll),
        cmocka_unit_test(t_conn_uring),   cmocka_unit_test(t_conn_epoll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
