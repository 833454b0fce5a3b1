/* kc-test-label: threads */
/* Blocking calls off the network thread (io/offload.c), on both backends, and the GSSAPI
 * security-layer framing (io/sasl_gssapi.c):
 *  - a job that blocks for 1.5 s (as a login to a KDC that does not answer would) runs while the
 *    loop keeps firing a 10 ms timer on time: the largest timer lateness is measured and bounded;
 *    its result comes back on the loop's thread, never from inside submit;
 *  - jobs run in submission order; a cancelled queued job is discarded at once and never done;
 *    a cancelled running job is discarded when it comes back; freeing the loop with jobs out
 *    discards them (ASan: nothing leaks);
 *  - lanes are independent: a job on the DNS lane comes back while one on the login lane still
 *    blocks (a KDC that hangs never delays a name lookup), on a thread of its own;
 *  - kc_gss_layer_parse takes exactly 4 octets, reads the 24-bit size big-endian, refuses a
 *    broker that offers no "no security layer"; kc_gss_layer_reply is 0x01, size 0, authzid. */
#include "kc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "loop.h"
#include "offload.h"
#include "sasl_gssapi.h"

typedef struct job {
    int id;
    int sleep_ms;
    _Atomic int started, worked; /* set on the helper thread */
    pthread_t work_thread;       /* read after done (the post orders it) */
    char work_name[16];          /* the helper thread's name, likewise */
    int done, discarded;
    int *order;
    int *norder;
} job;

static pthread_t loop_thread;

static void work(void *arg)
{
    job *j = arg;
    j->work_thread = pthread_self();
    pthread_getname_np(pthread_self(), j->work_name, sizeof j->work_name);
    atomic_store(&j->started, 1);
    if (j->sleep_ms)
        usleep((useconds_t)j->sleep_ms * 1000);
    atomic_store(&j->worked, 1);
}

static void done(void *arg)
{
    job *j = arg;
    assert_true(pthread_equal(pthread_self(), loop_thread));
    j->done++;
    if (j->order)
        j->order[(*j->norder)++] = j->id;
}

static void discard(void *arg)
{
    job *j = arg;
    j->discarded++;
}

static const kc_offload_fns_t fns = {work, done, discard};

typedef struct ticker {
    kc_loop_timer_t t;
    int64_t due_ns, worst_late_ns;
    int fired;
    kc_loop_t *l;
} ticker;

static void on_tick(kc_loop_t *l, kc_loop_timer_t *t)
{
    ticker *k = t->opaque;
    int64_t late = kc_now_ns() - k->due_ns;
    if (late > k->worst_late_ns)
        k->worst_late_ns = late;
    k->fired++;
    k->due_ns = kc_now_ns() + 10 * 1000000LL;
    kc_loop_timer_start(l, t, 10);
}

static kc_loop_t *new_loop(kc_loop_backend_t b)
{
    kc_loop_t *l = NULL;
    if (kc_loop_new(&l, b, NULL) != KC_OK)
        skip();
    loop_thread = pthread_self();
    return l;
}

static void loop_runs_while_a_job_blocks(kc_loop_backend_t b)
{
    kc_loop_t *l = new_loop(b);
    kc_error_t e;
    kc_offload_t *o = kc_loop_offload(l, KC_OFFLOAD_LOGIN, &e);
    assert_non_null(o);
    assert_ptr_equal(kc_loop_offload(l, KC_OFFLOAD_LOGIN, &e), o); /* one per lane */
    ticker k = {.l = l};
    k.t.cb = on_tick;
    k.t.opaque = &k;
    k.due_ns = kc_now_ns() + 10 * 1000000LL;
    kc_loop_timer_start(l, &k.t, 10);
    job j = {.id = 1, .sleep_ms = 1500};
    int64_t t0 = kc_now_ns();
    assert_int_equal(kc_offload_submit(o, &fns, &j, NULL, &e), KC_OK);
    assert_true(kc_now_ns() - t0 < 50 * 1000000LL); /* submitting does not block */
    assert_int_equal(j.done, 0);                    /* never from inside the call */
    int64_t end = kc_now_ns() + 10000 * 1000000LL;
    while (!j.done && kc_now_ns() < end)
        kc_loop_run_once(l, 20);
    double took_ms = (kc_now_ns() - t0) / 1e6;
    print_message("# %s: a 1500 ms blocking job came back after %.0f ms; the 10 ms timer fired "
                  "%d times meanwhile, worst lateness %.2f ms\n",
                  kc_loop_backend_name(l), took_ms, k.fired, k.worst_late_ns / 1e6);
    assert_int_equal(j.done, 1);
    assert_int_equal(j.discarded, 0);
    assert_false(pthread_equal(j.work_thread, loop_thread));
    /* ~150 ticks in 1.5 s if the loop never waited on the job; a loop blocked by it fires 0-1. */
    assert_true(k.fired >= 50);
    assert_true(k.worst_late_ns < 200 * 1000000LL * kc_test_time_scale());
    kc_loop_timer_stop(l, &k.t);
    kc_loop_free(l);
}

