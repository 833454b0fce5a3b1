/* TLS over memory buffers against an OpenSSL server object in the same process (no sockets):
 * verification (CA, host name, IP), identification "" semantics, mTLS, large records both ways,
 * close_notify, configuration errors, output-pointer stability; the material a user has
 * (io/tls_material.c): a PKCS#12 keystore with its chain, PEM text, a CRL revoking a server
 * certificate, cipher suites and protocol bounds, and each one's errors. Certificates are made
 * with the openssl CLI in a temporary directory at setup. */
#include "kc_test.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tls.h"

static char dir[64];

static const char *path(const char *name)
{
    static char buf[32][256]; /* a test may hold this many at once (in a kc_tls_conf_t) */
    static int i;
    i = (i + 1) % 32;
    snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
    return buf[i];
}

/* ca.pem: the right CA; other-ca.pem: a CA that signed nothing here; server.pem: CN=broker with
 * SAN DNS:localhost, IP:127.0.0.1 signed by ca.pem; client.pem + client.key (encrypted, password
 * "kpw-secret") signed by ca.pem. */
static const char gen_script[] =
    "set -e; cd \"$1\"; exec >gen.log 2>&1\n"
    "ec='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1'\n"
    "for ca in ca other-ca; do openssl req -x509 $ec -nodes -keyout $ca.key -out $ca.pem -days 2 "
    "  -subj /CN=$ca -addext basicConstraints=critical,CA:TRUE -addext "
    "keyUsage=keyCertSign,cRLSign; done\n"
    "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > server.ext\n"
    "openssl req $ec -nodes -keyout server.key -out server.csr -subj /CN=broker\n"
    "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
    "  -extfile server.ext -out server.pem\n"
    "openssl req $ec -passout pass:kpw-secret -keyout client.key -out client.csr -subj /CN=client\n"
    "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
    "  -out client.pem\n"
    "mkdir cadir && cp ca.pem cadir/ && openssl rehash cadir\n"
    /* client.p12: the client key, its certificate and the CA as the chain's extra certificate;
     * certonly.p12: a certificate and no key (a truststore) */
    "openssl pkcs12 -export -in client.pem -inkey client.key -passin pass:kpw-secret "
    "  -certfile ca.pem -passout pass:p12-secret-77 -out client.p12\n"
    "openssl pkcs12 -export -in ca.pem -nokeys -passout pass:p12-secret-77 -out certonly.p12\n"
    /* revoked.pem: a server certificate like server.pem, revoked in crl.pem */
    "openssl req $ec -nodes -keyout revoked.key -out revoked.csr -subj /CN=revoked-broker\n"
    "openssl x509 -req -in revoked.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
    "  -extfile server.ext -out revoked.pem\n"
    /* server2.pem: a server certificate from other-ca, for a client whose store cannot complete
     * its own chain (so only the chain it was given is sent) */
    "openssl req $ec -nodes -keyout server2.key -out server2.csr -subj /CN=broker2\n"
    "openssl x509 -req -in server2.csr -CA other-ca.pem -CAkey other-ca.key -CAcreateserial "
    "  -days 2 -extfile server.ext -out server2.pem\n"
    ": > index.txt; echo 01 > crlnumber\n"
    "printf '[ca]\\ndefault_ca=t\\n[t]\\ndatabase=index.txt\\ncrlnumber=crlnumber\\n"
    "certificate=ca.pem\\nprivate_key=ca.key\\ndefault_md=sha256\\ndefault_crl_days=2\\n' > "
    "ca.cnf\n"
    "openssl ca -config ca.cnf -revoke revoked.pem\n"
    "openssl ca -config ca.cnf -gencrl -out crl.pem\n";

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/kc-test-tls-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    FILE *f = fopen(path("gen.sh"), "w");
    if (!f || fputs(gen_script, f) < 0 || fclose(f) != 0)
        return -1;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "bash '%s' '%s'", path("gen.sh"), dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "certificate generation failed, see %s/gen.log\n", dir);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- the server side: a plain OpenSSL SSL over two memory BIOs ---- */

struct server {
    SSL_CTX *ctx;
    SSL *ssl;
    BIO *in, *out;
};

