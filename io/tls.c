/*
 * TLS over memory BIOs (see tls.h for the call sequence and buffer lifetimes).
 *
 * Owner: kc_tls_ctx_t — the application thread builds it at configuration time, the network
 * thread alone uses it afterwards (SSL_new only reads it). kc_tls_t — the network thread.
 * OpenSSL's error queue is thread-local, so reading it here never sees another thread's errors.
 */
#include "tls.h"

#include "base/log.h"
#include "tls_material.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct kc_tls_ctx {
    SSL_CTX *ssl_ctx;
    bool verify_name; /* ssl.endpoint.identification.algorithm=https */
    /* For messages only: what the broker refused, or which CRL revoked its certificate. */
    char offered[256]; /* "TLSv1.2-TLSv1.3, ssl.cipher.suites=..." */
    char crl[256];     /* ssl.crl.location, "" when unset */
};

/* The first verification failure, captured in the verify callback because that is the only
 * moment the failing certificate (and, for a name mismatch, its SANs) is at hand. */
struct verify_failure {
    int code; /* X509_V_ERR_*, 0 = none */
    int depth;
    char names[160];   /* the failing certificate's SANs, or its subject */
    char subject[160]; /* its subject, RFC 2253 */
    char serial[80];   /* its serial number, hex */
};

struct kc_tls {
    SSL *ssl;
    const kc_tls_ctx_t *ctx; /* outlives the session (tls.h: Threads) */
    BIO *rbio;               /* reads `in` for OpenSSL (in_bio_method) */
    BIO *wbio;               /* ciphertext for the peer, written by OpenSSL, drained into `out` */
    char server_name[256];
    bool handshake_done, shut;
    bool read_any; /* application data arrived: a later alert is no refusal of the handshake */
    struct verify_failure vf;
    /* Input: ciphertext from the peer, [in_off, in_len) not yet read by OpenSSL. The socket can
     * receive straight into it (kc_tls_in_space/commit). */
    uint8_t *in;
    size_t in_off, in_len, in_cap;
    /* Output staging: what kc_tls_out_peek() hands out; never moved until fully consumed. */
    uint8_t *out;
    size_t out_len, out_off, out_cap;
};

/* ---- error text ---- */

static void append_name(char *dst, size_t cap, const char *kind, const char *val, size_t len)
{
    size_t used = strlen(dst);
    if (used + 1 < cap)
        snprintf(dst + used, cap - used, "%s%s:%.*s", used ? ", " : "", kind, (int)len, val);
}

/* "DNS:localhost, IP:127.0.0.1", or "CN=..." when the certificate has no SANs. */
static void describe_cert_names(X509 *cert, char *dst, size_t cap)
{
    dst[0] = '\0';
    if (!cert)
        return;
    GENERAL_NAMES *sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans); i++) {
        const GENERAL_NAME *gn = sk_GENERAL_NAME_value(sans, i);
        if (gn->type == GEN_DNS) {
            append_name(dst, cap, "DNS", (const char *)ASN1_STRING_get0_data(gn->d.dNSName),
                        (size_t)ASN1_STRING_length(gn->d.dNSName));
        } else if (gn->type == GEN_IPADD) {
            char ip[INET6_ADDRSTRLEN] = "?";
            int l = ASN1_STRING_length(gn->d.iPAddress);
            const unsigned char *p = ASN1_STRING_get0_data(gn->d.iPAddress);
            if (l == 4 || l == 16)
                inet_ntop(l == 4 ? AF_INET : AF_INET6, p, ip, sizeof ip);
            append_name(dst, cap, "IP", ip, strlen(ip));
        }
    }
    GENERAL_NAMES_free(sans);
    if (!dst[0])
        X509_NAME_oneline(X509_get_subject_name(cert), dst, (int)cap);
}

