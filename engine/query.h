/*
 * One-off cluster questions for the application, independent of the assignment: a topic's
 * partition count (Metadata for that topic alone) and a partition's watermarks (Metadata to find
 * its leader, then ListOffsets earliest and latest to it). Nothing is cached or applied to the
 * fetch state: the answer goes to `cb` once, whatever happens (success, broker error, transport
 * failure, request timeout, engine close).
 *
 * Threads: network thread only, like the rest of the engine; `cb` runs there too.
 */
#ifndef KC_ENGINE_QUERY_H
#define KC_ENGINE_QUERY_H

#include "engine.h"

typedef struct kc_engine_query_result {
    kc_err_t rc;
    kc_error_t err; /* when rc != KC_OK */
    int32_t count;  /* partitions of the topic */
    int64_t low;    /* log start offset (watermarks only) */
    int64_t high;   /* high watermark, or LSO under read_committed (watermarks only) */
} kc_engine_query_result_t;

typedef void (*kc_engine_query_cb)(void *opaque, const kc_engine_query_result_t *res);

/* partition < 0: partition count only; else also the partition's watermarks. Returns an error
 * (and never calls cb) only when the question could not be sent at all. */
kc_err_t kc_engine_query(kc_engine_t *e, const char *topic, int32_t partition,
                         kc_engine_query_cb cb, void *opaque, kc_error_t *err);

#endif
