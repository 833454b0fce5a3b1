/* SASL client state machines: RFC 7677's vector, Kafka's ScramFormatter, a server-side check. */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "proto/kafka_errors.h"
#include "sasl.h"
#include "sasl_kafka.h"

/* RFC 7677 §3. */
#define RFC_CNONCE "rOprNGfwEbeRWgbNEkqO"
#define RFC_SFIRST                                                                                 \
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
#define RFC_CFINAL                                                                                 \
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+"               \
    "Ute9ytag9zjfMHgsq"                                                                            \
    "mmiz7AndVQ="
#define RFC_SFINAL "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

/* SCRAM-SHA-512 with a user name that needs escaping and a non-ASCII password. Expected values
 * were produced by Kafka 4.1.1's ScramFormatter (tests/interop/ScramXcheck.java; the interop
 * script scram_xcheck.test.sh recomputes them and passes them in KC_SCRAM512_XCHECK). */
#define X_USER   "al,ice="
#define X_PASS   "p@ss w\xc3\xb6rd"
#define X_CNONCE "fyko+d2lbbFgONRv9qkxdawL"
#define X_SNONCE "3rfcNHYJY1ZVvWVs7j"
#define X_SALT   "QSXCR+Q6sek8bf92"
#define X_CFINAL                                                                                   \
    "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=eoqi+"                                  \
    "TfVu4RHKm62mEqqzc1XsOhERKtp47aRxj4"                                                           \
    "oMhWRRkTbIgweTD/vDEd7wyBB9ieZyWDuBoPBlAtlzTSAHA=="
#define X_SFINAL                                                                                   \
    "v=4p7QXjvUxjvBoBiXpiFGFC9FYOXKfePZAJQmaYkqGUjn+KoFmywIo2ltKN1j3/b8NRwaaL6KWC7lZi7xPMJ9uA=="

static kc_sasl_t *mk(kc_sasl_mech_t m, const char *u, const char *p, const char *nonce)
{
    kc_sasl_t *s = NULL;
    kc_error_t e;
    assert_int_equal(kc_sasl_new(m, u, p, &s, &e), KC_OK);
    if (nonce)
        assert_int_equal(kc_sasl__set_nonce_for_test(s, nonce, &e), KC_OK);
    return s;
}

static kc_err_t step_str(kc_sasl_t *s, const char *in, char *out, size_t cap, kc_error_t *e)
{
    const uint8_t *o;
    size_t n;
    kc_err_t rc = kc_sasl_step(s, (const uint8_t *)in, in ? strlen(in) : 0, &o, &n, e);
    out[0] = '\0';
    if (rc == KC_OK && o) {
        assert_true(n < cap);
        memcpy(out, o, n);
        out[n] = '\0';
    }
    return rc;
}

static void rfc7677_vector_full_exchange(void **state)
{
    (void)state;
    kc_sasl_t *s = mk(KC_SASL_SCRAM_SHA_256, "user", "pencil", RFC_CNONCE);
    char out[512];
    kc_error_t e;
    assert_int_equal(step_str(s, NULL, out, sizeof out, &e), KC_OK);
    assert_string_equal(out, "n,,n=user,r=" RFC_CNONCE);
    assert_int_equal(step_str(s, RFC_SFIRST, out, sizeof out, &e), KC_OK);
    assert_string_equal(out, RFC_CFINAL);
    assert_false(kc_sasl_done(s));
    assert_int_equal(step_str(s, RFC_SFINAL, out, sizeof out, &e), KC_OK);
    assert_true(kc_sasl_done(s));
    assert_string_equal(out, "");
    /* A finished exchange does not step again. */
    assert_int_equal(step_str(s, RFC_SFINAL, out, sizeof out, &e), KC_ERR_STATE);
    kc_sasl_free(s);
}

