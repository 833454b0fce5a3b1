/* TLS material into an SSL_CTX (see tls_material.h). No state; application thread. */
#include "tls_material.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509v3.h>

static bool given(const char *s)
{
    return s && *s;
}

const char *kc_tls_ssl_reason(char *buf, size_t cap)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    if (r)
        snprintf(buf, cap, "%s", r);
    else if (e)
        ERR_error_string_n(e, buf, cap);
    else
        snprintf(buf, cap, "no OpenSSL error recorded");
    ERR_clear_error();
    return buf;
}

/* ---- trust ---- */

/* Every certificate of a PEM text into the store; the count added. */
static int add_pem_certs(X509_STORE *st, const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    int n = 0;
    X509 *x;
    while (b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        if (X509_STORE_add_cert(st, x) == 1)
            n++;
        X509_free(x);
    }
    BIO_free(b);
    ERR_clear_error(); /* the read that ends the loop leaves "no start line" */
    return n;
}

static kc_err_t load_trust(SSL_CTX *c, const kc_tls_conf_t *conf, kc_error_t *err)
{
    char r[160];
    const char *loc = conf->ca_location;
    if (!given(loc) && !given(conf->ca_pem)) {
        if (SSL_CTX_set_default_verify_paths(c) != 1)
            return kc_fail(err, KC_ERR_CONFIG,
                           "ssl.ca.location unset and the system CA store cannot be loaded: %s",
                           kc_tls_ssl_reason(r, sizeof r));
        return KC_OK;
    }
    if (given(loc)) {
        struct stat st;
        if (stat(loc, &st) != 0)
            return kc_fail(err, KC_ERR_CONFIG, "ssl.ca.location '%s': %s", loc, strerror(errno));
        bool dir = S_ISDIR(st.st_mode);
        if (SSL_CTX_load_verify_locations(c, dir ? NULL : loc, dir ? loc : NULL) != 1)
            return kc_fail(err, KC_ERR_CONFIG, "ssl.ca.location '%s': %s", loc,
                           kc_tls_ssl_reason(r, sizeof r));
    }
    if (given(conf->ca_pem) && add_pem_certs(SSL_CTX_get_cert_store(c), conf->ca_pem) == 0)
        return kc_fail(err, KC_ERR_CONFIG,
                       "ssl.ca.pem holds no PEM certificate that parses (expected one or more "
                       "-----BEGIN CERTIFICATE----- blocks)");
    return KC_OK;
}

/* Revocation lists (PEM, one or more per file) for the chain's issuers, and the check of the
 * broker's own certificate against them. As in librdkafka only the leaf is checked
 * (X509_V_FLAG_CRL_CHECK, not _ALL): a CRL for every intermediate is rarely at hand. */
static kc_err_t load_crl(SSL_CTX *c, const char *loc, kc_error_t *err)
{
    char r[160];
    if (!given(loc))
        return KC_OK;
    X509_STORE *st = SSL_CTX_get_cert_store(c);
    X509_LOOKUP *lu = X509_STORE_add_lookup(st, X509_LOOKUP_file());
    if (!lu)
        return kc_fail(err, KC_ERR_NOMEM, "ssl.crl.location: %s", kc_tls_ssl_reason(r, sizeof r));
    if (X509_load_crl_file(lu, loc, X509_FILETYPE_PEM) <= 0)
        return kc_fail(err, KC_ERR_CONFIG, "ssl.crl.location '%s': no PEM CRL could be read: %s",
                       loc, kc_tls_ssl_reason(r, sizeof r));
    X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK);
    return KC_OK;
}

/* ---- identity ---- */

struct pw_arg {
    const char *pw;
    bool asked;
};

static int key_password_cb(char *buf, int size, int rwflag, void *u)
{
    (void)rwflag;
    struct pw_arg *a = u;
    a->asked = true;
    if (!a->pw)
        return -1;
    size_t n = strlen(a->pw);
    if (n > (size_t)size)
        return -1;
    memcpy(buf, a->pw, n);
    return (int)n;
}

