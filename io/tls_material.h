/*
 * What a client TLS context trusts and presents, read from the configuration into an SSL_CTX:
 *   - trust: ssl.ca.location (PEM file or hashed directory) and/or ssl.ca.pem (PEM text); the
 *     system store when neither is given; ssl.crl.location adds revocation lists and turns on the
 *     revocation check of the broker's certificate (X509_V_FLAG_CRL_CHECK);
 *   - identity (mutual TLS): a certificate (ssl.certificate.location or ssl.certificate.pem, a
 *     chain may follow it) with its key (ssl.key.location or ssl.key.pem, decrypted with
 *     ssl.key.password), or a PKCS#12 keystore (ssl.keystore.location + ssl.keystore.password)
 *     holding the key, its certificate and the chain's extra certificates;
 *   - what is offered: ssl.enabled.protocols and ssl.protocol (protocol bounds) and
 *     ssl.cipher.suites (TLS 1.2 and TLS 1.3 suites in one list, see kc_tls_material_load).
 *
 * Why one module: every source of material is a way to fill the same SSL_CTX, and each error
 * must name the setting and the file it came from; the TLS session code (tls.c) never needs to
 * know where a certificate came from.
 *
 * Errors are KC_ERR_CONFIG naming the key and, for a file, its path, with OpenSSL's reason. A
 * password, or the text of a PEM key, never appears in a message.
 *
 * Threads: called by kc_tls_ctx_new only (the application thread, while the configuration is
 * applied); no state of its own. OpenSSL's error queue is per thread.
 */
#ifndef KC_IO_TLS_MATERIAL_H
#define KC_IO_TLS_MATERIAL_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "tls.h"

/* Loads everything `conf` names into `c` (a fresh TLS_client_method context). ssl.cipher.suites
 * holds OpenSSL cipher strings, Java's IANA names (TLS_ECDHE_..._WITH_...), or both, separated
 * by ':', ',' or spaces; the TLS 1.3 suite names among them (TLS_AES_128_GCM_SHA256, ...) make up
 * the TLS 1.3 list, the rest the TLS 1.2 list. As in Java the list is the whole set offered: no
 * TLS 1.3 name means no TLS 1.3, no TLS 1.2 entry means no TLS 1.2. */
kc_err_t kc_tls_material_load(SSL_CTX *c, const kc_tls_conf_t *conf, kc_error_t *err);

/* OpenSSL's reason for the most recent error on this thread (then clears the queue), in buf. */
const char *kc_tls_ssl_reason(char *buf, size_t cap);

#endif
