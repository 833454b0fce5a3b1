/*
 * kc-memory-broker internals shared by memory_broker.c (connections, small APIs) and
 * mb_fetch.c (the record data, Fetch and KIP-227 fetch sessions).
 *
 * Threads: one thread per client connection. The configuration and the batch templates are
 * written once before the first accept and read-only after; the session cache, the groups (with
 * their committed offsets) and the request counters are shared and guarded by mb_t.lock.
 */
#ifndef KC_TESTKIT_MB_H
#define KC_TESTKIT_MB_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kt_frame.h"

#define MB_MAX_SESSIONS 1000
#define MB_MAX_NODES    64

/* One fetch session partition: what the client asked for last and what we last told it. */
typedef struct mb_sess_part {
    int32_t partition;
    int64_t fetch_offset;
    int32_t max_bytes;
    int64_t last_hw_sent; /* -1: never sent; an incremental response includes a changed hw */
} mb_sess_part_t;

typedef struct mb_session {
    int32_t id;    /* 0: free slot */
    int32_t epoch; /* the epoch the next request must carry */
    int64_t last_used_ms;
    int n;
    mb_sess_part_t *parts; /* n entries, at most the topic's partition count */
} mb_session_t;

/* ---- Groups: mb_group.c (table, classic coordinator, expiry), mb_g848.c (KIP-848),
 * mb_group_apis.c (the wire). Everything here is guarded by mb_t.lock; mb_t.group_cond (paired
 * with mb_t.lock) is broadcast after every group change, so connection threads parked in
 * JoinGroup/SyncGroup (a Kafka broker parks those requests too) re-check their condition. */
typedef enum mbg_state { MBG_EMPTY, MBG_PREPARING, MBG_COMPLETING, MBG_STABLE } mbg_state_t;
/* What the group's members speak. NONE: no member (offsets only, e.g. an assign-mode consumer
 * that commits); the kind is set by the first member and cleared when the last one goes. */
typedef enum mbg_kind { MBG_NONE, MBG_CLASSIC, MBG_CONSUMER } mbg_kind_t;

typedef struct mbg_proto {
    char *name;
    uint8_t *meta;
    int32_t meta_len;
} mbg_proto_t;

typedef struct mbg_member {
    char *id;
    int64_t last_ms; /* last sign of life: expired after session_ms of silence */
    int32_t session_ms, rebalance_ms;
    /* Classic. */
    bool pending;     /* got MEMBER_ID_REQUIRED and has not joined with that id yet */
    bool joined;      /* joined the open round (state PREPARING) */
    int waiting;      /* connection threads parked for it: alive while parked */
    int32_t join_gen; /* generation its last JoinGroup completed in; -1 while it waits */
    int n_protos;
    mbg_proto_t *protos;
    uint8_t *assignment; /* what the leader's SyncGroup gave it (NULL: nothing yet) */
    int32_t assignment_len;
    /* KIP-848. */
    int32_t epoch, prev_epoch;
    bool subscribed;   /* its subscription names (or its regex matches) our topic */
    uint8_t *assigned; /* per partition: 1 = it owns the partition at `epoch` */
    uint8_t *revoking; /* per partition: 1 = told to give it up, not yet acknowledged */
    int32_t n_revoking;
    int64_t revoke_since_ms;
} mbg_member_t;

typedef struct mbg_group {
    char *id;
    mbg_kind_t kind;
    mbg_state_t state;   /* classic (a consumer group stays EMPTY/STABLE) */
    int32_t generation;  /* classic generation; KIP-848 group epoch */
    char *protocol_type; /* classic: set by the first member */
    char *protocol_name; /* classic: of the current generation */
    char *leader;        /* classic: member id of the leader, NULL none */
    int64_t round_start_ms;
    bool initial_round; /* classic: the open round started from EMPTY (initial delay applies) */
    int n, cap;
    mbg_member_t **m;   /* in join order (KIP-848 spreads partitions in this order) */
    int64_t *committed; /* per partition, -1 none */
} mbg_group_t;

