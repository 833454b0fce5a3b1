/*
 * Worker threads: take a ready partition from the run queue, run it (on_assign, batches, the
 * revoke gate), give it back. Owner: each worker owns its kc_rt_worker_t's non-atomic fields and,
 * while it holds the partition's SCHED bit, the partition's worker-owned fields (dispatch.h).
 */
#include <sched.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/thread.h"
#include "batch/batch.h"
#include "rt_internal.h"

/* PAUSED: the callback returned KC_CB_PAUSE (deliver_view); PAUSED_DONE: so, and its batch has
 * nothing left to deliver (deliver_batch): the batch's entry is released unless it is a span
 * with batches still to come (run_batches). Never for a share partition, whose pause goes
 * through share_verdict. SEEKED: a seek made the batch stale; with `paused` set as well when the
 * callback that sought also returned KC_CB_PAUSE or KC_CB_STOP (run_batches then applies the seek
 * and yields). */
typedef enum { DONE, YIELD, REQUEUE, SEEKED, PAUSED, PAUSED_DONE } step_t;

/* The share acknowledgement for an acquired offset that carried no record (the wire's GAP),
 * beside the public verdicts (kc_share_verdict_t). */
#define SHARE_GAP 0

static void post(kc_rt_worker_t *w, const kc_rt_cmpl_t *c)
{
    while (!kc_rt_cring_push(&w->cring, c)) {
        /* Full: the network thread is behind. Wake it and wait; dropping is not an option for
         * REVOKE_DONE, and 1024 slots make this rare. */
        /* While shutting down the network thread may be joining us instead of draining: waiting
         * would deadlock, and kc_rt_free releases whatever the completion would have said.
         * relaxed: the flag publishes nothing (kc_rt_shutdown); this loop rereads it until the
         * store becomes visible, and the join orders everything after. */
        if (atomic_load_explicit(&w->rt->closing, memory_order_relaxed))
            return;
        if (w->rt->o.wake)
            w->rt->o.wake(w->rt->o.wake_ctx);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    /* After the push: a flag-based hook orders the two with kc_rt_wake_claim (dispatch.h). */
    if (w->rt->o.wake)
        w->rt->o.wake(w->rt->o.wake_ctx);
}

void kc_rt_post(kc_rt_worker_t *w, kc_rt_cmpl_type_t type, kc_rt_part_t *p, kc_err_t code,
                int64_t offset)
{
    /* A lane's completions name its head (dispatch.h, "Share lanes"), but for the two that the
     * drain counts per lane. */
    if (p && type != KC_RT_CMPL_PARKED && type != KC_RT_CMPL_LANE_REVOKED)
        p = kc_rt_part_head(p);
    kc_rt_cmpl_t c = {.type = type, .code = code, .part = p, .offset = offset};
    post(w, &c);
}

/* Share groups: the verdict on acquired offsets [first, last] of p, of their delivery with
 * `count`, to the network thread (which queues it in the partition's share session, unless that
 * delivery's lock ran out first). Never dropped while running: a lost verdict leaves the records
 * locked until their acquisition lock runs out. */
static void post_ack(kc_rt_worker_t *w, kc_rt_part_t *p, int64_t first, int64_t last, int16_t count,
                     int ack)
{
    if (first > last)
        return;
    kc_rt_cmpl_t c = {.type = KC_RT_CMPL_SHARE_ACK,
                      .code = KC_OK,
                      .part = kc_rt_part_head(p),
                      .offset = first,
                      .last = last,
                      .ack = (int8_t)ack,
                      .delivery_count = count};
    post(w, &c);
}

/* The acknowledgement of a share piece's records that no view judged (dropped, undecodable, a
 * gap): LAPSED once their lock has surely run out, as a verdict then could not count (and would
 * be reported refused, of records the application never saw). */
static int unjudged_ack(const kc_rt_bref_t *b, int ack)
{
    return b->lock_deadline > 0 && kc_now_ms() >= b->lock_deadline ? KC_RT_SHARE_LAPSED : ack;
}

/* Takes n bytes off p's and the dispatcher's `buffered` (p: a lane's head); returns p's count
 * before, and sets *cross when this takes it below kc_rt_may_fetch's resume mark (share / 2). */
static int64_t drain_bytes(kc_rt_t *rt, kc_rt_part_t *p, int64_t n, bool *cross)
{
    int64_t share = kc_rt_share(rt);
    int64_t pold = atomic_fetch_sub_explicit(&p->buffered, n, memory_order_relaxed);
    atomic_fetch_sub_explicit(&rt->buffered, n, memory_order_relaxed);
    if (rt->o.queued_max_bytes > 0 && pold >= share / 2 && pold - n < share / 2)
        *cross = true;
    return pold;
}

/* A span's batch is delivered and more of the span remain: its bytes leave the partition's count
 * now, as a batch queued alone would have, so a partition whose one response exceeds its share
 * fetches again once what is left falls below the mark instead of after the whole span. The
 * frame stays charged (memory_budget.c): the span's reference holds it to the end. */
static void drain_span_batch(kc_rt_worker_t *w, kc_rt_part_t *p, int64_t size)
{
    /* counted is what the span's undelivered bytes hold, more than a middle batch's size (the
     * last batch takes the rest: cur_batch); the bound only keeps the count from going negative */
    int64_t n = size < p->cur.counted ? size : p->cur.counted;
    bool cross = false;
    drain_bytes(w->rt, kc_rt_part_head(p), n, &cross);
    p->cur.counted -= n;
    if (cross)
        kc_rt_post(w, KC_RT_CMPL_DRAINED, NULL, KC_OK, 0);
}

void kc_rt_release_bref(kc_rt_worker_t *w, kc_rt_part_t *p, kc_rt_bref_t *b)
{
    kc_rt_t *rt = w->rt;
    p = kc_rt_part_head(p); /* a lane's batches are counted on its head (kc_rt_part_push) */
    int64_t n = b->counted;
    /* Tell the fetcher only when crossing a resume threshold (kc_rt_may_fetch's low marks), so
     * the network thread is woken once per drain, not once per batch. The global mark counts
     * frames: their free hook wakes the fetcher (memory_budget.c). */
    bool cross = kc_rt_frame_release(p, b);
    int64_t pold = drain_bytes(rt, p, n, &cross);
    kc_slice_release(&b->raw); /* after the last read of b: the frame may be freed here */
    if (cross)
        kc_rt_post(w, KC_RT_CMPL_DRAINED, NULL, KC_OK, 0);
    if (rt->o.partition_eof && pold == n) /* the last queued batch: delivered up to the end? */
        kc_rt_part_eof_drained(p);
}

/* The partition whose callback this thread is running, NULL outside callbacks: kc_store_offset
 * and kc_position from a partition's own callbacks use it instead of a network-thread round
 * trip. Thread-local, so only this thread touches it. */
static _Thread_local kc_rt_part_t *tl_cb_part;

kc_rt_part_t *kc_rt_own_part(const kc_rt_t *rt, const char *topic, int32_t partition)
{
    kc_rt_part_t *p = tl_cb_part;
    return p && p->rt == rt && p->pub.partition == partition && strcmp(p->pub.topic, topic) == 0
               ? kc_rt_part_head(p)
               : NULL;
}

void kc_rt_cb_enter(kc_rt_worker_t *w, kc_rt_part_t *p)
{
    tl_cb_part = p;
    atomic_store_explicit(&w->cb_part, p, memory_order_relaxed);
    /* release: pairs with the watchdog's acquire load of cb_start_ns, so it reads this cb_part */
    atomic_store_explicit(&w->cb_start_ns, kc_now_ns(), memory_order_release);
}

void kc_rt_cb_exit(kc_rt_worker_t *w)
{
    tl_cb_part = NULL;
    int64_t start = atomic_load_explicit(&w->cb_start_ns, memory_order_relaxed);
    atomic_store_explicit(&w->cb_start_ns, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->busy_ns, kc_now_ns() - start, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->callbacks, 1, memory_order_relaxed);
}

/* Moves the view to the first record at or after p->next_deliver; false at the batch's end. */
static bool peek_first(kc_records_t *b, int64_t from)
{
    while (kc_rt_records_pull(b) == 1) {
        if (b->rec.offset >= from) {
            b->peeked = true;
            return true;
        }
    }
    return false;
}

static void advance(kc_rt_part_t *p, int64_t next)
{
    if (next <= p->next_deliver)
        return;
    p->next_deliver = next;
    if (p->rt->o.auto_store) /* release: pairs with kc_rt_part_committable's acquire */
        atomic_store_explicit(&p->committable, next, memory_order_release);
}

/* Errors about partition p the application hears about through on_event (serialised on a
 * worker). If the event queue is full the completion to the network thread still carries it. */
static void report(kc_rt_t *rt, const kc_rt_part_t *p, const kc_error_t *e)
{
    kc_event_t ev = {
        .type = KC_EVENT_ERROR, .error = e, .topic = p->pub.topic, .partition = p->pub.partition};
    (void)kc_rt_post_event(rt, &ev);
}

void kc_rt_view_handed(kc_records_t *b)
{
    if (!b->share || !b->worker)
        return;
    b->counted = true;
    atomic_fetch_add_explicit(&b->worker->share_views, 1, memory_order_relaxed);
}

/* KC_CB_PAUSE / KC_CB_STOP of a share partition: every lane of it stops (a lane's callback that
 * already started still runs; deliver_view starts no view of a paused lane). The lanes'
 * `paused` flags take this worker's store as they take the network thread's (relaxed: the flag
 * publishes nothing; kc_rt_part_resume's kick publishes the clearing). */
static void pause_lanes(kc_rt_part_t *p)
{
    kc_rt_part_t *h = kc_rt_part_head(p);
    atomic_store_explicit(&h->paused, true, memory_order_relaxed);
    for (unsigned i = 1; i < h->nlanes; i++)
        atomic_store_explicit(&h->lanes[i - 1]->paused, true, memory_order_relaxed);
}

/* A share group's view, after its callback (dispatch.h, kc_rt_opts_t.share): every acquired
 * offset from the delivery floor to the view's end gets the callback's verdict (compacted gaps
 * inside it too) unless kc_share_ack gave it one, so the records' locks are given back now rather
 * than when they run out. CONTINUE and PAUSE accept; RETRY releases (the broker hands the records
 * out again, to any member, with a higher delivery count: redelivering them here would hold their
 * locks); STOP releases and stops the partition as for other consumers. Seeks do not apply to share
 * partitions: the broker decides what is delivered. */
static step_t share_verdict(kc_rt_worker_t *w, kc_rt_part_t *p, kc_records_t *b, kc_cb_result_t res)
{
    while (kc_records_next(b)) /* records of the view the callback did not read: the same */
        ;
    if (res == KC_RT_CB_LAPSED && !b->counted) { /* pull mode did not hand it out */
        post_ack(w, p, p->next_deliver, b->next_offset - 1, b->delivery_count, KC_RT_SHARE_LAPSED);
        advance(p, b->next_offset);
        return DONE;
    }
    int ack = res == KC_CB_CONTINUE || res == KC_CB_PAUSE ? KC_SHARE_ACCEPT : KC_SHARE_RELEASE;
    int64_t from = p->next_deliver;
    for (uint32_t i = 0; i < b->n_picks; i++) { /* kc_share_ack's, between the implicit runs */
        post_ack(w, p, from, b->picks[i].offset - 1, b->delivery_count, ack);
        post_ack(w, p, b->picks[i].offset, b->picks[i].offset, b->delivery_count,
                 b->picks[i].verdict);
        from = b->picks[i].offset + 1;
    }
    post_ack(w, p, from, b->next_offset - 1, b->delivery_count, ack);
    if (b->counted) { /* a view nobody polled (pull mode, given back) was never counted */
        atomic_fetch_add_explicit(&w->share_posted, 1, memory_order_release);
        /* Again after the count: a drain that ran between the last push's wake-up and the
         * increment took the verdicts but saw the barrier closed; this wake-up re-checks it. */
        if (w->rt->o.wake)
            w->rt->o.wake(w->rt->o.wake_ctx);
    }
    advance(p, b->next_offset);
    if (res == KC_CB_STOP || res == KC_CB_PAUSE)
        pause_lanes(p);
    if (res == KC_CB_STOP) {
        kc_error_t e;
        kc_fail(&e, KC_ERR_STATE,
                "%s[%d]: on_records returned KC_CB_STOP at offset %lld; its records were "
                "released and the partition is stopped until kc_resume",
                p->pub.topic, p->pub.partition, (long long)b->first_offset);
        report(w->rt, p, &e);
        kc_rt_post(w, KC_RT_CMPL_STOPPED, p, KC_ERR_STATE, b->first_offset);
        return YIELD;
    }
    if (res == KC_CB_PAUSE) {
        kc_rt_post(w, KC_RT_CMPL_PAUSED, p, KC_OK, 0);
        return YIELD;
    }
    return DONE;
}

/* One callback over one view of the open batch. */
static step_t deliver_view(kc_rt_worker_t *w, kc_rt_part_t *p, kc_records_t *b)
{
    kc_rt_t *rt = w->rt;
    /* The view's records come from p->cur: it may enter the gate only while the partition's
     * seek generation is still the one that batch was pushed under (dispatch.h). */
    unsigned gen = KC_RT_LIFE_GEN(p->cur.seek_gen);
    unsigned exp = gen | KC_RT_ACTIVE;
    if (atomic_load_explicit(&rt->stopping, memory_order_relaxed))
        return YIELD;
    /* A share lane's sibling returned KC_CB_PAUSE / KC_CB_STOP (pause_lanes): no view starts
     * after that, not even of the batch this lane has open (it stays in p->cur until resumed). */
    if (rt->o.share && atomic_load_explicit(&p->paused, memory_order_relaxed))
        return YIELD;
    /* The gate: fails once REVOKING or FENCED is set (YIELD: the view stays in p->cur and is
     * delivered from next_deliver on after kc_rt_part_unfence), or once a seek bumped the
     * generation after p->cur was pushed (the view is stale: dropped by the next
     * kc_rt_part_apply_seek). acq_rel pairs with kc_rt_part_revoke's and kc_rt_part_fence's
     * fetch_or and kc_rt_part_seek's fetch_add; acquire on failure
     * makes the seek's seek_gen and seek_to visible to apply_seek. */
    if (!atomic_compare_exchange_strong_explicit(&p->life, &exp, gen | KC_RT_INCB,
                                                 memory_order_acq_rel, memory_order_acquire))
        return (exp & KC_RT_LIFE_FLAGS) == KC_RT_ACTIVE ? SEEKED : YIELD;
    b->left = rt->o.max_records;
    b->returned = 0;
    b->n_picks = 0;
    b->counted = false;
    b->first_offset = b->rec.offset;
    b->next_offset = b->rec.offset;
    if (rt->o.share && !rt->o.gate_closed) /* pull mode counts at kc_poll (kc_rt_view_handed) */
        kc_rt_view_handed(b);
    kc_rt_cb_enter(w, p);
    kc_cb_result_t res = rt->o.cbs.on_records(rt->o.cbs.opaque, &kc_rt_part_head(p)->pub, b);
    kc_rt_cb_exit(w);
    atomic_fetch_and_explicit(&p->life, ~KC_RT_INCB, memory_order_acq_rel);
    atomic_fetch_add_explicit(&w->records, b->returned, memory_order_relaxed);
    if (rt->o.share)
        return share_verdict(w, p, b, res);
    /* kc_seek from inside the callback: nothing more of this view or batch, no advance. A pause
     * or stop returned with it holds all the same (run_batches applies the seek and yields):
     * the partition waits at the seek's target for kc_resume, as Java's seek() and pause()
     * together leave it. */
    bool seeked = atomic_load_explicit(&p->seek_gen, memory_order_acquire) != p->seen_gen;
    if (res == KC_CB_RETRY && !seeked)
        return REQUEUE; /* next_deliver unchanged: the same records come again */
    if (res == KC_CB_STOP) {
        atomic_store_explicit(&p->paused, true, memory_order_relaxed);
        kc_error_t e;
        kc_fail(&e, KC_ERR_STATE,
                "%s[%d]: on_records returned KC_CB_STOP at offset %lld%s; the "
                "partition is stopped until kc_resume",
                p->pub.topic, p->pub.partition, (long long)b->first_offset,
                seeked ? " after a seek, where it resumes" : "");
        report(rt, p, &e);
        kc_rt_post(w, KC_RT_CMPL_STOPPED, p, KC_ERR_STATE, b->first_offset);
        return seeked ? SEEKED : YIELD;
    }
    if (seeked) {
        if (res == KC_CB_PAUSE) {
            atomic_store_explicit(&p->paused, true, memory_order_relaxed);
            kc_rt_post(w, KC_RT_CMPL_PAUSED, p, KC_OK, 0);
        }
        return SEEKED;
    }
    while (kc_records_next(b)) /* records of the view the callback did not read count as done */
        ;
    advance(p, b->next_offset);
    if (res == KC_CB_PAUSE) {
        atomic_store_explicit(&p->paused, true, memory_order_relaxed);
        kc_rt_post(w, KC_RT_CMPL_PAUSED, p, KC_OK, 0);
        return PAUSED;
    }
    return DONE;
}

/* Delivers batch c of p->cur (cur_batch) from p->next_deliver on, in views of max_records. DONE
 * when exhausted. A share partition's acquisition deadline is read from p->cur itself, which
 * share_renew.c moves meanwhile (a share partition's cur is never a span: c is a copy of it). */
static step_t deliver_batch(kc_rt_worker_t *w, kc_rt_part_t *p, const kc_rt_bref_t *c)
{
    kc_rt_t *rt = w->rt;
    kc_records_t *b = &w->view;
    *b = (kc_records_t){.part = p,
                        .dec = &rt->o.decoder,
                        .dctx = w->dctx,
                        .facts = {.leader_epoch = -1}, /* for a decoder plug that does not say */
                        .broker = c->broker,
                        .delivery_count = c->delivery_count,
                        .share = rt->o.share,
                        .share_last = c->last_offset,
                        .picks = w->picks,
                        .worker = w};
    kc_err_t rc = rt->o.decoder.open(w->dctx, &p->pub, c, &b->facts, &b->errinfo);
    if (rc != KC_OK) {
        /* A batch that cannot be decoded is skipped, not retried forever: the position moves
         * past it and the error is reported (once: by the first piece of a batch cut over share
         * lanes, which all fail alike). */
        if (!c->split_tail) {
            report(rt, p, &b->errinfo);
            kc_rt_post(w, KC_RT_CMPL_ERROR, p, rc, c->base_offset);
        }
        if (rt->o.share) /* it will not decode any better for another member */
            post_ack(w, p, c->base_offset, c->last_offset, c->delivery_count,
                     unjudged_ack(&p->cur, KC_SHARE_REJECT));
        advance(p, c->last_offset + 1);
        return DONE;
    }
    /* The engine's first offset: a batch fetched after a seek into its middle starts before the
     * position, and those records are not delivered. */
    int64_t from = p->next_deliver > c->base_offset ? p->next_deliver : c->base_offset;
    bool lapsed = false, paused = false;
    while (peek_first(b, from)) {
        /* Share groups: no view starts once its records' lock has surely run out (a callback
         * before it outlasted the lock, or the queue was long): the broker has handed them out
         * again, to this member or another, and a verdict on them would not count. */
        if (rt->o.share && p->cur.lock_deadline > 0 && kc_now_ms() >= p->cur.lock_deadline) {
            lapsed = true;
            break;
        }
        step_t s = deliver_view(w, p, b);
        /* Paused with records of the batch still to come: they wait in p->cur for the resume.
         * With none, the batch ends here: kept, it would keep its whole response frame alive
         * (unless later batches of its span keep it anyway)
         * (memory_budget.c) for as long as the partition stays paused, which may be for good
         * (the CLI's -e pauses each partition at its end), and enough such frames stop all
         * fetching at queued.max.bytes. */
        if (s == PAUSED && !peek_first(b, p->next_deliver) && b->err == KC_OK) {
            paused = true;
            break;
        }
        if (s == PAUSED)
            return YIELD;
        if (s != DONE)
            return s;
        if (b->err != KC_OK)
            break;
        from = p->next_deliver;
    }
    if (b->err != KC_OK) {
        report(rt, p, &b->errinfo);
        kc_rt_post(w, KC_RT_CMPL_ERROR, p, b->err, c->base_offset);
    }
    /* Share groups: the acquired offsets past the last view: the records of views that lapsed,
     * a decode error's rest, or a gap. */
    if (rt->o.share) {
        int ack = lapsed ? KC_RT_SHARE_LAPSED
                         : unjudged_ack(&p->cur, b->err != KC_OK ? KC_SHARE_REJECT : SHARE_GAP);
        post_ack(w, p, p->next_deliver, c->last_offset, c->delivery_count, ack);
    }
    advance(p, c->last_offset + 1); /* past a compacted tail too */
    return paused ? PAUSED_DONE : DONE;
}

/* A revoked partition's queued batches: released unread (share groups: given back). */
static void drop_queued(kc_rt_worker_t *w, kc_rt_part_t *p)
{
    kc_rt_t *rt = w->rt;
    kc_rt_bref_t b;
    /* Share groups: acquired records never delivered go back to the broker (RELEASE), for
     * another member to take now instead of after their lock ran out. */
    if (p->have_cur) {
        if (rt->o.share)
            post_ack(
                w, p, p->next_deliver > p->cur.base_offset ? p->next_deliver : p->cur.base_offset,
                p->cur.last_offset, p->cur.delivery_count, unjudged_ack(&p->cur, KC_SHARE_RELEASE));
        kc_rt_release_bref(w, p, &p->cur);
        p->have_cur = false;
    }
    while (kc_rt_bring_pop(&p->ring, &b)) {
        if (rt->o.share)
            post_ack(w, p, b.base_offset, b.last_offset, b.delivery_count,
                     unjudged_ack(&b, KC_SHARE_RELEASE));
        kc_rt_release_bref(w, p, &b);
    }
}

/* The rebalance gate's worker half: drop, on_revoke/on_lost, REVOKED, REVOKE_DONE. After the
 * completion is posted the network thread may free p: no access to p after it. */
static void do_revoke(kc_rt_worker_t *w, kc_rt_part_t *p, unsigned life)
{
    kc_rt_t *rt = w->rt;
    drop_queued(w, p);
    if (p->assigned_cb_done) {
        void (*cb)(void *, kc_part_t *) = rt->o.cbs.on_revoke;
        if ((life & KC_RT_LOST) && rt->o.cbs.on_lost)
            cb = rt->o.cbs.on_lost; /* as in Java: lost falls back to revoked when unset */
        if (cb) {
            kc_rt_cb_enter(w, p);
            cb(rt->o.cbs.opaque, &p->pub);
            kc_rt_cb_exit(w);
        }
    }
    /* release: pairs with kc_rt_part_free's acquire */
    atomic_fetch_or_explicit(&p->life, KC_RT_REVOKED, memory_order_release);
    kc_rt_post(w, KC_RT_CMPL_REVOKE_DONE, p, KC_OK, 0);
}

/* The batch of p->cur to deliver next: p->cur itself, or the batch of a span (kc_rt_bref_t.span)
 * that starts cur_at bytes in, with its own offsets from its header (its first offset no lower
 * than the span's, which the engine set at the position). The span's last batch takes the rest of
 * its bytes, as does one whose header is unreadable (its decoder then reports it). *size: its
 * bytes. */
static kc_rt_bref_t cur_batch(const kc_rt_part_t *p, size_t *size)
{
    kc_rt_bref_t one = p->cur;
    if (one.span) {
        one.span = false;
        one.raw.ptr += p->cur_at;
        one.raw.len -= p->cur_at;
        size_t n;
        int64_t base, last;
        if (kc_batch_first(one.raw.ptr, one.raw.len, &n, &base, &last)) {
            if (base > one.base_offset)
                one.base_offset = base;
            if (n < one.raw.len && last < one.last_offset) {
                one.raw.len = n;
                /* one wholly below the span's start delivers nothing and moves to the start */
                one.last_offset = last >= one.base_offset ? last : one.base_offset - 1;
            }
        }
    }
    *size = one.raw.len;
    return one;
}

/* Makes the partition's next queued batch p->cur, releasing those fetched before the last seek on
 * the way; false when none is left. */
static bool take_next(kc_rt_worker_t *w, kc_rt_part_t *p)
{
    while (kc_rt_bring_pop(&p->ring, &p->cur)) {
        /* A batch of a NEWER generation was pushed after a seek that landed after the caller's
         * apply_seek: it was fetched from the new position, so apply that seek now and deliver
         * it (dropping it would lose its records: the floor then moves to the target and the
         * next batch starts after them). Only a batch of an OLDER generation than the one
         * applied was fetched before the last seek. Signed difference: seek_gen wraps. */
        if ((int32_t)(p->cur.seek_gen - p->seen_gen) > 0)
            kc_rt_part_apply_seek(w, p); /* have_cur is false: cur is left alone */
        if (p->cur.seek_gen != p->seen_gen) {
            kc_rt_release_bref(w, p, &p->cur);
            continue;
        }
        p->have_cur = true;
        p->cur_at = 0;
        /* A share partition's batches are acquired ranges in the broker's order, which goes
         * back for redelivered records: the floor is each batch's own start. */
        if (w->rt->o.share)
            p->next_deliver = p->cur.base_offset;
        return true;
    }
    return false;
}

/* A paused partition's seek: applied now, and the batches queued from before it released, so that
 * they (and their frames) are not kept for as long as the pause lasts; the first one fetched after
 * it waits in p->cur. A share partition has no seeks. */
static void seek_while_paused(kc_rt_worker_t *w, kc_rt_part_t *p)
{
    if (!w->rt->o.share && kc_rt_part_apply_seek(w, p))
        take_next(w, p);
}

static step_t run_batches(kc_rt_worker_t *w, kc_rt_part_t *p)
{
    kc_rt_t *rt = w->rt;
    for (unsigned n = 0; n < rt->o.quantum; n++) {
        kc_rt_part_apply_seek(w, p);
        if (!p->have_cur && !take_next(w, p))
            return DONE;
        size_t size;
        kc_rt_bref_t one = cur_batch(p, &size);
        step_t s = deliver_batch(w, p, &one);
        if (s == SEEKED) {
            if (atomic_load_explicit(&p->paused, memory_order_relaxed)) { /* with it */
                seek_while_paused(w, p);
                return YIELD;
            }
            continue; /* the next turn applies it */
        }
        if (s != DONE && s != PAUSED_DONE)
            return s;
        /* The entry is released with its last batch: it holds the span's only frame reference.
         * So a pause at the end of a span's middle batch keeps the rest of the span (and its
         * frame) for the resume, as a pause mid-batch does. */
        p->cur_at += size;
        if (p->cur_at >= p->cur.raw.len) {
            kc_rt_release_bref(w, p, &p->cur);
            p->have_cur = false;
        } else {
            drain_span_batch(w, p, (int64_t)size);
        }
        if (s == PAUSED_DONE)
            return YIELD;
    }
    return REQUEUE; /* quantum used: back of the queue, so other partitions get a turn */
}

/* Runs p until it has nothing to do (or must yield). Returns with p given up. */
static void run_partition(kc_rt_worker_t *w, kc_rt_part_t *p)
{
    kc_rt_t *rt = w->rt;
    atomic_store_explicit(&p->last_worker, (int)w->id, memory_order_relaxed);
    for (;;) {
        /* acquire: pairs with kick's release, making the kicker's ring push / state visible. */
        atomic_fetch_and_explicit(&p->sched, ~KC_RT_DIRTY, memory_order_acquire);
        if (atomic_load_explicit(&rt->stopping, memory_order_relaxed))
            return; /* shutting down: SCHED stays set, nothing runs this partition again */
        if (p->is_control) {
            kc_rt_run_events(w);
        } else {
            unsigned life = atomic_load_explicit(&p->life, memory_order_acquire);
            if (life & KC_RT_REVOKING) {
                if (life & KC_RT_REVOKED)
                    return;              /* SCHED stays set: nobody kicks a revoked partition */
                if (life & KC_RT_PARK) { /* the group callback comes before on_revoke */
                    drop_queued(w, p);
                    kc_rt_post(w, KC_RT_CMPL_PARKED, p, KC_OK, 0);
                    return; /* parked: SCHED is the network thread's (dispatch.h) */
                }
                if (p->head) { /* a lane: nothing of the partition is touched after the post */
                    drop_queued(w, p);
                    atomic_fetch_or_explicit(&p->life, KC_RT_REVOKED, memory_order_relaxed);
                    kc_rt_post(w, KC_RT_CMPL_LANE_REVOKED, p, KC_OK, 0);
                    return; /* SCHED stays set, as for a revoked partition */
                }
                /* acquire: pairs with lane_revoked's release store (dispatch.c) */
                if (p->nlanes == 1 || atomic_load_explicit(&p->lanes_done, memory_order_acquire)) {
                    do_revoke(w, p, life);
                    return;
                }
                drop_queued(w, p); /* on_revoke waits for the lanes: give SCHED up below */
            } else if (!p->assigned_cb_done) {
                p->assigned_cb_done = true;
                if (rt->o.cbs.on_assign) {
                    kc_rt_cb_enter(w, p);
                    rt->o.cbs.on_assign(rt->o.cbs.opaque, &p->pub);
                    kc_rt_cb_exit(w);
                }
                if (p->nlanes > 1) {
                    /* release: on_assign's writes (kc_part_t.app) before any lane's record */
                    atomic_store_explicit(&p->lanes_go, true, memory_order_release);
                    for (unsigned i = 1; i < p->nlanes; i++)
                        kc_rt_kick(p->lanes[i - 1]);
                }
                continue; /* look again: a revoke or a park may have come meanwhile */
            } else if (life & KC_RT_PARK) { /* after on_assign, before any record */
                kc_rt_post(w, KC_RT_CMPL_PARKED, p, KC_OK, 0);
                return; /* parked: SCHED is the network thread's (dispatch.h) */
            } else if (p->head && !atomic_load_explicit(&p->head->lanes_go, memory_order_acquire)) {
                /* a lane before its head's on_assign: idle until the head's kick */
            } else if (atomic_load_explicit(&p->paused, memory_order_relaxed)) {
                /* Paused (the application, KC_CB_PAUSE/STOP): nothing runs until kc_resume's
                 * kick; a seek made meanwhile (its kick brings us here) takes effect now. */
                seek_while_paused(w, p);
            } else if (!(life & KC_RT_FENCED) && run_batches(w, p) == REQUEUE) {
                /* (Self-fenced: nothing runs until the fence is lifted with a kick; the gate
                 * checks FENCED again per callback.) Its quantum used: back of the queue. */
                kc_rt_runq_push(&rt->rq, p); /* still SCHED: we hand it to the queue */
                return;
            }
        }
        unsigned exp = KC_RT_SCHED;
        /* release: our writes to p's worker-owned fields happen-before the next worker's
         * acquire of the SCHED bit. Fails when DIRTY was set meanwhile: look again. */
        if (atomic_compare_exchange_strong_explicit(&p->sched, &exp, 0, memory_order_acq_rel,
                                                    memory_order_acquire))
            return;
    }
}

/* kc_worker_id: the id of the worker this thread is, -1 on every other thread. Set once when the
 * thread starts and never changed: a thread-local, so reading it needs no synchronisation.
 * Callbacks run only on workers, so "am I inside a callback" is "am I a worker"
 * (kc_rt_in_worker). */
static _Thread_local int tl_worker_id = -1;

KC_API int kc_worker_id(void)
{
    return tl_worker_id;
}

bool kc_rt_in_worker(void)
{
    return tl_worker_id >= 0;
}

void *kc_rt_worker_main(void *arg)
{
    kc_rt_worker_t *w = arg;
    tl_worker_id = (int)w->id;
    kc_thread_name("kc-worker-%u", w->id);
    kc_log_bind(w->rt->o.log);
    kc_rt_part_t *p;
    bool had = false;
    while ((p = kc_rt_runq_pop(&w->rt->rq, had))) {
        had = true;
        run_partition(w, p);
    }
    return NULL;
}
