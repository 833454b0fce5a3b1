/* Shared between loop.c and the two backends. Owner: the loop's thread (except `sleeping`,
 * `cmds` and the eventfd, documented in loop.c). */
#ifndef KC_IO_LOOP_INTERNAL_H
#define KC_IO_LOOP_INTERNAL_H

#include <pthread.h>

#include "loop.h"
#include "mpsc.h"
#include "offload.h"

enum { KC_OP_CONNECT = 1, KC_OP_SEND, KC_OP_RECV, KC_OP_RECV_EXACT, KC_OP_WAKE_READ };

typedef struct kc_loop_backend_vt {
    const char *name;
    kc_err_t (*init)(kc_loop_t *loop, kc_error_t *err);
    void (*fini)(kc_loop_t *loop);
    void (*start)(kc_loop_t *loop, kc_loop_op_t *op); /* op fields filled, pending set */
    void (*cancel)(kc_loop_t *loop, kc_loop_op_t *op);
    void (*forget_fd)(kc_loop_t *loop, int fd); /* before close(fd) */
    /* Flush submissions, wait up to timeout_ns (-1 forever, 0 poll), run completions. */
    int (*wait)(kc_loop_t *loop, int64_t timeout_ns);
} kc_loop_backend_vt;

extern const kc_loop_backend_vt kc_loop_uring_vt;
extern const kc_loop_backend_vt kc_loop_epoll_vt;

struct kc_loop {
    const kc_loop_backend_vt *vt;
    void *be;                /* backend state */
    int wake_fd;             /* eventfd; producers write it, the loop reads it */
    atomic_int sleeping;     /* 1 while the loop may block in the kernel; see loop.c */
    atomic_int wake_pending; /* 1 from a producer's eventfd write until the loop consumes it */
    kc_mpsc_t cmds;
    kc_loop_timer_t **heap; /* min-heap on deadline_ns */
    size_t heap_len, heap_cap;
    int stop;
    size_t ops_out; /* ops started and not yet completed (the wake read excluded) */
    unsigned uring_flags;
    pthread_t owner; /* the creating thread; debug builds check every owner-only call */
    /* blocking calls (io/offload.h), one helper per lane, each created on first use */
    struct kc_offload *offload[KC_OFFLOAD_LANES];
    struct {
        _Atomic uint64_t submissions, completions, enters, wakeups, wake_writes, commands, timers;
    } st;
};

#define KC_STAT_ADD(loop, field, n)                                                                \
    atomic_store_explicit(&(loop)->st.field,                                                       \
                          atomic_load_explicit(&(loop)->st.field, memory_order_relaxed) + (n),     \
                          memory_order_relaxed)

#ifdef KC_DEBUG_OWNERSHIP
void kc_loop_owner_violation(const kc_loop_t *loop, const char *fn);
#define KC_LOOP_OWNER(loop)                                                                        \
    do {                                                                                           \
        if (!pthread_equal(pthread_self(), (loop)->owner))                                         \
            kc_loop_owner_violation((loop), __func__);                                             \
    } while (0)
#else
#define KC_LOOP_OWNER(loop) ((void)(loop))
#endif

/* Backends call this to deliver an op's result (the op's callback runs now). */
static inline void kc_loop_complete(kc_loop_t *loop, kc_loop_op_t *op, int res)
{
    op->pending = 0;
    if (op->kind != KC_OP_WAKE_READ)
        loop->ops_out--;
    KC_STAT_ADD(loop, completions, 1);
    op->cb(loop, op, res);
}

/* Called by backends when the eventfd read completes: drain the counter. */
void kc_loop_wake_consumed(kc_loop_t *loop);

#endif
