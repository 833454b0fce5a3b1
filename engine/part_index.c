#include "part_index.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(const kc_pidx_t *x, uint64_t hash)
{
    return (size_t)hash & (x->cap - 1);
}

static void place(kc_pidx_t *x, uint64_t hash, size_t pos)
{
    size_t s = slot_of(x, hash);
    while (x->pos[s])
        s = (s + 1) & (x->cap - 1);
    x->hash[s] = hash;
    x->pos[s] = pos + 1;
}

kc_err_t kc_pidx_reserve(kc_pidx_t *x, size_t n, kc_error_t *err)
{
    if (n * 2 <= x->cap)
        return KC_OK;
    size_t cap = x->cap ? x->cap : 16;
    while (cap < n * 2)
        cap *= 2;
    kc_pidx_t g = {.hash = calloc(cap, sizeof *g.hash),
                   .pos = calloc(cap, sizeof *g.pos),
                   .cap = cap,
                   .n = x->n};
    if (!g.hash || !g.pos) {
        free(g.hash);
        free(g.pos);
        return kc_fail(err, KC_ERR_NOMEM, "partition index: out of memory");
    }
    for (size_t s = 0; s < x->cap; s++)
        if (x->pos[s])
            place(&g, x->hash[s], x->pos[s] - 1);
    kc_pidx_free(x);
    *x = g;
    return KC_OK;
}

void kc_pidx_insert(kc_pidx_t *x, uint64_t hash, size_t pos)
{
    place(x, hash, pos);
    x->n++;
}

ssize_t kc_pidx_find(const kc_pidx_t *x, uint64_t hash, kc_pidx_eq_fn eq, const void *ctx,
                     const void *key)
{
    if (!x->cap)
        return -1;
    for (size_t s = slot_of(x, hash); x->pos[s]; s = (s + 1) & (x->cap - 1))
        if (x->hash[s] == hash && eq(ctx, x->pos[s] - 1, key))
            return (ssize_t)(x->pos[s] - 1);
    return -1;
}

/* The slot holding `pos`, which is filed under `hash`; cap if absent. */
static size_t slot_holding(const kc_pidx_t *x, uint64_t hash, size_t pos)
{
    if (!x->cap)
        return 0;
    for (size_t s = slot_of(x, hash); x->pos[s]; s = (s + 1) & (x->cap - 1))
        if (x->pos[s] == pos + 1)
            return s;
    return x->cap;
}

void kc_pidx_remove(kc_pidx_t *x, uint64_t hash, size_t pos)
{
    size_t hole = slot_holding(x, hash, pos);
    if (hole >= x->cap)
        return;
    x->pos[hole] = 0;
    x->n--;
    /* Backward shift: an entry after the hole moves into it unless its home slot lies
     * (cyclically) after the hole and at or before the entry, where it can still be found. */
    for (size_t s = (hole + 1) & (x->cap - 1); x->pos[s]; s = (s + 1) & (x->cap - 1)) {
        size_t home = slot_of(x, x->hash[s]);
        bool stays = hole <= s ? (hole < home && home <= s) : (hole < home || home <= s);
        if (stays)
            continue;
        x->hash[hole] = x->hash[s];
        x->pos[hole] = x->pos[s];
        x->pos[s] = 0;
        hole = s;
    }
}

void kc_pidx_move(kc_pidx_t *x, uint64_t hash, size_t from, size_t to)
{
    size_t s = slot_holding(x, hash, from);
    if (s < x->cap)
        x->pos[s] = to + 1;
}

void kc_pidx_free(kc_pidx_t *x)
{
    free(x->hash);
    free(x->pos);
    *x = (kc_pidx_t){0};
}

/* FNV-1a, then a final mix (the partition number alone would cluster in the low bits). */
static uint64_t fnv(const uint8_t *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t mix(uint64_t h, int32_t partition)
{
    h ^= (uint64_t)(uint32_t)partition * 0x9e3779b97f4a7c15ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

typedef struct name_key {
    kc_pidx_name_of_fn name_of;
    const void *ctx;
    const char *topic;
    int32_t partition;
} name_key_t;

static bool name_eq(const void *unused, size_t pos, const void *key)
{
    (void)unused;
    const name_key_t *k = key;
    const char *topic;
    int32_t partition;
    k->name_of(k->ctx, pos, &topic, &partition);
    return partition == k->partition && strcmp(topic, k->topic) == 0;
}

ssize_t kc_pidx_find_name(const kc_pidx_t *x, kc_pidx_name_of_fn name_of, const void *ctx,
                          const char *topic, int32_t partition)
{
    name_key_t k = {name_of, ctx, topic, partition};
    return kc_pidx_find(x, kc_pidx_hash_name(topic, partition), name_eq, NULL, &k);
}

uint64_t kc_pidx_hash_name(const char *topic, int32_t partition)
{
    return mix(fnv((const uint8_t *)topic, strlen(topic), 0xcbf29ce484222325ull), partition);
}

uint64_t kc_pidx_hash_id(const uint8_t id[16], int32_t partition)
{
    return mix(fnv(id, 16, 0xcbf29ce484222325ull), partition);
}
