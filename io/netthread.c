/* The network thread. Owner of `loop` and all loop state: the thread started here. The struct's
 * other fields are written before the thread starts or under `mu` (start handshake, call()). */
#include "netthread.h"

#include <stdlib.h>

#include "base/thread.h"

struct kc_netthread {
    pthread_t tid;
    kc_loop_t *loop;
    kc_loop_backend_t backend;
    const kc_logger_t *log;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started;
    kc_err_t start_rc;
    kc_error_t start_err;
};

static void *thread_main(void *arg)
{
    kc_netthread_t *nt = arg;
    kc_thread_name("kc-net");
    kc_log_bind(nt->log);
    kc_loop_t *loop = NULL;
    kc_error_t e = {0};
    kc_err_t rc = kc_loop_new(&loop, nt->backend, &e);
    pthread_mutex_lock(&nt->mu);
    nt->loop = loop;
    nt->start_rc = rc;
    nt->start_err = e;
    nt->started = 1;
    pthread_cond_signal(&nt->cv);
    pthread_mutex_unlock(&nt->mu);
    if (rc != KC_OK)
        return NULL;
    kc_loop_run(loop);
    return NULL;
}

kc_err_t kc_netthread_start(kc_netthread_t **out, kc_loop_backend_t backend, const kc_logger_t *log,
                            kc_error_t *err)
{
    kc_netthread_t *nt = calloc(1, sizeof *nt);
    if (!nt)
        return kc_fail(err, KC_ERR_NOMEM, "netthread: out of memory");
    nt->backend = backend;
    nt->log = log;
    pthread_mutex_init(&nt->mu, NULL);
    pthread_cond_init(&nt->cv, NULL);
    if (pthread_create(&nt->tid, NULL, thread_main, nt) != 0) {
        free(nt);
        return kc_fail(err, KC_ERR_SYSTEM, "netthread: pthread_create failed");
    }
    pthread_mutex_lock(&nt->mu);
    while (!nt->started)
        pthread_cond_wait(&nt->cv, &nt->mu);
    pthread_mutex_unlock(&nt->mu);
    if (nt->start_rc != KC_OK) {
        kc_err_t rc = nt->start_rc;
        if (err)
            *err = nt->start_err;
        pthread_join(nt->tid, NULL);
        free(nt);
        return rc;
    }
    *out = nt;
    return KC_OK;
}

kc_loop_t *kc_netthread_loop(kc_netthread_t *nt)
{
    return nt->loop;
}

void kc_netthread_post(kc_netthread_t *nt, kc_loop_cmd_t *cmd)
{
    kc_loop_post(nt->loop, cmd);
}

typedef struct call_cmd {
    kc_loop_cmd_t cmd;
    void (*fn)(kc_loop_t *, void *);
    void *arg;
    kc_netthread_t *nt;
    int done;
} call_cmd;

static void run_call(kc_loop_t *loop, kc_loop_cmd_t *cmd)
{
    call_cmd *c = (call_cmd *)cmd;
    c->fn(loop, c->arg);
    pthread_mutex_lock(&c->nt->mu);
    c->done = 1;
    pthread_cond_broadcast(&c->nt->cv);
    pthread_mutex_unlock(&c->nt->mu);
}

void kc_netthread_call(kc_netthread_t *nt, void (*fn)(kc_loop_t *, void *), void *arg)
{
    call_cmd c = {.cmd = {.fn = run_call}, .fn = fn, .arg = arg, .nt = nt};
    kc_netthread_post(nt, &c.cmd);
    pthread_mutex_lock(&nt->mu);
    while (!c.done)
        pthread_cond_wait(&nt->cv, &nt->mu);
    pthread_mutex_unlock(&nt->mu);
}

static void do_stop(kc_loop_t *loop, void *arg)
{
    (void)arg;
    kc_loop_stop(loop);
}

void kc_netthread_stop(kc_netthread_t *nt)
{
    if (!nt)
        return;
    kc_netthread_call(nt, do_stop, NULL);
    pthread_join(nt->tid, NULL);
    kc_loop_free(nt->loop);
    pthread_cond_destroy(&nt->cv);
    pthread_mutex_destroy(&nt->mu);
    free(nt);
}
