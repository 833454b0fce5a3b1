/* SASL OAUTHBEARER messages (see sasl_oauthbearer.h). No state; any thread. */
#include "sasl_oauthbearer.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>

const uint8_t kc_oauthbearer_client_ack[1] = {0x01};

static bool is_alpha(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

int kc_oauthbearer_token_ok(const char *token)
{
    if (!token || !*token)
        return 0;
    const char *p = token;
    for (; *p && *p != '='; p++) {
        unsigned char c = (unsigned char)*p;
        if (!(is_alpha(c) || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
              c == '~' || c == '+' || c == '/'))
            return 0;
    }
    if (p == token)
        return 0; /* at least one character before the padding */
    for (; *p; p++)
        if (*p != '=')
            return 0;
    return 1;
}

kc_err_t kc_oauthbearer_extension_check(const char *key, const char *value, kc_error_t *err)
{
    if (!key || !*key)
        return kc_fail(err, KC_ERR_CONFIG, "SASL OAUTHBEARER: an extension has an empty key");
    for (const char *p = key; *p; p++)
        if (!is_alpha((unsigned char)*p))
            return kc_fail(err, KC_ERR_CONFIG,
                           "SASL OAUTHBEARER: extension key '%.40s' is not letters only (RFC 7628)",
                           key);
    if (strcmp(key, "auth") == 0)
        return kc_fail(err, KC_ERR_CONFIG,
                       "SASL OAUTHBEARER: extension key 'auth' is reserved for the token");
    for (const char *p = value ? value : ""; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (!((c >= 0x21 && c <= 0x7e) || c == ' ' || c == '\t' || c == '\r' || c == '\n'))
            return kc_fail(err, KC_ERR_CONFIG,
                           "SASL OAUTHBEARER: extension '%.40s' has a value with a character "
                           "RFC 7628 does not allow",
                           key);
    }
    return KC_OK;
}

void kc_oauthbearer_kv_free(char **kv, size_t n)
{
    for (size_t i = 0; kv && i < n; i++) {
        if (kv[i]) {
            OPENSSL_cleanse(kv[i], strlen(kv[i]));
            free(kv[i]);
        }
    }
    free(kv);
}

kc_err_t kc_oauthbearer_extensions_parse(const char *text, char ***kv_out, size_t *n_out,
                                         kc_error_t *err)
{
    *kv_out = NULL;
    *n_out = 0;
    if (!text || !*text)
        return KC_OK;
    char **kv = calloc(2 * KC_OAUTHBEARER_MAX_EXTENSIONS, sizeof *kv);
    if (!kv)
        return kc_fail(err, KC_ERR_NOMEM, "SASL OAUTHBEARER: out of memory");
    size_t n = 0;
    const char *p = text;
    kc_err_t rc = KC_OK;
    while (rc == KC_OK) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq) {
            rc = kc_fail(err, KC_ERR_CONFIG, "sasl.oauthbearer.extensions: '%.*s' is not key=value",
                         (int)(len > 40 ? 40 : len), p);
            break;
        }
        if (n == 2 * KC_OAUTHBEARER_MAX_EXTENSIONS) {
            rc = kc_fail(err, KC_ERR_CONFIG, "sasl.oauthbearer.extensions: more than %d",
                         KC_OAUTHBEARER_MAX_EXTENSIONS);
            break;
        }
        kv[n] = strndup(p, (size_t)(eq - p));
        kv[n + 1] = strndup(eq + 1, len - (size_t)(eq - p) - 1);
        n += 2;
        if (!kv[n - 2] || !kv[n - 1])
            rc = kc_fail(err, KC_ERR_NOMEM, "SASL OAUTHBEARER: out of memory");
        else
            rc = kc_oauthbearer_extension_check(kv[n - 2], kv[n - 1], err);
        if (!comma)
            break;
        p = comma + 1;
    }
    if (rc != KC_OK) {
        kc_oauthbearer_kv_free(kv, n);
        return rc;
    }
    *kv_out = kv;
    *n_out = n;
    return KC_OK;
}

