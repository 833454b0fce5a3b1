/*
 * Memory accounting by response frame: what queued.max.bytes actually bounds.
 *
 * A batch handed to a worker is a slice of the Fetch response it came in (no copy), so the whole
 * frame stays resident until the last of its batches, on any partition, is released. Counting
 * batch bytes alone undercounts badly: with one worker taking twelve partitions in turn, most
 * frames are kept alive by one partition's leftover batches, and T2-zstd peaked at 715 MiB RSS
 * under a 256 MiB cap (perf/README.md "Memory cap"). Hence three rules:
 *  - The global cap counts frames. A frame is charged (its allocation: a pooled buffer may be
 *    larger than the frame, and all of it was touched once) when its first batch is pushed, and
 *    discharged by the buffer's free hook when its last reference goes.
 *  - A partition keeps at most KC_RT_PART_MAX_FRAMES frames alive through its queued batches;
 *    past that it is not fetched until its worker drains it (backpressure.c). One slow callback
 *    then pins a few frames instead of every frame, so memory is not a back door for
 *    head-of-line blocking.
 *  - A request asks for at most frame_max_bytes (backpressure.c), which bounds each pinned frame.
 * The per-partition byte share still counts batch bytes: that rule is about fairness between
 * partitions, these are about memory.
 *
 * Threads: charge/uncharge on the network thread (the only pusher); release on the worker running
 * the partition; the free hook on whichever thread drops the frame's last reference. The counters
 * are relaxed atomics: counts that publish nothing, like the byte counters.
 */
#include "rt_internal.h"

static void frame_freed(void *ctx, const kc_buf_t *f)
{
    kc_rt_t *rt = ctx;
    int64_t n = (int64_t)f->alloc;
    int64_t old = atomic_fetch_sub_explicit(&rt->frame_bytes, n, memory_order_relaxed);
    int64_t low = rt->o.queued_max_bytes / 4 * 3; /* kc_rt_may_fetch's global resume mark */
    if (old >= low && old - n < low) {
        /* Possibly not a worker (the network thread drops a frame's own reference after the
         * decode): no completion ring to post on, so a flag the next drain turns into DRAINED.
         * relaxed: it publishes nothing; the store is ordered before the hook's exchange by
         * kc_rt_wake_claim's seq_cst fence and read after kc_rt_wake_rearm's (dispatch.h), the
         * same store-buffer pairing as a ring push. `closing` only avoids a useless wake. */
        atomic_store_explicit(&rt->frames_drained, true, memory_order_relaxed);
        if (rt->o.wake && !atomic_load_explicit(&rt->closing, memory_order_relaxed))
            rt->o.wake(rt->o.wake_ctx);
    }
}

void kc_rt_frame_charge(kc_rt_t *rt, kc_rt_part_t *p, kc_rt_bref_t *b)
{
    kc_buf_t *f = b->raw.buf;
    b->frame_first = false;
    if (!f)
        return;
    if (!f->on_free) {
        /* Written before the batch is published through the ring (release fence in
         * kc_rt_bring_push, acquire in _pop), so every later holder sees it, and the last unref,
         * on any thread, reads it after the refcount's acq_rel decrement. */
        f->on_free = frame_freed;
        f->on_free_ctx = rt;
        f->seq = ++rt->frame_seq;
        atomic_fetch_add_explicit(&rt->frame_bytes, (int64_t)f->alloc, memory_order_relaxed);
    }
    if (f->seq != p->last_frame) {
        p->last_frame = f->seq;
        b->frame_first = true;
        atomic_fetch_add_explicit(&p->frames, 1, memory_order_relaxed);
    }
}

void kc_rt_frame_uncharge(kc_rt_part_t *p, const kc_rt_bref_t *b, uint64_t prev_last)
{
    /* The frame's own charge stays: the frame is alive, and its free hook discharges it. */
    if (b->frame_first) {
        atomic_fetch_sub_explicit(&p->frames, 1, memory_order_relaxed);
        p->last_frame = prev_last;
    }
}

bool kc_rt_frame_release(kc_rt_part_t *p, const kc_rt_bref_t *b)
{
    /* Counting frame-starting entries makes the pinned count at most one more than `frames`
     * (the frame whose first entry is done while later ones still wait): close enough for a
     * limit, and it costs one flag per entry instead of a per-frame table. A share partition's
     * lanes (dispatch.h) release its batches out of order, each lane possibly holding a later
     * batch of an older frame: there the bound is `frames` plus the partition's lanes, and the
     * global cap above still holds. */
    if (!b->frame_first)
        return false;
    int old = atomic_fetch_sub_explicit(&p->frames, 1, memory_order_relaxed);
    return old == KC_RT_PART_RESUME_FRAMES + 1;
}

int64_t kc_rt_frame_bytes(const kc_rt_t *rt)
{
    return atomic_load_explicit(&rt->frame_bytes, memory_order_relaxed);
}
