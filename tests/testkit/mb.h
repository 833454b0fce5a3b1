/*
 * kc-memory-broker internals shared by memory_broker.c (connections, small APIs) and
 * mb_fetch.c (the record data, Fetch and KIP-227 fetch sessions).
 *
 * Threads: one thread per client connection. The configuration and the batch templates are
 * written once before the first accept and read-only after; the session cache, the committed
 * offsets and the request counters are shared and guarded by mb_t.lock.
 */
#ifndef KC_TESTKIT_MB_H
#define KC_TESTKIT_MB_H

#include <pthread.h>
#include <signal.h>
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

    volatile sig_atomic_t stop;
    pthread_mutex_t lock; /* guards everything below */
    mb_session_t sessions[MB_MAX_SESSIONS];
    int32_t next_session_id;
    uint64_t requests[KC_PROTO_MAX_API_KEY + 1];
    uint64_t records_served;
    uint64_t bytes_served;
    /* Committed offsets: one table for all groups (enough for a benchmark consumer). */
    int64_t *committed; /* per partition, -1 none */
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

/* Decodes the request body in r (api key, version) with the generated decoder and appends the
 * response body to w. KC_ERR_UNSUPPORTED for an API this broker does not serve. */
kc_err_t mb_handle(mb_t *mb, int16_t key, int16_t version, kc_rbuf_t *r, kc_wbuf_t *w,
                   kc_arena_t *a, kc_error_t *err);
/* The version range this broker advertises for key; false when it does not serve key. */
bool mb_api_range(int16_t key, int16_t *min, int16_t *max);

#endif
