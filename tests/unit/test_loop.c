/* The event loop on both backends: timers, cross-thread command queue + wake, backend choice.
 * Each test runs once per backend; io_uring is skipped (not failed) only where the kernel or a
 * sandbox refuses io_uring_setup. */
#include "kc_test.h"
#include "uring_setups.h"

#include <pthread.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "base/log.h"
#include "base/clock.h"
#include "loop.h"
#include "netthread.h"

static kc_loop_t *new_loop(kc_loop_backend_t b)
{
    kc_loop_t *loop = NULL;
    kc_error_t e = {0};
    kc_err_t rc = kc_loop_new(&loop, b, &e);
    if (rc != KC_OK)
        fail_msg("kc_loop_new(%d): %s", (int)b, e.msg);
    return loop;
}

/* ---- timers ---------------------------------------------------------------------------------- */

typedef struct tctx {
    kc_loop_timer_t t;
    int id;
    int *order;
    int *n;
    int64_t fired_ns;
} tctx;

static void on_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    tctx *x = (tctx *)t;
    x->order[(*x->n)++] = x->id;
    x->fired_ns = kc_now_ns();
}

static void timers_fire_in_order_and_stop_cancels(kc_loop_backend_t b)
{
    kc_loop_t *loop = new_loop(b);
    int order[8], n = 0;
    tctx ts[4];
    int64_t delays[4] = {60, 20, 40, 30};
    int64_t t0 = kc_now_ns();
    for (int i = 0; i < 4; i++) {
        memset(&ts[i], 0, sizeof ts[i]);
        ts[i].t.cb = on_timer;
        ts[i].id = i;
        ts[i].order = order;
        ts[i].n = &n;
        kc_loop_timer_start(loop, &ts[i].t, delays[i]);
    }
    kc_loop_timer_stop(loop, &ts[3].t); /* cancelled: must never fire */
    assert_false(kc_loop_timer_armed(&ts[3].t));
    while (n < 3 && kc_now_ns() - t0 < 2000000000LL)
        kc_loop_run_once(loop, -1);
    kc_loop_run_once(loop, 50); /* give a wrongly-armed timer the chance to fire */
    assert_int_equal(n, 3);
    assert_int_equal(order[0], 1);
    assert_int_equal(order[1], 2);
    assert_int_equal(order[2], 0);
    for (int i = 0; i < 3; i++)
        assert_true(ts[i].fired_ns - t0 >= delays[i] * 1000000LL);
    kc_loop_stats_t st;
    kc_loop_get_stats(loop, &st);
    assert_int_equal(st.timers, 3);
    /* Blocking waits, not spinning: a handful of enters for ~60 ms of timers. */
    assert_true(st.enters < 20);
    kc_loop_free(loop);
}

/* ---- command queue --------------------------------------------------------------------------- */

#define PRODUCERS    4
#define PER_PRODUCER 20000

typedef struct counter {
    long seen;           /* loop thread only */
    long per[PRODUCERS]; /* loop thread only: last sequence seen per producer (FIFO check) */
    int fifo_ok;
} counter;

typedef struct item {
    kc_loop_cmd_t cmd;
    int producer;
    long seq;
} item;

static void on_item(kc_loop_t *loop, kc_loop_cmd_t *cmd)
{
    (void)loop;
    item *it = (item *)cmd;
    counter *c = cmd->opaque;
    if (it->seq != c->per[it->producer] + 1)
        c->fifo_ok = 0;
    c->per[it->producer] = it->seq;
    c->seen++;
    free(it);
}

typedef struct prod_arg {
    kc_netthread_t *nt;
    counter *c;
    int id;
} prod_arg;

static void *producer(void *arg)
{
    prod_arg *p = arg;
    for (long i = 1; i <= PER_PRODUCER; i++) {
        item *it = calloc(1, sizeof *it);
        it->cmd.fn = on_item;
        it->cmd.opaque = p->c;
        it->producer = p->id;
        it->seq = i;
        kc_netthread_post(p->nt, &it->cmd);
        if ((i & 1023) == 0)
            sched_yield(); /* let the loop fall asleep now and then so wakes are exercised */
    }
    return NULL;
}

