/* The OAUTHBEARER token refresher (see oauth_refresh.h). */
#include "oauth_refresh.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/thread.h"
#include "oidc.h"
#include "sasl_oauthbearer.h"

#define RETRY_FIRST_MS 1000
#define RETRY_MAX_MS   10000

/* The request a token callback answers. Owner: the thread running the callback, for the call. */
struct kc_oauthbearer_req {
    bool answered, ok;
    kc_oauth_token_t tok;
    char reason[256];
};

#define REFRESH_MAX_DELAY_MS (366LL * 24 * 3600 * 1000)

struct kc_oauth_refresher {
    kc_oauth_slot_t *slot;
    kc_oauthbearer_token_cb_t cb; /* the application's source, or */
    void *cb_opaque;
    kc_oidc_t *oidc; /* OIDC's */
    const kc_logger_t *log;
    pthread_t th;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* monotonic; signalled by free */
    bool stop;         /* mu */
    int64_t expiry_ms; /* refresher thread: the current token's */
    int64_t start_ms;  /* refresher thread: when the current token arrived (wall clock) */
    kc_oauth_refresh_conf_t rc;
    uint64_t rng; /* refresher thread: the jitter's draws */
};

int64_t kc_oauth_refresh_at_ms(const kc_oauth_refresh_conf_t *c, int64_t now_ms, int64_t start_ms,
                               int64_t expiry_ms, double draw)
{
    if (expiry_ms <= now_ms)
        return now_ms;
    if (start_ms > now_ms)
        start_ms = now_ms; /* a start in the future (clock skew) counts from now */
    /* factor + jitter can pass 1 (0.99 + 0.25): never later than the expiry itself */
    double pct = c->factor + c->jitter * draw;
    int64_t life = expiry_ms - start_ms; /* start <= now < expiry: positive, no overflow */
    double part = (double)life * (pct < 1 ? pct : 1);
    int64_t at = start_ms + (part < (double)life ? (int64_t)part : life);
    if (now_ms + c->min_period_ms + c->buffer_ms > expiry_ms)
        return at; /* too short-lived for both bounds: the fraction alone */
    if (at > expiry_ms - c->buffer_ms)
        return expiry_ms - c->buffer_ms;
    if (at < now_ms + c->min_period_ms)
        return now_ms + c->min_period_ms;
    return at;
}

void kc_oauth_refresh_conf(const kc_conf_t *conf, kc_oauth_refresh_conf_t *out)
{
    out->factor = kc_conf_fraction(conf, KC_CONF_SASL_LOGIN_REFRESH_WINDOW_FACTOR);
    out->jitter = kc_conf_fraction(conf, KC_CONF_SASL_LOGIN_REFRESH_WINDOW_JITTER);
    out->min_period_ms = 1000 * kc_conf_int(conf, KC_CONF_SASL_LOGIN_REFRESH_MIN_PERIOD_SECONDS);
    out->buffer_ms = 1000 * kc_conf_int(conf, KC_CONF_SASL_LOGIN_REFRESH_BUFFER_SECONDS);
}

KC_API kc_err_t kc_oauthbearer_set_token(kc_oauthbearer_req_t *req, const char *token,
                                         int64_t expiry_ms, const char *principal,
                                         const char *const *extensions, size_t extension_count,
                                         kc_error_t *err)
{
    if (!req)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_oauthbearer_set_token: NULL request");
    if (req->answered) /* the first answer stands */
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "kc_oauthbearer_set_token: the request was answered already");
    kc_error_t e = {0};
    kc_err_t rc = KC_OK;
    if (!kc_oauthbearer_token_ok(token))
        rc = kc_fail(&e, KC_ERR_INVALID_ARG,
                     "kc_oauthbearer_set_token: the token is empty or not a bearer token (RFC "
                     "6750 b64token)");
    else if (expiry_ms <= kc_wall_ms())
        rc = kc_fail(&e, KC_ERR_INVALID_ARG,
                     "kc_oauthbearer_set_token: expiry_ms %lld is not in the future (wall-clock "
                     "ms since the epoch)",
                     (long long)expiry_ms);
    else if (extension_count % 2 || extension_count > 2 * KC_OAUTHBEARER_MAX_EXTENSIONS ||
             (extension_count && !extensions))
        rc = kc_fail(&e, KC_ERR_INVALID_ARG,
                     "kc_oauthbearer_set_token: extensions are key, value pairs (an even count, "
                     "at most %d pairs)",
                     KC_OAUTHBEARER_MAX_EXTENSIONS);
    for (size_t i = 0; rc == KC_OK && i < extension_count; i += 2) {
        if (!extensions[i] || !extensions[i + 1]) {
            rc = kc_fail(&e, KC_ERR_INVALID_ARG, "kc_oauthbearer_set_token: NULL extension");
        } else if (kc_oauthbearer_extension_check(extensions[i], extensions[i + 1], &e) != KC_OK) {
            rc = KC_ERR_INVALID_ARG;
            e.code = rc;
        }
    }
    kc_oauth_token_t t = {0};
    if (rc == KC_OK) {
        t.value = strdup(token);
        t.principal = strdup(principal ? principal : "");
        t.expiry_ms = expiry_ms;
        t.kv = extension_count ? calloc(extension_count, sizeof *t.kv) : NULL;
        bool ok = t.value && t.principal && (!extension_count || t.kv);
        for (size_t i = 0; ok && i < extension_count; i++)
            ok = (t.kv[t.n_kv++] = strdup(extensions[i])) != NULL;
        if (!ok) {
            kc_oauth_token_clear(&t);
            rc = kc_fail(&e, KC_ERR_NOMEM, "kc_oauthbearer_set_token: out of memory");
        }
    }
    req->answered = true;
    req->ok = rc == KC_OK;
    if (rc == KC_OK)
        req->tok = t;
    else
        snprintf(req->reason, sizeof req->reason, "%s", e.msg);
    if (err)
        *err = e;
    return rc;
}