kc_err_t kc_oauthbearer_client_message(const char *token, const char *const *kv, size_t n,
                                       uint8_t **out, size_t *out_len, kc_error_t *err)
{
    *out = NULL;
    *out_len = 0;
    if (!kc_oauthbearer_token_ok(token))
        return kc_fail(err, KC_ERR_AUTH,
                       "SASL OAUTHBEARER: the token is empty or not a bearer token (RFC 6750 "
                       "b64token)");
    if (n % 2 != 0 || n > 2 * KC_OAUTHBEARER_MAX_EXTENSIONS)
        return kc_fail(err, KC_ERR_CONFIG,
                       "SASL OAUTHBEARER: extensions come in key, value pairs (at most %d)",
                       KC_OAUTHBEARER_MAX_EXTENSIONS);
    static const char head[] = "n,,\x01"
                               "auth=Bearer ";
    size_t len = sizeof head - 1 + strlen(token) + 1;
    for (size_t i = 0; i < n; i += 2) {
        kc_err_t rc = kc_oauthbearer_extension_check(kv[i], kv[i + 1], err);
        if (rc != KC_OK)
            return rc;
        len += strlen(kv[i]) + 1 + strlen(kv[i + 1] ? kv[i + 1] : "") + 1;
    }
    len += 1;
    uint8_t *m = malloc(len), *w = m;
    if (!m)
        return kc_fail(err, KC_ERR_NOMEM, "SASL OAUTHBEARER: out of memory");
    memcpy(w, head, sizeof head - 1);
    w += sizeof head - 1;
    size_t tl = strlen(token);
    memcpy(w, token, tl);
    w += tl;
    *w++ = 0x01;
    for (size_t i = 0; i < n; i += 2) {
        const char *v = kv[i + 1] ? kv[i + 1] : "";
        size_t kl = strlen(kv[i]), vl = strlen(v);
        memcpy(w, kv[i], kl);
        w += kl;
        *w++ = '=';
        memcpy(w, v, vl);
        w += vl;
        *w++ = 0x01;
    }
    *w++ = 0x01;
    *out = m;
    *out_len = (size_t)(w - m);
    return KC_OK;
}

/* Appends ", <name> <value>" (or "<name> <value>" first) to detail, printable ASCII only. */
static void put_member(char *detail, size_t cap, size_t *used, const char *name, const char *v)
{
    int k = snprintf(detail + *used, cap - *used, "%s%s ", *used ? ", " : "", name);
    if (k < 0 || (size_t)k >= cap - *used) {
        *used = cap - 1;
        return;
    }
    *used += (size_t)k;
    for (; *v && *used + 1 < cap; v++)
        detail[(*used)++] = (*v >= 0x20 && *v <= 0x7e) ? *v : '?';
    detail[*used] = '\0';
}

kc_err_t kc_oauthbearer_server_error(const uint8_t *in, size_t n, char *detail, size_t cap,
                                     kc_error_t *err)
{
    if (cap)
        detail[0] = '\0';
    json_error_t je;
    /* JSON_REJECT_DUPLICATES: two "status" members would make the message ambiguous. */
    json_t *o = json_loadb((const char *)in, n, JSON_REJECT_DUPLICATES, &je);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        return kc_fail(err, KC_ERR_MALFORMED,
                       "SASL OAUTHBEARER: the server's %zu-byte message is not a JSON object", n);
    }
    static const char *const names[] = {"status", "scope", "openid-configuration"};
    const char *vals[3] = {NULL, NULL, NULL};
    for (size_t i = 0; i < 3; i++) {
        json_t *m = json_object_get(o, names[i]);
        if (m && !json_is_string(m)) {
            json_decref(o);
            return kc_fail(err, KC_ERR_MALFORMED,
                           "SASL OAUTHBEARER: the server's error member \"%s\" is not a string",
                           names[i]);
        }
        vals[i] = m ? json_string_value(m) : NULL;
    }
    if (!vals[0]) {
        json_decref(o);
        return kc_fail(err, KC_ERR_MALFORMED,
                       "SASL OAUTHBEARER: the server's error message has no \"status\"");
    }
    size_t used = 0;
    for (size_t i = 0; i < 3 && cap > 1; i++)
        if (vals[i])
            put_member(detail, cap, &used, names[i], vals[i]);
    json_decref(o);
    return KC_OK;
}
