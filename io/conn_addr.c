/* See conn_addr.h. Any thread; no shared state. */
#include "conn_addr.h"

#include <stdio.h>
#include <string.h>

static kc_err_t split(const char *s, size_t n, char *host, size_t hcap, char *port, size_t pcap,
                      kc_error_t *err)
{
    const char *colon;
    const char *h = s;
    size_t hl;
    if (n && s[0] == '[') {
        const char *rb = memchr(s, ']', n);
        if (!rb || rb + 1 >= s + n || rb[1] != ':')
            return kc_fail(err, KC_ERR_CONFIG, "bootstrap.servers: '%.*s' is not [ipv6]:port",
                           (int)n, s);
        h = s + 1;
        hl = (size_t)(rb - h);
        colon = rb + 1;
    } else {
        colon = NULL;
        for (size_t i = 0; i < n; i++)
            if (s[i] == ':')
                colon = s + i;
        if (!colon)
            return kc_fail(err, KC_ERR_CONFIG, "bootstrap.servers: '%.*s' has no port", (int)n, s);
        hl = (size_t)(colon - s);
    }
    size_t pl = (size_t)(s + n - colon - 1);
    if (hl == 0 || hl >= hcap || pl == 0 || pl >= pcap)
        return kc_fail(err, KC_ERR_CONFIG, "bootstrap.servers: bad entry '%.*s'", (int)n, s);
    memcpy(host, h, hl);
    host[hl] = 0;
    memcpy(port, colon + 1, pl);
    port[pl] = 0;
    return KC_OK;
}

kc_err_t kc_addr_resolve(const char *servers, kc_addr_t *out, int cap, int *n, kc_error_t *err)
{
    *n = 0;
    kc_error_t last = {0};
    const char *p = servers ? servers : "";
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        size_t len = (size_t)(e - p);
        while (len && p[len - 1] == ' ')
            len--;
        if (len) {
            char host[256], port[16];
            kc_err_t rc = split(p, len, host, sizeof host, port, sizeof port, err);
            if (rc != KC_OK)
                return rc;
            struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
            struct addrinfo *res = NULL;
            int g = getaddrinfo(host, port, &hints, &res);
            if (g != 0) {
                kc_fail(&last, KC_ERR_TRANSPORT, "resolve %s:%s: %s", host, port, gai_strerror(g));
            } else {
                for (struct addrinfo *ai = res; ai && *n < cap; ai = ai->ai_next) {
                    memcpy(&out[*n].sa, ai->ai_addr, ai->ai_addrlen);
                    out[*n].len = ai->ai_addrlen;
                    snprintf(out[*n].name, sizeof out[*n].name, "%s:%s", host, port);
                    snprintf(out[*n].host, sizeof out[*n].host, "%s", host);
                    (*n)++;
                }
                freeaddrinfo(res);
            }
        }
        p = e;
    }
    if (*n == 0) {
        if (last.code)
            return kc_fail(err, KC_ERR_TRANSPORT, "%s", last.msg);
        return kc_fail(err, KC_ERR_CONFIG, "bootstrap.servers is empty");
    }
    return KC_OK;
}
