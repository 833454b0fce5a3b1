/* libFuzzer target: what a broker sends a GSSAPI client that this code parses itself (the GSS
 * tokens are MIT krb5's to parse). Byte 0 picks:
 *   even: the unwrapped RFC 4752 security-layer challenge (kc_gss_layer_parse), and when it is
 *         accepted the answer built from it with the rest of the input as the authzid, checked
 *         byte by byte;
 *   odd:  a SaslAuthenticate response body (byte 1 picks the version) decoded by the generated
 *         codec and judged as the GSSAPI exchange judges it (kc_sasl_authenticate_error): any
 *         error code gives KC_ERR_AUTH naming GSSAPI, none gives KC_OK. */
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "sasl_gssapi.h"
#include "sasl_kafka.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void layer(const uint8_t *d, size_t n)
{
    kc_error_t err;
    uint8_t layers = 0;
    uint32_t max = 0;
    size_t head = n < 4 ? n : 4;
    /* Up to 8 bytes: all of them are the challenge (its length check); longer: the first 4 are,
     * and the rest is the authzid. */
    if (kc_gss_layer_parse(d, n <= 8 ? n : head, &layers, &max, &err) != KC_OK)
        return;
    if (!(layers & KC_GSS_LAYER_NONE) || max > 0xffffff)
        abort(); /* accepted a challenge without "no security layer", or a 25-bit size */
    size_t idlen = n > 4 ? n - 4 : 0;
    char *authzid = malloc(idlen + 1);
    if (!authzid)
        return;
    memcpy(authzid, d + 4, idlen);
    authzid[idlen] = '\0';
    size_t len = strlen(authzid);
    uint8_t out[64];
    size_t w = kc_gss_layer_reply(authzid, out, sizeof out);
    if (len + 4 <= sizeof out) {
        if (w != len + 4 || out[0] != KC_GSS_LAYER_NONE || out[1] || out[2] || out[3] ||
            memcmp(out + 4, authzid, len) != 0)
            abort();
    } else if (w != 0) {
        abort(); /* wrote past what fits */
    }
    free(authzid);
}

static void response(const uint8_t *d, size_t n)
{
    if (n < 1)
        return;
    int16_t v = (int16_t)(d[0] % (KC_SASL_AUTHENTICATE_RESPONSE_MAX_VERSION + 1));
    kc_rbuf_t r = kc_rbuf(d + 1, n - 1);
    kc_arena_t a = {0};
    kc_sasl_authenticate_response_t resp;
    kc_error_t err;
    if (kc_sasl_authenticate_response_decode(&resp, v, &r, &a, &err) == KC_OK) {
        kc_err_t rc = kc_sasl_authenticate_error(&resp, KC_SASL_GSSAPI, "broker:9092", NULL, &err);
        if (resp.error_code != 0 && (rc != KC_ERR_AUTH || !strstr(err.msg, "SASL GSSAPI")))
            abort();
        if (resp.error_code == 0 && rc != KC_OK)
            abort();
    }
    kc_arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1)
        response(data + 1, size - 1);
    else
        layer(data + 1, size - 1);
    return 0;
}
