/* The OAUTHBEARER token slot (see oauth_token.h). Shared between the refresher and the network
 * thread; `mu` guards every field. */
#include "oauth_token.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "sasl_oauthbearer.h"

struct kc_oauth_slot {
    pthread_mutex_t mu;
    kc_oauth_token_t cur;    /* value NULL: none yet */
    kc_error_t last_failure; /* code KC_OK: none since the last put */
    uint64_t generation;
};

static void wipe_str(char *p)
{
    if (p) {
        OPENSSL_cleanse(p, strlen(p));
        free(p);
    }
}

void kc_oauth_token_clear(kc_oauth_token_t *t)
{
    if (!t)
        return;
    wipe_str(t->value);
    free(t->principal);
    for (size_t i = 0; t->kv && i < t->n_kv; i++)
        wipe_str(t->kv[i]);
    free(t->kv);
    memset(t, 0, sizeof *t);
}

kc_err_t kc_oauth_slot_new(kc_oauth_slot_t **out, kc_error_t *err)
{
    kc_oauth_slot_t *s = calloc(1, sizeof *s);
    if (!s)
        return kc_fail(err, KC_ERR_NOMEM, "oauthbearer: out of memory");
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return KC_OK;
}

void kc_oauth_slot_free(kc_oauth_slot_t *s)
{
    if (!s)
        return;
    kc_oauth_token_clear(&s->cur);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void kc_oauth_slot_put(kc_oauth_slot_t *s, kc_oauth_token_t *t)
{
    kc_oauth_token_t old;
    pthread_mutex_lock(&s->mu);
    old = s->cur;
    s->cur = *t;
    memset(&s->last_failure, 0, sizeof s->last_failure);
    s->generation++;
    pthread_mutex_unlock(&s->mu);
    memset(t, 0, sizeof *t);
    kc_oauth_token_clear(&old);
}

void kc_oauth_slot_fail(kc_oauth_slot_t *s, const kc_error_t *why)
{
    pthread_mutex_lock(&s->mu);
    s->last_failure = *why;
    if (s->last_failure.code == KC_OK)
        s->last_failure.code = KC_ERR_AUTH;
    pthread_mutex_unlock(&s->mu);
}

kc_err_t kc_oauth_slot_message(kc_oauth_slot_t *s, int64_t now_wall_ms, uint8_t **out,
                               size_t *out_len, kc_error_t *err)
{
    kc_err_t rc;
    pthread_mutex_lock(&s->mu);
    const char *why = s->last_failure.code != KC_OK ? s->last_failure.msg : NULL;
    if (!s->cur.value) {
        rc = kc_fail(err, KC_ERR_AUTH, "SASL OAUTHBEARER: no token%s%s", why ? ": " : "",
                     why ? why : "");
    } else if (s->cur.expiry_ms <= now_wall_ms) {
        rc = kc_fail(err, KC_ERR_AUTH,
                     "SASL OAUTHBEARER: the token expired %lld ms ago and was not refreshed%s%s",
                     (long long)(now_wall_ms - s->cur.expiry_ms), why ? ": " : "", why ? why : "");
    } else {
        rc = kc_oauthbearer_client_message(s->cur.value, (const char *const *)s->cur.kv,
                                           s->cur.n_kv, out, out_len, err);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

uint64_t kc_oauth_slot_generation(kc_oauth_slot_t *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t g = s->generation;
    pthread_mutex_unlock(&s->mu);
    return g;
}
