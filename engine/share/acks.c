/* Pending acknowledgements of one share-partition and their wire batches (acks.h). Pure. */
#include "share/acks.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void kc_share_acks_free(kc_share_acks_t *a)
{
    free(a->items);
    memset(a, 0, sizeof *a);
}

#define ACK sizeof(kc_share_ack_t)

static size_t lower_bound(const kc_share_acks_t *a, int64_t offset)
{
    return kc_share_span_lower_bound(a->items, a->n, ACK, offset);
}

/* Room for one more range. */
static bool reserve(kc_share_acks_t *a)
{
    kc_share_ack_t *p = kc_share_span_room(a->items, &a->cap, a->n, 1, ACK, 16);
    if (p)
        a->items = p;
    return p != NULL;
}

kc_err_t kc_share_acks_add(kc_share_acks_t *a, int64_t first, int64_t last,
                           kc_share_ack_type_t type, kc_error_t *err)
{
    if (type < KC_SHARE_ACK_GAP || type > KC_SHARE_ACK_RENEW)
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "acknowledge type %d is none of gap, accept, release, reject, renew",
                       (int)type);
    /* last < INT64_MAX: every "last + 1" below, and a run's length, stay representable. */
    if (first < 0 || last < first || last == INT64_MAX)
        return kc_fail(err, KC_ERR_INVALID_ARG, "acknowledge: bad offset range %lld..%lld",
                       (long long)first, (long long)last);
    /* In offset order (the usual case: one worker per partition at a time) this is the end. */
    size_t i = a->n && a->items[a->n - 1].span.last < first ? a->n : lower_bound(a, first);
    if (i < a->n && a->items[i].span.first <= last) {
        int64_t twice = a->items[i].span.first > first ? a->items[i].span.first : first;
        return kc_fail(err, KC_ERR_STATE, "offset %lld is acknowledged already", (long long)twice);
    }
    int8_t t = (int8_t)type;
    bool join_left = i > 0 && a->items[i - 1].span.last + 1 == first && a->items[i - 1].type == t;
    bool join_right = i < a->n && last + 1 == a->items[i].span.first && a->items[i].type == t;
    if (join_left && join_right) {
        a->items[i - 1].span.last = a->items[i].span.last;
        kc_share_span_remove(a->items, &a->n, ACK, i);
        return KC_OK;
    }
    if (join_left) {
        a->items[i - 1].span.last = last;
        return KC_OK;
    }
    if (join_right) {
        a->items[i].span.first = first;
        return KC_OK;
    }
    if (!reserve(a))
        return kc_fail(err, KC_ERR_NOMEM, "acknowledgements: out of memory");
    kc_share_ack_t x = {{first, last}, t};
    kc_share_span_insert(a->items, &a->n, ACK, i, &x);
    return KC_OK;
}

kc_err_t kc_share_acks_drop(kc_share_acks_t *a, int64_t first, int64_t last, kc_share_acks_t *out,
                            kc_error_t *err)
{
    if (!reserve(a)) /* a split below takes one more range */
        return kc_fail(err, KC_ERR_NOMEM, "acknowledgements: out of memory");
    size_t i = lower_bound(a, first);
    while (i < a->n && a->items[i].span.first <= last) {
        const kc_share_ack_t *x = &a->items[i];
        int64_t lo = x->span.first > first ? x->span.first : first;
        int64_t hi = x->span.last < last ? x->span.last : last;
        kc_err_t rc = kc_share_acks_add(out, lo, hi, (kc_share_ack_type_t)x->type, err);
        if (rc != KC_OK)
            return rc;
        (void)kc_share_span_cut(a->items, &a->n, a->cap, ACK, i, first, last, &i);
    }
    return KC_OK;
}

/* The run of ranges from `start` whose offsets follow each other: its end (exclusive) and its
 * number of offsets. */
static size_t run_end(const kc_share_acks_t *a, size_t start, int64_t *len)
{
    size_t end = start + 1;
    while (end < a->n && a->items[end].span.first == a->items[end - 1].span.last + 1)
        end++;
    *len = a->items[end - 1].span.last - a->items[start].span.first + 1;
    return end;
}

