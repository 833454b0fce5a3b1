/*
 * TLS client over memory buffers (OpenSSL 3): no sockets here. The connection layer moves
 * ciphertext between the socket and this module; this module turns it into plaintext and back.
 *
 * Why memory BIOs: the event loop (io_uring or epoll) owns the socket and its buffers; OpenSSL
 * never calls recv/send itself, so TLS works the same over both backends and in unit tests.
 * kTLS is not implemented: it needs a socket BIO and the kernel `tls` module, which is absent on
 * the target machines (TCP_ULP gives ENOENT there; OpenSSL would silently fall back).
 *
 * Threads:
 *   - kc_tls_ctx_t (one per consumer, wraps the SSL_CTX: CA store, client cert/key, verify mode)
 *     is created on the application thread while the configuration is applied, before the
 *     network thread starts; from then on only the network thread uses it (kc_tls_new) until the
 *     consumer is closed, when the application thread frees it after joining the network thread.
 *     Each SSL holds its own reference to the SSL_CTX, so freeing the context while sessions are
 *     alive is safe too.
 *   - kc_tls_t (one per connection) is owned by the network thread.
 *
 * Buffers:
 *   - kc_tls_feed() copies the ciphertext (the caller's receive buffer is free when it returns);
 *     kc_tls_in_space()/kc_tls_in_commit() let the socket receive into this module's input
 *     buffer instead (see there for how long that pointer lives).
 *   - kc_tls_read() decrypts into the caller's buffer (e.g. straight into the exact-size frame
 *     buffer of a response).
 *   - kc_tls_write() copies/encrypts the plaintext at once (the caller's buffer is free on return);
 *     the records wait in this module's output queue.
 *   - kc_tls_out_peek() returns a pointer into this module's output staging buffer. It stays valid
 *     and unchanged until kc_tls_out_consume() covers it or kc_tls_free(), even if more records
 *     are produced meanwhile (they queue behind it) — so an asynchronous send (io_uring) may point
 *     at it while the connection keeps writing.
 *
 * Call sequence (connection layer, network thread):
 *
 *     kc_tls_new(ctx, host_or_ip, &t, &err)                  -- after TCP connect succeeds
 *     loop until kc_tls_handshake() == KC_OK:
 *         rc = kc_tls_handshake(t, &err)                     -- KC_OK | KC_ERR_AGAIN | error
 *         send everything kc_tls_out_peek() returns; kc_tls_out_consume(t, sent)
 *         if rc == KC_ERR_AGAIN: recv ciphertext; kc_tls_feed(t, data, n, &err)
 *                                (or recv into kc_tls_in_space(); kc_tls_in_commit())
 *     (then SASL and Kafka requests)
 *     to send a request:  kc_tls_write(t, frame, len, &err); then flush the output as above
 *     on ciphertext:      kc_tls_feed(); then kc_tls_read() until KC_ERR_AGAIN; then flush the
 *                         output too (TLS 1.3 key updates produce records while reading)
 *     on close:           kc_tls_shutdown(t) queues close_notify; flush; close the socket;
 *                         kc_tls_free(t)
 *     kc_tls_read() returning KC_ERR_CLOSED means the broker sent close_notify.
 *
 * Errors: every failure is KC_ERR_TLS (or KC_ERR_CONFIG at context creation) with a message that
 * names the reason, e.g. "certificate verify failed: self-signed certificate in certificate chain"
 * or "hostname mismatch: certificate is for DNS:localhost, IP:127.0.0.1, connected to 127.0.0.2".
 * A broker certificate listed in ssl.crl.location fails with "revoked", the certificate's subject
 * and serial. An alert from the broker that ends the handshake (no shared cipher suite or
 * protocol version, a client certificate refused or missing) names the alert and what this
 * client offered (versions, ssl.cipher.suites, whether a client certificate was configured); a
 * failure without a recognisable alert (Kafka 2.8 answers a refusal with a record OpenSSL cannot
 * parse) still says what was offered; with TLS 1.3 the broker's verdict on the client certificate
 * arrives after the client's side of the handshake is done, so the first kc_tls_read reports it
 * (KC_ERR_TLS, the same message): the connection layer treats a TLS failure before its first answer
 * as final. The caller prefixes the broker address. Key passwords never appear in any message or
 * log.
 */
#ifndef KC_IO_TLS_H
#define KC_IO_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Kafka / librdkafka names in comments (io/tls_material.h says how each is read). Strings are
 * read during kc_tls_ctx_new() only; NULL or "" = not given. */
