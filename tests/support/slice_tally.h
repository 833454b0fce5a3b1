/* What an engine-level test's sink (kc_engine_sink_t) saw of one partition: the records of each
 * slice the engine handed it, decoded and checked against the offsets before them.
 *
 * Threads: the engine calls its sink on the network thread, so a tally is written there; the
 * test reads it with the network thread quiet (e.g. inside a kc_netthread call). */
#ifndef KC_SLICE_TALLY_H
#define KC_SLICE_TALLY_H

#include <stdint.h>

#include "base/buf.h"

typedef struct kc_slice_tally {
    int64_t expected;        /* the next offset the sink should see */
    int64_t records;         /* records at or past the slice's `first` */
    int64_t dups, gaps;      /* records below `expected`, and jumps past it */
    int64_t bad_batches;     /* batches that did not verify (CRC) or decode */
    int64_t slices, batches; /* slices handed over, and the batches in them */
} kc_slice_tally_t;

/* Counts slice s's records from offset `first` on into t, then moves t's expectation to `next`
 * (the engine's position after s: control batches and compaction gaps hold no record), and
 * releases s. */
void kc_slice_tally_add(kc_slice_tally_t *t, kc_slice_t *s, const char *topic, int32_t partition,
                        int64_t first, int64_t next);

#endif
