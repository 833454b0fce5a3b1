/*
 * Test harness for the dispatcher: the test's main thread plays the network thread (pushes
 * batches, drains completions, counts wakes). Per-partition checks run inside the callbacks:
 * every record in offset order exactly once, and never two callbacks of one partition at once
 * (an atomic counter incremented on entry). Header-only (tests need no CMake change).
 */
#ifndef KC_TEST_RT_HARNESS_H
#define KC_TEST_RT_HARNESS_H

#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "fake_batch.h"
#include "kc_test.h"
#include "rt_internal.h"

#define H_MAXP 64

typedef struct h_part {
    _Atomic int in_cb; /* callbacks of this partition running now */
    int64_t expect;    /* next offset the callback expects; plain: the callbacks of one
                          partition are serialised, so TSan checks the handoff */
    _Atomic long records;
    _Atomic long batches;
    _Atomic int assigned, revoked, lost;
    _Atomic int cb_after_revoke;
    _Atomic int revoke_saw_inflight;
    _Atomic int sleep_us;     /* per view */
    _Atomic int script;       /* one-shot result to return next: 0 none, else kc_cb_result_t+1 */
    _Atomic long value_bytes; /* sum of delivered value lengths */
    _Atomic int ts_type;      /* of the last view */
    _Atomic int leader_epoch; /* of the last view */
} h_part_t;

typedef struct harness {
    kc_rt_t *rt;
    kc_rt_part_t *p[H_MAXP];
    h_part_t hp[H_MAXP];
    int np;
    int64_t next_push[H_MAXP];
    _Atomic int violations;
    _Atomic int wakes;
    _Atomic int revoke_returned[H_MAXP];
    _Atomic int events, event_overlap, event_in;
    _Atomic int poll_errors;
    int revoke_done[H_MAXP]; /* owner: main thread */
    int paused_cmpl, stopped_cmpl, error_cmpl, drained_cmpl;
    int share_acked[4]; /* share dispatchers: offsets given each verdict (KC_RT_CMPL_SHARE_ACK) */
    int share_lapsed;   /* offsets never delivered, their lock run out (KC_RT_SHARE_LAPSED) */
    int share_count;    /* the delivery count of the last SHARE_ACK */
    /* A test's own step at the end of every on_records, on the worker, after the checks and
     * before the callback returns (NULL: none): e.g. what a callback asks of the network thread. */
    void (*after_view)(struct harness *h, kc_part_t *p);
} harness_t;

static inline int64_t h_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void h_wake(void *ctx)
{
    atomic_fetch_add(&((harness_t *)ctx)->wakes, 1);
}

static inline void h_on_assign(void *opaque, kc_part_t *p)
{
    harness_t *h = opaque;
    p->app = &h->hp[p->partition];
    atomic_fetch_add(&h->hp[p->partition].assigned, 1);
}

static inline kc_cb_result_t h_on_records(void *opaque, kc_part_t *p, kc_records_t *b)
{
    harness_t *h = opaque;
    h_part_t *hp = p->app;
    if (hp != &h->hp[p->partition] || atomic_fetch_add(&hp->in_cb, 1) != 0)
        atomic_fetch_add(&h->violations, 1);
    if (atomic_load(&h->revoke_returned[p->partition]))
        atomic_fetch_add(&hp->cb_after_revoke, 1);
    int us = atomic_load(&hp->sleep_us);
    if (us)
        usleep((useconds_t)us);
    kc_cb_result_t res = KC_CB_CONTINUE;
    int s = atomic_exchange(&hp->script, 0);
    if (s)
        res = (kc_cb_result_t)(s - 1);
    const kc_record_t *r;
    long n = 0;
    while ((r = kc_records_next(b))) {
        if (res == KC_CB_CONTINUE || res == KC_CB_PAUSE) {
            if (kc_record_offset(r) != hp->expect)
                atomic_fetch_add(&h->violations, 1);
            hp->expect = kc_record_offset(r) + 1;
            size_t vl;
            kc_record_value(r, &vl);
            atomic_fetch_add(&hp->value_bytes, (long)vl);
            n++;
        }
    }
    atomic_store(&hp->ts_type, kc_records_timestamp_type(b));
    atomic_store(&hp->leader_epoch, kc_records_leader_epoch(b));
    atomic_fetch_add(&hp->records, n);
    atomic_fetch_add(&hp->batches, 1);
    if (h->after_view)
        h->after_view(h, p);
    atomic_fetch_sub(&hp->in_cb, 1);
    return res;
}

