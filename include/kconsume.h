/*
 * kconsume — a Kafka consumer runtime for Linux.
 *
 * This is the whole public API. Everything here is prefixed kc_ / KC_; nothing else is exported
 * from the shared library (it is built with -fvisibility=hidden and only KC_API symbols escape).
 *
 * Threads, in one paragraph: kconsume runs one network thread (all sockets, the engine, group
 * membership) and N worker threads (decode and your callbacks). Each function below says which
 * threads may call it. Each pointer argument says who owns it and for how long.
 *
 * Errors are values: every fallible call returns a kc_err_t; KC_OK is 0 and every error is
 * negative. Where a call can say more than the code, it takes a kc_error_t * that it fills with
 * a message (and the Kafka error code when a broker said no). The pointer may be NULL.
 */
#ifndef KCONSUME_H
#define KCONSUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KC_BUILDING_LIBRARY)
#define KC_API __attribute__((visibility("default")))
#else
#define KC_API
#endif

#define KC_VERSION_MAJOR 0
#define KC_VERSION_MINOR 1
#define KC_VERSION_PATCH 0

/* Library version as "MAJOR.MINOR.PATCH". Any thread. Static storage. */
KC_API const char *kc_version(void);

/*
 * Error codes. One table (name, value, text) drives the enum, kc_err_name() and kc_err_str(), so
 * a code exists in exactly one place. Values are stable: add at the end, never renumber.
 */
#define KC_ERROR_TABLE(X)                                                                          \
    X(KC_OK, 0, "success")                                                                         \
    X(KC_ERR_INVALID_ARG, -1, "invalid argument")                                                  \
    X(KC_ERR_NOMEM, -2, "out of memory")                                                           \
    X(KC_ERR_MALFORMED, -3, "malformed data received from the network")                            \
    X(KC_ERR_CRC, -4, "record batch CRC mismatch")                                                 \
    X(KC_ERR_UNSUPPORTED, -5, "unsupported feature, format or version")                            \
    X(KC_ERR_TIMEOUT, -6, "timed out")                                                             \
    X(KC_ERR_TRANSPORT, -7, "connection failed or closed")                                         \
    X(KC_ERR_TLS, -8, "TLS handshake or verification failed")                                      \
    X(KC_ERR_AUTH, -9, "authentication failed")                                                    \
    X(KC_ERR_BROKER, -10, "the broker answered with an error code")                                \
    X(KC_ERR_CONFIG, -11, "invalid configuration")                                                 \
    X(KC_ERR_STATE, -12, "operation not valid in the current state")                               \
    X(KC_ERR_CLOSED, -13, "handle is closed or closing")                                           \
    X(KC_ERR_TOO_LARGE, -14, "data exceeds a configured bound")                                    \
    X(KC_ERR_SYSTEM, -15, "system call failed")                                                    \
    X(KC_ERR_AGAIN, -16, "not ready yet; try again")                                               \
    X(KC_ERR_NOT_FOUND, -17, "no such item")                                                       \
    X(KC_ERR_QUEUE_FULL, -18, "queue full")                                                        \
    X(KC_ERR_FATAL, -19, "fatal error: the consumer must be closed")                               \
    X(KC_ERR_POLL_EXCEEDED, -20, "a callback ran longer than max.poll.interval.ms")

/* Every error code, from KC_ERROR_TABLE. */
typedef enum kc_err {
#define KC__ERR_ENUM(name, value, text) name = value,
    KC_ERROR_TABLE(KC__ERR_ENUM)
#undef KC__ERR_ENUM
} kc_err_t;

/* The symbolic name ("KC_ERR_TIMEOUT") and the one-line text of a code. Any thread. Static
 * storage; never NULL (unknown codes give "KC_ERR_UNKNOWN"). */
KC_API const char *kc_err_name(kc_err_t err);
KC_API const char *kc_err_str(kc_err_t err);
/* Kafka's name for a broker error code (kc_error_t.kafka_code, the metadata error_code fields):
 * "UNKNOWN_TOPIC_OR_PARTITION" for 3, "NONE" for 0; "UNKNOWN_KAFKA_ERROR" for a code this
 * version does not know. Any thread; static storage. */
KC_API const char *kc_kafka_error_name(int16_t code);

/*
 * An error with its explanation. Caller-owned (usually on the stack); kconsume only writes into
 * it. `kafka_code` is the broker's error code when `code` is KC_ERR_BROKER (or when a Kafka code
 * explains another failure), else 0. `msg` is NUL-terminated, never holds credentials, and at
 * most 255 bytes: a list too long for it (the partitions a commit refused) names what fits and
 * how many more; kc_commit_results gives a commit's outcome per partition.
 */
typedef struct kc_error {
    kc_err_t code;
    int16_t kafka_code;
    char msg[256];
} kc_error_t;

/* ============================================================================================== *
 * Threads and ownership, once for the whole API (libuv style)
 *
 *  - "app thread": any thread of yours that is not a kconsume thread. Calls marked "any app
 *    thread" may come from several app threads at once; kconsume turns them into commands on the
 *    network thread's inbound queue (then an eventfd wake), so they never touch engine state.
 *  - "worker": one of the worker.threads threads that decode records and run your per-partition
 *    callbacks. A partition is run by at most one worker at a time; the next batch of the same
 *    partition may run on a different worker (happens-after the previous callback returned).
 *  - "callback context": inside any kconsume callback. Calls allowed there say so; a call that
 *    waits for the network thread (kc_commit, kc_close) is never allowed there, because the
 *    thing it waits for may be waiting for the callback to return.
 *  - Pointers passed in are borrowed for the duration of the call unless stated; pointers handed
 *    to callbacks (partitions, batches, records, bytes) are valid until the callback returns and
 *    must not be freed. Handles (kc_conf_t, kc_consumer_t) are owned by the caller that created
 *    them until passed to a function documented as taking ownership.
 * ============================================================================================== */

typedef struct kc_conf kc_conf_t;         /* configuration: key/value strings, validated */
typedef struct kc_consumer kc_consumer_t; /* one consumer: network thread + worker pool */
typedef struct kc_records kc_records_t;   /* a view of (part of) one record batch */

/* One topic-partition. kconsume owns it from assignment until after on_revoke/on_lost returned;
 * the callbacks of one partition all see the same pointer. */
typedef struct kc_part {
    const char *topic; /* NUL-terminated; owned by kconsume */
    int32_t partition;
    /* Free for the application: e.g. set in on_assign, used in on_records, freed in on_revoke or
     * on_lost. Read and written only inside this partition's callbacks, which never overlap, so
     * it needs no locking. In a share group with more than one worker a partition's on_records
     * calls do overlap (see "Share groups" below): there, write it in on_assign and on_revoke /
     * on_lost only (every on_records starts after on_assign returned and ends before on_revoke
     * starts) and only read it in on_records. kconsume never touches it. */
    void *app;
} kc_part_t;

/* ---- records: views into the fetch buffer, never copies ------------------------------------- */

/*
 * One record. A view: every pointer points into the received batch (or the worker's
 * decompression arena) and stays valid only until the on_records callback that produced it
 * returns (or, for kc_poll, until kc_records_release). Copy what you keep. The accessors below
 * never allocate and may be called from the callback that received the record (or, for a
 * polled batch, from the thread holding it).
 */
typedef struct kc_record kc_record_t; /* opaque here; the decoder's view (io/batch) */

/* The record's offset in its partition. */
KC_API int64_t kc_record_offset(const kc_record_t *r);
/* Milliseconds since the epoch. Its type (CreateTime or LogAppendTime) is a property of the
 * Kafka batch: kc_records_timestamp_type. */
KC_API int64_t kc_record_timestamp(const kc_record_t *r);
/* Key and value bytes; NULL with *len = 0 for a null key or value (distinct from an empty one,
 * which gives a non-NULL pointer and *len = 0). */
KC_API const void *kc_record_key(const kc_record_t *r, size_t *len);
KC_API const void *kc_record_value(const kc_record_t *r, size_t *len);
/* Number of headers. Headers are decoded lazily from the record bytes: no allocation. */
KC_API size_t kc_record_header_count(const kc_record_t *r);
/* Header `idx` (0-based, in wire order). Name is NOT NUL-terminated (name_len bytes). A null
 * header value gives *value = NULL. KC_ERR_NOT_FOUND past the end, KC_ERR_MALFORMED when the
 * header bytes do not parse. Repeated lookups by index are O(idx): iterate in order with
 * kc_record_header_next for O(1) per header. */
KC_API kc_err_t kc_record_header(const kc_record_t *r, size_t idx, const char **name,
                                 size_t *name_len, const void **value, size_t *value_len);
