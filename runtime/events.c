/*
 * Group-level events (assignment changed, errors, stats) for on_event. Any thread posts a copy
 * under ev_mu (a stats object is handed over instead: kc_rt_post_stats); the worker that runs the
 * `control` pseudo-partition pops and calls on_event outside the lock. The control partition goes
 * through the same SCHED protocol as real ones, so on_event calls never overlap and keep post
 * order, and never run on the network thread.
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "proto/kafka_errors.h"
#include "rt_internal.h"

bool kc_rt_error_retriable(const kc_error_t *e)
{
    switch (e->code) {
    case KC_ERR_TIMEOUT:
    case KC_ERR_TRANSPORT:
    case KC_ERR_AGAIN:
    case KC_ERR_QUEUE_FULL:
        return true;
    case KC_ERR_BROKER:
        return kc_kafka_err_retriable(e->kafka_code) != 0;
    default: /* a refusal that asking again does not change, or one only the caller can fix */
        return false;
    }
}

void kc_rt_event_free(kc_rt_event_t *e)
{
    free(e->json);
    free(e->topic);
    for (size_t i = 0; i < e->assign_len; i++)
        free((char *)e->assign[i].topic);
    free(e->assign);
    memset(e, 0, sizeof *e);
}

static kc_err_t copy_event(kc_rt_event_t *d, const kc_event_t *ev)
{
    memset(d, 0, sizeof *d);
    d->type = ev->type;
    if (ev->error) {
        d->error = *ev->error;
        d->has_error = true;
    }
    if (ev->json && !(d->json = strdup(ev->json)))
        return KC_ERR_NOMEM;
    /* The offset and partition fields: the others say -1 (kconsume.h). */
    bool at = ev->type == KC_EVENT_PARTITION_EOF || ev->type == KC_EVENT_SHARE_ACK;
    bool part = at || (ev->type == KC_EVENT_ERROR && ev->topic);
    d->partition = part ? ev->partition : -1;
    d->offset = at ? ev->offset : -1;
    if (ev->type == KC_EVENT_SHARE_ACK) {
        d->ack_first = ev->ack_first;
        d->ack_records = ev->ack_records;
    }
    if (part && !(d->topic = strdup(ev->topic)))
        goto nomem;
    if (ev->assignment_len) {
        if (!(d->assign = calloc(ev->assignment_len, sizeof *d->assign)))
            goto nomem;
        for (size_t i = 0; i < ev->assignment_len; i++) {
            d->assign[i] = ev->assignment[i];
            d->assign_len = i + 1;
            if (!(d->assign[i].topic = strdup(ev->assignment[i].topic)))
                goto nomem;
        }
    }
    return KC_OK;
nomem:
    kc_rt_event_free(d);
    return KC_ERR_NOMEM;
}

/* Queues e: the queue owns it from here (freed at once when the queue is full). */
static kc_err_t enqueue(kc_rt_t *rt, kc_rt_event_t e, unsigned spare)
{
    pthread_mutex_lock(&rt->ev_mu);
    if (rt->ev_len + spare >= KC_RT_EVQ) {
        pthread_mutex_unlock(&rt->ev_mu);
        kc_rt_event_free(&e);
        return KC_ERR_QUEUE_FULL;
    }
    rt->evq[(rt->ev_head + rt->ev_len++) % KC_RT_EVQ] = e;
    pthread_mutex_unlock(&rt->ev_mu);
    kc_rt_kick(&rt->control);
    return KC_OK;
}

static kc_err_t post(kc_rt_t *rt, const kc_event_t *ev, unsigned spare)
{
    kc_rt_event_t e;
    if (copy_event(&e, ev) != KC_OK)
        return KC_ERR_NOMEM;
    return enqueue(rt, e, spare);
}

kc_err_t kc_rt_post_stats(kc_rt_t *rt, char *json)
{
    /* Handed over, not copied: the text grows with the partitions (about 250 bytes each), and a
     * copy is a strlen and a memcpy of all of it on the network thread every interval. */
    kc_rt_event_t e = {.type = KC_EVENT_STATS, .json = json, .partition = -1, .offset = -1};
    return enqueue(rt, e, 0);
}

kc_err_t kc_rt_post_event(kc_rt_t *rt, const kc_event_t *ev)
{
    return post(rt, ev, 0);
}

kc_err_t kc_rt_post_bulk_event(kc_rt_t *rt, const kc_event_t *ev)
{
    return post(rt, ev, KC_RT_EVQ_SPARE);
}

kc_err_t kc_rt_post_assignment(kc_rt_t *rt, const kc_topic_partition_t *tps, size_t n)
{
    kc_event_t ev = {.type = KC_EVENT_ASSIGNMENT, .assignment = tps, .assignment_len = n};
    return kc_rt_post_event(rt, &ev);
}

/* The end `end` of p reported once: whoever wins eof_said's compare-exchange posts it. */
static void eof_post(kc_rt_part_t *p, int64_t end)
{
    int64_t said = atomic_load(&p->eof_said);
    if (said == end || !atomic_compare_exchange_strong(&p->eof_said, &said, end))
        return;
    kc_event_t ev = {.type = KC_EVENT_PARTITION_EOF,
                     .topic = p->pub.topic,
                     .partition = p->pub.partition,
                     .offset = end};
    if (kc_rt_post_event(p->rt, &ev) != KC_OK) /* a full or failed queue: said again next end */
        atomic_store(&p->eof_said, -1);
}

void kc_rt_part_at_end(kc_rt_part_t *p, int64_t end)
{
    atomic_store(&p->eof_at, end);
    atomic_thread_fence(memory_order_seq_cst); /* pairs with kc_rt_part_eof_drained's */
    if (atomic_load(&p->buffered) == 0)
        eof_post(p, end);
}

