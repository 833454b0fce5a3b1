/*
 * The consumer engine: the network thread's side of a consumer. It owns the metadata cache, one
 * connection per broker, the fetch plan (one Fetch per broker per round, KIP-227 sessions), the
 * per-partition fetch state, ListOffsets / OffsetForLeaderEpoch, and hands record bytes to a sink
 * (the runtime's dispatcher, or a test) without copying them.
 *
 * Threads: EVERY function here runs on the network thread that owns `loop` (kc_engine_new
 * included). Application threads reach the engine only through that thread's command queue
 * (kc_netthread_post / kc_netthread_call): runtime/consumer.c turns kc_assign() etc. into
 * commands that call these functions there. Sink callbacks are called on the network thread.
 *
 * Files: engine.c (lifecycle, commands, the drive loop, stats), brokers.c (broker table and
 * connections), metadata.c (metadata cache), fetch/fetcher.c (Fetch send/receive), listoffsets.c
 * (ListOffsets and OffsetForLeaderEpoch). The pure decisions are fetch/session.h, fetch/plan.h,
 * fetch/partition.h.
 */
#ifndef KC_ENGINE_ENGINE_H
#define KC_ENGINE_ENGINE_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "conn.h"
#include "conn_security.h"
#include "loop.h"
#include "fetch/partition.h"
#include "telemetry/otlp.h"

typedef struct kc_engine kc_engine_t;

/* Where records and partition-level reports go. Called on the network thread. */
/* share_acked's code for acknowledgements dropped before they left: an answer acquired their
 * records again, their delivery's lock having run out at the broker. */
#define KC_ENGINE_SHARE_UNSENT (-2)

typedef struct kc_engine_sink {
    /* One or more consecutive complete record batches of a partition, in offset order (all of
     * them that one response holds, unless an aborted transaction's batch or a malformed header
     * comes between): `s` references the response frame (no copy) of the Fetch answered by
     * `broker` (the leader, or the KIP-392 replica read from) and holds one reference the sink
     * now owns (kc_slice_release it, or pass it on). Deliver records in [first, next), which
     * covers every batch of the slice: the first may start before the position (after a seek
     * into it), and those records are the sink's to skip. CRCs and decompression are the
     * sink's (the workers') business. Return KC_OK, or an error to refuse the slice (e.g. a full
     * ring): the reference stays with the engine, the position stays before the whole slice,
     * and the rest of the response for this partition is dropped (asked again by the next
     * request). */
    kc_err_t (*records)(void *opaque, void *part_user, const char *topic, int32_t partition,
                        int32_t broker, kc_slice_t *s, int64_t first, int64_t next);
    /* Something the caller must hear about this partition (reset=none out of range, a truncation,
     * a malformed batch skipped, an authorization error). */
    void (*error)(void *opaque, void *part_user, const char *topic, int32_t partition,
                  const kc_error_t *e);
    /* Backpressure: may the partition be fetched now? NULL = always. */
    int (*may_fetch)(void *opaque, void *part_user);
    void *opaque;
    /* Backpressure: bytes the sink can still take (queued.max.bytes minus what is buffered);
     * each Fetch asks for at most this divided by the number of brokers (Kafka still returns a
     * first batch larger than max_bytes, so progress never stops). NULL = fetch.max.bytes. */
    int64_t (*budget)(void *opaque);
    /* A Fetch answer left the partition's position at the end of its log, `end` (the high
     * watermark, or the last stable offset under read_committed): after every answer that does,
     * so once per long poll while nothing new comes. NULL = not told. */
    void (*at_end)(void *opaque, void *part_user, int64_t end);
    /* Share groups (kc_engine_share_add): acquired records of a share partition, as `records`
     * above, except that every record in [first, next) was acquired by this member with
     * `delivery_count` and must be acknowledged (kc_engine_share_ack) once processed; records
     * outside it are not this member's. A refusal releases them at once. `lock_deadline`
     * (kc_now_ms, 0: not known): their acquisition lock has surely run out by then.
     * NULL: no share group. */
    kc_err_t (*share_records)(void *opaque, void *part_user, const char *topic, int32_t partition,
                              int32_t broker, kc_slice_t *s, int64_t first, int64_t next,
                              int16_t delivery_count, int64_t lock_deadline);
    /* Share groups: the broker answered the acknowledgements of `topic` / `partition` sent in one
     * request, covering offsets first..last, `records` of them verdicts (the rest gaps). `code`
     * 0: applied; > 0 the broker's refusal (`why` its message, may be NULL); -1 no usable
     * answer; KC_ENGINE_SHARE_UNSENT not sent (`why` says why). `topic` is "" when the engine no
     * longer knows the topic's name. NULL: not told. */
    void (*share_acked)(void *opaque, const char *topic, int32_t partition, int64_t first,
                        int64_t last, int64_t records, int16_t code, const char *why);
    /* Backpressure: a number (at least 1) the sink changes whenever a `may_fetch` answer of yes
     * may have turned into no. A partition answered yes is not asked again until it changes; one
     * answered no is asked on every pass, since what makes it yes again (a worker draining it) is
     * not counted. At 10,000 idle partitions that is the difference between asking all of them
     * after every Fetch answer and asking none. NULL: every partition is asked on every pass. */
    uint64_t (*fetch_gen)(void *opaque);
} kc_engine_sink_t;