/* A server presenting <name>.pem with <name>.key. */
static void server_start_as(struct server *s, const char *name, bool require_client_cert)
{
    char f[64];
    s->ctx = SSL_CTX_new(TLS_server_method());
    assert_non_null(s->ctx);
    snprintf(f, sizeof f, "%s.pem", name);
    assert_int_equal(SSL_CTX_use_certificate_chain_file(s->ctx, path(f)), 1);
    snprintf(f, sizeof f, "%s.key", name);
    assert_int_equal(SSL_CTX_use_PrivateKey_file(s->ctx, path(f), SSL_FILETYPE_PEM), 1);
    if (require_client_cert) {
        assert_int_equal(SSL_CTX_load_verify_locations(s->ctx, path("ca.pem"), NULL), 1);
        SSL_CTX_set_verify(s->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    s->ssl = SSL_new(s->ctx);
    s->in = BIO_new(BIO_s_mem());
    s->out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(s->in, -1);
    SSL_set_bio(s->ssl, s->in, s->out);
    SSL_set_accept_state(s->ssl);
}

static void server_start(struct server *s, bool require_client_cert)
{
    server_start_as(s, "server", require_client_cert);
}

static void server_stop(struct server *s)
{
    SSL_free(s->ssl);
    SSL_CTX_free(s->ctx);
    ERR_clear_error();
}

/* Moves all pending ciphertext both ways; returns bytes moved. */
static size_t pump(kc_tls_t *c, struct server *s)
{
    size_t moved = 0;
    const uint8_t *p;
    size_t n;
    kc_error_t e;
    while ((n = kc_tls_out_peek(c, &p)) > 0) {
        assert_int_equal(BIO_write(s->in, p, (int)n), (int)n);
        kc_tls_out_consume(c, n);
        moved += n;
    }
    /* Alternate the two input paths: a copy from a receive buffer, and a receive straight into
     * the module's buffer (kc_tls_in_space/commit), in pieces that split records. */
    static unsigned turn;
    char buf[8192];
    int r;
    for (;;) {
        if (turn++ % 2) {
            size_t avail;
            uint8_t *dst = kc_tls_in_space(c, 3000, &avail);
            assert_non_null(dst);
            assert_true(avail >= 3000);
            r = BIO_read(s->out, dst, 3000);
            if (r <= 0)
                break;
            kc_tls_in_commit(c, (size_t)r);
        } else {
            r = BIO_read(s->out, buf, sizeof buf);
            if (r <= 0)
                break;
            assert_int_equal(kc_tls_feed(c, (const uint8_t *)buf, (size_t)r, &e), KC_OK);
        }
        moved += (size_t)r;
    }
    return moved;
}

/* Runs both handshakes to completion or failure; returns the client's result. */
static kc_err_t handshake(kc_tls_t *c, struct server *s, int *server_rc, kc_error_t *e)
{
    kc_err_t rc = KC_ERR_AGAIN;
    *server_rc = -1;
    for (int i = 0; i < 20; i++) {
        rc = kc_tls_handshake(c, e);
        int sr = SSL_do_handshake(s->ssl);
        *server_rc = sr;
        size_t moved = pump(c, s);
        if (rc != KC_ERR_AGAIN && rc != KC_OK)
            return rc;
        if (rc == KC_OK && sr == 1 && moved == 0)
            return KC_OK;
        if (moved == 0 && rc == KC_ERR_AGAIN)
            break;
    }
    return rc;
}

static kc_tls_ctx_t *mkctx(const char *ca, const char *ident, bool client_cert)
{
    kc_tls_conf_t conf = {.ca_location = ca, .endpoint_identification = ident};
    if (client_cert) {
        conf.cert_location = path("client.pem");
        conf.key_location = path("client.key");
        conf.key_password = "kpw-secret";
    }
    kc_tls_ctx_t *ctx = NULL;
    kc_error_t e;
    kc_err_t rc = kc_tls_ctx_new(&conf, &ctx, &e);
    if (rc != KC_OK)
        fail_msg("kc_tls_ctx_new: %s", e.msg);
    return ctx;
}

/* One client+server handshake; returns the client result and leaves the message in *e. */
static kc_err_t try_connect(const char *ca, const char *ident, const char *name, kc_error_t *e)
{
    kc_tls_ctx_t *ctx = mkctx(ca, ident, false);
    kc_tls_t *c = NULL;
    assert_int_equal(kc_tls_new(ctx, name, &c, e), KC_OK);
    struct server s;
    server_start(&s, false);
    int sr;
    kc_err_t rc = handshake(c, &s, &sr, e);
    if (rc == KC_OK)
        assert_int_equal(sr, 1);
    kc_tls_free(c);
    kc_tls_ctx_free(ctx);
    server_stop(&s);
    return rc;
}

static void handshake_with_right_ca(void **state)
{
    (void)state;
    kc_error_t e;
    assert_int_equal(try_connect(path("ca.pem"), NULL, "localhost", &e), KC_OK);
    assert_int_equal(try_connect(path("ca.pem"), "https", "127.0.0.1", &e), KC_OK);
    /* ssl.ca.location may be a hashed directory (openssl rehash). One without the CA's hash
     * link trusts nothing, so that must fail: the directory is what is used, not a default. */
    assert_int_equal(try_connect(path("cadir"), NULL, "localhost", &e), KC_OK);
    assert_int_equal(try_connect(dir, NULL, "localhost", &e), KC_ERR_TLS);
}

static void wrong_ca_is_verify_error(void **state)
{
    (void)state;
    kc_error_t e;
    assert_int_equal(try_connect(path("other-ca.pem"), NULL, "localhost", &e), KC_ERR_TLS);
    assert_int_equal(e.code, KC_ERR_TLS);
    assert_non_null(strstr(e.msg, "verify"));
    fprintf(stderr, "wrong CA: %s\n", e.msg);
    /* identification "" does not switch off chain verification */
    assert_int_equal(try_connect(path("other-ca.pem"), "", "localhost", &e), KC_ERR_TLS);
    assert_non_null(strstr(e.msg, "verify"));
}

static void hostname_mismatch_is_error(void **state)
{
    (void)state;
    kc_error_t e;
    assert_int_equal(try_connect(path("ca.pem"), NULL, "127.0.0.2", &e), KC_ERR_TLS);
    fprintf(stderr, "IP mismatch: %s\n", e.msg);
    assert_string_equal(e.msg, "hostname mismatch: certificate is for DNS:localhost, IP:127.0.0.1, "
                               "connected to 127.0.0.2");
    assert_int_equal(try_connect(path("ca.pem"), "https", "other.example", &e), KC_ERR_TLS);
    assert_non_null(strstr(e.msg, "hostname mismatch"));
    assert_non_null(strstr(e.msg, "other.example"));
}

static void identification_empty_accepts_mismatch(void **state)
{
    (void)state;
    kc_error_t e;
    assert_int_equal(try_connect(path("ca.pem"), "", "127.0.0.2", &e), KC_OK);
    assert_int_equal(try_connect(path("ca.pem"), "", "other.example", &e), KC_OK);
}

static void mtls_client_certificate(void **state)
{
    (void)state;
    kc_error_t e;
    /* Without a client certificate the server refuses. In TLS 1.3 the client may finish its side
     * first and only see the server's alert when it reads, so check both places. */
    kc_tls_ctx_t *ctx = mkctx(path("ca.pem"), NULL, false);
    kc_tls_t *c = NULL;
    struct server s;
    int sr;
    assert_int_equal(kc_tls_new(ctx, "localhost", &c, &e), KC_OK);
    server_start(&s, true);
    kc_err_t rc = handshake(c, &s, &sr, &e);
    assert_int_not_equal(sr, 1);
    if (rc == KC_OK) {
        uint8_t b[16];
        size_t n;
        pump(c, &s);
        rc = kc_tls_read(c, b, sizeof b, &n, &e);
    }
    assert_int_equal(rc, KC_ERR_TLS);
    fprintf(stderr, "no client cert: %s\n", e.msg);
    kc_tls_free(c);
    kc_tls_ctx_free(ctx);
    server_stop(&s);

    ctx = mkctx(path("ca.pem"), NULL, true);
    assert_int_equal(kc_tls_new(ctx, "localhost", &c, &e), KC_OK);
    server_start(&s, true);
    assert_int_equal(handshake(c, &s, &sr, &e), KC_OK);
    assert_int_equal(sr, 1);
    X509 *peer = SSL_get1_peer_certificate(s.ssl);
    assert_non_null(peer);
    char cn[64];
    X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
    assert_string_equal(cn, "client");
    X509_free(peer);
    kc_tls_free(c);
    kc_tls_ctx_free(ctx);
    server_stop(&s);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 131u + seed + (i >> 9));
}

static void app_data_both_ways_and_close_notify(void **state)
{
    (void)state;
    kc_error_t e;
    kc_tls_ctx_t *ctx = mkctx(path("ca.pem"), NULL, false);
    kc_tls_t *c = NULL;
    struct server s;
    int sr;
    assert_int_equal(kc_tls_new(ctx, "localhost", &c, &e), KC_OK);
    uint8_t tmp[8];
    assert_int_equal(kc_tls_write(c, tmp, 1, &e), KC_ERR_STATE); /* before the handshake */
    server_start(&s, false);
    assert_int_equal(handshake(c, &s, &sr, &e), KC_OK);
    assert_string_equal(kc_tls_version(c), "TLSv1.3");

    enum { UP = 100000, DOWN = 70001 }; /* several 16 KiB records each way */
    uint8_t *up = malloc(UP), *down = malloc(DOWN), *got = malloc(UP);
    fill(up, UP, 7);
    fill(down, DOWN, 99);
    assert_int_equal(kc_tls_write(c, up, UP, &e), KC_OK);
    pump(c, &s);
    size_t have = 0, n;
    while (have < UP) {
        int r = SSL_read_ex(s.ssl, got + have, UP - have, &n);
        assert_int_equal(r, 1);
        have += n;
    }
    assert_memory_equal(got, up, UP);

    assert_int_equal(SSL_write_ex(s.ssl, down, DOWN, &n), 1);
    assert_int_equal(n, DOWN);
    pump(c, &s);
    have = 0;
    memset(got, 0, UP);
    kc_err_t rc;
    /* read in odd-sized pieces so record boundaries and buffer boundaries do not line up */
    while (have < DOWN && (rc = kc_tls_read(c, got + have, have + 5000 <= DOWN ? 5000 : DOWN - have,
                                            &n, &e)) == KC_OK)
        have += n;
    assert_int_equal(kc_tls_read(c, got + DOWN, 100, &n, &e), KC_ERR_AGAIN); /* nothing more */
    assert_int_equal(have, DOWN);
    assert_memory_equal(got, down, DOWN);

    /* server closes: the client sees KC_ERR_CLOSED, not an error or more data */
    assert_true(SSL_shutdown(s.ssl) >= 0);
    pump(c, &s);
    assert_int_equal(kc_tls_read(c, got, 100, &n, &e), KC_ERR_CLOSED);
    assert_int_equal(n, 0);
    /* client closes: the server reads close_notify */
    assert_int_equal(kc_tls_shutdown(c, &e), KC_OK);
    assert_int_equal(kc_tls_write(c, up, 1, &e), KC_ERR_STATE);
    pump(c, &s);
    assert_int_equal(SSL_read_ex(s.ssl, got, 100, &n), 0);
    assert_int_equal(SSL_get_error(s.ssl, 0), SSL_ERROR_ZERO_RETURN);

    free(up);
    free(down);
    free(got);
    kc_tls_free(c);
    kc_tls_ctx_free(ctx);
    server_stop(&s);
}

static void out_pointer_stays_valid_while_writing(void **state)
{
    (void)state;
    kc_error_t e;
    kc_tls_ctx_t *ctx = mkctx(path("ca.pem"), NULL, false);
    kc_tls_t *c = NULL;
    struct server s;
    int sr;
    assert_int_equal(kc_tls_new(ctx, "localhost", &c, &e), KC_OK);
    server_start(&s, false);
    assert_int_equal(handshake(c, &s, &sr, &e), KC_OK);
    uint8_t msg[3000];
    fill(msg, sizeof msg, 1);
    assert_int_equal(kc_tls_write(c, msg, sizeof msg, &e), KC_OK);
    const uint8_t *p1;
    size_t n1 = kc_tls_out_peek(c, &p1);
    assert_true(n1 > sizeof msg);
    uint8_t *copy = malloc(n1);
    memcpy(copy, p1, n1);
    /* an "in-flight send" of p1; meanwhile lots more is written */
    uint8_t *big = calloc(1, 200000);
    assert_int_equal(kc_tls_write(c, big, 200000, &e), KC_OK);
    const uint8_t *p2;
    assert_int_equal(kc_tls_out_peek(c, &p2), n1);
    assert_ptr_equal(p1, p2);
    assert_memory_equal(p1, copy, n1);
    kc_tls_out_consume(c, 10); /* a partial send */
    assert_int_equal(kc_tls_out_peek(c, &p2), n1 - 10);
    assert_ptr_equal(p2, p1 + 10);
    kc_tls_out_consume(c, n1 - 10);
    assert_true(kc_tls_out_peek(c, &p2) > 200000); /* now the queued records */
    free(copy);
    free(big);
    kc_tls_free(c);
    kc_tls_ctx_free(ctx);
    server_stop(&s);
}

/* A receive in flight into kc_tls_in_space() must survive reads and writes on the same session:
 * the io_uring path keeps one receive posted while the connection works. */
static void in_space_survives_reads_and_writes(void **state)
{
    (void)state;
    kc_error_t e;
    kc_tls_ctx_t *ctx = mkctx(path("ca.pem"), NULL, false);
    kc_tls_t *c = NULL;
    struct server s;
    int sr;
    assert_int_equal(kc_tls_new(ctx, "localhost", &c, &e), KC_OK);
    server_start(&s, false);
    assert_int_equal(handshake(c, &s, &sr, &e), KC_OK);
    uint8_t msg[40000], got[40000];
    size_t n, have = 0;
    fill(msg, sizeof msg, 3);
    assert_int_equal(SSL_write_ex(s.ssl, msg, 20000, &n), 1);
    pump(c, &s); /* first 20000 bytes committed */
    assert_int_equal(SSL_write_ex(s.ssl, msg + 20000, 20000, &n), 1);
    size_t avail;
    uint8_t *dst = kc_tls_in_space(c, 65536, &avail); /* "post" the next receive */
    assert_non_null(dst);
    /* while it is in flight: read all committed plaintext, and write a request */
    kc_err_t rc;
    while ((rc = kc_tls_read(c, got + have, sizeof got - have, &n, &e)) == KC_OK)
        have += n;
    assert_int_equal(rc, KC_ERR_AGAIN);
    assert_int_equal(have, 20000);
    assert_int_equal(kc_tls_write(c, "ping", 4, &e), KC_OK);
    /* the receive completes into the pointer taken before */
    int r = BIO_read(s.out, dst, (int)avail);
    assert_true(r > 20000);
    kc_tls_in_commit(c, (size_t)r);
    while ((rc = kc_tls_read(c, got + have, sizeof got - have, &n, &e)) == KC_OK)
        have += n;
    assert_int_equal(have, sizeof msg);
    assert_memory_equal(got, msg, sizeof msg);
    kc_tls_free(c);
    kc_tls_ctx_free(ctx);
    server_stop(&s);
}

static void configuration_errors(void **state)
{
    (void)state;
    kc_tls_ctx_t *ctx = NULL;
    kc_error_t e;
    kc_tls_conf_t bad_alg = {.ca_location = path("ca.pem"), .endpoint_identification = "http"};
    assert_int_equal(kc_tls_ctx_new(&bad_alg, &ctx, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.endpoint.identification.algorithm"));

    kc_tls_conf_t no_ca = {.ca_location = path("missing.pem")};
    assert_int_equal(kc_tls_ctx_new(&no_ca, &ctx, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "missing.pem"));

    kc_tls_conf_t wrong_pw = {.ca_location = path("ca.pem"),
                              .cert_location = path("client.pem"),
                              .key_location = path("client.key"),
                              .key_password = "not-the-pw-XYZ"};
    assert_int_equal(kc_tls_ctx_new(&wrong_pw, &ctx, &e), KC_ERR_CONFIG);
    fprintf(stderr, "wrong key password: %s\n", e.msg);
    assert_non_null(strstr(e.msg, "ssl.key.password"));
    assert_null(strstr(e.msg, "not-the-pw-XYZ"));
    wrong_pw.key_password = NULL;
    assert_int_equal(kc_tls_ctx_new(&wrong_pw, &ctx, &e), KC_ERR_CONFIG);

    kc_tls_conf_t mismatch = {.ca_location = path("ca.pem"),
                              .cert_location = path("server.pem"),
                              .key_location = path("client.key"),
                              .key_password = "kpw-secret"};
    assert_int_equal(kc_tls_ctx_new(&mismatch, &ctx, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "does not match"));

    kc_tls_conf_t half = {.cert_location = path("client.pem")};
    assert_int_equal(kc_tls_ctx_new(&half, &ctx, &e), KC_ERR_CONFIG);
    assert_null(ctx);
}

/* ---- the material users have (io/tls_material.c) ---- */

static char *slurp(const char *name)
{
    FILE *f = fopen(path(name), "rb");
    assert_non_null(f);
    static char bufs[16][16384]; /* a test may hold this many at once */
    static int i;
    i = (i + 1) % 16;
    size_t n = fread(bufs[i], 1, sizeof bufs[i] - 1, f);
    fclose(f);
    bufs[i][n] = '\0';
    return bufs[i];
}

/* One handshake of a client built from `conf` against a server presenting <as>.pem (requiring a
 * client certificate when `require`). Returns the client's result (message in *e); *chain gets the
 * number of certificates the server received, `cipher` the negotiated cipher. */
static kc_err_t connect_conf(const kc_tls_conf_t *conf, const char *as, bool require, int *chain,
                             char *cipher, size_t ccap, kc_error_t *e)
{
    kc_tls_ctx_t *ctx = NULL;
    if (kc_tls_ctx_new(conf, &ctx, e) != KC_OK)
        fail_msg("kc_tls_ctx_new: %s", e->msg);
    kc_tls_t *c = NULL;
    assert_int_equal(kc_tls_new(ctx, "localhost", &c, e), KC_OK);
    struct server s;
    server_start_as(&s, as, require);
    int sr;
    kc_err_t rc = handshake(c, &s, &sr, e);
    if (rc == KC_OK && sr != 1) { /* TLS 1.3: the server's verdict arrives with the next read */
        uint8_t b[16];
        size_t n;
        pump(c, &s);
        rc = kc_tls_read(c, b, sizeof b, &n, e);
        if (rc == KC_ERR_AGAIN)
            rc = KC_OK;
    }
    STACK_OF(X509) *pc = SSL_get_peer_cert_chain(s.ssl);
    if (chain)
        *chain = pc ? sk_X509_num(pc) : 0;
    if (cipher)
        snprintf(cipher, ccap, "%s", rc == KC_OK ? kc_tls_cipher(c) : "");
    kc_tls_free(c);
    kc_tls_ctx_free(ctx);
    server_stop(&s);
    return rc;
}

static kc_err_t ctx_error(const kc_tls_conf_t *conf, kc_error_t *e)
{
    kc_tls_ctx_t *ctx = NULL;
    kc_err_t rc = kc_tls_ctx_new(conf, &ctx, e);
    if (rc == KC_OK)
        kc_tls_ctx_free(ctx);
    else
        fprintf(stderr, "expected: %s\n", e->msg);
    return rc;
}

static void keystore_presents_key_and_chain(void **state)
{
    (void)state;
    kc_error_t e;
    int chain = 0;
    /* The client trusts other-ca only (server2's issuer), so it cannot build its own chain from
     * its store: the CA the server receives (the server side's chain excludes the leaf) is the
     * keystore's extra certificate. */
    kc_tls_conf_t conf = {.ca_location = path("other-ca.pem"),
                          .keystore_location = path("client.p12"),
                          .keystore_password = "p12-secret-77"};
    assert_int_equal(connect_conf(&conf, "server2", true, &chain, NULL, 0, &e), KC_OK);
    assert_int_equal(chain, 1);
}

static void keystore_errors_name_key_and_file(void **state)
{
    (void)state;
    kc_error_t e;
    kc_tls_conf_t conf = {.ca_location = path("ca.pem"),
                          .keystore_location = path("client.p12"),
                          .keystore_password = "wrong-p12-pw-31"};
    assert_int_equal(ctx_error(&conf, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.keystore.password is wrong"));
    assert_non_null(strstr(e.msg, path("client.p12")));
    assert_null(strstr(e.msg, "wrong-p12-pw-31"));
    assert_null(strstr(e.msg, "p12-secret-77"));
    conf.keystore_password = NULL;
    assert_int_equal(ctx_error(&conf, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.keystore.password is unset"));
    conf.keystore_location = path("certonly.p12");
    conf.keystore_password = "p12-secret-77";
    assert_int_equal(ctx_error(&conf, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "holds no private key"));
    assert_non_null(strstr(e.msg, path("certonly.p12")));
    conf.keystore_location = path("client.pem"); /* PEM, not PKCS#12 */
    assert_int_equal(ctx_error(&conf, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "is not a PKCS#12 keystore"));
    conf.keystore_location = path("missing.p12");
    assert_int_equal(ctx_error(&conf, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.keystore.location"));
    assert_non_null(strstr(e.msg, "missing.p12"));
    /* a keystore and a PEM identity at once */
    kc_tls_conf_t both = {.ca_location = path("ca.pem"),
                          .keystore_location = path("client.p12"),
                          .keystore_password = "p12-secret-77",
                          .cert_location = path("client.pem"),
                          .key_location = path("client.key"),
                          .key_password = "kpw-secret"};
    assert_int_equal(ctx_error(&both, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "two client identities"));
}

static void pem_text_in_memory(void **state)
{
    (void)state;
    kc_error_t e;
    int chain = 0;
    char cert_and_chain[32768];
    snprintf(cert_and_chain, sizeof cert_and_chain, "%s%s", slurp("client.pem"), slurp("ca.pem"));
    kc_tls_conf_t conf = {.ca_pem = slurp("other-ca.pem"), /* as above: no chain from the store */
                          .cert_pem = cert_and_chain,
                          .key_pem = slurp("client.key"), /* encrypted */
                          .key_password = "kpw-secret"};
    assert_int_equal(connect_conf(&conf, "server2", true, &chain, NULL, 0, &e), KC_OK);
    assert_int_equal(chain, 1);          /* the chain that followed the certificate */
    conf.cert_pem = slurp("client.pem"); /* no chain after it: none sent */
    assert_int_equal(connect_conf(&conf, "server2", true, &chain, NULL, 0, &e), KC_OK);
    assert_int_equal(chain, 0);
    /* the CA as text trusts only what it holds: another CA fails verification */
    kc_tls_conf_t other = {.ca_pem = slurp("other-ca.pem")}; /* server.pem is from ca.pem */
    assert_int_equal(connect_conf(&other, "server", false, NULL, NULL, 0, &e), KC_ERR_TLS);
    assert_non_null(strstr(e.msg, "verify"));
    /* text that does not parse, each named; a key's text never echoed */
    kc_tls_conf_t bad_ca = {.ca_pem = "not a certificate"};
    assert_int_equal(ctx_error(&bad_ca, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.ca.pem"));
    kc_tls_conf_t bad_cert = {.ca_location = path("ca.pem"),
                              .cert_pem =
                                  "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                              .key_pem = slurp("client.key"),
                              .key_password = "kpw-secret"};
    assert_int_equal(ctx_error(&bad_cert, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.certificate.pem does not parse"));
    const char *fake_key =
        "-----BEGIN PRIVATE KEY-----\nkc-secret-key-body-QQQQ\n-----END PRIVATE KEY-----\n";
    kc_tls_conf_t bad_key = {
        .ca_location = path("ca.pem"), .cert_pem = slurp("client.pem"), .key_pem = fake_key};
    assert_int_equal(ctx_error(&bad_key, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.key.pem"));
    assert_null(strstr(e.msg, "kc-secret-key-body"));
    kc_tls_conf_t wrong_pw = {.ca_location = path("ca.pem"),
                              .cert_pem = slurp("client.pem"),
                              .key_pem = slurp("client.key"),
                              .key_password = "no-such-pw-88"};
    assert_int_equal(ctx_error(&wrong_pw, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.key.password missing or wrong"));
    assert_null(strstr(e.msg, "no-such-pw-88"));
    kc_tls_conf_t mismatch = {.ca_location = path("ca.pem"),
                              .cert_pem = slurp("server.pem"),
                              .key_pem = slurp("client.key"),
                              .key_password = "kpw-secret"};
    assert_int_equal(ctx_error(&mismatch, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.key.pem does not match ssl.certificate.pem"));
}

static void crl_refuses_revoked_server(void **state)
{
    (void)state;
    kc_error_t e;
    kc_tls_conf_t conf = {.ca_location = path("ca.pem"), .crl_location = path("crl.pem")};
    kc_err_t rc = connect_conf(&conf, "server", false, NULL, NULL, 0, &e);
    if (rc != KC_OK)
        fail_msg("the good server with the CRL: %s", e.msg);
    assert_int_equal(connect_conf(&conf, "revoked", false, NULL, NULL, 0, &e), KC_ERR_TLS);
    fprintf(stderr, "revoked: %s\n", e.msg);
    assert_non_null(strstr(e.msg, "revoked certificate"));
    assert_non_null(strstr(e.msg, "CN=revoked-broker"));
    assert_non_null(strstr(e.msg, "localhost"));
    assert_non_null(strstr(e.msg, path("crl.pem")));
    kc_tls_conf_t no_crl = {.ca_location = path("ca.pem")}; /* otherwise valid */
    assert_int_equal(connect_conf(&no_crl, "revoked", false, NULL, NULL, 0, &e), KC_OK);
    kc_tls_conf_t bad = {.ca_location = path("ca.pem"), .crl_location = path("ca.pem")};
    assert_int_equal(ctx_error(&bad, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.crl.location"));
}

static void cipher_suites_and_protocol_bounds(void **state)
{
    (void)state;
    kc_error_t e;
    char cipher[64];
    /* Java's IANA name of a TLS 1.2 suite, with TLS 1.2 only */
    kc_tls_conf_t iana = {.ca_location = path("ca.pem"),
                          .cipher_suites = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                          .enabled_protocols = "TLSv1.2"};
    assert_int_equal(connect_conf(&iana, "server", false, NULL, cipher, sizeof cipher, &e), KC_OK);
    assert_string_equal(cipher, "ECDHE-ECDSA-AES256-GCM-SHA384");
    /* a TLS 1.3 suite alone: TLS 1.3 with it */
    kc_tls_conf_t t13 = {.ca_location = path("ca.pem"), .cipher_suites = "TLS_AES_256_GCM_SHA384"};
    assert_int_equal(connect_conf(&t13, "server", false, NULL, cipher, sizeof cipher, &e), KC_OK);
    assert_string_equal(cipher, "TLS_AES_256_GCM_SHA384");
    /* ssl.protocol=TLSv1.2 caps the default 1.2..1.3 range */
    kc_tls_conf_t cap = {.ca_location = path("ca.pem"), .protocol = "TLSv1.2"};
    assert_int_equal(connect_conf(&cap, "server", false, NULL, cipher, sizeof cipher, &e), KC_OK);
    assert_null(strstr(cipher, "TLS_AES")); /* a TLS 1.2 cipher */
    /* contradictions are configuration errors */
    kc_tls_conf_t excl = {
        .ca_location = path("ca.pem"), .protocol = "TLSv1.2", .enabled_protocols = "TLSv1.3"};
    assert_int_equal(ctx_error(&excl, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.protocol=TLSv1.2 excludes"));
    kc_tls_conf_t only12 = {.ca_location = path("ca.pem"),
                            .cipher_suites = "ECDHE-ECDSA-AES128-GCM-SHA256",
                            .enabled_protocols = "TLSv1.3"};
    assert_int_equal(ctx_error(&only12, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "names no TLS 1.3 suite"));
    kc_tls_conf_t only13 = {.ca_location = path("ca.pem"),
                            .cipher_suites = "TLS_AES_128_GCM_SHA256",
                            .protocol = "TLSv1.2"};
    assert_int_equal(ctx_error(&only13, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "TLS 1.3 suites only"));
    kc_tls_conf_t unknown = {.ca_location = path("ca.pem"), .cipher_suites = "NO-SUCH-CIPHER"};
    assert_int_equal(ctx_error(&unknown, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "NO-SUCH-CIPHER"));
    kc_tls_conf_t old = {.ca_location = path("ca.pem"), .enabled_protocols = "TLSv1.1"};
    assert_int_equal(ctx_error(&old, &e), KC_ERR_CONFIG);
    assert_non_null(strstr(e.msg, "ssl.enabled.protocols"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handshake_with_right_ca),
        cmocka_unit_test(wrong_ca_is_verify_error),
        cmocka_unit_test(hostname_mismatch_is_error),
        cmocka_unit_test(identification_empty_accepts_mismatch),
        cmocka_unit_test(mtls_client_certificate),
        cmocka_unit_test(app_data_both_ways_and_close_notify),
        cmocka_unit_test(out_pointer_stays_valid_while_writing),
        cmocka_unit_test(in_space_survives_reads_and_writes),
        cmocka_unit_test(configuration_errors),
        cmocka_unit_test(keystore_presents_key_and_chain),
        cmocka_unit_test(keystore_errors_name_key_and_file),
        cmocka_unit_test(pem_text_in_memory),
        cmocka_unit_test(crl_refuses_revoked_server),
        cmocka_unit_test(cipher_suites_and_protocol_bounds),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
