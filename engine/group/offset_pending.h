/*
 * Committed offsets that could not be read when a group member was assigned its partitions.
 *
 * Java never starts such a partition from auto.offset.reset: it keeps asking OffsetFetch
 * (refreshCommittedOffsetsIfNeeded) and the partition has no position, so nothing is fetched,
 * until the offset arrives. Resetting would skip records (latest) or re-read them (earliest).
 * The group driver (group/group.c) hands every OffsetFetch answer to
 * kc_opend_apply, which
 *   - starts the partitions whose offset came back (an offset, or "none": -1, error 0, the only
 *     case where auto.offset.reset applies),
 *   - keeps the ones refused for a retriable reason (deadline passed, transport error,
 *     UNSTABLE_OFFSET_COMMIT, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, ...) to be asked
 *     again after a backoff (retry.backoff.ms doubling up to retry.backoff.max.ms),
 *   - reports the others (authorization, GROUP_ID_NOT_FOUND, ...) through the error hook and
 *     keeps asking for them too, on the same backoff (which soon reaches retry.backoff.max.ms):
 *     Java re-asks on every poll and raises the error each time, so a member whose ACL is fixed
 *     starts consuming without being restarted. The report repeats when another partition is
 *     refused and otherwise at most every KC_OPEND_REPORT_MS, not on every retry.
 * The driver removes a partition when it is revoked or lost, clears everything at close, and
 * sends one retry at a time (kc_opend_take_due); an answer for a partition removed or assigned
 * afresh meanwhile is ignored (`asked`).
 *
 * Owner: the network thread (the group driver that embeds it).
 */
#ifndef KC_ENGINE_GROUP_OFFSET_PENDING_H
#define KC_ENGINE_GROUP_OFFSET_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coordinator.h"
#include "group/group.h"
#include "part_index.h"

/* How often a refusal that lasts is reported again (the error callback, not a log line). */
#define KC_OPEND_REPORT_MS 30000

typedef struct kc_opend_ent {
    char *topic;
    int32_t partition;
    bool asked;   /* part of the retry now in flight */
    bool refused; /* the last answer refused it for a non-retriable reason (reported) */
} kc_opend_ent_t;

typedef struct kc_opend {
    kc_opend_ent_t *items;
    size_t n, cap;
    /* items by (topic, partition): an answer for 10,000 pending partitions looks each one up,
     * and a linear search made that 5 x 10^7 comparisons on the network thread per retry */
    kc_pidx_t idx;
    int64_t next_at; /* when the next retry is due */
    int64_t backoff_ms, backoff_min_ms, backoff_max_ms;
    bool inflight;       /* a retry is at the coordinator */
    uint64_t retries;    /* OffsetFetch retries sent (stats, tests) */
    int64_t reported_at; /* when a refusal was last reported; 0: never */
} kc_opend_t;

void kc_opend_init(kc_opend_t *p, int64_t backoff_ms, int64_t backoff_max_ms);
void kc_opend_free(kc_opend_t *p);
/* The partition is revoked or lost: never asked for or started again. */
void kc_opend_remove(kc_opend_t *p, const char *topic, int32_t partition);
/* Closing: nothing is asked any more. */
void kc_opend_clear(kc_opend_t *p);

/* When a retry is due at `now` and none is in flight: *out (calloc'd, free it) lists the pending
 * partitions, which are marked asked, and `inflight` is set; returns their count, 0 otherwise. */
size_t kc_opend_take_due(kc_opend_t *p, int64_t now, kc_engine_offset_t **out);
/* The retry could not be sent: ask again after the backoff. */
void kc_opend_send_failed(kc_opend_t *p, int64_t now);

/* The whole retry step both drivers run: when one is due (kc_opend_take_due), asks the
 * coordinator with kc_engine_committed for `group`; `op_new(drv)` makes the request context
 * `cb` will get (NULL: out of memory) and `op_drop(ctx)` ends one that was never sent. A failed
 * send backs off (kc_opend_send_failed). The driver calls it only while not closing. */
void kc_opend_send_due(kc_opend_t *p, int64_t now, kc_engine_t *e, const char *group,
                       int timeout_ms, kc_engine_offsets_cb cb, void *(*op_new)(void *drv),
                       void (*op_drop)(void *ctx), void *drv);

/* One OffsetFetch answer (the engine's callback arguments, rc != KC_ERR_CLOSED). `retry`: the
 * answer to kc_opend_take_due's request (clears `inflight`; partitions no longer asked are
 * skipped), else the first fetch of an assignment. Starts, keeps or reports each partition as
 * the header says, through h->assign / h->error. */
void kc_opend_apply(kc_opend_t *p, bool retry, kc_err_t rc, const kc_engine_offset_t *res, size_t n,
                    const kc_group_hooks_t *h, const char *group, int64_t now);

/* Pure: may a partition's OffsetFetch outcome be asked again? `rc` the call's result, `code` the
 * partition's error (-1: the answer did not name it). */
bool kc_opend_retriable(kc_err_t rc, int16_t code);

#endif
