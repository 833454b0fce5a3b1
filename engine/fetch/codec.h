/*
 * Between the session's view of a Fetch and the generated codec's: a kc_session_req_t becomes a
 * kc_fetch_request_t (partitions grouped per topic), and a decoded kc_fetch_response_t gives
 * the session its top-level answer and the fetcher one record per partition.
 *
 * Versions 7 to the newest. Fetch names topics by name up to v12 and by id from v13, in the
 * request (topics, forgotten_topics_data) and in the response alike; the session and the engine
 * key partitions by topic id either way (fetch/partition.h), so the codec is where the two forms
 * meet: it writes both the name and the id into each topic (the generated encoder writes the one
 * the version has) and reads either back into a kc_tp_t, through kc_fetch_names_t.
 * Pure; no I/O.
 * Owner: network thread (the arena and messages belong to the caller).
 */
#ifndef KC_ENGINE_FETCH_CODEC_H
#define KC_ENGINE_FETCH_CODEC_H

#include "proto/fetch.gen.h"
#include "fetch/session.h"

#define KC_FETCH_CODEC_MIN_VERSION  7  /* KIP-227 incremental fetch sessions */
#define KC_FETCH_CODEC_RACK_VERSION 11 /* KIP-392: rack_id and preferred_read_replica */
#define KC_FETCH_CODEC_ID_VERSION   13 /* KIP-516: topics by id instead of by name */

/* Topic names for the versions that carry them. The engine's metadata cache answers both
 * questions (it holds every topic it ever keyed, so a forgotten partition's name is there too). */
typedef struct kc_fetch_names {
    /* The name of the topic keyed by `id` (NUL-terminated, valid until the cache changes), or
     * NULL when unknown. */
    const char *(*name_of)(void *opaque, const uint8_t id[16]);
    /* The key of the topic named by the `len` bytes at `name`: 1 and the id in `id`, or 0 when
     * unknown. */
    int (*id_of)(void *opaque, const char *name, size_t len, uint8_t id[16]);
    void *opaque;
} kc_fetch_names_t;

/* The newest version `req` may go at: v12 when it names a topic by a synthetic id (the broker
 * knows no such id, so the topic must go by name), the newest otherwise. */
int16_t kc_fetch_codec_max_version(const kc_session_req_t *req);

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

/* Fills `m` for `req` at `version`. Arrays come from `a` and live until it is reset;
 * `settings->rack_id` and the names are borrowed. Close and drain-only requests go with
 * max_wait 0 / min_bytes 0: they fetch nothing, so there is nothing to wait for.
 * Before v13 each topic goes by the name `names` gives its id (KC_ERR_STATE for an id it cannot
 * name), and a forgotten partition whose (name, partition) the same request also sends is left
 * out of forgotten_topics_data: that happens when a topic's key changes from a synthetic id to
 * its real one, and the two keys are one partition to a broker that keys by name, which applies
 * the forgotten list after the partitions and would drop it. */
kc_err_t kc_fetch_codec_request(kc_fetch_request_t *m, const kc_session_req_t *req, int16_t version,
                                const kc_fetch_settings_t *settings, const kc_fetch_names_t *names,
                                kc_arena_t *a, kc_error_t *err);

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

/* Walks the partitions of a decoded response of `version`: kc_fetch_codec_iter_init, then
 * kc_fetch_codec_next until it returns 0. Before v13 each topic's name is turned into its key
 * through `names` (borrowed); a topic it cannot name is skipped (unassigned meanwhile). */
typedef struct kc_fetch_codec_iter {
    const kc_fetch_response_t *m;
    int16_t version;
    const kc_fetch_names_t *names;
    int32_t topic, part;
    uint8_t id[16]; /* the current topic's key */
} kc_fetch_codec_iter_t;

void kc_fetch_codec_iter_init(kc_fetch_codec_iter_t *it, const kc_fetch_response_t *m,
                              int16_t version, const kc_fetch_names_t *names);
int kc_fetch_codec_next(kc_fetch_codec_iter_t *it, kc_fetch_part_result_t *out);

#endif
