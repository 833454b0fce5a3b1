/*
 * The OAUTHBEARER token handoff: one slot per consumer holding the current token, written by
 * the thread that obtains tokens (the consumer's token refresher, runtime/oauth_refresh.c: the
 * application's token callback or the OIDC client, both of which may block) and read by the
 * network thread whenever a connection authenticates or re-authenticates (KIP-368), so the
 * network thread never waits on a token endpoint.
 *
 * Owner: created by the application thread in kc_consumer_new (before any thread reads it),
 * freed after the network thread and the refresher have stopped. Shared: `mu` guards every
 * field; the writer swaps a whole token in under it, a reader builds its client message under
 * it (a few hundred bytes copied: the lock is never held across I/O or a callback). A mutex
 * rather than atomics: a token is several strings that must change together, and both sides
 * touch the slot once per token lifetime or per authentication, never on a hot path.
 *
 * Secrets: the token and the extension values are wiped (OPENSSL_cleanse) when replaced or
 * freed and never reach a log or an error message.
 */
#ifndef KC_IO_OAUTH_TOKEN_H
#define KC_IO_OAUTH_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* A token as its source hands it over; every string malloc'd, owned by whoever holds it. */
typedef struct kc_oauth_token {
    char *value;       /* the bearer token (a JWT for OIDC) */
    int64_t expiry_ms; /* wall clock, ms since the epoch, when it stops being valid */
    char *principal;   /* who it names (logs only; Kafka reads the principal from the token) */
    char **kv;         /* SASL extensions, alternating key and value */
    size_t n_kv;       /* strings in kv (twice the pairs) */
} kc_oauth_token_t;

/* Wipes and frees the strings; the struct itself is the caller's. NULL-safe, idempotent. */
void kc_oauth_token_clear(kc_oauth_token_t *t);

typedef struct kc_oauth_slot kc_oauth_slot_t;

kc_err_t kc_oauth_slot_new(kc_oauth_slot_t **out, kc_error_t *err);
void kc_oauth_slot_free(kc_oauth_slot_t *s);

/* Writer: makes *t the current token (its strings move into the slot; *t is left empty) and
 * forgets the last failure. */
void kc_oauth_slot_put(kc_oauth_slot_t *s, kc_oauth_token_t *t);
/* Writer: a refresh failed. The current token (if any) stays in use until it expires; `why`
 * (already free of secrets) is what a connection reports once it has none that is valid. */
void kc_oauth_slot_fail(kc_oauth_slot_t *s, const kc_error_t *why);

/* Reader (network thread): the RFC 7628 client message for the current token, malloc'd into
 * *out. KC_ERR_AUTH when there is no token, or it expired at or before now_wall_ms (the message
 * says so, and adds the last refresh failure). */
kc_err_t kc_oauth_slot_message(kc_oauth_slot_t *s, int64_t now_wall_ms, uint8_t **out,
                               size_t *out_len, kc_error_t *err);

/* How many tokens were put so far (tests; any thread). */
uint64_t kc_oauth_slot_generation(kc_oauth_slot_t *s);

#endif
