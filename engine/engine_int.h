/*
 * The engine's internals, shared by engine.c, brokers.c, metadata.c, fetch/fetcher.c,
 * listoffsets.c. Owner of everything here: the network thread (see engine.h). Nothing is shared
 * with workers: records leave through the sink as kc_slice_t references, and that is the only
 * handoff.
 */
#ifndef KC_ENGINE_ENGINE_INT_H
#define KC_ENGINE_ENGINE_INT_H

#include "conn.h"
#include "coordinator.h"
#include "engine.h"
#include "part_index.h"
#include "fetch/codec.h"
#include "fetch/plan.h"
#include "md_recovery.h"
#include "proto/proto.h"
#include "versions.h"

/* One broker. Owner: network thread. Never freed before the engine (callbacks carry it). */
typedef struct kc_eng_broker {
    kc_engine_t *e;
    int32_t id;
    char addr[300]; /* "host:port" from metadata */
    kc_conn_t *conn;
    uint8_t in_metadata; /* named by the last metadata response */
    /* The Fetch in flight: the session's request and the settings it goes with, made into a
     * message at the version the connection picks (fetch/fetcher.c fetch_encode). */
    kc_session_req_t fetch_req;
    kc_fetch_settings_t fetch_set;
    kc_arena_t fetch_arena;
    kc_fetch_request_t fetch_msg;
    uint8_t rack_logged; /* said once that this broker's Fetch predates KIP-392 */
    uint8_t fetch_close; /* the in-flight request closes the session */
    int32_t fetch_epoch; /* (id, epoch) of the in-flight request, for logs */
    /* A Fetch to this broker failed at this time (0: never): as a KIP-392 read replica it is
     * not used again until KC_ENG_REPLICA_AVOID_MS later (fetch/fetcher.c, replicas_to_leaders). */
    int64_t replica_failed_ms;
    kc_engine_broker_stats_t st;
} kc_eng_broker_t;

/* How long a read replica whose Fetch failed is passed over when a leader names it again.
 * Leaders keep naming a dead follower until it leaves the ISR (replica.lag.time.max.ms, 30 s by
 * default; a few seconds when KRaft fences a killed broker); without this its partitions would
 * bounce between the leader and the dead follower meanwhile. Java does the same through
 * NetworkClient.isUnavailable(node) when it picks a read replica. */
#define KC_ENG_REPLICA_AVOID_MS 30000

typedef struct kc_eng_topic {
    char *name;
    uint8_t id[16]; /* the broker's topic id, or a synthetic one (fetch/partition.h) */
    /* The key before the last change (zero: none): sessions still holding partitions under it
     * forget them by name before Fetch v13, so the name must stay findable by it. */
    uint8_t prev_id[16];
    int16_t error;
    int32_t n_parts;
    int32_t *leader, *epoch; /* per partition index */
} kc_eng_topic_t;

/* What a kc_partition_t does not hold, kept in a parallel array (same index). */
typedef struct kc_eng_pinfo {
    char *topic;
    int32_t partition;
    void *user;
    uint8_t have_id;      /* tp.topic_id known from metadata */
    uint8_t user_paused;  /* pause()/resume(); p->paused also folds in backpressure */
    uint8_t may_fetch;    /* the runtime's last answer to sink.may_fetch (backpressure) */
    uint8_t lo_inflight;  /* ListOffsets in flight */
    uint8_t val_inflight; /* OffsetForLeaderEpoch in flight */
    int64_t reset_ts;     /* what ListOffsets asks for (-2 earliest, -1 latest, or a time) */
    int64_t lo_retry_at;  /* backoff after a failed ListOffsets/validation */
    uint64_t fetch_gen;   /* sink.fetch_gen when may_fetch was asked (0: never) */
    int64_t committed;
    uint32_t gen;  /* bumped on seek/remove: in-flight answers for an older gen are stale */
    uint8_t share; /* a share partition (share/fetcher.c): never in the Fetch plan */
    struct kc_engine_share_part_stats *share_st; /* share/fetcher.c: its counters (engine.h) */
} kc_eng_pinfo_t;

struct kc_engine {
    kc_loop_t *loop;
    kc_engine_conf_t conf;
    char *bootstrap, *client_id, *rack;
    kc_engine_sink_t sink;
    kc_fetch_plan_t plan;
    kc_fetch_settings_t fset;

    kc_eng_broker_t **brokers;
    size_t n_brokers, cap_brokers;
    kc_conn_t *bootstrap_conn;
    /* Whether metadata goes to bootstrap_conn or a named broker, and when to rebootstrap
     * (md_recovery.h). A rebootstrap runs from t_rebootstrap, never inside a connection's
     * callback (it closes connections); rebootstrap_why says what started it. */
    kc_mdr_t mdr;
    kc_loop_timer_t t_rebootstrap;
    const char *rebootstrap_why;
    uint8_t rebootstrapping; /* inside the rebootstrap: no connection handed out */
    size_t md_rr;            /* round robin over named brokers when none is READY */

