/*
 * The acknowledgements of one share-partition not yet sent (KIP-932): offset ranges and their
 * type, from the application's verdicts and from the acquired offsets that carried no record
 * (GAP). They leave as AcknowledgementBatches, the wire's form: a batch covers consecutive
 * offsets with either one type for all of them or one type per offset.
 *
 * Kept as ranges, never one entry per offset: an acquired range is the broker's to choose, and
 * one whose offsets span 2^31 (a compacted log, or a hostile broker) must cost what its few
 * records cost. A batch gets one type per offset only while its run of consecutive offsets is
 * at most KC_SHARE_ACK_TYPES_MAX long; a longer run with mixed types leaves as one batch per
 * range (Kafka accepts adjacent batches: each must start past the last offset of the one before).
 *
 * An offset acknowledged twice before it was sent is refused (KC_ERR_STATE): the first verdict
 * stands and the caller reports the second, never sends both.
 *
 * Owner: the holder (the network thread in the consumer); pure.
 */
#ifndef KC_ENGINE_SHARE_ACKS_H
#define KC_ENGINE_SHARE_ACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "proto/wire.h"
#include "share/spans.h"

/* The wire's acknowledge types (ShareFetch / ShareAcknowledge AcknowledgeTypes). */
typedef enum kc_share_ack_type {
    KC_SHARE_ACK_GAP = 0,
    KC_SHARE_ACK_ACCEPT = 1,
    KC_SHARE_ACK_RELEASE = 2,
    KC_SHARE_ACK_REJECT = 3,
    /* not a verdict: the records stay acquired, their lock starts again (KIP-1222, v2 only) */
    KC_SHARE_ACK_RENEW = 4,
} kc_share_ack_type_t;
#define KC_SHARE_ACK_TYPES 5

/* The longest run of consecutive offsets sent with one type per offset. */
#define KC_SHARE_ACK_TYPES_MAX 4096

typedef struct kc_share_ack {
    kc_share_span_t span; /* the offsets; first member (spans.h) */
    int8_t type;
} kc_share_ack_t;

typedef struct kc_share_acks {
    kc_share_ack_t *items; /* ascending and disjoint; adjacent ranges of one type are merged */
    size_t n, cap;
} kc_share_acks_t;

/* One AcknowledgementBatch; `types` has n_types entries (1: the type of every offset). */
typedef struct kc_share_ack_batch {
    int64_t first, last;
    int8_t *types;
    int32_t n_types;
} kc_share_ack_batch_t;

void kc_share_acks_free(kc_share_acks_t *a);
/* Offsets first..last (first <= last, both >= 0) get `type`. KC_ERR_STATE when one of them is
 * pending already (nothing is added), KC_ERR_INVALID_ARG for a bad range or type. */
kc_err_t kc_share_acks_add(kc_share_acks_t *a, int64_t first, int64_t last,
                           kc_share_ack_type_t type, kc_error_t *err);
/* Moves what is pending of offsets first..last into `out` (an acknowledgement of an older
 * delivery of records acquired again). KC_ERR_NOMEM: some may have moved. */
kc_err_t kc_share_acks_drop(kc_share_acks_t *a, int64_t first, int64_t last, kc_share_acks_t *out,
                            kc_error_t *err);
/* The batches for everything pending, in `arena` (*out NULL when none); the pending list is
 * emptied (the caller keeps the batches until the answer). KC_ERR_NOMEM leaves it as it was. */
kc_err_t kc_share_acks_take(kc_share_acks_t *a, kc_arena_t *arena, kc_share_ack_batch_t **out,
                            int32_t *n, kc_error_t *err);
/* Records the batches cover, by type (index kc_share_ack_type_t), for the stats and results. */
void kc_share_ack_batches_count(const kc_share_ack_batch_t *b, int32_t n,
                                int64_t counts[KC_SHARE_ACK_TYPES]);
/* Any renewal pending? */
bool kc_share_acks_has_renew(const kc_share_acks_t *a);
/* Drops the renewals pending of offsets first..last (a verdict on them supersedes them), adding
 * them to `out` when it is not NULL (out of memory: dropped all the same, not added). */
void kc_share_acks_drop_renew(kc_share_acks_t *a, int64_t first, int64_t last,
                              kc_share_acks_t *out);

#endif
