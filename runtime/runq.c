/* The run queue (see runq.h). Shared by all threads; every field guarded by q->mu. */
#include "runq.h"

#include "dispatch.h"

int kc_rt_runq_init(kc_rt_runq_t *q)
{
    q->head = q->tail = NULL;
    q->busy = q->waiting = 0;
    q->stop = KC_RT_RUN;
    if (pthread_mutex_init(&q->mu, NULL))
        return -1;
    if (pthread_cond_init(&q->cv, NULL)) {
        pthread_mutex_destroy(&q->mu);
        return -1;
    }
    return 0;
}

void kc_rt_runq_fini(kc_rt_runq_t *q)
{
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
}

void kc_rt_runq_push(kc_rt_runq_t *q, kc_rt_part_t *p)
{
    pthread_mutex_lock(&q->mu);
    p->rq_next = NULL;
    if (q->tail)
        q->tail->rq_next = p;
    else
        q->head = p;
    q->tail = p;
    /* Signal only when someone sleeps: a busy pool picks the work up at its next pop, and the
     * syscall-free path is the common one under load. */
    if (q->waiting)
        pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

kc_rt_part_t *kc_rt_runq_pop(kc_rt_runq_t *q, bool had_one)
{
    kc_rt_part_t *p = NULL;
    pthread_mutex_lock(&q->mu);
    if (had_one)
        q->busy--;
    for (;;) {
        if (q->stop == KC_RT_STOP_DROP)
            break;
        if (q->head) {
            p = q->head;
            q->head = p->rq_next;
            if (!q->head)
                q->tail = NULL;
            q->busy++;
            break;
        }
        if (q->stop == KC_RT_STOP_DRAIN && q->busy == 0) {
            /* Nothing queued and nobody running who could queue more: drained. Wake the other
             * sleepers so they see it too. */
            pthread_cond_broadcast(&q->cv);
            break;
        }
        q->waiting++;
        pthread_cond_wait(&q->cv, &q->mu);
        q->waiting--;
    }
    pthread_mutex_unlock(&q->mu);
    return p;
}

void kc_rt_runq_stop(kc_rt_runq_t *q, kc_rt_stop_mode_t mode)
{
    pthread_mutex_lock(&q->mu);
    if (mode > q->stop)
        q->stop = mode;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}
