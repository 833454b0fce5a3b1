/*
 * SASL OAUTHBEARER messages (RFC 7628 as Kafka uses them, KIP-255), pure functions.
 *
 * The client's initial message is the GS2 header "n,," (no channel binding, no authorization id:
 * Kafka takes the principal from the token), then \x01-separated key=value pairs, then \x01\x01:
 *
 *     n,,\x01auth=Bearer <token>\x01[<key>=<value>\x01]...\x01
 *
 * A broker that accepts the token answers with empty auth bytes. One that refuses it answers
 * with a JSON object ({"status": "invalid_token", "scope": ..., "openid-configuration": ...},
 * RFC 7628 3.2.2); the client must then send a single \x01 (kc_oauthbearer_client_ack) and the
 * broker fails the exchange with SASL_AUTHENTICATION_FAILED.
 *
 * Threads: no state; any thread. Tokens never appear in an error message.
 */
#ifndef KC_IO_SASL_OAUTHBEARER_H
#define KC_IO_SASL_OAUTHBEARER_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* The most extensions one token carries (Kafka's SaslExtensions have no limit; a bound keeps a
 * configuration typo from building a megabyte message). */
#define KC_OAUTHBEARER_MAX_EXTENSIONS 32

/* RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=". Kafka's
 * broker refuses anything else before it looks at the token. */
int kc_oauthbearer_token_ok(const char *token);

/* An extension key is 1*ALPHA and not "auth" (RFC 7628 3.1: reserved); a value is
 * *(VCHAR / SP / HTAB / CR / LF). KC_ERR_CONFIG naming the key (never the value) otherwise. */
kc_err_t kc_oauthbearer_extension_check(const char *key, const char *value, kc_error_t *err);

/* Parses "key=value,key=value" (sasl.oauthbearer.extensions, librdkafka's form) into `kv`
 * (alternating key, value; each a malloc'd copy the caller frees with kc_oauthbearer_kv_free),
 * checking each pair. *n gets the number of strings (twice the pairs). "" gives none. */
kc_err_t kc_oauthbearer_extensions_parse(const char *text, char ***kv, size_t *n, kc_error_t *err);
void kc_oauthbearer_kv_free(char **kv, size_t n);

/* The client's first message for `token` and the `n` strings of `kv` (alternating key, value),
 * malloc'd into *out (not NUL-terminated; *out_len bytes). KC_ERR_AUTH if the token is not a
 * b64token, KC_ERR_CONFIG for a bad extension. */
kc_err_t kc_oauthbearer_client_message(const char *token, const char *const *kv, size_t n,
                                       uint8_t **out, size_t *out_len, kc_error_t *err);

/* The one-byte answer to a server error message. */
extern const uint8_t kc_oauthbearer_client_ack[1];

/* Reads a server error message: KC_OK and `detail` (NUL-terminated, at most cap-1 bytes) set to
 * "status <status>[, scope <scope>][, openid-configuration <url>]" when it is the JSON object of
 * RFC 7628 3.2.2 with a string "status"; KC_ERR_MALFORMED otherwise (not JSON, not an object, no
 * status, a member that is not a string). Printable ASCII only reaches `detail`. */
kc_err_t kc_oauthbearer_server_error(const uint8_t *in, size_t n, char *detail, size_t cap,
                                     kc_error_t *err);

#endif
