/*
 * Metrics as KIP-714 pushes them: an OpenTelemetry MetricsData message (OTLP, protobuf), the
 * content type "application/x-protobuf" that Kafka's brokers hand to their telemetry plugins.
 *
 * A snapshot is a list of points, each a metric name as the Java client names it
 * (org.apache.kafka.consumer.<group>.<name>), a kind, a value and up to KC_TLM_MAX_ATTRS
 * attributes (topic and partition, node_id). Points of one metric are consecutive. A gauge is an
 * OTLP Gauge with a double; a counter is a monotonic OTLP Sum with an int, cumulative since the
 * consumer started or, when the subscription asks for delta temporality, the change since the
 * previous push (the caller subtracts; kc_tlm_delta).
 *
 * Field numbers are those of opentelemetry-proto's metrics/v1, common/v1 and resource/v1
 * messages; tests/unit/test_telemetry.c decodes the output field by field, and the kafka test
 * has the broker's plugin parse it with the OTLP classes Kafka ships.
 *
 * Owner: the caller's thread; nothing shared.
 */
#ifndef KC_ENGINE_TELEMETRY_OTLP_H
#define KC_ENGINE_TELEMETRY_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "proto/wire.h"

#define KC_TLM_MAX_ATTRS 2

typedef enum kc_tlm_kind {
    KC_TLM_GAUGE,
    KC_TLM_COUNTER,
} kc_tlm_kind_t;

typedef struct kc_tlm_attr {
    char *key;
    char *value;
} kc_tlm_attr_t;

typedef struct kc_tlm_point {
    char *name;
    kc_tlm_kind_t kind;
    double value;
    int n_attrs;
    kc_tlm_attr_t attrs[KC_TLM_MAX_ATTRS];
} kc_tlm_point_t;

/* A snapshot: points (owned, strings copied). Zero-initialise before use. */
typedef struct kc_tlm_points {
    kc_tlm_point_t *v;
    size_t n, cap;
    bool failed; /* an add ran out of memory: the snapshot is incomplete */
} kc_tlm_points_t;

/* Adds a point with `n_attrs` key/value string pairs after `value` (each copied). */
void kc_tlm_add(kc_tlm_points_t *p, const char *name, kc_tlm_kind_t kind, double value, int n_attrs,
                ...);
void kc_tlm_points_free(kc_tlm_points_t *p);
/* Keeps the points whose name `want` accepts, in their order; frees the rest. */
void kc_tlm_keep(kc_tlm_points_t *p, bool (*want)(void *ctx, const char *name), void *ctx);

/* The change of every counter of `now` since the same series (name and attributes) in `prev`:
 * a series `prev` lacks counts from 0; gauges are left as they are. */
void kc_tlm_delta(kc_tlm_points_t *now, const kc_tlm_points_t *prev);

typedef struct kc_otlp_in {
    const kc_tlm_attr_t *resource; /* the Resource's attributes */
    size_t n_resource;
    const char *scope_name, *scope_version;
    const kc_tlm_point_t *points;
    size_t n_points;
    bool delta;        /* counters are deltas (AggregationTemporality DELTA, else CUMULATIVE) */
    uint64_t start_ns; /* counters' start: the consumer's start, or the previous push */
    uint64_t time_ns;  /* the snapshot's time */
} kc_otlp_in_t;

/* Appends the MetricsData message to `out`. */
kc_err_t kc_otlp_encode(const kc_otlp_in_t *in, kc_wbuf_t *out, kc_error_t *err);

#endif
