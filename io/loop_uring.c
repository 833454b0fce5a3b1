/*
 * io_uring backend. Owner: the loop's thread (the ring is SINGLE_ISSUER where the kernel has it).
 *
 * Setup probes the strongest flag set the kernel accepts, falling back one step on EINVAL:
 *   SINGLE_ISSUER|DEFER_TASKRUN (6.1+: completions run only when we enter, no IPIs to this thread)
 *   SINGLE_ISSUER|COOP_TASKRUN  (6.0)   COOP_TASKRUN (5.19)   none (5.15 still works)
 * Any other error (EPERM from kernel.io_uring_disabled or seccomp, ENOSYS, ENOMEM for locked
 * memory) is returned so loop.c can fall back to epoll with one log line.
 *
 * Submissions accumulate in the SQ during a turn and go to the kernel in the one
 * io_uring_enter that also waits (submit_and_wait*), so a turn costs one syscall. The wake eventfd
 * always has one READ pending; a producer's write completes it and ends the wait.
 *
 * Receives are plain recv SQEs into the connection's own buffer: a Fetch response's body goes
 * straight into its frame with one MSG_WAITALL recv (io/conn_io.c), so a response costs two
 * SQEs and the kernel's copy is the whole receive cost. perf's MEM-IO case measures the
 * alternatives on the same bytes (perf/raw_fetch.c -r): a multishot recv on provided buffers
 * adds a copy out of the provided buffer and a completion per 64 KiB; read_fixed into a
 * registered buffer has no MSG_WAITALL, so a completion per segment; a registered file and ring
 * fd save a lookup per SQE, and kconsume makes about 160 system calls per million 100-byte
 * records. None uses less CPU, so none is used. The setup flags measured alike too;
 * DEFER_TASKRUN stays first: completions run only when the loop waits, with no IPI to its thread.
 */
#include "loop_internal.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

typedef struct uring_be {
    struct io_uring ring;
    kc_loop_op_t wake_op;
    uint64_t wake_val;
} uring_be;

static struct io_uring_sqe *get_sqe(kc_loop_t *loop)
{
    uring_be *b = loop->be;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
    while (!sqe) {
        /* SQ full: hand what we have to the kernel now; the ring is sized so this is rare. */
        KC_STAT_ADD(loop, enters, 1);
        io_uring_submit(&b->ring);
        sqe = io_uring_get_sqe(&b->ring);
    }
    KC_STAT_ADD(loop, submissions, 1);
    return sqe;
}

static void prep(kc_loop_t *loop, kc_loop_op_t *op)
{
    struct io_uring_sqe *sqe = get_sqe(loop);
    switch (op->kind) {
    case KC_OP_CONNECT:
        io_uring_prep_connect(sqe, op->fd, op->addr, op->addrlen);
        break;
    case KC_OP_SEND:
        io_uring_prep_send(sqe, op->fd, op->buf + op->done, op->len - op->done, MSG_NOSIGNAL);
        break;
    case KC_OP_RECV:
        io_uring_prep_recv(sqe, op->fd, op->buf, op->len, 0);
        break;
    case KC_OP_RECV_EXACT:
        io_uring_prep_recv(sqe, op->fd, op->buf + op->done, op->len - op->done, MSG_WAITALL);
        break;
    case KC_OP_WAKE_READ:
        io_uring_prep_read(sqe, op->fd, op->buf, op->len, 0);
        break;
    }
    io_uring_sqe_set_data(sqe, op);
}

static void wake_cb(kc_loop_t *loop, kc_loop_op_t *op, int res)
{
    (void)res;
    /* The READ already drained the eventfd counter; see loop.c for why this reset is seq_cst. */
    atomic_store_explicit(&loop->wake_pending, 0, memory_order_seq_cst);
    KC_STAT_ADD(loop, wakeups, 1);
    op->pending = 1;
    prep(loop, op); /* keep one read pending on the eventfd at all times */
}