static inline void h_on_revoke(void *opaque, kc_part_t *p)
{
    harness_t *h = opaque;
    h_part_t *hp = &h->hp[p->partition];
    if (atomic_load(&hp->in_cb) != 0)
        atomic_fetch_add(&hp->revoke_saw_inflight, 1);
    atomic_fetch_add(&hp->revoked, 1);
}

static inline void h_on_lost(void *opaque, kc_part_t *p)
{
    harness_t *h = opaque;
    atomic_fetch_add(&h->hp[p->partition].lost, 1);
}

static inline void h_on_event(void *opaque, const kc_event_t *ev)
{
    harness_t *h = opaque;
    if (atomic_fetch_add(&h->event_in, 1) != 0)
        atomic_fetch_add(&h->event_overlap, 1);
    if (ev->type == KC_EVENT_ERROR && ev->error->code == KC_ERR_POLL_EXCEEDED)
        atomic_fetch_add(&h->poll_errors, 1);
    atomic_fetch_add(&h->events, 1);
    atomic_fetch_sub(&h->event_in, 1);
}

static inline kc_rt_opts_t h_opts(harness_t *h, unsigned workers)
{
    kc_rt_opts_t o = {
        .workers = workers,
        .ring_slots = 64,
        .max_records = 1000,
        .queued_max_bytes = 1 << 30,
        .max_poll_interval_ms = 0,
        .auto_store = true,
        .cbs = {.on_assign = h_on_assign,
                .on_records = h_on_records,
                .on_revoke = h_on_revoke,
                .on_lost = h_on_lost,
                .on_event = h_on_event,
                .opaque = h},
        .decoder = fake_decoder(),
        .wake = h_wake,
        .wake_ctx = h,
    };
    return o;
}

static inline void h_start(harness_t *h, const kc_rt_opts_t *o, int np)
{
    kc_error_t e;
    assert_int_equal(kc_rt_new(o, &h->rt, &e), KC_OK);
    h->np = np;
    for (int i = 0; i < np; i++) {
        h->p[i] = kc_rt_part_add(h->rt, "t", i, 0);
        assert_non_null(h->p[i]);
    }
}

static inline void h_cmpl(void *ctx, const kc_rt_cmpl_t *c)
{
    harness_t *h = ctx;
    switch (c->type) {
    case KC_RT_CMPL_REVOKE_DONE:
        h->revoke_done[c->part->pub.partition]++;
        break;
    case KC_RT_CMPL_PAUSED:
        h->paused_cmpl++;
        break;
    case KC_RT_CMPL_STOPPED:
        h->stopped_cmpl++;
        break;
    case KC_RT_CMPL_ERROR:
        h->error_cmpl++;
        break;
    case KC_RT_CMPL_DRAINED:
        h->drained_cmpl++;
        break;
    case KC_RT_CMPL_SHARE_ACK: /* offsets per verdict (0 gap .. 3 reject) */
        if (c->ack == KC_RT_SHARE_LAPSED)
            h->share_lapsed += (int)(c->last - c->offset + 1);
        else
            h->share_acked[c->ack & 3] += (int)(c->last - c->offset + 1);
        h->share_count = c->delivery_count;
        break;
    case KC_RT_CMPL_PARKED: /* test_park handles these itself */
    case KC_RT_CMPL_REBALANCED:
    case KC_RT_CMPL_LANE_REVOKED: /* kc_rt_drain_completions keeps these */
        break;
    }
}