static void order_and_cancel(kc_loop_backend_t b)
{
    kc_loop_t *l = new_loop(b);
    kc_error_t e;
    kc_offload_t *o = kc_loop_offload(l, KC_OFFLOAD_LOGIN, &e);
    assert_non_null(o);
    int order[8], n = 0;
    job a = {.id = 1, .sleep_ms = 300, .order = order, .norder = &n};
    job bq = {.id = 2, .order = order, .norder = &n};
    job c = {.id = 3, .order = order, .norder = &n};
    kc_offload_job_t *ja, *jb;
    assert_int_equal(kc_offload_submit(o, &fns, &a, &ja, &e), KC_OK);
    assert_int_equal(kc_offload_submit(o, &fns, &bq, &jb, &e), KC_OK);
    assert_int_equal(kc_offload_submit(o, &fns, &c, NULL, &e), KC_OK);
    /* Wait until the first job is running, then cancel it and the queued second one. */
    while (!atomic_load(&a.started))
        usleep(1000);
    kc_offload_cancel(jb);
    assert_int_equal(bq.discarded, 1); /* queued: discarded at once */
    kc_offload_cancel(ja);
    int64_t end = kc_now_ns() + 10000 * 1000000LL;
    while ((!c.done || !a.discarded) && kc_now_ns() < end)
        kc_loop_run_once(l, 20);
    assert_int_equal(a.done, 0);
    assert_int_equal(a.discarded, 1); /* running: discarded when it came back */
    assert_int_equal(bq.done, 0);
    assert_int_equal(atomic_load(&bq.worked), 0);
    assert_int_equal(c.done, 1);
    assert_int_equal(n, 1);
    assert_int_equal(order[0], 3);
    /* Jobs still out when the loop goes are discarded, never done. */
    job d = {.id = 4, .sleep_ms = 200}, f = {.id = 5};
    assert_int_equal(kc_offload_submit(o, &fns, &d, NULL, &e), KC_OK);
    assert_int_equal(kc_offload_submit(o, &fns, &f, NULL, &e), KC_OK);
    kc_loop_free(l);
    assert_int_equal(d.done + f.done, 0);
    assert_int_equal(d.discarded + f.discarded, 2);
}

static void lanes_independent(kc_loop_backend_t b)
{
    kc_loop_t *l = new_loop(b);
    kc_error_t e;
    kc_offload_t *login = kc_loop_offload(l, KC_OFFLOAD_LOGIN, &e);
    kc_offload_t *dns = kc_loop_offload(l, KC_OFFLOAD_DNS, &e);
    assert_non_null(login);
    assert_non_null(dns);
    assert_ptr_not_equal(login, dns);
    assert_null(kc_loop_offload(l, KC_OFFLOAD_LANES, &e));
    job slow = {.id = 1, .sleep_ms = 1500}, quick = {.id = 2};
    assert_int_equal(kc_offload_submit(login, &fns, &slow, NULL, &e), KC_OK);
    while (!atomic_load(&slow.started))
        usleep(1000);
    int64_t t0 = kc_now_ns();
    assert_int_equal(kc_offload_submit(dns, &fns, &quick, NULL, &e), KC_OK);
    int64_t end = t0 + 5000 * 1000000LL;
    while (!quick.done && kc_now_ns() < end)
        kc_loop_run_once(l, 10);
    double quick_ms = (kc_now_ns() - t0) / 1e6;
    print_message("# %s: the DNS lane's job came back after %.1f ms while the login lane's "
                  "blocked\n",
                  kc_loop_backend_name(l), quick_ms);
    assert_int_equal(quick.done, 1);
    assert_int_equal(slow.done, 0); /* still blocking */
    assert_true(quick_ms < 700 * kc_test_time_scale());
    assert_false(pthread_equal(quick.work_thread, slow.work_thread));
    while (!slow.done && kc_now_ns() < end)
        kc_loop_run_once(l, 10);
    assert_int_equal(slow.done, 1);
    /* Each lane's thread carries its name (top -H, perf, gdb). */
    assert_string_equal(quick.work_name, "kc-dns");
    assert_string_equal(slow.work_name, "kc-login");
    kc_loop_free(l);
}