typedef struct mb {
    /* Read-only after start. */
    const char *topic;
    kc_uuid_t topic_id;
    int32_t partitions;
    int64_t records; /* per partition */
    int32_t value_size;
    int32_t batch_records;
    int codec;
    int32_t node_id;
    int32_t n_nodes;
    char node_host[MB_MAX_NODES][128];
    int node_port[MB_MAX_NODES];
    /* Batch templates: the full batch (batch_records records) and the last, shorter one. Only
     * base_offset differs between batches, and it lies outside the CRC, so serving a batch is a
     * copy with the base offset patched: RAM stays O(one batch) whatever --records says. */
    uint8_t *full;
    size_t full_len;
    uint8_t *tail;
    size_t tail_len;
    int32_t tail_records;

    /* Set by the SIGTERM handler, read by the accept loop and every connection thread: an
     * atomic (lock-free, so async-signal-safe) rather than volatile sig_atomic_t, which is
     * only for a handler and the thread it interrupted. It publishes nothing else. */
    atomic_int stop;
    pthread_mutex_t lock; /* guards everything below */
    mb_session_t sessions[MB_MAX_SESSIONS];
    int32_t next_session_id;
    uint64_t requests[KC_PROTO_MAX_API_KEY + 1];
    uint64_t records_served;
    uint64_t bytes_served;
    pthread_cond_t group_cond; /* with lock: see the groups' comment above */
    mbg_group_t **groups;      /* by group id; never freed before exit (a test tool) */
    int n_groups, cap_groups;
    uint64_t member_seq;            /* makes generated member ids unique */
    int32_t group_initial_delay_ms; /* read-only after start: group.initial.rebalance.delay.ms */
    bool trace_groups;              /* read-only after start: --trace-groups */
} mb_t;

/* Builds the batch templates from the options; false with a message on stderr. */
bool mb_data_init(mb_t *mb);
void mb_data_free(mb_t *mb);

/* Does this node lead partition p? (p % n_nodes == node_id) */
static inline bool mb_owns(const mb_t *mb, int32_t p)
{
    return p >= 0 && p < mb->partitions && p % mb->n_nodes == mb->node_id;
}

/* Answers one Fetch request (already decoded) into w after the response header. May wait up to
 * max_wait_ms when there is nothing to return. */
kc_err_t mb_fetch(mb_t *mb, const kc_fetch_request_t *req, int16_t version, kc_wbuf_t *w,
                  kc_arena_t *a, kc_error_t *err);

/* ---- groups (lock held by the caller for every mbg_ function) ---- */
#define MBG_MAX_GROUPS       10000
#define MBG_MIN_SESSION_MS   1000 /* group.min.session.timeout.ms of the testkit cluster */
#define MBG_MAX_SESSION_MS   1800000
#define MBG_848_SESSION_MS   10000 /* group.consumer.session.timeout.ms */
#define MBG_848_HEARTBEAT_MS 500   /* group.consumer.heartbeat.interval.ms (as the testkit's) */

/* The group with this id; created (kind NONE, EMPTY) when `create`. NULL: absent, or out of
 * memory/slots when creating. */
mbg_group_t *mbg_find(mb_t *mb, kc_str_t id, bool create);
mbg_member_t *mbg_member_find(const mbg_group_t *g, kc_str_t id);
/* Adds a member (id NULL: generated, "<prefix>-<seq>-<random>"); NULL when out of memory. */
mbg_member_t *mbg_member_add(mb_t *mb, mbg_group_t *g, const char *id, int64_t now);
void mbg_member_remove(mbg_group_t *g, mbg_member_t *m);
/* Frees every group (at exit, once no connection thread runs). */
void mbg_free_all(mb_t *mb);
/* --trace-groups: one line on stderr per group event (a KIP-848 member's assignment moving, a
 * member removed, each committed offset), stamped with `now` (the broker's clock in ms, passed in
 * as to the group state machines), so a test that fails can show the sequence. Call under
 * mb_t.lock (the lines of concurrent events stay ordered). */
