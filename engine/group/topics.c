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
static size_t slot(const kc_gtopics_t *t, const void *key, bool *found)
{
    size_t lo = 0, hi = t->n;
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

/* Inserts `e` at `i`, renumbering the ranks from there: relative order never changes, so sets
 * sorted by rank stay sorted. */
static bool insert(kc_gtopics_t *t, size_t i, kc_gtopic_t *e)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        kc_gtopic_t **p = realloc(t->items, cap * sizeof *p);
        if (!p)
            return false;
        t->items = p;
        t->cap = cap;
    }
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

static kc_gtopic_t *intern_id(kc_gtopics_t *t, const uint8_t id[16])
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

const kc_gtopic_t *kc_gtopics_id(kc_gtopics_t *t, const uint8_t id[16])
{
    return intern_id(t, id);
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

bool kc_gtopics_set_name(kc_gtopics_t *t, const uint8_t id[16], const char *name, size_t len)
{
    kc_gtopic_t *e = intern_id(t, id);
    if (!e)
        return false;
    if (!e->name)
        e->name = strndup(name, len);
    return e->name != NULL;
}
