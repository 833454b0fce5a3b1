/*
 * Runs of offsets kept sorted and disjoint in an array, each run (first..last, inclusive) at the
 * start of a larger element that says what the run is: the records a delivery holds (held.h),
 * the acknowledgements not sent yet (acks.h). The search, the growth and the cut are the same
 * for both; only the element differs, so the functions take the element's size.
 *
 * Owner: the array's owner; pure.
 */
#ifndef KC_ENGINE_SHARE_SPANS_H
#define KC_ENGINE_SHARE_SPANS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kc_share_span {
    int64_t first, last; /* inclusive */
} kc_share_span_t;

/* Element i of an array of `size`-byte elements that each start with a kc_share_span_t. */
static inline kc_share_span_t *kc_share_span_at(void *items, size_t size, size_t i)
{
    return (kc_share_span_t *)(void *)((char *)items + i * size);
}

/* The first element whose last offset is >= offset (n when none). */
size_t kc_share_span_lower_bound(const void *items, size_t n, size_t size, int64_t offset);

/* `items` with room for `more` elements beyond n: the array itself, or a larger one (*cap grows
 * by doubling from `initial`) that replaces it. NULL, nothing changed, when out of memory. */
void *kc_share_span_room(void *items, size_t *cap, size_t n, size_t more, size_t size,
                         size_t initial);

/* Puts *elem at index i, moving i.. up one (room reserved). */
void kc_share_span_insert(void *items, size_t *n, size_t size, size_t i, const void *elem);

/* Removes element i. */
void kc_share_span_remove(void *items, size_t *n, size_t size, size_t i);

/* Takes offsets first..last out of element i, which overlaps them: trims it, removes it, or
 * splits it in two when it reaches past both ends. A split takes a free slot (*n < cap); with
 * none, the part past `last` is taken out too. Returns the number of offsets element i lost;
 * *next is where the next element that may overlap first..last is (*n: none). */
int64_t kc_share_span_cut(void *items, size_t *n, size_t cap, size_t size, size_t i, int64_t first,
                          int64_t last, size_t *next);

#endif