/* Pushes one batch of `count` records (value `vlen` bytes) to partition i if the ring has
 * room; returns whether it did. */
static inline bool h_push(harness_t *h, int i, int count, uint32_t vlen)
{
    kc_rt_bref_t b = fake_batch(h->next_push[i], count, vlen);
    if (kc_rt_part_push(h->p[i], &b) != KC_OK) {
        kc_slice_release(&b.raw);
        return false;
    }
    h->next_push[i] += count;
    return true;
}

/* One Fetch response as the engine hands it over: one frame buffer holding `per` batches of
 * `count` records (value `vlen`) for each partition i with want[i], each pushed as a slice of
 * the frame (one reference each); the frame's own reference is dropped at the end, as the
 * network thread does after decoding. A refused push stops that partition's batches (the next
 * fetch asks again). Returns the frame's size; sets *pushed to the batches taken. */
static inline size_t h_fetch(harness_t *h, const bool *want, int np, int per, int count,
                             uint32_t vlen, int *pushed)
{
    size_t blen = (size_t)count * (12 + vlen), total = 0;
    for (int i = 0; i < np; i++)
        total += want[i] ? (size_t)per * blen : 0;
    *pushed = 0;
    if (total == 0)
        return 0;
    kc_buf_t *f = kc_buf_new(total);
    f->len = total;
    uint8_t *at = f->data;
    for (int i = 0; i < np; i++) {
        if (!want[i])
            continue;
        bool open = true;
        for (int k = 0; k < per; k++, at += blen) {
            kc_rt_bref_t b = fake_batch(h->next_push[i], count, vlen);
            memcpy(at, b.raw.ptr, blen); /* the same bytes, now inside the shared frame */
            kc_slice_release(&b.raw);
            b.raw = kc_slice_make(f, at, blen);
            if (!open || kc_rt_part_push(h->p[i], &b) != KC_OK) {
                kc_slice_release(&b.raw);
                open = false;
                continue;
            }
            h->next_push[i] += count;
            (*pushed)++;
        }
    }
    kc_buf_unref(f);
    return total;
}

/* Waits (draining completions into `fn`) until cond(h) or timeout; returns cond's last value. */
static inline bool h_wait_fn(harness_t *h, void (*fn)(void *, const kc_rt_cmpl_t *),
                             bool (*cond)(harness_t *), int timeout_ms)
{
    int64_t end = h_now_ns() + (int64_t)timeout_ms * 1000000;
    while (!cond(h)) {
        kc_rt_drain_completions(h->rt, fn, h);
        if (h_now_ns() > end)
            return false;
        usleep(1000);
    }
    kc_rt_drain_completions(h->rt, fn, h);
    return true;
}

/* h_wait_fn with the harness's own completion counts. */
static inline bool h_wait(harness_t *h, bool (*cond)(harness_t *), int timeout_ms)
{
    return h_wait_fn(h, h_cmpl, cond, timeout_ms);
}

/* The cmocka set-up and tear-down of a test whose harness is the global H of its file: a fresh
 * harness per case, and its dispatcher shut down and freed after it. */
#define H_SETUP_TEARDOWN(H)                                                                        \
    static int setup(void **state)                                                                 \
    {                                                                                              \
        (void)state;                                                                               \
        H = calloc(1, sizeof *H);                                                                  \
        return H ? 0 : -1;                                                                         \
    }                                                                                              \
    static int teardown(void **state)                                                              \
    {                                                                                              \
        (void)state;                                                                               \
        if (H->rt) {                                                                               \
            kc_rt_shutdown(H->rt, false, 5000);                                                    \
            kc_rt_free(H->rt);                                                                     \
        }                                                                                          \
        free(H);                                                                                   \
        return 0;                                                                                  \
    }

#endif