static void tampered_server_signature_is_auth_error(void **state)
{
    (void)state;
    kc_sasl_t *s = mk(KC_SASL_SCRAM_SHA_256, "user", "pencil", RFC_CNONCE);
    char out[512], bad[] = RFC_SFINAL;
    kc_error_t e;
    bad[5] = bad[5] == 'A' ? 'B' : 'A';
    assert_int_equal(step_str(s, NULL, out, sizeof out, &e), KC_OK);
    assert_int_equal(step_str(s, RFC_SFIRST, out, sizeof out, &e), KC_OK);
    assert_int_equal(step_str(s, bad, out, sizeof out, &e), KC_ERR_AUTH);
    assert_non_null(strstr(e.msg, "server signature"));
    assert_false(kc_sasl_done(s));
    kc_sasl_free(s);
}

static void server_error_and_wrong_length_signature(void **state)
{
    (void)state;
    static const char *finals[] = {"e=invalid-proof", "v=AAAA", "x=1"};
    static const kc_err_t want[] = {KC_ERR_AUTH, KC_ERR_AUTH, KC_ERR_MALFORMED};
    for (int i = 0; i < 3; i++) {
        kc_sasl_t *s = mk(KC_SASL_SCRAM_SHA_256, "user", "pencil", RFC_CNONCE);
        char out[512];
        kc_error_t e;
        assert_int_equal(step_str(s, NULL, out, sizeof out, &e), KC_OK);
        assert_int_equal(step_str(s, RFC_SFIRST, out, sizeof out, &e), KC_OK);
        assert_int_equal(step_str(s, finals[i], out, sizeof out, &e), want[i]);
        if (i == 0)
            assert_non_null(strstr(e.msg, "invalid-proof"));
        kc_sasl_free(s);
    }
}

static void server_first_is_checked(void **state)
{
    (void)state;
    static const struct {
        const char *sfirst;
        kc_err_t want;
        const char *msg;
    } cases[] = {
        /* nonce that does not start with ours */
        {"r=XOprNGfwEbeRWgbNEkqO123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", KC_ERR_AUTH, "nonce"},
        /* nonce equal to ours: the server added nothing */
        {"r=" RFC_CNONCE ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", KC_ERR_AUTH, "nonce"},
        {"r=" RFC_CNONCE "x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095", KC_ERR_AUTH, "4095 iterations"},
        {"r=" RFC_CNONCE "x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999999", KC_ERR_MALFORMED, "iter"},
        {"r=" RFC_CNONCE "x,s=W22Za!0SNY7soEsUEjb6gQ==,i=4096", KC_ERR_MALFORMED, "salt"},
        {"r=" RFC_CNONCE "x,i=4096", KC_ERR_MALFORMED, "r=,s=,i="},
        {"m=ext,r=" RFC_CNONCE "x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", KC_ERR_AUTH, "extension"},
        {"", KC_ERR_MALFORMED, "r=,s=,i="},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kc_sasl_t *s = mk(KC_SASL_SCRAM_SHA_256, "user", "pencil", RFC_CNONCE);
        char out[512];
        kc_error_t e;
        assert_int_equal(step_str(s, NULL, out, sizeof out, &e), KC_OK);
        assert_int_equal(step_str(s, cases[i].sfirst, out, sizeof out, &e), cases[i].want);
        if (!strstr(e.msg, cases[i].msg))
            fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].msg);
        assert_string_equal(out, "");
        kc_sasl_free(s);
    }
}

/* ---- a SCRAM server, written here with OpenSSL primitives, as a broker verifies a proof ---- */

struct server_creds {
    uint8_t stored_key[64], server_key[64];
    size_t dl;
};

