/*
 * The backend-independent half of the loop: backend choice, timers (a binary min-heap driven by
 * the wait timeout), the cross-thread command queue and its eventfd wake.
 *
 * Owner: the loop's thread, except kc_loop_post() (any thread), which touches only `cmds`,
 * `sleeping`, `wake_fd` and the wake_writes counter.
 *
 * Wake protocol (why producers can skip the eventfd write while the loop is awake):
 *   producer: push (seq_cst exchange on cmds.head) ; if load(sleeping) (seq_cst) -> write(eventfd)
 *   loop:     store(sleeping, 1) (seq_cst) ; if !empty(cmds) (seq_cst load of head) -> don't block
 *             ; block in io_uring_enter/epoll_wait ; store(sleeping, 0)
 * Both sides store then load with seq_cst, so in the single total order either the loop's load
 * sees the push (and does not block) or the producer's load sees sleeping == 1 (and writes the
 * eventfd, whose pending read/readiness ends the wait). A push that is half done (exchange done,
 * link not yet stored) counts as non-empty, so the loop never sleeps on a stranded item.
 * The store of sleeping = 0 after the wait may be relaxed: a producer that reads it skips the
 * write, and its push is then before the loop's next seq_cst store of 1 in S, so the next
 * emptiness check sees it.
 *
 * wake_pending elides repeated eventfd writes: producer xchg(wake_pending, 1) (seq_cst) before
 * writing; the loop stores 0 (seq_cst) once the eventfd read drained the counter
 * (kc_loop_wake_consumed, loop_uring.c wake_cb). A producer whose xchg reads 1 skips the write;
 * its command is still seen: its xchg precedes the loop's store of 0 in S, which precedes the
 * loop's next store of sleeping = 1, so the producer's load of sleeping (before its xchg) read
 * an earlier sleeping = 1, and its push precedes the loop's next emptiness check in S. All four
 * accesses must be seq_cst for that chain: with release/acquire the xchg could read a 1 whose
 * write was already consumed while the loop sleeps again on the command.
 */
#include "loop_internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "offload.h"

kc_err_t kc_loop_backend_parse(const char *cfg, kc_loop_backend_t *out, kc_error_t *err)
{
    const char *env = getenv("KC_IO_BACKEND");
    const char *v = env && *env ? env : cfg;
    if (!v || !*v || strcmp(v, "auto") == 0)
        *out = KC_LOOP_AUTO;
    else if (strcmp(v, "io_uring") == 0)
        *out = KC_LOOP_URING;
    else if (strcmp(v, "epoll") == 0)
        *out = KC_LOOP_EPOLL;
    else
        return kc_fail(err, KC_ERR_CONFIG, "io.backend: '%s' is not io_uring, epoll or auto", v);
    return KC_OK;
}

kc_err_t kc_loop_new(kc_loop_t **out, kc_loop_backend_t backend, kc_error_t *err)
{
    kc_loop_t *loop = calloc(1, sizeof *loop);
    if (!loop)
        return kc_fail(err, KC_ERR_NOMEM, "loop: out of memory");
    kc_mpsc_init(&loop->cmds);
    loop->owner = pthread_self();
    atomic_init(&loop->sleeping, 0);
    atomic_init(&loop->wake_pending, 0);
    loop->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (loop->wake_fd < 0) {
        int e = errno;
        free(loop);
        return kc_fail(err, KC_ERR_SYSTEM, "loop: eventfd: %s", strerror(e));
    }
    if (backend == KC_LOOP_AUTO) /* KC_IO_BACKEND still decides when the caller left it open */
        (void)kc_loop_backend_parse(NULL, &backend, NULL);
    kc_err_t rc = KC_ERR_UNSUPPORTED;
    kc_error_t uerr = {0};
    if (backend != KC_LOOP_EPOLL) {
        loop->vt = &kc_loop_uring_vt;
        rc = loop->vt->init(loop, &uerr);
        /* A configuration error (KC_URING_SETUP misspelt) is the caller's to fix, not a kernel
         * that refused: auto does not hide it behind epoll. */
        if (rc != KC_OK && (backend == KC_LOOP_URING || rc == KC_ERR_CONFIG)) {
            if (err)
                *err = uerr;
            close(loop->wake_fd);
            free(loop);
            return rc;
        }
        if (rc != KC_OK)
            kc_log(KC_LOG_WARN, "loop", "io_uring unavailable (%s); using epoll", uerr.msg);
    }
    if (rc != KC_OK) {
        loop->vt = &kc_loop_epoll_vt;
        rc = loop->vt->init(loop, err);
        if (rc != KC_OK) {
            close(loop->wake_fd);
            free(loop);
            return rc;
        }
    }
    *out = loop;
    return KC_OK;
}

#ifdef KC_DEBUG_OWNERSHIP
/* A programming error (another thread touching loop state), caught in debug builds only. */
void kc_loop_owner_violation(const kc_loop_t *loop, const char *fn)
{
    (void)loop;
    kc_log(KC_LOG_ERROR, "loop", "%s called off the loop's owner thread", fn);
    abort();
}
#endif

