/* libFuzzer: kc-fault-proxy's response path on hostile broker bytes — response header + body
 * decode, address rewriting, error injection, in-place batch corruption and re-encoding
 * (fp_transform), ApiVersions answers with APIs hidden or capped (hide-api, cap-api), plus the
 * request-header peek the proxy does on client bytes.
 * Input: [api key][version][body...][flags]; the same [key][version][body] layout as
 * fuzz_proto_response, so its corpus seeds this one (the trailing flags byte is ignored by the
 * decoders, which do not require the frame to be consumed). Single-threaded. */
#include <stdlib.h>
#include <string.h>

/* The proxy's transform code is built into the testkit binary, not the library: compile it in. */
#include "../testkit/fp_rules.c"
#include "../testkit/kt_frame.c"

static fp_t g_fp = {.n = 1,
                    .listen_port = {40000},
                    .up_host = {"127.0.0.1"},
                    .up_port = {9092},
                    .lock = PTHREAD_MUTEX_INITIALIZER};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len < 3)
        return 0;
    const kc_proto_api_t *api = kc_proto_api_find(data[0]);
    if (!api)
        return 0;
    int16_t v = (int16_t)(api->min_version + data[1] % (api->max_version - api->min_version + 1));
    uint8_t flags = data[len - 1];
    /* The frame as the proxy reads it: correlation id, header tag buffer when flexible, body. */
    int16_t hv = kc_proto_response_header_version(api->key, v);
    size_t body = len - 2, hdr = hv >= 1 ? 5 : 4;
    kt_frame_t f = {.buf = malloc(hdr + body), .cap = hdr + body, .len = (uint32_t)(hdr + body)};
    memset(f.buf, 0, hdr);
    f.buf[3] = 7;
    memcpy(f.buf + hdr, data + 2, body);
    fp_plan_t plan = {.close_after = -1};
    plan.inject = flags & 1;
    plan.corrupt = flags & 2;
    if (api->key == KC_API_VERSIONS_REQUEST_API_KEY) {
        /* hide-api and cap-api on a hostile ApiVersions answer: every third key hidden or
         * capped, the cap anywhere from below the floor to above the newest. */
        for (int k = 0; k <= KC_PROTO_MAX_API_KEY; k++) {
            plan.hidden[k] = (flags & 4) && k % 3 == 0;
            plan.capped[k] = (flags & 8) && k % 3 == 1;
            plan.cap[k] = (int16_t)(flags >> 4);
        }
        plan.hide_apis = flags & 4;
        plan.cap_apis = flags & 8;
    }
    plan.inject_rule = (fp_rule_t){.kind = FP_INJECT,
                                   .api = api->key,
                                   .count = 1,
                                   .error = (int16_t)(flags >> 3),
                                   .partition_scope = flags & 4,
                                   .partition = (flags & 0x80) ? -1 : 0};
    kc_wbuf_t out = {0};
    kc_arena_t a = {0};
    fp_transform(&g_fp, api->key, v, &f, &plan, &out, &a);
    /* Whatever it sends is one well-formed frame: the size prefix matches. */
    if (out.len < 4 || ((uint32_t)out.data[0] << 24 | (uint32_t)out.data[1] << 16 |
                        (uint32_t)out.data[2] << 8 | out.data[3]) != out.len - 4)
        abort();
    g_fp.n_rules = 0;
    /* The client side: the same bytes as a request frame. */
    kc_rbuf_t r;
    kc_request_header_t h;
    kc_error_t err;
    kc_arena_reset(&a);
    kt_frame_t q = {.buf = (uint8_t *)data, .len = (uint32_t)len};
    int16_t key, ver;
    if (kt_peek_api(&q, &key, &ver))
        (void)kt_read_request_header(&q, &r, &h, &a, &err);
    kc_wbuf_free(&out);
    kc_arena_free(&a);
    free(f.buf);
    return 0;
}
