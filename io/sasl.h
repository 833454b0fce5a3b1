/*
 * SASL client mechanisms as pure state machines: PLAIN (RFC 4616), SCRAM-SHA-256 and
 * SCRAM-SHA-512 (RFC 5802, RFC 7677), OAUTHBEARER (RFC 7628, KIP-255: the token comes from a
 * kc_oauth_slot_t at each first step, so every re-authentication sends the current token), plus
 * the KIP-368 re-authentication clock.
 *
 * No I/O here. The connection layer wraps the bytes this module produces in the generated
 * SaslAuthenticate request (after a SaslHandshake naming kc_sasl_mech_name()) and feeds the
 * auth_bytes of each SaslAuthenticate response back in.
 *
 * Call sequence (connection layer, network thread):
 *
 *     kc_sasl_new(mech, user, password, &s, &err)            -- at connection setup
 *     SaslHandshake(mechanism = kc_sasl_mech_name(mech))     -- broker must list the mechanism
 *     kc_sasl_step(s, NULL, 0, &out, &out_len, &err)          -- first client message
 *     loop:
 *         send SaslAuthenticate(auth_bytes = out[0..out_len))
 *         response error_code != 0 -> kc_sasl_auth_fail(&err, mech, broker, error_message)
 *         kc_sasl_step(s, resp.auth_bytes, resp.len, &out, &out_len, &err)
 *         if kc_sasl_done(s): break                           -- authenticated
 *     kc_sasl_set_session_lifetime(s, now_ms, resp.session_lifetime_ms, random32)
 *     ... later, when kc_sasl_reauth_due(s, now_ms): kc_sasl_reset(s) and run the loop again
 *         (KIP-368: the same connection, SaslHandshake + SaslAuthenticate between requests).
 *
 * Any error returned by kc_sasl_step() is KC_ERR_AUTH (server rejected us, or the server failed
 * to prove it knows the password) or KC_ERR_MALFORMED (the server's message does not parse); both
 * are final for this connection and must not be retried with the same credentials.
 *
 * Threads: a kc_sasl_t is owned by the network thread (the connection it belongs to). It may be
 * created on another thread and handed over through the documented queues.
 *
 * Buffers: `user` and `password` are copied at kc_sasl_new(); the copies are wiped with
 * OPENSSL_cleanse() on reset/free, as is every derived key. The `out` pointer from kc_sasl_step()
 * points into the kc_sasl_t and stays valid until the next kc_sasl_step/reset/free. Input bytes
 * are only read during the call.
 *
 * Credentials never appear in logs or in kc_error_t messages (only the user name may, since
 * brokers log it too; this module does not put it in messages either).
 */
#ifndef KC_IO_SASL_H
#define KC_IO_SASL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "oauth_token.h"

typedef enum kc_sasl_mech {
    KC_SASL_PLAIN,
    KC_SASL_SCRAM_SHA_256,
    KC_SASL_SCRAM_SHA_512,
    KC_SASL_OAUTHBEARER,
    /* Kerberos: not a kc_sasl_t state machine (its steps may block on the KDC, so they run off
     * the network thread): io/sasl_gssapi.h, driven by io/conn_sasl.c. Named and parsed here. */
    KC_SASL_GSSAPI,
} kc_sasl_mech_t;

/* "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI": the names Kafka's
 * sasl.mechanism uses. */
const char *kc_sasl_mech_name(kc_sasl_mech_t mech);

/* Parses a sasl.mechanism value (case-sensitive, as Kafka). KC_ERR_CONFIG names the choices. */
kc_err_t kc_sasl_mech_parse(const char *name, kc_sasl_mech_t *out, kc_error_t *err);

typedef struct kc_sasl kc_sasl_t;

/* A fresh exchange for `user`/`password` (both copied; NUL-terminated UTF-8). PLAIN and SCRAM
 * only (KC_ERR_INVALID_ARG for GSSAPI). */
