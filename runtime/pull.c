/*
 * Pull mode (kc_poll / kc_records_release), built on the same dispatcher: when the application
 * gives no on_records, the runtime's record callback is pull_on_records below. It runs on the
 * worker that owns the partition (so per-partition order, one view per partition at a time, the
 * rebalance gate and max.poll.interval.ms detection all hold unchanged), queues the view for the
 * application's kc_poll and waits until kc_records_release hands back the result, which it
 * returns to the worker as if a push callback had returned it: the committable offset advances
 * on release with KC_CB_CONTINUE, RETRY redelivers, PAUSE/STOP as documented. A view pulled by an
 * app thread is decoded there (kc_records_next): the worker that owns the decoder context is
 * blocked meanwhile, and the mutex hand-off orders the two.
 *
 * At most worker.threads views are out at once (each holds a worker). kc_close (pull_close) gives
 * back the views nobody polled (KC_CB_RETRY: not processed, so not committed) and refuses new
 * polls, but a view an app thread holds is that thread's until kc_records_release: its worker
 * keeps waiting, so the partition's revocation, on_revoke and final commit wait too (bounded by
 * the close's timeout), and the frame the view points into stays alive. Only a view held by the
 * closing thread itself is taken back then (that thread is inside kc_close, so it is not reading
 * it), and kc_destroy takes back whatever is still held (pull_abandon). A release after that
 * finds no slot and does nothing.
 *
 * A queued view passed the rebalance gate when its worker queued it, which may be long before an
 * app thread polls it. So it is handed out only while it could still pass the gate
 * (kc_rt_view_may_start): after kc_seek, a revocation (kc_unassign, a rebalance, kc_close) or a
 * self-fence, a view nobody polled yet is given back unprocessed (KC_CB_RETRY, not committed),
 * at once through the dispatcher's gate_closed hook, and at the latest by the kc_poll that would
 * have returned it. Without that, kc_poll could return records from before a seek that had
 * returned, records of a partition no longer assigned, and records of a fenced partition that
 * another member may be processing already. Share groups likewise: a view whose records' lock ran
 * out while it waited is not handed out (kc_rt_view_lapsed), by the kc_poll that would have
 * returned it; the broker has handed those records out again.
 *
 * Threads: pull_on_records on workers; kc_poll / kc_records_release on app threads;
 * kc_pull_gate_closed on the network thread (it only signals under the mutex); all shared
 * state under pull.mu.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "consumer_int.h"
#include "rt_internal.h"

typedef struct pull_slot {
    struct pull_slot *next; /* FIFO of views not yet polled */
    kc_records_t *b;
    kc_cb_result_t res;
    int queued, polled, released;
    pthread_t holder;  /* the app thread that polled it (when polled) */
    pthread_cond_t cv; /* the worker waits here for release */
} pull_slot_t;

struct kc_pull {
    pthread_mutex_t mu;
    pthread_cond_t ready; /* pollers wait here */
    pull_slot_t *head, *tail;
    pull_slot_t **out; /* polled, not released (at most one per worker) */
    size_t n_out, cap_out;
    int closing;
};

static kc_consumer_t *consumer_of(kc_part_t *p)
{
    /* kc_part_t is the first member of kc_rt_part_t; the consumer is the dispatcher's wake_ctx */
    return ((kc_rt_part_t *)p)->rt->o.wake_ctx;
}

/* A view nobody polled, out of the FIFO and back to its worker as not processed (`res`:
 * KC_CB_RETRY, or KC_RT_CB_LAPSED for a share view whose lock ran out). Under q->mu. */
static void give_back_as(kc_pull_t *q, pull_slot_t *s, kc_cb_result_t res)
{
    pull_slot_t **pp = &q->head;
    while (*pp && *pp != s)
        pp = &(*pp)->next;
    if (*pp)
        *pp = s->next;
    q->tail = NULL;
    for (pull_slot_t *t = q->head; t; t = t->next)
        q->tail = t;
    s->queued = 0;
    s->res = res;
    s->released = 1;
    pthread_cond_signal(&s->cv);
}

/* Why a queued view may not be handed out (KC_CB_RETRY: its gate closed; KC_RT_CB_LAPSED: its
 * lock ran out), or KC_CB_CONTINUE when it may. Under q->mu. */
static kc_cb_result_t stale(const kc_records_t *b)
{
    if (!kc_rt_view_may_start(b))
        return KC_CB_RETRY;
    return kc_rt_view_lapsed(b) ? KC_RT_CB_LAPSED : KC_CB_CONTINUE;
}

kc_cb_result_t kc_pull_on_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    (void)opaque;
    kc_pull_t *q = consumer_of(p)->pull;
    pull_slot_t s = {.b = b, .res = KC_CB_RETRY};
    pthread_cond_init(&s.cv, NULL);
    pthread_mutex_lock(&q->mu);
    if (!q->closing) {
        s.queued = 1;
        if (q->tail)
            q->tail->next = &s;
        else
            q->head = &s;
        q->tail = &s;
        pthread_cond_signal(&q->ready);
        /* Closing, or the gate closing behind the view (kc_pull_gate_closed wakes us), gives
         * back a view nobody polled; a polled one waits for its release (or for pull_close /
         * pull_abandon to take it back, which sets released with RETRY). */
        while (!s.released) {
            if (s.queued && (q->closing || !kc_rt_view_may_start(b)))
                give_back_as(q, &s, KC_CB_RETRY);
            else
                pthread_cond_wait(&s.cv, &q->mu);
        }
    }
    kc_cb_result_t res = s.released ? s.res : KC_CB_RETRY;
    pthread_mutex_unlock(&q->mu);
    pthread_cond_destroy(&s.cv);
    return res;
}

