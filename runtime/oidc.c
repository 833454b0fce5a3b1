/* OIDC client credentials over libcurl (see oidc.h). Owner: the token refresher. */
#include "oidc.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "base/clock.h"
#include "base/dynlib.h"
#include "sasl_oauthbearer.h"

#define OIDC_MAX_BODY      (1 << 20) /* an answer larger than this is not a token response */
#define OIDC_CONNECT_MS    10000
#define OIDC_TOTAL_MS      30000
#define OIDC_MAX_EXPIRES_S (10LL * 365 * 86400)

struct kc_oidc {
    char *url, *client_id, *client_secret, *scope, *ca_location;
    char **kv; /* extensions sent with every token */
    size_t n_kv;
};

/* libcurl, loaded when the first OIDC client is made (base/dynlib.h). */
#define CURL_SYMS(X)                                                                               \
    X(global_init, curl_global_init)                                                               \
    X(easy_init, curl_easy_init)                                                                   \
    X(easy_escape, curl_easy_escape)                                                               \
    X(easy_setopt, curl_easy_setopt)                                                               \
    X(easy_perform, curl_easy_perform)                                                             \
    X(easy_getinfo, curl_easy_getinfo)                                                             \
    X(easy_strerror, curl_easy_strerror)                                                           \
    X(easy_cleanup, curl_easy_cleanup)                                                             \
    X(slist_append, curl_slist_append)                                                             \
    X(slist_free_all, curl_slist_free_all)                                                         \
    X(free, curl_free)
static struct {
    CURL_SYMS(KC_DYNLIB_FIELD)
} lc;
static const char *const curl_names[] = {CURL_SYMS(KC_DYNLIB_NAME)};
static kc_dynlib_t curl_lib = KC_DYNLIB("libcurl.so.4", "libcurl4",
                                        "SASL OAUTHBEARER's token endpoint (sasl.oauthbearer."
                                        "token.endpoint.url)",
                                        curl_names, lc);

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init(void)
{
    curl_init_rc = lc.global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

static void wipe_str(char *p)
{
    if (p) {
        OPENSSL_cleanse(p, strlen(p));
        free(p);
    }
}

void kc_oidc_free(kc_oidc_t *o)
{
    if (!o)
        return;
    free(o->url);
    free(o->client_id);
    wipe_str(o->client_secret);
    free(o->scope);
    free(o->ca_location);
    kc_oauthbearer_kv_free(o->kv, o->n_kv);
    free(o);
}

kc_err_t kc_oidc_new(const kc_oidc_conf_t *c, kc_oidc_t **out, kc_error_t *err)
{
    *out = NULL;
    if (kc_dynlib_load(&curl_lib, err) != KC_OK)
        return KC_ERR_UNSUPPORTED;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return kc_fail(err, KC_ERR_SYSTEM, "SASL OAUTHBEARER: libcurl did not initialise: %s",
                       lc.easy_strerror(curl_init_rc));
    kc_oidc_t *o = calloc(1, sizeof *o);
    if (!o)
        return kc_fail(err, KC_ERR_NOMEM, "SASL OAUTHBEARER: out of memory");
    o->url = dup_or_null(c->url);
    o->client_id = dup_or_null(c->client_id);
    o->client_secret = dup_or_null(c->client_secret);
    o->scope = dup_or_null(c->scope);
    o->ca_location = dup_or_null(c->ca_location);
    if (!o->url || !o->client_id || !o->client_secret) {
        kc_oidc_free(o);
        return kc_fail(err, KC_ERR_CONFIG,
                       "SASL OAUTHBEARER: OIDC needs a token endpoint URL, a client id and a "
                       "client secret");
    }
    kc_err_t rc = kc_oauthbearer_extensions_parse(c->extensions, &o->kv, &o->n_kv, err);
    if (rc != KC_OK) {
        kc_oidc_free(o);
        return rc;
    }
    *out = o;
    return KC_OK;
}

/* ---- the answer ---- */

/* base64url (RFC 4648 5, unpadded or padded) into a malloc'd NUL-terminated buffer. */
static char *b64url_decode(const char *s, size_t n, size_t *out_len)
{
    while (n && s[n - 1] == '=')
        n--;
    if (n % 4 == 1 || n > OIDC_MAX_BODY)
        return NULL;
    size_t padded = (n + 3) / 4 * 4;
    char *t = malloc(padded + 1);
    char *o = malloc(padded / 4 * 3 + 1);
    if (!t || !o) {
        free(t);
        free(o);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '-')
            c = '+';
        else if (c == '_')
            c = '/';
        else if (!isalnum((unsigned char)c)) {
            free(t);
            free(o);
            return NULL;
        }
        t[i] = c;
    }
    for (size_t i = n; i < padded; i++)
        t[i] = '=';
    t[padded] = '\0';
    int r = padded ? EVP_DecodeBlock((unsigned char *)o, (unsigned char *)t, (int)padded) : 0;
    free(t);
    if (r < 0) {
        free(o);
        return NULL;
    }
    size_t len = (size_t)r - (padded - n); /* EVP_DecodeBlock counts padding as zero bytes */
    o[len] = '\0';
    *out_len = len;
    return o;
}