void kc_rt_part_eof_drained(kc_rt_part_t *p)
{
    atomic_thread_fence(memory_order_seq_cst); /* pairs with kc_rt_part_at_end's */
    int64_t end = atomic_load(&p->eof_at);
    if (end >= 0 && p->next_deliver == end) /* past it already: that end is not the end now */
        eof_post(p, end);
}

typedef struct kc_rt_call {
    struct kc_rt_call *next;
    void (*fn)(void *arg, int run);
    void *arg;
    bool notify; /* after fn ran, post REBALANCED with `token` (kc_rt_post_rebalance) */
    int64_t token;
} kc_rt_call_t;

static kc_err_t post_call(kc_rt_t *rt, void (*fn)(void *arg, int run), void *arg, bool notify,
                          int64_t token)
{
    kc_rt_call_t *k = malloc(sizeof *k);
    if (!k)
        return KC_ERR_NOMEM;
    *k = (kc_rt_call_t){NULL, fn, arg, notify, token};
    pthread_mutex_lock(&rt->ev_mu);
    if (rt->calls_tail)
        rt->calls_tail->next = k;
    else
        rt->calls_head = k;
    rt->calls_tail = k;
    pthread_mutex_unlock(&rt->ev_mu);
    kc_rt_kick(&rt->control);
    return KC_OK;
}

kc_err_t kc_rt_post_call(kc_rt_t *rt, void (*fn)(void *arg, int run), void *arg)
{
    return post_call(rt, fn, arg, false, 0);
}

typedef struct rebalance_call {
    kc_rt_t *rt;
    kc_rebalance_t kind;
    kc_topic_partition_t *tps; /* owned, topics owned */
    size_t n;
} rebalance_call_t;

static void rebalance_free(rebalance_call_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        free((char *)r->tps[i].topic);
    free(r->tps);
    free(r);
}

static void rebalance_run(void *arg, int run)
{
    rebalance_call_t *r = arg;
    const kc_callbacks_t *cbs = &r->rt->o.cbs;
    if (run && cbs->on_rebalance)
        cbs->on_rebalance(cbs->opaque, r->kind, r->tps, r->n);
    rebalance_free(r);
}

kc_err_t kc_rt_post_rebalance(kc_rt_t *rt, kc_rebalance_t kind, const kc_topic_partition_t *tps,
                              size_t n, int64_t token)
{
    rebalance_call_t *r = calloc(1, sizeof *r);
    if (!r || !(r->tps = calloc(n ? n : 1, sizeof *r->tps))) {
        free(r);
        return KC_ERR_NOMEM;
    }
    r->rt = rt;
    r->kind = kind;
    for (; r->n < n; r->n++) {
        r->tps[r->n] = (kc_topic_partition_t){NULL, tps[r->n].partition, tps[r->n].offset};
        if (!(r->tps[r->n].topic = strdup(tps[r->n].topic))) {
            rebalance_free(r);
            return KC_ERR_NOMEM;
        }
    }
    kc_err_t rc = post_call(rt, rebalance_run, r, true, token);
    if (rc != KC_OK)
        rebalance_free(r);
    return rc;
}

static kc_rt_call_t *pop_call(kc_rt_t *rt)
{
    pthread_mutex_lock(&rt->ev_mu);
    kc_rt_call_t *k = rt->calls_head;
    if (k && !(rt->calls_head = k->next))
        rt->calls_tail = NULL;
    pthread_mutex_unlock(&rt->ev_mu);
    return k;
}

/* kc_rt_free: calls never run are told so (run = 0), so their owners' memory is freed. */
void kc_rt_calls_free(kc_rt_t *rt)
{
    kc_rt_call_t *k;
    while ((k = pop_call(rt))) {
        k->fn(k->arg, 0);
        free(k);
    }
}

void kc_rt_run_events(kc_rt_worker_t *w)
{
    kc_rt_t *rt = w->rt;
    for (;;) {
        kc_rt_event_t e;
        kc_rt_call_t *k = pop_call(rt);
        if (k) {
            if (k->notify) {
                /* on_rebalance stands for poll() in Java's terms: one that hangs holds the whole
                 * rebalance, so the watchdog times it as it times on_records. REBALANCED goes
                 * after it returned: the network thread may go on. */
                kc_rt_cb_enter(w, &rt->control);
                k->fn(k->arg, 1);
                kc_rt_cb_exit(w);
                kc_rt_post(w, KC_RT_CMPL_REBALANCED, NULL, KC_OK, k->token);
            } else {
                k->fn(k->arg, 1);
            }
            free(k);
            continue;
        }
        pthread_mutex_lock(&rt->ev_mu);
        if (rt->ev_len == 0) {
            pthread_mutex_unlock(&rt->ev_mu);
            return;
        }
        e = rt->evq[rt->ev_head];
        rt->ev_head = (rt->ev_head + 1) % KC_RT_EVQ;
        rt->ev_len--;
        pthread_mutex_unlock(&rt->ev_mu);
        if (rt->o.cbs.on_event) {
            kc_event_t ev = {.type = e.type,
                             .error = e.has_error ? &e.error : NULL,
                             .json = e.json,
                             .assignment = e.assign,
                             .assignment_len = e.assign_len,
                             .topic = e.topic,
                             .partition = e.partition,
                             .offset = e.offset,
                             .retriable =
                                 e.type == KC_EVENT_ERROR && kc_rt_error_retriable(&e.error),
                             .fatal = e.type == KC_EVENT_ERROR && e.error.code == KC_ERR_FATAL,
                             .ack_first = e.ack_first,
                             .ack_records = e.ack_records};
            rt->o.cbs.on_event(rt->o.cbs.opaque, &ev);
        }
        kc_rt_event_free(&e);
    }
}
