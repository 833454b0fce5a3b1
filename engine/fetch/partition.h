/*
 * The engine's record of one assigned partition: where we read from, where the broker says the
 * log is, and whether it may be fetched right now.
 *
 * Owner: network thread. Nothing here is read by workers; what a worker needs (the batches, the
 * processed-up-to offset) travels through the runtime's queues, never through this struct.
 */
#ifndef KC_ENGINE_FETCH_PARTITION_H
#define KC_ENGINE_FETCH_PARTITION_H

#include <stdint.h>
#include <string.h>

#include "base/err.h"

/* A partition as Fetch v13+ names it: the topic id, not the name. A topic deleted and recreated
 * under the same name gets a new id, so it is a different partition here (the old one is
 * forgotten, the new one added) — exactly what the broker's session does.
 *
 * Brokers before Kafka 2.8 (Metadata before v10) name topics without ids. The engine's metadata
 * cache then gives each such topic a synthetic id (kc_tp_synthetic_id), so a partition has one
 * key whatever the broker's age and the session, the plan and the engine's lookups stay keyed by
 * kc_tp_t; the Fetch codec turns ids back into names for the versions that carry names. */
typedef struct kc_tp {
    uint8_t topic_id[16];
    int32_t partition;
} kc_tp_t;

/* The id's bytes from `off` as a big-endian number: comparing two of them orders ids as memcmp
 * does, without its call (a session's diff compares every partition it holds, per Fetch). */