/* Iteration without re-scanning: *cursor starts at 0; each call returns the next header and
 * advances it. KC_ERR_NOT_FOUND when done. */
KC_API kc_err_t kc_record_header_next(const kc_record_t *r, size_t *cursor, const char **name,
                                      size_t *name_len, const void **value, size_t *value_len);

/* ---- batches -------------------------------------------------------------------------------- */

/*
 * A batch view: up to callback.batch.max.records consecutive records of one partition, in offset
 * order. Iterate with kc_records_next until it returns NULL. The record pointer it returns is
 * reused by the next call (views come from a per-worker pool: nothing is allocated per record).
 * Valid until the callback returns (push) or kc_records_release (pull).
 */
KC_API const kc_part_t *kc_records_partition(const kc_records_t *b);
/* Next record or NULL at the end of this view. A decode error (CRC mismatch with check.crcs,
 * corrupt compression) ends the view early: kc_records_error then tells what happened, and the
 * error callback receives it too. */
KC_API const kc_record_t *kc_records_next(kc_records_t *b);
KC_API kc_err_t kc_records_error(const kc_records_t *b, kc_error_t *err);
/* Offset of the first record in the view, and the offset after the last record returned so far
 * by kc_records_next. Once kc_records_next returned NULL, the latter is where the partition's
 * committable offset goes when on_records returns KC_CB_CONTINUE (past a compacted gap at the
 * end of a batch, the runtime moves it to the batch's end). */
KC_API int64_t kc_records_first_offset(const kc_records_t *b);
KC_API int64_t kc_records_next_offset(const kc_records_t *b);
/* 0 CreateTime, 1 LogAppendTime, for every record of the view (a view never spans two Kafka
 * batches). */
KC_API int kc_records_timestamp_type(const kc_records_t *b);
/* The partition leader epoch (KIP-320) the view's records were written under, the same for every
 * record of the view (Java's ConsumerRecord.leaderEpoch()); -1 when the batch carries none. */
KC_API int32_t kc_records_leader_epoch(const kc_records_t *b);
/* The id of the broker whose Fetch answer carried the view: the partition's leader, or the
 * replica read from under KIP-392 (client.rack). */
KC_API int32_t kc_records_broker(const kc_records_t *b);
/* Share groups (group.type=share): how many times the broker has handed out the view's records,
 * 1 the first time (a view never mixes delivery counts); -1 outside share groups. */
KC_API int kc_records_delivery_count(const kc_records_t *b);

/* ---- the callback contract ------------------------------------------------------------------ */

/*
 * What on_records returns. The committable offset of a partition is the offset after the last
 * record whose callback returned KC_CB_CONTINUE or KC_CB_PAUSE; auto-commit commits only that,
 * so committed offsets always trail work a callback finished (at-least-once).
 * Redelivery window: with manual assignment a record is delivered once (unless you seek back or
 * return KC_CB_RETRY). In a group, a partition that changes hands restarts at the group's
 * committed offset, so records its previous owner processed after its last commit are delivered
 * again. A member cut off from its coordinator fences itself before the coordinator may give its
 * partitions away: once group.self.fence.ratio of the session timeout (KIP-848: the group's
 * consumer.session.timeout.ms, read with DescribeConfigs, else group.consumer.session.timeout.ms;
 * classic: session.timeout.ms) has passed since the last answered heartbeat was sent, no
 * callback of its partitions starts (one running finishes; buffered records are kept), its
 * commits are refused (KC_ERR_STATE) and auto-commit stops, and one KC_EVENT_ERROR says so. If
 * the coordinator answers while the member still holds its epoch/generation, delivery resumes
 * where it stopped (nothing skipped, nothing repeated); if it was fenced meanwhile, on_lost
 * follows. So two members never run callbacks of one partition at once, provided the callback in
 * flight at the fence returns within the rest of the session ((1 - ratio) x session timeout).
 * What such a member finished after its last successful commit, up to its fence, is delivered
 * again by the new owner: that is the redelivery window, bounded by the records it can process
 * in ratio x session timeout, not by queued.max.bytes. group.self.fence.ratio=0 turns the fence
 * off (the member then keeps delivering until it learns it was fenced).
 *
 *  KC_CB_CONTINUE  The view is processed; the committable offset advances to its end (in manual
 *                  store mode, enable.auto.offset.store=false, only kc_store_offset advances it).
 *  KC_CB_PAUSE     Processed, as CONTINUE, and the partition pauses: no further batch of it is
 *                  delivered and the fetcher stops asking for it until kc_resume(). Batches
 *                  already buffered are kept and delivered after resume.
 *  KC_CB_RETRY     Not processed: the offset does not advance and the SAME records are delivered
 *                  again, after the partition went to the back of the run queue (other
 *                  partitions run in between). Records of a view you iterated partially are
 *                  all redelivered. Use for transient failures of your sink; to back off, sleep
 *                  in the callback (bounded by max.poll.interval.ms) or return PAUSE instead.
 *  KC_CB_STOP      Not processed, and this partition stops (as paused, without advancing); the
 *                  error callback gets KC_ERR_STATE naming the partition. The consumer keeps
 *                  running other partitions; call kc_close to stop everything.
 */
typedef enum kc_cb_result {
    KC_CB_CONTINUE = 0,
    KC_CB_PAUSE = 1,
    KC_CB_RETRY = 2,
    KC_CB_STOP = 3,
} kc_cb_result_t;

/*
 * Share groups (KIP-932; group.type=share, then kc_subscribe). The members of a share group
 * consume the same partitions together: the broker hands each member records under an
 * acquisition lock, and each record is acknowledged on its own. There are no offsets and no
 * seeks (kc_seek refuses). With more than one worker (worker.threads), the records of one
 * partition run on several workers at once: each record batch the broker hands out (or the
 * acquired part of one) goes to one of the partition's lanes, one per worker, and the lanes run
 * side by side, so one slow record holds up only its own batch. on_assign returns before any
 * on_records of the partition starts; on_revoke / on_lost starts after every one returned.
 * When on_records returns, every record of the view gets a verdict, sent to the broker with the
 * next ShareFetch:
 *  KC_CB_CONTINUE, KC_CB_PAUSE   KC_SHARE_ACCEPT (PAUSE also pauses, as above);
 *  KC_CB_RETRY                   KC_SHARE_RELEASE: the broker hands the records out again, to
 *                                this or another member, with the delivery count raised
 *                                (kc_records_delivery_count); they are not redelivered locally;
 *  KC_CB_STOP                    KC_SHARE_RELEASE, and the partition stops as above.
 * Records acquired but never delivered (the partition revoked, the consumer closing) are
 * released. A record whose lock ran out before its verdict arrived was already handed out again
 * by the broker (at-least-once): that verdict is not sent (the broker would take it for the new
 * delivery's, or drop it without a word once the records were accepted elsewhere) and comes
 * back as a KC_EVENT_SHARE_ACK with KC_ERR_STATE. The lock's length is the broker's
 * (group.share.record.lock.duration.ms, told in each ShareFetch answer); a view not started
 * before its records' lock ran out (behind a slow callback) is not delivered at all (stats:
 * share.lapsed; in pull mode neither is a view whose lock ran out while it waited for kc_poll).
 * Committing acknowledgements (Java's commitSync / commitAsync): kc_commit, kc_commit_async and
 * their _results forms with no partitions (NULL, 0; a list is KC_ERR_INVALID_ARG) send the
 * verdicts given so far at once, rather than with the next ShareFetch, and answer when the
 * broker has. They cover every on_records call that had started when the consumer took the call
 * (every one you saw return before calling, and those running then, which the commit waits
 * for); in pull mode every view kc_poll returned before the call (release the views you hold
 * first: one the calling thread still holds keeps the call waiting until its timeout). Results: one
 * per partition, `offset` one past the highest offset acknowledged, code KC_ERR_BROKER with
 * `kafka_code` where the broker refused some (INVALID_RECORD_STATE, 121: a lock ran out first),
 * KC_ERR_STATE where verdicts given since the last commit were not sent (their lock had run out,
 * or the broker had handed the records out again: the KC_EVENT_SHARE_ACK said so too); the call's
 * result is the worst of those (KC_ERR_BROKER over KC_ERR_STATE), and KC_ERR_TRANSPORT where a
 * request got no usable answer (those records are handed out again when their locks run out).
 * Nothing to send or report: KC_OK with no results. kc_commit_metadata refuses.
 */
