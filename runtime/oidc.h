/*
 * OIDC client credentials (KIP-768, sasl.oauthbearer.method=oidc): POSTs the RFC 6749 4.4 grant
 * to sasl.oauthbearer.token.endpoint.url with libcurl and reads the token from the answer.
 *
 * The request: HTTP Basic client authentication (RFC 6749 2.3.1: id and secret each
 * form-urlencoded, as Java's and librdkafka's clients send them), body
 * "grant_type=client_credentials[&scope=<scope>]". HTTPS only, the peer certificate and host
 * name verified against https.ca.location, else ssl.ca.location, else the system's CAs; no
 * redirects (a redirect would carry the Authorization header elsewhere); 10 s to connect, 30 s
 * in all.
 *
 * The answer (kc_oidc_parse_response, pure): a JSON object with a string access_token (a bearer
 * token), token_type "Bearer" when present (any case), and expires_in. When the token is a JWT
 * its payload's exp (seconds) and sub are read too: exp is the expiry (it is what the broker
 * enforces), else now + expires_in; sub is the principal, else the client id. A token with
 * neither exp nor expires_in is refused: it could not be refreshed in time.
 *
 * Errors never contain the client secret or a token: KC_ERR_AUTH for a refusal (HTTP 400/401/403
 * and the endpoint's error and error_description), KC_ERR_TRANSPORT when the endpoint cannot be
 * reached, KC_ERR_MALFORMED for an answer that does not parse; each names the mechanism and the
 * endpoint URL.
 *
 * Threads: blocking; the token refresher's thread or kc_consumer_new's (never the network
 * thread). A kc_oidc_t is owned by the refresher and used by one thread at a time.
 */
#ifndef KC_RUNTIME_OIDC_H
#define KC_RUNTIME_OIDC_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "oauth_token.h"

typedef struct kc_oidc_conf {
    const char *url, *client_id, *client_secret, *scope, *ca_location, *extensions;
} kc_oidc_conf_t;

typedef struct kc_oidc kc_oidc_t;

/* Loads libcurl if no client did yet (KC_ERR_UNSUPPORTED naming the Debian package when it is
 * not installed) and copies the configuration (the secret is wiped on free). KC_ERR_CONFIG for
 * bad extensions. */
kc_err_t kc_oidc_new(const kc_oidc_conf_t *conf, kc_oidc_t **out, kc_error_t *err);
void kc_oidc_free(kc_oidc_t *o);
/* One grant; on KC_OK *out holds the token (with the configured extensions). */
kc_err_t kc_oidc_fetch(kc_oidc_t *o, kc_oauth_token_t *out, kc_error_t *err);

/* Reads an answer body. `url` names the endpoint in errors; `client_id` is the principal when
 * the token names none. */
kc_err_t kc_oidc_parse_response(const char *body, size_t n, int64_t now_wall_ms, const char *url,
                                const char *client_id, kc_oauth_token_t *out, kc_error_t *err);

#endif
