/* SASL as a connection auth hook (see conn_sasl.h). Owner: the network thread; a GSSAPI step's
 * job is the offload thread's between submit and done (io/offload.h). */
#include "conn_sasl.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "backoff.h"
#include "offload.h"
#include "proto/proto.h"
#include "sasl_kafka.h"

struct kc_conn_sasl {
    kc_sasl_mech_t mech;
    kc_sasl_t *s;          /* PLAIN, SCRAM, OAUTHBEARER */
    kc_gss_cred_t *gss;    /* GSSAPI: the consumer's credential (not owned) */
    kc_oauth_slot_t *slot; /* OAUTHBEARER: the consumer's token slot (not owned) */
    const uint8_t *out;    /* the next client message; points into s or gss_out */
    size_t out_len;
    uint8_t *gss_out;  /* GSSAPI: the owned message being sent */
    kc_gss_ctx_t *gx;  /* GSSAPI: this exchange, while no job holds it */
    bool gss_finished; /* GSSAPI: the security-layer answer was the message sent */
    kc_conn_t *conn;   /* the connection being authenticated; NULL once it freed us */
    unsigned gen;      /* exchange count: a job of an older exchange is dropped */
    int refs;          /* the connection's + one per GSSAPI job out */
    int64_t lifetime_ms;
    uint64_t rng;
};

/* A GSSAPI step travelling to the offload thread and back. */
typedef struct gss_job {
    kc_conn_sasl_t *cs; /* read only by the network thread */
    unsigned gen;
    kc_gss_ctx_t *gx; /* the offload thread's while the job is out */
    uint8_t *in;
    size_t in_len;
    uint8_t *out; /* written by the offload thread */
    size_t out_len;
    bool finished;
    kc_err_t rc;
    kc_error_t err;
} gss_job_t;

static kc_conn_sasl_t *sasl_alloc(kc_sasl_mech_t mech, kc_error_t *err)
{
    kc_conn_sasl_t *cs = calloc(1, sizeof *cs);
    if (!cs) {
        kc_fail(err, KC_ERR_NOMEM, "sasl: out of memory");
        return NULL;
    }
    cs->mech = mech;
    cs->refs = 1;
    cs->rng = (uint64_t)kc_now_ns() ^ (uint64_t)(uintptr_t)cs;
    return cs;
}

kc_err_t kc_conn_sasl_new(kc_sasl_mech_t mech, const char *user, const char *password,
                          kc_conn_sasl_t **out, kc_error_t *err)
{
    kc_conn_sasl_t *cs = sasl_alloc(mech, err);
    if (!cs)
        return KC_ERR_NOMEM;
    kc_err_t rc = kc_sasl_new(mech, user, password, &cs->s, err);
    if (rc != KC_OK) {
        free(cs);
        return rc;
    }
    *out = cs;
    return KC_OK;
}

kc_err_t kc_conn_sasl_new_oauthbearer(kc_oauth_slot_t *slot, kc_conn_sasl_t **out, kc_error_t *err)
{
    kc_conn_sasl_t *cs = sasl_alloc(KC_SASL_OAUTHBEARER, err);
    if (!cs)
        return KC_ERR_NOMEM;
    kc_err_t rc = kc_sasl_new_oauthbearer(slot, &cs->s, err);
    if (rc != KC_OK) {
        free(cs);
        return rc;
    }
    cs->slot = slot;
    *out = cs;
    return KC_OK;
}

uint64_t kc_conn_sasl_auth_generation(void *opaque)
{
    const kc_conn_sasl_t *cs = opaque;
    return cs->slot ? kc_oauth_slot_generation(cs->slot) : 0;
}

kc_err_t kc_conn_sasl_new_gssapi(kc_gss_cred_t *cred, kc_conn_sasl_t **out, kc_error_t *err)
{
    kc_conn_sasl_t *cs = sasl_alloc(KC_SASL_GSSAPI, err);
    if (!cs)
        return KC_ERR_NOMEM;
    cs->gss = cred;
    *out = cs;
    return KC_OK;
}

