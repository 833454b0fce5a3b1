/*
 * The run queue: partitions that have work and are not running, taken by idle workers in FIFO
 * order. This is what removes head-of-line blocking: a worker is never tied to a partition, so a
 * slow callback holds one worker and the other partitions flow through the rest.
 *
 * Implementation: an intrusive FIFO under a mutex, idle workers blocked on a condvar (never
 * spinning). Chosen over ck_ring MPMC after measuring both on this 2-vCPU box (numbers and
 * reasoning in runtime/README.md): the unit of work is a batch, so ~100 ns of lock per batch is
 * noise, while MPMC enqueue spins when a producer is preempted, and an idle worker needs a
 * blocking wait anyway — which a lock-free ring would have to pair with a futex and a
 * sleeping-flag protocol of its own.
 *
 * Threads: any thread may push (the network thread, a worker re-queueing, an app thread posting
 * an event); workers pop. All fields are guarded by `mu`.
 */
#ifndef KC_RUNTIME_RUNQ_H
#define KC_RUNTIME_RUNQ_H

#include <pthread.h>
#include <stdbool.h>

struct kc_rt_part;

typedef enum kc_rt_stop_mode {
    KC_RT_RUN = 0,
    KC_RT_STOP_DRAIN = 1, /* pop returns NULL once the queue is empty and no worker is busy */
    KC_RT_STOP_DROP = 2,  /* pop returns NULL at once */
} kc_rt_stop_mode_t;

typedef struct kc_rt_runq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct kc_rt_part *head, *tail; /* linked through part->rq_next */
    unsigned busy;                  /* workers between a pop and their next pop */
    unsigned waiting;               /* workers blocked in pop: push signals only when > 0 */
    kc_rt_stop_mode_t stop;
} kc_rt_runq_t;

int kc_rt_runq_init(kc_rt_runq_t *q);
void kc_rt_runq_fini(kc_rt_runq_t *q);
/* Appends p (which must not be queued: the caller holds p's SCHEDULED bit, see dispatch.h). */
void kc_rt_runq_push(kc_rt_runq_t *q, struct kc_rt_part *p);
/* Next partition, blocking while empty; NULL when stopping (see kc_rt_stop_mode_t). A worker
 * that popped a partition is "busy" until its next pop, which passes had_one = true. */
struct kc_rt_part *kc_rt_runq_pop(kc_rt_runq_t *q, bool had_one);
void kc_rt_runq_stop(kc_rt_runq_t *q, kc_rt_stop_mode_t mode);

#endif
