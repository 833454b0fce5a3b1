/*
 * SASL PLAIN and SCRAM-SHA-256/512 client state machines (see sasl.h for the call sequence).
 *
 * Owner: the network thread (the connection the exchange belongs to). No shared state: OpenSSL's
 * one-shot digest, HMAC, PBKDF2 and RAND calls are thread-safe.
 */
#include "sasl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "base/clock.h"
#include "sasl_oauthbearer.h"

/* Kafka's ScramMechanism bounds: brokers refuse to store credentials outside 4096..16384
 * iterations. RFC 7677 says a client should reject counts below 4096 (a downgrade by a server
 * that wants cheap brute force); the upper bound keeps a hostile server from making us spend
 * seconds of network-thread time in PBKDF2. */
#define SCRAM_MIN_ITERATIONS 4096
#define SCRAM_MAX_ITERATIONS 16384
#define NONCE_RANDOM_BYTES   24 /* base64 → 32 printable chars, none of them ',' */
#define NONCE_MAX            64

enum sasl_state { ST_START, ST_SENT_FIRST, ST_SENT_FINAL, ST_DONE, ST_FAILED };

struct kc_sasl {
    kc_sasl_mech_t mech;
    enum sasl_state state;
    char *user;
    size_t user_len;
    char *password;
    size_t password_len;
    char nonce[NONCE_MAX + 1]; /* our client nonce for this exchange */
    bool nonce_fixed;          /* set by the test hook: do not draw a random one */
    char *client_first_bare;   /* "n=<user>,r=<nonce>", part of the AuthMessage */
    uint8_t server_signature[EVP_MAX_MD_SIZE];
    size_t digest_len;
    uint8_t *out; /* the message kc_sasl_step() returned; may hold secrets (PLAIN) */
    size_t out_len;
    int64_t reauth_at_ms;
    kc_oauth_slot_t *slot;   /* OAUTHBEARER: where the token comes from (not owned) */
    char server_detail[160]; /* OAUTHBEARER: the server's error status, "" if none */
};

const char *kc_sasl_mech_name(kc_sasl_mech_t mech)
{
    switch (mech) {
    case KC_SASL_PLAIN:
        return "PLAIN";
    case KC_SASL_SCRAM_SHA_256:
        return "SCRAM-SHA-256";
    case KC_SASL_SCRAM_SHA_512:
        return "SCRAM-SHA-512";
    case KC_SASL_OAUTHBEARER:
        return "OAUTHBEARER";
    case KC_SASL_GSSAPI:
        return "GSSAPI";
    }
    return "UNKNOWN";
}

kc_err_t kc_sasl_mech_parse(const char *name, kc_sasl_mech_t *out, kc_error_t *err)
{
    static const kc_sasl_mech_t all[] = {KC_SASL_PLAIN, KC_SASL_SCRAM_SHA_256,
                                         KC_SASL_SCRAM_SHA_512, KC_SASL_OAUTHBEARER,
                                         KC_SASL_GSSAPI};
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(name, kc_sasl_mech_name(all[i])) == 0) {
            *out = all[i];
            return KC_OK;
        }
    }
    return kc_fail(err, KC_ERR_CONFIG,
                   "sasl.mechanism '%s' is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
                   "OAUTHBEARER, GSSAPI)",
                   name ? name : "(null)");
}

kc_sasl_mech_t kc_sasl_mech(const kc_sasl_t *s)
{
    return s->mech;
}

static void wipe_free(void *p, size_t len)
{
    if (p) {
        OPENSSL_cleanse(p, len);
        free(p);
    }
}

static void clear_out(kc_sasl_t *s)
{
    wipe_free(s->out, s->out_len);
    s->out = NULL;
    s->out_len = 0;
}

static char *dup_n(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, p, n);
        d[n] = '\0';
    }
    return d;
}

