/* SASL as a connection auth hook (see conn_sasl.h). Owner: the network thread. */
#include "conn_sasl.h"

#include <stdlib.h>

#include "base/clock.h"
#include "backoff.h"
#include "proto/proto.h"
#include "sasl_kafka.h"

struct kc_conn_sasl {
    kc_sasl_t *s;
    const uint8_t *out; /* the next client message; points into s */
    size_t out_len;
    int64_t lifetime_ms;
    uint64_t rng;
};

static kc_err_t wrap(kc_sasl_t *s, kc_conn_sasl_t **out, kc_error_t *err)
{
    kc_conn_sasl_t *cs = calloc(1, sizeof *cs);
    if (!cs) {
        kc_sasl_free(s);
        return kc_fail(err, KC_ERR_NOMEM, "sasl: out of memory");
    }
    cs->s = s;
    cs->rng = (uint64_t)kc_now_ns() ^ (uint64_t)(uintptr_t)cs;
    *out = cs;
    return KC_OK;
}

kc_err_t kc_conn_sasl_new(kc_sasl_mech_t mech, const char *user, const char *password,
                          kc_conn_sasl_t **out, kc_error_t *err)
{
    kc_sasl_t *s = NULL;
    kc_err_t rc = kc_sasl_new(mech, user, password, &s, err);
    return rc != KC_OK ? rc : wrap(s, out, err);
}

kc_err_t kc_conn_sasl_new_oauthbearer(kc_oauth_slot_t *slot, kc_conn_sasl_t **out, kc_error_t *err)
{
    kc_sasl_t *s = NULL;
    kc_err_t rc = kc_sasl_new_oauthbearer(slot, &s, err);
    return rc != KC_OK ? rc : wrap(s, out, err);
}

void kc_conn_sasl_free(kc_conn_sasl_t *cs)
{
    if (cs) {
        kc_sasl_free(cs->s);
        free(cs);
    }
}

int64_t kc_conn_sasl_session_lifetime_ms(const kc_conn_sasl_t *cs)
{
    return cs->lifetime_ms;
}

static void done(kc_conn_t *c, kc_err_t rc, const kc_error_t *e)
{
    kc_error_t ok = {0};
    kc_conn_auth_done(c, rc == KC_OK ? &ok : e);
}

static kc_err_t enc_handshake(kc_wbuf_t *out, int16_t v, void *opaque)
{
    kc_conn_sasl_t *cs = opaque;
    kc_sasl_handshake_request_t m;
    kc_sasl_handshake_request_init(&m);
    m.mechanism = kc_str(kc_sasl_mech_name(kc_sasl_mech(cs->s)));
    return kc_sasl_handshake_request_encode(&m, v, out, NULL);
}

static kc_err_t enc_authenticate(kc_wbuf_t *out, int16_t v, void *opaque)
{
    kc_conn_sasl_t *cs = opaque;
    kc_sasl_authenticate_request_t m;
    kc_sasl_authenticate_request_init(&m);
    m.auth_bytes = (kc_bytes_t){cs->out, (int32_t)cs->out_len};
    return kc_sasl_authenticate_request_encode(&m, v, out, NULL);
}

static void on_authenticate(kc_conn_t *c, kc_err_t err, kc_buf_t *f, size_t off, int16_t v,
                            void *opaque);

static void send_authenticate(kc_conn_t *c, kc_conn_sasl_t *cs)
{
    kc_conn_req_spec_t s = {.api_key = KC_SASL_AUTHENTICATE_REQUEST_API_KEY,
                            .min_version = KC_SASL_AUTHENTICATE_REQUEST_MIN_VERSION,
                            .max_version = KC_SASL_AUTHENTICATE_REQUEST_MAX_VERSION,
                            .encode = enc_authenticate,
                            .cb = on_authenticate,
                            .opaque = cs};
    kc_error_t e;
    kc_err_t rc = kc_conn_send_internal(c, &s, &e);
    if (rc != KC_OK)
        done(c, rc, &e);
}

static void on_authenticate(kc_conn_t *c, kc_err_t err, kc_buf_t *f, size_t off, int16_t v,
                            void *opaque)
{
    kc_conn_sasl_t *cs = opaque;
    if (err != KC_OK)
        return; /* the connection reset; the next connection starts the exchange again */
    kc_rbuf_t r = kc_rbuf(f->data + off, f->len - off);
    kc_arena_t a = {0};
    kc_sasl_authenticate_response_t resp;
    kc_error_t e;
    kc_err_t rc = kc_sasl_authenticate_response_decode(&resp, v, &r, &a, &e);
    if (rc == KC_OK)
        rc = kc_sasl_authenticate_result(cs->s, &resp, kc_conn_peer(c), kc_now_ms(),
                                         (uint32_t)(kc_backoff_rand(&cs->rng) * 4294967296.0),
                                         &cs->out, &cs->out_len, &e);
    if (rc == KC_OK && kc_sasl_done(cs->s)) {
        cs->lifetime_ms = resp.session_lifetime_ms;
        /* KIP-368: a lifetime means the broker will close the connection when it ends unless we
         * re-authenticate first; io/sasl.c picks the jittered 85..95% point. */
        if (cs->lifetime_ms > 0)
            kc_conn_schedule_reauth(c, kc_sasl_reauth_deadline_ms(cs->s) - kc_now_ms());
    }
    kc_arena_free(&a);
    kc_buf_unref(f);
    if (rc != KC_OK || kc_sasl_done(cs->s)) {
        done(c, rc, &e);
        return;
    }
    send_authenticate(c, cs);
}

static void on_handshake(kc_conn_t *c, kc_err_t err, kc_buf_t *f, size_t off, int16_t v,
                         void *opaque)
{
    kc_conn_sasl_t *cs = opaque;
    if (err != KC_OK)
        return;
    kc_rbuf_t r = kc_rbuf(f->data + off, f->len - off);
    kc_arena_t a = {0};
    kc_sasl_handshake_response_t resp;
    kc_error_t e;
    kc_err_t rc = kc_sasl_handshake_response_decode(&resp, v, &r, &a, &e);
    if (rc == KC_OK)
        rc = kc_sasl_handshake_result(&resp, kc_sasl_mech(cs->s), kc_conn_peer(c), &e);
    kc_arena_free(&a);
    kc_buf_unref(f);
    if (rc == KC_OK)
        rc = kc_sasl_step(cs->s, NULL, 0, &cs->out, &cs->out_len, &e);
    if (rc != KC_OK) {
        done(c, rc, &e);
        return;
    }
    send_authenticate(c, cs);
}

void kc_conn_sasl_authenticate(kc_conn_t *c, void *opaque)
{
    kc_conn_sasl_t *cs = opaque;
    /* Every connection, and every re-authentication of one (same mechanism: a broker closes the
     * connection on a switch), starts a fresh exchange with a fresh nonce. */
    kc_sasl_reset(cs->s);
    /* SaslHandshake v1+ means SaslAuthenticate requests carry the tokens (KIP-152). */
    kc_conn_req_spec_t s = {.api_key = KC_SASL_HANDSHAKE_REQUEST_API_KEY,
                            .min_version = 1,
                            .max_version = KC_SASL_HANDSHAKE_REQUEST_MAX_VERSION,
                            .encode = enc_handshake,
                            .cb = on_handshake,
                            .opaque = cs};
    kc_error_t e;
    kc_err_t rc = kc_conn_send_internal(c, &s, &e);
    if (rc != KC_OK)
        done(c, rc, &e);
}
