/* Bootstrap address resolution. Any thread; pure except for getaddrinfo(), which blocks: so the
 * network thread never calls this itself, it asks the loop's resolver thread (io/resolver.h). */
#ifndef KC_IO_CONN_ADDR_H
#define KC_IO_CONN_ADDR_H

#include <netdb.h>
#include <sys/socket.h>

#include "base/err.h"

typedef struct kc_addr {
    struct sockaddr_storage sa;
    socklen_t len;
    char name[280]; /* "host:port" as configured, for logs */
    char host[256]; /* the host as configured (TLS server name) */
} kc_addr_t;

/* Resolves every "host:port" in the comma-separated `servers` (IPv6 as "[addr]:port") into
 * `out` (at most `cap`), every address of every host, in the order given. */
kc_err_t kc_addr_resolve(const char *servers, kc_addr_t *out, int cap, int *n, kc_error_t *err);

#endif