static kc_err_t u_init(kc_loop_t *loop, kc_error_t *err)
{
    static const struct {
        const char *name;
        unsigned flags;
    } tries[] = {
        {"defer", IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN},
        {"single-coop", IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN},
        {"coop", IORING_SETUP_COOP_TASKRUN},
        {"plain", 0},
    };
    enum { NTRIES = sizeof tries / sizeof tries[0] };
    /* KC_URING_SETUP=NAME starts the probe at that step: the tests run the older kernels' flag
     * sets on this one, and perf measures each against the default (perf/README.md, MEM-IO). */
    size_t first = 0;
    const char *from = getenv("KC_URING_SETUP");
    if (from && *from) {
        while (first < NTRIES && strcmp(from, tries[first].name) != 0)
            first++;
        if (first == NTRIES)
            return kc_fail(err, KC_ERR_CONFIG,
                           "KC_URING_SETUP='%s' is not defer, single-coop, coop or plain", from);
    }
    /* Refused on request like kernel.io_uring_disabled: valgrind cannot run io_uring (a thread
     * blocked in io_uring_enter holds its global lock, and the process deadlocks), so
     * tests/valgrind-unit sets this and the io_uring variants of the tests skip. After the name
     * check: a misspelt name is an error whether or not io_uring may run. */
    const char *no = getenv("KC_NO_IO_URING");
    if (no && *no && strcmp(no, "0") != 0)
        return kc_fail(err, KC_ERR_UNSUPPORTED, "io_uring refused: KC_NO_IO_URING is set");
    uring_be *b = calloc(1, sizeof *b);
    if (!b)
        return kc_fail(err, KC_ERR_NOMEM, "io_uring: out of memory");
    int rc = -EINVAL;
    for (size_t i = first; i < NTRIES; i++) {
        struct io_uring_params p;
        memset(&p, 0, sizeof p);
        p.flags = tries[i].flags;
        rc = io_uring_queue_init_params(256, &b->ring, &p);
        if (rc == 0) {
            loop->uring_flags = tries[i].flags;
            break;
        }
        if (rc != -EINVAL)
            break;
    }
    if (rc != 0) {
        free(b);
        return kc_fail(err, KC_ERR_UNSUPPORTED, "io_uring_queue_init: %s", strerror(-rc));
    }
    loop->be = b;
    b->wake_op.cb = wake_cb;
    b->wake_op.kind = KC_OP_WAKE_READ;
    b->wake_op.fd = loop->wake_fd;
    b->wake_op.buf = (uint8_t *)&b->wake_val;
    b->wake_op.len = sizeof b->wake_val;
    b->wake_op.pending = 1;
    prep(loop, &b->wake_op);
    kc_log(KC_LOG_DEBUG, "loop", "io_uring flags 0x%x", loop->uring_flags);
    return KC_OK;
}

static void u_fini(kc_loop_t *loop)
{
    uring_be *b = loop->be;
    io_uring_queue_exit(&b->ring);
    free(b);
}

static void u_start(kc_loop_t *loop, kc_loop_op_t *op)
{
    prep(loop, op);
}

static void u_cancel(kc_loop_t *loop, kc_loop_op_t *op)
{
    struct io_uring_sqe *sqe = get_sqe(loop);
    io_uring_prep_cancel(sqe, op, 0);
    io_uring_sqe_set_data(sqe, NULL); /* the cancel's own completion is ignored */
}

static void u_forget_fd(kc_loop_t *loop, int fd)
{
    (void)loop;
    (void)fd;
}

/* One completion: finish the op or resubmit the rest of a short send / recv_exact. */
static int handle(kc_loop_t *loop, kc_loop_op_t *op, int res)
{
    if (res > 0 && !op->cancelled && (op->kind == KC_OP_SEND || op->kind == KC_OP_RECV_EXACT)) {
        op->done += (size_t)res;
        if (op->done < op->len) {
            prep(loop, op);
            return 0;
        }
        res = (int)op->len;
    } else if (res == 0 && op->kind == KC_OP_SEND) {
        res = -EPIPE; /* a zero-byte send of a non-empty buffer cannot make progress */
    }
    kc_loop_complete(loop, op, res);
    return 1;
}

static int u_wait(kc_loop_t *loop, int64_t timeout_ns)
{
    uring_be *b = loop->be;
    struct io_uring_cqe *cqe = NULL;
    KC_STAT_ADD(loop, enters, 1);
    if (timeout_ns < 0) {
        io_uring_submit_and_wait(&b->ring, 1);
    } else if (timeout_ns == 0) {
        io_uring_submit_and_get_events(&b->ring);
    } else {
        struct __kernel_timespec ts = {.tv_sec = timeout_ns / 1000000000LL,
                                       .tv_nsec = timeout_ns % 1000000000LL};
        io_uring_submit_and_wait_timeout(&b->ring, &cqe, 1, &ts, NULL);
    }
    int n = 0;
    while (io_uring_peek_cqe(&b->ring, &cqe) == 0) {
        kc_loop_op_t *op = io_uring_cqe_get_data(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&b->ring, cqe); /* before the callback: it may submit more */
        if (op)
            n += handle(loop, op, res);
    }
    return n;
}

const kc_loop_backend_vt kc_loop_uring_vt = {
    .name = "io_uring",
    .init = u_init,
    .fini = u_fini,
    .start = u_start,
    .cancel = u_cancel,
    .forget_fd = u_forget_fd,
    .wait = u_wait,
};