static void server_make_creds(const EVP_MD *md, const char *pw, const uint8_t *salt, size_t sl,
                              int it, struct server_creds *c)
{
    uint8_t salted[64], ck[64];
    unsigned int n;
    c->dl = (size_t)EVP_MD_get_size(md);
    assert_int_equal(
        PKCS5_PBKDF2_HMAC(pw, (int)strlen(pw), salt, (int)sl, it, md, (int)c->dl, salted), 1);
    assert_non_null(HMAC(md, salted, (int)c->dl, (const uint8_t *)"Client Key", 10, ck, &n));
    assert_int_equal(EVP_Digest(ck, c->dl, c->stored_key, &n, md, NULL), 1);
    assert_non_null(
        HMAC(md, salted, (int)c->dl, (const uint8_t *)"Server Key", 10, c->server_key, &n));
}

/* Verifies client-final the way RFC 5802 §3 tells the server to: recover ClientKey from the proof
 * and compare its hash with StoredKey. Writes the server-final message into sfinal. */
static bool server_verify(const EVP_MD *md, const struct server_creds *c, const char *auth_msg,
                          const char *proof_b64, char *sfinal)
{
    uint8_t proof[72], sig[64], ck[64], h[64];
    unsigned int n;
    int pl = EVP_DecodeBlock(proof, (const uint8_t *)proof_b64, (int)strlen(proof_b64));
    pl -= (int)((proof_b64[strlen(proof_b64) - 1] == '=') +
                (proof_b64[strlen(proof_b64) - 2] == '='));
    if (pl != (int)c->dl)
        return false;
    HMAC(md, c->stored_key, (int)c->dl, (const uint8_t *)auth_msg, strlen(auth_msg), sig, &n);
    for (size_t i = 0; i < c->dl; i++)
        ck[i] = proof[i] ^ sig[i];
    EVP_Digest(ck, c->dl, h, &n, md, NULL);
    if (CRYPTO_memcmp(h, c->stored_key, c->dl) != 0)
        return false;
    HMAC(md, c->server_key, (int)c->dl, (const uint8_t *)auth_msg, strlen(auth_msg), sig, &n);
    strcpy(sfinal, "v=");
    EVP_EncodeBlock((uint8_t *)sfinal + 2, sig, (int)c->dl);
    return true;
}

/* Runs a full exchange of `mech` against the test's server; returns the client's final rc. */
static kc_err_t run_against_server(kc_sasl_mech_t mech, const EVP_MD *md, const char *client_pw,
                                   const char *server_pw, kc_error_t *e)
{
    static const uint8_t salt[] = "0123456789abcdef";
    struct server_creds c;
    server_make_creds(md, server_pw, salt, 16, 4096, &c);
    kc_sasl_t *s = mk(mech, "bob", client_pw, NULL); /* random nonce */
    char cfirst[128], sfirst[512], cfinal[512], sfinal[256], auth[1024], salt64[64];
    assert_int_equal(step_str(s, NULL, cfirst, sizeof cfirst, e), KC_OK);
    assert_memory_equal(cfirst, "n,,n=bob,r=", 11);
    assert_int_equal(strlen(cfirst + 11), 32); /* 24 random bytes in base64 */
    EVP_EncodeBlock((uint8_t *)salt64, salt, 16);
    snprintf(sfirst, sizeof sfirst, "r=%sSRVnonce,s=%s,i=4096", cfirst + 11, salt64);
    assert_int_equal(step_str(s, sfirst, cfinal, sizeof cfinal, e), KC_OK);
    char *p = strstr(cfinal, ",p=");
    assert_non_null(p);
    snprintf(auth, sizeof auth, "%s,%s,%.*s", cfirst + 3, sfirst, (int)(p - cfinal), cfinal);
    if (!server_verify(md, &c, auth, p + 3, sfinal)) {
        kc_sasl_free(s);
        return kc_fail(e, KC_ERR_AUTH, "test server rejected the proof");
    }
    kc_err_t rc = step_str(s, sfinal, cfinal, sizeof cfinal, e);
    assert_true(rc != KC_OK || kc_sasl_done(s));
    kc_sasl_free(s);
    return rc;
}

