/*
 * The records of one share-partition handed to the application and awaiting its verdicts
 * (KIP-932): offset ranges, each with the delivery count it was acquired with and the time by
 * which its acquisition lock has surely run out.
 *
 * A verdict names the delivery it judges: the offsets and their delivery count. It is sent only
 * when every one of its offsets is still held by that delivery and the lock has not run out;
 * else it is refused here, because the broker cannot tell a late verdict from a current one:
 * - records whose lock ran out go back to the broker, which may hand them to this member again
 *   (a new delivery, count + 1): a verdict of the old delivery sent then would be taken as the
 *   new one's, though the callback judging the new delivery has not finished;
 * - once the new delivery's verdict is applied and the broker's start offset moves past those
 *   records, it ignores any acknowledgement below that offset without an error (Kafka 4.2,
 *   SharePartition.acknowledge: "already archived"), so a late verdict would look applied.
 * A verdict refused here is reported, never sent; its records are held no more either way.
 *
 * The deadline is the answer's arrival plus the broker's AcquisitionLockTimeoutMs (ShareFetch
 * v1+): the lock started before the broker answered, so it has surely run out by then. A verdict
 * given just before it can still reach the broker after the lock ran out; the broker answers
 * that one (INVALID_RECORD_STATE), or ignores it as above when the records were accepted
 * elsewhere meanwhile.
 *
 * A renewal (KIP-1222) starts the lock of held offsets again: once the broker answered it, the
 * deadline moves to that answer's arrival plus the lock's length, as for the fetch.
 *
 * A new delivery of held offsets (the lock ran out while a callback still ran, and the broker
 * handed them back) replaces the old one's hold: the old verdict finds its offsets held by
 * another count and is refused.
 *
 * Owner: the holder (the share session, on the network thread); pure: time is passed in.
 */
#ifndef KC_ENGINE_SHARE_HELD_H
#define KC_ENGINE_SHARE_HELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "share/spans.h"

#define KC_SHARE_NO_DEADLINE INT64_MAX

typedef struct kc_share_hold {
    kc_share_span_t span;   /* the offsets; first member (spans.h) */
    int64_t deadline;       /* ms, the caller's clock: the lock has surely run out by then */
    int16_t delivery_count; /* of the delivery that holds them */
} kc_share_hold_t;

typedef struct kc_share_held {
    kc_share_hold_t *items; /* ascending and disjoint */
    size_t n, cap;
    int64_t records; /* offsets held */
} kc_share_held_t;

/* What became of a verdict's delivery (kc_share_held_take). */
typedef enum kc_share_held_verdict {
    KC_SHARE_HELD_LIVE = 0, /* every offset held by that delivery, its lock not run out: send */
    KC_SHARE_HELD_EXPIRED,  /* held by that delivery, but its lock has run out */
    KC_SHARE_HELD_AGAIN,    /* some offset is held by another delivery, or by none any more */
} kc_share_held_verdict_t;

void kc_share_held_free(kc_share_held_t *h);

/* Is `offset` held by the delivery with `delivery_count`? */
bool kc_share_held_has(const kc_share_held_t *h, int64_t offset, int16_t delivery_count);

/* Offsets first..last were handed to the application with `delivery_count`, their lock surely
 * out at `deadline`. Offsets held already by an older delivery are taken from it. KC_ERR_NOMEM
 * (nothing changes), KC_ERR_INVALID_ARG for a bad range. */
kc_err_t kc_share_held_add(kc_share_held_t *h, int64_t first, int64_t last, int16_t delivery_count,
                           int64_t deadline, kc_error_t *err);

/* The verdict on offsets first..last of the delivery with `delivery_count`, given at `now`: those
 * offsets are held by that delivery no more, whatever the answer. *count_now: for
 * KC_SHARE_HELD_AGAIN, the highest delivery count holding one of them (0: none). */
kc_share_held_verdict_t kc_share_held_take(kc_share_held_t *h, int64_t first, int64_t last,
                                           int16_t delivery_count, int64_t now, int16_t *count_now);

/* What kc_share_held_take would answer for that verdict, nothing taken (a renewal's check). */
kc_share_held_verdict_t kc_share_held_check(const kc_share_held_t *h, int64_t first, int64_t last,
                                            int16_t delivery_count, int64_t now,
                                            int16_t *count_now);

/* The broker renewed the lock of offsets first..last (KIP-1222): whatever of them is still held,
 * by whichever delivery, is surely out at `deadline` now, unless its deadline is later already.
 * Out of memory (a split), a part keeps its old deadline. */
void kc_share_held_renew(kc_share_held_t *h, int64_t first, int64_t last, int64_t deadline);

/* The deadline of `offset` in the delivery with `delivery_count`; -1 when that delivery does not
 * hold it. */
int64_t kc_share_held_deadline(const kc_share_held_t *h, int64_t offset, int16_t delivery_count);

#endif