    kc_eng_topic_t *topics; /* never shrinks: a forgotten partition's topic keeps its name */
    size_t n_topics, cap_topics;
    uint64_t n_synthetic;   /* synthetic topic ids handed out */
    kc_fetch_names_t names; /* the Fetch codec's view of `topics` */
    /* By API key, the kinds of kc_eng_api_unusable reports made (bit 1 unsupported, 2
     * malformed, 4 a refused version). */
    uint8_t refused[KC_API_KEY_MAX];

    kc_partition_t *parts; /* contiguous: kc_fetch_plan_compute takes the array */
    kc_eng_pinfo_t *info;
    size_t n_parts, cap_parts;
    /* Positions in parts/info by (info.topic, partition) and, once the topic id is known
     * (info.have_id), by parts[].tp: kc_eng_find_part / kc_eng_find_tp. */
    kc_pidx_t by_name, by_tp;

    /* metadata */
    uint8_t md_inflight, md_wanted;
    int64_t md_next_ms; /* next periodic refresh */
    int64_t md_retry_ms;
    int md_failures;
    uint64_t rng;

    kc_loop_timer_t timer;
    uint8_t driving, drive_again, closing, closed;
    /* The last pass left a partition held back by the runtime's backpressure (may_fetch false)
     * on a broker with no Fetch in flight: only then can kc_engine_wake change what is fetched
     * (engine.c). */
    uint8_t held_back;
    /* Partitions changed (kc_eng_drive, kc_eng_drive_soon) and no pass has run since: the next
     * one tells the plan (kc_fetch_plan_changed), and kc_eng_drive_quiet must not stand in for
     * it. */
    uint8_t dirty;
    int64_t timer_at; /* when the drive timer fires (kc_now_ms), as the last pass armed it */
    uint32_t gen;
    kc_engine_stats_t stats;
    struct kc_coord *coord;       /* coordinator.c */
    struct kc_eng_query *queries; /* query.c: the application's questions not answered yet */
    kc_engine_md_cb md_cb;
    void *md_cb_opaque;
    struct kc_eng_share *share; /* share/fetcher.c: NULL unless kc_engine_share_enable */
    struct kc_eng_tlm *tlm;     /* telemetry/telemetry.c: NULL unless kc_engine_telemetry_start */
};

/* engine.c */
void kc_eng_drive(kc_engine_t *e);
/* A drive on the loop's next pass instead of now: for calls that come in batches (an
 * assignment of N partitions is N kc_engine_add, a pause of all of them N kc_engine_pause),
 * which then cost one drive rather than N, since a drive visits every partition (N drives are
 * O(N^2) visits). Inside a drive: that drive goes round again. */
void kc_eng_drive_soon(kc_engine_t *e);
/* After a Fetch answer from broker_id that named no partition and asked for no throttle: sends
 * that broker the same partitions again without a pass where nothing else can have changed
 * (kc_fetch_plan_settled, no pass asked for, no metadata wanted, no timer due, no share
 * sessions), else drives. */
void kc_eng_drive_quiet(kc_engine_t *e, int32_t broker_id);
ssize_t kc_eng_find_part(const kc_engine_t *e, const char *topic, int32_t partition);
ssize_t kc_eng_find_tp(const kc_engine_t *e, const kc_tp_t *tp);
/* Gives partition i its topic id (metadata), keeping the by_tp index in step. */
void kc_eng_part_set_id(kc_engine_t *e, size_t i, const uint8_t id[16]);
void kc_eng_report(kc_engine_t *e, size_t i, const kc_error_t *err);
void kc_eng_apply_event(kc_engine_t *e, size_t i, const kc_partition_event_t *ev);

/* At close: runs the loop until `busy` says nothing is left in flight or the deadline passes. */
void kc_eng_run_while(kc_engine_t *e, int64_t deadline, bool (*busy)(kc_engine_t *e));

/* telemetry/telemetry.c: the terminating push, waited for until `deadline` (kc_engine_close);
 * freeing. */
void kc_eng_telemetry_close(kc_engine_t *e, int64_t deadline);
void kc_eng_telemetry_free(kc_engine_t *e);

/* brokers.c */
kc_eng_broker_t *kc_eng_broker_get(kc_engine_t *e, int32_t id);
/* Creates or updates a broker from metadata; returns 1 when its address changed. */
int kc_eng_broker_update(kc_engine_t *e, int32_t id, const char *host, int32_t port);
/* The broker's connection, started on first use; NULL if the broker is unknown. */
kc_conn_t *kc_eng_broker_conn(kc_engine_t *e, int32_t id);
/* The connection metadata (and FindCoordinator, the queries) is asked on, as md_recovery.h
 * decides: bootstrap.servers until an answer named brokers, then a READY named broker, else the
 * next named broker in turn. NULL while a rebootstrap is pending (it runs from a timer). */
kc_conn_t *kc_eng_any_conn(kc_engine_t *e);
/* A READY connection to a named broker, else the bootstrap connection when it is READY; NULL
 * otherwise. Unlike kc_eng_any_conn it opens nothing and is no look for md_recovery.h: for
 * requests that may wait for a connection the engine has anyway (telemetry). */