static void scram_sha512_against_test_server(void **state)
{
    (void)state;
    kc_error_t e;
    assert_int_equal(
        run_against_server(KC_SASL_SCRAM_SHA_512, EVP_sha512(), "s3cret", "s3cret", &e), KC_OK);
    assert_int_equal(
        run_against_server(KC_SASL_SCRAM_SHA_256, EVP_sha256(), "s3cret", "s3cret", &e), KC_OK);
    /* The same server with another password must reject the proof: the check is not vacuous. */
    assert_int_equal(run_against_server(KC_SASL_SCRAM_SHA_512, EVP_sha512(), "wrong", "s3cret", &e),
                     KC_ERR_AUTH);
}

static void scram_sha512_matches_kafka_scram_formatter(void **state)
{
    (void)state;
    char cfinal[512] = X_CFINAL, sfinal[256] = X_SFINAL, out[512];
    const char *x = getenv("KC_SCRAM512_XCHECK"); /* "<client-final>\n<server-final>" from Java */
    if (x) {
        const char *nl = strchr(x, '\n');
        assert_non_null(nl);
        snprintf(cfinal, sizeof cfinal, "%.*s", (int)(nl - x), x);
        snprintf(sfinal, sizeof sfinal, "%s", nl + 1);
        sfinal[strcspn(sfinal, "\n")] = '\0';
        fprintf(stderr, "using Kafka ScramFormatter values from KC_SCRAM512_XCHECK\n");
    }
    kc_sasl_t *s = mk(KC_SASL_SCRAM_SHA_512, X_USER, X_PASS, X_CNONCE);
    kc_error_t e;
    assert_int_equal(step_str(s, NULL, out, sizeof out, &e), KC_OK);
    assert_string_equal(out, "n,,n=al=2Cice=3D,r=" X_CNONCE);
    assert_int_equal(
        step_str(s, "r=" X_CNONCE X_SNONCE ",s=" X_SALT ",i=4096", out, sizeof out, &e), KC_OK);
    assert_string_equal(out, cfinal);
    assert_int_equal(step_str(s, sfinal, out, sizeof out, &e), KC_OK);
    assert_true(kc_sasl_done(s));
    kc_sasl_free(s);
}

static void plain_message_and_reset(void **state)
{
    (void)state;
    kc_sasl_t *s = mk(KC_SASL_PLAIN, "alice", "pw", NULL);
    const uint8_t *o;
    size_t n;
    kc_error_t e;
    assert_int_equal(kc_sasl_step(s, NULL, 0, &o, &n, &e), KC_OK);
    assert_int_equal(n, 9);
    assert_memory_equal(o, "\0alice\0pw", 9);
    assert_int_equal(kc_sasl_step(s, (const uint8_t *)"x", 1, &o, &n, &e), KC_ERR_MALFORMED);
    kc_sasl_reset(s);
    assert_int_equal(kc_sasl_step(s, NULL, 0, &o, &n, &e), KC_OK);
    assert_int_equal(kc_sasl_step(s, NULL, 0, &o, &n, &e), KC_OK);
    assert_true(kc_sasl_done(s));
    assert_null(o);
    kc_sasl_free(s);
}

static void random_nonces_differ_and_reset_draws_new(void **state)
{
    (void)state;
    kc_sasl_t *s = mk(KC_SASL_SCRAM_SHA_256, "u", "p", NULL);
    char a[256], b[256];
    kc_error_t e;
    assert_int_equal(step_str(s, NULL, a, sizeof a, &e), KC_OK);
    kc_sasl_reset(s);
    assert_int_equal(step_str(s, NULL, b, sizeof b, &e), KC_OK);
    assert_string_not_equal(a, b);
    assert_null(strchr(a + 8, ','));
    kc_sasl_free(s);
}

