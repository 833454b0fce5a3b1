/* ShareGroupHeartbeat through the KIP-848 member's structs (wire.h has the rules). Pure. */
#include "group/share/wire.h"

#include <string.h>

kc_err_t kc_gshare_request_from(const kc_consumer_group_heartbeat_request_t *in,
                                kc_share_group_heartbeat_request_t *out, kc_error_t *err)
{
    if (in->subscribed_topic_regex.len >= 0)
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "ShareGroupHeartbeat: share groups subscribe by topic names only");
    kc_share_group_heartbeat_request_init(out);
    out->group_id = in->group_id;
    out->member_id = in->member_id;
    out->member_epoch = in->member_epoch;
    out->rack_id = in->rack_id;
    out->subscribed_topic_names.count = in->subscribed_topic_names.count;
    out->subscribed_topic_names.items = in->subscribed_topic_names.items;
    return KC_OK;
}

kc_err_t kc_gshare_response_to(const kc_share_group_heartbeat_response_t *in,
                               kc_consumer_group_heartbeat_response_t *out, kc_arena_t *a,
                               kc_error_t *err)
{
    kc_consumer_group_heartbeat_response_init(out);
    out->throttle_time_ms = in->throttle_time_ms;
    out->error_code = in->error_code;
    out->error_message = in->error_message;
    out->member_id = in->member_id;
    out->member_epoch = in->member_epoch;
    out->heartbeat_interval_ms = in->heartbeat_interval_ms;
    out->has_assignment = in->has_assignment;
    if (!in->has_assignment)
        return KC_OK;
    int32_t n = in->assignment.topic_partitions.count;
    out->assignment.topic_partitions.count = n;
    out->assignment.topic_partitions.items = NULL;
    if (n <= 0)
        return KC_OK;
    kc_consumer_group_heartbeat_response_topic_partitions_t *tp =
        kc_arena_calloc(a, (size_t)n, sizeof *tp);
    if (!tp)
        return kc_fail(err, KC_ERR_NOMEM, "ShareGroupHeartbeat: out of memory");
    for (int32_t i = 0; i < n; i++) {
        const kc_share_group_heartbeat_response_topic_partitions_t *s =
            &in->assignment.topic_partitions.items[i];
        memcpy(&tp[i].topic_id, &s->topic_id, sizeof tp[i].topic_id);
        /* int32 arrays of the same shape: the decoded items are the answer's, in `a` too */
        tp[i].partitions.count = s->partitions.count;
        tp[i].partitions.items = s->partitions.items;
    }
    out->assignment.topic_partitions.items = tp;
    return KC_OK;
}

static kc_err_t sgh_encode(const kc_consumer_group_heartbeat_request_t *req, int16_t version,
                           kc_wbuf_t *w, kc_error_t *err)
{
    kc_share_group_heartbeat_request_t q;
    kc_err_t rc = kc_gshare_request_from(req, &q, err);
    return rc != KC_OK ? rc : kc_share_group_heartbeat_request_encode(&q, version, w, err);
}

static kc_err_t sgh_decode(kc_consumer_group_heartbeat_response_t *resp, int16_t version,
                           kc_rbuf_t *r, kc_arena_t *a, kc_error_t *err)
{
    kc_share_group_heartbeat_response_t m;
    kc_err_t rc = kc_share_group_heartbeat_response_decode(&m, version, r, a, err);
    return rc != KC_OK ? rc : kc_gshare_response_to(&m, resp, a, err);
}

const kc_g848_wire_t kc_gshare_wire = {
    .api = "ShareGroupHeartbeat",
    .api_key = KC_SHARE_GROUP_HEARTBEAT_REQUEST_API_KEY,
    .min_version = KC_SHARE_GROUP_HEARTBEAT_REQUEST_MIN_VERSION,
    .max_version = KC_SHARE_GROUP_HEARTBEAT_REQUEST_MAX_VERSION,
    .session_config = NULL,
    .regex = false,
    .encode = sgh_encode,
    .decode = sgh_decode,
};
