/*
 * The acquired ranges of one share-partition's ShareFetch answer, cut along the record batches
 * the answer carries (KIP-932): each (batch, range) overlap is a piece, a slice of one batch
 * whose records in [first, last] were all acquired with one delivery count, which is what the
 * runtime delivers. Acquired offsets no batch carries (before, between or after the batches),
 * and those of control batches, have no record to deliver and are acknowledged as GAP; those
 * past a batch cut short at the answer's size limit, or behind an unreadable batch header, are
 * RELEASEd (the broker hands them out again, whole). A piece the caller refuses is RELEASEd.
 * So every acquired offset gets exactly one outcome: one piece, or one acknowledgement.
 *
 * The ranges are the session's checked ones (share/acquired.h: ascending, no overlap). Only batch
 * headers are read (61 bytes each); the bytes are the broker's and are trusted for nothing.
 *
 * Owner: the caller's thread (the network thread in the engine); pure.
 */
#ifndef KC_ENGINE_SHARE_PIECES_H
#define KC_ENGINE_SHARE_PIECES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"
#include "share/acks.h"
#include "share/acquired.h"

typedef struct kc_share_pieces_out {
    /* A piece: offsets [first, last] of the batch at batch[0 .. size). false: refused. */
    bool (*piece)(void *o, const uint8_t *batch, size_t size, int64_t first, int64_t last,
                  int16_t delivery_count);
    /* Offsets [first, last] acknowledged with `type` (GAP or RELEASE) without delivery. */
    void (*ack)(void *o, int64_t first, int64_t last, kc_share_ack_type_t type);
    void *opaque;
} kc_share_pieces_out_t;

void kc_share_pieces(kc_bytes_t rec, const kc_share_range_t *r, size_t n,
                     const kc_share_pieces_out_t *out);

#endif