static void clear_gss_out(kc_conn_sasl_t *cs)
{
    free(cs->gss_out);
    cs->gss_out = NULL;
}

static void unref(kc_conn_sasl_t *cs)
{
    if (--cs->refs > 0)
        return;
    kc_sasl_free(cs->s);
    kc_gss_ctx_free(cs->gx);
    clear_gss_out(cs);
    free(cs);
}

void kc_conn_sasl_free(kc_conn_sasl_t *cs)
{
    if (cs) {
        cs->conn = NULL; /* a GSSAPI job still out finds this and drops its result */
        unref(cs);
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
    m.mechanism = kc_str(kc_sasl_mech_name(cs->mech));
    return kc_sasl_handshake_request_encode(&m, v, out, NULL);
}

static kc_err_t enc_authenticate(kc_wbuf_t *out, int16_t v, void *opaque)
{
    kc_conn_sasl_t *cs = opaque;
    kc_sasl_authenticate_request_t m;
    kc_sasl_authenticate_request_init(&m);
    /* An empty message is a real one (GSSAPI's after the context is established). */
    m.auth_bytes = (kc_bytes_t){cs->out_len ? cs->out : (const uint8_t *)"", (int32_t)cs->out_len};
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

/* KIP-368: a lifetime means the broker will close the connection when it ends unless we
 * re-authenticate first, at the jittered 85..95% point io/sasl.c picks. */
static void schedule_reauth(kc_conn_t *c, kc_conn_sasl_t *cs, int64_t now, int64_t at)
{
    if (cs->lifetime_ms > 0 && at != INT64_MAX)
        kc_conn_schedule_reauth(c, at - now);
}

/* ---- GSSAPI: each step on the offload thread ---- */

static void gss_work(void *arg)
{
    gss_job_t *j = arg;
    j->rc = kc_gss_step(j->gx, j->in, j->in_len, &j->out, &j->out_len, &j->err);
    j->finished = j->rc == KC_OK && kc_gss_ctx_finished(j->gx);
}

static void gss_job_free(gss_job_t *j)
{
    kc_conn_sasl_t *cs = j->cs;
    kc_gss_ctx_free(j->gx);
    free(j->in);
    free(j->out);
    free(j);
    unref(cs);
}

static void gss_done(void *arg)
{
    gss_job_t *j = arg;
    kc_conn_sasl_t *cs = j->cs;
    kc_conn_t *c = cs->conn;
    /* The connection is gone, a newer exchange started, or the socket reset meanwhile (then
     * the next connection authenticates from scratch): nothing to continue. */
    if (!c || j->gen != cs->gen ||
        !(kc_conn_state(c) == KC_CONN_AUTH || kc_conn_reauthenticating(c))) {
        gss_job_free(j);
        return;
    }
    kc_error_t e = j->err;
    kc_err_t rc = j->rc;
    if (rc == KC_OK) {
        kc_gss_ctx_free(cs->gx);
        cs->gx = j->gx;
        j->gx = NULL;
        clear_gss_out(cs);
        cs->gss_out = j->out;
        j->out = NULL;
        cs->out = cs->gss_out;
        cs->out_len = j->out_len;
        cs->gss_finished = j->finished;
    }
    gss_job_free(j); /* cs stays: the connection holds it */
    if (rc != KC_OK) {
        kc_sasl_fail_at_broker(rc, cs->mech, kc_conn_peer(c), &e);
        done(c, rc, &e);
        return;
    }
    send_authenticate(c, cs);
}

static void gss_discard(void *arg)
{
    gss_job_free(arg);
}

static const kc_offload_fns_t gss_fns = {gss_work, gss_done, gss_discard};

/* Hands the exchange and the broker's message to the offload thread. */
static kc_err_t gss_submit(kc_conn_t *c, kc_conn_sasl_t *cs, const uint8_t *in, size_t in_len,
                           kc_error_t *err)
{
    kc_offload_t *o = kc_loop_offload(kc_conn_loop(c), KC_OFFLOAD_LOGIN, err);
    if (!o)
        return err ? err->code : KC_ERR_SYSTEM;
    gss_job_t *j = calloc(1, sizeof *j);
    if (!j || (in_len && !(j->in = malloc(in_len)))) {
        free(j);
        return kc_fail(err, KC_ERR_NOMEM, "sasl: out of memory");
    }
    if (in_len)
        memcpy(j->in, in, in_len);
    j->in_len = in_len;
    j->cs = cs;
    j->gen = cs->gen;
    j->gx = cs->gx;
    kc_err_t rc = kc_offload_submit(o, &gss_fns, j, NULL, err);
    if (rc != KC_OK) {
        free(j->in);
        free(j);
        return rc;
    }
    cs->gx = NULL; /* the job's now */
    cs->refs++;
    return KC_OK;
}

static void on_gss_authenticate(kc_conn_t *c, kc_conn_sasl_t *cs,
                                const kc_sasl_authenticate_response_t *resp)
{
    kc_error_t e;
    kc_err_t rc = kc_sasl_authenticate_error(resp, cs->mech, kc_conn_peer(c), NULL, &e);
    if (rc == KC_OK && cs->gss_finished) {
        /* The broker accepted the security-layer answer: authenticated. */
        int64_t now = kc_now_ms();
        cs->lifetime_ms = resp->session_lifetime_ms;
        schedule_reauth(c, cs, now,
                        kc_sasl_reauth_at_ms(now, cs->lifetime_ms,
                                             (uint32_t)(kc_backoff_rand(&cs->rng) * 4294967296.0)));
        done(c, KC_OK, NULL);
        return;
    }
    if (rc == KC_OK) {
        const kc_bytes_t *ab = &resp->auth_bytes;
        rc = gss_submit(c, cs, ab->len > 0 ? ab->ptr : NULL, ab->len > 0 ? (size_t)ab->len : 0, &e);
    }
    if (rc != KC_OK)
        done(c, rc, &e);
}

/* ---- the exchange ---- */

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
    if (rc == KC_OK && cs->mech == KC_SASL_GSSAPI) {
        on_gss_authenticate(c, cs, &resp);
        kc_arena_free(&a);
        kc_buf_unref(f);
        return;
    }
    if (rc == KC_OK)
        rc = kc_sasl_authenticate_result(cs->s, &resp, kc_conn_peer(c), kc_now_ms(),
                                         (uint32_t)(kc_backoff_rand(&cs->rng) * 4294967296.0),
                                         &cs->out, &cs->out_len, &e);
    if (rc == KC_OK && kc_sasl_done(cs->s)) {
        cs->lifetime_ms = resp.session_lifetime_ms;
        schedule_reauth(c, cs, kc_now_ms(), kc_sasl_reauth_deadline_ms(cs->s));
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
        rc = kc_sasl_handshake_result(&resp, cs->mech, kc_conn_peer(c), &e);
    kc_arena_free(&a);
    kc_buf_unref(f);
    if (rc == KC_OK && cs->mech == KC_SASL_GSSAPI) {
        /* The service is "<service>@<the broker's host as advertised>" (what the broker's
         * principal names), never the address it resolved to. */
        rc = kc_gss_ctx_new(cs->gss, kc_conn_host(c), &cs->gx, &e);
        if (rc == KC_OK)
            rc = gss_submit(c, cs, NULL, 0, &e);
        if (rc != KC_OK)
            done(c, rc, &e);
        return;
    }
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
     * connection on a switch), starts a fresh exchange: a fresh nonce, a fresh GSS context (a
     * job of the previous exchange still out is dropped when it returns). */
    cs->conn = c;
    cs->gen++;
    if (cs->s)
        kc_sasl_reset(cs->s);
    kc_gss_ctx_free(cs->gx);
    cs->gx = NULL;
    clear_gss_out(cs);
    cs->out = NULL;
    cs->out_len = 0;
    cs->gss_finished = false;
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