kc_conn_t *kc_eng_ready_conn(kc_engine_t *e);
/* A REBOOTSTRAP_REQUIRED answer (metadata.c). */
void kc_eng_rebootstrap_required(kc_engine_t *e);
/* Every Metadata answer, whoever asked (the engine, a classic member for its topics): a
 * top-level error_code (v13+, KIP-1102) refuses the whole answer, which holds no brokers or
 * topics; REBOOTSTRAP_REQUIRED also starts the re-bootstrap. True when refused. */
bool kc_eng_metadata_refused(kc_engine_t *e, int16_t error_code);
void kc_eng_brokers_init(kc_engine_t *e);
/* A new, started connection to `servers` with the engine's settings (client id, timeouts,
 * reconnect backoff); NULL (logged) on failure. The caller owns it. */
kc_conn_t *kc_eng_conn_open(kc_engine_t *e, const char *servers);
void kc_eng_brokers_free(kc_engine_t *e);

/* coordinator.c: FindCoordinator for one group (key type 0), shared by the offsets calls and the
 * classic group driver. decode: 0 with "host:port" ("[v6]:port") in addr and the node id; the
 * Kafka error code the coordinator entry carries; KC_ENG_FC_UNDECODABLE; KC_ENG_FC_NONE_NAMED.
 * The two are outside int16_t, so no Kafka code (UNKNOWN_SERVER_ERROR is -1) reads as one. */
#define KC_ENG_FC_UNDECODABLE (-100000)
#define KC_ENG_FC_NONE_NAMED  (-100001)
kc_err_t kc_eng_fc_encode(kc_wbuf_t *out, int16_t version, const char *group);
int kc_eng_fc_decode(const kc_buf_t *frame, size_t body_off, int16_t version, char *addr,
                     size_t cap, int32_t *node_id);

/* A request of `api_key` the broker cannot serve, reported to the sink once per API and kind,
 * for no partition; the kind is why->code: KC_ERR_UNSUPPORTED, no version in common (`why`
 * naming the API and both ranges); KC_ERR_MALFORMED, an answer that does not decode
 * (kc_wire_bad_answer); anything else, an answer refusing a version the broker itself offered
 * (UNSUPPORTED_VERSION). None of them goes away until the broker changes, so the request's owner
 * stops retrying or retries only at its usual backoff; saying so at every retry would bury the
 * one line that explains why nothing is consumed. */
void kc_eng_api_unusable(kc_engine_t *e, int16_t api_key, const kc_error_t *why);
/* A request of `api_key` that its connection failed (`rc` from the callback): the failures that
 * are the broker's (no version in common, an answer whose header does not decode) go to
 * kc_eng_api_unusable with the connection's reason (kc_conn_refusal); a transport failure is
 * the caller's to retry and says nothing here. */
void kc_eng_conn_failed(kc_engine_t *e, int16_t api_key, const kc_conn_t *conn, kc_err_t rc);
/* An answer of `api_key` at `version` on `conn` whose body did not decode (`decode_err`): to
 * kc_eng_api_unusable, naming the API, the version and the broker (kc_wire_bad_answer). */
void kc_eng_bad_answer(kc_engine_t *e, int16_t api_key, const kc_conn_t *conn, int16_t version,
                       const kc_error_t *decode_err);

/* metadata.c */
void kc_eng_metadata_maybe_send(kc_engine_t *e, int64_t now_ms);
/* The Fetch codec's names (fetch/codec.h) over the topic table. */
void kc_eng_names_init(kc_engine_t *e);
void kc_eng_metadata_apply_part(kc_engine_t *e, size_t i);
void kc_eng_topics_free(kc_engine_t *e);
const kc_eng_topic_t *kc_eng_topic_find(const kc_engine_t *e, const char *name);

/* fetch/fetcher.c */
void kc_eng_fetch_send(kc_engine_t *e, kc_fetch_send_t *s);

/* share/fetcher.c: the share sessions' part of a drive pass (wake: the earliest retry), the
 * closing ShareAcknowledges (waits up to deadline), a removed partition leaving its session,
 * and freeing. */
void kc_eng_share_drive(kc_engine_t *e, int64_t now, int64_t *wake);
void kc_eng_share_close(kc_engine_t *e, int64_t deadline);
void kc_eng_share_forget(kc_engine_t *e, const kc_tp_t *tp);
void kc_eng_share_free(kc_engine_t *e);

/* listoffsets.c */
/* Partition i, in the drive's pass: whether it waits for a ListOffsets or OffsetForLeaderEpoch
 * that may go now. Otherwise, if it waits for one, its retry time lowers *wake_ms, or metadata
 * is wanted (no leader or topic id yet). Sends nothing: the pass stays free of I/O. */
bool kc_eng_offsets_due(kc_engine_t *e, size_t i, int64_t now_ms, int64_t *wake_ms);
/* Sends every request kc_eng_offsets_due says may go: one per leader, with every partition of
 * that leader that waits. */
void kc_eng_offsets_send_due(kc_engine_t *e, int64_t now_ms);

#endif