kc_err_t kc_sasl_new(kc_sasl_mech_t mech, const char *user, const char *password, kc_sasl_t **out,
                     kc_error_t *err)
{
    *out = NULL;
    if (mech != KC_SASL_PLAIN && mech != KC_SASL_SCRAM_SHA_256 && mech != KC_SASL_SCRAM_SHA_512)
        return kc_fail(err, KC_ERR_INVALID_ARG, "SASL: mechanism %s has no user and password",
                       kc_sasl_mech_name(mech));
    if (!user || !*user || !password)
        return kc_fail(err, KC_ERR_CONFIG, "SASL %s: sasl.username and sasl.password are required",
                       kc_sasl_mech_name(mech));
    kc_sasl_t *s = calloc(1, sizeof *s);
    if (!s)
        return kc_fail(err, KC_ERR_NOMEM, "SASL: out of memory");
    s->mech = mech;
    s->user_len = strlen(user);
    s->password_len = strlen(password);
    s->user = dup_n(user, s->user_len);
    s->password = dup_n(password, s->password_len);
    s->reauth_at_ms = INT64_MAX;
    s->digest_len = mech == KC_SASL_SCRAM_SHA_512 ? 64 : 32;
    if (!s->user || !s->password) {
        kc_sasl_free(s);
        return kc_fail(err, KC_ERR_NOMEM, "SASL: out of memory");
    }
    *out = s;
    return KC_OK;
}

kc_err_t kc_sasl_new_oauthbearer(kc_oauth_slot_t *slot, kc_sasl_t **out, kc_error_t *err)
{
    *out = NULL;
    if (!slot)
        return kc_fail(err, KC_ERR_CONFIG, "SASL OAUTHBEARER: no token source");
    kc_sasl_t *s = calloc(1, sizeof *s);
    if (!s)
        return kc_fail(err, KC_ERR_NOMEM, "SASL: out of memory");
    s->mech = KC_SASL_OAUTHBEARER;
    s->slot = slot;
    s->reauth_at_ms = INT64_MAX;
    *out = s;
    return KC_OK;
}

const char *kc_sasl_server_detail(const kc_sasl_t *s)
{
    return s->server_detail;
}

void kc_sasl_reset(kc_sasl_t *s)
{
    s->server_detail[0] = '\0';
    clear_out(s);
    wipe_free(s->client_first_bare, s->client_first_bare ? strlen(s->client_first_bare) : 0);
    s->client_first_bare = NULL;
    OPENSSL_cleanse(s->server_signature, sizeof s->server_signature);
    if (!s->nonce_fixed)
        OPENSSL_cleanse(s->nonce, sizeof s->nonce);
    s->state = ST_START;
}

void kc_sasl_free(kc_sasl_t *s)
{
    if (!s)
        return;
    kc_sasl_reset(s);
    wipe_free(s->user, s->user_len);
    wipe_free(s->password, s->password_len);
    OPENSSL_cleanse(s->nonce, sizeof s->nonce);
    free(s);
}

bool kc_sasl_done(const kc_sasl_t *s)
{
    return s->state == ST_DONE;
}

kc_err_t kc_sasl_auth_fail(kc_error_t *err, kc_sasl_mech_t mech, const char *broker,
                           const char *detail)
{
    return kc_fail(err, KC_ERR_AUTH, "SASL %s authentication to broker %s failed: %s",
                   kc_sasl_mech_name(mech), broker ? broker : "(unknown)",
                   detail && *detail ? detail : "no reason given");
}

static bool nonce_char_ok(unsigned char c)
{
    return c >= 0x21 && c <= 0x7e && c != ',';
}

kc_err_t kc_sasl__set_nonce_for_test(kc_sasl_t *s, const char *nonce, kc_error_t *err)
{
    size_t n = strlen(nonce);
    if (n == 0 || n > NONCE_MAX)
        return kc_fail(err, KC_ERR_INVALID_ARG, "SASL test nonce must be 1..%d bytes", NONCE_MAX);
    for (size_t i = 0; i < n; i++)
        if (!nonce_char_ok((unsigned char)nonce[i]))
            return kc_fail(err, KC_ERR_INVALID_ARG, "SASL test nonce has a bad character");
    memcpy(s->nonce, nonce, n + 1);
    s->nonce_fixed = true;
    return KC_OK;
}

/* ---- re-authentication clock (KIP-368) ---- */

int64_t kc_sasl_reauth_at_ms(int64_t authenticated_at_ms, int64_t session_lifetime_ms,
                             uint32_t random32)
{
    if (session_lifetime_ms <= 0)
        return INT64_MAX;
    /* 85% + random32/2^32 * 10%, in integer arithmetic: lifetime * (850 + r*100/2^32) / 1000. */
    int64_t permille = 850 + (int64_t)(((uint64_t)random32 * 100u) >> 32);
    int64_t after =
        session_lifetime_ms / 1000 * permille + session_lifetime_ms % 1000 * permille / 1000;
    if (after > INT64_MAX - authenticated_at_ms)
        return INT64_MAX;
    return authenticated_at_ms + after;
}

