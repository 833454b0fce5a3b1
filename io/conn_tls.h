/*
 * TLS for a connection: io/tls.c (OpenSSL over memory BIOs) behind the connection's transport
 * hook. Set kc_conn_opts_t.transport_new = kc_conn_tls_transport_new and transport_opaque to a
 * kc_conn_tls_t that outlives the connection. Owner: the network thread (the kc_tls_ctx_t inside
 * follows io/tls.h's rules).
 */
#ifndef KC_IO_CONN_TLS_H
#define KC_IO_CONN_TLS_H

#include "conn.h"
#include "tls.h"

typedef struct kc_conn_tls {
    kc_tls_ctx_t *ctx;
    /* Name to verify instead of the configured host (NULL: the host from bootstrap.servers, as
     * Kafka does). For tests of the hostname check. */
    const char *server_name;
} kc_conn_tls_t;

kc_err_t kc_conn_tls_transport_new(void *opaque, const char *host, const kc_conn_transport_vt **vt,
                                   void **t, kc_error_t *err);

#endif
