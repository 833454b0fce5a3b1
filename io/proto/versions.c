/* Header-version rules and ApiVersions negotiation over the generated API table.
 * Pure functions; the kc_proto_versions_t written belongs to the caller (network thread). */
#include "proto/proto.h"

int16_t kc_proto_request_header_version(int16_t api_key, int16_t version)
{
    const kc_proto_api_t *api = kc_proto_api_find(api_key);
    if (!api)
        return -1;
    return version >= api->flex_version ? 2 : 1;
}

int16_t kc_proto_response_header_version(int16_t api_key, int16_t version)
{
    const kc_proto_api_t *api = kc_proto_api_find(api_key);
    if (!api)
        return -1;
    /* KIP-511: the broker must be able to answer ApiVersions from a client newer than itself,
     * so its response header never carries tagged fields. */
    if (api_key == KC_API_VERSIONS_REQUEST_API_KEY)
        return 0;
    return version >= api->flex_version ? 1 : 0;
}

kc_err_t kc_proto_negotiate(const kc_api_versions_response_t *resp, kc_proto_versions_t *out,
                            kc_error_t *err)
{
    for (int k = 0; k <= KC_PROTO_MAX_API_KEY; k++)
        out->version[k] = -1;
    if (resp->error_code != 0)
        return kc_fail_kafka(err, resp->error_code, "ApiVersions");
    for (int32_t i = 0; i < resp->api_keys.count; i++) {
        const kc_api_versions_response_api_version_t *b = &resp->api_keys.items[i];
        const kc_proto_api_t *api = kc_proto_api_find(b->api_key);
        if (!api)
            continue;
        int16_t lo = api->min_version > b->min_version ? api->min_version : b->min_version;
        int16_t hi = api->max_stable < b->max_version ? api->max_stable : b->max_version;
        if (lo <= hi && b->api_key >= 0 && b->api_key <= KC_PROTO_MAX_API_KEY)
            out->version[b->api_key] = hi;
    }
    return KC_OK;
}
