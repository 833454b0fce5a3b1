/*
 * Between the session's view of a Fetch and the generated codec's: a kc_session_req_t becomes a
 * kc_fetch_request_t (partitions grouped per topic id), and a decoded kc_fetch_response_t gives
 * the session its top-level answer and the fetcher one record per partition.
 *
 * Fetch v13+ only (topic ids): every Kafka 4.x broker speaks it. Pure; no I/O.
 * Owner: network thread (the arena and messages belong to the caller).
 */
#ifndef KC_ENGINE_FETCH_CODEC_H
#define KC_ENGINE_FETCH_CODEC_H

#include "proto/fetch.gen.h"
#include "fetch/session.h"

#define KC_FETCH_CODEC_MIN_VERSION 13

/* The request-level settings, Kafka's names. isolation.level: kconsume defaults to
 * read_committed (1), like librdkafka and unlike Java's read_uncommitted: a consumer that
 * delivers records of transactions later aborted hands the application data that, by the
 * producer's own account, never happened; read_committed costs only latency (records wait for
 * the LSO), never correctness. */
typedef struct kc_fetch_settings {
    int32_t max_wait_ms;    /* fetch.max.wait.ms */
    int32_t min_bytes;      /* fetch.min.bytes */
    int32_t max_bytes;      /* fetch.max.bytes */
    int8_t isolation_level; /* 0 read_uncommitted, 1 read_committed */
    const char *rack_id;    /* client.rack; NULL or "" when unset (KIP-392 needs it) */
} kc_fetch_settings_t;

/* Fills `m` for `req`. Arrays come from `a` and live until it is reset; `settings->rack_id`
 * is borrowed. Close and drain-only requests go with max_wait 0 / min_bytes 0: they fetch
 * nothing, so there is nothing to wait for. */
kc_err_t kc_fetch_codec_request(kc_fetch_request_t *m, const kc_session_req_t *req,
                                const kc_fetch_settings_t *settings, kc_arena_t *a,
                                kc_error_t *err);

/* The session's part of a response. */
static inline kc_session_resp_t kc_fetch_codec_session_resp(const kc_fetch_response_t *m)
{
    kc_session_resp_t r = {m->error_code, m->session_id};
    return r;
}

/* One partition of a response, in the engine's terms. Views point into the response frame. */
typedef struct kc_fetch_part_result {
    kc_tp_t tp;
    int16_t error_code;
    int64_t high_watermark;
    int64_t last_stable_offset;
    int64_t log_start_offset;
    int32_t preferred_read_replica; /* -1 none */
    uint8_t has_current_leader;     /* KIP-951: the new leader, with NOT_LEADER_OR_FOLLOWER */
    int32_t leader_id;
    int32_t leader_epoch;
    const kc_fetch_response_aborted_transaction_t *aborted;
    int32_t n_aborted;  /* 0 when null */
    kc_bytes_t records; /* len 0 when null */
} kc_fetch_part_result_t;

/* Walks the partitions of a decoded response: zero-initialise, then call until it returns 0. */
typedef struct kc_fetch_codec_iter {
    const kc_fetch_response_t *m;
    int32_t topic, part;
} kc_fetch_codec_iter_t;

int kc_fetch_codec_next(kc_fetch_codec_iter_t *it, kc_fetch_part_result_t *out);

#endif