KC_API void kc_oauthbearer_set_token_failure(kc_oauthbearer_req_t *req, const char *reason)
{
    if (!req || req->answered)
        return;
    req->answered = true;
    req->ok = false;
    snprintf(req->reason, sizeof req->reason, "%s", reason && *reason ? reason : "no reason given");
    for (char *p = req->reason; *p; p++) /* one line */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

/* One token from the source, on the calling thread (may block). */
static kc_err_t fetch(kc_oauth_refresher_t *r, kc_oauth_token_t *out, kc_error_t *err)
{
    if (r->oidc)
        return kc_oidc_fetch(r->oidc, out, err);
    kc_oauthbearer_req_t req = {0};
    r->cb(r->cb_opaque, &req);
    if (!req.answered)
        return kc_fail(err, KC_ERR_AUTH,
                       "SASL OAUTHBEARER: the token callback returned without "
                       "kc_oauthbearer_set_token or kc_oauthbearer_set_token_failure");
    if (!req.ok)
        return kc_fail(err, KC_ERR_AUTH, "SASL OAUTHBEARER: the token callback failed: %s",
                       req.reason);
    *out = req.tok;
    return KC_OK;
}

static void put(kc_oauth_refresher_t *r, kc_oauth_token_t *t)
{
    r->expiry_ms = t->expiry_ms;
    r->start_ms = kc_wall_ms();
    kc_oauth_slot_put(r->slot, t);
}

/* Nanoseconds from now to the current token's refresh (kc_oauth_refresh_at_ms), for a
 * CLOCK_MONOTONIC deadline: the token's times are wall-clock. */
static int64_t refresh_due_ns(kc_oauth_refresher_t *r)
{
    r->rng ^= r->rng << 13; /* xorshift64: the jitter needs spread, not secrecy */
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    double draw = (double)(r->rng >> 11) / 9007199254740992.0; /* [0, 1) */
    int64_t now = kc_wall_ms();
    int64_t at = kc_oauth_refresh_at_ms(&r->rc, now, r->start_ms, r->expiry_ms, draw);
    /* A token valid for centuries (an application's "never") is looked at again within a year:
     * the nanosecond deadline must not overflow. */
    int64_t delay_ms = at - now < REFRESH_MAX_DELAY_MS ? at - now : REFRESH_MAX_DELAY_MS;
    return kc_now_ns() + delay_ms * 1000000;
}

kc_err_t kc_oauth_refresher_new(const kc_conf_t *conf, kc_oauth_refresher_t **out, kc_error_t *err)
{
    *out = NULL;
    const char *proto = kc_conf_str(conf, KC_CONF_SECURITY_PROTOCOL);
    if (strncmp(proto, "SASL_", 5) != 0 ||
        strcmp(kc_conf_str(conf, KC_CONF_SASL_MECHANISM), "OAUTHBEARER") != 0)
        return KC_OK;
    bool oidc = strcmp(kc_conf_str(conf, KC_CONF_SASL_OAUTHBEARER_METHOD), "oidc") == 0;
    if (!oidc && !conf->oauth_cb)
        return kc_fail(err, KC_ERR_CONFIG,
                       "sasl.mechanism=OAUTHBEARER needs a token source: "
                       "sasl.oauthbearer.method=oidc, or kc_conf_set_oauthbearer_token_cb");
    kc_oauth_refresher_t *r = calloc(1, sizeof *r);
    if (!r)
        return kc_fail(err, KC_ERR_NOMEM, "SASL OAUTHBEARER: out of memory");
    pthread_mutex_init(&r->mu, NULL);
    kc_cond_init_monotonic(&r->cv);
    kc_oauth_refresh_conf(conf, &r->rc);
    r->rng = (uint64_t)kc_now_ns() ^ (uint64_t)(uintptr_t)r ^ 0x9e3779b97f4a7c15ull;
    kc_err_t rc = kc_oauth_slot_new(&r->slot, err);
    if (rc == KC_OK && oidc) {
        const char *ca = kc_conf_str(conf, KC_CONF_HTTPS_CA_LOCATION);
        kc_oidc_conf_t oc = {.url = kc_conf_str(conf, KC_CONF_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL),
                             .client_id = kc_conf_str(conf, KC_CONF_SASL_OAUTHBEARER_CLIENT_ID),
                             .client_secret =
                                 kc_conf_str(conf, KC_CONF_SASL_OAUTHBEARER_CLIENT_SECRET),
                             .scope = kc_conf_str(conf, KC_CONF_SASL_OAUTHBEARER_SCOPE),
                             /* The brokers' CA rules by default: one bundle usually signs both. */
                             .ca_location = *ca ? ca : kc_conf_str(conf, KC_CONF_SSL_CA_LOCATION),
                             .extensions = kc_conf_str(conf, KC_CONF_SASL_OAUTHBEARER_EXTENSIONS)};
        rc = kc_oidc_new(&oc, &r->oidc, err);
    } else if (rc == KC_OK) {
        r->cb = conf->oauth_cb;
        r->cb_opaque = conf->oauth_opaque;
    }
    kc_oauth_token_t t = {0};
    if (rc == KC_OK)
        rc = fetch(r, &t, err);
    if (rc != KC_OK) {
        kc_oauth_refresher_free(r);
        return rc;
    }
    put(r, &t);
    *out = r;
    return KC_OK;
}

static void *refresher_main(void *arg)
{
    kc_oauth_refresher_t *r = arg;
    kc_thread_name("kc-oauth");
    kc_log_bind(r->log);
    int64_t retry_ms = RETRY_FIRST_MS;
    int64_t due_ns = refresh_due_ns(r);
    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        if (kc_now_ns() < due_ns) {
            struct timespec ts = {.tv_sec = due_ns / 1000000000, .tv_nsec = due_ns % 1000000000};
            pthread_cond_timedwait(&r->cv, &r->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&r->mu);
        kc_oauth_token_t t = {0};
        kc_error_t e = {0};
        kc_err_t rc = fetch(r, &t, &e);
        int64_t now = kc_wall_ms();
        if (rc == KC_OK) {
            int64_t life_s = (t.expiry_ms - now) / 1000;
            put(r, &t);
            retry_ms = RETRY_FIRST_MS;
            due_ns = refresh_due_ns(r);
            kc_log(KC_LOG_INFO, "oauth", "SASL OAUTHBEARER token refreshed, valid for %llds",
                   (long long)life_s);
        } else {
            kc_oauth_slot_fail(r->slot, &e);
            int64_t left = r->expiry_ms - now;
            kc_log(left > 0 ? KC_LOG_WARN : KC_LOG_ERROR, "oauth",
                   "%s (the current token %s %llds; retrying in %llds)", e.msg,
                   left > 0 ? "expires in" : "expired", (long long)(left > 0 ? left : -left) / 1000,
                   (long long)retry_ms / 1000);
            due_ns = kc_now_ns() + retry_ms * 1000000;
            retry_ms = retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : retry_ms * 2;
        }
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

kc_err_t kc_oauth_refresher_start(kc_oauth_refresher_t *r, const kc_logger_t *log, kc_error_t *err)
{
    r->log = log;
    if (pthread_create(&r->th, NULL, refresher_main, r) != 0)
        return kc_fail(err, KC_ERR_SYSTEM, "SASL OAUTHBEARER: pthread_create failed");
    r->started = true;
    return KC_OK;
}

kc_oauth_slot_t *kc_oauth_refresher_slot(kc_oauth_refresher_t *r)
{
    return r ? r->slot : NULL;
}

void kc_oauth_refresher_free(kc_oauth_refresher_t *r)
{
    if (!r)
        return;
    if (r->started) {
        pthread_mutex_lock(&r->mu);
        r->stop = true;
        pthread_cond_signal(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->th, NULL);
    }
    kc_oidc_free(r->oidc);
    kc_oauth_slot_free(r->slot);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}
