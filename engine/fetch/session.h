/*
 * KIP-227 incremental fetch session with ONE broker, as a pure state machine: no sockets, no
 * clocks (time is an argument), no threads. The fetcher asks it for the next request, sends it,
 * and tells it how the request ended.
 *
 * The rules, and why:
 * - (0, 0) opens a session. (0, -1) is the "no session" sentinel: a broker answers it, but never
 *   creates a session, so a client that opens with it re-sends its whole assignment forever while
 *   appearing to work.
 * - After a response naming session id S, the requests are (S, 1), (S, 2), ... The epoch after
 *   INT32_MAX is 1, never 0 or negative: 0 and -1 are the open/close sentinels.
 * - An incremental request carries only what changed against what the broker's session holds:
 *   added partitions, altered ones (fetch offset, current leader epoch, max bytes or log start
 *   offset differ) and forgotten ones (left the wanted set; sent exactly once).
 *   Nothing changed → zero partition entries.
 *   NOTE on consumed positions: the broker does NOT advance its cached fetch offset when it sends
 *   records — its CachedPartition only takes fetchOffset from requests (updateRequestParams),
 *   and Java's FetchSessionHandler re-sends a partition whenever its fetch offset differs. So a
 *   partition that returned records and moved forward IS sent again as altered; leaving it out
 *   would make the broker serve the same records again. Partitions that returned nothing are not
 *   re-sent, which is what makes an idle steady state carry 0 entries. (Measured on Kafka
 *   4.1.1: tests/kafka/test_engine_broker.c sends the 0-entry request after consuming and gets
 *   the same records back.)
 * - Paused partitions leave the session (forgotten) and are added back on resume, as Java does
 *   (its fetcher builds requests from fetchable partitions only): the broker stops reading them
 *   instead of reading data we would throw away.
 * - State changes only when a response succeeds. Building a request makes a pending snapshot;
 *   success commits it; failure or timeout discards it, and the next request is recomputed from
 *   the last committed state, so it carries the same changes again under the same (id, epoch).
 * - FETCH_SESSION_ID_NOT_FOUND: the session is gone; open a new one, (0, 0), full set.
 *   INVALID_FETCH_SESSION_EPOCH and any other top-level error: (S, 0), full set, which tells
 *   the broker to close S and open a new one (Java's nextCloseExisting) so the dead session does
 *   not hold a cache slot. Neither session error is surfaced.
 * - A broker that cannot hold a session (FETCH_SESSION_ID_NOT_FOUND in answer to an opening
 *   request, or an opening request answered with session id 0): sessionless (0, -1) full
 *   requests for `sessionless_backoff_ms`, logged once until a session is established again,
 *   then (0, 0) is tried again.
 * - close: (S, -1) with no partitions, so the broker frees the slot.
 *
 * Owner: network thread (one session per broker fetcher).
 */
#ifndef KC_ENGINE_FETCH_SESSION_H
#define KC_ENGINE_FETCH_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "fetch/partition.h"
#include "proto/kafka_errors.h"

#define KC_SESSION_INVALID_ID    0
#define KC_SESSION_INITIAL_EPOCH 0    /* with id 0: open; with id S: close S and open a new one */
#define KC_SESSION_FINAL_EPOCH   (-1) /* with id 0: sessionless; with id S: close S */

/* One partition as a Fetch request carries it. For a consumer log_start_offset is -1 (the field
 * is the follower's own log start); it is compared like the rest so a caller that sets it gets
 * it sent. `paused` is input only: a paused partition is not in the session. */
typedef struct kc_session_part {
    kc_tp_t tp;
    int64_t fetch_offset;
    int64_t log_start_offset;
    int32_t leader_epoch; /* current leader epoch, -1 unknown */
    int32_t max_bytes;
    uint8_t paused;
} kc_session_part_t;

typedef enum kc_session_mode {
    KC_SESSION_NONE = 0,    /* next request opens: (0,0) or (S,0) */
    KC_SESSION_OPEN,        /* next request is incremental: (S, epoch) */
    KC_SESSION_SESSIONLESS, /* (0,-1) until sessionless_until_ms */
    KC_SESSION_CLOSING,     /* a close (S,-1) was built; nothing else may be sent */
} kc_session_mode_t;

/* A built request. Pointers stay valid until the next build, response, failure or free. */
typedef struct kc_session_req {
    int32_t session_id;
    int32_t epoch;
    uint8_t full;       /* carries the whole wanted set (open, re-open, sessionless) */
    uint8_t close;      /* (S, -1): send with max_wait 0, min_bytes 0 */
    uint8_t drain_only; /* nothing wanted: only forgotten entries; send with max_wait 0 */
    const kc_session_part_t *parts; /* full set, or added + altered */
    size_t n_parts;
    size_t n_added;   /* of n_parts, partitions new to the broker's session */
    size_t n_altered; /* of n_parts, partitions whose request fields changed */
    const kc_tp_t *forgotten;
    size_t n_forgotten;
} kc_session_req_t;

/* The top level of a Fetch response, as far as the session cares. */
typedef struct kc_session_resp {
    int16_t error_code;
    int32_t session_id;
} kc_session_resp_t;

