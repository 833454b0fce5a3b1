/*
 * Dispatcher lifecycle and the network thread's side of each partition: add, push, revoke,
 * pause/resume, free, completions. Owner: the network thread for everything here except where a
 * function says "any thread"; the cross-thread words are documented in dispatch.h.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "rt_internal.h"

void kc_rt_kick(kc_rt_part_t *p)
{
    /* acq_rel. Release: publishes the kicker's prior writes (ring slot, life, paused, seek) to
     * the worker whose fetch_and(~DIRTY, acquire) reads this value or a later RMW of its release
     * sequence. Acquire: when this RMW reads the last runner's CAS(SCHED -> 0, release), the
     * runner's writes to the worker-owned fields happen-before our run queue push, and through
     * the queue's mutex before the next runner's pop. Lost wake-ups are excluded by the RMWs on
     * the one word alone (a single modification order), not by these orders. */
    unsigned old =
        atomic_fetch_or_explicit(&p->sched, KC_RT_SCHED | KC_RT_DIRTY, memory_order_acq_rel);
    if (!(old & KC_RT_SCHED))
        kc_rt_runq_push(&p->rt->rq, p);
}

static kc_err_t start_workers(kc_rt_t *rt, kc_error_t *err)
{
    for (unsigned i = 0; i < rt->o.workers; i++) {
        kc_rt_worker_t *w = &rt->w[i];
        w->rt = rt;
        w->id = i;
        if (kc_rt_cring_init(&w->cring, 1024) != KC_OK)
            return kc_fail(err, KC_ERR_NOMEM, "worker %u completion ring", i);
        if (rt->o.decoder.ctx_new && !(w->dctx = rt->o.decoder.ctx_new(rt->o.decoder.opaque)))
            return kc_fail(err, KC_ERR_NOMEM, "worker %u decode context", i);
        if (rt->o.share && !(w->picks = calloc(rt->o.max_records, sizeof *w->picks)))
            return kc_fail(err, KC_ERR_NOMEM, "worker %u share verdicts", i);
        if (pthread_create(&w->th, NULL, kc_rt_worker_main, w) != 0)
            return kc_fail(err, KC_ERR_SYSTEM, "worker %u: pthread_create failed", i);
        w->started = true;
    }
    return KC_OK;
}

kc_err_t kc_rt_new(const kc_rt_opts_t *o, kc_rt_t **out, kc_error_t *err)
{
    if (!o || !out || o->workers == 0 || !o->decoder.open || !o->decoder.next)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_rt_new: need workers > 0 and a decoder");
    kc_rt_t *rt = calloc(1, sizeof *rt);
    if (!rt)
        return kc_fail(err, KC_ERR_NOMEM, "kc_rt_new");
    rt->o = *o;
    rt->fetch_gen = 1;
    if (!rt->o.ring_slots)
        rt->o.ring_slots = 256;
    if (!rt->o.max_records)
        rt->o.max_records = 500;
    if (!rt->o.quantum)
        rt->o.quantum = 8;
    rt->w = calloc(o->workers, sizeof *rt->w);
    if (!rt->w || kc_rt_runq_init(&rt->rq) != 0) {
        free(rt->w);
        free(rt);
        return kc_fail(err, KC_ERR_NOMEM, "kc_rt_new: workers");
    }
    pthread_mutex_init(&rt->ev_mu, NULL);
    rt->control.rt = rt;
    rt->control.is_control = true;
    rt->control.nlanes = 1;
    rt->control.pub.topic = "";
    rt->control.pub.partition = -1;
    kc_err_t rc = start_workers(rt, err);
    if (rc != KC_OK) {
        kc_rt_shutdown(rt, false, -1);
        kc_rt_free(rt);
        return rc;
    }
    *out = rt;
    return KC_OK;
}

