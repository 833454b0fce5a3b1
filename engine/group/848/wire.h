/*
 * How a protocol built on the KIP-848 member (group/848/member.h) goes over the wire. The member
 * speaks ConsumerGroupHeartbeat's request and response structs; a protocol whose heartbeat is a
 * subset of them (share groups, KIP-932: ShareGroupHeartbeat has no instance id, assignor,
 * rebalance timeout, regex or owned partitions, and its answer has ConsumerGroupHeartbeat's
 * layout) translates at encode and decode time, so that the member's rules (join with epoch 0,
 * client-generated member id, send only what changed, leave with -1, fenced → lose and rejoin,
 * coordinator retries) are written once.
 *
 * Owner: immutable tables; the functions are pure (the caller's thread).
 */
#ifndef KC_ENGINE_GROUP_848_WIRE_H
#define KC_ENGINE_GROUP_848_WIRE_H

#include "proto/consumer_group_heartbeat.gen.h"

typedef struct kc_g848_wire {
    const char *api; /* the heartbeat API's name, for messages */
    int16_t api_key, min_version, max_version;
    /* The group config holding the session the self-fence is measured against (read with
     * DescribeConfigs); NULL: the protocol has no self-fence. */
    const char *session_config;
    /* false: the member may not subscribe by regex. */
    bool regex;
    /* Writes the member's request at `version`. */
    kc_err_t (*encode)(const kc_consumer_group_heartbeat_request_t *req, int16_t version,
                       kc_wbuf_t *w, kc_error_t *err);
    /* Reads the answer at `version` into the member's response struct (arrays in `a`). */
    kc_err_t (*decode)(kc_consumer_group_heartbeat_response_t *resp, int16_t version, kc_rbuf_t *r,
                       kc_arena_t *a, kc_error_t *err);
} kc_g848_wire_t;

/* ConsumerGroupHeartbeat itself (v0-1). */
extern const kc_g848_wire_t kc_g848_wire;

#endif
