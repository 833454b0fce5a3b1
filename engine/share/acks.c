/* Pending acknowledgements of one share-partition and their wire batches (acks.h). Pure. */
#include "share/acks.h"

#include <stdlib.h>
#include <string.h>

void kc_share_acks_free(kc_share_acks_t *a)
{
    free(a->items);
    memset(a, 0, sizeof *a);
}

static int by_offset(const void *x, const void *y)
{
    int64_t a = ((const kc_share_ack_t *)x)->offset, b = ((const kc_share_ack_t *)y)->offset;
    return a < b ? -1 : a > b;
}

kc_err_t kc_share_acks_add(kc_share_acks_t *a, int64_t offset, kc_share_ack_type_t type,
                           kc_error_t *err)
{
    if (type < KC_SHARE_ACK_GAP || type > KC_SHARE_ACK_REJECT)
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "acknowledge type %d is none of gap, accept, "
                       "release, reject",
                       (int)type);
    if (a->n == 0)
        a->sorted = true;
    bool in_order = a->sorted && (a->n == 0 || a->items[a->n - 1].offset < offset);
    if (!in_order) {
        /* Out of order (workers finish in any order): sorted, a duplicate is one search away. */
        if (!a->sorted)
            qsort(a->items, a->n, sizeof *a->items, by_offset);
        a->sorted = true;
        size_t lo = 0, hi = a->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (a->items[mid].offset < offset)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < a->n && a->items[lo].offset == offset)
            return kc_fail(err, KC_ERR_STATE, "offset %lld is acknowledged already",
                           (long long)offset);
        a->sorted = a->items[a->n - 1].offset < offset;
    }
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        kc_share_ack_t *p = realloc(a->items, cap * sizeof *p);
        if (!p)
            return kc_fail(err, KC_ERR_NOMEM, "acknowledgements: out of memory");
        a->items = p;
        a->cap = cap;
    }
    a->items[a->n++] = (kc_share_ack_t){offset, (int8_t)type};
    return KC_OK;
}

kc_err_t kc_share_acks_take(kc_share_acks_t *a, kc_arena_t *arena, kc_share_ack_batch_t **out,
                            int32_t *n, kc_error_t *err)
{
    *out = NULL;
    *n = 0;
    if (a->n == 0)
        return KC_OK;
    if (!a->sorted)
        qsort(a->items, a->n, sizeof *a->items, by_offset);
    a->sorted = true;
    size_t runs = 1;
    for (size_t i = 1; i < a->n; i++)
        if (a->items[i].offset != a->items[i - 1].offset + 1)
            runs++;
    kc_share_ack_batch_t *b = kc_arena_calloc(arena, runs, sizeof *b);
    int8_t *types = kc_arena_calloc(arena, a->n, 1);
    if (!b || !types)
        return kc_fail(err, KC_ERR_NOMEM, "acknowledgements: out of memory");
    size_t k = 0, start = 0;
    for (size_t i = 1; i <= a->n; i++) {
        if (i < a->n && a->items[i].offset == a->items[i - 1].offset + 1)
            continue;
        kc_share_ack_batch_t *x = &b[k++];
        x->first = a->items[start].offset;
        x->last = a->items[i - 1].offset;
        x->types = types + start;
        bool same = true;
        for (size_t j = start; j < i; j++) {
            x->types[j - start] = a->items[j].type;
            same = same && a->items[j].type == a->items[start].type;
        }
        x->n_types = same ? 1 : (int32_t)(i - start);
        start = i;
    }
    *out = b;
    *n = (int32_t)runs;
    a->n = 0;
    return KC_OK;
}

void kc_share_ack_batches_count(const kc_share_ack_batch_t *b, int32_t n, int64_t counts[4])
{
    for (int32_t i = 0; i < n; i++) {
        int64_t len = b[i].last - b[i].first + 1;
        for (int64_t j = 0; j < len; j++) {
            int8_t t = b[i].types[b[i].n_types == 1 ? 0 : j];
            if (t >= 0 && t <= 3)
                counts[t]++;
        }
    }
}
