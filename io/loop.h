/*
 * The event loop: one per network thread, io_uring or epoll behind one interface.
 *
 * Owner: the network thread that created the loop. Every function here except kc_loop_post()
 * must be called on that thread. Other threads hand work over only through kc_loop_post() (a
 * lock-free MPSC command queue, io/mpsc.h, plus an eventfd wake; see loop.c for the ordering).
 *
 * Operations are completion based on both backends: the caller fills a kc_loop_op_t it owns
 * (usually embedded in its connection), starts it, and gets exactly one callback with the result
 * (bytes or -errno). The op and its buffer must stay valid until that callback: with io_uring the
 * kernel writes into the buffer asynchronously. To abandon an op, kc_loop_cancel() it and still
 * wait for its callback (it arrives with -ECANCELED or some other error).
 *
 * Semantics shared by both backends (so the connection layer has one code path):
 *   send        full-buffer: completes with len, or a -errno; short sends are resubmitted inside.
 *   recv        completes with 1..cap bytes, 0 at EOF, or -errno.
 *   recv_exact  completes with len, 0 if the peer closed first, or -errno; short receives
 *               (kernels before 5.18 ignore MSG_WAITALL in io_uring) are resubmitted inside.
 *   connect     completes with 0 or -errno. Its timeout is the caller's timer.
 */
#ifndef KC_IO_LOOP_H
#define KC_IO_LOOP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/err.h"
#include "mpsc.h"

typedef struct kc_loop kc_loop_t;
typedef struct kc_loop_op kc_loop_op_t;

typedef void (*kc_loop_op_cb)(kc_loop_t *loop, kc_loop_op_t *op, int res);

/* Owner: the loop's thread. Fields below `opaque` are the backend's. */
struct kc_loop_op {
    kc_loop_op_cb cb;
    void *opaque;
    int kind;
    int fd;
    uint8_t *buf;
    size_t len;
    size_t done;
    const struct sockaddr *addr;
    socklen_t addrlen;
    int pending;             /* 1 between start and callback */
    int cancelled;           /* a cancel was requested (the result may still be a success) */
    int res;                 /* epoll backend: result waiting on the ready list */
    struct kc_loop_op *next; /* epoll backend: ready list */
};

struct kc_loop_timer;
typedef void (*kc_loop_timer_cb)(kc_loop_t *loop, struct kc_loop_timer *t);

/* One-shot timer. Owner: the loop's thread. Caller-allocated; zero-initialise before first use. */
typedef struct kc_loop_timer {
    int64_t deadline_ns;
    size_t heap_idx; /* position in the loop's heap + 1; 0 = not armed */
    kc_loop_timer_cb cb;
    void *opaque;
} kc_loop_timer_t;

/* A command for the loop's thread. Caller-allocated; after kc_loop_post() it belongs to the loop
 * thread until `fn` runs there (fn may free it). */
typedef struct kc_loop_cmd kc_loop_cmd_t;
typedef void (*kc_loop_cmd_fn)(kc_loop_t *loop, kc_loop_cmd_t *cmd);
struct kc_loop_cmd {
    kc_mpsc_node_t node; /* MPSC link, see io/mpsc.h */
    kc_loop_cmd_fn fn;
    void *opaque;
};

typedef enum kc_loop_backend {
    KC_LOOP_AUTO = 0, /* io_uring, or epoll if io_uring cannot be set up (one log line) */
    KC_LOOP_URING,    /* io_uring or fail */
    KC_LOOP_EPOLL,
} kc_loop_backend_t;

/* Counters. Written by the loop thread with relaxed atomics, so any thread may read them
 * (a stats snapshot, not a synchronisation point). */
typedef struct kc_loop_stats {
    uint64_t submissions; /* io_uring SQEs submitted (epoll: syscalls attempted for ops) */
    uint64_t completions; /* op callbacks delivered */
    uint64_t enters;      /* io_uring_enter / epoll_wait calls */
    uint64_t wakeups;     /* eventfd wakes consumed */
    uint64_t wake_writes; /* eventfd writes by producers (skipped while the loop is awake) */
    uint64_t commands;    /* commands run */
    uint64_t timers;      /* timer callbacks run */
} kc_loop_stats_t;

/* Backend from config/env: KC_IO_BACKEND=epoll|io_uring in the environment overrides `cfg`
 * (tests force the epoll path with it). `cfg` may be NULL or "io_uring" / "epoll" / "auto". */
kc_err_t kc_loop_backend_parse(const char *cfg, kc_loop_backend_t *out, kc_error_t *err);

/* Creates a loop on the calling thread, which becomes its owner (io_uring SINGLE_ISSUER ties the
 * ring to the thread that creates it). KC_LOOP_AUTO honours KC_IO_BACKEND from the environment
 * and falls back to epoll where io_uring cannot be set up, but not on a configuration error: a
 * KC_URING_SETUP that names no ring setup (loop_uring.c) is KC_ERR_CONFIG with either. */
kc_err_t kc_loop_new(kc_loop_t **out, kc_loop_backend_t backend, kc_error_t *err);
void kc_loop_free(kc_loop_t *loop);
const char *kc_loop_backend_name(const kc_loop_t *loop);
/* io_uring setup flags in use (0 on epoll), for logs and tests. */
unsigned kc_loop_uring_flags(const kc_loop_t *loop);
void kc_loop_get_stats(const kc_loop_t *loop, kc_loop_stats_t *out);

/* A TCP socket suited to this backend (epoll: non-blocking; io_uring: blocking, since io_uring
 * does its own non-blocking attempt and poll). CLOEXEC, TCP_NODELAY. Returns fd or -errno. */
int kc_loop_socket(kc_loop_t *loop, int family);
/* Closes an fd after every op on it has completed (the caller's responsibility). */
void kc_loop_close(kc_loop_t *loop, int fd);

void kc_loop_connect(kc_loop_t *loop, kc_loop_op_t *op, int fd, const struct sockaddr *addr,
                     socklen_t addrlen);
void kc_loop_send(kc_loop_t *loop, kc_loop_op_t *op, int fd, const uint8_t *buf, size_t len);
void kc_loop_recv(kc_loop_t *loop, kc_loop_op_t *op, int fd, uint8_t *buf, size_t cap);
void kc_loop_recv_exact(kc_loop_t *loop, kc_loop_op_t *op, int fd, uint8_t *buf, size_t len);
/* Asks for a pending op to finish early. Its callback still comes, later, from the loop. */
void kc_loop_cancel(kc_loop_t *loop, kc_loop_op_t *op);

void kc_loop_timer_start(kc_loop_t *loop, kc_loop_timer_t *t, int64_t delay_ms);
void kc_loop_timer_stop(kc_loop_t *loop, kc_loop_timer_t *t);
static inline int kc_loop_timer_armed(const kc_loop_timer_t *t)
{
    return t->heap_idx != 0;
}

/* Any thread. Queues `cmd` and wakes the loop if it sleeps. Never blocks, never fails. */
void kc_loop_post(kc_loop_t *loop, kc_loop_cmd_t *cmd);

/* Runs due timers and queued commands, then waits up to `max_wait_ms` (-1: until the next timer
 * or event) for completions and runs their callbacks. Returns the number of callbacks run. */
int kc_loop_run_once(kc_loop_t *loop, int max_wait_ms);
/* Runs until kc_loop_stop() is called on the loop thread (e.g. from a command). */
void kc_loop_run(kc_loop_t *loop);
void kc_loop_stop(kc_loop_t *loop);

#endif