/* A JWT's payload claims exp and sub, when the token is a JWT (three base64url parts) whose
 * payload is a JSON object. Not verified: the broker verifies; the client only needs to know
 * when to refresh. *exp_ms stays -1 and *sub NULL (malloc'd otherwise) when absent. */
static void jwt_claims(const char *tok, int64_t *exp_ms, char **sub)
{
    *exp_ms = -1;
    *sub = NULL;
    const char *d1 = strchr(tok, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d1 || !d2 || strchr(d2 + 1, '.'))
        return;
    size_t len = 0;
    char *payload = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &len);
    if (!payload)
        return;
    json_t *o = json_loadb(payload, len, JSON_REJECT_DUPLICATES, NULL);
    free(payload);
    if (!json_is_object(o)) {
        json_decref(o);
        return;
    }
    json_t *e = json_object_get(o, "exp");
    if (json_is_number(e)) {
        double v = json_number_value(e);
        if (v > 0 && v < 1e13)
            *exp_ms = (int64_t)(v * 1000.0);
    }
    json_t *s = json_object_get(o, "sub");
    if (json_is_string(s) && json_string_length(s) > 0 && json_string_length(s) < 256)
        *sub = strdup(json_string_value(s));
    json_decref(o);
}

kc_err_t kc_oidc_parse_response(const char *body, size_t n, int64_t now_wall_ms, const char *url,
                                const char *client_id, kc_oauth_token_t *out, kc_error_t *err)
{
    memset(out, 0, sizeof *out);
    json_t *o = json_loadb(body, n, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return kc_fail(err, KC_ERR_MALFORMED,
                       "SASL OAUTHBEARER: token endpoint %s answered %zu bytes that are not a "
                       "JSON object",
                       url, n);
    }
    kc_err_t rc = KC_OK;
    json_t *at = json_object_get(o, "access_token");
    json_t *tt = json_object_get(o, "token_type");
    json_t *ei = json_object_get(o, "expires_in");
    const char *tok = json_is_string(at) ? json_string_value(at) : NULL;
    if (!tok || strlen(tok) != json_string_length(at) || !kc_oauthbearer_token_ok(tok))
        rc = kc_fail(err, KC_ERR_MALFORMED,
                     "SASL OAUTHBEARER: token endpoint %s answered without a usable "
                     "access_token (a string bearer token)",
                     url);
    else if (tt && (!json_is_string(tt) || strcasecmp(json_string_value(tt), "Bearer") != 0))
        rc = kc_fail(err, KC_ERR_MALFORMED,
                     "SASL OAUTHBEARER: token endpoint %s answered token_type '%.20s', not Bearer",
                     url, json_is_string(tt) ? json_string_value(tt) : "(not a string)");
    else if (ei && (!json_is_number(ei) || json_number_value(ei) <= 0 ||
                    json_number_value(ei) > (double)OIDC_MAX_EXPIRES_S))
        rc = kc_fail(err, KC_ERR_MALFORMED,
                     "SASL OAUTHBEARER: token endpoint %s answered an expires_in that is not a "
                     "number of seconds in 1..%lld",
                     url, (long long)OIDC_MAX_EXPIRES_S);
    if (rc != KC_OK) {
        json_decref(o);
        return rc;
    }
    int64_t exp_ms;
    char *sub;
    jwt_claims(tok, &exp_ms, &sub);
    if (exp_ms < 0 && ei)
        exp_ms = now_wall_ms + (int64_t)(json_number_value(ei) * 1000.0);
    if (exp_ms < 0) {
        free(sub);
        json_decref(o);
        return kc_fail(err, KC_ERR_MALFORMED,
                       "SASL OAUTHBEARER: token endpoint %s answered a token without an expiry "
                       "(neither expires_in nor a JWT exp)",
                       url);
    }
    if (exp_ms <= now_wall_ms) {
        free(sub);
        json_decref(o);
        return kc_fail(err, KC_ERR_AUTH,
                       "SASL OAUTHBEARER: token endpoint %s answered a token that expired %lld ms "
                       "ago (is this host's clock right?)",
                       url, (long long)(now_wall_ms - exp_ms));
    }
    out->value = strdup(tok);
    out->principal = sub ? sub : strdup(client_id && *client_id ? client_id : "unknown");
    out->expiry_ms = exp_ms;
    json_decref(o);
    if (!out->value || !out->principal) {
        kc_oauth_token_clear(out);
        return kc_fail(err, KC_ERR_NOMEM, "SASL OAUTHBEARER: out of memory");
    }
    return KC_OK;
}

/* ---- the request ---- */

typedef struct body {
    char *p;
    size_t n;
    bool too_big;
} body_t;

static size_t on_data(char *data, size_t size, size_t nmemb, void *opaque)
{
    body_t *b = opaque;
    size_t k = size * nmemb;
    if (b->n + k > OIDC_MAX_BODY) {
        b->too_big = true;
        return 0; /* curl aborts the transfer */
    }
    char *np = realloc(b->p, b->n + k + 1);
    if (!np)
        return 0;
    memcpy(np + b->n, data, k);
    b->p = np;
    b->n += k;
    b->p[b->n] = '\0';
    return k;
}