kc_err_t kc_pull_new(kc_consumer_t *c, unsigned workers)
{
    kc_pull_t *q = calloc(1, sizeof *q);
    if (!q || !(q->out = calloc(workers ? workers : 1, sizeof *q->out))) {
        free(q);
        return KC_ERR_NOMEM;
    }
    q->cap_out = workers ? workers : 1;
    pthread_mutex_init(&q->mu, NULL);
    kc_cond_init_monotonic(&q->ready);
    c->pull = q;
    return KC_OK;
}

/* Takes back the i-th held view as not processed. Under q->mu. */
static void take_back(kc_pull_t *q, size_t i)
{
    pull_slot_t *s = q->out[i];
    q->out[i] = q->out[--q->n_out];
    s->res = KC_CB_RETRY;
    s->released = 1;
    pthread_cond_signal(&s->cv);
}

void kc_pull_gate_closed(void *consumer, kc_rt_part_t *p)
{
    kc_pull_t *q = ((kc_consumer_t *)consumer)->pull;
    pthread_mutex_lock(&q->mu);
    for (pull_slot_t *s = q->head; s; s = s->next)
        if (s->b->part == p)
            pthread_cond_signal(&s->cv); /* its worker checks the gate and gives it back */
    pthread_mutex_unlock(&q->mu);
}

void kc_pull_close(kc_consumer_t *c)
{
    kc_pull_t *q = c->pull;
    if (!q)
        return;
    pthread_t self = pthread_self();
    pthread_mutex_lock(&q->mu);
    q->closing = 1;
    for (pull_slot_t *s = q->head; s; s = s->next)
        pthread_cond_signal(&s->cv);
    for (size_t i = q->n_out; i-- > 0;)
        if (pthread_equal(q->out[i]->holder, self))
            take_back(q, i);
    pthread_cond_broadcast(&q->ready);
    pthread_mutex_unlock(&q->mu);
}

void kc_pull_abandon(kc_consumer_t *c)
{
    kc_pull_t *q = c->pull;
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->closing = 1;
    while (q->n_out)
        take_back(q, q->n_out - 1);
    pthread_mutex_unlock(&q->mu);
}

void kc_pull_free(kc_consumer_t *c)
{
    kc_pull_t *q = c->pull;
    if (!q)
        return;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->ready);
    free(q->out);
    free(q);
    c->pull = NULL;
}

/* The out array holds one entry per blocked worker; grown rather than trusted to a count (the
 * old array is kept on failure). Under q->mu. */
static int grow(kc_pull_t *q)
{
    pull_slot_t **n = realloc(q->out, q->cap_out * 2 * sizeof *n);
    if (!n)
        return 0;
    q->out = n;
    q->cap_out *= 2;
    return 1;
}

KC_API kc_err_t kc_poll(kc_consumer_t *c, int timeout_ms, kc_records_t **out, kc_error_t *err)
{
    if (!c || !out)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_poll: consumer and out are required");
    *out = NULL;
    kc_err_t g = kc_consumer_guard(c, "kc_poll", timeout_ms != 0, err);
    if (g != KC_OK)
        return g;
    kc_pull_t *q = c->pull;
    if (!q)
        return kc_fail(err, KC_ERR_STATE, "kc_poll: the consumer has on_records (push mode)");
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    if (timeout_ms > 0) {
        int64_t ns = dl.tv_nsec + (int64_t)(timeout_ms % 1000) * 1000000;
        dl.tv_sec += timeout_ms / 1000 + ns / 1000000000;
        dl.tv_nsec = ns % 1000000000;
    }
    kc_err_t rc = KC_OK;
    pthread_mutex_lock(&q->mu);
    for (bool timed_out = false;;) {
        /* A view whose gate closed since it was queued is not handed out (file comment), nor a
         * share view whose records' lock ran out meanwhile: the broker has handed them out
         * again, and a verdict on them could not count. */
        for (kc_cb_result_t why; q->head && (why = stale(q->head->b)) != KC_CB_CONTINUE;)
            give_back_as(q, q->head, why);
        if (q->head || q->closing || timeout_ms == 0 || timed_out)
            break;
        if (timeout_ms < 0)
            pthread_cond_wait(&q->ready, &q->mu);
        else
            timed_out = pthread_cond_timedwait(&q->ready, &q->mu, &dl) == ETIMEDOUT;
    }
    if (q->closing) {
        rc = kc_fail(err, KC_ERR_CLOSED, "consumer is closed");
    } else if (q->head && q->n_out == q->cap_out && !grow(q)) {
        rc = kc_fail(err, KC_ERR_NOMEM, "kc_poll: out of memory");
    } else if (q->head) {
        pull_slot_t *s = q->head;
        if (!(q->head = s->next))
            q->tail = NULL;
        s->queued = 0;
        s->polled = 1;
        s->holder = pthread_self();
        kc_rt_view_handed(s->b); /* a commit of acknowledgements covers it from now on */
        q->out[q->n_out++] = s;
        *out = s->b;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

KC_API void kc_records_release(kc_consumer_t *c, kc_records_t *b, kc_cb_result_t result)
{
    if (!c || !c->pull || !b)
        return;
    kc_pull_t *q = c->pull;
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; i < q->n_out; i++) {
        pull_slot_t *s = q->out[i];
        if (s->b == b) {
            q->out[i] = q->out[--q->n_out];
            s->res = result;
            s->released = 1;
            pthread_cond_signal(&s->cv);
            break;
        }
    }
    pthread_mutex_unlock(&q->mu);
}