/* The certificate (and the chain after it) from a file or from PEM text. */
static kc_err_t load_cert(SSL_CTX *c, const kc_tls_conf_t *conf, kc_error_t *err)
{
    char r[160];
    if (given(conf->cert_location)) {
        if (SSL_CTX_use_certificate_chain_file(c, conf->cert_location) != 1)
            return kc_fail(err, KC_ERR_CONFIG, "ssl.certificate.location '%s': %s",
                           conf->cert_location, kc_tls_ssl_reason(r, sizeof r));
        return KC_OK;
    }
    BIO *b = BIO_new_mem_buf(conf->cert_pem, -1);
    X509 *x = b ? PEM_read_bio_X509_AUX(b, NULL, NULL, NULL) : NULL;
    if (!x || SSL_CTX_use_certificate(c, x) != 1) {
        X509_free(x);
        BIO_free(b);
        return kc_fail(err, KC_ERR_CONFIG,
                       "ssl.certificate.pem does not parse as a PEM certificate: %s",
                       kc_tls_ssl_reason(r, sizeof r));
    }
    X509_free(x);
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL)
        if (SSL_CTX_add0_chain_cert(c, x) != 1) /* takes x on success */
            X509_free(x);
    BIO_free(b);
    ERR_clear_error(); /* the end of the text */
    return KC_OK;
}

/* The key from a file or from PEM text; decrypted here, once; the password is not kept. */
static kc_err_t load_key(SSL_CTX *c, const kc_tls_conf_t *conf, kc_error_t *err)
{
    char r[160];
    bool file = given(conf->key_location);
    const char *what = file ? "ssl.key.location" : "ssl.key.pem";
    BIO *b = file ? BIO_new_file(conf->key_location, "r") : BIO_new_mem_buf(conf->key_pem, -1);
    if (!b)
        return file ? kc_fail(err, KC_ERR_CONFIG, "ssl.key.location '%s': %s", conf->key_location,
                              kc_tls_ssl_reason(r, sizeof r))
                    : kc_fail(err, KC_ERR_NOMEM, "ssl.key.pem: out of memory");
    struct pw_arg pa = {conf->key_password, false};
    EVP_PKEY *key = PEM_read_bio_PrivateKey(b, NULL, key_password_cb, &pa);
    BIO_free(b);
    if (!key)
        return kc_fail(err, KC_ERR_CONFIG, "%s%s%s%s: cannot read the key%s: %s", what,
                       file ? " '" : "", file ? conf->key_location : "", file ? "'" : "",
                       pa.asked ? " (encrypted: ssl.key.password missing or wrong)"
                       : file   ? ""
                                : " (expected a -----BEGIN PRIVATE KEY----- block)",
                       kc_tls_ssl_reason(r, sizeof r));
    int ok = SSL_CTX_use_PrivateKey(c, key);
    EVP_PKEY_free(key);
    if (ok != 1 || SSL_CTX_check_private_key(c) != 1)
        return kc_fail(err, KC_ERR_CONFIG, "%s does not match %s: %s", what,
                       given(conf->cert_location) ? "ssl.certificate.location"
                                                  : "ssl.certificate.pem",
                       kc_tls_ssl_reason(r, sizeof r));
    return KC_OK;
}

/* A PKCS#12 keystore: its key, the certificate for it and the chain's extra certificates. One
 * password opens the store and the key (librdkafka's rule; Java's separate ssl.key.password for
 * a PKCS#12 key is not read). */
static kc_err_t load_keystore(SSL_CTX *c, const kc_tls_conf_t *conf, kc_error_t *err)
{
    char r[160];
    const char *loc = conf->keystore_location;
    errno = 0; /* BIO_new_file fails through fopen, which says why in errno */
    BIO *b = BIO_new_file(loc, "rb");
    if (!b)
        return kc_fail(err, KC_ERR_CONFIG, "ssl.keystore.location '%s': %s", loc,
                       errno ? strerror(errno) : kc_tls_ssl_reason(r, sizeof r));
    PKCS12 *p12 = d2i_PKCS12_bio(b, NULL);
    BIO_free(b);
    if (!p12)
        return kc_fail(err, KC_ERR_CONFIG,
                       "ssl.keystore.location '%s' is not a PKCS#12 keystore (DER): %s", loc,
                       kc_tls_ssl_reason(r, sizeof r));
    const char *pw = conf->keystore_password ? conf->keystore_password : "";
    /* The MAC check first: it tells a wrong password from a damaged or unsupported store. */
    if (PKCS12_mac_present(p12) && PKCS12_verify_mac(p12, pw, -1) != 1) {
        PKCS12_free(p12);
        ERR_clear_error();
        return kc_fail(err, KC_ERR_CONFIG,
                       "ssl.keystore.password %s for ssl.keystore.location '%s' (the keystore's "
                       "integrity check fails with it)",
                       given(conf->keystore_password) ? "is wrong" : "is unset but needed", loc);
    }
    EVP_PKEY *key = NULL;
    X509 *cert = NULL;
    STACK_OF(X509) *chain = NULL;
    int ok = PKCS12_parse(p12, pw, &key, &cert, &chain);
    PKCS12_free(p12);
    kc_err_t rc = KC_OK;
    if (ok != 1)
        rc = kc_fail(err, KC_ERR_CONFIG, "ssl.keystore.location '%s': cannot decrypt it: %s", loc,
                     kc_tls_ssl_reason(r, sizeof r));
    else if (!key)
        rc = kc_fail(err, KC_ERR_CONFIG,
                     "ssl.keystore.location '%s' holds no private key (a truststore? mutual TLS "
                     "needs the client's key and certificate in it)",
                     loc);
    else if (!cert)
        rc = kc_fail(err, KC_ERR_CONFIG,
                     "ssl.keystore.location '%s' holds a private key but no certificate for it",
                     loc);
    else if (SSL_CTX_use_cert_and_key(c, cert, key, chain, 1) != 1)
        rc = kc_fail(err, KC_ERR_CONFIG,
                     "ssl.keystore.location '%s': its key and certificate do not go together: %s",
                     loc, kc_tls_ssl_reason(r, sizeof r));
    EVP_PKEY_free(key);
    X509_free(cert);
    sk_X509_pop_free(chain, X509_free);
    return rc;
}

