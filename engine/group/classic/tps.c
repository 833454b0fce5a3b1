/* Name-keyed partition sets for the classic member. Owner: the holder of the set (the network
 * thread for the classic member); no shared state. */
#include "group/classic/tps.h"

#include <stdlib.h>
#include <string.h>

#include "group/classic/assign/assign_int.h"

static int cmp_key(const char *t, int32_t p, const kc_ctp_t *b)
{
    int c = kc_jstr_cmp(t, b->topic);
    if (c)
        return c;
    return p < b->partition ? -1 : p > b->partition;
}

/* Index of the first item not below (t, p). */
static size_t lower(const kc_ctps_t *s, const char *t, int32_t p)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_key(t, p, &s->items[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void kc_ctps_clear(kc_ctps_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->items[i].topic);
    s->n = 0;
}

void kc_ctps_free(kc_ctps_t *s)
{
    kc_ctps_clear(s);
    free(s->items);
    s->items = NULL;
    s->cap = 0;
}

kc_err_t kc_ctps_add(kc_ctps_t *s, const char *topic, int32_t len, int32_t partition)
{
    size_t n = len < 0 ? strlen(topic) : (size_t)len;
    char *t = malloc(n + 1);
    if (!t)
        return KC_ERR_NOMEM;
    memcpy(t, topic, n);
    t[n] = 0;
    size_t i = lower(s, t, partition);
    if (i < s->n && cmp_key(t, partition, &s->items[i]) == 0) {
        free(t);
        return KC_OK;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        kc_ctp_t *p = realloc(s->items, cap * sizeof(*p));
        if (!p) {
            free(t);
            return KC_ERR_NOMEM;
        }
        s->items = p;
        s->cap = cap;
    }
    memmove(&s->items[i + 1], &s->items[i], (s->n - i) * sizeof(*s->items));
    s->items[i].topic = t;
    s->items[i].partition = partition;
    s->n++;
    return KC_OK;
}

bool kc_ctps_contains(const kc_ctps_t *s, const char *topic, int32_t partition)
{
    size_t i = lower(s, topic, partition);
    return i < s->n && cmp_key(topic, partition, &s->items[i]) == 0;
}

bool kc_ctps_equal(const kc_ctps_t *a, const kc_ctps_t *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (cmp_key(a->items[i].topic, a->items[i].partition, &b->items[i]))
            return false;
    return true;
}

kc_err_t kc_ctps_add_all(kc_ctps_t *s, const kc_ctps_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        kc_err_t rc = kc_ctps_add(s, b->items[i].topic, -1, b->items[i].partition);
        if (rc)
            return rc;
    }
    return KC_OK;
}

kc_err_t kc_ctps_copy(kc_ctps_t *dst, const kc_ctps_t *src)
{
    kc_ctps_clear(dst);
    return kc_ctps_add_all(dst, src);
}

kc_err_t kc_ctps_diff(kc_ctps_t *dst, const kc_ctps_t *a, const kc_ctps_t *b)
{
    kc_ctps_clear(dst);
    for (size_t i = 0; i < a->n; i++) {
        if (kc_ctps_contains(b, a->items[i].topic, a->items[i].partition))
            continue;
        kc_err_t rc = kc_ctps_add(dst, a->items[i].topic, -1, a->items[i].partition);
        if (rc)
            return rc;
    }
    return KC_OK;
}

void kc_ctps_remove_all(kc_ctps_t *s, const kc_ctps_t *b)
{
    size_t w = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (kc_ctps_contains(b, s->items[i].topic, s->items[i].partition))
            free(s->items[i].topic);
        else
            s->items[w++] = s->items[i];
    }
    s->n = w;
}
