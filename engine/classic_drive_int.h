/*
 * engine/classic_drive.c and classic_drive_io.c share this: the driver's state. Owner: the
 * network thread (see classic_drive.h).
 */
#ifndef KC_ENGINE_CLASSIC_DRIVE_INT_H
#define KC_ENGINE_CLASSIC_DRIVE_INT_H

#include "offset_pending.h"
#include "classic_drive.h"
#include "engine_int.h"
#include "group_classic.h"

#define MD_REFRESH_MS 3000

typedef struct g_op {
    kc_gcl_t *g;
    uint64_t seq;
    int kind; /* 1 assign (OffsetFetch), 2 reconcile commit, 3 auto-commit */
    bool cancelled;
    struct g_op *next;
} g_op_t;

/* One subscribed topic's replica racks (classic_racks.c): per_part[p] → n_per_part[p] racks,
 * pointing into flat, whose strings are the driver's rack_names. */
typedef struct kc_gcl_racks {
    int32_t n_parts; /* 0: unknown */
    const char *const **per_part;
    size_t *n_per_part;
    const char **flat;
} kc_gcl_racks_t;

struct kc_gcl {
    kc_engine_t *e;
    kc_gcl_conf_t conf;
    char *group, *instance, *rack;
    kc_gcl_hooks_t h;
    kc_classic_t m;
    kc_loop_timer_t timer;
    char **topics;
    int32_t *counts; /* partition count per subscribed topic, 0 = unknown */
    size_t n_topics;
    kc_gcl_racks_t *racks; /* per subscribed topic (same index), from the last Metadata */
    char **rack_names;     /* per broker of that answer (its order), NULL: no rack */
    size_t n_rack_names;
    bool md_known, subscribed, md_inflight;
    int64_t next_md_ms;
    /* coordinator */
    kc_conn_t *conn;
    char coord_addr[300];
    int32_t coord_node;
    bool finding, want_known;
    int64_t find_retry_ms;
    /* the group request in flight on `conn` (encoded at once: views die at the next poll) */
    int req_kind; /* 0 none, else the out kind */
    kc_wbuf_t req;
    int64_t req_sent_ms;
    /* revoke */
    uint64_t revoke_seq;
    int revoke_wait;
    bool revoke_active;
    g_op_t *ops;
    kc_opend_t pending; /* assigned partitions whose committed offset is still unread */
    int64_t next_auto_commit;
    int32_t last_generation;
    bool poll_expired; /* the watchdog reported a callback past max.poll.interval.ms */
    uint64_t poll_leaves, rebalances, heartbeats, hb_errors, commits, commit_failures,
        rediscoveries;
    bool driving, again, closing, closed_out, dead;
    /* The self-fence (group848.h describes the rule; engine/self_fence.h): the send time of
     * the last Heartbeat/SyncGroup whose answer kept the session (-1 before the first), and
     * whether the member is fenced now. */
    int64_t answered_sent_ms;
    bool self_fenced;
    uint64_t self_fences;
};

/* classic_drive.c: pulls the state machine's outputs and acts on them; re-arms the timer. */
void kc_gcl_drive(kc_gcl_t *g);
/* The answer to a group request sent at sent_ms kept the member's session alive (a Heartbeat
 * answered without error or with REBALANCE_IN_PROGRESS, a SyncGroup answered with the
 * assignment): the self-fence's clock restarts from sent_ms. classic_drive_io.c. */
void kc_gcl_session_answered(kc_gcl_t *g, int64_t sent_ms);

static inline bool kc_gcl_gone(const kc_gcl_t *g)
{
    return g->dead || g->e->closed;
}

/* classic_drive_io.c: the subscription's partition counts (Metadata), the coordinator (own
 * FindCoordinator, own connection), and the group requests on that connection. */
void kc_gcl_md_maybe_send(kc_gcl_t *g, int64_t now);
void kc_gcl_find_maybe_send(kc_gcl_t *g, int64_t now);
void kc_gcl_send_group(kc_gcl_t *g, const kc_classic_out_t *o, int64_t now);

/* classic_racks.c: replica racks for the leader's assignors (kc_classic_racks_fn). */
struct kc_metadata_response;
void kc_gcl_racks_update(kc_gcl_t *g, const struct kc_metadata_response *m);
bool kc_gcl_racks_of(void *ctx, const char *topic, int32_t n_partitions,
                     const char *const *const **racks, const size_t **n);
void kc_gcl_racks_free(kc_gcl_t *g);

#endif
