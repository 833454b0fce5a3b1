/* Sorted, disjoint runs of offsets at the start of larger elements (spans.h). Pure. */
#include "share/spans.h"

#include <stdlib.h>
#include <string.h>

size_t kc_share_span_lower_bound(const void *items, size_t n, size_t size, int64_t offset)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const kc_share_span_t *x = (const void *)((const char *)items + mid * size);
        if (x->last < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void *kc_share_span_room(void *items, size_t *cap, size_t n, size_t more, size_t size,
                         size_t initial)
{
    if (n + more <= *cap)
        return items;
    size_t c = *cap ? *cap * 2 : initial;
    while (c < n + more)
        c *= 2;
    void *p = realloc(items, c * size);
    if (p)
        *cap = c;
    return p;
}

void kc_share_span_insert(void *items, size_t *n, size_t size, size_t i, const void *elem)
{
    char *at = (char *)items + i * size;
    memmove(at + size, at, (*n - i) * size);
    memcpy(at, elem, size);
    (*n)++;
}

void kc_share_span_remove(void *items, size_t *n, size_t size, size_t i)
{
    char *at = (char *)items + i * size;
    memmove(at, at + size, (*n - i - 1) * size);
    (*n)--;
}

int64_t kc_share_span_cut(void *items, size_t *n, size_t cap, size_t size, size_t i, int64_t first,
                          int64_t last, size_t *next)
{
    kc_share_span_t *x = kc_share_span_at(items, size, i);
    int64_t lo = x->first > first ? x->first : first;
    int64_t hi = x->last < last ? x->last : last;
    int64_t lost = hi - lo + 1;
    bool left = x->first<first, right = x->last> last;
    if (left && right) {
        if (*n < cap) { /* the free slot takes the right part */
            kc_share_span_insert(items, n, size, i + 1, x);
            kc_share_span_at(items, size, i + 1)->first = last + 1;
        } else {
            lost += x->last - last;
        }
        x->last = first - 1;
        *next = *n; /* nothing of first..last is past this element */
    } else if (left) {
        x->last = first - 1;
        *next = i + 1;
    } else if (right) {
        x->first = last + 1;
        *next = *n; /* it reached past last */
    } else {
        kc_share_span_remove(items, n, size, i);
        *next = i;
    }
    return lost;
}