typedef enum kc_session_outcome {
    KC_SESSION_OK = 0,   /* partitions in the response are valid; state committed */
    KC_SESSION_RESET,    /* FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH:
                          * not surfaced; fetch again at once */
    KC_SESSION_FALLBACK, /* broker holds no session: sessionless for a while */
    KC_SESSION_FAILED,   /* other top-level error: the fetcher backs off and reports it */
    KC_SESSION_CLOSED,   /* answer to a close */
} kc_session_outcome_t;

/* Counters for stats. */
typedef struct kc_session_stats {
    uint64_t requests_built;
    uint64_t partitions_sent; /* partition entries over all requests */
    uint64_t forgotten_sent;  /* forgotten entries over all requests */
    uint64_t resets;          /* session errors (above) and other top-level errors that reopened */
    uint64_t fallbacks;       /* times the broker could not hold a session */
    uint64_t fallback_logs;   /* log lines written about it (once per episode) */
    size_t last_parts;        /* entries in the last request built */
    size_t last_forgotten;
    int32_t session_id; /* committed */
    int32_t epoch;      /* epoch of the next request */
} kc_session_stats_t;

/* A growable array. Owner: the kc_session_t that embeds it (network thread). */
typedef struct kc_session_vec {
    kc_session_part_t *v;
    size_t n, cap;
} kc_session_vec_t;

/* Owner: network thread. */
typedef struct kc_session {
    int32_t broker_id; /* for log lines only */
    int64_t sessionless_backoff_ms;

    /* Committed: what the broker holds, as of the last successful response. */
    kc_session_mode_t mode;
    int32_t id;    /* KC_SESSION_INVALID_ID unless OPEN (or the id to close on reopen) */
    int32_t epoch; /* the epoch of the next request while OPEN */
    int64_t sessionless_until_ms;
    uint8_t fallback_logged;
    kc_session_vec_t held; /* sorted by tp; the broker's session contents */

    /* Pending: the request in flight and what `held` becomes if it succeeds. */
    uint8_t pending;
    uint8_t pending_same; /* built by kc_session_build_same: `held` stays as it is */
    kc_session_req_t pending_req;
    kc_session_vec_t next_held; /* sorted wanted set at build time */

    /* Output buffers for the request, reused across requests. */
    kc_session_vec_t out_parts;
    kc_tp_t *out_forgotten;
    size_t out_forgotten_cap;

    kc_session_stats_t stats;
} kc_session_t;

void kc_session_init(kc_session_t *s, int32_t broker_id, int64_t sessionless_backoff_ms);
void kc_session_free(kc_session_t *s);

/* Builds the next request from the wanted partitions of this broker (any order; paused ones are
 * skipped; duplicates are an error). KC_ERR_STATE while a request is pending (one fetch in flight
 * per broker) or while closing; KC_ERR_AGAIN when there is nothing to send at all (nothing wanted
 * and the broker's session holds nothing); KC_ERR_NOMEM. */
kc_err_t kc_session_build(kc_session_t *s, const kc_session_part_t *wanted, size_t n_wanted,
                          int64_t now_ms, kc_session_req_t *out, kc_error_t *err);

/* kc_session_build for the wanted set the last committed request was built from, which the
 * caller knows did not change since (engine/fetch/plan.c): the incremental request that names
 * nothing, without snapshot_wanted's copy and the diff's walk over every held partition (3,300
 * a broker at 10,000 partitions, after every empty long poll). KC_ERR_STATE while a request is
 * pending or the session is not open: build it with kc_session_build. */
kc_err_t kc_session_build_same(kc_session_t *s, kc_session_req_t *out, kc_error_t *err);

/* The response to the pending request arrived and decoded. Commits or resets; see the outcomes. */
kc_session_outcome_t kc_session_on_response(kc_session_t *s, const kc_session_resp_t *resp,
                                            int64_t now_ms);

/* The pending request failed (transport error, timeout, undecodable response): forget it. */
void kc_session_on_failure(kc_session_t *s);

/* Builds the close request (S, -1) of an open session. KC_ERR_AGAIN when there is no session to
 * close (nothing to send), KC_ERR_STATE while a request is pending. The close's response or
 * failure ends the session either way (kc_session_on_response → KC_SESSION_CLOSED). */
kc_err_t kc_session_close(kc_session_t *s, kc_session_req_t *out, kc_error_t *err);

/* True when the broker's session (as committed) still holds partitions: a fetcher with nothing
 * wanted must send one more request to forget them before it is dropped. */
int kc_session_holds_partitions(const kc_session_t *s);

/* The fetch parameters (offset, epoch, max bytes) the broker used for `tp` in the last answered
 * request: its session entry, or the entry of the last sessionless request. NULL when the
 * broker was not fetching `tp` for us. The fetcher checks response partitions against it
 * (kc_fetch_plan_accepts). */
const kc_session_part_t *kc_session_held(const kc_session_t *s, const kc_tp_t *tp);

static inline const kc_session_stats_t *kc_session_stats(const kc_session_t *s)
{
    return &s->stats;
}

/* The epoch after `e`: INT32_MAX wraps to 1 (0 and -1 are sentinels). */
int32_t kc_session_next_epoch(int32_t e);

#endif
