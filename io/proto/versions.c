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

kc_err_t kc_proto_write_request(kc_wbuf_t *w, int16_t api_key, int16_t version,
                                int32_t correlation_id, kc_str_t client_id, const void *body,
                                kc_error_t *err)
{
    const kc_proto_api_t *api = kc_proto_api_find(api_key);
    if (!api)
        return kc_fail(err, KC_ERR_UNSUPPORTED, "API key %d: not in the codec", (int)api_key);
    size_t start = w->len;
    kc_enc_t e = {w, err, api->name, version, false};
    kc_request_header_t h = {api_key, version, correlation_id, client_id};
    /* The size is only known at the end: write a placeholder and patch it. */
    kc_err_t rc = kc_wire_put_i32(&e, 0);
    if (!rc)
        rc =
            kc_request_header_encode(&h, kc_proto_request_header_version(api_key, version), w, err);
    if (!rc)
        rc = api->encode_request(body, version, w, err);
    if (!rc && w->len - start - 4 > INT32_MAX)
        rc = kc_fail(err, KC_ERR_TOO_LARGE, "%s v%d: request larger than 2 GiB", api->name,
                     (int)version);
    if (rc) {
        w->len = start;
        return rc;
    }
    uint32_t size = (uint32_t)(w->len - start - 4);
    w->data[start] = (uint8_t)(size >> 24);
    w->data[start + 1] = (uint8_t)(size >> 16);
    w->data[start + 2] = (uint8_t)(size >> 8);
    w->data[start + 3] = (uint8_t)size;
    return KC_OK;
}

kc_err_t kc_proto_read_response_header(kc_rbuf_t *r, int16_t api_key, int16_t version,
                                       int32_t *correlation_id, kc_error_t *err)
{
    int16_t hv = kc_proto_response_header_version(api_key, version);
    if (hv < 0)
        return kc_fail(err, KC_ERR_UNSUPPORTED, "API key %d: not in the codec", (int)api_key);
    kc_response_header_t h;
    /* Header decoding allocates nothing (no arrays), so no arena is needed. */
    kc_err_t rc = kc_response_header_decode(&h, hv, r, NULL, err);
    if (!rc)
        *correlation_id = h.correlation_id;
    return rc;
}