static void describe_subject(X509 *cert, struct verify_failure *vf)
{
    vf->subject[0] = vf->serial[0] = '\0';
    if (!cert)
        return;
    BIO *b = BIO_new(BIO_s_mem());
    if (b && X509_NAME_print_ex(b, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
        int n = BIO_read(b, vf->subject, (int)sizeof vf->subject - 1);
        vf->subject[n > 0 ? n : 0] = '\0';
    }
    BIO_free(b);
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    if (hex)
        snprintf(vf->serial, sizeof vf->serial, "%s", hex);
    OPENSSL_free(hex);
    BN_free(bn);
}

/* A fatal alert the broker sent during (or, TLS 1.3, right after) the handshake: its refusal of
 * what this client offered or presented. The hint says which settings decide it. */
static const char *alert_hint(unsigned long e)
{
    switch (ERR_GET_REASON(e)) {
    case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
    case SSL_R_TLSV1_ALERT_INSUFFICIENT_SECURITY:
        return "the broker shares no cipher suite (or key exchange) with what this client offers";
    case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
        return "the broker accepts none of the TLS versions this client offers";
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
        return "the broker refused the client certificate, or requires one and none is configured "
               "(ssl.keystore.location, or ssl.certificate.* with ssl.key.*)";
    default:
        return NULL;
    }
}

static int verify_cb(int preverify_ok, X509_STORE_CTX *xctx)
{
    if (preverify_ok)
        return 1;
    SSL *ssl = X509_STORE_CTX_get_ex_data(xctx, SSL_get_ex_data_X509_STORE_CTX_idx());
    kc_tls_t *t = ssl ? SSL_get_app_data(ssl) : NULL;
    if (t && !t->vf.code) {
        t->vf.code = X509_STORE_CTX_get_error(xctx);
        t->vf.depth = X509_STORE_CTX_get_error_depth(xctx);
        X509 *cert = X509_STORE_CTX_get_current_cert(xctx);
        describe_cert_names(cert, t->vf.names, sizeof t->vf.names);
        describe_subject(cert, &t->vf);
    }
    return 0; /* verification stays mandatory: the handshake fails */
}

/* A handshake failure that is not our verdict on the broker: most often the broker's alert. */
static kc_err_t refused(kc_tls_t *t, kc_error_t *err)
{
    char r[160];
    const char *hint = alert_hint(ERR_peek_last_error());
    kc_tls_ssl_reason(r, sizeof r);
    if (hint)
        return kc_fail(err, KC_ERR_TLS,
                       "TLS handshake with %s refused by the broker: %s: %s (offered: %s)",
                       t->server_name, r, hint, t->ctx->offered);
    /* No alert we can name (Kafka before 3.x answers some refusals with a record OpenSSL cannot
     * parse, "wrong version number"): what this client offered is still the likely cause. */
    return kc_fail(err, KC_ERR_TLS, "TLS handshake with %s failed: %s (offered: %s)",
                   t->server_name, r, t->ctx->offered);
}

static kc_err_t handshake_fail(kc_tls_t *t, kc_error_t *err)
{
    int code = t->vf.code;
    if (code == X509_V_ERR_HOSTNAME_MISMATCH || code == X509_V_ERR_IP_ADDRESS_MISMATCH) {
        ERR_clear_error();
        return kc_fail(err, KC_ERR_TLS, "hostname mismatch: certificate is for %s, connected to %s",
                       t->vf.names, t->server_name);
    }
    if (code == X509_V_ERR_CERT_REVOKED) {
        ERR_clear_error();
        return kc_fail(err, KC_ERR_TLS,
                       "broker %s presented a revoked certificate (subject %s, serial %s, depth "
                       "%d): listed in ssl.crl.location '%s'",
                       t->server_name, t->vf.subject, t->vf.serial, t->vf.depth, t->ctx->crl);
    }
    if (code) {
        ERR_clear_error();
        return kc_fail(err, KC_ERR_TLS, "certificate verify failed: %s (depth %d, %s)",
                       X509_verify_cert_error_string(code), t->vf.depth, t->vf.names);
    }
    return refused(t, err);
}

/* ---- the input BIO ----
 * OpenSSL's memory BIO makes three passes over every received byte before decryption (it zeroes
 * the space it grows into, copies the data in, and moves unread data to the front on the next
 * write). This BIO reads from a plain buffer the socket can receive into directly. Measured with
 * TLS 1.3 AES-GCM, 256 MiB fed in 64 KiB pieces (release build, 2 vCPUs at load average 10-12,
 * so noisy): client decrypt path 0.64-0.78 GB/s with the memory BIO, 1.0-1.3 GB/s with this one;
 * raw AES-128-GCM (`openssl speed`) gave 2.6-3.7 GB/s at the same time. */

static int in_bio_read(BIO *b, char *out, size_t outl, size_t *readbytes)
{
    kc_tls_t *t = BIO_get_data(b);
    size_t avail = t->in_len - t->in_off;
    BIO_clear_retry_flags(b);
    if (avail == 0) {
        BIO_set_retry_read(b); /* "not yet", never end of stream: the socket layer says EOF */
        *readbytes = 0;
        return 0;
    }
    size_t n = outl < avail ? outl : avail;
    memcpy(out, t->in + t->in_off, n);
    t->in_off += n; /* never moves the buffer: a receive may be in flight into its tail */
    *readbytes = n;
    return 1;
}

static long in_bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)num;
    (void)ptr;
    kc_tls_t *t = BIO_get_data(b);
    switch (cmd) {
    case BIO_CTRL_PENDING:
        return t ? (long)(t->in_len - t->in_off) : 0;
    case BIO_CTRL_FLUSH:
        return 1;
    default:
        return 0;
    }
}

