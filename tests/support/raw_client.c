/*
 * A tiny blocking Kafka client for tests (see raw_client.h).
 *
 * Owner: the test thread using the kc_rc_t.
 */
#include "raw_client.h"
#include "kc_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int kc_rc_connect(const char *bootstrap, int ms)
{
    char host[256];
    int port;
    const char *comma = strchr(bootstrap, ',');
    char first[300];
    snprintf(first, sizeof first, "%.*s", comma ? (int)(comma - bootstrap) : (int)strlen(bootstrap),
             bootstrap);
    char *colon = strrchr(first, ':');
    assert_non_null(colon);
    snprintf(host, sizeof host, "%.*s", (int)(colon - first), first);
    port = atoi(colon + 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    assert_int_equal(
        inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, &sa.sin_addr), 1);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

void kc_rc_send(kc_rc_t *c, int16_t key, int16_t v, const void *body)
{
    kc_wbuf_t w = {0};
    kc_error_t err;
    assert_int_equal(
        kc_proto_write_request(&w, key, v, ++c->corr, kc_str("kc-fp-test"), body, &err), KC_OK);
    assert_int_equal(write(c->fd, w.data, w.len), (ssize_t)w.len);
    kc_wbuf_free(&w);
}

static int read_n(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0)
            return -1;
        p += r, n -= (size_t)r;
    }
    return 0;
}

/* Reads one response frame; -1 on EOF, timeout or short frame (the frame is kept in c). */
static int recv_frame(kc_rc_t *c, uint32_t *len)
{
    uint8_t sz[4];
    if (read_n(c->fd, sz, 4) != 0)
        return -1;
    *len = (uint32_t)sz[0] << 24 | (uint32_t)sz[1] << 16 | (uint32_t)sz[2] << 8 | sz[3];
    if (*len > (64u << 20))
        return -1;
    free(c->frame);
    c->frame = malloc(*len + 1);
    return read_n(c->fd, c->frame, *len);
}

/* Reads and decodes the response to the last request: KC_OK or the decoder's error. */
kc_err_t kc_rc_recv(kc_rc_t *c, int16_t key, int16_t v, void *body)
{
    uint32_t len;
    if (recv_frame(c, &len) != 0)
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
