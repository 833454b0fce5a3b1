/*
 * The dispatcher's insides, shared by dispatch.c, worker.c, events.c, backpressure.c and
 * watchdog.c. Owners are written per field.
 */
#ifndef KC_RUNTIME_RT_INTERNAL_H
#define KC_RUNTIME_RT_INTERNAL_H

#include "dispatch.h"
#include "record.h"

typedef struct kc_rt_worker {
    kc_rt_t *rt;
    unsigned id;
    pthread_t th;
    bool started, joined; /* owner: the thread running kc_rt_new/shutdown/free */
    kc_rt_cring_t cring;  /* producer: this worker; consumer: network thread */
    void *dctx;           /* owner: this worker (created before start, freed after join) */
    kc_records_t view;    /* owner: this worker */
    /* Share groups: room for one explicit verdict per record of a view (kc_share_ack), the
     * view's `picks`. Owner: this worker (allocated before start, freed after join). */
    kc_rt_share_pick_t *picks;
    /* Watchdog: written by this worker around each callback, read by the network thread.
     * cb_part is stored before cb_start_ns (release) and read after it (acquire). */
    _Atomic(kc_rt_part_t *) cb_part;
    _Atomic int64_t cb_start_ns; /* 0 = not in a callback */
    int64_t reported_start;      /* owner: network thread (watchdog) */
    /* Share groups' verdict barrier (dispatch.h, kc_rt_share_views): views of this worker handed
     * to the application, and those whose verdicts were posted after they came back.
     * share_views: by this worker before on_records, or by kc_poll's thread in pull mode (relaxed:
     * write-read coherence along the caller's happens-before is all the reader needs);
     * share_posted: by this worker after the verdicts' pushes (release, pairing with the network
     * thread's acquire in kc_rt_share_posted). */
    _Atomic uint64_t share_views, share_posted;
    /* Stats: written by this worker, read by anyone (relaxed: counters publish nothing). */
    _Atomic uint64_t callbacks, records;
    _Atomic int64_t busy_ns;
} kc_rt_worker_t;

/* A group-level event held for on_event. Guarded by rt->ev_mu. */
typedef struct kc_rt_event {
    kc_event_type_t type;
    kc_error_t error;
    char *topic; /* owned; KC_EVENT_PARTITION_EOF */
    int32_t partition;
    int64_t offset;
    char *json;                   /* owned */
    kc_topic_partition_t *assign; /* owned, topics owned */
    size_t assign_len;
    bool has_error;                 /* `error` is the event's (KC_EVENT_ERROR, SHARE_ACK) */
    int64_t ack_first, ack_records; /* KC_EVENT_SHARE_ACK */
} kc_rt_event_t;

#define KC_RT_EVQ 256

struct kc_rt {
    kc_rt_opts_t o; /* read-only after kc_rt_new */
    kc_rt_runq_t rq;
    kc_rt_worker_t *w;
    _Atomic int64_t buffered;    /* bytes queued in all rings: + network, - workers */
    _Atomic int64_t frame_bytes; /* frames kept alive by queued batches (memory_budget.c) */
    _Atomic bool frames_drained; /* frame_bytes fell below the resume mark (memory_budget.c) */
    _Atomic unsigned nparts;     /* written by network thread; read by workers (share) */
    _Atomic bool stopping;       /* set by shutdown(drop): no new callback starts */
    _Atomic bool closing;        /* set by shutdown (any mode): a full completion ring may drop */
    _Atomic bool poll_exceeded;  /* set by the watchdog (network thread), read anywhere */
    /* Owner: network thread. */
    bool global_blocked;
    /* Changes (kc_rt_fetch_gen_bump) with everything that can turn a kc_rt_may_fetch yes into a
     * no: bytes and frames pushed (the partition's, the total), a partition added (the share
     * shrinks), paused or revoking. The engine asks again only then (engine.h, fetch_gen).
     * What turns a no into a yes (a worker draining) need not count: a no is asked every pass.
     * A worker's pause (KC_CB_PAUSE, KC_CB_STOP) need not either: its completion pauses the
     * engine's partition (consumer.c), which then fetches nothing whatever the answer; and a
     * share partition's answer is asked on every pass (engine/share). Starts at 1. */
    uint64_t fetch_gen;
    uint64_t frame_seq;  /* numbers the frames this dispatcher charged (memory_budget.c) */
    kc_rt_part_t *parts; /* every partition not yet freed (list via all_next/prev) */
    kc_rt_part_t *done_new, *done_ready; /* REVOKE_DONE staging, see drain_completions */
    /* Group events: any thread posts, the worker running `control` consumes. */
    pthread_mutex_t ev_mu;
    kc_rt_event_t evq[KC_RT_EVQ];
    unsigned ev_head, ev_len;
    kc_rt_part_t control;
    /* Calls for the control worker (kc_rt_post_call), FIFO, unbounded: guarded by ev_mu. */
    struct kc_rt_call *calls_head, *calls_tail;
};