void kc_loop_free(kc_loop_t *loop)
{
    if (!loop)
        return;
    /* Join the helpers before anything they post to goes; each discards the jobs still out. */
    for (int i = 0; i < KC_OFFLOAD_LANES; i++)
        kc_offload_free(loop->offload[i]);
    loop->vt->fini(loop);
    close(loop->wake_fd);
    free(loop->heap);
    free(loop);
}

const char *kc_loop_backend_name(const kc_loop_t *loop)
{
    return loop->vt->name;
}

unsigned kc_loop_uring_flags(const kc_loop_t *loop)
{
    return loop->uring_flags;
}

void kc_loop_get_stats(const kc_loop_t *loop, kc_loop_stats_t *o)
{
#define LD(f) o->f = atomic_load_explicit(&((kc_loop_t *)loop)->st.f, memory_order_relaxed)
    LD(submissions);
    LD(completions);
    LD(enters);
    LD(wakeups);
    LD(wake_writes);
    LD(commands);
    LD(timers);
#undef LD
}

int kc_loop_socket(kc_loop_t *loop, int family)
{
    KC_LOOP_OWNER(loop);
    int type = SOCK_STREAM | SOCK_CLOEXEC | (loop->vt == &kc_loop_epoll_vt ? SOCK_NONBLOCK : 0);
    int fd = socket(family, type, IPPROTO_TCP);
    if (fd < 0)
        return -errno;
    int one = 1;
    /* Requests are whole frames written at once; Nagle would only delay them. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

void kc_loop_close(kc_loop_t *loop, int fd)
{
    KC_LOOP_OWNER(loop);
    if (fd < 0)
        return;
    loop->vt->forget_fd(loop, fd);
    close(fd);
}

static void start_op(kc_loop_t *loop, kc_loop_op_t *op, int kind, int fd, uint8_t *buf, size_t len)
{
    KC_LOOP_OWNER(loop);
    op->kind = kind;
    op->fd = fd;
    op->buf = buf;
    op->len = len;
    op->done = 0;
    op->pending = 1;
    op->cancelled = 0;
    op->next = NULL;
    loop->ops_out++;
    loop->vt->start(loop, op);
}

void kc_loop_connect(kc_loop_t *loop, kc_loop_op_t *op, int fd, const struct sockaddr *addr,
                     socklen_t addrlen)
{
    op->addr = addr;
    op->addrlen = addrlen;
    start_op(loop, op, KC_OP_CONNECT, fd, NULL, 0);
}

void kc_loop_send(kc_loop_t *loop, kc_loop_op_t *op, int fd, const uint8_t *buf, size_t len)
{
    /* The backends never write through a send buffer; the cast only shares the op field. */
    start_op(loop, op, KC_OP_SEND, fd, (uint8_t *)buf, len);
}

void kc_loop_recv(kc_loop_t *loop, kc_loop_op_t *op, int fd, uint8_t *buf, size_t cap)
{
    start_op(loop, op, KC_OP_RECV, fd, buf, cap);
}

void kc_loop_recv_exact(kc_loop_t *loop, kc_loop_op_t *op, int fd, uint8_t *buf, size_t len)
{
    start_op(loop, op, KC_OP_RECV_EXACT, fd, buf, len);
}

void kc_loop_cancel(kc_loop_t *loop, kc_loop_op_t *op)
{
    KC_LOOP_OWNER(loop);
    if (!op->pending || op->cancelled)
        return;
    op->cancelled = 1;
    loop->vt->cancel(loop, op);
}

/* ---- timers: binary min-heap; heap_idx is 1-based so 0 means "not armed" ----------------------
 */

static void heap_set(kc_loop_t *loop, size_t i, kc_loop_timer_t *t)
{
    loop->heap[i] = t;
    t->heap_idx = i + 1;
}

static void sift_up(kc_loop_t *loop, size_t i)
{
    kc_loop_timer_t *t = loop->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (loop->heap[p]->deadline_ns <= t->deadline_ns)
            break;
        heap_set(loop, i, loop->heap[p]);
        i = p;
    }
    heap_set(loop, i, t);
}

static void sift_down(kc_loop_t *loop, size_t i)
{
    kc_loop_timer_t *t = loop->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= loop->heap_len)
            break;
        if (c + 1 < loop->heap_len && loop->heap[c + 1]->deadline_ns < loop->heap[c]->deadline_ns)
            c++;
        if (t->deadline_ns <= loop->heap[c]->deadline_ns)
            break;
        heap_set(loop, i, loop->heap[c]);
        i = c;
    }
    heap_set(loop, i, t);
}

void kc_loop_timer_stop(kc_loop_t *loop, kc_loop_timer_t *t)
{
    KC_LOOP_OWNER(loop);
    if (!t->heap_idx)
        return;
    size_t i = t->heap_idx - 1;
    t->heap_idx = 0;
    loop->heap_len--;
    if (i == loop->heap_len)
        return;
    loop->heap[i] = loop->heap[loop->heap_len];
    loop->heap[i]->heap_idx = i + 1;
    sift_down(loop, i);
    sift_up(loop, loop->heap[i]->heap_idx - 1);
}

