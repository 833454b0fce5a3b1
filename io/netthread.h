/*
 * The network thread: one OS thread that owns one kc_loop_t and everything driven by it
 * (connections, and later metadata and the engine). Other threads talk to it only through
 * kc_netthread_post() (the loop's MPSC command queue + eventfd wake).
 */
#ifndef KC_IO_NETTHREAD_H
#define KC_IO_NETTHREAD_H

#include <pthread.h>

#include "base/log.h"
#include "loop.h"

typedef struct kc_netthread kc_netthread_t;

/* Starts the thread and creates its loop on it (SINGLE_ISSUER ties the ring to that thread).
 * The thread logs through `log` (base/log.h; NULL: the process-wide logger), which must outlive
 * it. Returns once the loop exists, or with the loop's creation error. Caller thread: any. */
kc_err_t kc_netthread_start(kc_netthread_t **out, kc_loop_backend_t backend, const kc_logger_t *log,
                            kc_error_t *err);
/* Any thread. `cmd->fn` runs on the network thread. */
void kc_netthread_post(kc_netthread_t *nt, kc_loop_cmd_t *cmd);
/* Any thread but the network thread: runs `fn(loop, arg)` there and waits for it to return. */
void kc_netthread_call(kc_netthread_t *nt, void (*fn)(kc_loop_t *loop, void *arg), void *arg);
/* Stops the loop after the commands already posted, joins, frees. Close connections first (from a
 * command); the loop then waits up to 1 s for their cancelled ops. Not from the network thread. */
void kc_netthread_stop(kc_netthread_t *nt);
/* The loop, for reading stats (kc_loop_get_stats is safe from any thread). */
kc_loop_t *kc_netthread_loop(kc_netthread_t *nt);

#endif
