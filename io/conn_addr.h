/* Bootstrap address resolution. Any thread; pure except for getaddrinfo(), which blocks: so the
 * network thread never calls this itself, it asks the loop's resolver thread (io/resolver.h). */
#ifndef KC_IO_CONN_ADDR_H
#define KC_IO_CONN_ADDR_H

#include <netdb.h>
#include <sys/socket.h>

#include "base/err.h"

#define KC_ADDR_HOST_MAX 256

typedef struct kc_addr {
    struct sockaddr_storage sa;
    socklen_t len;
    char name[280]; /* "host:port" as configured, for logs */
    char host[256]; /* the host as configured (TLS server name) */
} kc_addr_t;

/* kc_addr_resolve flag, Java's client.dns.lookup=resolve_canonical_bootstrap_servers_only: each
 * host is first resolved, every address is named by its reverse lookup (the address literal when
 * it has none), and those canonical names are what is resolved, connected to, and used as TLS
 * server and Kerberos service host. Bootstrap servers given as IPs or aliases then meet the
 * names in the brokers' certificates and principals. Without it (use_all_dns_ips) the host is
 * kept as configured. Either way every address of a name is kept, tried in turn. */
#define KC_ADDR_CANONICAL 1

/* Resolves every "host:port" in the comma-separated `servers` (IPv6 as "[addr]:port") into
 * `out` (at most `cap`), every address of every host, in the order given. */
kc_err_t kc_addr_resolve(const char *servers, int flags, kc_addr_t *out, int cap, int *n,
                         kc_error_t *err);

/* The canonical names of `host` (KC_ADDR_CANONICAL), each once, in the order of its addresses:
 * how many were written to `names` (at most `cap`), or -1 with `err` when it does not resolve. */
int kc_addr_canonical_names(const char *host, char names[][KC_ADDR_HOST_MAX], int cap,
                            kc_error_t *err);

#endif
