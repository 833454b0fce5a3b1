/*
 * Backpressure: may the fetcher ask for a partition, and how many bytes may a response bring
 * (what the counters mean and why frames: memory_budget.c).
 * Owner: the network thread (fetch_blocked, global_blocked, fetch_gen). The byte counters are
 * atomics that workers decrement (worker.c: kc_rt_release_bref), read relaxed here: they are
 * counts, they publish nothing, and a slightly stale value only delays a decision by one fetch
 * round.
 */
#include "rt_internal.h"

int64_t kc_rt_share(const kc_rt_t *rt)
{
    unsigned n = atomic_load_explicit(&rt->nparts, memory_order_relaxed);
    return rt->o.queued_max_bytes / (n ? n : 1);
}

int64_t kc_rt_buffered_bytes(const kc_rt_t *rt)
{
    return atomic_load_explicit(&rt->buffered, memory_order_relaxed);
}

bool kc_rt_may_fetch(kc_rt_t *rt, kc_rt_part_t *p)
{
    int64_t cap = rt->o.queued_max_bytes, total = kc_rt_frame_bytes(rt);
    int64_t share = kc_rt_share(rt);
    int64_t mine = atomic_load_explicit(&p->buffered, memory_order_relaxed);
    int frames = atomic_load_explicit(&p->frames, memory_order_relaxed);
    if (atomic_load_explicit(&p->paused, memory_order_relaxed) ||
        (atomic_load_explicit(&p->life, memory_order_relaxed) & KC_RT_REVOKING))
        return false;
    /* Hysteresis: stop at the mark, restart only well below it, so a partition at its limit
     * does not enter and leave the fetch session (an altered-partitions entry each time) on
     * every round. The global mark counts the frames kept alive (memory_budget.c), the partition's
     * marks its batch bytes (its fair share) and the frames it pins. */
    if (rt->global_blocked ? total < cap / 4 * 3 : total < cap)
        rt->global_blocked = false;
    else
        rt->global_blocked = true;
    if (p->fetch_blocked ? mine < share / 2 && frames <= KC_RT_PART_RESUME_FRAMES
                         : mine < share && frames < KC_RT_PART_MAX_FRAMES)
        p->fetch_blocked = false;
    else
        p->fetch_blocked = true;
    return !rt->global_blocked && !p->fetch_blocked;
}

uint64_t kc_rt_fetch_gen(const kc_rt_t *rt)
{
    return rt->fetch_gen;
}

void kc_rt_fetch_gen_bump(kc_rt_t *rt)
{
    rt->fetch_gen++;
}

int64_t kc_rt_fetch_budget(const kc_rt_t *rt)
{
    /* Idle pooled frame buffers are resident too (io/base/buf_pool.c): a new frame is allowed
     * what neither the charged frames nor the idle ones hold, or, when that is less, seven
     * eighths of the largest idle buffer (never more than the cap leaves beside the charged
     * frames), which the frame can reuse; the eighth left is for what a response adds to what it
     * was asked (headers, a first batch over the limit). Not the idle bytes alone: once a few
     * freed frames sit in the pool under a small cap, they would leave no budget at all and
     * fetching would stop for good, though the next frame reuses one of them. What this bounds:
     * the charged frames stay within the cap give or take one buffer (a frame is charged its
     * buffer's whole allocation, which may be larger than what it was allowed: a size class
     * above it, or a larger idle buffer reused), and idle buffers come on top, by at most the
     * pool's own bound, when the brokers' frames (the budget is split between them) do not all
     * find one to reuse. */
    size_t largest = 0;
    int64_t charged = kc_rt_frame_bytes(rt);
    int64_t left = rt->o.queued_max_bytes - charged - (int64_t)kc_buf_pool_idle_bytes(&largest);
    int64_t reuse = (int64_t)(largest - largest / 8);
    if (reuse > rt->o.queued_max_bytes - charged)
        reuse = rt->o.queued_max_bytes - charged;
    if (reuse > left)
        left = reuse;
    if (rt->o.frame_max_bytes > 0 && left > rt->o.frame_max_bytes)
        left = rt->o.frame_max_bytes;
    return left > 0 ? left : 0;
}
