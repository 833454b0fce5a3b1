/*
 * The acknowledgements of one share-partition not yet sent (KIP-932): an offset and its type,
 * from the application's verdicts and from the acquired offsets that carried no record (GAP).
 * They leave as AcknowledgementBatches, the wire's form: a batch per run of consecutive offsets,
 * its types one per offset, or a single type when every offset of the run has the same one
 * (which the broker reads as "all of them").
 *
 * An offset acknowledged twice before it was sent is refused (KC_ERR_STATE): the first verdict
 * stands and the caller reports the second, never sends both.
 *
 * Owner: the holder (the network thread in the consumer); pure.
 */
#ifndef KC_ENGINE_SHARE_ACKS_H
#define KC_ENGINE_SHARE_ACKS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "proto/wire.h"

/* The wire's acknowledge types (ShareFetch / ShareAcknowledge AcknowledgeTypes). */
typedef enum kc_share_ack_type {
    KC_SHARE_ACK_GAP = 0,
    KC_SHARE_ACK_ACCEPT = 1,
    KC_SHARE_ACK_RELEASE = 2,
    KC_SHARE_ACK_REJECT = 3,
} kc_share_ack_type_t;

typedef struct kc_share_ack {
    int64_t offset;
    int8_t type;
} kc_share_ack_t;

typedef struct kc_share_acks {
    kc_share_ack_t *items;
    size_t n, cap;
    bool sorted; /* items ascend by offset */
} kc_share_acks_t;

/* One AcknowledgementBatch; `types` has n_types entries (1: the type of every offset). */
typedef struct kc_share_ack_batch {
    int64_t first, last;
    int8_t *types;
    int32_t n_types;
} kc_share_ack_batch_t;

void kc_share_acks_free(kc_share_acks_t *a);
kc_err_t kc_share_acks_add(kc_share_acks_t *a, int64_t offset, kc_share_ack_type_t type,
                           kc_error_t *err);
/* The batches for everything pending, in `arena` (*out NULL when none); the pending list is
 * emptied (the caller keeps the batches until the answer). KC_ERR_NOMEM leaves it as it was. */
kc_err_t kc_share_acks_take(kc_share_acks_t *a, kc_arena_t *arena, kc_share_ack_batch_t **out,
                            int32_t *n, kc_error_t *err);
/* Records the batches cover, by type (index kc_share_ack_type_t), for the stats and results. */
void kc_share_ack_batches_count(const kc_share_ack_batch_t *b, int32_t n, int64_t counts[4]);

#endif
