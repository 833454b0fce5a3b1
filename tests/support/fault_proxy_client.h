/*
 * C tests' handle on the testkit servers: start kc-fault-proxy (or kc-memory-broker) as a child
 * process, talk to the proxy's control socket, stop it. The binaries are found next to the test
 * executable (build/<x>/tests/testkit/) or through KC_TESTKIT_BIN (a directory).
 *
 * Owner: the test thread that started the child; not thread-safe.
 */
#ifndef KC_TEST_FAULT_PROXY_H
#define KC_TEST_FAULT_PROXY_H

#include <stddef.h>
#include <sys/types.h>

typedef struct kc_fp kc_fp_t;

/* Starts kc-fault-proxy with one listener (ephemeral port) per upstream in `upstreams`
 * ("host:port,host:port"). NULL (and a message on stderr) on failure. */
kc_fp_t *kc_fp_start(const char *upstreams);
/* "127.0.0.1:P0,127.0.0.1:P1,...": one address per upstream, in the same order. */
const char *kc_fp_bootstrap(const kc_fp_t *fp);
/* Sends one control line (printf-style, e.g. "inject api=Heartbeat error=NOT_COORDINATOR
 * count=2") and stores the answer in reply. 0 when the answer starts with "OK", else -1. */
int kc_fp_cmd(kc_fp_t *fp, char *reply, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The counter `name` from the proxy's "stats" line (e.g. "fired.inject", "rewritten"), -1 if
 * absent. */
long kc_fp_stat(kc_fp_t *fp, const char *name);
/* SIGTERM, wait; returns the proxy's exit status (0 for a clean exit). Frees fp. */
int kc_fp_stop(kc_fp_t *fp);

/* Starts a testkit server binary (`name`, e.g. "kc-memory-broker") with argv (NULL-terminated,
 * without argv[0]); waits for its "BOOTSTRAP=" line and copies the address to bootstrap.
 * Returns the child's pid, or -1. */
pid_t kc_testkit_spawn(const char *name, const char *const *args, char *bootstrap, size_t cap);
/* SIGTERM and wait; the exit status, or -1. */
int kc_testkit_stop(pid_t pid);

/* A memory broker (kc-memory-broker with args, as kc_testkit_spawn) with a fault proxy in front
 * of it: a test's members reach it directly (bootstrap) or through *fp. 0 on success; on failure
 * what started is stopped. kc_test_proxied_broker_stop: both, 0 when both exited cleanly. */
int kc_test_proxied_broker(const char *const *args, char *bootstrap, size_t cap, pid_t *pid,
                           kc_fp_t **fp);
int kc_test_proxied_broker_stop(pid_t pid, kc_fp_t *fp);

#endif
