/* INTERIM hand-written header + ApiVersions coding; see conn_wire.h. Pure; any thread. */
#include "conn_wire.h"

#include <string.h>

/* First flexible version per API (from Kafka's message JSON "flexibleVersions"); -1 = never. */
static int first_flexible(int16_t k)
{
    switch (k) {
    case 0: return 9;   /* Produce */
    case 1: return 12;  /* Fetch */
    case 2: return 6;   /* ListOffsets */
    case 3: return 9;   /* Metadata */
    case 8: return 8;   /* OffsetCommit */
    case 9: return 6;   /* OffsetFetch */
    case 10: return 3;  /* FindCoordinator */
    case 11: return 6;  /* JoinGroup */
    case 12: return 4;  /* Heartbeat */
    case 13: return 4;  /* LeaveGroup */
    case 14: return 4;  /* SyncGroup */
    case 15: return 5;  /* DescribeGroups */
    case 16: return 3;  /* ListGroups */
    case 17: return -1; /* SaslHandshake */
    case 18: return 3;  /* ApiVersions */
    case 19: return 5;  /* CreateTopics */
    case 20: return 4;  /* DeleteTopics */
    case 23: return 4;  /* OffsetForLeaderEpoch */
    case 32: return 4;  /* DescribeConfigs */
    case 36: return 2;  /* SaslAuthenticate */
    case 60: return 0;  /* DescribeCluster */
    case 68: return 0;  /* ConsumerGroupHeartbeat */
    case 69: return 0;  /* ConsumerGroupDescribe */
    default: return -2;
    }
}

kc_err_t kc_wire_header_versions(int16_t api_key, int16_t version, int *req_hdr, int *resp_hdr)
{
    int f = first_flexible(api_key);
    if (f == -2)
        return KC_ERR_UNSUPPORTED;
    int flex = f >= 0 && version >= f;
    *req_hdr = flex ? 2 : 1;
    /* ApiVersions responses always use header v0: a client must be able to read the answer
     * before it knows which versions the broker speaks (KIP-511). */
    *resp_hdr = (flex && api_key != KC_API_VERSIONS) ? 1 : 0;
    return KC_OK;
}

void kc_wire_request_header(kc_wbuf_t *w, int16_t api_key, int16_t version, int32_t corr,
                            const char *client_id, int req_hdr)
{
    kc_wbuf_be16(w, (uint16_t)api_key);
    kc_wbuf_be16(w, (uint16_t)version);
    kc_wbuf_be32(w, (uint32_t)corr);
    /* client_id stays a non-compact nullable string even in header v2. */
    if (!client_id) {
        kc_wbuf_be16(w, 0xffff);
    } else {
        size_t n = strlen(client_id);
        if (n > 0x7fff)
            n = 0x7fff;
        kc_wbuf_be16(w, (uint16_t)n);
        kc_wbuf_put(w, client_id, n);
    }
    if (req_hdr >= 2)
        kc_wbuf_uvarint(w, 0); /* no tagged fields */
}

static int get_uvarint(const uint8_t *p, size_t len, size_t *off, uint32_t *v)
{
    uint32_t r = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (*off >= len)
            return 0;
        uint8_t b = p[(*off)++];
        r |= (uint32_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 1;
        }
    }
    return 0;
}

static int skip_tags(const uint8_t *p, size_t len, size_t *off)
{
    uint32_t n, tag, sz;
    if (!get_uvarint(p, len, off, &n))
        return 0;
    while (n--) {
        if (!get_uvarint(p, len, off, &tag) || !get_uvarint(p, len, off, &sz) || sz > len - *off)
            return 0;
        *off += sz;
    }
    return 1;
}

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

kc_err_t kc_wire_response_header(const uint8_t *p, size_t len, int resp_hdr, int32_t *corr,
                                 size_t *body_off, kc_error_t *err)
{
    if (len < 4)
        return kc_fail(err, KC_ERR_MALFORMED, "response frame of %zu bytes has no header", len);
    *corr = (int32_t)be32(p);
    size_t off = 4;
    if (resp_hdr >= 1 && !skip_tags(p, len, &off))
        return kc_fail(err, KC_ERR_MALFORMED, "response header tagged fields run past the frame");
    *body_off = off;
    return KC_OK;
}

void kc_wire_apiversions_request(kc_wbuf_t *w, int16_t version)
{
    if (version >= 3) {
        static const char name[] = "kconsume";
        static const char ver[] = "0.1.0";
        kc_wbuf_uvarint(w, sizeof name); /* compact string: length + 1 */
        kc_wbuf_put(w, name, sizeof name - 1);
        kc_wbuf_uvarint(w, sizeof ver);
        kc_wbuf_put(w, ver, sizeof ver - 1);
        kc_wbuf_uvarint(w, 0);
    }
}

kc_err_t kc_wire_apiversions_response(const uint8_t *p, size_t len, int16_t version,
                                      kc_api_ranges_t *out, kc_error_t *err)
{
    for (int i = 0; i < KC_API_KEY_MAX; i++)
        out->min[i] = out->max[i] = -1;
    if (len < 2)
        return kc_fail(err, KC_ERR_MALFORMED, "ApiVersions v%d: no error code", version);
    int16_t ec = (int16_t)be16(p);
    size_t off = 2;
    /* UNSUPPORTED_VERSION comes back in the v0 layout whatever we asked for. */
    int compact = version >= 3 && ec != 35;
    uint32_t n;
    if (compact) {
        if (!get_uvarint(p, len, &off, &n) || n == 0)
            return kc_fail(err, KC_ERR_MALFORMED, "ApiVersions v%d: bad api_keys length", version);
        n -= 1;
    } else {
        if (len - off < 4)
            return kc_fail(err, KC_ERR_MALFORMED, "ApiVersions v%d: no api_keys", version);
        n = be32(p + off);
        off += 4;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (len - off < 6)
            return kc_fail(err, KC_ERR_MALFORMED, "ApiVersions v%d: api_keys[%u] truncated",
                           version, i);
        int16_t k = (int16_t)be16(p + off), mn = (int16_t)be16(p + off + 2),
                mx = (int16_t)be16(p + off + 4);
        off += 6;
        if (compact && !skip_tags(p, len, &off))
            return kc_fail(err, KC_ERR_MALFORMED, "ApiVersions v%d: api_keys[%u] tags", version, i);
        if (k >= 0 && k < KC_API_KEY_MAX && mn <= mx) {
            out->min[k] = mn;
            out->max[k] = mx;
        }
    }
    if (ec != 0)
        return kc_fail_kafka(err, ec, "ApiVersions v%d", version);
    return KC_OK;
}