static inline uint64_t kc_tp_id_word(const kc_tp_t *t, size_t off)
{
    const uint8_t *p = t->topic_id + off; /* shifts: any byte order (compilers load and swap) */
    return (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 | (uint64_t)p[2] << 40 |
           (uint64_t)p[3] << 32 | (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 |
           (uint64_t)p[6] << 8 | p[7];
}

static inline int kc_tp_cmp(const kc_tp_t *a, const kc_tp_t *b)
{
    _Static_assert(sizeof a->topic_id % 8 == 0, "ids compare as whole 64-bit words");
    for (size_t off = 0; off < sizeof a->topic_id; off += 8) {
        uint64_t x = kc_tp_id_word(a, off), y = kc_tp_id_word(b, off);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return (a->partition > b->partition) - (a->partition < b->partition);
}

/* The n-th synthetic topic id (n >= 0): eight zero bytes, then 0x80 | n in big-endian order.
 * Kafka assigns topic ids with Uuid.randomUuid(), a version-4 UUID whose seventh byte is 0x4?,
 * so an id whose first eight bytes are zero is never one of them; the high bit of the second
 * half keeps it apart from Kafka's reserved ZERO_UUID and METADATA_TOPIC_ID (0 and 1). */
static inline void kc_tp_synthetic_id(uint8_t out[16], uint64_t n)
{
    uint64_t lo = n | (UINT64_C(1) << 63);
    memset(out, 0, 8);
    for (int i = 0; i < 8; i++)
        out[8 + i] = (uint8_t)(lo >> (56 - 8 * i));
}

static inline int kc_tp_id_is_synthetic(const uint8_t id[16])
{
    static const uint8_t zero[8];
    return memcmp(id, zero, 8) == 0 && (id[8] & 0x80);
}

/* Why a partition is or is not fetchable. Only ACTIVE partitions enter a broker's wanted set;
 * every other state takes the partition out of the fetch session (it is forgotten, and added
 * again when it becomes ACTIVE), so the broker never fetches data we would discard. */
typedef enum kc_fetch_state {
    KC_FS_ACTIVE = 0,       /* fetch from `position` */
    KC_FS_AWAIT_RESET,      /* needs ListOffsets (auto.offset.reset or a seek to time/end) */
    KC_FS_AWAIT_VALIDATION, /* leader changed: OffsetForLeaderEpoch before fetching (KIP-320) */
    KC_FS_AWAIT_METADATA,   /* leader unknown or moved: wait for a metadata refresh */
    KC_FS_BACKOFF,          /* a partition error: retry at `backoff_until_ms` */
    KC_FS_STOPPED,          /* an error was reported to the caller (e.g. out of range with
                               auto.offset.reset=none); only a seek makes it ACTIVE again */
} kc_fetch_state_t;

#define KC_NO_BROKER (-1)
#define KC_NO_EPOCH  (-1)
#define KC_NO_OFFSET (-1)

/* Owner: network thread. */
typedef struct kc_partition {
    kc_tp_t tp;
    int64_t position;           /* next offset to fetch */
    int32_t position_epoch;     /* leader epoch of the record before `position` (KIP-320), or -1 */
    int32_t leader_id;          /* from metadata, KC_NO_BROKER when unknown */
    int32_t leader_epoch;       /* current leader epoch from metadata, sent in Fetch */
    int32_t preferred_replica;  /* KIP-392 read replica named by the leader, or KC_NO_BROKER */
    int64_t preferred_until_ms; /* the replica choice expires (metadata.max.age.ms) */
    int64_t high_watermark;     /* from the last response that carried the partition */
    int64_t last_stable_offset;
    int64_t log_start_offset;
    int64_t lag;       /* (hw or lso, by isolation level) - position; -1 unknown */
    int32_t max_bytes; /* max.partition.fetch.bytes for this partition */
    uint8_t paused;    /* pause()/resume(): independent of `state` */
    kc_fetch_state_t state;
    int64_t backoff_until_ms; /* KC_FS_BACKOFF only */
    int32_t backoff_attempts; /* consecutive partition errors, for exponential backoff */
} kc_partition_t;

/* A fresh record: no position yet (awaiting reset), nothing known about the log. */
static inline void kc_partition_init(kc_partition_t *p, const kc_tp_t *tp, int32_t max_bytes)
{
    memset(p, 0, sizeof *p);
    p->tp = *tp;
    p->position = KC_NO_OFFSET;
    p->position_epoch = KC_NO_EPOCH;
    p->leader_id = KC_NO_BROKER;
    p->leader_epoch = KC_NO_EPOCH;
    p->preferred_replica = KC_NO_BROKER;
    p->high_watermark = KC_NO_OFFSET;
    p->last_stable_offset = KC_NO_OFFSET;
    p->log_start_offset = KC_NO_OFFSET;
    p->lag = -1;
    p->max_bytes = max_bytes;
    p->state = KC_FS_AWAIT_RESET;
}

/* ---- per-partition decisions (engine/fetch/partition.c)
 * ------------------------------------------ */

typedef enum kc_offset_reset {
    KC_RESET_LATEST = 0, /* Java's default */
    KC_RESET_EARLIEST,
    KC_RESET_NONE, /* no silent jump: the caller gets an error */
} kc_offset_reset_t;

/* Settings the decisions depend on. Owner: network thread (copied from the config at start). */
typedef struct kc_partition_conf {
    kc_offset_reset_t reset; /* auto.offset.reset */
    int read_committed;      /* isolation.level: lag is measured against the LSO */
    int has_rack;            /* client.rack is set: follow KIP-392 preferred replicas */
    int64_t replica_ttl_ms;  /* metadata.max.age.ms: a preferred replica expires after it */
    int64_t backoff_ms;      /* retry.backoff.ms */
    int64_t backoff_max_ms;  /* retry.backoff.max.ms */
} kc_partition_conf_t;

/* What a per-partition Fetch error means. A pure function of the error code. */
typedef enum kc_fetch_action {
    KC_FA_NONE = 0,     /* no error */
    KC_FA_MOVE,         /* leadership/metadata is stale: refresh metadata, keep the position,
                           fetch from the (new) leader's session when metadata says so */
    KC_FA_OUT_OF_RANGE, /* auto.offset.reset (or back to the leader if read from a replica) */
    KC_FA_BACKOFF,      /* transient: back off and retry this partition only */
    KC_FA_REPORT,       /* the caller must hear of it (e.g. authorization); then back off */
} kc_fetch_action_t;

kc_fetch_action_t kc_fetch_classify_error(int16_t kafka_code);

/* What applying an error or a validation did, for the caller to act on. */
typedef struct kc_partition_event {
    uint8_t refresh_metadata;   /* ask for metadata now */
    uint8_t needs_list_offsets; /* state became AWAIT_RESET: send ListOffsets at reset_timestamp */
    int64_t reset_timestamp;    /* -2 earliest, -1 latest (ListOffsets sentinels) */
    uint8_t report;             /* surface `error` to the caller */
    uint8_t truncated;          /* KIP-320: log truncated below our position */
    int64_t truncated_from;     /* our position before the truncation */
    kc_error_t error;
} kc_partition_event_t;

/* Applies a per-partition Fetch error. `from_replica`: the response came from a preferred read
 * replica rather than the leader. Keeps the position in every case but a reset. */
void kc_partition_on_fetch_error(kc_partition_t *p, int16_t kafka_code, int from_replica,
                                 const kc_partition_conf_t *conf, int64_t now_ms,
                                 kc_partition_event_t *ev);

/* Not fetched again before retry.backoff.ms (growing while it repeats): a leader answered with
 * no records and named a read replica we do not use right now (fetch/fetcher.c, usable_replica),
 * and asking it again at once would only get the same empty answer at once. */
void kc_partition_hold(kc_partition_t *p, const kc_partition_conf_t *conf, int64_t now_ms);

/* A partition came back without error: offsets for lag/stats, and the preferred read replica
 * the broker named (-1 when none). Clears the error backoff. */
void kc_partition_on_fetch_ok(kc_partition_t *p, int64_t high_watermark, int64_t last_stable,
                              int64_t log_start, int32_t preferred_replica,
                              const kc_partition_conf_t *conf, int64_t now_ms);

/* A whole Fetch to `broker_id` failed (transport error, timeout, undecodable answer, top-level
 * error). A partition reading from that broker as its KIP-392 preferred read replica goes back
 * to its leader at once: waiting for the choice to expire (metadata.max.age.ms) would stall it
 * behind a dead follower for minutes. The leader may name the replica again later. Returns 1
 * when `p` moved back to its leader. */
int kc_partition_on_broker_failure(kc_partition_t *p, int32_t broker_id);

/* Metadata named a leader (KC_NO_BROKER: unknown) and its epoch. A leader change with a known
 * position epoch needs OffsetForLeaderEpoch validation before fetching again (KIP-320).
 * Returns 1 when the partition now awaits validation. */
int kc_partition_on_metadata(kc_partition_t *p, int32_t leader_id, int32_t leader_epoch);

/* ListOffsets (reset / seek to beginning, end or time) answered. */
void kc_partition_on_reset(kc_partition_t *p, int64_t offset, int32_t leader_epoch);

/* The caller seeked: the position is theirs now, with no epoch to validate against. */
void kc_partition_seek(kc_partition_t *p, int64_t offset);

/* The broker a Fetch for the partition goes to when it may be fetched: the preferred read
 * replica while it is valid (client.rack set), else the leader (KC_NO_BROKER: none known).
 * Expired preferred replicas are cleared here. */
int32_t kc_partition_route(kc_partition_t *p, const kc_partition_conf_t *conf, int64_t now_ms);

/* The fetch target: kc_partition_route, or KC_NO_BROKER when the partition must not be fetched
 * now (paused, not ACTIVE, no position). Finished backoffs are cleared here. */
int32_t kc_partition_fetch_target(kc_partition_t *p, const kc_partition_conf_t *conf,
                                  int64_t now_ms);

/* KIP-320: the OffsetForLeaderEpoch answer for our position's epoch. */
typedef enum kc_validation {
    KC_VALID_OK = 0,    /* the log still holds our position */
    KC_VALID_TRUNCATED, /* the log ends before our position: move to `offset`, report */
    KC_VALID_UNKNOWN,   /* the broker has no end offset for our epoch: reset policy */
    KC_VALID_RETRY,     /* the request failed; see kc_fetch_classify_error */
} kc_validation_t;

/* Pure: given our position (offset, epoch) and the answer (error, end epoch, end offset). */
kc_validation_t kc_partition_validate(int64_t position, int16_t kafka_code, int32_t end_epoch,
                                      int64_t end_offset);

/* Applies a validation answer to an AWAIT_VALIDATION partition. */
void kc_partition_on_validation(kc_partition_t *p, int16_t kafka_code, int32_t end_epoch,
                                int64_t end_offset, const kc_partition_conf_t *conf, int64_t now_ms,
                                kc_partition_event_t *ev);

/* The "next offset" sentinels ListOffsets takes for auto.offset.reset. KC_ERR_STATE for none. */
kc_err_t kc_partition_reset_timestamp(kc_offset_reset_t reset, int64_t *ts, kc_error_t *err);

#endif
