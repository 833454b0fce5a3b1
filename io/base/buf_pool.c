/*
 * A small cache of frame buffers (kc_buf_t), so a consumer that keeps receiving responses reuses
 * the same memory instead of asking malloc for it each time.
 *
 * Why: glibc serves large sizes with a fresh mmap and returns them with munmap, so every byte of
 * every big response was a page fault on first write: 271k minor faults (0.7 s of system time,
 * more than half the consumer's CPU) for 1 GB of T1 records (perf/README.md "Frame buffer pool").
 * Mid-sized frames (a share group's ShareFetch answers of a few hundred records, 16-256 KiB) come
 * once per round trip, which was the last allocation per round trip a share member made (0.0018
 * per record on SHARE-T2-zstd against the bound of 0.001): they have a tier of their own, so they
 * never take the slots the big frames need nor a big buffer's memory. Frames below
 * KC_BUF_POOL_SMALL_MIN are left to malloc.
 *
 * Threads: any. The network thread takes buffers (kc_buf_new), whichever thread drops the last
 * reference gives them back (often a worker): one mutex around two short arrays. This happens once
 * per response frame, never per record or batch.
 */
#include <pthread.h>
#include <stdlib.h>

#include "base/buf.h"

#define POOL_SLOTS 8

/* One tier: buffers from `min` bytes (to the next tier's). Idle memory is resident memory that
 * holds no records: the fetch budget counts it against queued.max.bytes (kc_buf_pool_idle_bytes,
 * runtime/backpressure.c), and each tier keeps little of it. The big tier's bound takes one
 * buffer of the 32 MiB class (a frame of 24-32 MiB; fetch.max.bytes is 50 MiB by default). */
typedef struct tier {
    size_t min, max_bytes;
    kc_buf_t *slot[POOL_SLOTS];
    size_t n, bytes;
} tier_t;

static struct {
    pthread_mutex_t mu;
    tier_t small, big;
} pool = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .small = {.min = KC_BUF_POOL_SMALL_MIN, .max_bytes = (size_t)2 << 20},
    .big = {.min = KC_BUF_POOL_MIN, .max_bytes = (size_t)32 << 20},
};

static tier_t *tier_of(size_t n)
{
    return n >= KC_BUF_POOL_MIN ? &pool.big : &pool.small;
}

/* Size classes 2^k and 3*2^(k-1) from the tier's least: a frame slightly larger than the last one
 * still fits a pooled buffer, and the unused tail (never touched, so never resident) is under a
 * third. */
static size_t size_class(size_t n)
{
    tier_t *t = tier_of(n);
    size_t c = t->min;
    while (c < n) {
        size_t mid = c + c / 2;
        if (mid >= n)
            return mid;
        c *= 2;
    }
    /* a small tier's buffer stays below the big tier's least, so it comes back to its own tier */
    return t == &pool.small && c >= KC_BUF_POOL_MIN ? KC_BUF_POOL_MIN - 1 : c;
}

kc_buf_t *kc_buf_pool_take(size_t cap)
{
    size_t want = size_class(cap);
    kc_buf_t *b = NULL;
    pthread_mutex_lock(&pool.mu);
    tier_t *t = tier_of(cap);
    size_t best = POOL_SLOTS;
    for (size_t i = 0; i < t->n; i++) /* best fit: the smallest class that holds `cap` */
        if (t->slot[i]->alloc >= cap &&
            (best == POOL_SLOTS || t->slot[i]->alloc < t->slot[best]->alloc))
            best = i;
    if (best < POOL_SLOTS) {
        b = t->slot[best];
        t->slot[best] = t->slot[--t->n];
        t->bytes -= b->alloc;
    }
    pthread_mutex_unlock(&pool.mu);
    if (!b) {
        b = malloc(sizeof *b + want);
        if (!b)
            return NULL;
        b->alloc = want;
    }
    atomic_init(&b->refcnt, 1);
    b->len = 0;
    b->cap = cap;
    b->on_free = NULL;
    b->on_free_ctx = NULL;
    b->seq = 0;
    return b;
}

void kc_buf_pool_give(kc_buf_t *b)
{
    pthread_mutex_lock(&pool.mu);
    tier_t *t = tier_of(b->alloc);
    if (t->n < POOL_SLOTS && t->bytes + b->alloc <= t->max_bytes) {
        t->slot[t->n++] = b;
        t->bytes += b->alloc;
        b = NULL;
    } else if (t->n > 0) {
        /* Full: keep the larger of this one and the smallest pooled one (a larger buffer serves
         * every frame a smaller one does). */
        size_t small = 0;
        for (size_t i = 1; i < t->n; i++)
            if (t->slot[i]->alloc < t->slot[small]->alloc)
                small = i;
        if (t->slot[small]->alloc < b->alloc &&
            t->bytes - t->slot[small]->alloc + b->alloc <= t->max_bytes) {
            kc_buf_t *out = t->slot[small];
            t->bytes += b->alloc - out->alloc;
            t->slot[small] = b;
            b = out;
        }
    }
    pthread_mutex_unlock(&pool.mu);
    free(b);
}

static void drain_tier(tier_t *t)
{
    while (t->n > 0)
        free(t->slot[--t->n]);
    t->bytes = 0;
}

void kc_buf_pool_drain(void)
{
    pthread_mutex_lock(&pool.mu);
    drain_tier(&pool.small);
    drain_tier(&pool.big);
    pthread_mutex_unlock(&pool.mu);
}

size_t kc_buf_pool_idle_bytes(size_t *largest)
{
    pthread_mutex_lock(&pool.mu);
    size_t n = pool.small.bytes + pool.big.bytes;
    if (largest) {
        *largest = 0;
        tier_t *tiers[] = {&pool.small, &pool.big};
        for (size_t k = 0; k < 2; k++)
            for (size_t i = 0; i < tiers[k]->n; i++)
                if (tiers[k]->slot[i]->alloc > *largest)
                    *largest = tiers[k]->slot[i]->alloc;
    }
    pthread_mutex_unlock(&pool.mu);
    return n;
}
