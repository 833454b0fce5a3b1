/*
 * A set of (topic, partition): the unit of ownership in a group, for every protocol. Topics are
 * interned in the member's table (group/topics.h), which carries the id and the name and fixes
 * the order: by id for KIP-848 (the heartbeat lists partitions in it), by Java's String order
 * for the classic protocol (its payloads are encoded in it). The set is kept sorted by (the
 * topic's rank in that order, partition) and unique, so equality, difference and "what changed
 * since the last heartbeat" are linear merges over integers, and deterministic.
 *
 * Every topic of a set, and of the sets it is combined with, comes from one table, which
 * outlives them.
 *
 * Owner: whoever holds the set; in the group machinery that is the network thread.
 */
#ifndef KC_ENGINE_GROUP_TPSET_H
#define KC_ENGINE_GROUP_TPSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "group/topics.h"

typedef struct kc_gtp {
    const kc_gtopic_t *topic; /* in the member's table */
    int32_t partition;
} kc_gtp_t;

static inline int kc_gtp_cmp(const kc_gtp_t *a, const kc_gtp_t *b)
{
    if (a->topic != b->topic)
        return a->topic->rank < b->topic->rank ? -1 : 1;
    return (a->partition > b->partition) - (a->partition < b->partition);
}

/* Owner: the holder of the set; in engine/ the network thread. Not thread-safe. */
typedef struct kc_tpset {
    kc_gtp_t *items; /* sorted by kc_gtp_cmp, no duplicates */
    size_t n, cap;
} kc_tpset_t;

void kc_tpset_free(kc_tpset_t *s);
static inline void kc_tpset_clear(kc_tpset_t *s)
{
    s->n = 0;
}
/* KC_ERR_INVALID_ARG for a NULL topic, KC_ERR_NOMEM. */
kc_err_t kc_tpset_add(kc_tpset_t *s, const kc_gtopic_t *topic, int32_t partition);
/* topic NULL (a lookup that found none): false. */
bool kc_tpset_contains(const kc_tpset_t *s, const kc_gtopic_t *topic, int32_t partition);
bool kc_tpset_equal(const kc_tpset_t *a, const kc_tpset_t *b);
kc_err_t kc_tpset_copy(kc_tpset_t *dst, const kc_tpset_t *src);
/* dst = a \ b (dst must be neither a nor b). */
kc_err_t kc_tpset_diff(kc_tpset_t *dst, const kc_tpset_t *a, const kc_tpset_t *b);
/* dst = a ∪ b (dst must be neither a nor b). */
kc_err_t kc_tpset_union(kc_tpset_t *dst, const kc_tpset_t *a, const kc_tpset_t *b);
/* s = s ∩ keep, in place. */
void kc_tpset_intersect(kc_tpset_t *s, const kc_tpset_t *keep);
/* s = s \ b, in place. */
void kc_tpset_subtract(kc_tpset_t *s, const kc_tpset_t *b);

#endif
