/* Sorted (topic, partition) sets. Owner: the holder of each set (network thread in engine/). */
#include "group/tpset.h"

#include <stdlib.h>
#include <string.h>

void kc_tpset_free(kc_tpset_t *s)
{
    free(s->items);
    s->items = NULL;
    s->n = s->cap = 0;
}

static kc_err_t reserve(kc_tpset_t *s, size_t want)
{
    if (want <= s->cap)
        return KC_OK;
    size_t cap = s->cap ? s->cap * 2 : 8;
    while (cap < want)
        cap *= 2;
    kc_gtp_t *p = realloc(s->items, cap * sizeof *p);
    if (!p)
        return KC_ERR_NOMEM;
    s->items = p;
    s->cap = cap;
    return KC_OK;
}

/* Index of the first item >= key. */
static size_t lower_bound(const kc_tpset_t *s, const kc_gtp_t *key)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (kc_gtp_cmp(&s->items[mid], key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

kc_err_t kc_tpset_add(kc_tpset_t *s, const kc_gtopic_t *topic, int32_t partition)
{
    if (!topic) /* a lookup or intern that found none: never an item, which would not compare */
        return KC_ERR_INVALID_ARG;
    kc_gtp_t key = {topic, partition};
    /* Sets are mostly built in order (a decoded assignment, a heartbeat's target): append. */
    size_t i = s->n && kc_gtp_cmp(&s->items[s->n - 1], &key) < 0 ? s->n : lower_bound(s, &key);
    if (i < s->n && kc_gtp_cmp(&s->items[i], &key) == 0)
        return KC_OK;
    kc_err_t rc = reserve(s, s->n + 1);
    if (rc)
        return rc;
    memmove(&s->items[i + 1], &s->items[i], (s->n - i) * sizeof key);
    s->items[i] = key;
    s->n++;
    return KC_OK;
}

bool kc_tpset_contains(const kc_tpset_t *s, const kc_gtopic_t *topic, int32_t partition)
{
    if (!topic) /* a topic the set's table does not know */
        return false;
    kc_gtp_t key = {topic, partition};
    size_t i = lower_bound(s, &key);
    return i < s->n && kc_gtp_cmp(&s->items[i], &key) == 0;
}

bool kc_tpset_equal(const kc_tpset_t *a, const kc_tpset_t *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) /* not memcmp: an item has padding */
        if (a->items[i].topic != b->items[i].topic ||
            a->items[i].partition != b->items[i].partition)
            return false;
    return true;
}

kc_err_t kc_tpset_copy(kc_tpset_t *dst, const kc_tpset_t *src)
{
    kc_err_t rc = reserve(dst, src->n);
    if (rc)
        return rc;
    if (src->n)
        memcpy(dst->items, src->items, src->n * sizeof *src->items);
    dst->n = src->n;
    return KC_OK;
}

kc_err_t kc_tpset_diff(kc_tpset_t *dst, const kc_tpset_t *a, const kc_tpset_t *b)
{
    kc_err_t rc = reserve(dst, a->n);
    if (rc)
        return rc;
    dst->n = 0;
    size_t j = 0;
    for (size_t i = 0; i < a->n; i++) {
        while (j < b->n && kc_gtp_cmp(&b->items[j], &a->items[i]) < 0)
            j++;
        if (j < b->n && kc_gtp_cmp(&b->items[j], &a->items[i]) == 0)
            continue;
        dst->items[dst->n++] = a->items[i];
    }
    return KC_OK;
}

kc_err_t kc_tpset_union(kc_tpset_t *dst, const kc_tpset_t *a, const kc_tpset_t *b)
{
    kc_err_t rc = reserve(dst, a->n + b->n);
    if (rc)
        return rc;
    size_t i = 0, j = 0, n = 0;
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : kc_gtp_cmp(&a->items[i], &b->items[j]);
        if (c <= 0)
            dst->items[n++] = a->items[i++];
        else
            dst->items[n++] = b->items[j++];
        if (c == 0)
            j++;
    }
    dst->n = n;
    return KC_OK;
}

void kc_tpset_intersect(kc_tpset_t *s, const kc_tpset_t *keep)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        if (kc_tpset_contains(keep, s->items[i].topic, s->items[i].partition))
            s->items[n++] = s->items[i];
    s->n = n;
}

void kc_tpset_subtract(kc_tpset_t *s, const kc_tpset_t *b)
{
    size_t n = 0, j = 0;
    for (size_t i = 0; i < s->n; i++) {
        while (j < b->n && kc_gtp_cmp(&b->items[j], &s->items[i]) < 0)
            j++;
        if (j < b->n && kc_gtp_cmp(&b->items[j], &s->items[i]) == 0)
            continue;
        s->items[n++] = s->items[i];
    }
    s->n = n;
}
