/* The loop's resolver thread (see resolver.h for the threads and who owns what). */
#include "resolver.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "loop_internal.h"

#define JOB_ADDRS 32

struct kc_resolve_job {
    kc_loop_cmd_t cmd;                          /* the way back: posted by the helper thread */
    struct kc_resolve_job *next;                /* the helper's queue (under mu) */
    struct kc_resolve_job *prev_out, *next_out; /* every job out (network thread only) */
    kc_resolver_t *r;
    kc_resolve_cb cb;
    void *opaque;
    int queued;    /* in the helper's queue (under mu) */
    int cancelled; /* network thread only */
    char *servers;
    int flags; /* kc_addr_resolve's */
    /* Written by the helper thread between pop and post. */
    kc_err_t rc;
    kc_error_t err;
    int n;
    kc_addr_t addrs[JOB_ADDRS];
};

struct kc_resolver {
    kc_loop_t *loop;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    kc_resolve_job_t *q_head, *q_tail; /* under mu */
    int stop;                          /* under mu */
    kc_resolve_job_t *out;             /* network thread only: every job not yet freed */
};

static void out_unlink(kc_resolve_job_t *j)
{
    if (j->prev_out)
        j->prev_out->next_out = j->next_out;
    else
        j->r->out = j->next_out;
    if (j->next_out)
        j->next_out->prev_out = j->prev_out;
}

static void job_free(kc_resolve_job_t *j)
{
    out_unlink(j);
    free(j->servers);
    free(j);
}

/* Network thread: a job came back. */
static void on_done(kc_loop_t *loop, kc_loop_cmd_t *cmd)
{
    (void)loop;
    kc_resolve_job_t *j = cmd->opaque;
    if (!j->cancelled)
        j->cb(j->rc, j->addrs, j->n, &j->err, j->opaque);
    job_free(j);
}

static void *helper(void *arg)
{
    kc_resolver_t *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && !r->q_head)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->stop)
            break;
        kc_resolve_job_t *j = r->q_head;
        r->q_head = j->next;
        if (!r->q_head)
            r->q_tail = NULL;
        j->queued = 0;
        pthread_mutex_unlock(&r->mu);
        /* Blocking is fine here: this thread exists to block. */
        j->rc = kc_addr_resolve(j->servers, j->flags, j->addrs, JOB_ADDRS, &j->n, &j->err);
        kc_loop_post(r->loop, &j->cmd);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

kc_resolver_t *kc_loop_resolver(kc_loop_t *loop, kc_error_t *err)
{
    KC_LOOP_OWNER(loop);
    if (loop->resolver)
        return loop->resolver;
    kc_resolver_t *r = calloc(1, sizeof *r);
    if (!r) {
        kc_fail(err, KC_ERR_NOMEM, "resolver: out of memory");
        return NULL;
    }
    r->loop = loop;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    int e = pthread_create(&r->thread, NULL, helper, r);
    if (e != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        free(r);
        kc_fail(err, KC_ERR_SYSTEM, "resolver: cannot start its thread: %s", strerror(e));
        return NULL;
    }
    loop->resolver = r;
    return r;
}

void kc_resolver_free(kc_resolver_t *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    /* The helper is gone: every job (queued, being resolved, or posted and not yet run — the
     * loop is being freed and will not run it) is ours alone. */
    while (r->out)
        job_free(r->out);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

kc_err_t kc_resolve_start(kc_resolver_t *r, const char *servers, int flags, kc_resolve_cb cb,
                          void *opaque, kc_resolve_job_t **out, kc_error_t *err)
{
    KC_LOOP_OWNER(r->loop);
    kc_resolve_job_t *j = calloc(1, sizeof *j);
    if (!j || !(j->servers = strdup(servers ? servers : ""))) {
        free(j);
        return kc_fail(err, KC_ERR_NOMEM, "resolver: out of memory");
    }
    j->r = r;
    j->flags = flags;
    j->cb = cb;
    j->opaque = opaque;
    j->cmd.fn = on_done;
    j->cmd.opaque = j;
    j->next_out = r->out;
    if (r->out)
        r->out->prev_out = j;
    r->out = j;
    pthread_mutex_lock(&r->mu);
    j->queued = 1;
    if (r->q_tail)
        r->q_tail->next = j;
    else
        r->q_head = j;
    r->q_tail = j;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    *out = j;
    return KC_OK;
}

void kc_resolve_cancel(kc_resolve_job_t *j)
{
    kc_resolver_t *r = j->r;
    KC_LOOP_OWNER(r->loop);
    int freed = 0;
    pthread_mutex_lock(&r->mu);
    if (j->queued) { /* not started: take it back */
        kc_resolve_job_t **pp = &r->q_head, *prev = NULL;
        while (*pp != j)
            prev = *pp, pp = &(*pp)->next;
        *pp = j->next;
        if (r->q_tail == j)
            r->q_tail = prev;
        freed = 1;
    }
    pthread_mutex_unlock(&r->mu);
    if (freed)
        job_free(j);
    else
        j->cancelled = 1; /* being resolved, or posted: on_done drops it */
}