typedef enum kc_share_verdict {
    KC_SHARE_ACCEPT = 1,  /* processed: never delivered again */
    KC_SHARE_RELEASE = 2, /* not processed: delivered again, delivery count + 1 */
    KC_SHARE_REJECT = 3,  /* cannot be processed: never delivered again */
} kc_share_verdict_t;
/* The verdict on one record of the view, from inside on_records, instead of the one the
 * callback's result gives (records without one get that): e.g. KC_SHARE_REJECT for a poison
 * record while the rest of the view is accepted. `r` must be a record kc_records_next returned
 * for this view; each record at most once, in offset order. KC_ERR_STATE outside share groups
 * and for a repeat or an earlier record, KC_ERR_INVALID_ARG for another view's record. */
KC_API kc_err_t kc_share_ack(kc_records_t *b, const kc_record_t *r, kc_share_verdict_t verdict,
                             kc_error_t *err);
/* Renew the acquisition lock of the view's records (KIP-1222, Java's AcknowledgeType.RENEW), from
 * inside on_records (or, in pull mode, by the thread holding the view) when the work takes
 * longer than the lock: the broker starts their lock again and keeps them for this member, so
 * the verdict given when the callback returns still counts. It covers the records of the view's
 * batch from the view's first record on (those the view has not returned yet too), and waits up
 * to timeout_ms for the broker's answer (it is sent at once, after a ShareFetch in flight to
 * that broker returns, with the verdicts given so far). Allowed in callbacks: it waits for the
 * network thread only. KC_OK: renewed (the lock runs for group.share.record.lock.duration.ms
 * again from the answer); KC_ERR_STATE when the lock ran out already or the records were handed
 * out again (the verdict will not count: the records go to another delivery), or outside share
 * groups; KC_ERR_BROKER with kafka_code (INVALID_RECORD_STATE: the broker had released them);
 * KC_ERR_UNSUPPORTED when the broker has no lock renewal (Kafka before 4.2); KC_ERR_TRANSPORT
 * when it could not be sent or got no answer (the connection is down, or the share session is
 * being opened again after the broker dropped it: retry while the lock lasts); KC_ERR_NOT_FOUND
 * when the partition is no longer fetched; KC_ERR_TIMEOUT, KC_ERR_CLOSED. Counted in the stats
 * as `renewed`. */
KC_API kc_err_t kc_share_renew(kc_records_t *b, int timeout_ms, kc_error_t *err);

/* Kind of event for on_event (group-level). */
typedef enum kc_event_type {
    KC_EVENT_ASSIGNMENT = 1, /* the assignment changed; `assignment` lists the new one */
    KC_EVENT_ERROR = 2,      /* `error` explains; fatal ones are KC_ERR_FATAL */
    KC_EVENT_STATS = 3,      /* `json` is one stats object (see README for the field names) */
    /* enable.partition.eof: `topic` / `partition` reached the end of its log at `offset` */
    KC_EVENT_PARTITION_EOF = 4,
    /* share groups: the broker answered acknowledgements of `topic` / `partition` (below) */
    KC_EVENT_SHARE_ACK = 5,
} kc_event_type_t;

/* Everything an event points to is owned by kconsume and valid until on_event returns. kconsume
 * allocates events, so members may be added at the end in a later version without breaking a
 * program built against this one. */
typedef struct kc_event {
    kc_event_type_t type;
    const kc_error_t *error; /* KC_EVENT_ERROR; KC_EVENT_SHARE_ACK when refused */
    const char *json;        /* KC_EVENT_STATS only; NUL-terminated */
    /* KC_EVENT_ASSIGNMENT only: the whole new assignment (offset fields unused); NULL and 0
     * when nothing is assigned any more. Posted once per change, in the order of the changes:
     * by a group member after each step of a rebalance that changed what it owns (partitions
     * being revoked are no longer listed, their on_revoke may still be running; partitions
     * added are listed once their committed offset was read and their on_assign is queued),
     * by kc_assign / kc_incremental_assign / kc_unassign when they changed the manual
     * assignment. kc_close's revocations post none. */
    const struct kc_topic_partition *assignment;
    size_t assignment_len;
    /* KC_EVENT_PARTITION_EOF (KC_EVENT_ERROR and KC_EVENT_SHARE_ACK below; NULL, -1, -1
     * otherwise): with enable.partition.eof=true, the
     * partition whose delivered records reached the end of its log, and that end (the high
     * watermark, or the last stable offset under read_committed: the offset the next record
     * will have). Posted once per end: when the fetch position reaches it and every record below
     * it was delivered (its on_records returned; a paused partition's buffered records are not
     * delivered), so it comes after those callbacks; a partition assigned at its end gets one at
     * once. New records and a later end give another; the same end is not repeated (also not
     * after a seek back to below it). kc_records_release'd pulls count as delivered. */
    const char *topic;
    int32_t partition;
    int64_t offset;
    /* KC_EVENT_ERROR: `topic` and `partition` also name the partition an error is about (a fetch
     * refused or out of range, a batch that does not decode, KC_CB_STOP), else NULL and -1.
     * retriable: what failed may work when tried again and the consumer does so itself where it
     * is its own request (a lost connection, a timeout, a broker code the Java client calls
     * retriable: RetriableException); fatal: the consumer can do nothing more (KC_ERR_FATAL):
     * close it. Both false for the other events. librdkafka's rd_kafka_error_is_retriable /
     * is_fatal. */
    bool retriable;
    bool fatal;
    /* KC_EVENT_SHARE_ACK (share groups; 0 otherwise): the broker's answer to verdicts this member
     * sent for `topic` / `partition` in one request (a ShareFetch or ShareAcknowledge), one event
     * per contiguous run of offsets ack_first..`offset` (inclusive): ack_records of them got a
     * verdict (accepted, released or rejected), the others hold no record or were renewed
     * (kc_share_renew answers its caller; a run of renewals alone is posted only if refused).
     * `error` is NULL when the broker applied them; else why not: KC_ERR_BROKER with the broker's
     * code (e.g. INVALID_RECORD_STATE when an acquisition lock ran out first: the broker had handed
     * the records out again), KC_ERR_TRANSPORT when the request got no answer (the broker then
     * hands the records out again when their locks run out), or KC_ERR_STATE when they were
     * not sent: a callback outlasted the lock, which ran out, or the records came back as a
     * new delivery, before its verdict. Refusals are always posted
     * (and logged); applied verdicts only with share.ack.events=all (KafkaShareConsumer's
     * acknowledgement commit callback). These events yield to the others: while on_event is so
     * far behind that its queue is nearly full, they are dropped (refusals stay in the log).
     * The answers to the verdicts kc_close sends come after on_event has stopped. */
    int64_t ack_first;
    int64_t ack_records;
} kc_event_t;

/* What an on_rebalance call reports (kc_callbacks_t). */
typedef enum kc_rebalance {
    KC_REBALANCE_ASSIGN = 0, /* the partitions were assigned */
    KC_REBALANCE_REVOKE = 1, /* the partitions are being revoked in an orderly rebalance */
    KC_REBALANCE_LOST = 2,   /* the partitions were lost: another member may own them already */
} kc_rebalance_t;

/*
 * Callbacks. Every member may be NULL (then that event is ignored). Copied by kc_consumer_new;
 * `opaque` is passed back untouched.
 *
 * Per-partition callbacks run on a worker, serialised with that partition's records: for one
 * partition, on_assign happens-before every on_records, which happen-before on_revoke/on_lost;
 * never two at once. Different partitions run in parallel on different workers.
 *
 *  on_assign   The partition was assigned and nothing of it was delivered yet. May call
 *              kc_seek on this partition (e.g. to an offset kept in your own database: the
 *              exactly-once pattern); the fetch starts at the position after on_assign returns.
 *  on_records  A batch view; return value per kc_cb_result_t.
 *  on_revoke   The partition is being taken away in an orderly rebalance or kc_unassign: no
 *              further on_records of it will start; flush your work now. The group waits for
 *              this to return before it commits and gives the partition up.
 *  on_lost     The partition was lost (session expired, fenced): another member may already
 *              own it, so do not commit for it. Called instead of on_revoke.
 *
 * Group-level: on_event runs on a worker, serialised with itself (never two on_event at once),
 * in the order events happened; never on the network thread, so a slow handler cannot delay a
 * heartbeat.
 *
 *  on_rebalance  (optional; set `size`) A group member's whole change at once, as Java's
 *              ConsumerRebalanceListener and librdkafka's rebalance_cb see it: the partitions a
 *              step of a rebalance revokes (KC_REBALANCE_REVOKE), loses (KC_REBALANCE_LOST) or
 *              assigns (KC_REBALANCE_ASSIGN), each set once, in the order the group decided
 *              them. It runs serialised with on_event and with itself (one call at a time, on
 *              one worker, never on the network thread), and is ordered against the
 *              per-partition callbacks of the partitions it names:
 *                REVOKE/LOST: after every on_records of them returned (none starts after), before
 *                  any of their on_revoke/on_lost; the revocation's commit and the group's
 *                  acknowledgement wait for it, as they wait for on_revoke. kc_store_offset still
 *                  counts here, so offsets kept in a database can be written for the whole set in
 *                  one transaction.
 *                ASSIGN: after every on_assign of them returned, before any on_records of them:
 *                  kc_seek / kc_seek_partitions called here decide where delivery starts.
 *              A set names what the group decided, also a partition whose per-partition callback
 *              does not run (one revoked before its on_assign ran). Offsets in `tps` are -1.
 *              Only for subscriptions (kc_subscribe, also at kc_unsubscribe and kc_close); manual
 *              assignment has none. Share groups (group.type=share) get the same calls, but
 *              seeks do not apply there: the broker decides what is delivered. A long call holds
 *              the rebalance like a long on_revoke (the coordinator's rebalance timeout still
 *              runs), and max.poll.interval.ms watches it as it watches the per-partition
 *              callbacks (Java runs its listener inside poll()): one running longer is reported
 *              once (KC_ERR_POLL_EXCEEDED, naming on_rebalance) and the member leaves its group.
 *              Waits for the network thread (kc_commit, kc_committed, kc_close, ...) are refused
 *              here, as in every callback.
 */
