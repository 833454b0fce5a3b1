/*
 * kc_commit in a share group: a commit of acknowledgements instead of offsets.
 *
 * What it covers: the verdicts of every view handed to the application when the network thread
 * took the call (an on_records call started, or in pull mode a view kc_poll returned: every one
 * the application saw come back before calling, and those still out then, which the commit
 * waits for), and kc_share_ack's made on them. The call takes the workers' counts (dispatch.h,
 * kc_rt_share_views) and waits until each of those views has posted its verdicts
 * (kc_rt_share_posted); then it drains the completion rings,
 * which queues the verdicts in the share sessions (consumer.c, KC_RT_CMPL_SHARE_ACK), and
 * hands over to kc_engine_share_commit, which sends them at once and answers when the broker
 * has. The counts are checked before the drain that follows, never after: a verdict posted
 * between a drain and the check would be left in the ring.
 *
 * Every call gets exactly one answer: from the engine, from the deadline (callbacks still
 * running then: KC_ERR_TIMEOUT), or from kc_share_commit_close (KC_ERR_CLOSED) when the
 * consumer closes first. Owner: network thread (the waiting list, c->share_waits).
 */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "consumer_int.h"
#include "coordinator.h"
#include "netthread.h"

struct kc_share_cwait {
    kc_loop_timer_t timer; /* the deadline while callbacks are still running */
    struct kc_share_cwait *next;
    kc_consumer_t *c;
    int64_t deadline_ms;
    kc_engine_offsets_cb cb;
    void *opaque;
    bool ready;       /* the barrier passed before the last drain */
    uint64_t views[]; /* kc_rt_share_views at the call, one per worker */
};

static void unlink_wait(kc_consumer_t *c, struct kc_share_cwait *w)
{
    for (struct kc_share_cwait **pp = &c->share_waits; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    kc_loop_t *loop = kc_netthread_loop(c->nt);
    if (kc_loop_timer_armed(&w->timer))
        kc_loop_timer_stop(loop, &w->timer);
}

static void fail_wait(struct kc_share_cwait *w, kc_err_t rc, const char *msg)
{
    kc_error_t err;
    kc_fail(&err, rc, "%s", msg);
    w->cb(w->opaque, rc, &err, NULL, 0);
    free(w);
}

static void on_deadline(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    struct kc_share_cwait *w = (struct kc_share_cwait *)t;
    unlink_wait(w->c, w);
    fail_wait(w, KC_ERR_TIMEOUT,
              "share commit: views handed out before the call (callbacks still running, or "
              "views polled and not released) did not come back in time, so their verdicts "
              "could not be sent");
}

/* The barrier passed and the rings were drained since: the verdicts are in the sessions. */
static void hand_over(struct kc_share_cwait *w)
{
    kc_consumer_t *c = w->c;
    int64_t left = w->deadline_ms - kc_now_ms();
    kc_error_t err;
    bool none = false;
    kc_err_t rc =
        kc_engine_share_commit(c->e, left > 0 ? (int)left : 0, true, w->cb, w->opaque, &none, &err);
    if (rc != KC_OK)
        w->cb(w->opaque, rc, &err, NULL, 0);
    else if (none) /* nothing to acknowledge: a success with no results */
        w->cb(w->opaque, KC_OK, NULL, NULL, 0);
    free(w);
}

void kc_share_commit_mark(kc_consumer_t *c)
{
    for (struct kc_share_cwait *w = c->share_waits; w; w = w->next)
        w->ready = w->ready || kc_rt_share_posted(c->rt, w->views);
}

void kc_share_commit_run(kc_consumer_t *c)
{
    struct kc_share_cwait **pp = &c->share_waits;
    while (*pp) {
        struct kc_share_cwait *w = *pp;
        if (!w->ready) {
            pp = &w->next;
            continue;
        }
        unlink_wait(c, w);
        hand_over(w);
        pp = &c->share_waits; /* the callback may have changed the list */
    }
}

kc_err_t kc_share_commit_start(kc_consumer_t *c, int timeout_ms, kc_engine_offsets_cb cb,
                               void *opaque, kc_error_t *err)
{
    unsigned n = kc_rt_workers(c->rt);
    struct kc_share_cwait *w = calloc(1, sizeof *w + n * sizeof w->views[0]);
    if (!w)
        return kc_fail(err, KC_ERR_NOMEM, "share commit: out of memory");
    w->c = c;
    w->cb = cb;
    w->opaque = opaque;
    w->deadline_ms = kc_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    kc_rt_share_views(c->rt, w->views);
    struct kc_share_cwait **pp = &c->share_waits; /* in call order: answered in it */
    while (*pp)
        pp = &(*pp)->next;
    *pp = w;
    w->timer.cb = on_deadline;
    w->timer.opaque = w;
    kc_loop_timer_start(kc_netthread_loop(c->nt), &w->timer, timeout_ms > 0 ? timeout_ms : 0);
    kc_share_commit_mark(c);
    kc_consumer_drain_completions(c);
    kc_share_commit_run(c);
    return KC_OK;
}

void kc_share_commit_close(kc_consumer_t *c)
{
    while (c->share_waits) {
        struct kc_share_cwait *w = c->share_waits;
        unlink_wait(c, w);
        fail_wait(w, KC_ERR_CLOSED, "share commit: the consumer closed");
    }
}
