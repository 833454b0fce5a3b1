/*
 * max.poll.interval.ms detection. The network thread calls kc_rt_watchdog_check from a timer;
 * each worker publishes the start time of the callback it is running (kc_rt_cb_enter: worker.c
 * for the partitions' callbacks, events.c for on_rebalance). A callback over the limit is
 * reported once (error event + poll_exceeded flag); the group code decides what to do (leave the
 * group, as the Java client does). Owner of reported_start and the call itself: the network
 * thread.
 */
#include <stdio.h>

#include "base/err.h"
#include "rt_internal.h"

bool kc_rt_poll_exceeded(const kc_rt_t *rt)
{
    return atomic_load_explicit(&rt->poll_exceeded, memory_order_relaxed);
}

unsigned kc_rt_watchdog_check(kc_rt_t *rt, int64_t now_ns)
{
    unsigned over = 0;
    int64_t limit = rt->o.max_poll_interval_ms * 1000000LL;
    if (limit <= 0)
        return 0;
    for (unsigned i = 0; i < rt->o.workers; i++) {
        kc_rt_worker_t *w = &rt->w[i];
        /* acquire: pairs with kc_rt_cb_enter's release, so cb_part belongs to this start time.
         * The partition cannot be freed meanwhile: freeing needs its REVOKE_DONE, which comes
         * after this callback returns, and is handled on this same (network) thread (the control
         * pseudo-partition lives as long as the dispatcher). */
        int64_t start = atomic_load_explicit(&w->cb_start_ns, memory_order_acquire);
        if (!start || now_ns - start <= limit)
            continue;
        over++;
        if (w->reported_start == start)
            continue;
        w->reported_start = start;
        atomic_store_explicit(&rt->poll_exceeded, true, memory_order_relaxed);
        kc_rt_part_t *p = atomic_load_explicit(&w->cb_part, memory_order_relaxed);
        kc_error_t e;
        char what[sizeof e.msg];
        if (p && p->is_control)
            snprintf(what, sizeof what, "on_rebalance");
        else
            snprintf(what, sizeof what, "callback for %s[%d]", p ? p->pub.topic : "?",
                     p ? p->pub.partition : -1);
        kc_fail(&e, KC_ERR_POLL_EXCEEDED,
                "worker %u: %s running for %lld ms (max.poll.interval.ms=%lld)", i, what,
                (long long)((now_ns - start) / 1000000), (long long)rt->o.max_poll_interval_ms);
        kc_event_t ev = {.type = KC_EVENT_ERROR, .error = &e};
        kc_rt_post_event(rt, &ev);
    }
    return over;
}
