/*
 * Seeks in the dispatcher. kc_seek moves the engine's fetch position; this makes the runtime
 * follow: every batch carries the partition's seek generation from when it was pushed, a seek
 * bumps the generation, and the worker running the partition drops what is older and resets the
 * delivery floor (next_deliver), which otherwise only moves forward — so a backward seek
 * re-delivers, and a forward one never delivers the records it skipped (the engine's `first`
 * offset, kept as the batch's base_offset, bounds a batch that starts before the position).
 *
 * Threads: kc_rt_part_seek on the network thread (the only writer of seek_gen; a release store
 * ordered before any later push of a new-generation batch); kc_rt_part_apply_seek on the worker
 * holding the partition's SCHED bit (owner of seen_gen, cur, next_deliver).
 */
#include "rt_internal.h"

void kc_rt_part_seek(kc_rt_part_t *p, int64_t to)
{
    atomic_store_explicit(&p->seek_to, to, memory_order_relaxed); /* published by the bump */
    uint32_t g = atomic_load_explicit(&p->seek_gen, memory_order_relaxed);
    atomic_store_explicit(&p->seek_gen, g + 1, memory_order_release);
    kc_rt_kick(p); /* the worker drops the stale batches now, freeing their memory */
}

bool kc_rt_part_apply_seek(kc_rt_worker_t *w, kc_rt_part_t *p)
{
    uint32_t g = atomic_load_explicit(&p->seek_gen, memory_order_acquire);
    if (g == p->seen_gen)
        return false;
    p->seen_gen = g;
    if (p->have_cur) {
        kc_rt_release_bref(w, p, &p->cur);
        p->have_cur = false;
    }
    int64_t to = atomic_load_explicit(&p->seek_to, memory_order_relaxed);
    if (to >= 0) {
        /* An offset seek: the floor is the target (a backward seek re-delivers from it, e.g. an
         * on_assign seek to an offset kept in the app's database below the committed one), and
         * the committable offset is the target too, as Java commits the position after seek():
         * a seek inside on_records thus ends that view with exactly the records before it. */
        p->next_deliver = to;
        if (p->rt->o.auto_store)
            atomic_store_explicit(&p->committable, to, memory_order_release);
    } else {
        p->next_deliver = -1; /* the engine's first offset of the next batch decides */
    }
    return true;
}