void kc_sasl_set_session_lifetime(kc_sasl_t *s, int64_t now_ms, int64_t session_lifetime_ms,
                                  uint32_t random32)
{
    s->reauth_at_ms = kc_sasl_reauth_at_ms(now_ms, session_lifetime_ms, random32);
}

int64_t kc_sasl_reauth_deadline_ms(const kc_sasl_t *s)
{
    return s->reauth_at_ms;
}

bool kc_sasl_reauth_due(const kc_sasl_t *s, int64_t now_ms)
{
    return s->reauth_at_ms != INT64_MAX && now_ms >= s->reauth_at_ms;
}

/* ---- PLAIN ---- */

static kc_err_t plain_step(kc_sasl_t *s, size_t in_len, kc_error_t *err)
{
    if (s->state == ST_START) {
        /* authzid (empty) NUL authcid NUL passwd */
        s->out_len = 1 + s->user_len + 1 + s->password_len;
        s->out = malloc(s->out_len);
        if (!s->out)
            return kc_fail(err, KC_ERR_NOMEM, "SASL PLAIN: out of memory");
        s->out[0] = 0;
        memcpy(s->out + 1, s->user, s->user_len);
        s->out[1 + s->user_len] = 0;
        memcpy(s->out + 2 + s->user_len, s->password, s->password_len);
        s->state = ST_SENT_FIRST;
        return KC_OK;
    }
    /* The broker answers a successful PLAIN authentication with empty auth bytes; a failure comes
     * as an error code in the SaslAuthenticate response, which the caller handles. */
    if (in_len != 0)
        return kc_fail(err, KC_ERR_MALFORMED, "SASL PLAIN: unexpected %zu-byte server message",
                       in_len);
    s->state = ST_DONE;
    return KC_OK;
}

/* ---- OAUTHBEARER ---- */

static kc_err_t oauthbearer_step(kc_sasl_t *s, const uint8_t *in, size_t in_len, kc_error_t *err)
{
    if (s->state == ST_START) {
        clear_out(s);
        /* The slot's token now: a re-authentication sends the refreshed one. */
        kc_err_t rc = kc_oauth_slot_message(s->slot, kc_wall_ms(), &s->out, &s->out_len, err);
        if (rc == KC_OK)
            s->state = ST_SENT_FIRST;
        return rc;
    }
    if (s->state == ST_SENT_FIRST) {
        clear_out(s);
        if (in_len == 0) { /* accepted */
            s->state = ST_DONE;
            return KC_OK;
        }
        /* RFC 7628 3.2.2: the server explains its refusal; we answer with \x01 and the broker
         * then fails the exchange, which the caller reports with this status. */
        kc_err_t rc =
            kc_oauthbearer_server_error(in, in_len, s->server_detail, sizeof s->server_detail, err);
        if (rc != KC_OK)
            return rc;
        s->out = malloc(1);
        if (!s->out)
            return kc_fail(err, KC_ERR_NOMEM, "SASL OAUTHBEARER: out of memory");
        s->out[0] = kc_oauthbearer_client_ack[0];
        s->out_len = 1;
        s->state = ST_SENT_FINAL;
        return KC_OK;
    }
    /* After our \x01 the broker must fail the exchange; an answer instead is a protocol error. */
    return kc_fail(err, KC_ERR_AUTH, "SASL OAUTHBEARER: server refused the token (%s)",
                   s->server_detail[0] ? s->server_detail : "no status");
}

/* ---- SCRAM helpers ---- */

static const EVP_MD *scram_md(const kc_sasl_t *s)
{
    return s->mech == KC_SASL_SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256();
}

/* Strict base64 decode of s[0..n) into out (cap bytes). Returns the decoded length or -1. */
static int b64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
    if (n == 0 || n % 4 != 0 || n / 4 * 3 > cap || n > INT_MAX)
        return -1;
    size_t pad = (s[n - 1] == '=') + (n > 1 && s[n - 2] == '=');
    for (size_t i = 0; i < n - pad; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/'))
            return -1;
    }
    int r = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
    return r < 0 ? -1 : r - (int)pad; /* EVP_DecodeBlock counts padding as zero bytes */
}

