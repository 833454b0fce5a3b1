/*
 * A tiny blocking Kafka client for tests (see raw_client.h).
 *
 * Owner: the test thread using the kc_rc_t.
 */
#include "raw_client.h"
#include "kc_test.h"

#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int kc_rc_connect(const char *bootstrap, int timeout_ms)
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
        struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
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

/* All n bytes through read(2) or write(2): 0, or -1 (error, EOF, timeout). */
static int io_all(int fd, uint8_t *p, size_t n, bool writing)
{
    while (n > 0) {
        ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);
        if (r <= 0)
            return -1;
        p += r, n -= (size_t)r;
    }
    return 0;
}

int kc_rc_write_all(int fd, const void *p, size_t n)
{
    return io_all(fd, (uint8_t *)(uintptr_t)p, n, true);
}

uint8_t *kc_rc_read_frame(int fd, uint32_t *len)
{
    uint8_t sz[4];
    if (io_all(fd, sz, 4, false) != 0)
        return NULL;
    *len = (uint32_t)sz[0] << 24 | (uint32_t)sz[1] << 16 | (uint32_t)sz[2] << 8 | sz[3];
    if (*len > (64u << 20))
        return NULL;
    uint8_t *f = malloc(*len + 1);
    if (f && io_all(fd, f, *len, false) != 0) {
        free(f);
        return NULL;
    }
    return f;
}

void kc_rc_send(kc_rc_t *c, int16_t key, int16_t v, const void *body)
{
    kc_wbuf_t w = {0};
    kc_error_t err;
    assert_int_equal(
        kc_proto_write_request(&w, key, v, ++c->corr, kc_str("kc-fp-test"), body, &err), KC_OK);
    assert_int_equal(kc_rc_write_all(c->fd, w.data, w.len), 0);
    kc_wbuf_free(&w);
}

/* Reads and decodes the response to the last request: KC_OK or the decoder's error. */
kc_err_t kc_rc_recv(kc_rc_t *c, int16_t key, int16_t v, void *body)
{
    uint32_t len;
    free(c->frame);
    if (!(c->frame = kc_rc_read_frame(c->fd, &len)))
        return KC_ERR_TRANSPORT;
    kc_rbuf_t r = kc_rbuf(c->frame, len);
    kc_error_t err;
    int32_t corr;
    kc_err_t rc = kc_proto_read_response_header(&r, key, v, &corr, &err);
    if (rc != KC_OK)
        return rc;
    if (corr != c->corr)
        return KC_ERR_MALFORMED;
    kc_arena_reset(&c->arena);
    return kc_proto_api_find(key)->decode_response(body, v, &r, &c->arena, &err);
}

void kc_rc_open(kc_rc_t *c, const char *bootstrap)
{
    *c = (kc_rc_t){.fd = kc_rc_connect(bootstrap, 5000)};
    assert_true(c->fd >= 0);
    kc_api_versions_request_t q = {kc_str("kc-test"), kc_str("0")};
    kc_rc_send(c, KC_API_VERSIONS_REQUEST_API_KEY, 3, &q);
    kc_api_versions_response_t r;
    assert_int_equal(kc_rc_recv(c, KC_API_VERSIONS_REQUEST_API_KEY, 3, &r), KC_OK);
    kc_error_t err;
    assert_int_equal(kc_proto_negotiate(&r, &c->v, &err), KC_OK);
}

void kc_rc_close(kc_rc_t *c)
{
    close(c->fd);
    free(c->frame);
    kc_arena_free(&c->arena);
}
