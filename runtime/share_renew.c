/*
 * kc_share_renew: a share group's view whose work outlasts the acquisition lock asks the broker
 * to start the lock of its records again (KIP-1222, AcknowledgeType RENEW) and waits for the
 * answer, so that its verdict still counts when the callback returns.
 *
 * What it renews: the records of the worker's current piece from the view's first record to the
 * piece's end (kc_rt_bref_t: one delivery's acquired records of one batch), not only those the
 * view returned so far: the views that follow on the same piece would otherwise lapse at the old
 * deadline (worker.c) though the broker keeps them locked for this member.
 *
 * How: the caller's thread (the worker running on_records, or in pull mode the app thread that
 * holds the view while its worker waits for the release) sends KC_COP_SHARE_RENEW to the network
 * thread, which queues the renewal in the share session holding the records (the engine refuses
 * one whose lock ran out already) and sends it at once in a ShareAcknowledge; the broker's answer
 * names the partition's result, and the engine the new deadline.
 * The caller then moves its piece's lapse deadline (p->cur.lock_deadline, which it owns: the
 * worker is its owner, and in pull mode the view's holder has it through pull.mu's hand-off) to
 * that deadline. It waits on the network thread only, never on a worker, so it is allowed in
 * callbacks; the engine answers every commit by its deadline or at close.
 */
#include <string.h>

#include "base/err.h"
#include "consumer_int.h"
#include "coordinator.h"
#include "record.h"
#include "rt_internal.h"

/* Network thread: the broker answered the request that carried the renewal (or the deadline
 * passed, or the consumer closed). The partition's result in `res` may be that of other
 * acknowledgements answered meanwhile (the previous view's verdicts riding a ShareFetch), so the
 * renewal is judged by what it does: it took when the engine's deadline for the records moved
 * past the one they had when it was queued (k->deadline), and only the broker's answer to a
 * renewal moves it. */
static void renew_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                       const kc_engine_offset_t *res, size_t n)
{
    kc_ccall_t *k = opaque;
    kc_error_t why = {0};
    const kc_engine_offset_t *mine = NULL;
    for (size_t i = 0; i < n && !mine; i++)
        if (res[i].partition == k->partition && strcmp(res[i].topic, k->topic) == 0)
            mine = &res[i];
    int64_t now = k->c->e ? kc_engine_share_deadline(k->c->e, k->topic, k->partition, k->value,
                                                     k->delivery_count)
                          : -1;
    /* (the same deadline again: renewed twice within a millisecond, all answers clean) */
    if (now > 0 &&
        (now > k->deadline || (now == k->deadline && rc == KC_OK && mine && mine->error == 0))) {
        rc = KC_OK;
    } else if (rc != KC_OK) {
        if (err)
            why = *err;
    } else if (mine && mine->error > 0) {
        rc = kc_fail_kafka(&why, (int16_t)mine->error,
                           "kc_share_renew: the broker refused to renew the lock of %s[%d] "
                           "offsets %lld..%lld",
                           k->topic, (int)k->partition, (long long)k->value, (long long)k->last);
    } else if (mine && mine->error == -1) {
        rc = kc_fail(&why, KC_ERR_TRANSPORT, "kc_share_renew: the renewal of %s[%d] got no answer",
                     k->topic, (int)k->partition);
    } else {
        rc = kc_fail(&why, KC_ERR_STATE,
                     "kc_share_renew: %s[%d] offsets %lld..%lld were not renewed: they were "
                     "handed out again, or lapsed, before the renewal left",
                     k->topic, (int)k->partition, (long long)k->value, (long long)k->last);
    }
    pthread_mutex_lock(&k->mu);
    k->fin_rc = rc;
    if (rc != KC_OK)
        k->fin_err = why;
    k->deadline = rc == KC_OK ? now : -1;
    k->done = 1;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

kc_err_t kc_share_renew_start(kc_consumer_t *c, kc_ccall_t *k)
{
    if (!c->e)
        return kc_fail(&k->err, KC_ERR_CLOSED, "kc_share_renew: the consumer is closed");
    /* what renew_done compares with: written before the engine can call it */
    k->deadline =
        kc_engine_share_deadline(c->e, k->topic, k->partition, k->value, k->delivery_count);
    return kc_engine_share_renew(c->e, k->topic, k->partition, k->value, k->last, k->delivery_count,
                                 k->timeout_ms, renew_done, k, &k->err);
}

KC_API kc_err_t kc_share_renew(kc_records_t *b, int timeout_ms, kc_error_t *err)
{
    if (!b)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_share_renew: NULL view");
    if (!b->share || !b->picks)
        return kc_fail(err, KC_ERR_STATE, "kc_share_renew: not a share group's view");
    if (timeout_ms <= 0)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_share_renew: timeout_ms %d is not > 0",
                       timeout_ms);
    kc_rt_part_t *p = b->part;
    kc_rt_part_t *h = kc_rt_part_head(p);
    kc_consumer_t *c = p->rt->o.wake_ctx;
    int64_t first = p->next_deliver > p->cur.base_offset ? p->next_deliver : p->cur.base_offset;
    if (!p->have_cur || first > p->cur.last_offset)
        return kc_fail(err, KC_ERR_STATE, "kc_share_renew: the view holds no records");
    kc_ccall_t k = {.op = KC_COP_SHARE_RENEW,
                    .topic = h->pub.topic,
                    .partition = h->pub.partition,
                    .value = first,
                    .last = p->cur.last_offset,
                    .delivery_count = p->cur.delivery_count,
                    .timeout_ms = timeout_ms};
    pthread_mutex_init(&k.mu, NULL);
    pthread_cond_init(&k.cv, NULL);
    kc_err_t rc = kc_consumer_call(c, &k, err);
    if (rc == KC_OK) {
        pthread_mutex_lock(&k.mu);
        while (!k.done)
            pthread_cond_wait(&k.cv, &k.mu);
        rc = k.fin_rc;
        if (rc != KC_OK && err)
            *err = k.fin_err;
        if (rc == KC_OK && k.deadline > 0)
            p->cur.lock_deadline = k.deadline;
        pthread_mutex_unlock(&k.mu);
    }
    pthread_mutex_destroy(&k.mu);
    pthread_cond_destroy(&k.cv);
    return rc;
}
