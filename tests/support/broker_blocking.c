/* Blocking request/response over a plain socket, for kafka tests that drive a pure engine state
 * machine without the network thread. Owner: the test's thread. */
#include "broker_blocking.h"

#include <stdlib.h>

#include "kc_test.h"
#include "proto/proto.h"
#include "raw_client.h"

int kc_tb_connect(const char *bootstrap)
{
    return kc_rc_connect(bootstrap, 15000);
}

/* Sends one request and returns the response body (after the header) in frame and r. */
void kc_tb_exchange(int fd, int16_t key, int16_t v, const void *msg, kc_tb_encode_fn enc,
                    uint8_t **frame, kc_rbuf_t *r)
{
    static int32_t corr = 1;
    kc_wbuf_t w = {0};
    kc_error_t e;
    assert_int_equal(kc_wbuf_reserve(&w, 4), KC_OK);
    w.len = 4;
    kc_request_header_t h;
    kc_request_header_init(&h);
    h.request_api_key = key;
    h.request_api_version = v;
    h.correlation_id = corr++;
    h.client_id = kc_str("kc-test");
    assert_int_equal(kc_request_header_encode(&h, kc_proto_request_header_version(key, v), &w, &e),
                     KC_OK);
    if (enc(msg, v, &w, &e) != KC_OK)
        fail_msg("encode: %s", e.msg);
    uint32_t n = (uint32_t)(w.len - 4);
    w.data[0] = (uint8_t)(n >> 24), w.data[1] = (uint8_t)(n >> 16);
    w.data[2] = (uint8_t)(n >> 8), w.data[3] = (uint8_t)n;
    assert_int_equal(kc_rc_write_all(fd, w.data, w.len), 0);
    kc_wbuf_free(&w);
    uint32_t len;
    *frame = kc_rc_read_frame(fd, &len);
    assert_non_null(*frame);
    *r = kc_rbuf(*frame, len);
    kc_response_header_t rh;
    kc_arena_t a = {0};
    assert_int_equal(
        kc_response_header_decode(&rh, kc_proto_response_header_version(key, v), r, &a, &e), KC_OK);
    assert_int_equal(rh.correlation_id, corr - 1);
    kc_arena_free(&a);
}
