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

/* Appends every address of host:port to out (the order getaddrinfo gives, which is RFC 6724's:
 * the connection tries them in turn, Java's use_all_dns_ips). */
static void add_host(const char *host, const char *port, kc_addr_t *out, int cap, int *n,
                     kc_error_t *last)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        kc_fail(last, KC_ERR_TRANSPORT, "resolve %s:%s: %s", host, port, gai_strerror(g));
        return;
    }
    for (struct addrinfo *ai = res; ai && *n < cap; ai = ai->ai_next) {
        memcpy(&out[*n].sa, ai->ai_addr, ai->ai_addrlen);
        out[*n].len = ai->ai_addrlen;
        snprintf(out[*n].name, sizeof out[*n].name, "%s:%s", host, port);
        snprintf(out[*n].host, sizeof out[*n].host, "%s", host);
        (*n)++;
    }
    freeaddrinfo(res);
}

int kc_addr_canonical_names(const char *host, char names[][KC_ADDR_HOST_MAX], int cap,
                            kc_error_t *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, NULL, &hints, &res);
    if (g != 0) {
        kc_fail(err, KC_ERR_TRANSPORT, "resolve %s: %s", host, gai_strerror(g));
        return -1;
    }
    int k = 0;
    for (struct addrinfo *ai = res; ai && k < cap; ai = ai->ai_next) {
        char name[KC_ADDR_HOST_MAX];
        /* No reverse entry: the address itself stands for the name, as Java's
         * getCanonicalHostName answers the IP literal. */
        if (getnameinfo(ai->ai_addr, ai->ai_addrlen, name, sizeof name, NULL, 0, NI_NAMEREQD) !=
                0 &&
            getnameinfo(ai->ai_addr, ai->ai_addrlen, name, sizeof name, NULL, 0, NI_NUMERICHOST) !=
                0)
            continue;
        int dup = 0;
        for (int i = 0; i < k && !dup; i++)
            dup = strcmp(names[i], name) == 0;
        if (!dup)
            snprintf(names[k++], KC_ADDR_HOST_MAX, "%s", name);
    }
    freeaddrinfo(res);
    if (k == 0)
        kc_fail(err, KC_ERR_TRANSPORT, "resolve %s: no address has a name", host);
    return k;
}

kc_err_t kc_addr_resolve(const char *servers, int flags, kc_addr_t *out, int cap, int *n,
                         kc_error_t *err)
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
            char host[KC_ADDR_HOST_MAX], port[16];
            kc_err_t rc = split(p, len, host, sizeof host, port, sizeof port, err);
            if (rc != KC_OK)
                return rc;
            if (flags & KC_ADDR_CANONICAL) {
                char names[8][KC_ADDR_HOST_MAX];
                int k = kc_addr_canonical_names(host, names, 8, &last);
                for (int i = 0; i < k; i++)
                    add_host(names[i], port, out, cap, n, &last);
            } else {
                add_host(host, port, out, cap, n, &last);
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
