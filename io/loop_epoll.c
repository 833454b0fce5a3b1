/*
 * epoll backend: the same completion interface over non-blocking sockets, for kernels or
 * containers without io_uring (or io.backend=epoll). Owner: the loop's thread.
 *
 * Each fd is registered once, edge-triggered, for both directions; it holds at most one pending
 * read-side op (recv, recv_exact) and one write-side op (connect, send). An op is attempted as
 * soon as it starts (an edge that already passed would never be reported again) and again on
 * each edge; a finished op goes on a ready list and its callback runs from wait(), never from
 * inside the start call, so callers see the same re-entrancy rules as with io_uring.
 */
#include "loop_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

typedef struct fd_slot {
    kc_loop_op_t *rd, *wr;
    int registered;
} fd_slot;

typedef struct epoll_be {
    int epfd;
    fd_slot *slots;
    int nslots;
    kc_loop_op_t *ready_head, *ready_tail;
} epoll_be;

static kc_err_t e_init(kc_loop_t *loop, kc_error_t *err)
{
    epoll_be *b = calloc(1, sizeof *b);
    if (!b)
        return kc_fail(err, KC_ERR_NOMEM, "epoll: out of memory");
    b->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (b->epfd < 0) {
        int e = errno;
        free(b);
        return kc_fail(err, KC_ERR_SYSTEM, "epoll_create1: %s", strerror(e));
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = loop->wake_fd};
    if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, loop->wake_fd, &ev) < 0) {
        int e = errno;
        close(b->epfd);
        free(b);
        return kc_fail(err, KC_ERR_SYSTEM, "epoll_ctl(eventfd): %s", strerror(e));
    }
    loop->be = b;
    return KC_OK;
}

static void e_fini(kc_loop_t *loop)
{
    epoll_be *b = loop->be;
    close(b->epfd);
    free(b->slots);
    free(b);
}

static fd_slot *slot_for(epoll_be *b, int fd)
{
    if (fd >= b->nslots) {
        int n = b->nslots ? b->nslots : 64;
        while (n <= fd)
            n *= 2;
        fd_slot *s = realloc(b->slots, (size_t)n * sizeof *s);
        if (!s)
            return NULL;
        memset(s + b->nslots, 0, (size_t)(n - b->nslots) * sizeof *s);
        b->slots = s;
        b->nslots = n;
    }
    return &b->slots[fd];
}

static void make_ready(epoll_be *b, kc_loop_op_t *op, int res)
{
    op->res = res;
    op->next = NULL;
    if (b->ready_tail)
        b->ready_tail->next = op;
    else
        b->ready_head = op;
    b->ready_tail = op;
}

/* Attempts the op's syscall(s). Returns 1 and sets *res when the op is finished. */
static int attempt(kc_loop_t *loop, kc_loop_op_t *op, int *res)
{
    KC_STAT_ADD(loop, submissions, 1);
    switch (op->kind) {
    case KC_OP_CONNECT:
        if (op->done == 0) {
            op->done = 1;
            if (connect(op->fd, op->addr, op->addrlen) == 0)
                return *res = 0, 1;
            if (errno == EINPROGRESS || errno == EINTR)
                return 0;
            return *res = -errno, 1;
        } else {
            int e = 0;
            socklen_t l = sizeof e;
            if (getsockopt(op->fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
                e = errno;
            if (e == 0) {
                struct sockaddr_storage ss;
                socklen_t sl = sizeof ss;
                if (getpeername(op->fd, (struct sockaddr *)&ss, &sl) < 0)
                    return 0; /* spurious edge: still connecting */
            }
            return *res = -e, 1;
        }
    case KC_OP_SEND:
        while (op->done < op->len) {
            ssize_t n =
                send(op->fd, op->buf + op->done, op->len - op->done, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                    return errno == EINTR ? attempt(loop, op, res) : 0;
                return *res = -errno, 1;
            }
            op->done += (size_t)n;
        }
        return *res = (int)op->len, 1;
    case KC_OP_RECV:
    case KC_OP_RECV_EXACT:
        for (;;) {
            ssize_t n = recv(op->fd, op->buf + op->done, op->len - op->done, MSG_DONTWAIT);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN)
                    return 0;
                return *res = -errno, 1;
            }
            if (n == 0)
                return *res = 0, 1;
            if (op->kind == KC_OP_RECV)
                return *res = (int)n, 1;
            op->done += (size_t)n;
            if (op->done == op->len)
                return *res = (int)op->len, 1;
        }
    }
    return *res = -EINVAL, 1;
}