static int in_bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static BIO_METHOD *in_bio_method_ptr;
static CRYPTO_ONCE in_bio_once = CRYPTO_ONCE_STATIC_INIT;

/* One method for the process, never freed: BIOs of live sessions point at it, and sessions may
 * outlive any particular kc_tls_ctx_t. */
static void in_bio_method_init(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "kconsume tls input");
    if (m && BIO_meth_set_read_ex(m, in_bio_read) == 1 && BIO_meth_set_ctrl(m, in_bio_ctrl) == 1 &&
        BIO_meth_set_create(m, in_bio_create) == 1)
        in_bio_method_ptr = m;
    else
        BIO_meth_free(m);
}

static const BIO_METHOD *in_bio_method(void)
{
    return CRYPTO_THREAD_run_once(&in_bio_once, in_bio_method_init) ? in_bio_method_ptr : NULL;
}

/* ---- context ---- */

kc_err_t kc_tls_ctx_new(const kc_tls_conf_t *conf, kc_tls_ctx_t **out, kc_error_t *err)
{
    char r[160];
    *out = NULL;
    const char *alg = conf->endpoint_identification;
    if (alg && *alg && strcmp(alg, "https") != 0)
        return kc_fail(err, KC_ERR_CONFIG,
                       "ssl.endpoint.identification.algorithm '%s': use \"https\" or \"\"", alg);
    kc_tls_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return kc_fail(err, KC_ERR_NOMEM, "TLS: out of memory");
    ctx->verify_name = !alg || *alg;
    ctx->ssl_ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx->ssl_ctx) {
        free(ctx);
        return kc_fail(err, KC_ERR_TLS, "SSL_CTX_new: %s", kc_tls_ssl_reason(r, sizeof r));
    }
    SSL_CTX_set_min_proto_version(ctx->ssl_ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx->ssl_ctx, SSL_VERIFY_PEER, verify_cb);
    kc_err_t rc = kc_tls_material_load(ctx->ssl_ctx, conf, err);
    if (rc == KC_OK) {
        int lo = SSL_CTX_get_min_proto_version(ctx->ssl_ctx);
        int hi = SSL_CTX_get_max_proto_version(ctx->ssl_ctx);
        const char *cs = conf->cipher_suites;
        snprintf(ctx->offered, sizeof ctx->offered, "%s%s%s, ssl.cipher.suites=%s, %s",
                 lo == TLS1_3_VERSION ? "TLSv1.3" : "TLSv1.2", lo == hi ? "" : "-",
                 lo == hi ? "" : (hi == TLS1_2_VERSION ? "TLSv1.2" : "TLSv1.3"),
                 cs && *cs ? cs : "(OpenSSL's defaults)",
                 SSL_CTX_get0_certificate(ctx->ssl_ctx) ? "a client certificate"
                                                        : "no client certificate");
        snprintf(ctx->crl, sizeof ctx->crl, "%s", conf->crl_location ? conf->crl_location : "");
    }
    if (rc != KC_OK) {
        kc_tls_ctx_free(ctx);
        return rc;
    }
    *out = ctx;
    return KC_OK;
}

void kc_tls_ctx_free(kc_tls_ctx_t *ctx)
{
    if (!ctx)
        return;
    SSL_CTX_free(ctx->ssl_ctx);
    free(ctx);
}

/* ---- session ---- */

static bool is_ip_literal(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static kc_err_t set_peer_name(kc_tls_t *t, bool verify_name, kc_error_t *err)
{
    char r[160];
    const char *name = t->server_name;
    bool ip = is_ip_literal(name);
    /* SNI carries DNS names only (RFC 6066 §3); brokers behind SNI routers need it. */
    if (!ip && SSL_set_tlsext_host_name(t->ssl, name) != 1)
        return kc_fail(err, KC_ERR_TLS, "TLS: cannot set SNI '%s': %s", name,
                       kc_tls_ssl_reason(r, sizeof r));
    if (!verify_name)
        return KC_OK;
    X509_VERIFY_PARAM *vp = SSL_get0_param(t->ssl);
    X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    int ok =
        ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, name) : X509_VERIFY_PARAM_set1_host(vp, name, 0);
    if (ok != 1)
        return kc_fail(err, KC_ERR_TLS, "TLS: cannot verify against '%s': %s", name,
                       kc_tls_ssl_reason(r, sizeof r));
    return KC_OK;
}

