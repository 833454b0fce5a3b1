/*
 * KIP-714 client telemetry: when to ask the cluster for a metrics subscription and when to push
 * metrics to it. A pure state machine: time and the random jitter are passed in, the driver
 * (telemetry.c) sends what it says and hands it the answers.
 *
 * The rules, from KIP-714 and the broker's checks (ClientMetricsManager, Kafka 3.7-4.4):
 *   - GetTelemetrySubscriptions first, with a null client instance id; the answer's id is used in
 *     every later request, to any broker, for the life of the consumer.
 *   - An answer that requests no metrics means "nothing wanted now": ask again after its push
 *     interval (subscriptions change while clients run).
 *   - The first push waits the push interval times a jitter in [0.5, 1.5) (so a fleet restarted at
 *     once does not push in step; the broker accepts the first push after a subscription early
 *     for that reason), every later one the interval after the previous answer arrived. The
 *     broker refuses a push that comes less than an interval after the previous one it accepted
 *     (THROTTLING_QUOTA_EXCEEDED); timing from the answer, which left the broker after it stamped
 *     the push, keeps a push from arriving early.
 *   - UNKNOWN_SUBSCRIPTION_ID and UNSUPPORTED_COMPRESSION_TYPE: the subscription changed; ask
 *     again at once (the broker lets that request through its interval check).
 *   - INVALID_REQUEST and INVALID_RECORD: the broker cannot use what this client sends; retrying
 *     cannot help, so telemetry stops for the consumer's life (said once).
 *   - TELEMETRY_TOO_LARGE and throttling: skip this push, try the next one an interval later.
 *   - No usable answer (connection lost, timeout, another error): ask for the subscription again
 *     an interval later (a request sooner would be throttled), at the backoff when no interval is
 *     known yet.
 *   - At close, while subscribed to something: one last push with Terminating set, sent at once
 *     (the broker accepts a terminating push inside the interval); after it nothing is sent.
 *
 * Owner: the engine's network thread.
 */
#ifndef KC_ENGINE_TELEMETRY_STATE_H
#define KC_ENGINE_TELEMETRY_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/get_telemetry_subscriptions.gen.h"
#include "proto/wire.h"

/* Kafka's CompressionType ids, as PushTelemetry carries them. */
#define KC_TLM_COMPRESSION_NONE 0
#define KC_TLM_COMPRESSION_GZIP 1
#define KC_TLM_COMPRESSION_ZSTD 4

typedef enum kc_tlm_phase {
    KC_TLM_NEED_SUBSCRIPTION, /* a GetTelemetrySubscriptions is due at next_ms */
    KC_TLM_ASKING,            /* one is in flight */
    KC_TLM_SUBSCRIBED,        /* a push (or, with no metrics requested, a new ask) at next_ms */
    KC_TLM_PUSHING,           /* a push is in flight */
    KC_TLM_STOPPED,           /* nothing more is sent: the broker refused us, or the last push */
} kc_tlm_phase_t;

typedef enum kc_tlm_action {
    KC_TLM_NOTHING,
    KC_TLM_ASK,  /* send GetTelemetrySubscriptions */
    KC_TLM_PUSH, /* send PushTelemetry (kc_tlm_t.terminating says whether it is the last) */
} kc_tlm_action_t;

/* What a GetTelemetrySubscriptions answer said (the driver copies it out of the frame). */
typedef struct kc_tlm_subscription {
    kc_uuid_t client_instance_id;
    int32_t subscription_id;
    int32_t push_interval_ms;
    int32_t telemetry_max_bytes;
    bool delta_temporality;
    const int8_t *accepted_compression; /* the broker's order of preference */
    int n_accepted_compression;
    const kc_str_t *metrics; /* name prefixes; "*" (or "") alone: all */
    int n_metrics;
} kc_tlm_subscription_t;

typedef struct kc_tlm {
    kc_tlm_phase_t phase;
    int64_t next_ms; /* when the next request is due (NEED_SUBSCRIPTION, SUBSCRIBED) */
    int64_t backoff_ms;
    kc_uuid_t instance_id; /* all zero until the first answer */
    int32_t subscription_id;
    int32_t push_interval_ms; /* 0 until an answer gave one */
    int32_t max_bytes;
    bool delta;
    int8_t compression;  /* the first accepted type this client can write */
    char **prefixes;     /* the requested metrics' prefixes (owned) */
    int n_prefixes;      /* 0: none requested */
    bool all;            /* every metric requested */
    bool closing;        /* kc_tlm_close was called: the next push is the terminating one */
    bool terminating;    /* the push in flight (or due) is the terminating one */
    const char *stopped; /* why it stopped (static text), NULL while running */
    uint64_t pushes, push_errors, asks;
} kc_tlm_t;

/* The answer's fields as the machine takes them (views into the answer: use it before the
 * answer's frame and arena go). */
kc_tlm_subscription_t kc_tlm_subscription_of(const kc_get_telemetry_subscriptions_response_t *m);

void kc_tlm_init(kc_tlm_t *t, int64_t now_ms, int64_t backoff_ms);
void kc_tlm_destroy(kc_tlm_t *t);

/* What to send now, or KC_TLM_NOTHING with *due_ms the time to look again (-1: never). The
 * driver calls kc_tlm_sent after sending what it was told. */
kc_tlm_action_t kc_tlm_next(kc_tlm_t *t, int64_t now_ms, int64_t *due_ms);
void kc_tlm_sent(kc_tlm_t *t, kc_tlm_action_t a);

/* A GetTelemetrySubscriptions answer: code 0 with `sub`, a broker error code, or -1 for no usable
 * answer. `jitter` in [0.5, 1.5) spaces the first push. Returns false when the answer cannot be
 * stored (out of memory), which the machine takes as no usable answer. */
bool kc_tlm_on_subscription(kc_tlm_t *t, int64_t now_ms, int16_t code,
                            const kc_tlm_subscription_t *sub, double jitter);
/* A PushTelemetry answer: 0, the broker's error code, or -1 for no usable answer. */
void kc_tlm_on_push(kc_tlm_t *t, int64_t now_ms, int16_t code);
/* A push that was due could not be made (the payload is larger than the broker takes, or could
 * not be built): the next one an interval later. */
void kc_tlm_push_skipped(kc_tlm_t *t, int64_t now_ms);
/* The broker cannot take telemetry at all (it lacks the APIs): stop, with the reason. */
void kc_tlm_stop(kc_tlm_t *t, const char *why);

/* The consumer closes: returns true when a terminating push is owed (now, or once the push in
 * flight is answered), false when nothing more will be sent. */
bool kc_tlm_close(kc_tlm_t *t);
/* Nothing is in flight or owed: the close may go on. */
bool kc_tlm_idle(const kc_tlm_t *t);

/* Does the subscription ask for the metric `name`? */
bool kc_tlm_wants(const kc_tlm_t *t, const char *name);

#endif