typedef struct kc_callbacks {
    /* 0, or sizeof(kc_callbacks_t) as the caller compiled it. Members are only ever added at the
     * end. 0 always means the first layout (on_assign to opaque, as here): a later library reads
     * only those, so a program that leaves size 0 keeps working; a program that uses a member
     * added later sets size = sizeof(kc_callbacks_t). A program built against a later header
     * that sets a callback this library does not have is refused by kc_consumer_new with
     * KC_ERR_UNSUPPORTED instead of having it silently ignored. */
    size_t size;
    void (*on_assign)(void *opaque, kc_part_t *p);
    kc_cb_result_t (*on_records)(void *opaque, kc_part_t *p, kc_records_t *batch);
    void (*on_revoke)(void *opaque, kc_part_t *p);
    void (*on_lost)(void *opaque, kc_part_t *p);
    void (*on_event)(void *opaque, const kc_event_t *ev);
    void *opaque;
    /* Added after the first layout: read only when `size` covers it. */
    void (*on_rebalance)(void *opaque, kc_rebalance_t kind, const struct kc_topic_partition *tps,
                         size_t n);
} kc_callbacks_t;

/* ---- configuration -------------------------------------------------------------------------- */

/*
 * Configuration uses Kafka's own key names ("bootstrap.servers", "group.id", ...); the full list
 * with types, defaults and allowed values is printed by kc_conf_print_reference (and in
 * docs/CONFIGURATION.md). A kc_conf_t belongs to one app thread at a time (no internal locking).
 */
KC_API kc_conf_t *kc_conf_new(void); /* NULL when out of memory */
KC_API void kc_conf_destroy(kc_conf_t *conf);
KC_API kc_conf_t *kc_conf_dup(const kc_conf_t *conf);
/*
 * Sets one key. Both strings are copied. Validates the value now: an unknown key fails with
 * KC_ERR_CONFIG naming it and the nearest known key; a bad value names the key, the value and
 * what is allowed. Settings that conflict with each other are reported by kc_conf_validate (and
 * by kc_consumer_new, which calls it), because they depend on the order keys are set in.
 */
KC_API kc_err_t kc_conf_set(kc_conf_t *conf, const char *key, const char *value, kc_error_t *err);
/* The effective value (the default when unset) into buf, NUL-terminated. Secret values
 * (passwords) read back as "[redacted]". KC_ERR_NOT_FOUND for an unknown key. *len is buf's
 * size on entry and the size needed on return; KC_ERR_TOO_LARGE when buf is too small (nothing
 * written). len NULL means "buf is large enough" (the caller's promise). Any thread that owns
 * conf. */
KC_API kc_err_t kc_conf_get(const kc_conf_t *conf, const char *key, char *buf, size_t *len);
/* Cross-key checks: conflicting or incomplete settings, each explained. */
KC_API kc_err_t kc_conf_validate(const kc_conf_t *conf, kc_error_t *err);

/*
 * Logging, per consumer. Levels as syslog's; log.level picks the most verbose one a consumer
 * emits (its own: another consumer's level changes nothing here).
 */
typedef enum kc_log_level {
    KC_LOG_ERROR = 3,
    KC_LOG_WARN = 4,
    KC_LOG_INFO = 6,
    KC_LOG_DEBUG = 7,
} kc_log_level_t;
/*
 * A log line: `level` a kc_log_level_t, `subsystem` a short tag ("conn", "fetch", "group",
 * "engine", ...), `name` the consumer's client.id, `message` one line without a newline. The
 * strings are valid during the call only. Called on the consumer's network thread or one of its
 * workers, possibly from several at once: the callback must be thread-safe and must not call
 * back into kconsume. No message ever holds a credential (passwords, key passwords, tokens).
 */
typedef void (*kc_log_cb_t)(void *opaque, int level, const char *subsystem, const char *name,
                            const char *message);
/* Sets the log callback of consumers created from `conf` (kc_conf_dup copies it; NULL restores
 * the default). With a callback kconsume writes nothing to stderr; without one, each line goes to
 * stderr as "<seconds.ms> kconsume LEVEL <client.id> [subsystem] message". KC_ERR_INVALID_ARG for
 * a NULL conf. */
KC_API kc_err_t kc_conf_set_log_cb(kc_conf_t *conf, kc_log_cb_t cb, void *opaque, kc_error_t *err);

/*
 * SASL OAUTHBEARER tokens from the application (sasl.mechanism=OAUTHBEARER with
 * sasl.oauthbearer.method=default): a token callback, the way to plug in any token source (a
 * company identity provider, an AWS MSK IAM signer, a file a sidecar renews).
 *
 * When it is called: once in kc_consumer_new, on the thread calling it, before any broker is
 * contacted (a failure then fails kc_consumer_new with KC_ERR_AUTH and the callback's text);
 * afterwards on the consumer's own token thread ("kc-oauth"), at 80% of the current token's
 * remaining lifetime (Java's sasl.login.refresh.window.factor and librdkafka's default), and
 * again after a failure (1 s doubling to 10 s, while the old token stays in use until it
 * expires). Never on the network thread nor a worker, and never twice at once, so it may block
 * (an HTTP request) for as long as it needs; kc_consumer_close waits for a call in progress.
 *
 * What it does: exactly one of kc_oauthbearer_set_token or kc_oauthbearer_set_token_failure on
 * the `req` it was given, before it returns (returning without either counts as a failure). It
 * must not call any other kconsume function, and must not keep `req`.
 *
 * The token is handed to the network thread through the consumer's token slot; every broker
 * connection authenticates with the current one, and re-authenticates (KIP-368, no reconnect)
 * with the current one when the broker's session lifetime (the token's expiry, bounded by the
 * broker's connections.max.reauth.ms) nears its end.
 */
typedef struct kc_oauthbearer_req kc_oauthbearer_req_t;
typedef void (*kc_oauthbearer_token_cb_t)(void *opaque, kc_oauthbearer_req_t *req);
/* Sets the token callback of consumers created from `conf` (kc_conf_dup copies it; NULL
 * removes it). KC_ERR_INVALID_ARG for a NULL conf. */
KC_API kc_err_t kc_conf_set_oauthbearer_token_cb(kc_conf_t *conf, kc_oauthbearer_token_cb_t cb,
                                                 void *opaque, kc_error_t *err);
/*
 * The callback's answer: `token` (an RFC 6750 bearer token, e.g. a JWT; copied), `expiry_ms` the
 * wall-clock time it expires (milliseconds since the Unix epoch, > now), `principal` the name it
 * identifies (copied; logs only: the broker reads the principal from the token; may be NULL),
 * and `extensions` SASL extensions (RFC 7628 key=value pairs sent with the token, e.g. Confluent
 * Cloud's logicalCluster and identityPoolId): `extension_count` strings, alternating key and
 * value (so an even number; NULL and 0 for none; keys are letters only, never "auth").
 * KC_ERR_INVALID_ARG (and nothing stored: the request then counts as failed with that message)
 * when any of these is wrong. The token is never logged nor put in an error message.
 */
KC_API kc_err_t kc_oauthbearer_set_token(kc_oauthbearer_req_t *req, const char *token,
                                         int64_t expiry_ms, const char *principal,
                                         const char *const *extensions, size_t extension_count,
                                         kc_error_t *err);
