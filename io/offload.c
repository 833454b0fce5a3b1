/* The loop's offload thread (see offload.h for the threads and who owns what). */
#include "offload.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/thread.h"
#include "loop_internal.h"

struct kc_offload_job {
    kc_loop_cmd_t cmd;                          /* the way back: posted by the helper thread */
    struct kc_offload_job *next;                /* the helper's queue (under mu) */
    struct kc_offload_job *prev_out, *next_out; /* every job out (network thread only) */
    kc_offload_t *o;
    const kc_offload_fns_t *fns;
    void *arg;
    int queued;    /* in the helper's queue (under mu) */
    int cancelled; /* network thread only */
};

/* Each lane's helper thread's name (base/thread.h). */
static const char *const lane_thread[KC_OFFLOAD_LANES] = {
    [KC_OFFLOAD_LOGIN] = "kc-login",
    [KC_OFFLOAD_DNS] = "kc-dns",
};

struct kc_offload {
    kc_loop_t *loop;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    kc_offload_job_t *q_head, *q_tail; /* under mu */
    int stop;                          /* under mu */
    kc_offload_job_t *out;             /* network thread only: every job not yet finished */
    kc_offload_lane_t lane;            /* set before the thread starts */
};

static void out_unlink(kc_offload_job_t *j)
{
    if (j->prev_out)
        j->prev_out->next_out = j->next_out;
    else
        j->o->out = j->next_out;
    if (j->next_out)
        j->next_out->prev_out = j->prev_out;
}

static void job_discard(kc_offload_job_t *j)
{
    out_unlink(j);
    j->fns->discard(j->arg);
    free(j);
}

/* Network thread: a job came back. */
static void on_done(kc_loop_t *loop, kc_loop_cmd_t *cmd)
{
    (void)loop;
    kc_offload_job_t *j = cmd->opaque;
    if (j->cancelled) {
        job_discard(j);
        return;
    }
    out_unlink(j);
    const kc_offload_fns_t *fns = j->fns;
    void *arg = j->arg;
    free(j); /* before done: done may submit the next job for the same arg */
    fns->done(arg);
}

static void *helper(void *arg)
{
    kc_offload_t *o = arg;
    kc_thread_name("%s", lane_thread[o->lane]);
    pthread_mutex_lock(&o->mu);
    for (;;) {
        while (!o->stop && !o->q_head)
            pthread_cond_wait(&o->cv, &o->mu);
        if (o->stop)
            break;
        kc_offload_job_t *j = o->q_head;
        o->q_head = j->next;
        if (!o->q_head)
            o->q_tail = NULL;
        j->queued = 0;
        pthread_mutex_unlock(&o->mu);
        /* Blocking is fine here: this thread exists to block. */
        j->fns->work(j->arg);
        kc_loop_post(o->loop, &j->cmd);
        pthread_mutex_lock(&o->mu);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

kc_offload_t *kc_loop_offload(kc_loop_t *loop, kc_offload_lane_t lane, kc_error_t *err)
{
    KC_LOOP_OWNER(loop);
    if (lane < 0 || lane >= KC_OFFLOAD_LANES) {
        kc_fail(err, KC_ERR_INVALID_ARG, "offload: no lane %d", (int)lane);
        return NULL;
    }
    if (loop->offload[lane])
        return loop->offload[lane];
    kc_offload_t *o = calloc(1, sizeof *o);
    if (!o) {
        kc_fail(err, KC_ERR_NOMEM, "offload: out of memory");
        return NULL;
    }
    o->loop = loop;
    o->lane = lane;
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
    int e = pthread_create(&o->thread, NULL, helper, o);
    if (e != 0) {
        pthread_cond_destroy(&o->cv);
        pthread_mutex_destroy(&o->mu);
        free(o);
        kc_fail(err, KC_ERR_SYSTEM, "offload: cannot start its thread: %s", strerror(e));
        return NULL;
    }
    loop->offload[lane] = o;
    return o;
}

void kc_offload_free(kc_offload_t *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->mu);
    o->stop = 1;
    pthread_cond_signal(&o->cv);
    pthread_mutex_unlock(&o->mu);
    pthread_join(o->thread, NULL);
    /* The helper is gone: every job (queued, run, or posted and not yet run — the loop is being
     * freed and will not run it) is ours alone. */
    while (o->out)
        job_discard(o->out);
    pthread_cond_destroy(&o->cv);
    pthread_mutex_destroy(&o->mu);
    free(o);
}

kc_err_t kc_offload_submit(kc_offload_t *o, const kc_offload_fns_t *fns, void *arg,
                           kc_offload_job_t **out, kc_error_t *err)
{
    KC_LOOP_OWNER(o->loop);
    kc_offload_job_t *j = calloc(1, sizeof *j);
    if (!j)
        return kc_fail(err, KC_ERR_NOMEM, "offload: out of memory");
    j->o = o;
    j->fns = fns;
    j->arg = arg;
    j->cmd.fn = on_done;
    j->cmd.opaque = j;
    j->next_out = o->out;
    if (o->out)
        o->out->prev_out = j;
    o->out = j;
    pthread_mutex_lock(&o->mu);
    j->queued = 1;
    if (o->q_tail)
        o->q_tail->next = j;
    else
        o->q_head = j;
    o->q_tail = j;
    pthread_cond_signal(&o->cv);
    pthread_mutex_unlock(&o->mu);
    if (out)
        *out = j;
    return KC_OK;
}

void kc_offload_cancel(kc_offload_job_t *j)
{
    kc_offload_t *o = j->o;
    KC_LOOP_OWNER(o->loop);
    int take = 0;
    pthread_mutex_lock(&o->mu);
    if (j->queued) { /* not started: take it back */
        kc_offload_job_t **pp = &o->q_head, *prev = NULL;
        while (*pp != j)
            prev = *pp, pp = &(*pp)->next;
        *pp = j->next;
        if (o->q_tail == j)
            o->q_tail = prev;
        take = 1;
    }
    pthread_mutex_unlock(&o->mu);
    if (take)
        job_discard(j);
    else
        j->cancelled = 1; /* being run, or posted: on_done discards it */
}
