/*
 * A share session (KIP-932) with one broker: which share-partitions the broker holds for this
 * member, the session epoch, and the acknowledgements on their way. Pure: no sockets, the caller
 * sends the requests this builds and hands back the answers (or the failure).
 *
 * Epoch rules (the broker's, ShareFetch/ShareAcknowledge "ShareSessionEpoch"):
 *   0      opens a session: the request names every partition wanted and carries no
 *          acknowledgements (the broker refuses them at 0), so they wait for the next request;
 *   1..    each answered request moves the epoch on by one (INT32_MAX wraps to 1); the request
 *          names only partitions the session lacks or whose acknowledgements it carries, and
 *          forgets those no longer wanted;
 *   -1     closes the session, after acknowledging what it carries (ShareAcknowledge at close).
 * An answer with SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH or any other top-level
 * error, and a request that got no answer (the broker may or may not have seen it), leave the
 * session unknown: the next request opens a new one at epoch 0. Acknowledgements of such a
 * request are reported failed with the cause (the records' locks run out and the broker hands
 * them out again: at-least-once), never sent twice.
 *
 * Acknowledgements: kc_share_session_ack queues a range of offsets; the next ShareFetch carries
 * them (piggybacked), or kc_share_session_acknowledge builds a ShareAcknowledge for them when no
 * fetch is going to be sent (close, or a consumer that stopped fetching). The application's
 * verdicts come through kc_share_session_verdict, which queues one only while the delivery it
 * judges still holds its records and their lock has not run out (held.h): the broker cannot
 * tell a late verdict from a current one.
 *
 * Verdicts after a partition leaves: records handed to the application stay acquired by this
 * member after the partition is forgotten, and the broker takes their acknowledgement in a
 * ShareAcknowledge whether or not the session still holds the partition (it checks the
 * session's epoch and each record's owner). Measured on Kafka 4.2 by test_share_consumer's
 * verdicts_after_pause: the verdicts on 200 records given after their partition was forgotten
 * were applied (another member got none of them); dropped instead, all 200 went to that
 * member once this one closed. So a partition with
 * records held (kc_share_session_hold) keeps its entry here after it is no longer wanted, and
 * is forgotten at once all the same: a ShareFetch never names an unwanted partition, since
 * naming one puts it back in the broker's session, which acquires more of its records only
 * for them to be released with their delivery count raised. Its verdicts leave in a
 * ShareAcknowledge, sent before the next ShareFetch. Each batch sent is
 * answered per partition (acknowledge_error_code in ShareFetch, error_code in ShareAcknowledge) and
 * reported to `acked` with the batches, so an application learns per record range what the broker
 * made of its verdicts (INVALID_RECORD_STATE: the lock ran out first).
 *
 * Renewals (KIP-1222): kc_share_session_renew queues a RENEW of held records whose lock has not
 * run out. A ShareFetch carrying one must ask for nothing (the broker refuses it otherwise), so
 * renewals never ride a fetch: while one is pending the next request is a ShareAcknowledge (v2,
 * IsRenewAck) with everything pending. Once the broker answered a partition without error its
 * renewed records' deadline (held.h) moves to the answer's arrival plus AcquisitionLockTimeoutMs.
 * A verdict on records whose renewal is still pending replaces the renewal.
 *
 * One request at a time per session; a partition is wanted from one session at a time (its
 * leader's). Partitions an answer names that the request did not are reported as errors and
 * nothing of them is delivered.
 *
 * Owner: the caller (the network thread in the consumer). Not thread-safe.
 */
#ifndef KC_ENGINE_SHARE_SESSION_H
#define KC_ENGINE_SHARE_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "fetch/partition.h"
#include "proto/share_acknowledge.gen.h"
#include "proto/share_fetch.gen.h"
#include "share/acks.h"
#include "share/acquired.h"
#include "share/held.h"

/* `acked` code for acknowledgements never sent: an answer acquired their records again (their
 * delivery's lock had run out at the broker), and sent now they would count for the new one. */
#define KC_SHARE_ACK_UNSENT (-2)

#define KC_SHARE_EPOCH_OPEN  0
#define KC_SHARE_EPOCH_CLOSE (-1)

/* One share-partition of the session. Owner: the session. */
typedef struct kc_share_spart {
    kc_tp_t tp;
    bool wanted;             /* fetch it */
    bool known;              /* the broker's session holds it */
    kc_share_acks_t pending; /* acknowledgements not sent yet */
    kc_share_held_t held;    /* records handed to the application, verdicts not given yet */
    /* sent with the request in flight (in the session's request arena) */
    kc_share_ack_batch_t *sent;
    int32_t n_sent;
    bool in_request; /* named by the request in flight */
    bool forgetting; /* in the forgotten list of the request in flight */
} kc_share_spart_t;

