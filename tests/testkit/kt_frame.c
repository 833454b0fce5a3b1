/*
 * Socket and frame helpers shared by the testkit servers. See kt_frame.h.
 *
 * Owner: the calling thread; nothing here keeps state between calls.
 */
#include "kt_frame.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int kt_listen(int port, int *bound)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        close(fd);
        return -1;
    }
    if (bound)
        *bound = ntohs(sa.sin_port);
    return fd;
}

int kt_connect(const char *host, int port)
{
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, ports, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

bool kt_split_hostport(const char *s, char *host, size_t hostcap, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= hostcap)
        return false;
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p < 0 || p > 65535)
        return false;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    *port = (int)p;
    return true;
}

int kt_read_full(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

int kt_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

int kt_read_frame(int fd, kt_frame_t *f, uint32_t max)
{
    uint8_t sz[4];
    if (kt_read_full(fd, sz, 4) != 0)
        return -1;
    uint32_t len = (uint32_t)sz[0] << 24 | (uint32_t)sz[1] << 16 | (uint32_t)sz[2] << 8 | sz[3];
    if (len > max)
        return -1;
    if (len > f->cap) {
        uint8_t *nb = realloc(f->buf, len);
        if (!nb)
            return -1;
        f->buf = nb;
        f->cap = len;
    }
    f->len = len;
    return len ? kt_read_full(fd, f->buf, len) : 0;
}

void kt_frame_free(kt_frame_t *f)
{
    free(f->buf);
    *f = (kt_frame_t){0};
}

bool kt_peek_api(const kt_frame_t *f, int16_t *key, int16_t *version)
{
    if (f->len < 4)
        return false;
    *key = (int16_t)(f->buf[0] << 8 | f->buf[1]);
    *version = (int16_t)(f->buf[2] << 8 | f->buf[3]);
    return true;
}

kc_err_t kt_read_request_header(const kt_frame_t *f, kc_rbuf_t *r, kc_request_header_t *h,
                                kc_arena_t *a, kc_error_t *err)
{
    int16_t key, v;
    if (!kt_peek_api(f, &key, &v))
        return kc_fail(err, KC_ERR_MALFORMED, "request frame of %u bytes", f->len);
    int16_t hv = kc_proto_request_header_version(key, v);
    /* An ApiVersions request newer than ours still has to be answered (with
     * UNSUPPORTED_VERSION): newer ApiVersions are flexible, so header v2. */
    if (hv < 0 && key == KC_API_VERSIONS_REQUEST_API_KEY)
        hv = 2;
    if (hv < 0)
        return kc_fail(err, KC_ERR_UNSUPPORTED, "api key %d v%d", key, v);
    *r = kc_rbuf(f->buf, f->len);
    return kc_request_header_decode(h, hv, r, a, err);
}

kc_err_t kt_response_begin(kc_wbuf_t *w, int16_t key, int16_t version, int32_t correlation_id,
                           kc_error_t *err)
{
    kc_err_t rc = kc_wbuf_reserve(w, 4);
    if (rc != KC_OK)
        return kc_fail(err, rc, "response buffer");
    memset(w->data + w->len, 0, 4);
    w->len += 4;
    int16_t hv = kc_proto_response_header_version(key, version);
    kc_response_header_t h;
    kc_response_header_init(&h);
    h.correlation_id = correlation_id;
    return kc_response_header_encode(&h, hv < 0 ? 0 : hv, w, err);
}

void kt_response_end(kc_wbuf_t *w, size_t start)
{
    uint32_t n = (uint32_t)(w->len - start - 4);
    uint8_t *p = w->data + start;
    p[0] = (uint8_t)(n >> 24), p[1] = (uint8_t)(n >> 16), p[2] = (uint8_t)(n >> 8),
    p[3] = (uint8_t)n;
}

int64_t kt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
