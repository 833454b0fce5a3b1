/*
 * The public consumer's group (consumer_group.c): glue between the dispatcher and the group
 * module group.protocol names, engine/group848 (consumer) or engine/classic_drive (classic); both
 * take the same kc_g848_hooks_t. Every function runs on the network thread (consumer.c calls them
 * from its commands and from its completion drain).
 */
#ifndef KC_RUNTIME_CONSUMER_GROUP_H
#define KC_RUNTIME_CONSUMER_GROUP_H

#include <stdbool.h>

#include "coordinator.h"
#include "dispatch.h"
#include "engine.h"

typedef struct kc_cgroup kc_cgroup_t;

kc_err_t kc_cg_new(kc_cgroup_t **out, kc_engine_t *e, kc_rt_t *rt, const kc_conf_t *conf,
                   kc_error_t *err);
/* Topic names, or exactly one entry starting with '^': a broker-evaluated regex. */
kc_err_t kc_cg_subscribe(kc_cgroup_t *cg, const char *const *topics, size_t n, kc_error_t *err);
/* A REVOKE_DONE completion: true when the partition is the group's (then the group frees it). */
bool kc_cg_on_revoke_done(kc_cgroup_t *cg, kc_rt_part_t *p);
void kc_cg_close(kc_cgroup_t *cg);
bool kc_cg_closed(const kc_cgroup_t *cg);
/* After the engine was closed (its coordinator work finished), before it is freed. */
void kc_cg_free(kc_cgroup_t *cg);
size_t kc_cg_stats_json(const kc_cgroup_t *cg, char *buf, size_t cap);
/* The group's i-th owned partition (not being revoked), for the stats JSON's "partitions" and
 * kc_position: false past the end. Network thread. */
bool kc_cg_part_at(const kc_cgroup_t *cg, size_t i, const char **topic, int32_t *partition,
                   kc_rt_part_t **rtp);
/* The owned (not revoking) partition's runtime state, or NULL. Network thread. */
kc_rt_part_t *kc_cg_find(const kc_cgroup_t *cg, const char *topic, int32_t partition);

/* kc_store_offset for a group partition: KC_ERR_NOT_FOUND when the member does not hold it,
 * KC_ERR_STATE once its revocation passed on_revoke (the revocation commits what was stored
 * before). Network thread. */
kc_err_t kc_cg_store(kc_cgroup_t *cg, const char *topic, int32_t partition, int64_t offset,
                     kc_error_t *err);

/* The application's kc_commit / kc_commit_async / kc_committed under a group: every request
 * carries the member's identity as it is when the request is built (KIP-848: member id + the
 * current member epoch, STALE_MEMBER_EPOCH asked again with the fresh one; classic: member id +
 * generation + group.instance.id), never the anonymous form a group with members refuses.
 * kc_cg_commit: offs NULL = every held (not revoking) partition's committable offset; *none is
 * set when nothing was processed yet (nothing sent, cb not called). kc_cg_committed: KIP-848
 * names the member on OffsetFetch (v9+); classic sends the anonymous form, which the broker
 * accepts from anyone. Network thread. */
kc_err_t kc_cg_commit(kc_cgroup_t *cg, const kc_engine_offset_t *offs, size_t n, int timeout_ms,
                      kc_engine_offsets_cb cb, void *opaque, bool *none, kc_error_t *err);
kc_err_t kc_cg_committed(kc_cgroup_t *cg, const kc_engine_offset_t *offs, size_t n, int timeout_ms,
                         kc_engine_offsets_cb cb, void *opaque, kc_error_t *err);
/* An application commit's answer, before it reaches the caller (network thread): says what a
 * membership refusal means in `err` (rc != KC_OK), and lets a classic member whose generation is
 * gone rejoin, as its own auto-commit does. */
void kc_cg_commit_result(kc_cgroup_t *cg, kc_err_t rc, kc_error_t *err,
                         const kc_engine_offset_t *res, size_t n);

/* group.protocol=classic (consumer_group_classic.c): engine/classic_drive from the config. */
struct kc_gcl;
struct kc_g848_hooks;
kc_err_t kc_cg_new_classic(struct kc_gcl **out, kc_engine_t *e, const kc_conf_t *conf,
                           const struct kc_g848_hooks *hooks, kc_error_t *err);
/* The translation alone (tests): kc_gcl_conf_t from classic_drive.h. Any thread; pure. */
struct kc_gcl_conf;
void kc_cg_classic_conf(const kc_conf_t *conf, struct kc_gcl_conf *out);

/* consumer.c's hooks. kc_cg_call runs KC_COP_SUBSCRIBE / KC_COP_GROUP_CLOSE on the network
 * thread (`drain` is consumer.c's completion handler). kc_cg_close_wait (app thread, from
 * kc_close) revokes, commits and leaves, waiting up to timeout_ms; KC_OK without a group. */
struct kc_ccall;
void kc_cg_call(kc_consumer_t *c, struct kc_ccall *k,
                void (*drain)(void *ctx, const kc_rt_cmpl_t *m));
kc_err_t kc_cg_close_wait(kc_consumer_t *c, int timeout_ms, kc_error_t *err);

#endif