static kc_err_t load_identity(SSL_CTX *c, const kc_tls_conf_t *conf, kc_error_t *err)
{
    bool cert = given(conf->cert_location) || given(conf->cert_pem);
    bool key = given(conf->key_location) || given(conf->key_pem);
    bool store = given(conf->keystore_location);
    if (store && (cert || key))
        return kc_fail(err, KC_ERR_CONFIG,
                       "ssl.keystore.location and %s are two client identities: set one",
                       cert ? "ssl.certificate.*" : "ssl.key.*");
    if (store)
        return load_keystore(c, conf, err);
    if (!cert && !key)
        return KC_OK;
    if (cert != key)
        return kc_fail(err, KC_ERR_CONFIG,
                       "mutual TLS needs a certificate (ssl.certificate.location or .pem) and its "
                       "key (ssl.key.location or .pem) together");
    kc_err_t rc = load_cert(c, conf, err);
    return rc == KC_OK ? load_key(c, conf, err) : rc;
}

/* ---- what is offered ---- */

static int proto_version(const char *name, size_t n)
{
    if (n == 7 && memcmp(name, "TLSv1.2", 7) == 0)
        return TLS1_2_VERSION;
    if (n == 7 && memcmp(name, "TLSv1.3", 7) == 0)
        return TLS1_3_VERSION;
    return 0;
}

/* ssl.enabled.protocols (the set; it spans lowest..highest, as TLS negotiates a range) capped
 * by ssl.protocol (Java: with TLSv1.2 there a client never uses TLS 1.3). Unset: 1.2..1.3. */
static kc_err_t set_bounds(SSL_CTX *c, const kc_tls_conf_t *conf, int *min_out, int *max_out,
                           kc_error_t *err)
{
    int lo = TLS1_2_VERSION, hi = TLS1_3_VERSION;
    const char *list = conf->enabled_protocols;
    if (given(list)) {
        lo = 0, hi = 0;
        for (const char *p = list; *p;) {
            p += strspn(p, ", ");
            size_t n = strcspn(p, ", ");
            if (!n)
                break;
            int v = proto_version(p, n);
            if (!v)
                return kc_fail(err, KC_ERR_CONFIG,
                               "ssl.enabled.protocols: \"%.*s\" is not supported (allowed: "
                               "TLSv1.2, TLSv1.3)",
                               (int)n, p);
            lo = !lo || v < lo ? v : lo;
            hi = v > hi ? v : hi;
            p += n;
        }
    }
    const char *cap = conf->protocol;
    if (given(cap) && strcmp(cap, "TLS") != 0) {
        int v = proto_version(cap, strlen(cap));
        if (!v)
            return kc_fail(err, KC_ERR_CONFIG,
                           "ssl.protocol: \"%s\" is not supported (allowed: TLSv1.2, TLSv1.3, TLS)",
                           cap);
        hi = v < hi ? v : hi;
    }
    if (lo > hi)
        return kc_fail(err, KC_ERR_CONFIG,
                       "ssl.protocol=%s excludes every protocol of ssl.enabled.protocols (%s)", cap,
                       list);
    if (SSL_CTX_set_min_proto_version(c, lo) != 1 || SSL_CTX_set_max_proto_version(c, hi) != 1)
        return kc_fail(err, KC_ERR_TLS, "TLS: cannot set the protocol bounds");
    *min_out = lo, *max_out = hi;
    return KC_OK;
}