/* Settings, with Kafka's names. Copied by kc_engine_new (strings too). */
typedef struct kc_engine_conf {
    const char *bootstrap_servers;
    const char *client_id;
    const char *client_rack;           /* NULL: no KIP-392 */
    int32_t fetch_max_wait_ms;         /* fetch.max.wait.ms (500) */
    int32_t fetch_min_bytes;           /* fetch.min.bytes (1) */
    int32_t fetch_max_bytes;           /* fetch.max.bytes (52428800) */
    int32_t max_partition_fetch_bytes; /* max.partition.fetch.bytes (1048576) */
    int8_t isolation_level;            /* 1 read_committed (see fetch/codec.h for why) */
    kc_offset_reset_t auto_offset_reset;
    int64_t metadata_max_age_ms;  /* 300000 */
    int64_t retry_backoff_ms;     /* 100 */
    int64_t retry_backoff_max_ms; /* 1000 */
    int request_timeout_ms;       /* 30000 */
    /* Every connection the engine opens (io/conn.h): socket.connection.setup.timeout.ms,
     * reconnect.backoff.ms, reconnect.backoff.max.ms. */
    int connect_timeout_ms;       /* 10000 */
    int reconnect_backoff_ms;     /* 50 */
    int reconnect_backoff_max_ms; /* 1000 */
    int keepalive;                /* socket.keepalive.enable: SO_KEEPALIVE on every socket */
    /* connections.max.idle.ms (0 = never) for the broker, bootstrap and coordinator
     * connections; a classic member's own coordinator connection is kept busy by heartbeats
     * and not idle-closed. */
    int idle_timeout_ms;
    /* security.protocol for every connection the engine opens (NULL: PLAINTEXT); must outlive
     * the engine and its connections (io/conn_security.h). */
    const kc_conn_security_t *security;
    /* client.dns.lookup=resolve_canonical_bootstrap_servers_only (io/conn_addr.h). */
    int dns_canonical_bootstrap;
    /* metadata.recovery.strategy (1 rebootstrap, Java 4's default; 0 none) and
     * metadata.recovery.rebootstrap.trigger.ms (300000): engine/md_recovery.h. */
    int rebootstrap;
    int64_t rebootstrap_trigger_ms;
} kc_engine_conf_t;

void kc_engine_conf_defaults(kc_engine_conf_t *c);

kc_err_t kc_engine_new(kc_engine_t **out, kc_loop_t *loop, const kc_engine_conf_t *conf,
                       const kc_engine_sink_t *sink, kc_error_t *err);
/* Closes fetch sessions (S,-1) and waits for their answers up to timeout_ms by running the loop;
 * then closes connections. Call once, from a network-thread command. */
void kc_engine_close(kc_engine_t *e, int timeout_ms);
/* Frees everything (closes first if not closed). The loop must be run afterwards for the
 * connections to finish closing (kc_conn_close). */
void kc_engine_free(kc_engine_t *e);

/* ---- assignment and positions ------------------------------------------------------------ */

/* Adds a partition (incremental assign). `offset`: >= 0 start there; KC_ENGINE_START_EARLIEST /
 * _LATEST; KC_ENGINE_START_RESET applies auto.offset.reset. `user` goes back to the sink.
 * KC_ERR_STATE if already assigned. */
#define KC_ENGINE_START_LATEST   (-1)
#define KC_ENGINE_START_EARLIEST (-2)
#define KC_ENGINE_START_RESET    (-3)
kc_err_t kc_engine_add(kc_engine_t *e, const char *topic, int32_t partition, int64_t offset,
                       void *user, kc_error_t *err);
