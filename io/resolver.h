/*
 * Name resolution off the network thread. getaddrinfo() blocks (a DNS query can take the
 * resolver's full timeout x attempts, 5 s x 2 by default), and the network thread must only
 * ever block in io_uring_enter/epoll_wait, so lookups run on one helper thread per loop.
 *
 * Why one plain thread and not getaddrinfo_a(): getaddrinfo_a notifies by signal or by a thread
 * it spawns per request, and gai_cancel() cannot stop a lookup that has started either; a single
 * thread with a queue gives the same non-blocking behaviour, a bounded thread count, a result
 * path through the loop's own command queue (no signals), and a thread we can join at shutdown.
 * Lookups are rare (a pass over bootstrap.servers per reconnect cycle), so one thread serialising
 * them costs nothing measurable.
 *
 * Threads and ownership:
 *   - kc_resolver_t: created lazily by kc_loop_resolver() on the loop's thread and freed by
 *     kc_loop_free(). Its job queue (`q_head/q_tail`, `stop`) is shared with the helper thread
 *     under `mu`; everything else is the network thread's.
 *   - kc_resolve_job_t: the network thread fills it and queues it; from the moment the helper
 *     thread pops it until it kc_loop_post()s it back, the helper thread alone writes its result
 *     fields; the post (MPSC push with release, consumed with acquire, io/mpsc.h) hands it back,
 *     and the callback runs on the network thread. The mutex orders the handover in.
 *   - Cancel (network thread): a job still queued is unlinked and freed at once; a job being
 *     resolved is marked, and its result is dropped silently when it comes back. No callback ever
 *     runs after kc_resolve_cancel() returns.
 *   - kc_loop_free() joins the helper: it waits for a lookup in progress (bounded by the system
 *     resolver's timeouts) and frees every job still out, without callbacks.
 */
#ifndef KC_IO_RESOLVER_H
#define KC_IO_RESOLVER_H

#include "base/err.h"
#include "conn_addr.h"
#include "loop.h"

typedef struct kc_resolver kc_resolver_t;
typedef struct kc_resolve_job kc_resolve_job_t;

/* Network thread. On KC_OK `addrs[0..n)` are valid during the call only; otherwise `err` says
 * which host failed and why (KC_ERR_TRANSPORT: does not resolve; KC_ERR_CONFIG: bad entry). */
typedef void (*kc_resolve_cb)(kc_err_t rc, const kc_addr_t *addrs, int n, const kc_error_t *err,
                              void *opaque);

/* The loop's resolver (created on first use). Loop thread only. NULL when out of memory or no
 * thread could be started (err says which). */
kc_resolver_t *kc_loop_resolver(kc_loop_t *loop, kc_error_t *err);
/* Loop thread (from kc_loop_free). Joins the helper and frees every job still out. */
void kc_resolver_free(kc_resolver_t *r);

/* Resolves every "host:port" of `servers` (as kc_addr_resolve, with its `flags`) on the helper
 * thread; `cb` runs later on the loop's thread from kc_loop_run_once(), never from inside this
 * call. */
kc_err_t kc_resolve_start(kc_resolver_t *r, const char *servers, int flags, kc_resolve_cb cb,
                          void *opaque, kc_resolve_job_t **out, kc_error_t *err);
/* Loop thread. After this the job's callback never runs; the job is freed (now or when the
 * helper returns it). */
void kc_resolve_cancel(kc_resolve_job_t *job);

#endif
