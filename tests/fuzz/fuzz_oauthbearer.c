/* libFuzzer target: the OAUTHBEARER bytes that come from outside. Byte 0 picks the parser:
 * even, the broker's answer to our client message, fed through the exchange (io/sasl.c over a
 * token slot: empty = accepted, else the RFC 7628 error JSON, answered with \x01); odd, an OIDC
 * token endpoint's answer body (runtime/oidc.c: JSON, then the JWT payload's exp and sub). The
 * token is fixed, so our own error messages are checked not to carry it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oauth_token.h"
#include "oidc.h"
#include "sasl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char TOKEN[] = "fuzz.token.kc-leak-probe";

static void no_leak(const kc_error_t *e)
{
    if (strstr(e->msg, TOKEN))
        abort(); /* a token must never reach an error message */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] & 1;
    data++;
    size--;
    kc_error_t err = {0};
    if (which == 1) {
        kc_oauth_token_t t;
        if (kc_oidc_parse_response((const char *)data, size, 1700000000000LL, "https://idp/t",
                                   "cid", &t, &err) == KC_OK) {
            if (!t.value || !t.principal || t.expiry_ms <= 1700000000000LL)
                abort();
            kc_oauth_token_clear(&t);
        }
        return 0;
    }
    kc_oauth_slot_t *slot;
    if (kc_oauth_slot_new(&slot, &err) != KC_OK)
        return 0;
    kc_oauth_token_t t = {.value = strdup(TOKEN), .principal = strdup("p"), .expiry_ms = INT64_MAX};
    kc_oauth_slot_put(slot, &t);
    kc_sasl_t *s;
    if (kc_sasl_new_oauthbearer(slot, &s, &err) == KC_OK) {
        const uint8_t *out;
        size_t n;
        if (kc_sasl_step(s, NULL, 0, &out, &n, &err) == KC_OK) {
            if (kc_sasl_step(s, data, size, &out, &n, &err) == KC_OK && !kc_sasl_done(s) &&
                (n != 1 || out[0] != 0x01))
                abort(); /* an error message is answered with exactly \x01 */
            /* (kc_sasl_server_detail is the server's own words: it may repeat anything) */
            no_leak(&err);
        }
        kc_sasl_free(s);
    }
    kc_oauth_slot_free(slot);
    return 0;
}