static void read_seen(kc_loop_t *loop, void *arg)
{
    (void)loop;
    counter *c = ((void **)arg)[0];
    *(long *)((void **)arg)[1] = c->seen;
}

static void read_name(kc_loop_t *loop, void *arg)
{
    (void)loop;
    pthread_getname_np(pthread_self(), arg, 16);
}

static void queue_many_producers(kc_loop_backend_t b)
{
    kc_netthread_t *nt = NULL;
    kc_error_t e = {0};
    assert_int_equal(kc_netthread_start(&nt, b, NULL, &e), KC_OK);
    counter c;
    memset(&c, 0, sizeof c);
    c.fifo_ok = 1;
    pthread_t th[PRODUCERS];
    prod_arg pa[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        pa[i] = (prod_arg){nt, &c, i};
        pthread_create(&th[i], NULL, producer, &pa[i]);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(th[i], NULL);
    long seen = 0;
    void *args[2] = {&c, &seen};
    int64_t t0 = kc_now_ns();
    do {
        kc_netthread_call(nt, read_seen, args); /* also a command: FIFO puts it after the items */
    } while (seen < PRODUCERS * PER_PRODUCER && kc_now_ns() - t0 < 10000000000LL);
    assert_int_equal(seen, PRODUCERS * PER_PRODUCER);
    assert_true(c.fifo_ok);
    kc_loop_stats_t st;
    kc_loop_get_stats(kc_netthread_loop(nt), &st);
    print_message("# %s: %llu commands, %llu eventfd writes, %llu wakeups, %llu enters\n",
                  kc_loop_backend_name(kc_netthread_loop(nt)), (unsigned long long)st.commands,
                  (unsigned long long)st.wake_writes, (unsigned long long)st.wakeups,
                  (unsigned long long)st.enters);
    assert_true(st.commands >= (uint64_t)PRODUCERS * PER_PRODUCER);
    /* The sleeping flag lets producers skip the write while the loop is awake. */
    assert_true(st.wake_writes < st.commands);
    kc_netthread_stop(nt);
}

/* An idle loop must block: one command posted after a quiet period is run promptly, and the
 * quiet period costs at most a few enters (no busy polling). */
static void idle_loop_sleeps_and_wakes(kc_loop_backend_t b)
{
    kc_netthread_t *nt = NULL;
    assert_int_equal(kc_netthread_start(&nt, b, NULL, NULL), KC_OK);
    kc_loop_stats_t a, z;
    kc_loop_get_stats(kc_netthread_loop(nt), &a);
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL);
    kc_loop_get_stats(kc_netthread_loop(nt), &z);
    assert_true(z.enters - a.enters <= 2);
    counter c;
    memset(&c, 0, sizeof c);
    long seen = 0;
    void *args[2] = {&c, &seen};
    int64_t t0 = kc_now_ns();
    kc_netthread_call(nt, read_seen, args);
    assert_true(kc_now_ns() - t0 < 100000000LL * kc_test_time_scale());
    kc_loop_get_stats(kc_netthread_loop(nt), &z);
    assert_true(z.wakeups >= 1);
    char name[16] = "";
    kc_netthread_call(nt, read_name, name);
    assert_string_equal(name, "kc-net"); /* top -H, perf and gdb show which thread is which */
    kc_netthread_stop(nt);
}

/* ---- backend choice and backoff -------------------------------------------------------------- */