/* Removes a partition: it leaves its broker's session (forgotten once, on the next request).
 * Records of it in responses still in flight are dropped. */
kc_err_t kc_engine_remove(kc_engine_t *e, const char *topic, int32_t partition, kc_error_t *err);

typedef enum kc_engine_seek {
    KC_ENGINE_SEEK_OFFSET = 0,
    KC_ENGINE_SEEK_BEGINNING,
    KC_ENGINE_SEEK_END,
    KC_ENGINE_SEEK_TIMESTAMP,
} kc_engine_seek_t;
kc_err_t kc_engine_seek(kc_engine_t *e, const char *topic, int32_t partition, kc_engine_seek_t kind,
                        int64_t value, kc_error_t *err);
kc_err_t kc_engine_pause(kc_engine_t *e, const char *topic, int32_t partition, int paused,
                         kc_error_t *err);
/* Call when backpressure lifted (the runtime drained): re-plans fetches on the loop's next turn,
 * where a plan can change (engine.c). */
void kc_engine_wake(kc_engine_t *e);

/* ---- share groups (engine/share/fetcher.c) ------------------------------------------------- */

/* Makes the engine a share-group member's (KIP-932): partitions added with kc_engine_share_add
 * are fetched with ShareFetch under `group_id`, never with Fetch; each ShareFetch asks for
 * max_records (0: 500). With record_limit (KIP-1206), the broker acquires no more than asked,
 * cutting record batches, and the member holds at most max_records records awaiting verdicts:
 * it asks for what is left and fetches nothing while none is (ShareFetch v2, Kafka 4.2+).
 * Nothing is fetched before kc_engine_share_member names the member. */
kc_err_t kc_engine_share_enable(kc_engine_t *e, const char *group_id, int32_t max_records,
                                bool record_limit, kc_error_t *err);
/* The member id the group coordinator gave (NULL or "": none yet). */
void kc_engine_share_member(kc_engine_t *e, const char *member_id);
/* A share partition; removed with kc_engine_remove (acknowledgements still pending for it are
 * sent all the same). `user` goes to the sink's share_records. */
kc_err_t kc_engine_share_add(kc_engine_t *e, const char *topic, int32_t partition, void *user,
                             kc_error_t *err);
/* The verdict on acquired offsets [first, last] of a share partition, handed out with
 * `delivery_count` (type: 0 GAP, 1 ACCEPT, 2 RELEASE, 3 REJECT, share/acks.h), sent with the
 * partition's next ShareFetch (or ShareAcknowledge). KC_ERR_STATE, nothing sent, for an offset
 * acknowledged twice and for a delivery whose lock ran out or whose records were handed out
 * again before the verdict (share/held.h). */
kc_err_t kc_engine_share_ack(kc_engine_t *e, const char *topic, int32_t partition, int64_t first,
                             int64_t last, int16_t delivery_count, int type, kc_error_t *err);
/* When the lock of `offset` of that delivery has surely run out (kc_now_ms), as the engine knows
 * it now; -1 when the member does not hold it. */
int64_t kc_engine_share_deadline(const kc_engine_t *e, const char *topic, int32_t partition,
                                 int64_t offset, int16_t delivery_count);
/* Acquired offsets [first, last] of that delivery were not handed to the application: their
 * lock ran out first. Nothing is sent; they are held no more (counted in `lapsed`). */
void kc_engine_share_lapsed(kc_engine_t *e, const char *topic, int32_t partition, int64_t first,
                            int64_t last, int16_t delivery_count);
typedef struct kc_engine_share_stats {
    uint64_t fetches;     /* ShareFetch answers */
    uint64_t delivered;   /* acquired records handed to the sink */
    uint64_t refused;     /* acquired records the sink refused (released at once) */
    uint64_t acks_queued; /* verdicts given through kc_engine_share_ack */
    uint64_t acked[4];    /* acknowledged and answered without error, by type */
    uint64_t ack_errors;  /* refused by the broker (lock expired, ...) */
    uint64_t ack_failed;  /* the same, as reported per batch (logged) */
    uint64_t ack_lost;    /* their request got no usable answer */
    uint64_t ack_late;    /* not sent: their delivery's lock ran out before the verdict */
    uint64_t lapsed;      /* not delivered: their lock ran out before their view started */
    uint64_t renewed;     /* records whose lock the broker renewed (kc_engine_share_renew) */
} kc_engine_share_stats_t;
void kc_engine_share_stats(const kc_engine_t *e, kc_engine_share_stats_t *out);
/* One share partition's records, counted while it is assigned (from kc_engine_share_add to
 * kc_engine_remove; what is answered after that counts in the totals only). */