/* What answers turn into. `records` and the ranges are views into the answer (valid while the
 * caller keeps its frame and arena); the batches are the session's until the next request. */
typedef struct kc_share_handler {
    /* Acquired records of a partition, checked (acquired.h); the records are the answer's
     * batches, of which only offsets inside a range may be delivered. lock_ms: the broker's
     * AcquisitionLockTimeoutMs (<= 0: not said). */
    void (*records)(void *o, const kc_tp_t *tp, kc_bytes_t records, const kc_share_range_t *r,
                    size_t n, int32_t lock_ms);
    /* The broker's verdict (code 0: applied) on acknowledgement batches sent; -1: no usable
     * answer; KC_SHARE_ACK_UNSENT: dropped before they left, the records acquired again. */
    void (*acked)(void *o, const kc_tp_t *tp, const kc_share_ack_batch_t *b, int32_t n,
                  int16_t code, const char *why);
    /* A partition's error (tp NULL: the session's, which was reset). */
    void (*error)(void *o, const kc_tp_t *tp, const kc_error_t *e);
    void *opaque;
} kc_share_handler_t;

typedef struct kc_share_fetch_params {
    const char *group_id, *member_id;
    int32_t max_wait_ms, min_bytes, max_bytes, max_records, batch_size;
    int8_t acquire_mode; /* KC_SHARE_ACQUIRE_* (v2; v1 has batches only) */
} kc_share_fetch_params_t;

/* ShareFetch ShareAcquireMode (KIP-1206). */
#define KC_SHARE_ACQUIRE_BATCHES      0 /* batch_optimized: whole batches, max_records is a hint */
#define KC_SHARE_ACQUIRE_RECORD_LIMIT 1 /* record_limit: at most max_records, batches cut */

/* Counters for the stats. */
typedef struct kc_share_session_counters {
    uint64_t requests, resets, opened;
    uint64_t acquired;    /* acquired records handed out */
    uint64_t acked[4];    /* acknowledged and answered without error, by kc_share_ack_type_t */
    uint64_t ack_errors;  /* acknowledged records the broker refused (lock expired, ...) */
    uint64_t ack_lost;    /* acknowledgements whose request got no usable answer */
    uint64_t ack_late;    /* verdicts not sent: their delivery's lock ran out first (held.h) */
    uint64_t renewed;     /* records whose lock the broker renewed */
    uint64_t lapsed;      /* held records never delivered: their lock ran out first */
    uint64_t bad_answers; /* partitions refused (bad ranges, never asked for) */
} kc_share_session_counters_t;

/* Owner: the caller. */
typedef struct kc_share_session {
    int32_t broker;
    int32_t epoch; /* the next request's */
    kc_share_spart_t *parts;
    size_t n, cap;
    bool inflight;
    bool inflight_close; /* the request in flight closes the session (epoch -1) */
    bool closed;         /* a close was answered: nothing more to send */
    int32_t inflight_epoch;
    /* Acknowledgement marks (kc_share_session_ack_mark): ranges queued so far; of those, how
     * many the request in flight carries (every request takes all that are pending, or none at
     * epoch 0) and how many had an answer (or a failure) by now. */
    uint64_t acks_queued, acks_inflight, acks_answered;
    kc_arena_t req;  /* the request in flight's arrays */
    int32_t lock_ms; /* the broker's AcquisitionLockTimeoutMs, as last told (0: not yet) */
    kc_share_session_counters_t c;
} kc_share_session_t;

void kc_share_session_init(kc_share_session_t *s, int32_t broker);
void kc_share_session_free(kc_share_session_t *s);

/* Fetch the partition from this session (on) or not (off). An unwanted partition with pending
 * acknowledgements stays until they are sent. */
kc_err_t kc_share_session_want(kc_share_session_t *s, const kc_tp_t *tp, bool on, kc_error_t *err);
/* Records first..last of tp were handed to the application with `delivery_count`, their lock
 * surely out at `deadline` (held.h): while any are held, the partition keeps its entry when no
 * longer wanted. KC_ERR_NOT_FOUND for a partition the session does not have; KC_ERR_NOMEM. */
kc_err_t kc_share_session_hold(kc_share_session_t *s, const kc_tp_t *tp, int64_t first,
                               int64_t last, int16_t delivery_count, int64_t deadline,
                               kc_error_t *err);
/* Records of tp held here (0: none, or not in the session); tp NULL: of every partition. */
int64_t kc_share_session_held(const kc_share_session_t *s, const kc_tp_t *tp);
/* Queues the acknowledgement of acquired records first..last that were never handed out (GAP
 * for offsets without a record, RELEASE for records not delivered). KC_ERR_NOT_FOUND for a
 * partition the session does not have; KC_ERR_STATE for a repeat. */