kc_err_t kc_sasl_new(kc_sasl_mech_t mech, const char *user, const char *password, kc_sasl_t **out,
                     kc_error_t *err);

/* An OAUTHBEARER exchange reading its token from `slot` (not owned; it outlives the exchange).
 * OAUTHBEARER: the first step sends the slot's current token (KC_ERR_AUTH when it has none that
 * is valid); an empty answer is success; a server error message (JSON) is answered with \x01 and
 * its status is kept for the failure the broker sends next (kc_sasl_server_detail). */
kc_err_t kc_sasl_new_oauthbearer(kc_oauth_slot_t *slot, kc_sasl_t **out, kc_error_t *err);

/* What the server said before refusing us (OAUTHBEARER's error status), or "" . */
const char *kc_sasl_server_detail(const kc_sasl_t *s);

/* Wipes every secret and frees. NULL is fine. */
void kc_sasl_free(kc_sasl_t *s);

/* Restarts the exchange with the same credentials (for re-authentication): a new nonce is drawn
 * at the next first step. The session lifetime is kept until the next kc_sasl_set_session_lifetime.
 */
void kc_sasl_reset(kc_sasl_t *s);

kc_sasl_mech_t kc_sasl_mech(const kc_sasl_t *s);

/*
 * One step. `in` is the server's last auth_bytes (NULL and 0 for the first step). On KC_OK either
 * *out and *out_len hold the next client message to send (out_len may be 0 only if the mechanism
 * sends an empty message, which these do not), or kc_sasl_done() is true and *out is NULL.
 */
kc_err_t kc_sasl_step(kc_sasl_t *s, const uint8_t *in, size_t in_len, const uint8_t **out,
                      size_t *out_len, kc_error_t *err);

/* True once the server has accepted us (and, for SCRAM, proved it knows our password). */
bool kc_sasl_done(const kc_sasl_t *s);

/* Fills `err` with the one clear, final authentication error the connection reports and returns
 * KC_ERR_AUTH: "SASL <mech> authentication to broker <broker> failed: <detail>". `detail` is the
 * broker's error_message or this module's message (never credentials). */
kc_err_t kc_sasl_auth_fail(kc_error_t *err, kc_sasl_mech_t mech, const char *broker,
                           const char *detail);

/*
 * KIP-368. After a successful exchange, the SaslAuthenticate response's session_lifetime_ms (0 =
 * the broker does not expire sessions) and a random 32-bit value give the time at which to
 * re-authenticate: at a uniformly jittered 85%..95% of the lifetime (the Java client's window),
 * so that a fleet of consumers does not re-authenticate in lockstep and every one finishes well
 * before the broker closes the connection. Facts measured against Kafka 4.1 (tests/kafka/
 * test_tls_sasl.c): a broker without connections.max.reauth.ms answers lifetime 0 and refuses a
 * second SaslHandshake (ILLEGAL_SASL_STATE) — so never re-authenticate then; re-authentication
 * must use the same mechanism (a switch closes the connection); and a broker refuses a
 * re-authentication less than 1 s after the previous one.
 */
int64_t kc_sasl_reauth_at_ms(int64_t authenticated_at_ms, int64_t session_lifetime_ms,
                             uint32_t random32);
void kc_sasl_set_session_lifetime(kc_sasl_t *s, int64_t now_ms, int64_t session_lifetime_ms,
                                  uint32_t random32);
/* When re-authentication is due (INT64_MAX when never). */
int64_t kc_sasl_reauth_deadline_ms(const kc_sasl_t *s);
bool kc_sasl_reauth_due(const kc_sasl_t *s, int64_t now_ms);

/* Tests only: use this client nonce instead of a random one for the next exchange (so RFC 7677's
 * vector can be replayed). Printable ASCII without ','; at most 64 bytes. */
kc_err_t kc_sasl__set_nonce_for_test(kc_sasl_t *s, const char *nonce, kc_error_t *err);

#endif
