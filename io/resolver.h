/*
 * Name resolution off the network thread. getaddrinfo() blocks (a DNS query can take the
 * resolver's full timeout x attempts, 5 s x 2 by default), and the network thread must only
 * ever block in io_uring_enter/epoll_wait, so lookups run on the loop's DNS offload lane
 * (io/offload.h): its own helper thread, so a KDC that hangs on the login lane never delays a
 * lookup.
 *
 * Why a helper thread and not getaddrinfo_a(): getaddrinfo_a notifies by signal or by a thread
 * it spawns per request, and gai_cancel() cannot stop a lookup that has started either; one
 * thread with a queue gives the same non-blocking behaviour, a bounded thread count, a result
 * path through the loop's own command queue (no signals), and a thread we can join at shutdown.
 * Lookups are rare (a pass over bootstrap.servers per reconnect cycle), so one thread serialising
 * them costs nothing measurable.
 *
 * Threads and ownership: a kc_resolve_job_t is the network thread's, except between the helper
 * popping it and posting it back (offload.h), when only its result fields are written, by the
 * helper. Cancel (network thread): no callback runs after kc_resolve_cancel() returns; the job
 * is freed now or when it comes back. kc_loop_free() joins the helper and frees every job still
 * out, without callbacks.
 */
#ifndef KC_IO_RESOLVER_H
#define KC_IO_RESOLVER_H

#include "base/err.h"
#include "conn_addr.h"
#include "loop.h"

typedef struct kc_resolve_job kc_resolve_job_t;

/* Network thread. On KC_OK `addrs[0..n)` are valid during the call only; otherwise `err` says
 * which host failed and why (KC_ERR_TRANSPORT: does not resolve; KC_ERR_CONFIG: bad entry). */
typedef void (*kc_resolve_cb)(kc_err_t rc, const kc_addr_t *addrs, int n, const kc_error_t *err,
                              void *opaque);

/* Resolves every "host:port" of `servers` (as kc_addr_resolve, with its `flags`) on the loop's
 * DNS helper; `cb` runs later on the loop's thread from kc_loop_run_once(), never from inside
 * this call. Loop thread only. */
kc_err_t kc_resolve_start(kc_loop_t *loop, const char *servers, int flags, kc_resolve_cb cb,
                          void *opaque, kc_resolve_job_t **out, kc_error_t *err);
/* Loop thread. After this the job's callback never runs; the job is freed (now or when the
 * helper returns it). */
void kc_resolve_cancel(kc_resolve_job_t *job);

#endif