/* saslname: ',' and '=' in the user name are escaped as "=2C" and "=3D" (RFC 5802 §5.1). */
static char *saslname(const char *user, size_t len)
{
    char *o = malloc(len * 3 + 1), *w = o;
    if (!o)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (user[i] == ',') {
            memcpy(w, "=2C", 3);
            w += 3;
        } else if (user[i] == '=') {
            memcpy(w, "=3D", 3);
            w += 3;
        } else {
            *w++ = user[i];
        }
    }
    *w = '\0';
    return o;
}

static kc_err_t set_out_str(kc_sasl_t *s, char *str, kc_error_t *err)
{
    clear_out(s);
    if (!str)
        return kc_fail(err, KC_ERR_NOMEM, "SASL %s: out of memory", kc_sasl_mech_name(s->mech));
    s->out = (uint8_t *)str;
    s->out_len = strlen(str);
    return KC_OK;
}

static kc_err_t scram_first(kc_sasl_t *s, kc_error_t *err)
{
    if (!s->nonce_fixed) {
        uint8_t rnd[NONCE_RANDOM_BYTES];
        if (RAND_bytes(rnd, sizeof rnd) != 1)
            return kc_fail(err, KC_ERR_SYSTEM, "SASL %s: RAND_bytes failed",
                           kc_sasl_mech_name(s->mech));
        /* base64 of 24 bytes is 32 chars without padding, and never contains ','. */
        EVP_EncodeBlock((unsigned char *)s->nonce, rnd, sizeof rnd);
        OPENSSL_cleanse(rnd, sizeof rnd);
    }
    char *name = saslname(s->user, s->user_len);
    if (!name)
        return kc_fail(err, KC_ERR_NOMEM, "SASL: out of memory");
    size_t bare_len = 2 + strlen(name) + 3 + strlen(s->nonce);
    s->client_first_bare = malloc(bare_len + 1);
    char *msg = malloc(3 + bare_len + 1);
    if (!s->client_first_bare || !msg) {
        free(name);
        free(msg);
        return kc_fail(err, KC_ERR_NOMEM, "SASL: out of memory");
    }
    snprintf(s->client_first_bare, bare_len + 1, "n=%s,r=%s", name, s->nonce);
    free(name);
    /* gs2 header "n,,": no channel binding, no authzid. */
    snprintf(msg, 3 + bare_len + 1, "n,,%s", s->client_first_bare);
    kc_err_t rc = set_out_str(s, msg, err);
    if (rc == KC_OK)
        s->state = ST_SENT_FIRST;
    return rc;
}

/* Finds attribute `a` ("r", "s", "i") at the start of the ','-separated field at *p; returns its
 * value bounds and advances *p past the field (and its ','). */
static bool take_attr(const char **p, const char *end, char a, const char **v, size_t *vlen)
{
    const char *q = *p;
    if (end - q < 2 || q[0] != a || q[1] != '=')
        return false;
    q += 2;
    const char *comma = memchr(q, ',', (size_t)(end - q));
    const char *stop = comma ? comma : end;
    *v = q;
    *vlen = (size_t)(stop - q);
    *p = comma ? comma + 1 : end;
    return true;
}

/* HMAC(key, msg) with the mechanism's digest into out (digest_len bytes). */
static bool hmac(const kc_sasl_t *s, const uint8_t *key, size_t klen, const void *msg, size_t mlen,
                 uint8_t *out)
{
    unsigned int olen = 0;
    return HMAC(scram_md(s), key, (int)klen, msg, mlen, out, &olen) != NULL &&
           olen == s->digest_len;
}

/*
 * The RFC 5802 §3 key schedule. The AuthMessage ties the proof to this exchange's nonces, so a
 * recorded proof is useless for another exchange; ServerSignature lets us check the server knows
 * the StoredKey (it is not an impostor that just accepts anything).
 */
