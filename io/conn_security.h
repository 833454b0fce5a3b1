/*
 * A connection's security (security.protocol): what every connection a consumer opens needs to
 * speak TLS and/or SASL, built once from the configuration and applied to each kc_conn_opts_t.
 *
 * Why one bundle: the engine opens connections in three places (brokers, the offsets
 * coordinator, a classic member's own coordinator connection) and each must be secured the same
 * way; a connection that silently stayed plaintext would send credentials or data in the clear.
 * The TLS context (certificates, CA, key) is loaded once and shared; SASL exchange state is per
 * connection (kc_conn_sasl_t), created by kc_conn_security_apply and freed with the connection
 * (kc_conn_opts_t.auth_free). The password is copied into each exchange and never logged. A
 * GSSAPI credential (the Kerberos login) is one per bundle, shared by every connection.
 *
 * Owner: created by the application thread before the network thread starts, then read only by
 * the network thread; freed after the last connection using it was freed.
 */
#ifndef KC_IO_CONN_SECURITY_H
#define KC_IO_CONN_SECURITY_H

#include <stdbool.h>

#include "conn.h"
#include "sasl.h"
#include "sasl_gssapi.h"
#include "tls.h"

typedef struct kc_conn_security_conf {
    const char *protocol;       /* PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL */
    kc_tls_conf_t tls;          /* read for SSL and SASL_SSL */
    const char *sasl_mechanism; /* PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 | OAUTHBEARER | GSSAPI */
    const char *sasl_username;  /* PLAIN, SCRAM */
    const char *sasl_password;
    /* OAUTHBEARER: the consumer's token slot (io/oauth_token.h), filled by its refresher; not
     * owned, outlives every connection. */
    kc_oauth_slot_t *oauth;
    kc_gss_conf_t kerberos; /* GSSAPI */
} kc_conn_security_conf_t;

typedef struct kc_conn_security kc_conn_security_t;

/* NULL *out for PLAINTEXT (nothing to apply). KC_ERR_CONFIG names what is wrong (unknown
 * protocol, TLS material that does not load, a SASL mechanism without a user name). */
kc_err_t kc_conn_security_new(const kc_conn_security_conf_t *conf, kc_conn_security_t **out,
                              kc_error_t *err);
void kc_conn_security_free(kc_conn_security_t *s);

/* Sets opts' transport (TLS) and auth hook (SASL, with a fresh per-connection state that the
 * connection frees). `s` NULL: plaintext, nothing set. If kc_conn_new then fails, release the
 * state with kc_conn_security_discard(opts). */
kc_err_t kc_conn_security_apply(const kc_conn_security_t *s, kc_conn_opts_t *opts, kc_error_t *err);
void kc_conn_security_discard(kc_conn_opts_t *opts);

#endif