kc_err_t kc_tls_new(kc_tls_ctx_t *ctx, const char *server_name, kc_tls_t **out, kc_error_t *err)
{
    char r[160];
    *out = NULL;
    if (!server_name || !*server_name || strlen(server_name) >= sizeof((kc_tls_t *)0)->server_name)
        return kc_fail(err, KC_ERR_INVALID_ARG, "TLS: bad server name");
    kc_tls_t *t = calloc(1, sizeof *t);
    if (!t)
        return kc_fail(err, KC_ERR_NOMEM, "TLS: out of memory");
    snprintf(t->server_name, sizeof t->server_name, "%s", server_name);
    ERR_clear_error();
    t->ssl = SSL_new(ctx->ssl_ctx);
    const BIO_METHOD *inm = in_bio_method();
    t->rbio = inm ? BIO_new(inm) : NULL;
    t->wbio = BIO_new(BIO_s_mem());
    if (!t->ssl || !t->rbio || !t->wbio) {
        BIO_free(t->rbio);
        BIO_free(t->wbio);
        t->rbio = t->wbio = NULL;
        kc_tls_free(t);
        return kc_fail(err, KC_ERR_NOMEM, "TLS: %s", kc_tls_ssl_reason(r, sizeof r));
    }
    BIO_set_data(t->rbio, t);
    SSL_set_bio(t->ssl, t->rbio, t->wbio); /* the SSL owns both BIOs from here */
    SSL_set_app_data(t->ssl, t);
    t->ctx = ctx;
    SSL_set_connect_state(t->ssl);
    kc_err_t rc = set_peer_name(t, ctx->verify_name, err);
    if (rc != KC_OK) {
        kc_tls_free(t);
        return rc;
    }
    *out = t;
    return KC_OK;
}

void kc_tls_free(kc_tls_t *t)
{
    if (!t)
        return;
    SSL_free(t->ssl); /* frees the BIOs too */
    free(t->out);
    free(t->in);
    free(t);
}

uint8_t *kc_tls_in_space(kc_tls_t *t, size_t min, size_t *avail)
{
    if (min == 0)
        min = 1;
    if (t->in_off == t->in_len)
        t->in_off = t->in_len = 0; /* all read: receive at the front, nothing to move */
    if (t->in_cap - t->in_len < min && t->in_off > 0) {
        /* Move the unread tail (at most a partial record once OpenSSL has read what it can) to
         * the front before growing. */
        memmove(t->in, t->in + t->in_off, t->in_len - t->in_off);
        t->in_len -= t->in_off;
        t->in_off = 0;
    }
    if (t->in_cap - t->in_len < min) {
        size_t cap = t->in_cap ? t->in_cap : 16384;
        while (cap - t->in_len < min) {
            if (cap > SIZE_MAX / 2)
                return NULL;
            cap *= 2;
        }
        uint8_t *nb = realloc(t->in, cap);
        if (!nb)
            return NULL;
        t->in = nb;
        t->in_cap = cap;
    }
    *avail = t->in_cap - t->in_len;
    return t->in + t->in_len;
}

void kc_tls_in_commit(kc_tls_t *t, size_t n)
{
    size_t room = t->in_cap - t->in_len;
    t->in_len += n < room ? n : room;
}

kc_err_t kc_tls_feed(kc_tls_t *t, const uint8_t *data, size_t len, kc_error_t *err)
{
    size_t avail;
    uint8_t *dst = kc_tls_in_space(t, len, &avail);
    if (!dst)
        return kc_fail(err, KC_ERR_NOMEM, "TLS: cannot buffer %zu bytes of input", len);
    memcpy(dst, data, len);
    kc_tls_in_commit(t, len);
    return KC_OK;
}

