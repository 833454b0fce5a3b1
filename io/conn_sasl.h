/*
 * SASL for a connection: the SaslHandshake + SaslAuthenticate exchange (io/sasl.c state machines,
 * io/sasl_kafka.c response rules) run as the connection's auth hook, after ApiVersions and before
 * READY. Set kc_conn_opts_t.authenticate = kc_conn_sasl_authenticate and auth_opaque to a
 * kc_conn_sasl_t made by kc_conn_sasl_new() (one per connection: it holds the exchange state).
 * Failures are final (KC_ERR_AUTH naming mechanism and broker; the connection goes FAILED).
 * Credentials stay inside kc_sasl_t and never reach a log or an error message.
 * KIP-368: when SaslAuthenticate returns session_lifetime_ms > 0 the hook schedules itself again
 * (kc_conn_schedule_reauth) at the jittered point io/sasl.c picks, and re-runs the exchange on the
 * live connection; a failed re-authentication fails the connection with KC_ERR_AUTH.
 * GSSAPI (io/sasl_gssapi.h): every step may talk to the KDC and block, so each runs on the loop's
 * offload thread (io/offload.h) and the exchange goes on when its result comes back; the network
 * thread keeps serving every other connection meanwhile. A step's result that comes back after
 * the connection was freed, reset or started a newer exchange is dropped.
 * Owner: the network thread.
 */
#ifndef KC_IO_CONN_SASL_H
#define KC_IO_CONN_SASL_H

#include "conn.h"
#include "sasl.h"
#include "sasl_gssapi.h"

typedef struct kc_conn_sasl kc_conn_sasl_t;

kc_err_t kc_conn_sasl_new(kc_sasl_mech_t mech, const char *user, const char *password,
                          kc_conn_sasl_t **out, kc_error_t *err);
/* OAUTHBEARER: each exchange (first authentication and every re-authentication) sends the
 * slot's current token; `slot` outlives the connection. */
kc_err_t kc_conn_sasl_new_oauthbearer(kc_oauth_slot_t *slot, kc_conn_sasl_t **out, kc_error_t *err);
/* GSSAPI with the consumer's credential (shared by its connections; it must outlive them). */
kc_err_t kc_conn_sasl_new_gssapi(kc_gss_cred_t *cred, kc_conn_sasl_t **out, kc_error_t *err);
void kc_conn_sasl_free(kc_conn_sasl_t *cs);
void kc_conn_sasl_authenticate(kc_conn_t *conn, void *opaque);
/* kc_conn_opts_t.auth_generation for a kc_conn_sasl_t: OAUTHBEARER's count of tokens put in its
 * slot (a refreshed token is new credentials); 0 for the other mechanisms, whose credentials
 * never change. */
uint64_t kc_conn_sasl_auth_generation(void *opaque);
/* session_lifetime_ms from the last successful exchange (0: none), for the re-auth clock. */
int64_t kc_conn_sasl_session_lifetime_ms(const kc_conn_sasl_t *cs);

#endif