static void e_start(kc_loop_t *loop, kc_loop_op_t *op)
{
    epoll_be *b = loop->be;
    fd_slot *s = slot_for(b, op->fd);
    if (!s) {
        make_ready(b, op, -ENOMEM);
        return;
    }
    if (!s->registered) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                                 .data.fd = op->fd};
        if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, op->fd, &ev) < 0) {
            make_ready(b, op, -errno);
            return;
        }
        s->registered = 1;
    }
    kc_loop_op_t **where = (op->kind == KC_OP_CONNECT || op->kind == KC_OP_SEND) ? &s->wr : &s->rd;
    if (*where) {
        make_ready(b, op, -EBUSY); /* one op per direction per fd: a caller bug, reported */
        return;
    }
    int res;
    if (attempt(loop, op, &res))
        make_ready(b, op, res);
    else
        *where = op;
}

static void e_cancel(kc_loop_t *loop, kc_loop_op_t *op)
{
    epoll_be *b = loop->be;
    if (op->fd < 0 || op->fd >= b->nslots)
        return;
    fd_slot *s = &b->slots[op->fd];
    if (s->rd == op)
        s->rd = NULL;
    else if (s->wr == op)
        s->wr = NULL;
    else
        return; /* already on the ready list */
    make_ready(b, op, -ECANCELED);
}

static void e_forget_fd(kc_loop_t *loop, int fd)
{
    epoll_be *b = loop->be;
    if (fd < b->nslots && b->slots[fd].registered) {
        epoll_ctl(b->epfd, EPOLL_CTL_DEL, fd, NULL);
        b->slots[fd].registered = 0;
        b->slots[fd].rd = b->slots[fd].wr = NULL;
    }
}

static void progress(kc_loop_t *loop, kc_loop_op_t **where)
{
    kc_loop_op_t *op = *where;
    int res;
    if (op && attempt(loop, op, &res)) {
        *where = NULL;
        make_ready(loop->be, op, res);
    }
}

static int e_wait(kc_loop_t *loop, int64_t timeout_ns)
{
    epoll_be *b = loop->be;
    struct epoll_event evs[64];
    int ms = timeout_ns < 0 ? -1 : (int)((timeout_ns + 999999) / 1000000);
    if (b->ready_head)
        ms = 0;
    KC_STAT_ADD(loop, enters, 1);
    int n = epoll_wait(b->epfd, evs, 64, ms);
    for (int i = 0; i < n; i++) {
        int fd = evs[i].data.fd;
        if (fd == loop->wake_fd) {
            kc_loop_wake_consumed(loop);
            continue;
        }
        if (fd >= b->nslots)
            continue;
        uint32_t e = evs[i].events;
        if (e & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
            progress(loop, &b->slots[fd].rd);
        if (e & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            progress(loop, &b->slots[fd].wr);
    }
    int done = 0;
    while (b->ready_head) {
        kc_loop_op_t *op = b->ready_head;
        b->ready_head = op->next;
        if (!b->ready_head)
            b->ready_tail = NULL;
        kc_loop_complete(loop, op, op->res);
        done++;
    }
    return done;
}

const kc_loop_backend_vt kc_loop_epoll_vt = {
    .name = "epoll",
    .init = e_init,
    .fini = e_fini,
    .start = e_start,
    .cancel = e_cancel,
    .forget_fd = e_forget_fd,
    .wait = e_wait,
};
