/* Blocking request/response over a plain socket, for kafka tests that drive a pure engine state
 * machine without the network thread. Owner: the test's thread. */
#include "broker_blocking.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "kc_test.h"
#include "proto/proto.h"

int kc_tb_connect(const char *bootstrap)
{
    char host[256], port[16];
    const char *comma = strchr(bootstrap, ',');
    size_t len = comma ? (size_t)(comma - bootstrap) : strlen(bootstrap);
    const char *colon = memrchr(bootstrap, ':', len);
    if (!colon || (size_t)(colon - bootstrap) >= sizeof host ||
        len - (size_t)(colon - bootstrap) - 1 >= sizeof port)
        return -1;
    memcpy(host, bootstrap, (size_t)(colon - bootstrap));
    host[colon - bootstrap] = '\0';
    memcpy(port, colon + 1, len - (size_t)(colon - bootstrap) - 1);
    port[len - (size_t)(colon - bootstrap) - 1] = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0)
            continue;
        struct timeval tv = {.tv_sec = 15};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static int io_full(int fd, uint8_t *p, size_t n, int writing)
{
    while (n > 0) {
        ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
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
    assert_int_equal(io_full(fd, w.data, w.len, 1), 0);
    kc_wbuf_free(&w);
    uint8_t sz[4];
    assert_int_equal(io_full(fd, sz, 4, 0), 0);
    uint32_t len = (uint32_t)sz[0] << 24 | (uint32_t)sz[1] << 16 | (uint32_t)sz[2] << 8 | sz[3];
    *frame = malloc(len);
    assert_non_null(*frame);
    assert_int_equal(io_full(fd, *frame, len, 0), 0);
    *r = kc_rbuf(*frame, len);
    kc_response_header_t rh;
    kc_arena_t a = {0};
    assert_int_equal(
        kc_response_header_decode(&rh, kc_proto_response_header_version(key, v), r, &a, &e), KC_OK);
    assert_int_equal(rh.correlation_id, corr - 1);
    kc_arena_free(&a);
}
