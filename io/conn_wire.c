/* Framing glue over the generated codec; see conn_wire.h. Pure; any thread. */
#include "conn_wire.h"

#include <stdio.h>
#include <string.h>

kc_err_t kc_wire_header_versions(int16_t api_key, int16_t version, int *req_hdr, int *resp_hdr)
{
    int16_t rq = kc_proto_request_header_version(api_key, version);
    int16_t rs = kc_proto_response_header_version(api_key, version);
    if (rq < 0 || rs < 0)
        return KC_ERR_UNSUPPORTED;
    *req_hdr = rq;
    *resp_hdr = rs;
    return KC_OK;
}

kc_err_t kc_wire_append(kc_wbuf_t *w, const void *p, size_t n)
{
    if (kc_wbuf_reserve(w, n) != KC_OK)
        return KC_ERR_NOMEM;
    memcpy(w->data + w->len, p, n);
    w->len += n;
    return KC_OK;
}

kc_err_t kc_wire_request_header(kc_wbuf_t *w, int16_t api_key, int16_t version, int32_t corr,
                                const char *client_id, int req_hdr, kc_error_t *err)
{
    kc_request_header_t h;
    kc_request_header_init(&h);
    h.request_api_key = api_key;
    h.request_api_version = version;
    h.correlation_id = corr;
    h.client_id = kc_str(client_id);
    return kc_request_header_encode(&h, (int16_t)req_hdr, w, err);
}

kc_err_t kc_wire_response_header(const uint8_t *p, size_t len, int resp_hdr, int32_t *corr,
                                 size_t *body_off, kc_error_t *err)
{
    kc_rbuf_t r = kc_rbuf(p, len);
    kc_arena_t a = {0};
    kc_response_header_t h;
    kc_err_t rc = kc_response_header_decode(&h, (int16_t)resp_hdr, &r, &a, err);
    kc_arena_free(&a);
    if (rc != KC_OK)
        return rc;
    *corr = h.correlation_id;
    *body_off = len - kc_rbuf_remaining(&r);
    return KC_OK;
}

kc_err_t kc_wire_apiversions_request(kc_wbuf_t *w, int16_t version, kc_error_t *err)
{
    kc_api_versions_request_t m;
    kc_api_versions_request_init(&m);
    m.client_software_name = kc_str("kconsume");
    m.client_software_version = kc_str("0.1.0");
    return kc_api_versions_request_encode(&m, version, w, err);
}

kc_err_t kc_wire_apiversions_response(const uint8_t *p, size_t len, int16_t version,
                                      kc_api_ranges_t *out, kc_error_t *err)
{
    for (int i = 0; i < KC_API_KEY_MAX; i++)
        out->min[i] = out->max[i] = -1;
    /* UNSUPPORTED_VERSION comes back in the v0 layout whatever we asked for (KIP-511). */
    if (len >= 2 && p[0] == 0 && p[1] == 35)
        version = 0;
    kc_rbuf_t r = kc_rbuf(p, len);
    kc_arena_t a = {0};
    kc_api_versions_response_t m;
    kc_err_t rc = kc_api_versions_response_decode(&m, version, &r, &a, err);
    if (rc == KC_OK) {
        for (int32_t i = 0; i < m.api_keys.count; i++) {
            const kc_api_versions_response_api_version_t *v = &m.api_keys.items[i];
            if (v->api_key >= 0 && v->api_key < KC_API_KEY_MAX &&
                v->min_version <= v->max_version) {
                out->min[v->api_key] = v->min_version;
                out->max[v->api_key] = v->max_version;
            }
        }
        if (m.error_code != 0)
            rc = kc_fail_kafka(err, m.error_code, "ApiVersions v%d", version);
    }
    kc_arena_free(&a);
    return rc;
}

static void api_name(char *name, size_t cap, int16_t api_key)
{
    const kc_proto_api_t *api = kc_proto_api_find(api_key);
    if (api)
        snprintf(name, cap, "%s", api->name);
    else
        snprintf(name, cap, "API %d", (int)api_key);
}

kc_err_t kc_wire_bad_answer(kc_error_t *err, const char *peer, int16_t api_key, int16_t version,
                            const char *why)
{
    char name[32];
    api_name(name, sizeof name, api_key);
    return kc_fail(err, KC_ERR_MALFORMED, "%s v%d answer from broker %s does not decode: %s", name,
                   (int)version, peer, why);
}

kc_err_t kc_wire_version_refusal(kc_error_t *err, const char *peer, const kc_api_ranges_t *r,
                                 int16_t api_key, int16_t min, int16_t max)
{
    char name[32];
    api_name(name, sizeof name, api_key);
    int known = api_key >= 0 && api_key < KC_API_KEY_MAX && r->min[api_key] >= 0;
    if (!known)
        return kc_fail(err, KC_ERR_UNSUPPORTED,
                       "%s: broker %s does not offer it, kconsume speaks v%d-v%d", name, peer,
                       (int)min, (int)max);
    return kc_fail(err, KC_ERR_UNSUPPORTED,
                   "%s: broker %s offers v%d-v%d, kconsume speaks v%d-v%d: no version in common",
                   name, peer, (int)r->min[api_key], (int)r->max[api_key], (int)min, (int)max);
}
