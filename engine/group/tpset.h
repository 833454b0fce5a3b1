/*
 * A set of (topic id, partition): the unit of ownership in a KIP-848 group, where the broker
 * names topics by id and the client resolves names from metadata. Kept sorted and unique so that
 * equality, difference and "what changed since the last heartbeat" are linear and deterministic
 * (the heartbeat lists partitions in this order).
 *
 * Owner: whoever holds the set; in the group machinery that is the network thread.
 */
#ifndef KC_ENGINE_GROUP_TPSET_H
#define KC_ENGINE_GROUP_TPSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "fetch/partition.h"

/* kc_tp_t (topic id, partition) and kc_tp_cmp come from fetch/partition.h: one definition shared
 * with the fetch sessions, so group code can include both. */

/* Owner: the holder of the set; in engine/ the network thread. Not thread-safe. */
typedef struct kc_tpset {
    kc_tp_t *items; /* sorted by (topic_id, partition), no duplicates */
    size_t n, cap;
} kc_tpset_t;

void kc_tpset_free(kc_tpset_t *s);
static inline void kc_tpset_clear(kc_tpset_t *s)
{
    s->n = 0;
}
kc_err_t kc_tpset_add(kc_tpset_t *s, const uint8_t topic_id[16], int32_t partition);
bool kc_tpset_contains(const kc_tpset_t *s, const uint8_t topic_id[16], int32_t partition);
bool kc_tpset_equal(const kc_tpset_t *a, const kc_tpset_t *b);
kc_err_t kc_tpset_copy(kc_tpset_t *dst, const kc_tpset_t *src);
/* dst = a \ b (dst must be neither a nor b). */
kc_err_t kc_tpset_diff(kc_tpset_t *dst, const kc_tpset_t *a, const kc_tpset_t *b);
/* dst = a ∪ b (dst must be neither a nor b). */
kc_err_t kc_tpset_union(kc_tpset_t *dst, const kc_tpset_t *a, const kc_tpset_t *b);
/* s = s ∩ keep, in place. */
void kc_tpset_intersect(kc_tpset_t *s, const kc_tpset_t *keep);

#endif
