/* Records handed out and awaiting their verdicts (held.h). Pure. */
#include "share/held.h"

#include <stdlib.h>
#include <string.h>

void kc_share_held_free(kc_share_held_t *h)
{
    free(h->items);
    memset(h, 0, sizeof *h);
}

#define HOLD sizeof(kc_share_hold_t)

static size_t lower_bound(const kc_share_held_t *h, int64_t offset)
{
    return kc_share_span_lower_bound(h->items, h->n, HOLD, offset);
}

bool kc_share_held_has(const kc_share_held_t *h, int64_t offset, int16_t delivery_count)
{
    size_t i = lower_bound(h, offset);
    return i < h->n && h->items[i].span.first <= offset &&
           h->items[i].delivery_count == delivery_count;
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
    kc_share_hold_t *p = kc_share_span_room(h->items, &h->cap, h->n, more, HOLD, 8);
    if (p)
        h->items = p;
    return p != NULL;
}

/* Takes offsets first..last out of the holds of delivery `count` (-1: of every delivery). A hold
 * that reaches past both ends is split in two, which needs a free slot (the callers grow first);
 * without one (out of memory) the part past `last` is given up too: its verdict will be refused
 * and its records go back to the broker when their lock runs out. */
static void cut(kc_share_held_t *h, int64_t first, int64_t last, int count, int64_t now, seen_t *s)
{
    *s = (seen_t){0};
    size_t i = lower_bound(h, first);
    while (i < h->n && h->items[i].span.first <= last) {
        const kc_share_hold_t *x = &h->items[i];
        if (count >= 0 && x->delivery_count != count) {
            if (x->delivery_count > s->other_max)
                s->other_max = x->delivery_count;
            i++;
            continue;
        }
        int64_t lo = x->span.first > first ? x->span.first : first;
        int64_t hi = x->span.last < last ? x->span.last : last;
        s->matched += hi - lo + 1;
        s->expired = s->expired || now >= x->deadline;
        h->records -= kc_share_span_cut(h->items, &h->n, h->cap, HOLD, i, first, last, &i);
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
    kc_share_hold_t x = {{first, last}, deadline, delivery_count};
    kc_share_span_insert(h->items, &h->n, HOLD, lower_bound(h, first), &x);
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

kc_share_held_verdict_t kc_share_held_check(const kc_share_held_t *h, int64_t first, int64_t last,
                                            int16_t delivery_count, int64_t now, int16_t *count_now)
{
    int64_t matched = 0;
    bool expired = false;
    *count_now = 0;
    for (size_t i = lower_bound(h, first); i < h->n && h->items[i].span.first <= last; i++) {
        const kc_share_hold_t *x = &h->items[i];
        if (x->delivery_count != delivery_count) {
            if (x->delivery_count > *count_now)
                *count_now = x->delivery_count;
            continue;
        }
        int64_t lo = x->span.first > first ? x->span.first : first;
        int64_t hi = x->span.last < last ? x->span.last : last;
        matched += hi - lo + 1;
        expired = expired || now >= x->deadline;
    }
    if (matched != last - first + 1 || *count_now)
        return KC_SHARE_HELD_AGAIN;
    return expired ? KC_SHARE_HELD_EXPIRED : KC_SHARE_HELD_LIVE;
}

void kc_share_held_renew(kc_share_held_t *h, int64_t first, int64_t last, int64_t deadline)
{
    /* Each part held with an earlier deadline is held again, by the same delivery, with the new
     * one (kc_share_held_add replaces it); the new hold's deadline ends the search there. */
    size_t i = lower_bound(h, first);
    while (i < h->n && h->items[i].span.first <= last) {
        const kc_share_hold_t *x = &h->items[i];
        if (x->deadline >= deadline) {
            i++;
            continue;
        }
        int64_t lo = x->span.first > first ? x->span.first : first;
        int64_t hi = x->span.last < last ? x->span.last : last;
        if (kc_share_held_add(h, lo, hi, x->delivery_count, deadline, NULL) != KC_OK)
            return;
        i = lower_bound(h, hi) + 1; /* past the new hold, lo..hi */
    }
}

int64_t kc_share_held_deadline(const kc_share_held_t *h, int64_t offset, int16_t delivery_count)
{
    size_t i = lower_bound(h, offset);
    return i < h->n && h->items[i].span.first <= offset &&
                   h->items[i].delivery_count == delivery_count
               ? h->items[i].deadline
               : -1;
}
