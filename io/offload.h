/*
 * Blocking work off the network thread: helper threads per loop that run calls which may block
 * for seconds (a Kerberos login or service-ticket request to a KDC that is slow or down, a
 * getaddrinfo against a DNS server that does not answer), and hand each result back through the
 * loop's command queue, so the network thread itself only ever blocks in
 * io_uring_enter/epoll_wait and keeps serving every other broker meanwhile.
 *
 * One helper per lane (kc_offload_lane_t), each with its own queue, so that a KDC that hangs for
 * its full timeout never delays a name lookup, and the reverse. Within a lane jobs run one at a
 * time in the order submitted: they are rare (a login per connection or re-authentication, a
 * lookup per pass over a connection's addresses), and one thread keeps libraries that are not
 * reentrant per handle (GSSAPI credentials shared by a consumer's connections) safe without
 * more locking.
 *
 * Threads and ownership:
 *   - kc_offload_t (one per lane): created lazily by kc_loop_offload() on the loop's thread and
 * freed by kc_loop_free(), which joins the helper (waiting out a call in progress, which the called
 *     library bounds: krb5.conf's kdc_timeout x max_retries for a KDC). The queue
 *     (`q_head/q_tail`, `stop`, each job's `queued`) is shared with the helper under `mu`;
 *     everything else is the network thread's.
 *   - kc_offload_job_t: the network thread fills it and submits it; from the moment the helper
 *     pops it until it kc_loop_post()s it back, `work` runs on the helper and the job's `arg`
 *     belongs to it; the post (MPSC release/acquire, io/mpsc.h) hands both back, and `done` runs
 *     on the network thread. The mutex orders the handover in.
 *   - Cancel (network thread): a job still queued is unlinked and `discard`ed at once; one being
 *     run is marked, and `discard` runs instead of `done` when it comes back. Either way `done`
 *     never runs after kc_offload_cancel() returns. kc_loop_free() discards every job still out.
 */
#ifndef KC_IO_OFFLOAD_H
#define KC_IO_OFFLOAD_H

#include "base/err.h"
#include "loop.h"

typedef struct kc_offload kc_offload_t;
typedef struct kc_offload_job kc_offload_job_t;

typedef enum kc_offload_lane {
    KC_OFFLOAD_LOGIN = 0, /* GSSAPI logins and security-context steps (io/conn_sasl.c) */
    KC_OFFLOAD_DNS = 1,   /* name lookups (io/resolver.c) */
    KC_OFFLOAD_LANES = 2,
} kc_offload_lane_t;

typedef struct kc_offload_fns {
    void (*work)(void *arg);    /* the helper thread: may block */
    void (*done)(void *arg);    /* the network thread, after work */
    void (*discard)(void *arg); /* the network thread: cancelled or the loop goes; frees arg */
} kc_offload_fns_t;

/* The loop's helper for `lane` (created on first use). Loop thread only. NULL when out of memory
 * or no thread could be started (err says which). */
kc_offload_t *kc_loop_offload(kc_loop_t *loop, kc_offload_lane_t lane, kc_error_t *err);
/* Loop thread (from kc_loop_free). Joins the helper and discards every job still out. */
void kc_offload_free(kc_offload_t *o);

/* Queues `fns->work(arg)`; `fns` must outlive the job (a static table). `done` (or `discard`)
 * runs later on the loop's thread, never from inside this call. *out identifies the job for
 * kc_offload_cancel until done/discard runs. */
kc_err_t kc_offload_submit(kc_offload_t *o, const kc_offload_fns_t *fns, void *arg,
                           kc_offload_job_t **out, kc_error_t *err);
/* Loop thread. After this `done` never runs for the job; `discard` runs (now or when the helper
 * returns it). */
void kc_offload_cancel(kc_offload_job_t *job);

#endif