const kc_callbacks_t *kc_rt_callbacks(const kc_rt_t *rt)
{
    return &rt->o.cbs;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

kc_err_t kc_rt_shutdown(kc_rt_t *rt, bool drain, int timeout_ms)
{
    /* relaxed: both flags carry no data, they only make workers give up (kc_rt_post's wait on a
     * full ring, a new callback); what a dropped completion would have said is handled by
     * kc_rt_free after the joins, and pthread_join is the happens-before edge it needs. The run
     * queue's mutex below also publishes them to any worker that pops after it. */
    atomic_store_explicit(&rt->closing, true, memory_order_relaxed);
    if (!drain)
        atomic_store_explicit(&rt->stopping, true, memory_order_relaxed);
    kc_rt_runq_stop(&rt->rq, drain ? KC_RT_STOP_DRAIN : KC_RT_STOP_DROP);
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : now_ns() + (int64_t)timeout_ms * 1000000;
    kc_err_t rc = KC_OK;
    for (unsigned i = 0; i < rt->o.workers; i++) {
        kc_rt_worker_t *w = &rt->w[i];
        if (!w->started || w->joined)
            continue;
        if (timeout_ms < 0) {
            pthread_join(w->th, NULL);
            w->joined = true;
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t left = deadline - now_ns();
        if (left < 0)
            left = 0;
        ts.tv_sec += left / 1000000000;
        ts.tv_nsec += left % 1000000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        if (pthread_timedjoin_np(w->th, NULL, &ts) == 0)
            w->joined = true;
        else
            rc = KC_ERR_TIMEOUT;
    }
    if (rc == KC_ERR_TIMEOUT && drain) {
        /* Draining took too long: stop starting callbacks; the stragglers finish on their own. */
        atomic_store_explicit(&rt->stopping, true, memory_order_relaxed);
        kc_rt_runq_stop(&rt->rq, KC_RT_STOP_DROP);
    }
    return rc;
}

static void part_release_all(kc_rt_part_t *p)
{
    kc_rt_bref_t b;
    if (p->have_cur) {
        kc_slice_release(&p->cur.raw);
        p->have_cur = false;
    }
    while (kc_rt_bring_pop(&p->ring, &b))
        kc_slice_release(&b.raw);
}

static void part_destroy(kc_rt_part_t *p)
{
    for (unsigned i = 1; i < p->nlanes; i++)
        part_destroy(p->lanes[i - 1]);
    free(p->lanes);
    part_release_all(p);
    kc_rt_bring_fini(&p->ring);
    free(p->topic);
    free(p);
}

/* The fields every partition and lane starts with; p->topic set or borrowed by the caller. */
static bool part_init(kc_rt_t *rt, kc_rt_part_t *p, int32_t partition, int64_t start_offset,
                      bool park)
{
    if (kc_rt_bring_init(&p->ring, rt->o.ring_slots) != KC_OK)
        return false;
    p->rt = rt;
    p->pub.partition = partition;
    p->next_deliver = start_offset;
    p->nlanes = 1;
    atomic_init(&p->committable, -1);
    atomic_init(&p->seek_to, -1);
    atomic_init(&p->start_pos, -1);
    atomic_init(&p->last_worker, -1);
    atomic_init(&p->eof_at, -1);
    atomic_init(&p->eof_said, -1);
    if (park) /* relaxed: published to the first worker by the kick's or the queue's release */
        atomic_store_explicit(&p->life, KC_RT_PARK, memory_order_relaxed);
    return true;
}

/* A share partition's lanes (dispatch.h, "Share lanes"): one per worker beyond the first. A lane
 * borrows the head's topic, never runs on_assign (assigned_cb_done), and is not on rt->parts. */
static bool add_lanes(kc_rt_t *rt, kc_rt_part_t *p, int64_t start_offset, bool park)
{
    unsigned n = rt->o.workers;
    if (!(p->lanes = calloc(n - 1, sizeof *p->lanes)))
        return false;
    for (unsigned i = 1; i < n; i++) {
        kc_rt_part_t *l = calloc(1, sizeof *l);
        if (!l || !part_init(rt, l, p->pub.partition, start_offset, park)) {
            free(l);
            return false;
        }
        l->pub.topic = p->topic;
        l->head = p;
        l->assigned_cb_done = true;
        p->lanes[p->nlanes++ - 1] = l;
    }
    return true;
}

/* The head's lane i: 0 is the head itself. */
static kc_rt_part_t *lane(kc_rt_part_t *p, unsigned i)
{
    return i ? p->lanes[i - 1] : p;
}

void kc_rt_free(kc_rt_t *rt)
{
    if (!rt)
        return;
    kc_rt_shutdown(rt, false, -1); /* joins whatever is still running, without a bound */
    while (rt->parts) {
        kc_rt_part_t *p = rt->parts;
        rt->parts = p->all_next;
        part_destroy(p);
    }
    for (unsigned i = 0; i < rt->o.workers; i++) {
        kc_rt_worker_t *w = &rt->w[i];
        if (w->dctx && rt->o.decoder.ctx_free)
            rt->o.decoder.ctx_free(rt->o.decoder.opaque, w->dctx);
        free(w->picks);
        kc_rt_cring_fini(&w->cring);
    }
    for (unsigned i = 0; i < rt->ev_len; i++)
        kc_rt_event_free(&rt->evq[(rt->ev_head + i) % KC_RT_EVQ]);
    kc_rt_calls_free(rt);
    pthread_mutex_destroy(&rt->ev_mu);
    kc_rt_runq_fini(&rt->rq);
    free(rt->w);
    free(rt);
}

kc_rt_part_t *kc_rt_part_add(kc_rt_t *rt, const char *topic, int32_t partition,
                             int64_t start_offset)
{
    return kc_rt_part_add_held(rt, topic, partition, start_offset, false, false);
}

kc_rt_part_t *kc_rt_part_add_held(kc_rt_t *rt, const char *topic, int32_t partition,
                                  int64_t start_offset, bool held, bool park)
{
    kc_rt_part_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (!(p->topic = strdup(topic)) || !part_init(rt, p, partition, start_offset, park)) {
        free(p->topic);
        free(p);
        return NULL;
    }
    p->pub.topic = p->topic;
    if (rt->o.share && rt->o.workers > 1 && !add_lanes(rt, p, start_offset, park)) {
        part_destroy(p);
        return NULL;
    }
    p->all_next = rt->parts;
    if (rt->parts)
        rt->parts->all_prev = p;
    rt->parts = p;
    atomic_fetch_add_explicit(&rt->nparts, 1, memory_order_relaxed);
    kc_rt_fetch_gen_bump(rt); /* every partition's share shrinks */
    p->park_want = park;
    for (unsigned i = 1; park && i < p->nlanes; i++)
        kc_rt_kick(p->lanes[i - 1]); /* a parking lane posts its PARKED at once */
    if (held) {
        /* SCHED without queueing: kicks find it set and queue nothing (dispatch.h, "held").
         * Relaxed: no worker can see p before kc_rt_part_unhold queues it. */
        atomic_store_explicit(&p->sched, KC_RT_SCHED | KC_RT_DIRTY, memory_order_relaxed);
        p->held = true;
        return p;
    }
    kc_rt_kick(p); /* runs on_assign on a worker, before any record */
    return p;
}

void kc_rt_part_unhold(kc_rt_part_t *p)
{
    if (!p->held)
        return;
    p->held = false;
    /* We own SCHED (set at add, never cleared since: only the runner clears it); the run
     * queue's mutex publishes our writes to p to the worker that pops it. */
    kc_rt_runq_push(&p->rt->rq, p);
}

void kc_rt_part_park(kc_rt_part_t *p)
{
    if (p->park_want)
        return;
    p->park_want = true;
    p->lanes_parked = 0;
    for (unsigned i = 0; i < p->nlanes; i++) {
        kc_rt_part_t *x = lane(p, i);
        /* acq_rel: pairs with the gate's CAS, as kc_rt_part_fence's fetch_or does; the kick then
         * makes a worker that is giving the partition up look again (DIRTY) or queues it, so
         * the PARKED completion comes even when no batch arrives. */
        atomic_fetch_or_explicit(&x->life, KC_RT_PARK, memory_order_acq_rel);
        kc_rt_kick(x);
        kc_rt_gate_closed(x);
    }
}

void kc_rt_part_unpark(kc_rt_part_t *p)
{
    if (!p->park_want)
        return;
    p->park_want = false;
    p->lanes_parked = 0;
    for (unsigned i = 0; i < p->nlanes; i++) {
        kc_rt_part_t *x = lane(p, i);
        /* release: our writes before the unpark (e.g. a revoke's REVOKING, set earlier) are
         * published to the next worker by the queue push below or by the kick of whoever queues
         * it next */
        atomic_fetch_and_explicit(&x->life, ~(unsigned)KC_RT_PARK, memory_order_acq_rel);
        if (x->parked) {
            x->parked = false;
            /* We own SCHED (the worker left it set when it parked); the queue's mutex publishes
             * the cleared bit to the worker that pops it. */
            kc_rt_runq_push(&p->rt->rq, x);
        }
        /* Not parked yet: the worker either reads PARK clear and runs on, or read it set and
         * posts PARKED, which kc_rt_drain_completions answers by queueing it (park_want false). */
    }
}

/* A PARKED completion of x (a partition or one of its lanes), before `fn` sees it: true when
 * the whole partition is parked now, every lane included. */
static bool parked_arrived(kc_rt_part_t *x)
{
    kc_rt_part_t *p = kc_rt_part_head(x);
    if (!p->park_want) { /* unparked meanwhile: the worker left SCHED set for us to hand back */
        kc_rt_runq_push(&p->rt->rq, x);
        return false;
    }
    x->parked = true;
    return ++p->lanes_parked == p->nlanes;
}

/* A lane's LANE_REVOKED: once every lane's is in, the head may run on_revoke. */
static void lane_revoked(kc_rt_part_t *x)
{
    kc_rt_part_t *p = x->head;
    if (--p->lanes_left)
        return;
    /* release: the head's worker may read it on a pass some other kick started, before it
     * synchronised with ours; this store carries the lanes' completions (each popped with
     * acquire) to its acquire load, so their last on_records happen-before on_revoke */
    atomic_store_explicit(&p->lanes_done, true, memory_order_release);
    kc_rt_kick(p);
}

/* The lane a new batch of p goes to: the one with the fewest queued (ties: in turn). The ring
 * sizes are read by their producer, this thread: a stale consumer index only overstates one. */
static kc_rt_part_t *push_lane(kc_rt_part_t *p)
{
    if (p->nlanes == 1)
        return p;
    kc_rt_part_t *best = NULL;
    unsigned best_n = 0;
    for (unsigned k = 0; k < p->nlanes; k++) {
        kc_rt_part_t *x = lane(p, (p->lane_next + k) % p->nlanes);
        unsigned n = kc_rt_bring_size(&x->ring);
        if (!best || n < best_n) {
            best = x;
            best_n = n;
        }
    }
    p->lane_next = (p->lane_next + 1) % p->nlanes;
    return best;
}

/* Share lanes: a piece of more records than one view holds (callback.batch.max.records) is cut
 * into up to nlanes pieces of equal offset ranges, so that its views run side by side instead of
 * one after the other on one lane. Each piece decodes the batch again (and skips the records
 * before it), which is why a piece that fits one view is never cut. Only while every lane the
 * pieces may go to has room, so that all of them are queued or none (the caller keeps the
 * batch on a refusal). Returns how many pieces. */
static unsigned split_count(kc_rt_part_t *p, const kc_rt_bref_t *b)
{
    int64_t n = b->last_offset - b->base_offset + 1, m = p->rt->o.max_records;
    if (p->nlanes == 1 || b->delivery_count <= 0 || n <= m)
        return 1;
    int64_t k = (n + m - 1) / m;
    if (k > p->nlanes)
        k = p->nlanes;
    unsigned least = UINT32_MAX;
    for (unsigned i = 0; i < p->nlanes; i++) {
        unsigned s = kc_rt_bring_size(&lane(p, i)->ring);
        least = s < least ? s : least;
    }
    /* each piece goes to the emptiest lane, so none ends above least + k - 1 (two slots spare) */
    return least + (unsigned)k + 2 < p->rt->o.ring_slots ? (unsigned)k : 1;
}

static kc_err_t push_one(kc_rt_part_t *p, const kc_rt_bref_t *b, int64_t n);

kc_err_t kc_rt_part_push(kc_rt_part_t *p, const kc_rt_bref_t *b)
{
    if (atomic_load_explicit(&p->life, memory_order_relaxed) & KC_RT_REVOKING)
        return KC_ERR_STATE;
    unsigned k = split_count(p, b);
    if (k == 1)
        return push_one(p, b, (int64_t)b->raw.len);
    int64_t width = b->last_offset - b->base_offset + 1, bytes = (int64_t)b->raw.len;
    /* The first piece takes the caller's reference, the others one each, all taken before the
     * first push: a worker may deliver that piece and drop its reference at once. */
    for (unsigned i = 1; i < k; i++)
        (void)kc_buf_ref(b->raw.buf);
    for (unsigned i = 0; i < k; i++) {
        kc_rt_bref_t piece = *b;
        piece.base_offset = b->base_offset + width * i / k;
        piece.last_offset = b->base_offset + width * (i + 1) / k - 1;
        piece.split_tail = i > 0;
        kc_err_t rc = push_one(p, &piece, bytes * (i + 1) / k - bytes * i / k);
        if (rc == KC_OK)
            continue;
        if (!i) { /* nothing queued: the caller keeps the batch and its reference */
            for (unsigned j = 1; j < k; j++)
                kc_buf_unref(b->raw.buf);
            return rc;
        }
        /* split_count saw room for every piece, and only this thread pushes, so this happens
         * only when a lane's ring has no memory to grow into (ring.h); then the caller no longer
         * owns the batch (the first piece took its reference), and the piece's records go back
         * to the broker when their acquisition lock runs out, as for a lost verdict. */
        kc_slice_release(&piece.raw);
    }
    return KC_OK;
}

static kc_err_t push_one(kc_rt_part_t *p, const kc_rt_bref_t *b, int64_t n)
{
    /* Counted before the push so a worker's subtraction never precedes the addition. */
    atomic_fetch_add_explicit(&p->buffered, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->rt->buffered, n, memory_order_relaxed);
    kc_rt_fetch_gen_bump(p->rt); /* its bytes and frames, and the total, grow */
    kc_rt_bref_t st = *b;
    st.counted = n;
    kc_rt_part_t *x = push_lane(p); /* the bytes and frames are the head's all the same */
    /* network thread: the only writer of seek_gen, so relaxed reads its own value */
    st.seek_gen = atomic_load_explicit(&x->seek_gen, memory_order_relaxed);
    uint64_t prev_last = p->last_frame;
    kc_rt_frame_charge(p->rt, p, &st);
    if (!kc_rt_bring_push(&x->ring, &st)) {
        kc_rt_frame_uncharge(p, &st, prev_last);
        atomic_fetch_sub_explicit(&p->buffered, n, memory_order_relaxed);
        atomic_fetch_sub_explicit(&p->rt->buffered, n, memory_order_relaxed);
        return KC_ERR_QUEUE_FULL;
    }
    kc_rt_kick(x);
    return KC_OK;
}

bool kc_rt_part_revoke(kc_rt_part_t *p, bool lost)
{
    unsigned any = 0, head_old = 0;
    for (unsigned i = 0; i < p->nlanes; i++) {
        kc_rt_part_t *x = lane(p, i);
        /* acq_rel pairs with the worker's INCB CAS (acq_rel): whichever comes first in the word's
         * modification order wins, so the returned INCB bit is the exact in-flight answer. */
        unsigned old = atomic_fetch_or_explicit(&x->life, KC_RT_REVOKING | (lost ? KC_RT_LOST : 0),
                                                memory_order_acq_rel);
        any |= old;
        if (!i)
            head_old = old;
    }
    kc_rt_fetch_gen_bump(p->rt);
    if (!(head_old & KC_RT_REVOKING)) {
        atomic_fetch_sub_explicit(&p->rt->nparts, 1, memory_order_relaxed);
        p->lanes_left = p->nlanes - 1;
    }
    for (unsigned i = 0; i < p->nlanes; i++)
        kc_rt_kick(lane(p, i));
    kc_rt_part_unhold(p); /* a held partition still needs its worker for the REVOKE_DONE */
    for (unsigned i = 0; i < p->nlanes; i++)
        kc_rt_gate_closed(lane(p, i));
    return (any & KC_RT_INCB) != 0;
}

void kc_rt_part_free(kc_rt_part_t *p)
{
    kc_rt_t *rt = p->rt;
    /* acquire pairs with the worker's release store of REVOKED: its last writes to p (ring,
     * cur) happen-before we tear p down. */
    unsigned life = atomic_load_explicit(&p->life, memory_order_acquire);
    if (!(life & KC_RT_REVOKED))
        return; /* misuse: not revoked yet; leave it for kc_rt_free */
    if (p->all_prev)
        p->all_prev->all_next = p->all_next;
    else
        rt->parts = p->all_next;
    if (p->all_next)
        p->all_next->all_prev = p->all_prev;
    part_destroy(p);
}

void kc_rt_part_pause(kc_rt_part_t *p)
{
    kc_rt_fetch_gen_bump(p->rt);
    for (unsigned i = 0; i < p->nlanes; i++)
        atomic_store_explicit(&lane(p, i)->paused, true, memory_order_relaxed);
}

void kc_rt_part_resume(kc_rt_part_t *p)
{
    for (unsigned i = 0; i < p->nlanes; i++) {
        atomic_store_explicit(&lane(p, i)->paused, false, memory_order_relaxed);
        kc_rt_kick(lane(p, i)); /* release in kick publishes paused=false to the worker */
    }
}

bool kc_rt_part_fence(kc_rt_part_t *p)
{
    unsigned any = 0;
    for (unsigned i = 0; i < p->nlanes; i++) {
        /* acq_rel: pairs with the gate's CAS (dispatch.h), as kc_rt_part_revoke's fetch_or */
        any |= atomic_fetch_or_explicit(&lane(p, i)->life, KC_RT_FENCED, memory_order_acq_rel);
        kc_rt_gate_closed(lane(p, i));
    }
    return (any & KC_RT_INCB) != 0;
}

void kc_rt_part_unfence(kc_rt_part_t *p)
{
    for (unsigned i = 0; i < p->nlanes; i++) {
        kc_rt_part_t *x = lane(p, i);
        unsigned old =
            atomic_fetch_and_explicit(&x->life, ~(unsigned)KC_RT_FENCED, memory_order_acq_rel);
        if (old & KC_RT_FENCED)
            kc_rt_kick(x); /* the worker gave the partition up at the gate: queue it again */
    }
}

bool kc_rt_part_fenced(const kc_rt_part_t *p)
{
    return (atomic_load_explicit(&p->life, memory_order_relaxed) & KC_RT_FENCED) != 0;
}

void kc_rt_gate_closed(kc_rt_part_t *p)
{
    if (p->rt->o.gate_closed)
        p->rt->o.gate_closed(p->rt->o.wake_ctx, p);
}

bool kc_rt_view_may_start(const kc_records_t *b)
{
    const kc_rt_part_t *p = b->part;
    /* acquire pairs with the acq_rel RMWs that close the gate (revoke, fence, seek), as the
     * gate's own CAS does. The caller synchronised with the view's worker, which wrote p->cur
     * before it handed the view over and does not touch it while it waits. */
    unsigned life = atomic_load_explicit(&p->life, memory_order_acquire);
    return !(life & (KC_RT_REVOKING | KC_RT_FENCED | KC_RT_PARK)) &&
           (life & ~KC_RT_LIFE_FLAGS) == KC_RT_LIFE_GEN(p->cur.seek_gen);
}

bool kc_rt_view_lapsed(const kc_records_t *b)
{
    const kc_rt_part_t *p = b->part;
    return p->rt->o.share && p->cur.lock_deadline > 0 && kc_now_ms() >= p->cur.lock_deadline;
}

int64_t kc_rt_part_committable(const kc_rt_part_t *p)
{
    return atomic_load_explicit(&p->committable, memory_order_acquire);
}

void kc_rt_part_store(kc_rt_part_t *p, int64_t offset)
{
    atomic_store_explicit(&p->committable, offset, memory_order_release);
}

void kc_rt_part_set_start(kc_rt_part_t *p, int64_t offset)
{
    atomic_store_explicit(&p->start_pos, offset, memory_order_relaxed);
}

int64_t kc_rt_part_position(const kc_rt_part_t *p)
{
    int64_t c = kc_rt_part_committable(p);
    return c >= 0 ? c : atomic_load_explicit(&p->start_pos, memory_order_relaxed);
}

bool kc_rt_wake_claim(atomic_int *pending)
{
    /* seq_cst fence: pairs with kc_rt_wake_rearm's (dispatch.h); orders the caller's ring push
     * or frames_drained store before the exchange. */
    atomic_thread_fence(memory_order_seq_cst);
    return !atomic_exchange_explicit(pending, 1, memory_order_acq_rel);
}

void kc_rt_wake_rearm(atomic_int *pending)
{
    /* release: pairs with the claim's acquire (command node reuse); the seq_cst fence pairs with
     * kc_rt_wake_claim's and orders this store before the drain's loads (dispatch.h). */
    atomic_store_explicit(pending, 0, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
}

/*
 * A REVOKE_DONE read from worker A's ring may have been preceded (in happens-before) by a
 * completion naming the same partition on worker B's ring that this pass already read past.
 * Freeing the partition at once would leave B's entry dangling. So a REVOKE_DONE is handed to
 * `fn` only after one more full pass over every ring that started after it was read: by then
 * everything that happened-before it is visible and has been delivered.
 */
unsigned kc_rt_drain_completions(kc_rt_t *rt, void (*fn)(void *ctx, const kc_rt_cmpl_t *c),
                                 void *ctx)
{
    unsigned n = 0;
    /* relaxed: the flag carries no data (the fetcher rereads the counters). Not losing it is the
     * wake protocol's job: frame_freed stores it before the hook's kc_rt_wake_claim fence, and
     * this exchange runs after kc_rt_wake_rearm's. On x86 this xchg is also a full barrier, which
     * used to hide the missing fence on the wake path; nothing may rely on that. */
    if (atomic_exchange_explicit(&rt->frames_drained, false, memory_order_relaxed)) {
        kc_rt_cmpl_t d = {.type = KC_RT_CMPL_DRAINED}; /* memory_budget.c: memory freed by the last
                                                          unref of a frame, on any thread */
        fn(ctx, &d);
        n++;
    }
    for (;;) {
        kc_rt_cmpl_t c;
        for (unsigned i = 0; i < rt->o.workers; i++) {
            while (kc_rt_cring_pop(&rt->w[i].cring, &c)) {
                if (c.type == KC_RT_CMPL_REVOKE_DONE) {
                    c.part->done_next = rt->done_new;
                    rt->done_new = c.part;
                    continue;
                }
                if (c.type == KC_RT_CMPL_LANE_REVOKED) {
                    lane_revoked(c.part);
                    continue;
                }
                if (c.type == KC_RT_CMPL_PARKED) {
                    if (!parked_arrived(c.part))
                        continue;
                    c.part = kc_rt_part_head(c.part);
                }
                fn(ctx, &c);
                n++;
            }
        }
        while (rt->done_ready) {
            kc_rt_part_t *p = rt->done_ready;
            rt->done_ready = p->done_next;
            kc_rt_cmpl_t d = {.type = KC_RT_CMPL_REVOKE_DONE, .part = p};
            fn(ctx, &d);
            n++;
        }
        if (!rt->done_new)
            return n;
        rt->done_ready = rt->done_new;
        rt->done_new = NULL;
    }
}

unsigned kc_rt_workers(const kc_rt_t *rt)
{
    return rt->o.workers;
}

void kc_rt_share_views(kc_rt_t *rt, uint64_t *views)
{
    for (unsigned i = 0; i < rt->o.workers; i++)
        views[i] = atomic_load_explicit(&rt->w[i].share_views, memory_order_relaxed);
}

bool kc_rt_share_posted(kc_rt_t *rt, const uint64_t *views)
{
    for (unsigned i = 0; i < rt->o.workers; i++)
        if (atomic_load_explicit(&rt->w[i].share_posted, memory_order_acquire) < views[i])
            return false;
    return true;
}
