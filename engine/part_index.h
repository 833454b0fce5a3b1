/*
 * A hash index over a partition array: finds a partition's position by a key without walking
 * the array. The engine keeps two, by (topic name, partition) for the application's calls and
 * the per-partition stats, and by (topic id, partition) for Fetch answers: with thousands of
 * partitions a linear search made each stats line and each Fetch answer cost O(partitions) per
 * partition listed, O(partitions^2) per line or round. The runtime's manual and group tables
 * (runtime/consumer.c, group.c) keep one by name, for the same reason: a kc_assign of 10,000
 * partitions, or a question about each, walked the table once per partition.
 *
 * The index stores positions only; the caller's equality callback compares the key with its
 * array element, so there is one copy of each key (the array's). Open addressing with linear
 * probing and backward-shift deletion (no tombstones), kept at most half full.
 * kc_pidx_reserve is the only call that allocates: after it succeeded for n entries, inserting
 * up to n cannot fail.
 *
 * Owner: the network thread (every table indexed this way is its own); pure.
 */
#ifndef KC_ENGINE_PART_INDEX_H
#define KC_ENGINE_PART_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"

typedef struct kc_pidx {
    uint64_t *hash; /* per slot: the key's hash */
    size_t *pos;    /* per slot: array position + 1; 0 = empty */
    size_t cap;     /* power of two, or 0 */
    size_t n;
} kc_pidx_t;

/* True when array element `pos` has `key`. */
typedef bool (*kc_pidx_eq_fn)(const void *ctx, size_t pos, const void *key);

/* Room for `n` entries in all (the table grows to at least twice that). */
kc_err_t kc_pidx_reserve(kc_pidx_t *x, size_t n, kc_error_t *err);
/* Adds position `pos` under `hash`; needs a reserve that covers it (no allocation here). */
void kc_pidx_insert(kc_pidx_t *x, uint64_t hash, size_t pos);
/* The position whose element `eq` finds equal to `key`, or -1. */
ssize_t kc_pidx_find(const kc_pidx_t *x, uint64_t hash, kc_pidx_eq_fn eq, const void *ctx,
                     const void *key);
/* Removes position `pos`, filed under `hash`. */
void kc_pidx_remove(kc_pidx_t *x, uint64_t hash, size_t pos);
/* Position `from`, filed under `hash`, is now `to` (the array moved the element). */
void kc_pidx_move(kc_pidx_t *x, uint64_t hash, size_t from, size_t to);
void kc_pidx_free(kc_pidx_t *x);

/* Key hashes: (topic name, partition) and (16-byte topic id, partition). */
uint64_t kc_pidx_hash_name(const char *topic, int32_t partition);
uint64_t kc_pidx_hash_id(const uint8_t id[16], int32_t partition);

/* For the tables keyed by (topic name, partition): `name_of` says which element `pos` is, and
 * the search compares that with the key (so the tables share one equality). */
typedef void (*kc_pidx_name_of_fn)(const void *ctx, size_t pos, const char **topic,
                                   int32_t *partition);
ssize_t kc_pidx_find_name(const kc_pidx_t *x, kc_pidx_name_of_fn name_of, const void *ctx,
                          const char *topic, int32_t partition);

#endif