/* A run leaves as one batch with a type per offset when it has several ranges (so several
 * types: ranges of one type are merged) and is short enough; else one batch per range. */
static bool run_per_offset(size_t ranges, int64_t len)
{
    return ranges > 1 && len <= KC_SHARE_ACK_TYPES_MAX;
}

kc_err_t kc_share_acks_take(kc_share_acks_t *a, kc_arena_t *arena, kc_share_ack_batch_t **out,
                            int32_t *n, kc_error_t *err)
{
    *out = NULL;
    *n = 0;
    if (a->n == 0)
        return KC_OK;
    size_t batches = 0, types = 0;
    int64_t len;
    for (size_t s = 0, e; s < a->n; s = e) {
        e = run_end(a, s, &len);
        if (run_per_offset(e - s, len)) {
            batches++;
            types += (size_t)len;
        } else {
            batches += e - s;
            types += e - s;
        }
    }
    kc_share_ack_batch_t *b = kc_arena_calloc(arena, batches, sizeof *b);
    int8_t *t = kc_arena_calloc(arena, types, 1);
    if (!b || !t)
        return kc_fail(err, KC_ERR_NOMEM, "acknowledgements: out of memory");
    size_t k = 0;
    for (size_t s = 0, e; s < a->n; s = e) {
        e = run_end(a, s, &len);
        if (run_per_offset(e - s, len)) {
            kc_share_ack_batch_t *x = &b[k++];
            x->first = a->items[s].span.first;
            x->last = a->items[e - 1].span.last;
            x->types = t;
            x->n_types = (int32_t)len;
            for (size_t r = s; r < e; r++)
                for (int64_t left = a->items[r].span.last - a->items[r].span.first; left >= 0;
                     left--)
                    *t++ = a->items[r].type;
            continue;
        }
        for (size_t r = s; r < e; r++) {
            kc_share_ack_batch_t *x = &b[k++];
            x->first = a->items[r].span.first;
            x->last = a->items[r].span.last;
            x->types = t;
            x->n_types = 1;
            *t++ = a->items[r].type;
        }
    }
    *out = b;
    *n = (int32_t)batches;
    a->n = 0;
    return KC_OK;
}

void kc_share_ack_batches_count(const kc_share_ack_batch_t *b, int32_t n,
                                int64_t counts[KC_SHARE_ACK_TYPES])
{
    for (int32_t i = 0; i < n; i++) {
        int64_t len = b[i].last - b[i].first + 1;
        if (b[i].n_types == 1) {
            if (b[i].types[0] >= 0 && b[i].types[0] < KC_SHARE_ACK_TYPES)
                counts[b[i].types[0]] += len;
            continue;
        }
        for (int32_t j = 0; j < b[i].n_types; j++)
            if (b[i].types[j] >= 0 && b[i].types[j] < KC_SHARE_ACK_TYPES)
                counts[b[i].types[j]]++;
    }
}

bool kc_share_acks_has_renew(const kc_share_acks_t *a)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->items[i].type == KC_SHARE_ACK_RENEW)
            return true;
    return false;
}

void kc_share_acks_drop_renew(kc_share_acks_t *a, int64_t first, int64_t last, kc_share_acks_t *out)
{
    size_t i = lower_bound(a, first);
    while (i < a->n && a->items[i].span.first <= last) {
        const kc_share_ack_t *x = &a->items[i];
        if (x->type != KC_SHARE_ACK_RENEW) {
            i++;
            continue;
        }
        if (out)
            (void)kc_share_acks_add(out, x->span.first > first ? x->span.first : first,
                                    x->span.last < last ? x->span.last : last, KC_SHARE_ACK_RENEW,
                                    NULL);
        (void)reserve(a); /* for a split; without room the renewal past `last` goes too */
        kc_share_span_cut(a->items, &a->n, a->cap, ACK, i, first, last, &i);
    }
}