void mbg_trace(const mb_t *mb, int64_t now, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A per-partition flag map as "[0 2 5]" into buf. */
const char *mbg_parts_str(const uint8_t *map, int32_t n, char *buf, size_t cap);

/* One JoinGroup's fields, as decoded. */
typedef struct mbg_join_req {
    kc_str_t member_id;
    int32_t session_ms, rebalance_ms;
    kc_str_t protocol_type;
    int n_protos;
    const kc_str_t *proto_names;
    const kc_bytes_t *proto_metas;
    int16_t version; /* v4+: an unknown member first gets MEMBER_ID_REQUIRED */
} mbg_join_req_t;
/* Classic JoinGroup. Returns a Kafka error code; with 0, *out is the member, whose JoinGroup is
 * complete once out->join_gen >= 0 (maybe already): the caller waits for that on group_cond.
 * MEMBER_ID_REQUIRED also sets *out (the pending member, for its id). */
int16_t mbg_join(mb_t *mb, mbg_group_t *g, const mbg_join_req_t *q, int64_t now,
                 mbg_member_t **out);
/* Ends the open round if every known member has joined (or the rebalance timeout passed). */
void mbg_try_complete(mb_t *mb, mbg_group_t *g, int64_t now);
/* The selected protocol's metadata of member m (NULL/0 when it has none). */
kc_bytes_t mbg_member_meta(const mbg_group_t *g, const mbg_member_t *m);
/* Classic SyncGroup: the leader's call stores the assignments and makes the group STABLE.
 * *wait: a follower must wait for the leader (call again after group_cond). */
typedef struct mbg_assignment {
    kc_str_t member_id;
    kc_bytes_t assignment;
} mbg_assignment_t;
int16_t mbg_sync(mbg_group_t *g, kc_str_t member_id, int32_t generation, const mbg_assignment_t *as,
                 int n, int64_t now, bool *wait);
int16_t mbg_heartbeat(mbg_group_t *g, kc_str_t member_id, int32_t generation, int64_t now);
int16_t mbg_leave(mb_t *mb, mbg_group_t *g, kc_str_t member_id, int64_t now);
/* Session expiry, rebalance timeouts, KIP-848 revocation timeouts: every group. */
void mbg_tick(mb_t *mb, int64_t now);
/* OffsetCommit's membership check (0: accept): member id + generation (classic) or member
 * epoch (KIP-848); the anonymous form (empty id, -1) is always accepted. */
int16_t mbg_commit_check(const mbg_group_t *g, kc_str_t member_id, int32_t gen_or_epoch);

/* KIP-848 ConsumerGroupHeartbeat (mb_g848.c). *out: the member after the call (NULL after a
 * leave), *send_assignment: the response carries its assignment. */
int16_t mbg848_heartbeat(mb_t *mb, mbg_group_t *g, const kc_consumer_group_heartbeat_request_t *q,
                         int64_t now, mbg_member_t **out, bool *send_assignment);
/* Bumps the group epoch after a membership or subscription change. */
void mbg848_bump(mbg_group_t *g);
/* Fences members whose revocation outlived their rebalance timeout. */
void mbg848_tick(mb_t *mb, mbg_group_t *g, int64_t now);

/* Answers JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat (mb_group_apis.c;
 * takes the lock itself, may park on group_cond). */
kc_err_t mb_group_handle(mb_t *mb, int16_t key, int16_t v, kc_rbuf_t *r, kc_wbuf_t *w,
                         kc_arena_t *a, kc_error_t *err);

/* Decodes the request body in r (api key, version) with the generated decoder and appends the
 * response body to w. KC_ERR_UNSUPPORTED for an API this broker does not serve. */
kc_err_t mb_handle(mb_t *mb, int16_t key, int16_t version, kc_rbuf_t *r, kc_wbuf_t *w,
                   kc_arena_t *a, kc_error_t *err);
/* The version range this broker advertises for key; false when it does not serve key. */
bool mb_api_range(int16_t key, int16_t *min, int16_t *max);

#endif