/* The callback could not get a token: `reason` (copied, one line, no secrets) is what
 * kc_consumer_new, the logs and a connection that has no valid token left report. */
KC_API void kc_oauthbearer_set_token_failure(kc_oauthbearer_req_t *req, const char *reason);
/* Writes the reference of every key (name, type, default, allowed values, doc) to `out` (a
 * FILE *, as void * to keep <stdio.h> out of this header). markdown != 0: docs/CONFIGURATION.md,
 * which also gives the Java client's and librdkafka's name for each key and their keys kconsume
 * does not take. Secret keys are listed without any value. Any thread. */
KC_API void kc_conf_print_reference(void *out, int markdown);
/* Writes every key's value in `conf` to `out` (a FILE *), one "key=value" line each in the
 * reference's order, defaults included; a secret reads "[redacted]" when it is set and empty when
 * it is not. Any thread, with `conf` not changed meanwhile. */
KC_API void kc_conf_dump(const kc_conf_t *conf, void *out);

/* ---- the consumer --------------------------------------------------------------------------- */

/*
 * Creates a consumer: validates `conf` (KC_ERR_CONFIG explains what is wrong), starts the
 * network thread and the workers. Takes ownership of `conf` on success only (on failure the
 * caller still owns it). `cbs` is copied. Any app thread. Implemented by the engine.
 * security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) applies to EVERY connection the
 * consumer opens (bootstrap, brokers, coordinators, a classic member's own coordinator
 * connection): TLS verifies the chain and the host name by default (ssl.ca.location and/or
 * ssl.ca.pem, or the system store when neither is set; ssl.crl.location adds the revocation check
 * of the broker's certificate; ssl.endpoint.identification.algorithm= turns the name check off,
 * as in Java). The client identity for mutual TLS is a PKCS#12 keystore (ssl.keystore.location,
 * ssl.keystore.password) or a certificate and key, each a PEM file or PEM text
 * (ssl.certificate.location / .pem, ssl.key.location / .pem, ssl.key.password);
 * ssl.enabled.protocols, ssl.protocol and ssl.cipher.suites bound what is offered (README, "TLS
 * material"). SASL is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (sasl.mechanism, sasl.username,
 * sasl.password), OAUTHBEARER (kc_conf_set_oauthbearer_token_cb, or sasl.oauthbearer.method=oidc)
 * or GSSAPI, Kerberos through MIT krb5 (sasl.kerberos.service.name, sasl.kerberos.principal,
 * sasl.kerberos.keytab, sasl.kerberos.min.time.before.relogin: the librdkafka names; Java puts
 * principal and keytab in sasl.jaas.config's Krb5LoginModule), each with KIP-368
 * re-authentication. GSSAPI: the realm and KDC come from the Kerberos library's configuration
 * (/etc/krb5.conf or the KRB5_CONFIG environment variable); each broker is the service
 * principal "SERVICE/HOST" (HOST as configured or advertised); a keytab login goes into a private
 * in-memory ticket cache per consumer, renewed from the keytab; logins that talk to the KDC run on
 * a helper thread of the network loop (a KDC that does not answer delays only the connections
 * waiting to log in). TLS material that does not load fails here with KC_ERR_CONFIG naming the
 * key and the file (never a password or key text); a refused login reaches the error callback as
 * KC_ERR_AUTH (SASL: naming the mechanism, and for GSSAPI the principal, the service and the
 * Kerberos library's reason) or KC_ERR_TLS (a revoked broker certificate, a client certificate
 * the broker refuses, no shared cipher suite or protocol version), and that connection is not
 * retried.
 */
KC_API kc_err_t kc_consumer_new(kc_conf_t *conf, const kc_callbacks_t *cbs, kc_consumer_t **out,
                                kc_error_t *err);

/* A topic-partition with an offset, for the calls that take lists. Caller-owned. */
typedef struct kc_topic_partition {
    const char *topic;
    int32_t partition;
    int64_t offset; /* KC_OFFSET_* sentinel or an offset; ignored where not meaningful */
} kc_topic_partition_t;

#define KC_OFFSET_BEGINNING (-2)
#define KC_OFFSET_END       (-1)
#define KC_OFFSET_STORED    (-1000) /* the group's committed offset, else auto.offset.reset */
#define KC_OFFSET_INVALID   (-1001)

/*
 * The calls below are asynchronous unless stated: they enqueue a command for the network thread
 * and return once it is queued; the effect shows in callbacks.
 */

/*
 * Misuse. What can be detected cheaply gives an error value with a message, never a crash or a
 * hang:
 *  - a NULL consumer, list or topic name, an entry with an empty topic or a negative partition,
 *    an unknown seek kind or a negative KC_SEEK_OFFSET: KC_ERR_INVALID_ARG naming the argument
 *    (kc_destroy(NULL), kc_close(NULL) and kc_records_release with NULLs do nothing);
 *  - any call after kc_close: KC_ERR_CLOSED (kc_close again: KC_OK); during kc_close, the
 *    assignment changes and kc_poll (see kc_close). After kc_destroy the handle is gone: using it
 *    is undefined, as with free();
 *  - kc_subscribe after kc_assign, and kc_assign / kc_incremental_assign / kc_unassign /
 *    kc_incremental_unassign while subscribed (until kc_unsubscribe has left): KC_ERR_STATE
 *    (one consumer has one owner of its assignment);
 *  - from callback context (any kconsume callback, i.e. on a worker thread), the calls that wait
 *    for the network thread — kc_close, kc_unsubscribe, kc_commit, kc_committed,
 *    kc_topic_partitions, kc_query_watermarks (and _list), kc_poll with a timeout — return
 *    KC_ERR_STATE instead of deadlocking; kc_destroy there is ignored and logged.
 *    kc_commit_async, kc_seek, kc_pause, kc_resume, kc_store_offset, kc_position and
 *    kc_member_id are fine in callbacks. Not detected: a handle used after kc_destroy, or one
 *    app thread's kc_conf_t shared without locking.
 */

/* Join group.id and follow its assignment (group.protocol decides KIP-848 or classic). Topics
 * are copied. Any app thread. KC_ERR_STATE when manual assignment is in use.
 * Called again while subscribed, the new list replaces the old one, in both protocols: the
 * member tells the coordinator (KIP-848: the next heartbeat; classic: it rejoins once the new
 * topics' partition counts are known) and the rebalance that follows revokes the partitions of
 * topics no longer listed (classic eager assignors such as range revoke everything, as in Java;
 * cooperative-sticky and KIP-848 revoke only what leaves). KC_ERR_STATE while a kc_unsubscribe
 * is still leaving.
 * Right after kc_unassign (which does not wait for on_revoke), a partition the group assigns
 * while its manual copy is still being revoked starts only after that revocation is done: its
 * on_assign begins after the old on_revoke returned, as with kc_assign below.
 * A pattern: one entry starting with '^' subscribes to every topic whose name matches it.
 * The whole topic name must match ("^orders" matches only "orders"; "^orders.*" all that start
 * so), as in Java. KIP-848 hands it to the broker (RE2/J syntax, the broker's
 * subscribed_topic_regex); classic matches it in the member, POSIX extended syntax (the common
 * subset of the two: literals, ., [], *, +, ?, |, (), {n,m}), against the non-internal topics of a
 * Metadata answer for all topics, asked every 3 s, and rejoins when the matched set changes (a
 * topic created or deleted), as the Java client does; a pattern matching nothing yet joins once
 * something matches. Classic: a pattern that does not compile is KC_ERR_INVALID_ARG (KIP-848:
 * the broker judges it). */
KC_API kc_err_t kc_subscribe(kc_consumer_t *c, const char *const *topics, size_t n,
                             kc_error_t *err);
/* Leaves the group and waits until it has left, at most timeout_ms (>= 0): on_revoke for every
 * partition the member holds, the revocation's commit (enable.auto.commit), the answers to
 * commits still in flight (kc_commit_async from on_revoke, say; waited for until a quarter of
 * timeout_ms, at most 1 s, is left), then the leave
 * (KIP-848: a heartbeat with epoch -1, -2 for a static member; classic: LeaveGroup for a dynamic
 * member, a static one keeps its place for session.timeout.ms). Afterwards the consumer may
 * kc_subscribe again (to any topics: it joins anew) or assign by hand. Not subscribed: KC_OK at
 * once. KC_ERR_TIMEOUT when the leave is not over in time: it goes on, and kc_subscribe /
 * kc_assign stay refused (KC_ERR_STATE) until it is; kc_unsubscribe again waits for it. App
 * threads only, never callback context (it waits for on_revoke). */
