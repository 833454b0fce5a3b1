/*
 * The public consumer's group (group.c): glue between the dispatcher and engine/group/'s driver,
 * which runs the protocol group.protocol names (the table in group.c). Every function runs on
 * the network thread (consumer.c calls them from its commands and from its completion drain),
 * except kc_rt_group_conf (pure).
 */
#ifndef KC_RUNTIME_GROUP_H
#define KC_RUNTIME_GROUP_H

#include <stdbool.h>

#include "coordinator.h"
#include "dispatch.h"
#include "engine.h"
#include "group/group.h"

typedef struct kc_rt_group kc_rt_group_t;

kc_err_t kc_rt_group_new(kc_rt_group_t **out, kc_engine_t *e, kc_rt_t *rt, const kc_conf_t *conf,
                         kc_error_t *err);
/* Topic names, or exactly one entry starting with '^': a broker-evaluated regex. */
kc_err_t kc_rt_group_subscribe(kc_rt_group_t *cg, const char *const *topics, size_t n,
                               kc_error_t *err);
/* The group-level callback's completions (rebalance.h): a PARKED one (only the group's
 * partitions park), and a REBALANCED one with its token. */
void kc_rt_group_on_parked(kc_rt_group_t *cg, kc_rt_part_t *p);
void kc_rt_group_on_rebalanced(kc_rt_group_t *cg, int64_t token);
/* A REVOKE_DONE completion: true when the partition is the group's (then the group frees it). */
bool kc_rt_group_on_revoke_done(kc_rt_group_t *cg, kc_rt_part_t *p);
void kc_rt_group_close(kc_rt_group_t *cg);
/* The group owns the consumer's assignment: subscribed, or its leave (kc_unsubscribe,
 * kc_close) not over yet. false for NULL. Manual assignment is refused meanwhile, and commits
 * go under the member's identity. Network thread. */
bool kc_rt_group_subscribed(kc_rt_group_t *cg);
/* The owned partitions (not being revoked), calloc'd (the caller frees the array; the topic
 * strings are the group's, valid until its next change); *n their count. NULL when out of
 * memory. Network thread. */
kc_topic_partition_t *kc_rt_group_assignment(const kc_rt_group_t *cg, size_t *n);
/* The subscription as last given to a kc_subscribe that succeeded; NULL / 0 when not
 * subscribed. Valid until the next subscribe. Network thread. */
const char *const *kc_rt_group_subscription(kc_rt_group_t *cg, size_t *n);
bool kc_rt_group_closed(const kc_rt_group_t *cg);
/* After the engine was closed (its coordinator work finished), before it is freed. */
void kc_rt_group_free(kc_rt_group_t *cg);
void kc_rt_group_stats_json(const kc_rt_group_t *cg, kc_json_t *w);
/* The group's i-th owned partition (not being revoked), for the stats JSON's "partitions" and
 * kc_position: false past the end. Network thread. */
bool kc_rt_group_part_at(const kc_rt_group_t *cg, size_t i, const char **topic, int32_t *partition,
                         kc_rt_part_t **rtp);
/* The owned (not revoking) partition's runtime state, or NULL. Network thread. */
kc_rt_part_t *kc_rt_group_find(const kc_rt_group_t *cg, const char *topic, int32_t partition);

/* kc_store_offset for a group partition: KC_ERR_NOT_FOUND when the member does not hold it,
 * KC_ERR_STATE once its revocation passed on_revoke (the revocation commits what was stored
 * before). Network thread. */
kc_err_t kc_rt_group_store(kc_rt_group_t *cg, const char *topic, int32_t partition, int64_t offset,
                           kc_error_t *err);

/* The application's kc_commit / kc_commit_async / kc_committed under a group: every request
 * carries the member's identity as it is when the request is built (KIP-848: member id + the
 * current member epoch, STALE_MEMBER_EPOCH asked again with the fresh one; classic: member id +
 * generation + group.instance.id), never the anonymous form a group with members refuses.
 * kc_rt_group_commit: offs NULL = every held (not revoking) partition's committable offset; *none
 * is set when nothing was processed yet (nothing sent, cb not called). kc_rt_group_committed:
 * KIP-848 names the member on OffsetFetch (v9+); classic sends the anonymous form, which the broker
 * accepts from anyone. Network thread. */
kc_err_t kc_rt_group_commit(kc_rt_group_t *cg, const kc_engine_offset_t *offs, size_t n,
                            int timeout_ms, kc_engine_offsets_cb cb, void *opaque, bool *none,
                            kc_error_t *err);
/* Auto-commit's form of kc_rt_group_commit(offs NULL): under the identity as it is now, never
 * read again. A STALE_MEMBER_EPOCH answer means a rebalance moved the epoch; the same offsets
 * committed again under the new one could land after the revocation's commit (or the next
 * owner's) and move the group's offset back, or commit a partition that was lost. The caller
 * asks again shortly with fresh offsets instead. */
kc_err_t kc_rt_group_auto_commit(kc_rt_group_t *cg, int timeout_ms, kc_engine_offsets_cb cb,
                                 void *opaque, bool *none, kc_error_t *err);
/* An auto-commit's answer (first Kafka code, 0 ok), counted in the group's stats. */
void kc_rt_group_count_commit(kc_rt_group_t *cg, int16_t code);
kc_err_t kc_rt_group_committed(kc_rt_group_t *cg, const kc_engine_offset_t *offs, size_t n,
                               int timeout_ms, kc_engine_offsets_cb cb, void *opaque,
                               kc_error_t *err);
/* An application commit's answer, before it reaches the caller (network thread): says what a
 * membership refusal means in `err` (rc != KC_OK), and lets a classic member whose generation is
 * gone rejoin, as its own auto-commit does. */
void kc_rt_group_commit_result(kc_rt_group_t *cg, kc_err_t rc, kc_error_t *err,
                               const kc_engine_offset_t *res, size_t n);

/* The protocol to start with (kc_conf_group_protocol decides): the one group.protocol names,
 * or under auto the one a protocol-only setting implies; NULL under auto otherwise, and the
 * group driver asks the coordinator (group/group.h). */
const kc_group_proto_t *kc_rt_group_protocol(const kc_conf_t *conf);
/* The group driver's settings from the configuration, for both protocols (rt_conf.c: the one
 * place the group's keys are read). Pure, any thread; the strings are the configuration's. */
void kc_rt_group_conf(const kc_conf_t *conf, kc_group_conf_t *out);
/* Auto-commit may run now (auto_commit.c's timer): the member is in its group, no
 * reconciliation is running, not closing, not self-fenced. */
bool kc_rt_group_may_auto_commit(const kc_rt_group_t *cg);

/* consumer.c's hooks. kc_rt_group_call runs KC_COP_SUBSCRIBE / KC_COP_UNSUBSCRIBE /
 * KC_COP_GROUP_CLOSE on the network thread (`drain` is consumer.c's completion handler).
 * kc_rt_group_close_wait (app thread, from kc_close) revokes, commits and leaves, waiting up to
 * timeout_ms; KC_OK without a group. */
struct kc_ccall;
void kc_rt_group_call(kc_consumer_t *c, struct kc_ccall *k,
                      void (*drain)(void *ctx, const kc_rt_cmpl_t *m));
kc_err_t kc_rt_group_close_wait(kc_consumer_t *c, int timeout_ms, kc_error_t *err);

#endif
