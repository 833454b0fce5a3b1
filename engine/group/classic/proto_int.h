/*
 * group.protocol=classic behind group/group.h's protocol interface: the pure member
 * (member.h) plus what only this protocol sends.
 *  - its OWN coordinator connection (member.h: JoinGroup blocks the socket until the rebalance
 *    completes, so it must not share the engine's commit/fetch connections). It finds the
 *    coordinator with its own FindCoordinator (over any engine connection), connects to it, and
 *    reports kc_classic_coordinator_known only once that connection is READY, so every request
 *    is encoded at once at the version negotiated there (views from kc_classic_poll do not
 *    outlive the next poll).
 *  - the partition counts of the subscribed topics (its own Metadata request, refreshed every
 *    MD_REFRESH_MS): the leader's assignors need them, and a change calls
 *    kc_classic_metadata_changed; from the same answers the replica racks (racks.c) for
 *    rack-aware assignment.
 *  - DescribeGroups on its connection when INCONSISTENT_GROUP_PROTOCOL needs the group's side.
 * The self-fence's clock: the send time of the last Heartbeat (or SyncGroup) whose answer kept
 * the session, against session.timeout.ms. A JoinGroup in flight does not hold it off: the
 * coordinator keeps a member alive while its join waits, but only if the join reached it, which
 * the member cannot tell from a join lost in a network partition. So a cooperative member whose
 * JoinGroup waits past the fence point pauses until the SyncGroup answer.
 *
 * proto.c (the interface), io.c (the requests) and racks.c share this state. Owner: the network
 * thread.
 */
#ifndef KC_ENGINE_GROUP_CLASSIC_PROTO_INT_H
#define KC_ENGINE_GROUP_CLASSIC_PROTO_INT_H

#include <regex.h>

#include "engine_int.h"
#include "group/classic/member.h"
#include "group/group.h"

#define MD_REFRESH_MS 3000

/* One subscribed topic's replica racks (racks.c): per_part[p] → n_per_part[p] racks, pointing
 * into flat, whose strings are the driver's rack_names. */
typedef struct kc_classic_racks {
    int32_t n_parts; /* 0: unknown */
    const char *const **per_part;
    size_t *n_per_part;
    const char **flat;
} kc_classic_racks_t;

/* Owner: network thread. */
struct kc_classic_io;
/* proto.c: `topics` (n, copied) replace the subscribed list; they go to the member once their
 * partition counts are known. */
kc_err_t kc_classic_io_set_topics(struct kc_classic_io *g, const char *const *topics, size_t n,
                                  kc_error_t *err);

typedef struct kc_classic_io {
    kc_group_t *grp;
    kc_engine_t *e;
    const kc_group_conf_t *conf; /* the group's, outlives us */
    kc_classic_t m;
    char **topics;
    int32_t *counts; /* partition count per subscribed topic, 0 = unknown */
    size_t n_topics;
    /* A pattern subscription (kc_subscribe's one "^..." entry, POSIX extended syntax, matched
     * here, client-side, as the Java client does for the classic protocol): every Metadata
     * request asks for all topics, and when the non-internal topics that match differ from
     * `topics`, they become the list (sorted), as a kc_subscribe of those names would. */
    regex_t re;
    bool has_re;
    /* The leader's assignment also covers the other members' topics (Java's leader asks for
     * the metadata of the whole group's subscription): the partition counts of the topics of
     * the leader's snapshot that we do not subscribe to, from the same Metadata requests. */
    char **others;
    int32_t *other_counts;
    size_t n_others;
    kc_classic_racks_t *racks; /* per subscribed topic (same index), from the last Metadata */
    char **rack_names;         /* per broker of that answer (its order), NULL: no rack */
    size_t n_rack_names;
    /* md_known: the counts of this list were answered (md_gen counts lists; md_sent_gen is the
     * one the request in flight asked for). sub_pending: the list still has to go to the member
     * (once md_known). subscribed: the member was given a list once (coordinator lookups run). */
    bool md_known, subscribed, md_inflight, sub_pending;
    uint32_t md_gen, md_sent_gen;
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
    /* 1 << out kind (KC_CLASSIC_REDISCOVER for FindCoordinator) of each API whose answer did
     * not decode and was reported: once each, the retries stay quiet. */
    uint8_t bad_said;
    int32_t last_generation;
    uint64_t poll_leaves;
    bool closed_out, dead;
} kc_classic_io_t;

static inline bool kc_classic_io_gone(const kc_classic_io_t *g)
{
    return g->dead || g->e->closed;
}

/* io.c: the subscription's partition counts (Metadata), the coordinator (own FindCoordinator,
 * own connection), and the group requests on that connection. */
void kc_classic_io_md_maybe_send(kc_classic_io_t *g, int64_t now);
void kc_classic_io_find_maybe_send(kc_classic_io_t *g, int64_t now);
void kc_classic_io_send_group(kc_classic_io_t *g, const kc_classic_out_t *o, int64_t now);

/* proto.c: the partition count of a subscribed topic or of one only other members read (0:
 * unknown), and the latter's list kept in step with the leader's snapshot. */
int32_t kc_classic_io_partitions(void *ctx, const char *topic);
bool kc_classic_io_set_other(kc_classic_io_t *g, const char *topic, int32_t count);

/* racks.c: replica racks for the leader's assignors (kc_classic_racks_fn). */
struct kc_metadata_response;
void kc_classic_io_racks_update(kc_classic_io_t *g, const struct kc_metadata_response *m);
bool kc_classic_io_racks_of(void *ctx, const char *topic, int32_t n_partitions,
                            const char *const *const **racks, const size_t **n);
void kc_classic_io_racks_free(kc_classic_io_t *g);

#endif
