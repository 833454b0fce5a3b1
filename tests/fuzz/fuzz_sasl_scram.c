/* libFuzzer target: the SCRAM client's parsing of server-first and server-final messages (the
 * only SASL bytes that come from the network). Input: byte 0 picks SHA-256/512, then the
 * server-first message, a '\n', and the server-final message. The client nonce is fixed to
 * "fuzz" so inputs starting with "r=fuzz" reach the key derivation and signature check. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sasl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    kc_sasl_mech_t mech = data[0] & 1 ? KC_SASL_SCRAM_SHA_512 : KC_SASL_SCRAM_SHA_256;
    data++;
    size--;
    const uint8_t *nl = memchr(data, '\n', size);
    size_t first_len = nl ? (size_t)(nl - data) : size;
    kc_sasl_t *s = NULL;
    kc_error_t err;
    if (kc_sasl_new(mech, "fuzz-user", "fuzz-password", &s, &err) != KC_OK)
        return 0;
    kc_sasl__set_nonce_for_test(s, "fuzz", &err);
    const uint8_t *out;
    size_t out_len;
    if (kc_sasl_step(s, NULL, 0, &out, &out_len, &err) == KC_OK &&
        kc_sasl_step(s, data, first_len, &out, &out_len, &err) == KC_OK && nl)
        kc_sasl_step(s, nl + 1, size - first_len - 1, &out, &out_len, &err);
    kc_sasl_free(s);
    return 0;
}
