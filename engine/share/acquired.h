/*
 * The acquired records of one share-partition in one ShareFetch answer (KIP-932): offset ranges
 * the broker locked for this member, each with its delivery count. Only records inside them may
 * be delivered; an offset of the answer's records outside every range belongs to someone else
 * (or to no one) and is skipped.
 *
 * A broker's ranges are checked before anything is delivered, because a delivery and its
 * acknowledgement are both keyed by offset: a range that overlaps another, repeats one, runs
 * backwards, has a delivery count below 1 or points past the records the answer carries would
 * make one record delivered twice, or an acknowledgement name records this member never saw.
 * Such an answer is refused whole, with a message naming the partition and the ranges; nothing
 * of it is delivered or acknowledged (the locks run out and the broker hands the records out
 * again).
 *
 * Owner: the caller's thread; pure.
 */
#ifndef KC_ENGINE_SHARE_ACQUIRED_H
#define KC_ENGINE_SHARE_ACQUIRED_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct kc_share_range {
    int64_t first, last; /* inclusive */
    int16_t delivery_count;
} kc_share_range_t;

/* Checks `n` ranges in the broker's order against the offsets the answer's record batches span,
 * [rec_first, rec_last] (rec_first > rec_last: no records). KC_ERR_MALFORMED with `err` naming
 * topic[partition] and the offending ranges. */
kc_err_t kc_share_acquired_check(const kc_share_range_t *r, size_t n, int64_t rec_first,
                                 int64_t rec_last, const char *topic, int32_t partition,
                                 kc_error_t *err);

/* The delivery count of `offset` in checked ranges, 0 when it was not acquired. */
int16_t kc_share_acquired_count(const kc_share_range_t *r, size_t n, int64_t offset);

/* How many offsets the ranges cover. */
int64_t kc_share_acquired_span(const kc_share_range_t *r, size_t n);

#endif