void kc_loop_timer_start(kc_loop_t *loop, kc_loop_timer_t *t, int64_t delay_ms)
{
    KC_LOOP_OWNER(loop);
    kc_loop_timer_stop(loop, t);
    if (loop->heap_len == loop->heap_cap) {
        size_t cap = loop->heap_cap ? loop->heap_cap * 2 : 64;
        kc_loop_timer_t **h = realloc(loop->heap, cap * sizeof *h);
        if (!h) {
            /* Out of memory for a timer: fire it at once rather than never (nothing may wait
             * forever); its owner treats the early expiry like any other. */
            t->deadline_ns = 0;
            kc_log(KC_LOG_ERROR, "loop", "timer heap: out of memory; firing timer early");
            return;
        }
        loop->heap = h;
        loop->heap_cap = cap;
    }
    t->deadline_ns = kc_now_ns() + (delay_ms < 0 ? 0 : delay_ms) * 1000000LL;
    loop->heap[loop->heap_len] = t;
    loop->heap_len++;
    sift_up(loop, loop->heap_len - 1);
}

static int run_timers(kc_loop_t *loop)
{
    int n = 0;
    int64_t now = kc_now_ns();
    while (loop->heap_len && loop->heap[0]->deadline_ns <= now) {
        kc_loop_timer_t *t = loop->heap[0];
        kc_loop_timer_stop(loop, t);
        KC_STAT_ADD(loop, timers, 1);
        t->cb(loop, t);
        n++;
    }
    return n;
}

/* ---- commands -------------------------------------------------------------------------------- */

void kc_loop_post(kc_loop_t *loop, kc_loop_cmd_t *cmd)
{
    kc_mpsc_push(&loop->cmds, &cmd->node);
    /* seq_cst: pairs with the loop's seq_cst store of sleeping (see the top of this file). */
    if (atomic_load_explicit(&loop->sleeping, memory_order_seq_cst) &&
        !atomic_exchange_explicit(&loop->wake_pending, 1, memory_order_seq_cst)) {
        uint64_t one = 1;
        /* EAGAIN means the counter is saturated, i.e. a wake is already pending: fine. */
        ssize_t w = write(loop->wake_fd, &one, sizeof one);
        (void)w;
        atomic_fetch_add_explicit(&loop->st.wake_writes, 1, memory_order_relaxed);
    }
}

void kc_loop_wake_consumed(kc_loop_t *loop)
{
    uint64_t v;
    /* Non-blocking eventfd: drain whatever count accumulated; the commands are in the queue. */
    ssize_t r = read(loop->wake_fd, &v, sizeof v);
    (void)r;
    atomic_store_explicit(&loop->wake_pending, 0, memory_order_seq_cst);
    KC_STAT_ADD(loop, wakeups, 1);
}

static int run_cmds(kc_loop_t *loop)
{
    int n = 0;
    kc_mpsc_node_t *node;
    /* Bounded per turn so a flood of commands cannot starve I/O completions. */
    while (n < 1024 && (node = kc_mpsc_pop(&loop->cmds)) != NULL) {
        kc_loop_cmd_t *cmd = (kc_loop_cmd_t *)((char *)node - offsetof(kc_loop_cmd_t, node));
        KC_STAT_ADD(loop, commands, 1);
        cmd->fn(loop, cmd);
        n++;
    }
    return n;
}

int kc_loop_run_once(kc_loop_t *loop, int max_wait_ms)
{
    KC_LOOP_OWNER(loop);
    int n = run_timers(loop);
    n += run_cmds(loop);

    int64_t timeout = max_wait_ms < 0 ? -1 : (int64_t)max_wait_ms * 1000000LL;
    if (loop->heap_len) {
        int64_t d = loop->heap[0]->deadline_ns - kc_now_ns();
        if (d < 0)
            d = 0;
        if (timeout < 0 || d < timeout)
            timeout = d;
    }
    if (n > 0 || loop->stop)
        timeout = 0; /* callbacks may have queued more work for this turn; don't sleep yet */

    atomic_store_explicit(&loop->sleeping, 1, memory_order_seq_cst);
    int half_push = 0;
    if (!kc_mpsc_empty(&loop->cmds)) {
        timeout = 0;
        half_push = 1;
    }
    int r = loop->vt->wait(loop, timeout);
    atomic_store_explicit(&loop->sleeping, 0, memory_order_relaxed);
    if (half_push && n == 0 && r == 0)
        sched_yield(); /* a producer is mid-push: let it finish rather than spin on it */
    return n + r;
}

void kc_loop_run(kc_loop_t *loop)
{
    loop->stop = 0;
    while (!loop->stop)
        kc_loop_run_once(loop, -1);
    /* Owners close their connections before stopping the loop; give the cancelled ops up to a
     * second to come back so their owners can free themselves (the kernel still holds their
     * buffers until then). Bounded: nothing waits forever. */
    int64_t end = kc_now_ns() + 1000000000LL;
    while (loop->ops_out > 0 && kc_now_ns() < end)
        kc_loop_run_once(loop, 10);
}

void kc_loop_stop(kc_loop_t *loop)
{
    KC_LOOP_OWNER(loop);
    loop->stop = 1;
}