KC_API kc_err_t kc_unsubscribe(kc_consumer_t *c, int timeout_ms, kc_error_t *err);
/* Manual assignment, replacing the current one by the difference. Any app thread. The list is
 * copied; returns once the change is queued (callbacks follow on the workers).
 *  - partitions not in the list are revoked (on_revoke);
 *  - partitions in the list and already assigned keep running untouched: no on_revoke, no
 *    on_assign, nothing delivered again. An explicit offset for one (>= 0, KC_OFFSET_BEGINNING
 *    or KC_OFFSET_END) is a seek, exactly as kc_seek; KC_OFFSET_STORED leaves it alone;
 *  - the others are added; offset: where to start (KC_OFFSET_STORED honours the committed
 *    offset, then auto.offset.reset).
 * A partition assigned again (here or by kc_incremental_assign) while an earlier assignment of
 * it is still being revoked starts only after that revocation is done: its on_assign begins
 * after the old on_revoke returned, and callbacks of one topic-partition never overlap. */
KC_API kc_err_t kc_assign(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                          kc_error_t *err);
/* Adds partitions to the manual assignment, keeping the others running (an entry already
 * assigned is left as it is). Any app thread. */
KC_API kc_err_t kc_incremental_assign(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                                      kc_error_t *err);
/* Removes every partition (on_revoke for each). Any app thread. */
KC_API kc_err_t kc_unassign(kc_consumer_t *c, kc_error_t *err);
/* Removes only these partitions from the manual assignment (on_revoke for each); the others
 * keep running untouched. Every entry must be assigned: otherwise KC_ERR_NOT_FOUND naming it and
 * nothing is removed. KC_ERR_STATE while subscribed. Any app thread. */
KC_API kc_err_t kc_incremental_unassign(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                                        kc_error_t *err);
/* What the consumer holds now: the group's partitions (those being revoked excluded) while
 * subscribed, else the manual assignment. *out is one malloc'd block (the entries, then their
 * topic strings; offsets KC_OFFSET_INVALID): release it with free(). NULL and 0 when nothing is
 * held. Any thread, callback context included (one network-thread round trip). */
KC_API kc_err_t kc_assignment(kc_consumer_t *c, kc_topic_partition_t **out, size_t *n,
                              kc_error_t *err);
/* The topics of the last kc_subscribe that succeeded (a regex subscription: its one entry), while
 * subscribed; NULL and 0 otherwise (never subscribed, after kc_unsubscribe). *out is one
 * malloc'd block (the pointers, then the strings): release it with free(). Any thread, callback
 * context included. */
KC_API kc_err_t kc_subscription(kc_consumer_t *c, char ***out, size_t *n, kc_error_t *err);

/* Where kc_seek moves a partition's position. */
typedef enum kc_seek_kind {
    KC_SEEK_OFFSET = 0,    /* `value` is the offset of the next record to deliver */
    KC_SEEK_BEGINNING = 1, /* the log start; `value` ignored */
    KC_SEEK_END = 2,       /* the high watermark (or LSO under read_committed) */
    KC_SEEK_TIMESTAMP = 3, /* first record with timestamp >= `value` (ms since the epoch) */
} kc_seek_kind_t;
/* KC_SEEK_TIMESTAMP asks the leader (ListOffsets by timestamp) for the first offset whose record
 * timestamp is >= `value`. A time before the first record gives the log start; a time after the
 * last record gives the END (high watermark, LSO under read_committed), as in librdkafka, where
 * Java's offsetsForTimes returns null: the next record produced is the first delivered. */
/* Moves the position of one assigned partition. Buffered records of it are dropped; the next
 * on_records starts at the new position. Any app thread, or the partition's own callbacks
 * (on_assign, on_records: then no further record of the current view is delivered). */
KC_API kc_err_t kc_seek(kc_consumer_t *c, const char *topic, int32_t partition, kc_seek_kind_t kind,
                        int64_t value, kc_error_t *err);
/* kc_seek for a list, in one step on the network thread: each entry's offset (>= 0, or
 * KC_OFFSET_BEGINNING / KC_OFFSET_END; anything else is KC_ERR_INVALID_ARG before anything
 * moves). Entries are applied in order; the first failure (e.g. a partition not assigned)
 * stops there and is returned. Threads as kc_seek. */
KC_API kc_err_t kc_seek_partitions(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                                   kc_error_t *err);
/* The offset of the next record to be delivered to a callback (not fetched: delivered), from
 * the runtime's committable offset; before the first callback returned, the start when it is
 * known (an explicit assign offset, or the group's committed offset for a group partition),
 * else KC_OFFSET_INVALID. Any thread, callback context included; from the partition's own
 * callbacks no waiting (an atomic load), from other threads one network-thread round trip. */
KC_API kc_err_t kc_position(kc_consumer_t *c, const char *topic, int32_t partition, int64_t *offset,
                            kc_error_t *err);
/* kc_position for a list, in one network-thread round trip: each entry's offset <- the position
 * kc_position would give (KC_OFFSET_INVALID while it is not known). An entry not assigned gets
 * KC_OFFSET_INVALID too, and the call then returns KC_ERR_NOT_FOUND naming the first such and
 * how many, every other entry filled all the same. On any other error (a NULL consumer or list,
 * an entry without a topic or with a negative partition, a closed consumer) no entry is written.
 * Threads as kc_position, but always the round trip (a callback's own partition included). */
KC_API kc_err_t kc_position_list(kc_consumer_t *c, kc_topic_partition_t *tps, size_t n,
                                 kc_error_t *err);
/* Stop / restart delivering and fetching these partitions. Buffered records are kept. Any app
 * thread, and callback context. */
KC_API kc_err_t kc_pause(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                         kc_error_t *err);
KC_API kc_err_t kc_resume(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                          kc_error_t *err);
/* Fetches the group's committed offsets into tps[i].offset (KC_OFFSET_INVALID when none).
 * Blocks the caller up to timeout_ms: app threads only, never callback context. A KIP-848 member
 * asks as itself (member id + current epoch, which the broker checks); otherwise, and always
 * with group.protocol=classic, the anonymous form every client may use. */
KC_API kc_err_t kc_committed(kc_consumer_t *c, kc_topic_partition_t *tps, size_t n, int timeout_ms,
                             kc_error_t *err);
/* Commits: tps == NULL commits every partition's committable offset; otherwise the given
 * offsets. kc_commit blocks up to timeout_ms (app threads only, never callback context).
 * kc_commit_async returns at once; `cb` runs on a worker, serialised with on_event, with the
 * result (exactly once; a commit still unanswered at kc_destroy gets KC_ERR_CLOSED on the
 * destroying thread); `tps` is copied. Both are valid from callback context only in the async
 * form.
 * Which identity a commit carries:
 *  - after kc_subscribe (a group member): the member's own, read on the network thread when
 *    each request is built — KIP-848: member id + the CURRENT member epoch (a
 *    STALE_MEMBER_EPOCH answer, the epoch having moved in a rebalance, is asked again with the
 *    fresh one until timeout); classic: member id + generation + group.instance.id. tps == NULL
 *    then means the member's partitions (not those it is revoking: their offsets are committed
 *    by the revocation itself). While the member holds no membership (joining, rejoining after
 *    a fence, closed) the call fails with KC_ERR_STATE, and so it does while the member is
 *    self-fenced (cut off from its coordinator, see "Redelivery window"). Refusals come back as
 *    KC_ERR_BROKER with the Kafka code and a message naming each refused partition:
 *    REBALANCE_IN_PROGRESS (classic:
 *    commit again after on_assign), ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID (the generation is
 *    over; the member rejoins), FENCED_INSTANCE_ID. A partition the member no longer owns gets
 *    whatever the broker answers for it (brokers check the member, not the partition).
 *  - manual assignment with group.id: the anonymous form (member id "", generation -1), which
 *    the broker accepts only while the group has no members. */
KC_API kc_err_t kc_commit(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                          int timeout_ms, kc_error_t *err);
typedef void (*kc_commit_cb)(void *opaque, kc_err_t result, const kc_error_t *err);
KC_API kc_err_t kc_commit_async(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                                kc_commit_cb cb, void *opaque, kc_error_t *err);

/*
 * Commits with a metadata string per partition (Kafka's OffsetCommit metadata, Java's
 * OffsetAndMetadata.metadata(), e.g. which run or host committed), and reads it back.
 * kc_commit_metadata is kc_commit for the given entries (tps != NULL, n >= 1; same identity,
 * threads and errors); an entry's metadata NULL commits none (the broker stores ""), and
 * the broker refuses one longer than its offset.metadata.max.bytes (default 4096) with
 * OFFSET_METADATA_TOO_LARGE (12). Commits without metadata (kc_commit, auto-commit, the
 * revocation's) store "".
 * kc_committed_metadata is kc_committed that also sets each entry's metadata: NULL when none
 * (nothing committed, or "" stored), else a NUL-terminated string in one malloc'd block whose
 * address goes to *block (NULL when no entry has one): release it with free() once done with
 * the strings. App threads only, never callback context (both wait).
 */