typedef struct kc_engine_share_part_stats {
    uint64_t acquired;   /* acquired for this member, records and gaps */
    uint64_t delivered;  /* handed to the sink */
    uint64_t refused;    /* refused by the sink, released at once */
    uint64_t acked[4];   /* acknowledged and answered without error, by type (0: gaps) */
    uint64_t ack_errors; /* refused by the broker */
    uint64_t ack_lost;   /* their request got no usable answer */
    uint64_t ack_late;   /* not sent: their delivery's lock ran out, or it was handed out again */
    uint64_t lapsed;     /* not delivered: their lock ran out before their view started */
    uint64_t renewed;    /* records whose lock the broker renewed */
    int64_t held;        /* now: delivered, awaiting their verdicts */
} kc_engine_share_part_stats_t;
/* KC_ERR_NOT_FOUND unless topic[partition] is a share partition of the engine. */
kc_err_t kc_engine_share_part_stats(const kc_engine_t *e, const char *topic, int32_t partition,
                                    kc_engine_share_part_stats_t *out);
/* One share session (one per broker that leads a share partition). */
typedef struct kc_engine_share_session_stats {
    int32_t broker, epoch; /* epoch: the next request's (0: opens, share/session.h) */
    uint64_t requests, resets, opened;
    uint64_t acquired, acked[4], ack_errors, ack_lost, ack_late, lapsed, renewed, bad_answers;
    size_t partitions; /* in the session now, fetched or awaiting verdicts */
    int64_t held;
} kc_engine_share_session_stats_t;
/* The sessions' stats into out[0..cap); returns how many sessions there are. */
size_t kc_engine_share_session_stats(const kc_engine_t *e, kc_engine_share_session_stats_t *out,
                                     size_t cap);

/* ---- client telemetry (engine/telemetry/) -------------------------------------------------- */

/* A push's content: the metrics (telemetry/otlp.h, named as Java names them) and the Resource
 * attributes that say who the client is. Filled by the collect hook. */
typedef struct kc_engine_tlm_snapshot {
    kc_tlm_points_t points;
    kc_tlm_points_t resource; /* one point per attribute: attrs[0] is the key and value */
} kc_engine_tlm_snapshot_t;

typedef struct kc_engine_telemetry {
    /* Called on the network thread for every push, the terminating one at kc_engine_close
     * included. */
    void (*collect)(void *opaque, kc_engine_tlm_snapshot_t *out);
    void *opaque;
    const char *scope_version; /* the client's version, for the InstrumentationScope */
} kc_engine_telemetry_t;

/* Starts KIP-714 client telemetry (engine/telemetry/state.h has the rules): the engine asks a
 * broker for the cluster's metrics subscription and pushes what it requests, collected through
 * `hooks` (copied), until kc_engine_close sends the terminating push. A cluster without the
 * APIs (Kafka before 3.7, or no telemetry plugin on the broker) stops it quietly. */
kc_err_t kc_engine_telemetry_start(kc_engine_t *e, const kc_engine_telemetry_t *hooks,
                                   kc_error_t *err);

typedef struct kc_engine_telemetry_stats {
    const char *state;           /* off, asking, subscribed, pushing, stopped */
    const char *stopped;         /* why it stopped, "" while running */
    char client_instance_id[37]; /* "" until the broker gave one */
    int32_t subscription_id;
    int32_t push_interval_ms;
    int32_t requested_metrics; /* prefixes requested; -1: all */
    int8_t compression;        /* Kafka's codec id: the last push's, else the one chosen */
    uint64_t subscription_requests, pushes, push_errors, pushes_skipped;
    uint64_t last_push_bytes;   /* the last push's metrics, as sent (compressed) */
    uint32_t last_push_metrics; /* data points in it */
} kc_engine_telemetry_stats_t;
void kc_engine_telemetry_stats(const kc_engine_t *e, kc_engine_telemetry_stats_t *out);

/* ---- metadata changes ---------------------------------------------------------------------- */

/* What changed in the cluster, for the modules above the engine (group assignors re-balance on a
 * partition count change). Called on the network thread, after the engine applied the change. */