kc_err_t kc_tls_handshake(kc_tls_t *t, kc_error_t *err)
{
    if (t->handshake_done)
        return KC_OK;
    ERR_clear_error();
    int rc = SSL_do_handshake(t->ssl);
    if (rc == 1) {
        t->handshake_done = true;
        kc_log(KC_LOG_DEBUG, "tls", "%s: %s, %s", t->server_name, SSL_get_version(t->ssl),
               SSL_get_cipher_name(t->ssl));
        return KC_OK;
    }
    int e = SSL_get_error(t->ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return KC_ERR_AGAIN;
    return handshake_fail(t, err);
}

kc_err_t kc_tls_write(kc_tls_t *t, const void *data, size_t len, kc_error_t *err)
{
    char r[160];
    if (!t->handshake_done || t->shut)
        return kc_fail(err, KC_ERR_STATE, "TLS write to %s %s", t->server_name,
                       t->shut ? "after shutdown" : "before the handshake completed");
    const uint8_t *p = data;
    while (len > 0) {
        size_t done = 0;
        ERR_clear_error();
        /* The output BIO grows without bound, so SSL_write_ex never wants to wait: it either
         * encrypts the chunk or fails. */
        if (SSL_write_ex(t->ssl, p, len, &done) != 1)
            return kc_fail(err, KC_ERR_TLS, "TLS write to %s failed: %s", t->server_name,
                           kc_tls_ssl_reason(r, sizeof r));
        p += done;
        len -= done;
    }
    return KC_OK;
}

kc_err_t kc_tls_read(kc_tls_t *t, void *buf, size_t cap, size_t *n, kc_error_t *err)
{
    char r[160];
    *n = 0;
    if (cap == 0)
        return kc_fail(err, KC_ERR_INVALID_ARG, "TLS read into an empty buffer");
    ERR_clear_error();
    int rc = SSL_read_ex(t->ssl, buf, cap, n);
    if (rc == 1) {
        t->read_any = true;
        return KC_OK;
    }
    switch (SSL_get_error(t->ssl, rc)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        return KC_ERR_AGAIN;
    case SSL_ERROR_ZERO_RETURN:
        return kc_fail(err, KC_ERR_CLOSED, "TLS: %s sent close_notify", t->server_name);
    default:
        if (!t->handshake_done && t->vf.code)
            return handshake_fail(t, err);
        if (!t->read_any) /* TLS 1.3: the broker's verdict on our certificate comes here */
            return refused(t, err);
        return kc_fail(err, KC_ERR_TLS, "TLS read from %s failed: %s", t->server_name,
                       kc_tls_ssl_reason(r, sizeof r));
    }
}

size_t kc_tls_out_peek(kc_tls_t *t, const uint8_t **data)
{
    if (t->out_off == t->out_len) {
        /* Everything handed out before has been sent: refill from OpenSSL's output BIO. Only
         * now may the staging buffer move (realloc), which keeps earlier pointers valid. */
        t->out_off = t->out_len = 0;
        size_t pending = BIO_ctrl_pending(t->wbio);
        if (pending > t->out_cap) {
            uint8_t *nb = realloc(t->out, pending);
            if (!nb) {
                *data = NULL;
                return 0; /* the records stay in the BIO; the next peek retries */
            }
            t->out = nb;
            t->out_cap = pending;
        }
        size_t got = 0;
        if (pending && BIO_read_ex(t->wbio, t->out, pending, &got) == 1)
            t->out_len = got;
    }
    *data = t->out + t->out_off;
    return t->out_len - t->out_off;
}

void kc_tls_out_consume(kc_tls_t *t, size_t n)
{
    size_t avail = t->out_len - t->out_off;
    t->out_off += n < avail ? n : avail;
}

kc_err_t kc_tls_shutdown(kc_tls_t *t, kc_error_t *err)
{
    char r[160];
    if (t->shut)
        return KC_OK;
    t->shut = true;
    if (!t->handshake_done)
        return KC_OK; /* nothing to protect: just close the socket */
    ERR_clear_error();
    /* 0 = our close_notify is queued, the peer's not yet seen; we do not wait for it (the socket
     * is closed right after), which TLS allows for a client that sends nothing more. */
    if (SSL_shutdown(t->ssl) < 0)
        return kc_fail(err, KC_ERR_TLS, "TLS shutdown to %s: %s", t->server_name,
                       kc_tls_ssl_reason(r, sizeof r));
    return KC_OK;
}

const char *kc_tls_version(const kc_tls_t *t)
{
    return t->handshake_done ? SSL_get_version(t->ssl) : "";
}

const char *kc_tls_cipher(const kc_tls_t *t)
{
    return t->handshake_done ? SSL_get_cipher_name(t->ssl) : "";
}
