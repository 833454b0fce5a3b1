/* Records handed out and awaiting their verdicts (held.h). Pure. */
#include "share/held.h"

#include <stdlib.h>
#include <string.h>

void kc_share_held_free(kc_share_held_t *h)
{
    free(h->items);
    memset(h, 0, sizeof *h);
}

/* The first hold whose last offset is >= offset (h->n when none). */
static size_t lower_bound(const kc_share_held_t *h, int64_t offset)
{
    size_t lo = 0, hi = h->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->items[mid].last < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool kc_share_held_has(const kc_share_held_t *h, int64_t offset, int16_t delivery_count)
{
    size_t i = lower_bound(h, offset);
    return i < h->n && h->items[i].first <= offset && h->items[i].delivery_count == delivery_count;
}

/* What a cut found in [first, last]. */
typedef struct seen {
    int64_t matched;   /* offsets held by the delivery cut */
    bool expired;      /* one of them with its lock run out at `now` */
    int16_t other_max; /* the highest other delivery count holding an offset there (0: none) */
} seen_t;

/* Room for `more` holds beyond n. */
static bool grow(kc_share_held_t *h, size_t more)
{
    if (h->n + more <= h->cap)
        return true;
    size_t cap = h->cap ? h->cap * 2 : 8;
    while (cap < h->n + more)
        cap *= 2;
    kc_share_hold_t *p = realloc(h->items, cap * sizeof *p);
    if (!p)
        return false;
    h->items = p;
    h->cap = cap;
    return true;
}

/* Takes offsets first..last out of the holds of delivery `count` (-1: of every delivery). A hold
 * that reaches past both ends is split in two, which needs a free slot (the callers grow first);
 * without one (out of memory) the part past `last` is given up too: its verdict will be refused
 * and its records go back to the broker when their lock runs out. */
static void cut(kc_share_held_t *h, int64_t first, int64_t last, int count, int64_t now, seen_t *s)
{
    *s = (seen_t){0};
    size_t i = lower_bound(h, first);
    while (i < h->n && h->items[i].first <= last) {
        kc_share_hold_t *x = &h->items[i];
        if (count >= 0 && x->delivery_count != count) {
            if (x->delivery_count > s->other_max)
                s->other_max = x->delivery_count;
            i++;
            continue;
        }
        int64_t lo = x->first > first ? x->first : first;
        int64_t hi = x->last < last ? x->last : last;
        s->matched += hi - lo + 1;
        s->expired = s->expired || now >= x->deadline;
        h->records -= hi - lo + 1;
        bool left = x->first < first;
        bool right = x->last > last;
        if (left && right && h->n == h->cap) {
            h->records -= x->last - last;
            x->last = first - 1;
            return;
        }
        if (left && right) { /* split: the free slot takes the right part */
            memmove(&h->items[i + 2], &h->items[i + 1], (h->n - i - 1) * sizeof *h->items);
            h->items[i + 1] = *x;
            h->items[i + 1].first = last + 1;
            x->last = first - 1;
            h->n++;
            return; /* nothing of [first, last] is past this hold */
        }
        if (left) {
            x->last = first - 1;
            i++;
        } else if (right) {
            x->first = last + 1;
            i++;
        } else {
            memmove(&h->items[i], &h->items[i + 1], (h->n - i - 1) * sizeof *h->items);
            h->n--;
        }
    }
}

kc_err_t kc_share_held_add(kc_share_held_t *h, int64_t first, int64_t last, int16_t delivery_count,
                           int64_t deadline, kc_error_t *err)
{
    if (first < 0 || last < first || last == INT64_MAX)
        return kc_fail(err, KC_ERR_INVALID_ARG, "held records: bad offset range %lld..%lld",
                       (long long)first, (long long)last);
    if (!grow(h, 2)) /* a split by the cut below, and the new hold */
        return kc_fail(err, KC_ERR_NOMEM, "held records: out of memory");
    seen_t s;
    cut(h, first, last, -1, 0, &s); /* an older delivery of the same offsets is over */
    size_t i = lower_bound(h, first);
    memmove(&h->items[i + 1], &h->items[i], (h->n - i) * sizeof *h->items);
    h->items[i] = (kc_share_hold_t){first, last, deadline, delivery_count};
    h->n++;
    h->records += last - first + 1;
    return KC_OK;
}

kc_share_held_verdict_t kc_share_held_take(kc_share_held_t *h, int64_t first, int64_t last,
                                           int16_t delivery_count, int64_t now, int16_t *count_now)
{
    seen_t s;
    (void)grow(h, 1); /* for a split; cut copes without */
    cut(h, first, last, delivery_count, now, &s);
    *count_now = s.other_max;
    if (s.matched != last - first + 1 || s.other_max)
        return KC_SHARE_HELD_AGAIN;
    return s.expired ? KC_SHARE_HELD_EXPIRED : KC_SHARE_HELD_LIVE;
}