typedef struct kc_offset_meta {
    const char *topic;
    int32_t partition;
    int64_t offset;       /* commit: the next offset to read; committed: out (KC_OFFSET_INVALID) */
    const char *metadata; /* commit: in, NULL: none; committed: out */
} kc_offset_meta_t;
KC_API kc_err_t kc_commit_metadata(kc_consumer_t *c, const kc_offset_meta_t *tps, size_t n,
                                   int timeout_ms, kc_error_t *err);

/*
 * Commits with one result per partition (librdkafka's per-partition err, Java's per-partition
 * exceptions): what was sent for each partition and what became of it, rather than only the
 * first refusal in one message. Same identity, threads, waits and errors as kc_commit /
 * kc_commit_async, and a metadata string per entry as kc_commit_metadata (NULL: none).
 * tps == NULL (n 0): every partition's committable offset, so the results say which offsets
 * were actually committed; none processed yet: nothing is sent, KC_OK with no results.
 * A result's code: KC_OK committed; KC_ERR_BROKER refused, `kafka_code` says why (e.g.
 * OFFSET_METADATA_TOO_LARGE, 12; the other partitions of the same commit may still be
 * committed); another code (KC_ERR_TIMEOUT, KC_ERR_CLOSED, KC_ERR_STATE...) the commit as a whole
 * got no answer for it, the same as the call's.
 * kc_commit_results: *results is one malloc'd block (the array and its topic strings): release it
 * with free(); NULL and *n_results 0 when nothing was sent. App threads only.
 * kc_commit_async_results: `cb` as kc_commit_async's (on a worker, serialised with on_event,
 * exactly once), with the results valid during the call. Callback context too.
 */
typedef struct kc_commit_result {
    const char *topic;
    int32_t partition;
    int64_t offset; /* the offset sent: the next one to read */
    kc_err_t code;
    int16_t kafka_code; /* with KC_ERR_BROKER: the broker's code for this partition, else 0 */
} kc_commit_result_t;
KC_API kc_err_t kc_commit_results(kc_consumer_t *c, const kc_offset_meta_t *tps, size_t n,
                                  int timeout_ms, kc_commit_result_t **results, size_t *n_results,
                                  kc_error_t *err);
typedef void (*kc_commit_results_cb)(void *opaque, kc_err_t result, const kc_error_t *err,
                                     const kc_commit_result_t *res, size_t n);
KC_API kc_err_t kc_commit_async_results(kc_consumer_t *c, const kc_offset_meta_t *tps, size_t n,
                                        kc_commit_results_cb cb, void *opaque, kc_error_t *err);
KC_API kc_err_t kc_committed_metadata(kc_consumer_t *c, kc_offset_meta_t *tps, size_t n,
                                      int timeout_ms, char **block, kc_error_t *err);
/* Manual store (enable.auto.offset.store=false): marks `offset` (the next offset to read) as
 * committable for the partition. Any thread, usually the partition's own on_records. From the
 * partition's own callbacks no waiting: an atomic store the network thread reads at the next
 * commit; from any other thread one round trip to the network thread (which never waits for I/O
 * or a callback). With enable.auto.commit=true auto-commit and kc_close commit what was stored
 * (librdkafka's at-least-once pattern: store after processing). After kc_subscribe it
 * works for the partitions the member holds (kc_commit with tps == NULL, auto-commit and the
 * revocation's commit then send it); a partition not held is KC_ERR_NOT_FOUND, and one whose
 * revocation already ran its on_revoke is KC_ERR_STATE (a store from on_revoke still counts). */
KC_API kc_err_t kc_store_offset(kc_consumer_t *c, const char *topic, int32_t partition,
                                int64_t offset, kc_error_t *err);

/*
 * Pull-style: instead of on_records, take batch views on your own thread. Enabled when
 * cbs->on_records is NULL. Waits up to timeout_ms (0: do not wait; -1: forever) for the next
 * ready partition's view; *out is NULL on timeout. While you hold a view its partition delivers
 * nothing else (per-partition order still holds); kc_records_release(c, b, result) hands it back
 * with the same contract as on_records' return value. Any app thread; several app threads may
 * poll at once (each gets different partitions).
 * kc_poll hands out a view under the same rules as on_records starts: after kc_seek returned,
 * none from before the seek; after kc_unassign (or any revocation), none of the partitions
 * leaving; while the member is self-fenced, none of its partitions. Views prepared before such a
 * change and not yet polled are dropped unprocessed and their partitions go on as the change
 * says (on_revoke runs without waiting for a kc_poll).
 */
KC_API kc_err_t kc_poll(kc_consumer_t *c, int timeout_ms, kc_records_t **out, kc_error_t *err);
KC_API void kc_records_release(kc_consumer_t *c, kc_records_t *b, kc_cb_result_t result);

/*
 * Cluster facts an application needs before it assigns by hand (the CLI's "all partitions of -t"
 * and its -e end marks). They block the caller up to timeout_ms while the network thread asks the
 * cluster: app threads only, never callback context. Implemented by the engine.
 *
 * kc_topic_partitions: the partition count of `topic` from a fresh Metadata answer.
 * KC_ERR_NOT_FOUND when the cluster does not know the topic. Both retry, within timeout_ms, what
 * Kafka calls retriable (a leader moving or not elected yet, a lost connection).
 * kc_query_watermarks: the partition's log start (*low) and end (*high) from its leader
 * (ListOffsets earliest and latest). Under isolation.level=read_committed *high is the last stable
 * offset, which is where consumption of the partition currently ends. The partition need not be
 * assigned to this consumer. Either pointer may be NULL.
 */
KC_API kc_err_t kc_topic_partitions(kc_consumer_t *c, const char *topic, int32_t *count,
                                    int timeout_ms, kc_error_t *err);
KC_API kc_err_t kc_query_watermarks(kc_consumer_t *c, const char *topic, int32_t partition,
                                    int64_t *low, int64_t *high, int timeout_ms, kc_error_t *err);

/*
 * kc_query_watermarks for a list: every entry's log start and end in one question, each leader
 * asked once for all the partitions it leads (at 10,000 partitions, one call instead of 10,000
 * round trips). Threads, retries and read_committed (high is the last stable offset) as
 * kc_query_watermarks; the partitions need not be assigned, and one may appear more than once
 * (each gets its own answer).
 *
 * In: topic, partition. Out, per entry, whatever the call returns: err, and with KC_OK low and
 * high (else -1 both). An entry's err otherwise says why it has no answer, as
 * kc_offsets_for_times' entries do (KC_ERR_NOT_FOUND for an unknown topic or partition,
 * KC_ERR_BROKER with kafka_code, the call's own error when the question failed as a whole). The
 * call returns KC_OK when every entry has KC_OK, else the first failed entry's err, with `err`
 * naming that entry, why, and how many entries failed.
 */
typedef struct kc_watermarks {
    const char *topic;  /* in */
    int32_t partition;  /* in */
    int64_t low;        /* out */
    int64_t high;       /* out */
    int16_t kafka_code; /* out: the broker's error code with KC_ERR_BROKER, else 0 */
    kc_err_t err;       /* out */
} kc_watermarks_t;
KC_API kc_err_t kc_query_watermarks_list(kc_consumer_t *c, kc_watermarks_t *q, size_t n,
                                         int timeout_ms, kc_error_t *err);

/*
 * Offsets for times: for each entry, the earliest offset whose record timestamp is >= `timestamp`
 * (ListOffsets by time to the partition's leader, as Java's offsetsForTimes). Blocks up to
 * timeout_ms, retrying what the cluster calls retriable (a leader moving, a leader not elected
 * yet) within it: app threads only, never callback context. The partitions need not be assigned.
 *
 * In: topic, partition, timestamp (ms since the epoch, >= 0). Out, per entry, whatever the call
 * returns (a bad argument or no memory too): err, and with KC_OK the offset and that record's
 * timestamp and leader epoch, or offset = record_timestamp = -1 when no record is that late
 * (Java's null). An entry's err otherwise says why it has no answer:
 * KC_ERR_NOT_FOUND (unknown topic or partition), KC_ERR_BROKER with kafka_code (the broker's
 * refusal: when a retriable one lasted to the timeout, that one), KC_ERR_UNSUPPORTED or
 * KC_ERR_MALFORMED (a broker without a usable ListOffsets or Metadata, or whose answer does not
 * decode: not retried), KC_ERR_AUTH / KC_ERR_TLS (the login refused), KC_ERR_TRANSPORT (no
 * connection to its leader until the timeout), KC_ERR_TIMEOUT (no answer at all in time),
 * KC_ERR_CLOSED. The call returns KC_OK when every entry has KC_OK, else the first failed
 * entry's err, with `err` naming that entry, why, and how many failed. One topic-partition may
 * appear more than once (each gets its own answer).
 */
