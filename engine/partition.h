/*
 * The engine's record of one assigned partition: where we read from, where the broker says the
 * log is, and whether it may be fetched right now.
 *
 * Owner: network thread. Nothing here is read by workers; what a worker needs (the batches, the
 * processed-up-to offset) travels through the runtime's queues, never through this struct.
 */
#ifndef KC_ENGINE_PARTITION_H
#define KC_ENGINE_PARTITION_H

#include <stdint.h>
#include <string.h>

/* A partition as Fetch v13+ names it: the topic id, not the name. A topic deleted and recreated
 * under the same name gets a new id, so it is a different partition here (the old one is
 * forgotten, the new one added) — exactly what the broker's session does. */
typedef struct kc_tp {
    uint8_t topic_id[16];
    int32_t partition;
} kc_tp_t;

static inline int kc_tp_cmp(const kc_tp_t *a, const kc_tp_t *b)
{
    int c = memcmp(a->topic_id, b->topic_id, sizeof a->topic_id);
    if (c)
        return c;
    return (a->partition > b->partition) - (a->partition < b->partition);
}

/* Why a partition is or is not fetchable. Only ACTIVE partitions enter a broker's wanted set;
 * every other state takes the partition out of the fetch session (it is forgotten, and added
 * again when it becomes ACTIVE), so the broker never fetches data we would discard. */
typedef enum kc_fetch_state {
    KC_FS_ACTIVE = 0,        /* fetch from `position` */
    KC_FS_AWAIT_RESET,       /* needs ListOffsets (auto.offset.reset or a seek to time/end) */
    KC_FS_AWAIT_VALIDATION,  /* leader changed: OffsetForLeaderEpoch before fetching (KIP-320) */
    KC_FS_AWAIT_METADATA,    /* leader unknown or moved: wait for a metadata refresh */
    KC_FS_BACKOFF,           /* a partition error: retry at `backoff_until_ms` */
    KC_FS_STOPPED,           /* an error was reported to the caller (e.g. out of range with
                                auto.offset.reset=none); only a seek makes it ACTIVE again */
} kc_fetch_state_t;

#define KC_NO_BROKER   (-1)
#define KC_NO_EPOCH    (-1)
#define KC_NO_OFFSET   (-1)

/* Owner: network thread. */
typedef struct kc_partition {
    kc_tp_t tp;
    int64_t position;          /* next offset to fetch */
    int32_t position_epoch;    /* leader epoch of the record before `position` (KIP-320), or -1 */
    int32_t leader_id;         /* from metadata, KC_NO_BROKER when unknown */
    int32_t leader_epoch;      /* current leader epoch from metadata, sent in Fetch */
    int32_t preferred_replica; /* KIP-392 read replica named by the leader, or KC_NO_BROKER */
    int64_t preferred_until_ms;/* the replica choice expires (metadata.max.age.ms) */
    int64_t high_watermark;    /* from the last response that carried the partition */
    int64_t last_stable_offset;
    int64_t log_start_offset;
    int64_t lag;               /* (hw or lso, by isolation level) - position; -1 unknown */
    int32_t max_bytes;         /* max.partition.fetch.bytes for this partition */
    uint8_t paused;            /* pause()/resume(): independent of `state` */
    kc_fetch_state_t state;
    int64_t backoff_until_ms;  /* KC_FS_BACKOFF only */
    int32_t backoff_attempts;  /* consecutive partition errors, for exponential backoff */
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

#endif