static void epoll_lanes(void **s)
{
    (void)s;
    lanes_independent(KC_LOOP_EPOLL);
}

static void uring_lanes(void **s)
{
    (void)s;
    lanes_independent(KC_LOOP_URING);
}

static void epoll_blocking(void **s)
{
    (void)s;
    loop_runs_while_a_job_blocks(KC_LOOP_EPOLL);
}
static void uring_blocking(void **s)
{
    (void)s;
    loop_runs_while_a_job_blocks(KC_LOOP_URING);
}
static void epoll_order_cancel(void **s)
{
    (void)s;
    order_and_cancel(KC_LOOP_EPOLL);
}
static void uring_order_cancel(void **s)
{
    (void)s;
    order_and_cancel(KC_LOOP_URING);
}

static void gss_layer_framing(void **s)
{
    (void)s;
    kc_error_t e;
    uint8_t layers = 0;
    uint32_t max = 0;
    const uint8_t ok[4] = {0x07, 0x01, 0x00, 0x00}; /* all three layers, 65536 */
    assert_int_equal(kc_gss_layer_parse(ok, 4, &layers, &max, &e), KC_OK);
    assert_int_equal(layers, 0x07);
    assert_int_equal(max, 65536);
    const uint8_t big[4] = {0x01, 0xff, 0xfe, 0xfd};
    assert_int_equal(kc_gss_layer_parse(big, 4, &layers, &max, &e), KC_OK);
    assert_int_equal(max, 0xfffefd);
    assert_int_equal(kc_gss_layer_parse(ok, 3, &layers, &max, &e), KC_ERR_MALFORMED);
    assert_non_null(strstr(e.msg, "3 bytes"));
    const uint8_t five[5] = {1, 0, 0, 0, 0};
    assert_int_equal(kc_gss_layer_parse(five, 5, &layers, &max, &e), KC_ERR_MALFORMED);
    assert_int_equal(kc_gss_layer_parse(NULL, 0, &layers, &max, &e), KC_ERR_MALFORMED);
    const uint8_t conf_only[4] = {0x04, 0, 0x10, 0};
    assert_int_equal(kc_gss_layer_parse(conf_only, 4, &layers, &max, &e), KC_ERR_AUTH);
    assert_non_null(strstr(e.msg, "0x04"));

    uint8_t out[64];
    size_t n = kc_gss_layer_reply("alice@EXAMPLE.ORG", out, sizeof out);
    assert_int_equal(n, 4 + 17);
    assert_memory_equal(out, "\x01\x00\x00\x00", 4);
    assert_memory_equal(out + 4, "alice@EXAMPLE.ORG", 17);
    assert_int_equal(kc_gss_layer_reply("", out, sizeof out), 4);
    assert_int_equal(kc_gss_layer_reply("alice@EXAMPLE.ORG", out, 20), 0); /* too small */
    assert_int_equal(kc_gss_layer_reply("x", out, 3), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(epoll_blocking),     cmocka_unit_test(uring_blocking),
        cmocka_unit_test(epoll_order_cancel), cmocka_unit_test(uring_order_cancel),
        cmocka_unit_test(gss_layer_framing),  cmocka_unit_test(epoll_lanes),
        cmocka_unit_test(uring_lanes),
    };
    kc_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
