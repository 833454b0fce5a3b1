/*
 * A small cache of large frame buffers (kc_buf_t), so a consumer that keeps receiving big Fetch
 * responses reuses the same memory instead of asking malloc for tens of MiB each time.
 *
 * Why: glibc serves such sizes with a fresh mmap and returns them with munmap, so every byte of
 * every response was a page fault on first write: 271k minor faults (0.7 s of system time, more
 * than half the consumer's CPU) for 1 GB of T1 records (perf/README.md "Frame buffer pool").
 * Small frames (below KC_BUF_POOL_MIN) come from malloc's own arenas, which already reuse memory.
 *
 * Threads: any. The network thread takes buffers (kc_buf_new), whichever thread drops the last
 * reference gives them back (often a worker): one mutex around a short array. This happens once
 * per response frame, never per record or batch.
 */
#include <pthread.h>
#include <stdlib.h>

#include "base/buf.h"

#define POOL_SLOTS 8
/* Idle memory is resident memory the queued.max.bytes cap does not see: keep it within the fixed
 * overhead the memory contract allows (RSS <= queued.max.bytes + 32 MiB), not a multiple of it. */
#define POOL_MAX_BYTES ((size_t)32 << 20)

static struct {
    pthread_mutex_t mu;
    kc_buf_t *slot[POOL_SLOTS];
    size_t n, bytes;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Size classes 2^k and 3*2^(k-1): a frame slightly larger than the last one still fits a pooled
 * buffer, and the unused tail (never touched, so never resident) is under a third. */
static size_t size_class(size_t n)
{
    size_t c = KC_BUF_POOL_MIN;
    while (c < n) {
        size_t mid = c + c / 2;
        if (mid >= n)
            return mid;
        c *= 2;
    }
    return c;
}

kc_buf_t *kc_buf_pool_take(size_t cap)
{
    size_t want = size_class(cap);
    kc_buf_t *b = NULL;
    pthread_mutex_lock(&pool.mu);
    size_t best = POOL_SLOTS;
    for (size_t i = 0; i < pool.n; i++) /* best fit: the smallest class that holds `cap` */
        if (pool.slot[i]->alloc >= cap &&
            (best == POOL_SLOTS || pool.slot[i]->alloc < pool.slot[best]->alloc))
            best = i;
    if (best < POOL_SLOTS) {
        b = pool.slot[best];
        pool.slot[best] = pool.slot[--pool.n];
        pool.bytes -= b->alloc;
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
    if (pool.n < POOL_SLOTS && pool.bytes + b->alloc <= POOL_MAX_BYTES) {
        pool.slot[pool.n++] = b;
        pool.bytes += b->alloc;
        b = NULL;
    } else if (pool.n > 0) {
        /* Full: keep the larger of this one and the smallest pooled one (big frames are what
         * the pool is for). */
        size_t small = 0;
        for (size_t i = 1; i < pool.n; i++)
            if (pool.slot[i]->alloc < pool.slot[small]->alloc)
                small = i;
        if (pool.slot[small]->alloc < b->alloc &&
            pool.bytes - pool.slot[small]->alloc + b->alloc <= POOL_MAX_BYTES) {
            kc_buf_t *out = pool.slot[small];
            pool.bytes += b->alloc - out->alloc;
            pool.slot[small] = b;
            b = out;
        }
    }
    pthread_mutex_unlock(&pool.mu);
    free(b);
}

void kc_buf_pool_drain(void)
{
    pthread_mutex_lock(&pool.mu);
    while (pool.n > 0)
        free(pool.slot[--pool.n]);
    pool.bytes = 0;
    pthread_mutex_unlock(&pool.mu);
}

size_t kc_buf_pool_idle_bytes(void)
{
    pthread_mutex_lock(&pool.mu);
    size_t n = pool.bytes;
    pthread_mutex_unlock(&pool.mu);
    return n;
}