static kc_err_t scram_proof(kc_sasl_t *s, const uint8_t *salt, size_t salt_len, int iterations,
                            const char *auth_msg, uint8_t *proof, kc_error_t *err)
{
    uint8_t salted[EVP_MAX_MD_SIZE], client_key[EVP_MAX_MD_SIZE], stored_key[EVP_MAX_MD_SIZE];
    uint8_t client_sig[EVP_MAX_MD_SIZE], server_key[EVP_MAX_MD_SIZE];
    size_t dl = s->digest_len, alen = strlen(auth_msg);
    unsigned int slen = 0;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    /* Fuzz builds only (tests/CMakeLists.txt, KC_FUZZ): the count was parsed and bounds-checked
     * like any other; spending >= 4096 PBKDF2 rounds per input would cap the fuzzer at a few
     * hundred inputs a second without reaching any more parsing code. */
    iterations = 1;
#endif
    bool ok = PKCS5_PBKDF2_HMAC(s->password, (int)s->password_len, salt, (int)salt_len, iterations,
                                scram_md(s), (int)dl, salted) == 1 &&
              hmac(s, salted, dl, "Client Key", 10, client_key) &&
              EVP_Digest(client_key, dl, stored_key, &slen, scram_md(s), NULL) == 1 && slen == dl &&
              hmac(s, stored_key, dl, auth_msg, alen, client_sig) &&
              hmac(s, salted, dl, "Server Key", 10, server_key) &&
              hmac(s, server_key, dl, auth_msg, alen, s->server_signature);
    for (size_t i = 0; ok && i < dl; i++)
        proof[i] = client_key[i] ^ client_sig[i];
    OPENSSL_cleanse(salted, sizeof salted);
    OPENSSL_cleanse(client_key, sizeof client_key);
    OPENSSL_cleanse(stored_key, sizeof stored_key);
    OPENSSL_cleanse(client_sig, sizeof client_sig);
    OPENSSL_cleanse(server_key, sizeof server_key);
    if (!ok)
        return kc_fail(err, KC_ERR_SYSTEM, "SASL %s: OpenSSL key derivation failed",
                       kc_sasl_mech_name(s->mech));
    return KC_OK;
}

static kc_err_t scram_final(kc_sasl_t *s, const char *in, size_t n, kc_error_t *err)
{
    const char *mech = kc_sasl_mech_name(s->mech);
    const char *p = in, *end = in + n, *r, *salt_b64, *it;
    size_t r_len, salt_len, it_len;
    if (n >= 2 && in[0] == 'm' && in[1] == '=')
        return kc_fail(err, KC_ERR_AUTH, "SASL %s: server requires an unsupported extension", mech);
    if (!take_attr(&p, end, 'r', &r, &r_len) || !take_attr(&p, end, 's', &salt_b64, &salt_len) ||
        !take_attr(&p, end, 'i', &it, &it_len))
        return kc_fail(err, KC_ERR_MALFORMED,
                       "SASL %s: server-first-message is not r=,s=,i=", mech);
    /* The server's nonce must be ours plus its own part: otherwise this answer belongs to another
     * exchange (or an attacker replays one), and proving ourselves to it would be a mistake. */
    size_t cn = strlen(s->nonce);
    if (r_len <= cn || memcmp(r, s->nonce, cn) != 0)
        return kc_fail(err, KC_ERR_AUTH, "SASL %s: server nonce does not extend the client nonce",
                       mech);
    for (size_t i = 0; i < r_len; i++)
        if (!nonce_char_ok((unsigned char)r[i]))
            return kc_fail(err, KC_ERR_MALFORMED, "SASL %s: server nonce has a bad character",
                           mech);
    long iterations = 0;
    for (size_t i = 0; i < it_len; i++) {
        if (it[i] < '0' || it[i] > '9' || iterations > SCRAM_MAX_ITERATIONS)
            return kc_fail(err, KC_ERR_MALFORMED, "SASL %s: bad iteration count", mech);
        iterations = iterations * 10 + (it[i] - '0');
    }
    if (it_len == 0 || iterations < SCRAM_MIN_ITERATIONS || iterations > SCRAM_MAX_ITERATIONS)
        return kc_fail(err, KC_ERR_AUTH, "SASL %s: server asks for %ld iterations (allowed %d..%d)",
                       mech, iterations, SCRAM_MIN_ITERATIONS, SCRAM_MAX_ITERATIONS);
    uint8_t salt[256];
    int salt_n = b64_decode(salt_b64, salt_len, salt, sizeof salt);
    if (salt_n <= 0)
        return kc_fail(err, KC_ERR_MALFORMED, "SASL %s: salt is not base64", mech);

    /* client-final-message-without-proof: "c=biws,r=<nonce>" (biws = base64("n,,")). */
    size_t wp_len = 9 + r_len;
    size_t auth_len = strlen(s->client_first_bare) + 1 + n + 1 + wp_len;
    char *auth = malloc(auth_len + 1);
    size_t proof_b64_len = 4 * ((s->digest_len + 2) / 3);
    char *msg = malloc(wp_len + 3 + proof_b64_len + 1);
    if (!auth || !msg) {
        free(auth);
        free(msg);
        return kc_fail(err, KC_ERR_NOMEM, "SASL %s: out of memory", mech);
    }
    snprintf(msg, wp_len + 1, "c=biws,r=%.*s", (int)r_len, r);
    snprintf(auth, auth_len + 1, "%s,%.*s,%s", s->client_first_bare, (int)n, in, msg);
    uint8_t proof[EVP_MAX_MD_SIZE];
    kc_err_t rc = scram_proof(s, salt, (size_t)salt_n, (int)iterations, auth, proof, err);
    wipe_free(auth, auth_len);
    if (rc != KC_OK) {
        free(msg);
        return rc;
    }
    memcpy(msg + wp_len, ",p=", 3);
    EVP_EncodeBlock((unsigned char *)msg + wp_len + 3, proof, (int)s->digest_len);
    OPENSSL_cleanse(proof, sizeof proof);
    rc = set_out_str(s, msg, err);
    if (rc == KC_OK)
        s->state = ST_SENT_FINAL;
    return rc;
}

