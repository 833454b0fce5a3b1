/*
 * One-off cluster questions for the application, independent of the assignment: a fresh
 * Metadata answer for some topics (or all), and ListOffsets lookups (earliest, latest or by time)
 * for any partitions, each sent to its partition's leader. Nothing is cached or applied to the
 * fetch state. Failures the cluster calls retriable (a leader moving or not elected yet, a lost
 * connection) are asked again, after a growing pause, until the question's deadline; the answer
 * goes to `cb` once, by the deadline even with a request still in flight, whatever happened
 * (success, broker error, transport failure, deadline, engine close).
 *
 * Threads: network thread only, like the rest of the engine; `cb` runs there too. The question
 * (kc_engine_query_t and every string it points to) belongs to the asker and must stay valid
 * until `cb` ran; the engine writes its answers into it.
 */
#ifndef KC_ENGINE_QUERY_H
#define KC_ENGINE_QUERY_H

#include "engine.h"

/* One ListOffsets question. */
typedef struct kc_engine_lookup {
    const char *topic;
    int32_t partition;
    int64_t timestamp; /* -2 earliest, -1 latest, >= 0 a time in ms */
    /* answer */
    kc_err_t rc;
    int16_t kafka_code; /* with KC_ERR_BROKER */
    int64_t offset, record_ts;
    int32_t leader_epoch;
} kc_engine_lookup_t;

typedef struct kc_engine_query {
    /* Metadata for these topics; with n_topics 0, for every topic when all_topics is set, else
     * for the lookups' topics. */
    const char *const *topics;
    size_t n_topics;
    bool all_topics;
    kc_engine_lookup_t *lookups;
    size_t n_lookups;
    int64_t deadline_ms; /* kc_now_ms() clock; retries stop, and cb runs, by then */
    /* answer: rc is the Metadata question's (a lookup's own failure is in the lookup) */
    kc_err_t rc;
    kc_error_t err;
    kc_metadata_t *md; /* the last Metadata answer, the asker's: one allocation, free() */
    /* The first lookup failure that has its own text (a version refusal, an undecodable
     * answer: which API, which versions or broker), code KC_OK when none. */
    kc_error_t lookup_why;
} kc_engine_query_t;

typedef void (*kc_engine_query_cb)(void *opaque, kc_engine_query_t *q);

/* Returns an error (and never calls cb) only when the question could not be started at all. */
kc_err_t kc_engine_query(kc_engine_t *e, kc_engine_query_t *q, kc_engine_query_cb cb, void *opaque,
                         kc_error_t *err);

/* Engine close: answers every question that waits for its next try (KC_ERR_CLOSED for whatever
 * is unanswered); questions with a request in flight are answered when their connection fails
 * them, which the close does. */
void kc_eng_queries_close(kc_engine_t *e);

/* The wire answer made into the public, self-contained kc_metadata_t (one allocation, freed by
 * kc_metadata_destroy); NULL when out of memory. Pure. */
struct kc_metadata_response;
kc_metadata_t *kc_eng_metadata_export(const struct kc_metadata_response *m);

#endif
