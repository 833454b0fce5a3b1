/*
 * Classic-group partition assignors: range, roundrobin, sticky (eager) and cooperative-sticky,
 * each producing exactly what Java's kafka-clients 4.1 assignor of the same name produces for the
 * same input (checked by tests/interop/assignors.test.sh against the real jar).
 *
 * Owner: the network thread (the group leader runs one assignment per rebalance). The functions
 * are pure: no I/O, no globals, deterministic; the input is only read, and the result is owned by
 * the caller (kc_assign_result_free).
 *
 * Member order matters. Java's leader puts the JoinGroup members into a HashMap keyed by member
 * id, and the sticky assignors walk that map in several places, so the members[] array must be in
 * JoinGroup-response order: the assignors reproduce the HashMap's iteration order from it.
 *
 * Known limits of the equivalence (inputs a broker does not produce, or Java mishandles):
 *   - owned/previous partitions of a known topic numbered past its metadata partition count are
 *     dropped here; Java carries them along (and can then double-assign);
 *   - a topic listed twice in one subscription, or a partition twice in one owned list;
 *   - HashMap bins of 8+ colliding member ids (Java turns them into trees);
 *   - AbstractStickyAssignor keeps maxGeneration across calls on one instance; each call here
 *     starts afresh, like a newly created Java assignor.
 */
#ifndef KC_ENGINE_GROUP_CLASSIC_ASSIGN_ASSIGN_H
#define KC_ENGINE_GROUP_CLASSIC_ASSIGN_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kconsume.h"

typedef struct kc_assign_tp {
    const char *topic;
    int32_t partition;
} kc_assign_tp_t;

/* One member's subscription as the leader decoded it. Strings are UTF-8 (compared the way Java
 * compares its UTF-16 strings). */
typedef struct kc_assign_member {
    const char *member_id;
    const char *instance_id; /* group.instance.id, NULL for a dynamic member */
    const char *rack;        /* client.rack, NULL (or "") when unset */
    const char *const *topics;
    size_t n_topics;
    const kc_assign_tp_t *owned; /* owned partitions from the subscription (v1+) */
    size_t n_owned;
    int32_t generation; /* the subscription's generation id (v2+); < 0 means absent */
    /* Assignor user data, decoded (the caller runs the codec; no wire code here).
     * Eager sticky (StickyAssignor's V1/V0 struct): prev = previous assignment, and the
     *   generation when V1. An absent or empty buffer: has_user_data = false. A buffer neither
     *   V1 nor V0 decodes: has_user_data = true, n_prev = 0, generation present = -1 (Java's
     *   fallback).
     * Cooperative-sticky: only the generation, read when `generation` is absent; a buffer
     *   that fails to decode: has_user_data = true, prev_has_generation = false (read as -1).
     * The other assignors ignore these fields. */
    bool has_user_data; /* user data present and non-empty */
    const kc_assign_tp_t *prev;
    size_t n_prev;
    bool prev_has_generation;
    int32_t prev_generation;
} kc_assign_member_t;

/* A topic's metadata. replica_racks, when not NULL, holds for each partition the racks of its
 * replicas (n_replica_racks[p] entries; a NULL entry is a replica whose broker has no rack). */
typedef struct kc_assign_topic {
    const char *name;
    int32_t n_partitions; /* 0 = no metadata: the topic is left out, as Java does */
    const char *const *const *replica_racks;
    const size_t *n_replica_racks;
} kc_assign_topic_t;

typedef struct kc_assign_input {
    const kc_assign_member_t *members; /* JoinGroup-response order (see above) */
    size_t n_members;
    const kc_assign_topic_t *topics;
    size_t n_topics;
} kc_assign_input_t;

/* Per member (same index as input.members): its partitions sorted by topic, then partition.
 * Topic pointers point into the input's topic names. */
typedef struct kc_assign_member_result {
    kc_assign_tp_t *tps;
    size_t n;
} kc_assign_member_result_t;

typedef struct kc_assign_result {
    kc_assign_member_result_t *members;
    size_t n_members;
} kc_assign_result_t;

typedef enum kc_assignor {
    KC_ASSIGNOR_RANGE,
    KC_ASSIGNOR_ROUNDROBIN,
    KC_ASSIGNOR_STICKY,
    KC_ASSIGNOR_COOPERATIVE_STICKY,
} kc_assignor_t;

/* The protocol name ("range", ...) and back; -1 for an unknown name. */
const char *kc_assignor_name(kc_assignor_t a);
int kc_assignor_from_name(const char *name);

/* Runs one assignor. KC_ERR_INVALID_ARG for duplicate member ids or topic names, KC_ERR_NOMEM.
 * On error *out is left empty. */
kc_err_t kc_assign_run(kc_assignor_t a, const kc_assign_input_t *in, kc_assign_result_t *out,
                       kc_error_t *err);
kc_err_t kc_assign_range(const kc_assign_input_t *in, kc_assign_result_t *out, kc_error_t *err);
kc_err_t kc_assign_roundrobin(const kc_assign_input_t *in, kc_assign_result_t *out,
                              kc_error_t *err);
kc_err_t kc_assign_sticky(const kc_assign_input_t *in, kc_assign_result_t *out, kc_error_t *err);
kc_err_t kc_assign_cooperative_sticky(const kc_assign_input_t *in, kc_assign_result_t *out,
                                      kc_error_t *err);

void kc_assign_result_free(kc_assign_result_t *r);

#endif