/* "<error>[: <error_description>]" from an RFC 6749 5.2 error answer, printable ASCII, or "". */
static void error_text(const char *body, size_t n, char *out, size_t cap)
{
    out[0] = '\0';
    json_t *o = body ? json_loadb(body, n, 0, NULL) : NULL;
    const char *e = json_is_object(o) ? json_string_value(json_object_get(o, "error")) : NULL;
    const char *d =
        json_is_object(o) ? json_string_value(json_object_get(o, "error_description")) : NULL;
    if (e)
        snprintf(out, cap, "%.60s%s%.120s", e, d ? ": " : "", d ? d : "");
    for (char *p = out; *p; p++)
        if (*p < 0x20 || *p > 0x7e)
            *p = '?';
    json_decref(o);
}

kc_err_t kc_oidc_fetch(kc_oidc_t *o, kc_oauth_token_t *out, kc_error_t *err)
{
    memset(out, 0, sizeof *out);
    CURL *h = lc.easy_init();
    if (!h)
        return kc_fail(err, KC_ERR_NOMEM, "SASL OAUTHBEARER: curl_easy_init failed");
    kc_err_t rc = KC_OK;
    char *post = NULL, *uid = NULL, *usec = NULL, *scope = NULL;
    body_t b = {0};
    char cerr[CURL_ERROR_SIZE] = "";
    /* RFC 6749 2.3.1: the id and the secret are form-urlencoded before Basic encoding. */
    uid = lc.easy_escape(h, o->client_id, 0);
    usec = lc.easy_escape(h, o->client_secret, 0);
    scope = o->scope ? lc.easy_escape(h, o->scope, 0) : NULL;
    size_t plen = 64 + (scope ? strlen(scope) : 0);
    post = malloc(plen);
    if (!uid || !usec || (o->scope && !scope) || !post) {
        rc = kc_fail(err, KC_ERR_NOMEM, "SASL OAUTHBEARER: out of memory");
        goto done;
    }
    snprintf(post, plen, "grant_type=client_credentials%s%s", scope ? "&scope=" : "",
             scope ? scope : "");
    lc.easy_setopt(h, CURLOPT_URL, o->url);
    lc.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
    lc.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    lc.easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM in a multi-threaded process */
    lc.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)OIDC_CONNECT_MS);
    lc.easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)OIDC_TOTAL_MS);
    lc.easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    lc.easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    if (o->ca_location)
        lc.easy_setopt(h, CURLOPT_CAINFO, o->ca_location);
    lc.easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    lc.easy_setopt(h, CURLOPT_USERNAME, uid);
    lc.easy_setopt(h, CURLOPT_PASSWORD, usec);
    lc.easy_setopt(h, CURLOPT_POSTFIELDS, post);
    lc.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    lc.easy_setopt(h, CURLOPT_WRITEDATA, &b);
    lc.easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    struct curl_slist *hdr = lc.slist_append(NULL, "Accept: application/json");
    lc.easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    CURLcode cc = lc.easy_perform(h);
    lc.slist_free_all(hdr);
    long status = 0;
    lc.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK) {
        /* curl's text names the host and the TLS or socket failure; it never holds the
         * credentials (they travel in a header curl does not echo). */
        rc = kc_fail(err, b.too_big ? KC_ERR_MALFORMED : KC_ERR_TRANSPORT,
                     "SASL OAUTHBEARER: token endpoint %s: %s", o->url,
                     b.too_big ? "answer larger than 1 MiB"
                               : (cerr[0] ? cerr : lc.easy_strerror(cc)));
    } else if (status != 200) {
        char why[200];
        error_text(b.p, b.n, why, sizeof why);
        rc = kc_fail(
            err, status == 400 || status == 401 || status == 403 ? KC_ERR_AUTH : KC_ERR_TRANSPORT,
            "SASL OAUTHBEARER: token endpoint %s refused client '%.80s': HTTP %ld%s%s", o->url,
            o->client_id, status, why[0] ? ": " : "", why);
    } else {
        rc = kc_oidc_parse_response(b.p ? b.p : "", b.n, kc_wall_ms(), o->url, o->client_id, out,
                                    err);
    }
    if (rc == KC_OK && o->n_kv) {
        out->kv = calloc(o->n_kv, sizeof *out->kv);
        for (size_t i = 0; out->kv && i < o->n_kv; i++)
            if (!(out->kv[out->n_kv++] = strdup(o->kv[i])))
                break;
        if (!out->kv || out->n_kv != o->n_kv || !out->kv[o->n_kv - 1]) {
            kc_oauth_token_clear(out);
            rc = kc_fail(err, KC_ERR_NOMEM, "SASL OAUTHBEARER: out of memory");
        }
    }
done:
    if (b.p) {
        OPENSSL_cleanse(b.p, b.n); /* held the token */
        free(b.p);
    }
    if (usec) {
        OPENSSL_cleanse(usec, strlen(usec));
        lc.free(usec);
    }
    lc.free(uid);
    lc.free(scope);
    free(post);
    lc.easy_cleanup(h);
    return rc;
}
