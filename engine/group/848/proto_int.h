/*
 * The KIP-848 member behind kc_group_proto_t (848/proto.c), for the protocols that run the same
 * member over another heartbeat API (group/share/proto.c): they make it with their wire
 * (848/wire.h) and take these functions into their own kc_group_proto_t. Not part of any other
 * interface. Owner: network thread.
 */
#ifndef KC_ENGINE_GROUP_848_PROTO_INT_H
#define KC_ENGINE_GROUP_848_PROTO_INT_H

#include "group/848/wire.h"
#include "group/group.h"

/* The member of group `grp` over `wire`; commit_on_revoke: the reconciliation commits the
 * revoked partitions' offsets (false: the protocol has no offsets to commit). */
kc_err_t kc_g848_proto_create(void **out, kc_group_t *grp, const kc_g848_wire_t *wire,
                              bool commit_on_revoke, kc_error_t *err);
void kc_g848_p_destroy(void *m);
/* Refuses a regex the wire cannot carry. */
kc_err_t kc_g848_p_subscribe(void *m, const char *const *topics, size_t n, const char *regex,
                             kc_error_t *err);
void kc_g848_p_step(void *m, int64_t now);
bool kc_g848_p_next_action(void *m, int64_t now, kc_group_action_t *out);
void kc_g848_p_action_done(void *m, uint64_t seq, int64_t now);
void kc_g848_p_commit_result(void *m, uint64_t seq, int16_t code, int64_t now);
void kc_g848_p_finish(void *m, int64_t now);
int64_t kc_g848_p_next_wakeup(void *m, int64_t now);
void kc_g848_p_poll_expired(void *m, bool expired, int64_t now);
void kc_g848_p_close(void *m, int64_t now);
void kc_g848_p_unsubscribe(void *m, int64_t now);
bool kc_g848_p_closed(const void *m);
kc_err_t kc_g848_p_identity(void *m, kc_commit_identity_t *who, kc_error_t *err);
bool kc_g848_p_stable(const void *m);
int64_t kc_g848_p_session_ms(const void *m);
/* 0 (no self-fence) for a wire without a session config. */
double kc_g848_p_fence_ratio(const void *m);
bool kc_g848_p_fence_applies(const void *m);
int32_t kc_g848_p_epoch(const void *m);
const char *kc_g848_p_member_id(const void *m);
int32_t kc_g848_p_coordinator(const void *m);
void kc_g848_p_stats_head(const void *m, kc_json_t *w);
void kc_g848_p_stats_extra(const void *m, kc_json_t *w);

#endif