typedef struct kc_tls_conf {
    const char *ca_location;   /* ssl.ca.location: PEM file or hashed directory */
    const char *ca_pem;        /* ssl.ca.pem: PEM CA certificates as text (no CA given: system) */
    const char *crl_location;  /* ssl.crl.location: PEM CRLs; turns on the revocation check */
    const char *cert_location; /* ssl.certificate.location: PEM client certificate (mTLS) */
    const char *cert_pem;      /* ssl.certificate.pem: the same as text */
    const char *key_location;  /* ssl.key.location: PEM private key for the certificate */
    const char *key_pem;       /* ssl.key.pem: the same as text (a secret) */
    const char *key_password;  /* ssl.key.password: for an encrypted key; used once, not kept */
    const char *keystore_location; /* ssl.keystore.location: PKCS#12 key + certificate + chain */
    const char *keystore_password; /* ssl.keystore.password: used once, not kept */
    const char *cipher_suites;     /* ssl.cipher.suites: TLS 1.2 and 1.3 suites, one list */
    const char *enabled_protocols; /* ssl.enabled.protocols: "TLSv1.2,TLSv1.3" (the default) */
    const char *protocol;          /* ssl.protocol: TLSv1.3 (default, no cap) or TLSv1.2 (cap) */
    /* ssl.endpoint.identification.algorithm: "https" (also when NULL: verify the broker's host
     * name or IP against its certificate, Kafka's default) or "" (chain only, no name check). */
    const char *endpoint_identification;
} kc_tls_conf_t;

typedef struct kc_tls_ctx kc_tls_ctx_t;
typedef struct kc_tls kc_tls_t;

/* Builds the shared context: TLS 1.2+ (narrowed by the protocol bounds), peer verification always
 * on. KC_ERR_CONFIG explains bad material (which setting, which path, OpenSSL's reason; never a
 * password or key text). Application thread, at configuration. */
kc_err_t kc_tls_ctx_new(const kc_tls_conf_t *conf, kc_tls_ctx_t **out, kc_error_t *err);
void kc_tls_ctx_free(kc_tls_ctx_t *ctx);

/* A client session for one connection to `server_name` (a DNS name → SNI + host name check, or
 * an IPv4/IPv6 literal → IP address check, no SNI). Network thread. */
kc_err_t kc_tls_new(kc_tls_ctx_t *ctx, const char *server_name, kc_tls_t **out, kc_error_t *err);
void kc_tls_free(kc_tls_t *t);

/* Hands ciphertext received from the socket to TLS (one copy). */
kc_err_t kc_tls_feed(kc_tls_t *t, const uint8_t *data, size_t len, kc_error_t *err);

/* The copy-free alternative: receive straight into the input buffer. kc_tls_in_space() returns
 * room for at least `min` bytes (*avail = all the room there is; NULL when out of memory); recv
 * into it, then kc_tls_in_commit() the bytes received. The pointer stays valid until
 * kc_tls_in_commit(), the next kc_tls_in_space() or kc_tls_feed(), or kc_tls_free(); reads,
 * writes and the handshake never move it, so with io_uring one receive may stay in flight while
 * the connection keeps writing and reading what was committed before. */
uint8_t *kc_tls_in_space(kc_tls_t *t, size_t min, size_t *avail);
void kc_tls_in_commit(kc_tls_t *t, size_t n);

/* Drives the handshake: KC_OK once complete (and on every later call), KC_ERR_AGAIN when it needs
 * more ciphertext from the peer (flush the output first), KC_ERR_TLS on failure (final). */
kc_err_t kc_tls_handshake(kc_tls_t *t, kc_error_t *err);

/* Encrypts all of `len` plaintext bytes into the output queue (any size; records are ≤ 16 KiB).
 * KC_ERR_STATE before the handshake completes or after shutdown. */
kc_err_t kc_tls_write(kc_tls_t *t, const void *data, size_t len, kc_error_t *err);

/* Decrypts up to `cap` bytes into `buf`; *n is set. KC_OK with *n > 0, KC_ERR_AGAIN (*n == 0)
 * when more ciphertext is needed, KC_ERR_CLOSED when the peer sent close_notify, KC_ERR_TLS on a
 * protocol error (final). */
kc_err_t kc_tls_read(kc_tls_t *t, void *buf, size_t cap, size_t *n, kc_error_t *err);

/* Ciphertext waiting to be sent: returns its length (0 = nothing) and a pointer to it (see
 * "Buffers" above for its lifetime). */
size_t kc_tls_out_peek(kc_tls_t *t, const uint8_t **data);
/* Marks `n` bytes of what kc_tls_out_peek() returned as sent. */
void kc_tls_out_consume(kc_tls_t *t, size_t n);

/* Queues close_notify (flush it, then close the socket). Later writes fail with KC_ERR_STATE. */
kc_err_t kc_tls_shutdown(kc_tls_t *t, kc_error_t *err);

/* The negotiated protocol ("TLSv1.3") and cipher, for logs and stats; "" before the handshake. */
const char *kc_tls_version(const kc_tls_t *t);
const char *kc_tls_cipher(const kc_tls_t *t);

#endif