void *kc_rt_worker_main(void *arg);
/* Around every application callback on worker w, for the watchdog (cb_part, cb_start_ns),
 * kc_rt_own_part and the worker's stats. p: the partition the callback is about; the control
 * pseudo-partition for on_rebalance, which the watchdog watches like a record callback. */
void kc_rt_cb_enter(kc_rt_worker_t *w, kc_rt_part_t *p);
void kc_rt_cb_exit(kc_rt_worker_t *w);
/* Posts a completion from worker w; waits (waking the network thread) while its ring is full,
 * since REVOKE_DONE must not be lost. */
void kc_rt_post(kc_rt_worker_t *w, kc_rt_cmpl_type_t type, kc_rt_part_t *p, kc_err_t code,
                int64_t offset);
/* Releases a batch ref: buffer reference and byte accounting (posts DRAINED on crossing). */
void kc_rt_release_bref(kc_rt_worker_t *w, kc_rt_part_t *p, kc_rt_bref_t *b);
/* Runs pending group events on worker w (the control pseudo-partition). */
void kc_rt_run_events(kc_rt_worker_t *w);
void kc_rt_event_free(kc_rt_event_t *e);
/* events.c, pure: KC_EVENT_ERROR's `retriable` for an error (kconsume.h). */
bool kc_rt_error_retriable(const kc_error_t *e);
/* memory_budget.c. A partition with this many queued frame-starting batches is not fetched until it
 * is down to KC_RT_PART_RESUME_FRAMES. */
#define KC_RT_PART_MAX_FRAMES    3
#define KC_RT_PART_RESUME_FRAMES 1
/* Network thread, before pushing `b` for p: charges b's frame to the dispatcher the first time
 * it is seen and marks the partition's first batch from it (b->frame_first). */
void kc_rt_frame_charge(kc_rt_t *rt, kc_rt_part_t *p, kc_rt_bref_t *b);
/* Network thread: undoes kc_rt_frame_charge's per-partition half when the push failed. */
void kc_rt_frame_uncharge(kc_rt_part_t *p, const kc_rt_bref_t *b, uint64_t prev_last);
/* Worker: b is being released; true when p just fell to the resume mark. */
bool kc_rt_frame_release(kc_rt_part_t *p, const kc_rt_bref_t *b);
/* Per-partition share of queued.max.bytes. */
int64_t kc_rt_share(const kc_rt_t *rt);

/* seek.c, worker side: applies a pending seek (drops the current batch, resets the delivery
 * floor); true when there was one. Called by the worker running p. */
bool kc_rt_part_apply_seek(kc_rt_worker_t *w, kc_rt_part_t *p);

/* events.c: kc_rt_free's half of kc_rt_post_call. */
void kc_rt_calls_free(kc_rt_t *rt);

#endif
