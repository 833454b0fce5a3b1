/* Shared body of the message fuzzers: decode hostile bytes; when they decode, the message must
 * re-encode, and encode(decode(encode(m))) must equal encode(m). Single-threaded (libFuzzer). */
#ifndef KC_FUZZ_PROTO_COMMON_H
#define KC_FUZZ_PROTO_COMMON_H

#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

typedef kc_err_t (*fz_dec_fn)(void *m, int16_t v, kc_rbuf_t *r, kc_arena_t *a, kc_error_t *err);
typedef kc_err_t (*fz_enc_fn)(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *err);

__attribute__((unused)) static void fz_check(fz_dec_fn dec, fz_enc_fn enc, size_t size, int16_t v,
                                             const uint8_t *data, size_t len)
{
    /* An exact-size heap copy: ASan flags any read past the frame. */
    uint8_t *frame = malloc(len ? len : 1);
    if (len)
        memcpy(frame, data, len);
    void *m1 = calloc(1, size), *m2 = calloc(1, size);
    kc_arena_t a1 = {0}, a2 = {0};
    kc_wbuf_t w1 = {0}, w2 = {0};
    kc_error_t err;
    kc_rbuf_t r = kc_rbuf(frame, len);
    if (dec(m1, v, &r, &a1, &err) == KC_OK) {
        /* The arena never holds more than a bounded multiple of the frame. */
        if (a1.total > 64 * len + 4096)
            abort();
        if (enc(m1, v, &w1, &err) != KC_OK)
            abort();
        kc_rbuf_t r2 = kc_rbuf(w1.data, w1.len);
        if (dec(m2, v, &r2, &a2, &err) != KC_OK || kc_rbuf_remaining(&r2) != 0)
            abort();
        if (enc(m2, v, &w2, &err) != KC_OK || w1.len != w2.len ||
            (w1.len && memcmp(w1.data, w2.data, w1.len) != 0))
            abort();
    } else if (err.msg[0] == 0) {
        abort(); /* every failure explains itself */
    }
    kc_wbuf_free(&w1);
    kc_wbuf_free(&w2);
    kc_arena_free(&a1);
    kc_arena_free(&a2);
    free(m1);
    free(m2);
    free(frame);
}

/* Input: [api key][version][message bytes] (no header). */
__attribute__((unused)) static int fz_api(const uint8_t *data, size_t len, int request)
{
    if (len < 2)
        return 0;
    const kc_proto_api_t *api = kc_proto_api_find(data[0]);
    if (!api)
        return 0;
    /* The byte is the version itself when valid (so seeds say what they are), else folded into
     * the range so that every input exercises some decoder. */
    int16_t v =
        data[1] >= api->min_version && data[1] <= api->max_version
            ? (int16_t)data[1]
            : (int16_t)(api->min_version + data[1] % (api->max_version - api->min_version + 1));
    if (request)
        fz_check(api->decode_request, api->encode_request, api->request_size, v, data + 2, len - 2);
    else
        fz_check(api->decode_response, api->encode_response, api->response_size, v, data + 2,
                 len - 2);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

#endif
