/*
 * SASL GSSAPI (Kerberos V5, RFC 4752) through MIT krb5's GSS-API library, as Kafka speaks it:
 * after a SaslHandshake naming "GSSAPI", each SaslAuthenticate request carries one GSS token.
 *
 *     client                                    broker
 *     gss_init_sec_context -> token    ---->    (AP-REQ)
 *                                      <----    token (AP-REP, mutual authentication)
 *     gss_init_sec_context: complete   ---->    empty message (no token left to send)
 *                                      <----    wrap(layers offered, max message size)
 *     unwrap, choose "no security layer",
 *     wrap(0x01, max size 0, authzid)  ---->
 *                                      <----    empty: authenticated
 *
 * Kafka supports no integrity or confidentiality layer on the SASL channel (TLS is the way to
 * protect it), so the client picks "no security layer" and fails when the broker does not offer
 * it. The authorization identity is the client principal's name, as the Java client sends it.
 *
 * Credentials (kc_gss_cred_t, one per consumer, shared by its connections): the client principal
 * (sasl.kerberos.principal; empty = the keytab's or ticket cache's default) from the keytab
 * (sasl.kerberos.keytab; empty = the default ticket cache, e.g. after kinit) into a private
 * MEMORY ticket cache of its own, through gss_acquire_cred_from's credential store, so two
 * consumers in one process with different principals never share tickets and nothing touches
 * the process's default cache or environment (gss_krb5_ccache_name is process-wide). With a
 * keytab, MIT's library also gets a fresh TGT from it by itself when the one in the cache nears
 * expiry; on top of that a credential whose lifetime has run out is dropped and acquired again
 * (a new login), at most once per sasl.kerberos.min.time.before.relogin (0: never).
 *
 * Every call that may talk to the KDC (a login, a service ticket inside gss_init_sec_context) can
 * block for the KDC's timeouts, so kc_gss_step() and everything that calls GSS-API runs on the
 * loop's offload thread (io/offload.h), never on the network thread; conn_sasl.c does that.
 *
 * Errors: KC_ERR_AUTH whose message names the mechanism's step, the principal and the service,
 * with gss_display_status' text for the major and the minor (mechanism) code: a missing keytab,
 * a principal the keytab lacks, a KDC that is down all say so. Never key material: GSS-API's
 * messages name files and principals only.
 *
 * Threads: a kc_gss_cred_t is created on the application thread and then used on offload threads
 * (its login state under its mutex); a kc_gss_ctx_t (one exchange) belongs to whichever thread
 * currently holds the job it travels in (offload.h hands it over with release/acquire).
 */
#ifndef KC_IO_SASL_GSSAPI_H
#define KC_IO_SASL_GSSAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct kc_gss_conf {
    const char *service_name; /* sasl.kerberos.service.name, default "kafka" */
    const char *principal;    /* sasl.kerberos.principal; NULL/"" = the default one */
    const char *keytab;       /* sasl.kerberos.keytab; NULL/"" = the default ticket cache */
    int64_t min_relogin_ms;   /* sasl.kerberos.min.time.before.relogin; 0 = no re-login */
} kc_gss_conf_t;

typedef struct kc_gss_cred kc_gss_cred_t;
typedef struct kc_gss_ctx kc_gss_ctx_t;

/* Loads MIT krb5's libraries if no credential did yet (KC_ERR_UNSUPPORTED naming the Debian
 * package when they are not installed) and copies the configuration; talks to nobody (the first
 * login happens at the first exchange). */
kc_err_t kc_gss_cred_new(const kc_gss_conf_t *conf, kc_gss_cred_t **out, kc_error_t *err);
/* Releases the credential and destroys its private ticket cache. NULL is fine. */
void kc_gss_cred_free(kc_gss_cred_t *c);

/* One exchange with the broker whose advertised host is `host` (service "<service>@<host>"). */
kc_err_t kc_gss_ctx_new(kc_gss_cred_t *cred, const char *host, kc_gss_ctx_t **out, kc_error_t *err);
void kc_gss_ctx_free(kc_gss_ctx_t *x);

/*
 * One step, on the offload thread. `in` is the broker's last auth_bytes (NULL/0 first). On KC_OK
 * *out and *out_len hold the next message to send (it may be empty: the message after the context
 * is established without a last token), owned by the caller (free()). After the security-layer
 * reply, kc_gss_ctx_finished() is true: the broker's empty answer to it completes the login.
 */
kc_err_t kc_gss_step(kc_gss_ctx_t *x, const uint8_t *in, size_t in_len, uint8_t **out,
                     size_t *out_len, kc_error_t *err);
bool kc_gss_ctx_finished(const kc_gss_ctx_t *x);

/* ---- RFC 4752 security-layer framing (pure: no GSS-API; fuzzed in tests/fuzz) ---- */

#define KC_GSS_LAYER_NONE      0x01 /* no security layer: the only one Kafka uses */
#define KC_GSS_LAYER_INTEGRITY 0x02
#define KC_GSS_LAYER_CONFIDENT 0x04

/* The broker's unwrapped challenge: exactly 4 octets, the offered layers' bit mask and the
 * 3-octet big-endian maximum message size. KC_ERR_MALFORMED for another length; KC_ERR_AUTH when
 * "no security layer" is not offered (we support nothing else). */
kc_err_t kc_gss_layer_parse(const uint8_t *msg, size_t len, uint8_t *layers, uint32_t *max_size,
                            kc_error_t *err);
/* The client's answer before wrap: 0x01, a zero maximum size (RFC 4752: 0 when no layer is
 * chosen), then the authzid's bytes. Returns the length written, or 0 when `cap` is too small. */
size_t kc_gss_layer_reply(const char *authzid, uint8_t *out, size_t cap);

#endif