typedef struct kc_offset_time {
    const char *topic;        /* in */
    int32_t partition;        /* in */
    int64_t timestamp;        /* in */
    int64_t offset;           /* out */
    int64_t record_timestamp; /* out */
    int32_t leader_epoch;     /* out: -1 when the broker does not say (ListOffsets < v4) */
    int16_t kafka_code;       /* out: the broker's error code with KC_ERR_BROKER, else 0 */
    kc_err_t err;             /* out */
} kc_offset_time_t;
KC_API kc_err_t kc_offsets_for_times(kc_consumer_t *c, kc_offset_time_t *q, size_t n,
                                     int timeout_ms, kc_error_t *err);

/*
 * Cluster metadata: a fresh Metadata answer (never the consumer's cache) for `topics` (n names),
 * or for every topic when topics is NULL and n is 0. Topics are never created by asking. Blocks
 * up to timeout_ms: app threads only, never callback context. On KC_OK *out is the answer, owned
 * by the caller until kc_metadata_destroy; it shares nothing with the consumer, so it may
 * outlive it. A listed topic the cluster does not know is in the answer with error_code
 * UNKNOWN_TOPIC_OR_PARTITION (3) and no partitions; topics are in the broker's order, brokers
 * and each topic's partitions sorted by id.
 */
typedef struct kc_metadata_broker {
    int32_t id;
    const char *host;
    int32_t port;
    const char *rack; /* NULL when the broker has none */
} kc_metadata_broker_t;

typedef struct kc_metadata_partition {
    int32_t id;
    int16_t error_code; /* the broker's, 0 when none (LEADER_NOT_AVAILABLE: leader is -1) */
    int32_t leader;     /* broker id, -1 when none */
    int32_t leader_epoch;
    const int32_t *replicas, *isr, *offline;
    size_t n_replicas, n_isr, n_offline;
} kc_metadata_partition_t;

typedef struct kc_metadata_topic {
    const char *name;
    uint8_t id[16]; /* the topic id; all zero from a broker that has none (before Kafka 2.8) */
    int16_t error_code;
    bool internal;
    const kc_metadata_partition_t *partitions;
    size_t n_partitions;
} kc_metadata_topic_t;

typedef struct kc_metadata {
    const char *cluster_id; /* NULL when the cluster has none */
    int32_t controller_id;  /* -1 when the broker does not say */
    const kc_metadata_broker_t *brokers;
    size_t n_brokers;
    const kc_metadata_topic_t *topics;
    size_t n_topics;
} kc_metadata_t;

/* Asks the cluster for metadata, as described above. */
KC_API kc_err_t kc_metadata(kc_consumer_t *c, const char *const *topics, size_t n, int timeout_ms,
                            kc_metadata_t **out, kc_error_t *err);
/* Releases an answer of kc_metadata. */
KC_API void kc_metadata_destroy(kc_metadata_t *md);
/* A topic id as Kafka's tools print it (URL-safe base64, no padding): 22 characters and a NUL
 * into out. Any thread. */
KC_API void kc_topic_id_str(const uint8_t id[16], char out[23]);
/* The group member id the coordinator gave this consumer, NUL-terminated into buf ("" before the
 * first join and without group.id). Any thread, callback context included; no waiting.
 * KC_ERR_TOO_LARGE when buf (len bytes) is too small (buf then holds ""). */
KC_API kc_err_t kc_member_id(kc_consumer_t *c, char *buf, size_t len);

/*
 * The consumer's stats, now: one stats JSON object (README, "Stats"), the one
 * statistics.interval.ms hands to on_event, taken at the call, whether or not that interval is
 * set. For an application that reads the numbers when it needs them (at the end of a job, on a
 * health check) rather than paying for a snapshot every interval. *json is malloc'd,
 * NUL-terminated (free() it), *len its length (len may be NULL); on an error *json is NULL.
 * Any app thread, callback context included (it waits only for the network thread to take the
 * snapshot). KC_ERR_CLOSED after kc_close.
 */
KC_API kc_err_t kc_stats(kc_consumer_t *c, char **json, size_t *len, kc_error_t *err);

/*
 * The consumer's stats, now, in the Prometheus text exposition format (version 0.0.4, which
 * OpenMetrics scrapers also read), for an HTTP endpoint to serve as is. The same numbers as the
 * stats JSON (README, "Metrics"): kconsume_* gauges and *_total counters labelled with
 * client_id, and per broker (broker), partition (topic, partition; lag included), group and
 * worker (worker); string fields are labels of a *_info metric with value 1. Label values are
 * escaped as the format says (backslash, double quote, newline). *text is malloc'd,
 * NUL-terminated (free() it), *len its length (len may be NULL); on an error *text is NULL.
 * Any app thread, callback context included (it waits only for the network thread to take a
 * snapshot). KC_ERR_CLOSED after kc_close.
 */
KC_API kc_err_t kc_metrics(kc_consumer_t *c, char **text, size_t *len, kc_error_t *err);

/* The member's generation (classic) or member epoch (KIP-848) and its member id, read together
 * on the network thread, so the pair is one the coordinator gave at the same time: what an
 * application that fences its own sink (writes tagged with the generation, older ones refused)
 * needs. *generation is -1 and member_id "" while the consumer is not in a group (no
 * kc_subscribe, joining, rejoining after a fence, after kc_unsubscribe). KC_ERR_TOO_LARGE when
 * member_id (len bytes) is too small (it then holds ""). Any thread, callback context included:
 * one round trip to the network thread, which never waits for a callback. */
KC_API kc_err_t kc_group_generation(kc_consumer_t *c, int32_t *generation, char *member_id,
                                    size_t len, kc_error_t *err);
/* The id of the worker thread calling it (0 .. worker.threads-1), the same number the stats JSON
 * shows as workers[].id and partitions[].worker; -1 on any thread that is not a kconsume worker
 * (app threads, the network thread, a kc_poll caller). Ids are per consumer: two consumers in
 * one process each have a worker 0. Any thread; no waiting. */
KC_API int kc_worker_id(void);

/*
 * Orderly stop, in this order: assignment changes and kc_poll are refused from the start
 * (KC_ERR_CLOSED); fetching stops; in-flight callbacks finish and views held by app threads are
 * waited for (kc_records_release); on_revoke runs for every partition, and kc_store_offset and
 * kc_commit_async still work there (kc_commit too, from app threads, until the final commit);
 * the final commit (auto-commit) sends exactly
 * what callbacks finished (enable.auto.offset.store=true) or what was stored
 * (enable.auto.offset.store=false, on_revoke's stores included); fetch sessions close; the group
 * is left once every commit sent under the member's identity is answered (so that none is
 * refused because the leave reached the coordinator first), or when a quarter of timeout_ms (at
 * most 1 s) is left, answered or not; every thread is joined. After that
 * every call but kc_close fails with KC_ERR_CLOSED. timeout_ms (>= 0; a negative one is
 * KC_ERR_INVALID_ARG) bounds the whole call: what is still running then (a callback, a held view,
 * the group's leave, the final commit) is cut short, the rest of the close goes on, and
 * KC_ERR_TIMEOUT says what. A callback or view cut short is never interrupted and its partition is
 * never revoked or committed past it; kc_destroy waits for such callbacks. Threads: app threads
 * only, never callback context. Several threads may call it at once: one closes, the others return
 * once that close is over, with its result (a close cut short by its own timeout is KC_ERR_TIMEOUT
 * for every caller), or at their own timeout (KC_ERR_TIMEOUT); kc_close again after that: KC_OK. A
 * view polled by the closing thread itself and not released is taken back as KC_CB_RETRY (invalid
 * once kc_close is called); a kc_records_release after kc_close returned is harmless. Safe to call
 * from a signal-driven stop flag (not from inside a signal handler).
 */
KC_API kc_err_t kc_close(kc_consumer_t *c, int timeout_ms, kc_error_t *err);
/* Frees the consumer: kc_close(c, 0) first when not closed, and when another thread's kc_close
 * is still running, waits for it to finish, so kc_destroy after any returned kc_close is safe.
 * Views still held are taken back and become invalid. App threads only. */
KC_API void kc_destroy(kc_consumer_t *c);

#ifdef __cplusplus
}
#endif
#endif /* KCONSUME_H */