static bool is_tls13_suite(const char *s, size_t n)
{
    static const char *const names[] = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                                        "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_CCM_SHA256",
                                        "TLS_AES_128_CCM_8_SHA256"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
            return true;
    return false;
}

/* Appends "sep + word" to buf (cap bytes); false when it does not fit. */
static bool append(char *buf, size_t cap, const char *word, size_t n)
{
    size_t used = strlen(buf);
    if (used + (used ? 1 : 0) + n + 1 > cap)
        return false;
    if (used)
        buf[used++] = ':';
    memcpy(buf + used, word, n);
    buf[used + n] = '\0';
    return true;
}

static kc_err_t set_ciphers(SSL_CTX *c, const char *list, int *min, int max, kc_error_t *err)
{
    char r[160];
    if (!given(list))
        return KC_OK; /* OpenSSL's defaults for both */
    size_t cap = strlen(list) * 2 + 64;
    char *v12 = calloc(1, cap), *v13 = calloc(1, cap);
    kc_err_t rc = KC_OK;
    if (!v12 || !v13) {
        rc = kc_fail(err, KC_ERR_NOMEM, "ssl.cipher.suites: out of memory");
        goto out;
    }
    for (const char *p = list; *p;) {
        p += strspn(p, ":, ");
        size_t n = strcspn(p, ":, ");
        if (!n)
            break;
        char word[128];
        if (n >= sizeof word) {
            rc = kc_fail(err, KC_ERR_CONFIG, "ssl.cipher.suites: \"%.*s\" is too long", (int)n, p);
            goto out;
        }
        memcpy(word, p, n);
        word[n] = '\0';
        if (is_tls13_suite(word, n)) {
            append(v13, cap, word, n);
        } else {
            /* Java's names are IANA's (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); OpenSSL's cipher
             * strings take its own (ECDHE-RSA-AES128-GCM-SHA256). */
            const char *os = OPENSSL_cipher_name(word);
            const char *use = os && strcmp(os, "(NONE)") != 0 ? os : word;
            append(v12, cap, use, strlen(use));
        }
        p += n;
    }
    if (!v12[0] && !v13[0]) {
        rc =
            kc_fail(err, KC_ERR_CONFIG, "ssl.cipher.suites: no cipher suite named in \"%s\"", list);
        goto out;
    }
    if (SSL_CTX_set_ciphersuites(c, v13) != 1) {
        rc = kc_fail(err, KC_ERR_CONFIG, "ssl.cipher.suites: TLS 1.3 suites \"%s\": %s", v13,
                     kc_tls_ssl_reason(r, sizeof r));
        goto out;
    }
    if (v12[0]) {
        if (SSL_CTX_set_cipher_list(c, v12) != 1) {
            rc = kc_fail(err, KC_ERR_CONFIG,
                         "ssl.cipher.suites: none of \"%s\" is a TLS 1.2 cipher OpenSSL knows: %s",
                         v12, kc_tls_ssl_reason(r, sizeof r));
            goto out;
        }
    } else if (max < TLS1_3_VERSION) {
        rc = kc_fail(err, KC_ERR_CONFIG,
                     "ssl.cipher.suites names TLS 1.3 suites only, but the protocol bounds "
                     "(ssl.enabled.protocols, ssl.protocol) stop at TLS 1.2");
        goto out;
    } else {
        *min = TLS1_3_VERSION; /* no TLS 1.2 cipher: TLS 1.2 cannot be offered */
        SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION);
    }
    if (!v13[0] && *min > TLS1_2_VERSION)
        rc = kc_fail(err, KC_ERR_CONFIG,
                     "ssl.cipher.suites names no TLS 1.3 suite, but ssl.enabled.protocols allows "
                     "TLS 1.3 only");
out:
    free(v12);
    free(v13);
    return rc;
}

kc_err_t kc_tls_material_load(SSL_CTX *c, const kc_tls_conf_t *conf, kc_error_t *err)
{
    int min = 0, max = 0;
    kc_err_t rc;
    if ((rc = set_bounds(c, conf, &min, &max, err)) != KC_OK ||
        (rc = set_ciphers(c, conf->cipher_suites, &min, max, err)) != KC_OK ||
        (rc = load_trust(c, conf, err)) != KC_OK ||
        (rc = load_crl(c, conf->crl_location, err)) != KC_OK)
        return rc;
    return load_identity(c, conf, err);
}
