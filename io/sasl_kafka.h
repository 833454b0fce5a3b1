/*
 * The Kafka side of SASL: interprets the generated SaslHandshake and SaslAuthenticate responses
 * for a kc_sasl_t exchange (sasl.h), so the connection layer only moves messages.
 *
 * Call sequence (connection layer, network thread; requests built with the generated codec):
 *
 *     send SaslHandshake{mechanism = kc_sasl_mech_name(kc_sasl_mech(s))}
 *     kc_sasl_handshake_result(&hs_resp, kc_sasl_mech(s), broker, &err)   -- KC_ERR_AUTH if not
 * enabled kc_sasl_step(s, NULL, 0, &out, &out_len, &err) do { send SaslAuthenticate{auth_bytes =
 * out[0..out_len)} rc = kc_sasl_authenticate_result(s, &auth_resp, broker, now_ms, random32, &out,
 * &out_len, &err) } while (rc == KC_OK && !kc_sasl_done(s));
 *
 * On success the KIP-368 clock in `s` is set from session_lifetime_ms (v1+): poll
 * kc_sasl_reauth_due(s, now) and rerun the sequence on the same connection (after kc_sasl_reset)
 * between requests. Every failure is final for the connection and not retried: KC_ERR_AUTH (or
 * KC_ERR_MALFORMED) with "SASL <mechanism> authentication to broker <broker> failed: <reason>".
 *
 * Threads: the network thread (owner of `s`). Buffers: responses are only read during the call;
 * *out points into `s` (sasl.h).
 */
#ifndef KC_IO_SASL_KAFKA_H
#define KC_IO_SASL_KAFKA_H

#include "proto/sasl_authenticate.gen.h"
#include "proto/sasl_handshake.gen.h"
#include "sasl.h"

kc_err_t kc_sasl_handshake_result(const kc_sasl_handshake_response_t *resp, kc_sasl_mech_t mech,
                                  const char *broker, kc_error_t *err);

/* KC_OK when the SaslAuthenticate response has no error; else the final KC_ERR_AUTH naming the
 * mechanism, the broker, the broker's error_message and `server_detail` when not NULL or empty
 * (what the mechanism's server said before failing: OAUTHBEARER's status JSON). */
kc_err_t kc_sasl_authenticate_error(const kc_sasl_authenticate_response_t *resp,
                                    kc_sasl_mech_t mech, const char *broker,
                                    const char *server_detail, kc_error_t *err);
/* Rewrites a mechanism's own error ("SASL <mech>: ...") as the connection-level message that
 * names the broker, keeping `code`. */
kc_err_t kc_sasl_fail_at_broker(kc_err_t code, kc_sasl_mech_t mech, const char *broker,
                                kc_error_t *err);

kc_err_t kc_sasl_authenticate_result(kc_sasl_t *s, const kc_sasl_authenticate_response_t *resp,
                                     const char *broker, int64_t now_ms, uint32_t random32,
                                     const uint8_t **out, size_t *out_len, kc_error_t *err);

#endif
