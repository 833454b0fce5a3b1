/*
 * Shared by engine/coordinator.c (the FindCoordinator cache, coordinator connections and the op
 * machinery: deadline-bounded re-asking) and engine/coordinator_offsets.c (the OffsetCommit /
 * OffsetFetch requests and their answers). Not for other modules: they use coordinator.h.
 *
 * Owner: network thread. An op lives from the call until its callback; it is either waiting on
 * its timer, or has exactly one request in flight (`inflight`), never both.
 */
#ifndef KC_ENGINE_COORDINATOR_INT_H
#define KC_ENGINE_COORDINATOR_INT_H

#include <stdbool.h>

#include "coordinator.h"
#include "engine_int.h"

typedef struct coord_entry {
    char *group;
    int32_t node_id;
    char addr[300];
    uint8_t valid;
} coord_entry_t;

typedef struct coord_conn {
    char addr[300];
    kc_conn_t *conn;
} coord_conn_t;

typedef struct coord_op coord_op_t;

struct kc_coord {
    coord_entry_t *cache;
    size_t n_cache;
    coord_conn_t *conns;
    size_t n_conns;
    coord_op_t *ops;
};

enum { OP_COMMIT = 1, OP_FETCH = 2, OP_FIND = 3 };

struct coord_op {
    kc_engine_t *e;
    int kind;
    char *group, *member_id, *instance_id;
    int32_t generation;
    kc_engine_offset_t *ents;
    size_t n;
    kc_retry_t retry;
    kc_loop_timer_t timer;
    uint8_t inflight, finding;
    kc_engine_offsets_cb cb;
    void *opaque;
    kc_error_t last;
    /* A member's call (kc_engine_commit_member): the identity is read at each encode; when that
     * read fails the request fails, and who_err says why. */
    kc_engine_identity_fn who_fn;
    void *who_ctx;
    bool who_failed;
    kc_error_t who_err;
    coord_op_t *next;
};

/* coordinator.c. finish: unlinks the op, runs its callback once, frees it. again: asks later,
 * or finishes at the deadline (`rediscover`: forget the coordinator first). answered: the start
 * of every answer (no longer in flight; a closed engine or failed request is handled here and
 * 0 returned, a version refusal finishing the op with the connection's reason; 1: decode the
 * frame). start: copies the entries and takes the first step. */
void kc_eng_coord_finish(coord_op_t *op, kc_err_t rc, const kc_error_t *err);
void kc_eng_coord_again(coord_op_t *op, int rediscover, const char *why);
int kc_eng_coord_answered(coord_op_t *op, kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame,
                          int rediscover);
kc_err_t kc_eng_coord_start(kc_engine_t *e, int kind, const char *group, const char *member_id,
                            int32_t generation, const char *instance_id,
                            kc_engine_identity_fn who_fn, void *who_ctx,
                            const kc_engine_offset_t *offs, size_t n, int timeout_ms,
                            kc_engine_offsets_cb cb, void *opaque, kc_error_t *err);

/* coordinator_offsets.c: the OffsetCommit / OffsetFetch request of an op, and its answer. */
kc_err_t kc_eng_oc_encode(kc_wbuf_t *out, int16_t version, void *opaque);
void kc_eng_oc_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque);

#endif
