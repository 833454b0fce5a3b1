/*
 * SaslHandshake / SaslAuthenticate results applied to a kc_sasl_t (see sasl_kafka.h).
 * Owner: the network thread. No state of its own.
 */
#include "sasl_kafka.h"

#include <stdio.h>
#include <string.h>

#include "proto/kafka_errors.h"

kc_err_t kc_sasl_handshake_result(const kc_sasl_handshake_response_t *resp, kc_sasl_mech_t mech,
                                  const char *broker, kc_error_t *err)
{
    if (resp->error_code == 0)
        return KC_OK;
    /* UNSUPPORTED_SASL_MECHANISM lists what the listener does enable: say it, since the usual
     * cause is a sasl.mechanism that does not match the broker's sasl.enabled.mechanisms. */
    char enabled[160] = "";
    size_t used = 0;
    for (int32_t i = 0; i < resp->mechanisms.count && used + 1 < sizeof enabled; i++) {
        const kc_str_t *m = &resp->mechanisms.items[i];
        int n = snprintf(enabled + used, sizeof enabled - used, "%s%.*s", i ? ", " : "",
                         m->len < 0 ? 0 : (int)m->len, m->ptr ? m->ptr : "");
        used += n > 0 ? (size_t)n : 0;
    }
    char detail[224];
    snprintf(detail, sizeof detail, "SaslHandshake: %s (broker enables: %s)",
             kc_kafka_err_name(resp->error_code), enabled[0] ? enabled : "none");
    kc_err_t rc = kc_sasl_auth_fail(err, mech, broker, detail);
    if (err)
        err->kafka_code = resp->error_code;
    return rc;
}

/* Rewrites a kc_sasl_step() error as the connection-level message that names the broker, keeping
 * its code. The state machine's own prefix ("SASL <mech>: ") is dropped to avoid saying it twice.
 */
kc_err_t kc_sasl_fail_at_broker(kc_err_t code, kc_sasl_mech_t mech, const char *broker,
                                kc_error_t *err)
{
    if (!err)
        return code;
    char detail[sizeof err->msg];
    char prefix[40];
    snprintf(prefix, sizeof prefix, "SASL %s: ", kc_sasl_mech_name(mech));
    const char *m = err->msg;
    if (strncmp(m, prefix, strlen(prefix)) == 0)
        m += strlen(prefix);
    snprintf(detail, sizeof detail, "%s", m);
    kc_sasl_auth_fail(err, mech, broker, detail);
    err->code = code;
    return code;
}

kc_err_t kc_sasl_authenticate_error(const kc_sasl_authenticate_response_t *resp,
                                    kc_sasl_mech_t mech, const char *broker,
                                    const char *server_detail, kc_error_t *err)
{
    if (resp->error_code != 0) {
        /* The broker's error_message says why (e.g. "invalid credentials"); it never echoes the
         * password. Bound it so the broker/mechanism part always fits. */
        char detail[360];
        const kc_str_t *em = &resp->error_message;
        /* OAUTHBEARER: the status the server sent before the failure says why the token was
         * refused (invalid_token, an expired token, a wrong audience); Kafka's error_message
         * does not. */
        const char *sd = server_detail ? server_detail : "";
        snprintf(detail, sizeof detail, "%s%s%.*s%s%s%s", kc_kafka_err_name(resp->error_code),
                 em->len > 0 ? ": " : "", em->len > 0 ? (em->len > 160 ? 160 : (int)em->len) : 0,
                 em->len > 0 ? em->ptr : "", *sd ? " (server: " : "", sd, *sd ? ")" : "");
        kc_err_t rc = kc_sasl_auth_fail(err, mech, broker, detail);
        if (err)
            err->kafka_code = resp->error_code;
        return rc;
    }
    return KC_OK;
}

kc_err_t kc_sasl_authenticate_result(kc_sasl_t *s, const kc_sasl_authenticate_response_t *resp,
                                     const char *broker, int64_t now_ms, uint32_t random32,
                                     const uint8_t **out, size_t *out_len, kc_error_t *err)
{
    kc_sasl_mech_t mech = kc_sasl_mech(s);
    *out = NULL;
    *out_len = 0;
    kc_err_t erc = kc_sasl_authenticate_error(resp, mech, broker, kc_sasl_server_detail(s), err);
    if (erc != KC_OK)
        return erc;
    const uint8_t *in = resp->auth_bytes.len > 0 ? resp->auth_bytes.ptr : NULL;
    size_t in_len = resp->auth_bytes.len > 0 ? (size_t)resp->auth_bytes.len : 0;
    kc_err_t rc = kc_sasl_step(s, in, in_len, out, out_len, err);
    if (rc != KC_OK)
        return kc_sasl_fail_at_broker(rc, mech, broker, err);
    if (kc_sasl_done(s))
        kc_sasl_set_session_lifetime(s, now_ms, resp->session_lifetime_ms, random32);
    return KC_OK;
}
