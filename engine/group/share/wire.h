/*
 * Share groups (KIP-932) over the KIP-848 member's wire (group/848/wire.h): ShareGroupHeartbeat
 * v1 in and out of the member's ConsumerGroupHeartbeat structs.
 *
 * Request: group id, member id, epoch, rack and subscribed topic names are the member's (null /
 * -1 "unchanged" rules included); instance id, rebalance timeout, assignor, regex and owned
 * partitions have no place in ShareGroupHeartbeat and are dropped: a share member owns nothing
 * the coordinator must wait for (records, not partitions, are held, under acquisition locks),
 * and the member's acknowledging heartbeat simply carries no partitions. A request that names a
 * regex is refused (KC_ERR_INVALID_ARG), as the protocol's subscribe does first.
 * Response: the same fields, the same layout; the assignment's arrays are copied into `a`.
 *
 * Owner: immutable; the functions are pure (the caller's thread).
 */
#ifndef KC_ENGINE_GROUP_SHARE_WIRE_H
#define KC_ENGINE_GROUP_SHARE_WIRE_H

#include "group/848/wire.h"
#include "proto/share_group_heartbeat.gen.h"

extern const kc_g848_wire_t kc_gshare_wire;

/* The translations behind kc_gshare_wire, for tests. */
kc_err_t kc_gshare_request_from(const kc_consumer_group_heartbeat_request_t *in,
                                kc_share_group_heartbeat_request_t *out, kc_error_t *err);
kc_err_t kc_gshare_response_to(const kc_share_group_heartbeat_response_t *in,
                               kc_consumer_group_heartbeat_response_t *out, kc_arena_t *a,
                               kc_error_t *err);

#endif