static void mechanism_names(void **state)
{
    (void)state;
    kc_sasl_mech_t m;
    kc_error_t e;
    assert_int_equal(kc_sasl_mech_parse("SCRAM-SHA-512", &m, &e), KC_OK);
    assert_int_equal(m, KC_SASL_SCRAM_SHA_512);
    assert_int_equal(kc_sasl_mech_parse("GSSAPI", &m, &e), KC_OK);
    assert_int_equal(m, KC_SASL_GSSAPI);
    assert_string_equal(kc_sasl_mech_name(KC_SASL_GSSAPI), "GSSAPI");
    assert_int_equal(kc_sasl_mech_parse("gssapi", &m, &e), KC_ERR_CONFIG); /* case-sensitive */
    assert_non_null(strstr(e.msg, "GSSAPI"));                              /* lists it */
    kc_sasl_t *s = NULL;
    /* GSSAPI is not a kc_sasl_t state machine (io/sasl_gssapi.h). */
    assert_int_equal(kc_sasl_new(KC_SASL_GSSAPI, "u", "p", &s, &e), KC_ERR_INVALID_ARG);
    assert_null(s);
    assert_int_equal(kc_sasl_new(KC_SASL_PLAIN, "", "x", &s, &e), KC_ERR_CONFIG);
    assert_null(s);
    assert_int_equal(kc_sasl_auth_fail(&e, KC_SASL_SCRAM_SHA_256, "127.0.0.1:9093", "bad creds"),
                     KC_ERR_AUTH);
    assert_string_equal(
        e.msg, "SASL SCRAM-SHA-256 authentication to broker 127.0.0.1:9093 failed: bad creds");
}

static void reauth_window_is_85_to_95_percent(void **state)
{
    (void)state;
    assert_int_equal(kc_sasl_reauth_at_ms(1000, 0, 123), INT64_MAX);
    assert_int_equal(kc_sasl_reauth_at_ms(1000, 10000, 0), 1000 + 8500);
    assert_int_equal(kc_sasl_reauth_at_ms(1000, 10000, UINT32_MAX), 1000 + 9490);
    assert_int_equal(kc_sasl_reauth_at_ms(0, 10000, 1u << 31), 9000);
    assert_int_equal(kc_sasl_reauth_at_ms(INT64_MAX - 5, 10000, 0), INT64_MAX);
    for (uint32_t r = 0; r < 4000000000u; r += 7654321u) {
        int64_t t = kc_sasl_reauth_at_ms(0, 3600000, r);
        assert_true(t >= 3060000 && t < 3420000);
    }
    kc_sasl_t *s = mk(KC_SASL_PLAIN, "a", "b", NULL);
    assert_false(kc_sasl_reauth_due(s, INT64_MAX - 1));
    kc_sasl_set_session_lifetime(s, 5000, 10000, 0);
    assert_int_equal(kc_sasl_reauth_deadline_ms(s), 13500);
    assert_false(kc_sasl_reauth_due(s, 13499));
    assert_true(kc_sasl_reauth_due(s, 13500));
    kc_sasl_free(s);
}

