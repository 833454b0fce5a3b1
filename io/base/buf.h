/*
 * Refcounted frame buffers: how a Fetch response reaches the workers without copies.
 *
 * The network thread receives each response frame into one kc_buf_t of exactly the frame's size
 * (read the size, then the body into one buffer: no reassembly copies). Decoding the
 * response yields record-batch slices that point into that buffer; each slice handed to a worker
 * holds one reference. The last kc_buf_unref() — on whichever thread — frees the buffer.
 *
 * Threads: any. The count is the only shared field. Increments are relaxed (a reference can only
 * be copied by a thread that already holds one, so no ordering is needed to keep it alive); the
 * decrement is acq_rel: its release half publishes this holder's reads and writes of the buffer,
 * its acquire half, in the last holder, pairs with every earlier holder's release (the decrements
 * form one release sequence), so the free hook and the free come after all of them. on_free and
 * on_free_ctx reach other holders the way the slices do (runtime: the batch ring's fences).
 */
#ifndef KC_BASE_BUF_H
#define KC_BASE_BUF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct kc_buf {
    atomic_uint refcnt;
    size_t len;   /* bytes of data[] in use */
    size_t cap;   /* bytes asked for: the frame's size (the receive path fills data[] to cap) */
    size_t alloc; /* bytes allocated for data[], >= cap (pooled buffers come in size classes) */
    /* Memory accounting of whoever holds the buffer's slices (runtime/memory_budget.c): set once by
     * the thread that hands out the first slice, before any other thread can see the buffer;
     * called by the last kc_buf_unref, on whichever thread, just before the buffer goes. NULL:
     * nobody counts it. `seq` is that owner's number for the buffer. */
    void (*on_free)(void *ctx, const struct kc_buf *b);
    void *on_free_ctx;
    uint64_t seq;
    uint8_t data[]; /* the frame body, 8-byte aligned by malloc */
} kc_buf_t;

/* A view into a kc_buf_t that holds one reference. Owned by whoever holds the slice. */
typedef struct kc_slice {
    kc_buf_t *buf;
    const uint8_t *ptr;
    size_t len;
} kc_slice_t;

/* Buffers of at least KC_BUF_POOL_SMALL_MIN bytes come from and go back to a small process-wide
 * cache of two tiers, below and from KC_BUF_POOL_MIN (buf_pool.c: big frames would otherwise be a
 * fresh mmap, page-faulted byte by byte, each time; mid-sized ones an allocation per round trip).
 * take: a buffer with cap >= `cap` and one reference, NULL when out of memory. give: keeps `b`
 * for reuse or frees it. drain: frees every idle buffer. idle_bytes: what the cache holds, and
 * where `largest` is not NULL the size of its largest buffer (what a next frame can reuse). */
#define KC_BUF_POOL_SMALL_MIN ((size_t)16 << 10)
#define KC_BUF_POOL_MIN       ((size_t)256 << 10)
kc_buf_t *kc_buf_pool_take(size_t cap);
void kc_buf_pool_give(kc_buf_t *b);
void kc_buf_pool_drain(void);
size_t kc_buf_pool_idle_bytes(size_t *largest);

/* A buffer of `cap` bytes with one reference, or NULL when out of memory. */
static inline kc_buf_t *kc_buf_new(size_t cap)
{
    if (cap >= KC_BUF_POOL_SMALL_MIN)
        return kc_buf_pool_take(cap);
    kc_buf_t *b = malloc(sizeof *b + cap);
    if (!b)
        return NULL;
    atomic_init(&b->refcnt, 1);
    b->len = 0;
    b->cap = cap;
    b->alloc = cap;
    b->on_free = NULL;
    b->on_free_ctx = NULL;
    b->seq = 0;
    return b;
}

static inline kc_buf_t *kc_buf_ref(kc_buf_t *b)
{
    atomic_fetch_add_explicit(&b->refcnt, 1, memory_order_relaxed);
    return b;
}

static inline void kc_buf_unref(kc_buf_t *b)
{
    if (b && atomic_fetch_sub_explicit(&b->refcnt, 1, memory_order_acq_rel) == 1) {
        if (b->on_free)
            b->on_free(b->on_free_ctx, b);
        if (b->alloc >= KC_BUF_POOL_SMALL_MIN)
            kc_buf_pool_give(b);
        else
            free(b);
    }
}

/* A slice of `b` taking its own reference. `ptr..ptr+len` must lie inside b->data. */
static inline kc_slice_t kc_slice_make(kc_buf_t *b, const uint8_t *ptr, size_t len)
{
    kc_slice_t s = {kc_buf_ref(b), ptr, len};
    return s;
}

static inline void kc_slice_release(kc_slice_t *s)
{
    kc_buf_unref(s->buf);
    s->buf = NULL;
    s->ptr = NULL;
    s->len = 0;
}

#endif
