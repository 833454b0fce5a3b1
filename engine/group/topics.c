/* Interned topics of a group member (group/topics.h). Owner: the member holding the table. */
#include "group/topics.h"

#include <stdlib.h>
#include <string.h>

void kc_gtopics_init_by_id(kc_gtopics_t *t)
{
    memset(t, 0, sizeof *t);
}

void kc_gtopics_init_by_name(kc_gtopics_t *t, kc_gtopics_name_cmp cmp)
{
    memset(t, 0, sizeof *t);
    t->by_name = cmp;
}

void kc_gtopics_free(kc_gtopics_t *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->items[i]->name);
        free(t->items[i]);
    }
    free(t->items);
    t->items = NULL;
    t->n = t->cap = 0;
}

/* Where `key` is or would go; *found when it is there. The key is an id or a NUL-terminated
 * name, as the table is keyed. */
static size_t slot_in(const kc_gtopics_t *t, size_t n, const void *key, bool *found)
{
    size_t lo = 0, hi = n;
    *found = false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const kc_gtopic_t *e = t->items[mid];
        int c = t->by_name ? t->by_name(e->name, key) : memcmp(e->id, key, 16);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t slot(const kc_gtopics_t *t, const void *key, bool *found)
{
    return slot_in(t, t->n, key, found);
}

static bool reserve(kc_gtopics_t *t, size_t want)
{
    if (want <= t->cap)
        return true;
    size_t cap = t->cap ? t->cap * 2 : 8;
    while (cap < want)
        cap *= 2;
    kc_gtopic_t **p = realloc(t->items, cap * sizeof *p);
    if (!p)
        return false;
    t->items = p;
    t->cap = cap;
    return true;
}

/* Inserts `e` at `i`, renumbering the ranks from there: relative order never changes, so sets
 * sorted by rank stay sorted. */
static bool insert(kc_gtopics_t *t, size_t i, kc_gtopic_t *e)
{
    if (!reserve(t, t->n + 1))
        return false;
    memmove(&t->items[i + 1], &t->items[i], (t->n - i) * sizeof *t->items);
    t->items[i] = e;
    t->n++;
    for (size_t k = i; k < t->n; k++)
        t->items[k]->rank = k;
    return true;
}

const kc_gtopic_t *kc_gtopics_find_id(const kc_gtopics_t *t, const uint8_t id[16])
{
    bool found;
    size_t i = t->by_name ? 0 : slot(t, id, &found);
    return !t->by_name && found ? t->items[i] : NULL;
}

const kc_gtopic_t *kc_gtopics_find_name(const kc_gtopics_t *t, const char *name)
{
    bool found;
    size_t i = t->by_name ? slot(t, name, &found) : 0;
    return t->by_name && found ? t->items[i] : NULL;
}

const kc_gtopic_t *kc_gtopics_id(kc_gtopics_t *t, const uint8_t id[16])
{
    if (t->by_name)
        return NULL;
    bool found;
    size_t i = slot(t, id, &found);
    if (found)
        return t->items[i];
    kc_gtopic_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    memcpy(e->id, id, 16);
    if (!insert(t, i, e)) {
        free(e);
        return NULL;
    }
    return e;
}

const kc_gtopic_t *kc_gtopics_name(kc_gtopics_t *t, const char *name, int32_t len)
{
    if (!t->by_name)
        return NULL;
    /* The comparator reads NUL-terminated names: a counted one is copied first (and kept when
     * it is new). */
    char *copy = len < 0 ? NULL : strndup(name, (size_t)len);
    if (len >= 0 && !copy)
        return NULL;
    bool found;
    size_t i = slot(t, copy ? copy : name, &found);
    if (found) {
        free(copy);
        return t->items[i];
    }
    kc_gtopic_t *e = calloc(1, sizeof *e);
    char *s = copy ? copy : strdup(name);
    if (!e || !s || !insert(t, i, e)) {
        free(e);
        free(s);
        return NULL;
    }
    e->name = s;
    return e;
}

/* Id order; equal ids (two new copies) in the order they were appended (their rank, until the
 * renumbering), so the first stays. */
static int by_id(const void *a, const void *b)
{
    const kc_gtopic_t *x = *(kc_gtopic_t *const *)a, *y = *(kc_gtopic_t *const *)b;
    int c = memcmp(x->id, y->id, 16);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

bool kc_gtopics_set_names(kc_gtopics_t *t, const kc_gtopic_name_t *names, size_t n)
{
    if (t->by_name || !reserve(t, t->n + n))
        return false;
    size_t known = t->n; /* sorted; new entries are appended after it, then sorted once */
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        bool found;
        size_t k = slot_in(t, known, names[i].id, &found);
        kc_gtopic_t *e = found ? t->items[k] : NULL;
        if (!e) {
            e = calloc(1, sizeof *e);
            if (!e) {
                ok = false;
                break;
            }
            memcpy(e->id, names[i].id, 16);
            e->rank = t->n;
            t->items[t->n++] = e;
        }
        if (!e->name && !(e->name = strndup(names[i].name, names[i].len)))
            ok = false;
    }
    if (t->n == known)
        return ok;
    /* Existing entries keep their relative order in the sort (the key order is total), so sets
     * sorted by rank stay sorted. Ids are unique among the existing entries and no new entry
     * repeats one of them, so two equal neighbours are two new copies of an id an answer named
     * twice: the later goes (nothing points to either yet). */
    qsort(t->items, t->n, sizeof *t->items, by_id);
    size_t w = 0;
    for (size_t r = 0; r < t->n; r++) {
        if (w && memcmp(t->items[w - 1]->id, t->items[r]->id, 16) == 0) {
            free(t->items[r]->name);
            free(t->items[r]);
            continue;
        }
        t->items[w++] = t->items[r];
    }
    t->n = w;
    for (size_t k = 0; k < t->n; k++)
        t->items[k]->rank = k;
    return ok;
}
