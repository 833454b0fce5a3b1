/*
 * kc_topic_partitions, kc_query_watermarks (engine/query.h asked on the network thread), the
 * member id (kc_member_id, kc_consumer_set_member_id), and what the consumer holds as lists the
 * application frees (kc_assignment, kc_subscription: one block each).
 *
 * Threads: the public calls run on app threads and block on a condition variable; the question
 * is started and answered on the network thread. The wait object is shared by both and freed by
 * whichever drops the last of its two references (the caller may give up at its timeout while
 * the answer is still coming). The member id is an atomic pointer to an immutable string;
 * replaced strings are kept until kc_destroy (ids change only on a rejoin: a handful per life),
 * so a reader never sees freed memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "consumer_int.h"
#include "query.h"

typedef struct qwait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs, done;
    kc_consumer_t *c;
    const char *topic;
    int32_t partition;
    kc_engine_query_result_t res;
} qwait_t;

static void qw_unref(qwait_t *w)
{
    pthread_mutex_lock(&w->mu);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (last) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
    }
}

static void on_answer(void *opaque, const kc_engine_query_result_t *res)
{
    qwait_t *w = opaque;
    pthread_mutex_lock(&w->mu);
    w->res = *res;
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    qw_unref(w);
}

/* Network thread: starts the question; an error here is the answer. */
static void start(kc_loop_t *loop, void *arg)
{
    (void)loop;
    qwait_t *w = arg;
    kc_error_t err;
    kc_err_t rc = w->c->e ? kc_engine_query(w->c->e, w->topic, w->partition, on_answer, w, &err)
                          : kc_fail(&err, KC_ERR_CLOSED, "consumer is closed");
    if (rc != KC_OK) {
        kc_engine_query_result_t r = {.rc = rc, .err = err};
        on_answer(w, &r);
    }
}

static kc_err_t ask(kc_consumer_t *c, const char *topic, int32_t partition, int timeout_ms,
                    kc_engine_query_result_t *out, kc_error_t *err)
{
    kc_err_t g = kc_consumer_guard(c, partition < 0 ? "kc_topic_partitions" : "kc_query_watermarks",
                                   true, err);
    if (g != KC_OK)
        return g;
    if (!topic || !*topic)
        return kc_fail(err, KC_ERR_INVALID_ARG, "query: topic is required");
    if (atomic_load_explicit(&c->phase, memory_order_relaxed) == KC_PHASE_CLOSED)
        return kc_fail(err, KC_ERR_CLOSED, "consumer is closed");
    qwait_t *w = calloc(1, sizeof *w);
    if (!w)
        return kc_fail(err, KC_ERR_NOMEM, "query: out of memory");
    pthread_mutex_init(&w->mu, NULL);
    kc_cond_init_monotonic(&w->cv);
    w->refs = 2;
    w->c = c;
    w->topic = topic; /* read by start() only, while the caller still waits in netthread_call */
    w->partition = partition;
    kc_netthread_call(c->nt, start, w);
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    int64_t ns = dl.tv_nsec + (int64_t)(timeout_ms < 0 ? 0 : timeout_ms % 1000) * 1000000;
    dl.tv_sec += (timeout_ms < 0 ? 0 : timeout_ms / 1000) + ns / 1000000000;
    dl.tv_nsec = ns % 1000000000;
    kc_err_t rc;
    pthread_mutex_lock(&w->mu);
    int to = 0;
    while (!w->done && !to)
        to = timeout_ms < 0 ? pthread_cond_wait(&w->cv, &w->mu) != 0
                            : pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT;
    if (w->done) {
        *out = w->res;
        rc = w->res.rc;
        if (rc != KC_OK && err)
            *err = w->res.err;
    } else {
        rc = kc_fail(err, KC_ERR_TIMEOUT, "no answer about %s within %d ms", topic, timeout_ms);
    }
    pthread_mutex_unlock(&w->mu);
    qw_unref(w);
    return rc;
}

KC_API kc_err_t kc_topic_partitions(kc_consumer_t *c, const char *topic, int32_t *count,
                                    int timeout_ms, kc_error_t *err)
{
    kc_engine_query_result_t r;
    kc_err_t rc = ask(c, topic, -1, timeout_ms, &r, err);
    if (rc == KC_OK && count)
        *count = r.count;
    return rc;
}