static kc_err_t scram_verify(kc_sasl_t *s, const char *in, size_t n, kc_error_t *err)
{
    const char *mech = kc_sasl_mech_name(s->mech);
    clear_out(s);
    if (n >= 2 && in[0] == 'e' && in[1] == '=') {
        const char *comma = memchr(in, ',', n);
        size_t vlen = (size_t)((comma ? comma : in + n) - in - 2);
        return kc_fail(err, KC_ERR_AUTH, "SASL %s: server says %.*s", mech,
                       (int)(vlen > 120 ? 120 : vlen), in + 2);
    }
    const char *p = in, *v;
    size_t vlen;
    if (!take_attr(&p, in + n, 'v', &v, &vlen))
        return kc_fail(err, KC_ERR_MALFORMED, "SASL %s: server-final-message has no v=", mech);
    uint8_t sig[EVP_MAX_MD_SIZE + 3];
    int sn = b64_decode(v, vlen, sig, sizeof sig);
    /* A server that cannot produce ServerSignature does not know our StoredKey: it is not the
     * broker we hold credentials for, so the session must not be used. */
    if (sn != (int)s->digest_len || CRYPTO_memcmp(sig, s->server_signature, s->digest_len) != 0)
        return kc_fail(err, KC_ERR_AUTH, "SASL %s: server signature does not verify", mech);
    s->state = ST_DONE;
    return KC_OK;
}

kc_err_t kc_sasl_step(kc_sasl_t *s, const uint8_t *in, size_t in_len, const uint8_t **out,
                      size_t *out_len, kc_error_t *err)
{
    *out = NULL;
    *out_len = 0;
    kc_err_t rc;
    if (s->state == ST_DONE || s->state == ST_FAILED)
        return kc_fail(err, KC_ERR_STATE, "SASL %s: exchange already %s",
                       kc_sasl_mech_name(s->mech), s->state == ST_DONE ? "complete" : "failed");
    if (s->state != ST_START && !in && in_len)
        return kc_fail(err, KC_ERR_INVALID_ARG, "SASL: NULL input");
    if (s->mech == KC_SASL_PLAIN) {
        rc = plain_step(s, in_len, err);
    } else if (s->mech == KC_SASL_OAUTHBEARER) {
        rc = oauthbearer_step(s, in, in_len, err);
    } else if (s->state == ST_START) {
        rc = scram_first(s, err);
    } else if (s->state == ST_SENT_FIRST) {
        rc = scram_final(s, (const char *)in, in_len, err);
    } else {
        rc = scram_verify(s, (const char *)in, in_len, err);
    }
    if (rc != KC_OK) {
        s->state = ST_FAILED;
        clear_out(s);
        return rc;
    }
    if (s->state != ST_DONE) {
        *out = s->out;
        *out_len = s->out_len;
    }
    return KC_OK;
}