static void kafka_responses_drive_the_exchange(void **state)
{
    (void)state;
    kc_error_t e;
    kc_str_t mechs[] = {kc_str("SCRAM-SHA-256"), kc_str("PLAIN")};
    kc_sasl_handshake_response_t hs;
    kc_sasl_handshake_response_init(&hs);
    hs.mechanisms.count = 2;
    hs.mechanisms.items = mechs;
    assert_int_equal(kc_sasl_handshake_result(&hs, KC_SASL_SCRAM_SHA_256, "b:1", &e), KC_OK);
    hs.error_code = KC_KAFKA_UNSUPPORTED_SASL_MECHANISM;
    assert_int_equal(kc_sasl_handshake_result(&hs, KC_SASL_SCRAM_SHA_512, "b:1", &e), KC_ERR_AUTH);
    assert_string_equal(e.msg, "SASL SCRAM-SHA-512 authentication to broker b:1 failed: "
                               "SaslHandshake: UNSUPPORTED_SASL_MECHANISM (broker enables: "
                               "SCRAM-SHA-256, PLAIN)");

    kc_sasl_t *s = mk(KC_SASL_SCRAM_SHA_256, "user", "pencil", RFC_CNONCE);
    const uint8_t *o;
    size_t n;
    assert_int_equal(kc_sasl_step(s, NULL, 0, &o, &n, &e), KC_OK);
    kc_sasl_authenticate_response_t r;
    kc_sasl_authenticate_response_init(&r);
    r.auth_bytes = (kc_bytes_t){(const uint8_t *)RFC_SFIRST, (int32_t)strlen(RFC_SFIRST)};
    assert_int_equal(kc_sasl_authenticate_result(s, &r, "b:1", 0, 0, &o, &n, &e), KC_OK);
    assert_int_equal(n, strlen(RFC_CFINAL));
    r.auth_bytes = (kc_bytes_t){(const uint8_t *)RFC_SFINAL, (int32_t)strlen(RFC_SFINAL)};
    r.session_lifetime_ms = 60000;
    assert_int_equal(kc_sasl_authenticate_result(s, &r, "b:1", 1000, 0, &o, &n, &e), KC_OK);
    assert_true(kc_sasl_done(s));
    assert_null(o);
    assert_int_equal(kc_sasl_reauth_deadline_ms(s), 1000 + 51000);

    /* re-authentication on the same object; this time the broker refuses */
    kc_sasl_reset(s);
    assert_int_equal(kc_sasl_step(s, NULL, 0, &o, &n, &e), KC_OK);
    r.error_code = KC_KAFKA_SASL_AUTHENTICATION_FAILED;
    r.error_message = kc_str("Authentication failed: Invalid user credentials");
    assert_int_equal(kc_sasl_authenticate_result(s, &r, "b:1", 0, 0, &o, &n, &e), KC_ERR_AUTH);
    assert_int_equal(e.kafka_code, KC_KAFKA_SASL_AUTHENTICATION_FAILED);
    assert_string_equal(e.msg, "SASL SCRAM-SHA-256 authentication to broker b:1 failed: "
                               "SASL_AUTHENTICATION_FAILED: Authentication failed: Invalid user "
                               "credentials");
    kc_sasl_free(s);

    /* a client-side failure (bad server signature) also names the broker, once */
    s = mk(KC_SASL_SCRAM_SHA_256, "user", "pencil", RFC_CNONCE);
    kc_sasl_authenticate_response_init(&r);
    assert_int_equal(kc_sasl_step(s, NULL, 0, &o, &n, &e), KC_OK);
    r.auth_bytes = (kc_bytes_t){(const uint8_t *)RFC_SFIRST, (int32_t)strlen(RFC_SFIRST)};
    assert_int_equal(kc_sasl_authenticate_result(s, &r, "b:1", 0, 0, &o, &n, &e), KC_OK);
    r.auth_bytes = (kc_bytes_t){(const uint8_t *)"v=AAAA", 6};
    assert_int_equal(kc_sasl_authenticate_result(s, &r, "b:1", 0, 0, &o, &n, &e), KC_ERR_AUTH);
    assert_string_equal(e.msg, "SASL SCRAM-SHA-256 authentication to broker b:1 failed: server "
                               "signature does not verify");
    kc_sasl_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc7677_vector_full_exchange),
        cmocka_unit_test(tampered_server_signature_is_auth_error),
        cmocka_unit_test(server_error_and_wrong_length_signature),
        cmocka_unit_test(server_first_is_checked),
        cmocka_unit_test(scram_sha512_against_test_server),
        cmocka_unit_test(scram_sha512_matches_kafka_scram_formatter),
        cmocka_unit_test(plain_message_and_reset),
        cmocka_unit_test(random_nonces_differ_and_reset_draws_new),
        cmocka_unit_test(mechanism_names),
        cmocka_unit_test(reauth_window_is_85_to_95_percent),
        cmocka_unit_test(kafka_responses_drive_the_exchange),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