typedef enum kc_engine_md_change {
    KC_ENGINE_MD_PARTITION_COUNT = 1, /* `topic` now has `value` partitions */
    KC_ENGINE_MD_BROKER_ADDRESS = 2,  /* broker `value` moved to a new host:port */
} kc_engine_md_change_t;
typedef void (*kc_engine_md_cb)(void *opaque, kc_engine_md_change_t what, const char *topic,
                                int32_t value);
void kc_engine_on_metadata_change(kc_engine_t *e, kc_engine_md_cb cb, void *opaque);

/* ---- stats --------------------------------------------------------------------------------- */

typedef struct kc_engine_broker_stats {
    int32_t broker_id;
    const char *state; /* its data connection now: kc_engine_conn_state_name(); static string */
    uint64_t fetch_requests;
    uint64_t fetch_request_bytes;
    uint64_t fetch_partitions_sent;
    uint64_t fetch_forgotten_sent;
    uint64_t fetch_responses;
    uint64_t fetch_session_resets;
    uint64_t fetch_session_fallbacks; /* answers that left the broker sessionless */
    uint64_t fetch_errors;
    uint64_t fetch_record_bytes; /* record batch bytes handed to the sink from this broker */
    int32_t fetch_session_id;
    int32_t fetch_session_epoch;
    uint64_t last_request_bytes;
    uint64_t last_request_parts;
    uint64_t fetch_request_bytes_min; /* smallest / largest Fetch sent (perf: incremental size) */
    uint64_t fetch_request_bytes_max;
    const char *io_backend;
    /* Its data connection's TCP connects and KIP-368 re-authentications, totals (a token
     * refresh shows as a reauth, not a connect). */
    uint64_t connects, reauths;
} kc_engine_broker_stats_t;

/* The stats name of a broker connection's state: "idle" (known from metadata, no connection
 * opened: nothing needed it yet), "connecting", "tls" (TLS handshake), "apiversions", "auth"
 * (SASL), "up", "backoff" (down after `failures` failed attempts, waiting to reconnect), "down"
 * (closed or resetting), "failed" (TLS or authentication refused: no reconnects). Pure. */
const char *kc_engine_conn_state_name(int have_conn, kc_conn_state_t st, int failures);

/* Fills up to `max` brokers (those ever connected); returns the number of brokers known. */
size_t kc_engine_broker_stats(const kc_engine_t *e, kc_engine_broker_stats_t *out, size_t max);

typedef struct kc_engine_part_stats {
    int64_t position;
    int64_t committed; /* -1 unknown: the last offset a commit through this engine stored for
                          the partition (coordinator.c, any identity), or the committed offset
                          its owner started from (kc_engine_set_committed) */
    int64_t high_watermark;
    int64_t last_stable_offset;
    int64_t lag;
    int32_t leader_id;
    kc_fetch_state_t state;
} kc_engine_part_stats_t;

kc_err_t kc_engine_part_stats(const kc_engine_t *e, const char *topic, int32_t partition,
                              kc_engine_part_stats_t *out, kc_error_t *err);
/* Records `offset` as the partition's committed offset in its stats (an assigned partition
 * only; others are ignored): for a start read from OffsetFetch. Network thread. */
void kc_engine_set_committed(kc_engine_t *e, const char *topic, int32_t partition, int64_t offset);

/* Engine-wide counters. */
typedef struct kc_engine_stats {
    uint64_t metadata_requests;
    uint64_t metadata_changes; /* leader/partition-count/broker-address changes seen */
    uint64_t list_offsets_requests;
    uint64_t validations;
    uint64_t truncations;
    uint64_t malformed_batches;
    uint64_t stale_dropped;   /* response partitions dropped as stale */
    uint64_t aborted_skipped; /* read_committed: aborted batches not delivered (fetch/fetcher.c) */
    uint64_t
        replica_fallbacks, /* KIP-392: partitions sent back to the leader by a failed replica */
        replica_avoided;   /* KIP-392: a named replica passed over, its Fetch failed recently */
    uint64_t idle_closes;  /* connections closed by connections.max.idle.ms */
    uint64_t rebootstraps; /* KIP-899: named brokers forgotten, back to bootstrap.servers */
    uint64_t drives;       /* passes over every partition (kc_eng_drive) */
    uint64_t resends;      /* Fetch requests sent again after an answer naming no partition,
                              without a pass (kc_eng_drive_quiet) */
} kc_engine_stats_t;
void kc_engine_stats(const kc_engine_t *e, kc_engine_stats_t *out);

#endif