KC_API kc_err_t kc_query_watermarks(kc_consumer_t *c, const char *topic, int32_t partition,
                                    int64_t *low, int64_t *high, int timeout_ms, kc_error_t *err)
{
    if (partition < 0)
        return kc_fail(err, KC_ERR_INVALID_ARG, "query_watermarks: partition must be >= 0");
    kc_engine_query_result_t r;
    kc_err_t rc = ask(c, topic, partition, timeout_ms, &r, err);
    if (rc == KC_OK) {
        if (low)
            *low = r.low;
        if (high)
            *high = r.high;
    }
    return rc;
}

/* ---- member id ----------------------------------------------------------------------------- */

typedef struct kc_old_id {
    struct kc_old_id *next;
    char *id;
} kc_old_id_t;

void kc_consumer_set_member_id(kc_consumer_t *c, const char *id)
{
    char *s = id && *id ? strdup(id) : NULL;
    char *old = atomic_exchange_explicit(&c->member_id, s, memory_order_acq_rel);
    if (old) {
        kc_old_id_t *o = malloc(sizeof *o);
        if (o) {
            o->id = old;
            pthread_mutex_lock(&c->ext_mu);
            o->next = c->old_ids;
            c->old_ids = o;
            pthread_mutex_unlock(&c->ext_mu);
        }
        /* on malloc failure the old string leaks rather than risk a reader's use after free */
    }
}

/* The header's contract: "" until a group module set an id (the CLI prints client.id then). */
KC_API kc_err_t kc_member_id(kc_consumer_t *c, char *buf, size_t len)
{
    if (!c || !buf || !len)
        return KC_ERR_INVALID_ARG;
    const char *id = atomic_load_explicit(&c->member_id, memory_order_acquire);
    size_t n = id ? strlen(id) : 0;
    buf[0] = '\0';
    if (n >= len)
        return KC_ERR_TOO_LARGE;
    memcpy(buf, id ? id : "", n + 1);
    return KC_OK;
}

kc_topic_partition_t *kc_consumer_tp_block(const kc_topic_partition_t *tps, size_t n)
{
    size_t bytes = n * sizeof *tps;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(tps[i].topic) + 1;
    kc_topic_partition_t *b = malloc(bytes ? bytes : 1);
    char *str = (char *)(b + n);
    for (size_t i = 0; b && i < n; i++) {
        size_t len = strlen(tps[i].topic) + 1;
        memcpy(str, tps[i].topic, len);
        b[i] = (kc_topic_partition_t){str, tps[i].partition, KC_OFFSET_INVALID};
        str += len;
    }
    return b;
}

char **kc_consumer_str_block(const char *const *s, size_t n)
{
    size_t bytes = n * sizeof(char *);
    for (size_t i = 0; i < n; i++)
        bytes += strlen(s[i]) + 1;
    char **b = malloc(bytes ? bytes : 1);
    char *str = (char *)(b + n);
    for (size_t i = 0; b && i < n; i++) {
        size_t len = strlen(s[i]) + 1;
        memcpy(str, s[i], len);
        b[i] = str;
        str += len;
    }
    return b;
}

KC_API kc_err_t kc_assignment(kc_consumer_t *c, kc_topic_partition_t **out, size_t *n,
                              kc_error_t *err)
{
    if (!c || !out || !n)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_assignment: bad arguments");
    *out = NULL;
    *n = 0;
    kc_ccall_t k = {.op = KC_COP_ASSIGNMENT};
    kc_err_t rc = kc_consumer_call(c, &k, err);
    if (rc == KC_OK) {
        *out = k.result;
        *n = (size_t)k.value;
    }
    return rc;
}

KC_API kc_err_t kc_subscription(kc_consumer_t *c, char ***out, size_t *n, kc_error_t *err)
{
    if (!c || !out || !n)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_subscription: bad arguments");
    *out = NULL;
    *n = 0;
    kc_ccall_t k = {.op = KC_COP_SUBSCRIPTION};
    kc_err_t rc = kc_consumer_call(c, &k, err);
    if (rc == KC_OK) {
        *out = k.result;
        *n = (size_t)k.value;
    }
    return rc;
}

void kc_consumer_ext_free(kc_consumer_t *c)
{
    free(atomic_load(&c->member_id));
    while (c->old_ids) {
        kc_old_id_t *o = c->old_ids;
        c->old_ids = o->next;
        free(o->id);
        free(o);
    }
    pthread_mutex_destroy(&c->ext_mu);
}