kc_err_t kc_share_session_ack(kc_share_session_t *s, const kc_tp_t *tp, int64_t first, int64_t last,
                              kc_share_ack_type_t type, kc_error_t *err);
/* The application's verdict on held records first..last of the delivery with `delivery_count`,
 * given at `now`: queued as kc_share_session_ack does when that delivery still holds them all
 * and its lock has not run out; else KC_ERR_STATE, naming what became of them, and nothing is
 * queued (held.h). Either way they are held no more. */
kc_err_t kc_share_session_verdict(kc_share_session_t *s, const kc_tp_t *tp, int64_t first,
                                  int64_t last, int16_t delivery_count, kc_share_ack_type_t type,
                                  int64_t now, kc_error_t *err);
/* Renew the lock of held records first..last of the delivery with `delivery_count`, at `now`:
 * queued when that delivery holds them all and their lock has not run out, else KC_ERR_STATE as
 * for a verdict (they stay held). A renewal still pending for them is replaced. */
kc_err_t kc_share_session_renew(kc_share_session_t *s, const kc_tp_t *tp, int64_t first,
                                int64_t last, int16_t delivery_count, int64_t now, kc_error_t *err);
/* A renewal pending (the next request must be a ShareAcknowledge v2)? */
bool kc_share_session_has_renewals(const kc_share_session_t *s);
/* The deadline of tp's `offset` in the delivery with `delivery_count` (held.h); -1: not held. */
int64_t kc_share_session_deadline(const kc_share_session_t *s, const kc_tp_t *tp, int64_t offset,
                                  int16_t delivery_count);
/* Held records first..last of that delivery were never delivered (their lock ran out first):
 * held no more, nothing queued. */
void kc_share_session_lapsed(kc_share_session_t *s, const kc_tp_t *tp, int64_t first, int64_t last,
                             int16_t delivery_count);
/* The mark of every acknowledgement queued so far, and whether all of those up to `mark` were
 * answered (applied, refused or lost: the answers went to `acked`). A commit of acknowledgements
 * waits on the mark taken when it starts. */
uint64_t kc_share_session_ack_mark(const kc_share_session_t *s);
bool kc_share_session_answered(const kc_share_session_t *s, uint64_t mark);
/* Anything to acknowledge? */
bool kc_share_session_has_acks(const kc_share_session_t *s);
/* Anything to fetch? */
bool kc_share_session_has_wanted(const kc_share_session_t *s);

/* The next ShareFetch into *req (arrays in the session, valid until the answer). KC_ERR_AGAIN
 * while a request is in flight, once closed, and while a session past epoch 0 has
 * acknowledgements of a partition no longer wanted or a renewal (kc_share_session_acknowledge
 * sends them first). */
kc_err_t kc_share_session_fetch(kc_share_session_t *s, const kc_share_fetch_params_t *p,
                                kc_share_fetch_request_t *req, kc_error_t *err);
/* A ShareAcknowledge of every pending acknowledgement (IsRenewAck when a renewal is among them:
 * send it at v2); `close`: at epoch -1, ending the session (also when nothing is pending, if the
 * session is open). KC_ERR_AGAIN when there is nothing to
 * send or a request is in flight. */
kc_err_t kc_share_session_acknowledge(kc_share_session_t *s, const char *group_id,
                                      const char *member_id, bool close,
                                      kc_share_acknowledge_request_t *req, kc_error_t *err);

/* Acknowledgements no request can carry: the session is not open (epoch 0, after a reset) and
 * wants no partition, so nothing would open it, and ShareAcknowledge needs an open one. They are
 * reported lost (`acked`, code -1, `why`) and dropped, so nobody waits on them: the broker hands
 * their records out again once the locks run out. True when there were any. */
bool kc_share_session_strand(kc_share_session_t *s, const char *why, const kc_share_handler_t *h);
/* The answers, and the failure of the request in flight (no answer, or one that did not decode). */
void kc_share_session_fetch_answer(kc_share_session_t *s, const kc_share_fetch_response_t *m,
                                   kc_arena_t *a, const kc_share_handler_t *h);
void kc_share_session_ack_answer(kc_share_session_t *s, const kc_share_acknowledge_response_t *m,
                                 int64_t now, const kc_share_handler_t *h);
void kc_share_session_failed(kc_share_session_t *s, const kc_error_t *why,
                             const kc_share_handler_t *h);

/* The next epoch after `e` (0 → 1, INT32_MAX → 1). */
int32_t kc_share_next_epoch(int32_t e);

#endif
