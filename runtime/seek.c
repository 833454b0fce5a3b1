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
 *
 * Between callbacks: the worker may have decoded the next view of a batch (or opened the next
 * batch) before the seek and hand it to on_records after kc_seek returned. The generation copy
 * in the `life` word closes that window (dispatch.h, "Seeks and the gate"): deliver_view's INCB
 * CAS expects the view's batch generation, and the bump below makes it fail.
 *
 * What is guaranteed, against the C11 model: (1) the bump and every gate CAS are RMWs of one
 * atomic, so each CAS is either before the bump in `life`'s modification order (that callback
 * entered the gate before the seek took effect: a callback in flight during kc_seek) or after
 * it, and then reads the new generation and fails. kc_seek returns to the app thread after the
 * bump (the command completion is a release/acquire handoff), so any callback whose gate entry
 * happens-after kc_seek's return (the app synchronised with the worker afterwards, e.g. let a
 * blocked callback go) reads the bump by coherence and delivers nothing from before the seek.
 * (2) Real time, which C11 does not define: modification order of one location agrees with real
 * time on every machine C11 runs on (cache coherence), so a gate entry that happens later in
 * real time than the bump fails too. "Entry" is the CAS: a worker preempted between a CAS that
 * won before the seek and the call of on_records runs that one view, as any callback that was
 * in flight when kc_seek was called does.
 */
#include "rt_internal.h"

void kc_rt_part_seek(kc_rt_part_t *p, int64_t to)
{
    atomic_store_explicit(&p->seek_to, to, memory_order_relaxed); /* published by the bump */
    uint32_t g = atomic_load_explicit(&p->seek_gen, memory_order_relaxed);
    atomic_store_explicit(&p->seek_gen, g + 1, memory_order_release);
    /* The gate's copy (dispatch.h): from here on no view of an older batch enters on_records.
     * release: a worker whose gate CAS fails on this value (acquire) then reads the seek_gen
     * and seek_to stored above in kc_rt_part_apply_seek. Adding to the upper bits never
     * touches the flags below them (a carry out of bit 31 is dropped, as seek_gen wraps). */
    atomic_fetch_add_explicit(&p->life, KC_RT_LIFE_GEN(1), memory_order_acq_rel);
    kc_rt_kick(p); /* the worker drops the stale batches now, freeing their memory */
    kc_rt_gate_closed(p);
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
