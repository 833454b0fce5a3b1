/*
 * kc-fault-proxy internals shared by fault_proxy.c (listeners, connections, forwarding) and
 * fp_rules.c (the control language and the rules applied to responses).
 *
 * Threads: the main thread accepts clients and serves the control socket; each proxied
 * connection has two threads (client→broker requests, broker→client responses). The broker map
 * is read-only after start; rules and counters live in fp_t and are guarded by fp_t.lock.
 */
#ifndef KC_TESTKIT_FP_H
#define KC_TESTKIT_FP_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kt_frame.h"

#define FP_MAX_BROKERS 16
#define FP_MAX_RULES   32

typedef enum fp_kind {
    FP_INJECT,      /* error code into the next N responses of an API */
    FP_CORRUPT,     /* flip a byte inside the first record batch of a Fetch response */
    FP_TRUNCATE,    /* send part of the response frame, then close the connection */
    FP_GARBAGE,     /* replace the response body with random bytes */
    FP_CLOSE_AFTER, /* close the connection after N more bytes towards the client */
    FP_DELAY,       /* hold the next N responses of an API back for ms (the connection's later
                       responses wait behind them, as behind a slow broker's) */
    FP_KIND_COUNT
} fp_kind_t;

typedef struct fp_rule {
    fp_kind_t kind;
    int16_t api;          /* -1: any API */
    int broker;           /* -1: any broker (listener index) */
    int count;            /* responses (or connections, for close-after) still to hit */
    int16_t error;        /* FP_INJECT */
    bool partition_scope; /* FP_INJECT: per partition rather than top level */
    int32_t partition;    /* FP_INJECT per partition: -1 every partition */
    int64_t bytes;        /* FP_TRUNCATE: bytes of the frame sent; FP_CLOSE_AFTER: bytes */
    int ms;               /* FP_DELAY */
} fp_rule_t;

typedef struct fp {
    /* Read-only after start. */
    int n;
    int listen_port[FP_MAX_BROKERS];
    char up_host[FP_MAX_BROKERS][128];
    int up_port[FP_MAX_BROKERS];

    /* Set by the SIGTERM handler, read by the accept loop and every connection thread: a
     * lock-free atomic (async-signal-safe) rather than volatile sig_atomic_t, which is only for
     * a handler and the thread it interrupted. It publishes nothing else. */
    atomic_int stop;
    pthread_mutex_t lock; /* guards everything below */
    fp_rule_t rules[FP_MAX_RULES];
    int n_rules;
    int latency_ms;
    int64_t bandwidth; /* bytes/s towards the client, 0: unlimited */
    bool blackhole[FP_MAX_BROKERS];
    /* API keys removed from every ApiVersions answer: a broker that lacks them (hide-api). */
    bool hidden_api[KC_PROTO_MAX_API_KEY + 1];
    /* API keys whose advertised max version is capped at api_cap (cap-api): an older broker.
     * A request above the cap is counted in over_cap and its connection closed, as such a
     * broker would. */
    bool capped_api[KC_PROTO_MAX_API_KEY + 1];
    int16_t api_cap[KC_PROTO_MAX_API_KEY + 1];
    uint64_t requests[KC_PROTO_MAX_API_KEY + 1], responses[KC_PROTO_MAX_API_KEY + 1];
    uint64_t fired[FP_KIND_COUNT], rewritten, decode_failures, connections, over_cap;
} fp_t;

/* What the response thread must do to one response, decided under the lock. */
typedef struct fp_plan {
    bool inject, corrupt, truncate, garbage;
    fp_rule_t inject_rule;
    int64_t truncate_bytes;
    int64_t close_after; /* -1: none; else bytes this connection may still send */
    int latency_ms;
    int64_t bandwidth;
    bool hide_apis; /* an ApiVersions answer with keys to remove (`hidden`) */
    bool hidden[KC_PROTO_MAX_API_KEY + 1];
    bool cap_apis; /* an ApiVersions answer with max versions to lower (`capped`, `cap`) */
    bool capped[KC_PROTO_MAX_API_KEY + 1];
    int16_t cap[KC_PROTO_MAX_API_KEY + 1];
} fp_plan_t;

/* A request the proxy must not forward: its version is above the cap-api cap of its API (the
 * client ignored the advertised range). Counts it in over_cap. Takes fp->lock. */
bool fp_over_cap(fp_t *fp, int16_t api, int16_t version);

/* Executes one control line; writes a one-line answer starting with "OK" or "ERR" to reply. */
void fp_control(fp_t *fp, const char *line, char *reply, size_t cap);

/* Decides what happens to the next response of (api, broker). Takes fp->lock. */
void fp_plan_response(fp_t *fp, int16_t api, int broker, fp_plan_t *plan);

/* Applies the plan's content changes to one response frame f (correlation id first, no size)
 * for (api, version): address rewriting (Metadata, FindCoordinator, Fetch node endpoints),
 * injection (decode → modify → encode with the generated codec) and corruption (a byte flipped
 * in place). Writes the frame to send, size included, to out. */
void fp_transform(fp_t *fp, int16_t api, int16_t version, kt_frame_t *f, const fp_plan_t *plan,
                  kc_wbuf_t *out, kc_arena_t *a);

#endif