static void backend_env_forces_epoll(void **state)
{
    (void)state;
    kc_loop_backend_t b;
    setenv("KC_IO_BACKEND", "epoll", 1);
    assert_int_equal(kc_loop_backend_parse("io_uring", &b, NULL), KC_OK);
    assert_int_equal(b, KC_LOOP_EPOLL);
    unsetenv("KC_IO_BACKEND");
    assert_int_equal(kc_loop_backend_parse("io_uring", &b, NULL), KC_OK);
    assert_int_equal(b, KC_LOOP_URING);
    kc_error_t e;
    assert_int_equal(kc_loop_backend_parse("kqueue", &b, &e), KC_ERR_CONFIG);
    kc_loop_t *loop = new_loop(KC_LOOP_EPOLL);
    assert_string_equal(kc_loop_backend_name(loop), "epoll");
    kc_loop_free(loop);
    setenv("KC_IO_BACKEND", "epoll", 1); /* AUTO follows the environment */
    loop = new_loop(KC_LOOP_AUTO);
    assert_string_equal(kc_loop_backend_name(loop), "epoll");
    kc_loop_free(loop);
    unsetenv("KC_IO_BACKEND");
}

static void backoff_grows_with_bounded_jitter(void **state)
{
    (void)state;
    uint64_t rng = 42;
    for (int f = 1; f <= 12; f++) {
        double base = 50;
        for (int i = 1; i < f; i++)
            base *= 2;
        if (base > 1000)
            base = 1000;
        int64_t lo = INT64_MAX, hi = 0;
        for (int i = 0; i < 2000; i++) {
            int64_t v = kc_backoff_ms(50, 1000, f, kc_backoff_rand(&rng));
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        assert_true(lo >= (int64_t)(base * 0.8));
        assert_true(hi < (int64_t)(base * 1.2) + 1);
        /* Jitter really spreads: the sample range covers most of +-20 %. */
        assert_true(hi - lo >= (int64_t)(base * 0.3));
    }
}

/* Debug builds catch another thread touching loop state (the ownership rule, CONTRIBUTING.md). */
#ifdef KC_DEBUG_OWNERSHIP
static void *touch_loop(void *arg)
{
    kc_loop_timer_t t = {0};
    kc_loop_timer_start(arg, &t, 1000); /* not the owner: must abort in debug builds */
    return NULL;
}
#endif

static void foreign_thread_is_caught(void **state)
{
    (void)state;
#ifndef KC_DEBUG_OWNERSHIP
    skip();
#else
    pid_t pid = fork();
    if (pid == 0) {
        kc_log_configure(NULL, NULL, 0); /* keep the expected error line out of the test log */
        kc_loop_t *loop = NULL;
        if (kc_loop_new(&loop, KC_LOOP_EPOLL, NULL) != KC_OK)
            _exit(3);
        pthread_t th;
        pthread_create(&th, NULL, touch_loop, loop);
        pthread_join(th, NULL);
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#endif
}

/* io_uring refused (as by Docker's seccomp profile or kernel.io_uring_disabled): AUTO falls back
 * to epoll with exactly one log line; an explicit io_uring request fails with the reason. The
 * refusal is real: a seccomp filter in a child process makes io_uring_setup return EPERM. */
static int warn_lines;
static void count_sink(void *opaque, int level, const char *subsystem, const char *line)
{
    (void)opaque;
    (void)subsystem;
    (void)line;
    if (level <= KC_LOG_WARN)
        warn_lines++;
}

static int child_without_io_uring(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
    unsetenv("KC_NO_IO_URING"); /* this test is about the kernel's refusal, not the knob's */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        return 10;
    kc_log_configure(count_sink, NULL, KC_LOG_DEBUG);
    kc_loop_t *loop = NULL;
    kc_error_t e = {0};
    if (kc_loop_new(&loop, KC_LOOP_AUTO, &e) != KC_OK)
        return 11;
    if (strcmp(kc_loop_backend_name(loop), "epoll") != 0)
        return 12;
    kc_loop_free(loop);
    if (warn_lines != 1)
        return 13;
    if (kc_loop_new(&loop, KC_LOOP_URING, &e) != KC_ERR_UNSUPPORTED || !strstr(e.msg, "ermit"))
        return 14; /* "Operation not permitted" */
    /* A misspelt ring setup is the caller's error even where io_uring is refused, by the kernel
     * or on request (KC_NO_IO_URING, the valgrind runs). */
    setenv("KC_URING_SETUP", "sqpoll", 1);
    if (kc_loop_new(&loop, KC_LOOP_AUTO, &e) != KC_ERR_CONFIG || !strstr(e.msg, "sqpoll"))
        return 15;
    setenv("KC_NO_IO_URING", "1", 1);
    if (kc_loop_new(&loop, KC_LOOP_AUTO, &e) != KC_ERR_CONFIG || !strstr(e.msg, "sqpoll"))
        return 16;
    unsetenv("KC_NO_IO_URING");
    unsetenv("KC_URING_SETUP");
    return 0;
}

static void falls_back_to_epoll_when_io_uring_is_refused(void **state)
{
    (void)state;
    unsetenv("KC_IO_BACKEND");
    pid_t pid = fork();
    if (pid == 0)
        _exit(child_without_io_uring());
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

#define BOTH(fn)                                                                                   \
    static void fn##_uring(void **s)                                                               \
    {                                                                                              \
        (void)s;                                                                                   \
        kc_loop_t *l = NULL;                                                                       \
        if (kc_loop_new(&l, KC_LOOP_URING, NULL) != KC_OK)                                         \
            skip();                                                                                \
        kc_loop_free(l);                                                                           \
        fn(KC_LOOP_URING);                                                                         \
    }                                                                                              \
    static void fn##_epoll(void **s)                                                               \
    {                                                                                              \
        (void)s;                                                                                   \
        fn(KC_LOOP_EPOLL);                                                                         \
    }

BOTH(timers_fire_in_order_and_stop_cancels)
BOTH(queue_many_producers)
BOTH(idle_loop_sleeps_and_wakes)

/* Each ring setup the probe can fall back to is the one named (on a kernel that has the newest,
 * so has them all), sleeps, wakes on a command and fires timers (the wake READ completes through
 * task work, which COOP_TASKRUN and no flag run differently from DEFER_TASKRUN). A name that is
 * none of them is a configuration error under auto too: not a quiet switch to epoll. */
static void older_ring_setups_sleep_and_wake(void **state)
{
    (void)state;
    bool newest = kc_test_uring_newest();
    for (size_t i = 0; i < KC_TEST_URING_SETUPS; i++) {
        kc_test_uring_setup_use(i, newest);
        timers_fire_in_order_and_stop_cancels(KC_LOOP_URING);
        idle_loop_sleeps_and_wakes(KC_LOOP_URING);
        queue_many_producers(KC_LOOP_URING);
    }
    setenv("KC_URING_SETUP", "sqpoll", 1);
    kc_loop_t *l = NULL;
    kc_error_t e = {0};
    assert_int_equal(kc_loop_new(&l, KC_LOOP_URING, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "sqpoll"));
    const char *forced = getenv("KC_IO_BACKEND");
    if (!forced || strcmp(forced, "epoll") != 0) { /* auto tries io_uring unless forced to epoll */
        assert_int_equal(kc_loop_new(&l, KC_LOOP_AUTO, &e), KC_ERR_CONFIG);
        assert_non_null(strstr(e.msg, "sqpoll"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(timers_fire_in_order_and_stop_cancels_uring),
        cmocka_unit_test(timers_fire_in_order_and_stop_cancels_epoll),
        cmocka_unit_test(queue_many_producers_uring),
        cmocka_unit_test(queue_many_producers_epoll),
        cmocka_unit_test(idle_loop_sleeps_and_wakes_uring),
        cmocka_unit_test(idle_loop_sleeps_and_wakes_epoll),
        cmocka_unit_test_teardown(older_ring_setups_sleep_and_wake, kc_test_uring_setup_unset),
        cmocka_unit_test(backend_env_forces_epoll),
        cmocka_unit_test(backoff_grows_with_bounded_jitter),
        cmocka_unit_test(foreign_thread_is_caught),
        cmocka_unit_test(falls_back_to_epoll_when_io_uring_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
