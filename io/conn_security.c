/* security.protocol for connections (see conn_security.h). Owner: see the header. */
#include "conn_security.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_sasl.h"
#include "conn_tls.h"

struct kc_conn_security {
    bool use_tls, use_sasl;
    kc_conn_tls_t tls; /* .ctx loaded once; the transport hook reads it per connection */
    kc_sasl_mech_t mech;
    char *user, *password;
    kc_oauth_slot_t *oauth; /* OAUTHBEARER; not owned */
    kc_gss_cred_t *gss;     /* GSSAPI */
};

kc_err_t kc_conn_security_new(const kc_conn_security_conf_t *conf, kc_conn_security_t **out,
                              kc_error_t *err)
{
    *out = NULL;
    const char *p = conf->protocol && *conf->protocol ? conf->protocol : "PLAINTEXT";
    bool tls, sasl;
    if (strcmp(p, "PLAINTEXT") == 0)
        return KC_OK;
    else if (strcmp(p, "SSL") == 0)
        tls = true, sasl = false;
    else if (strcmp(p, "SASL_PLAINTEXT") == 0)
        tls = false, sasl = true;
    else if (strcmp(p, "SASL_SSL") == 0)
        tls = true, sasl = true;
    else
        return kc_fail(err, KC_ERR_CONFIG,
                       "security.protocol: '%s' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, "
                       "SASL_SSL",
                       p);
    kc_conn_security_t *s = calloc(1, sizeof *s);
    if (!s)
        return kc_fail(err, KC_ERR_NOMEM, "security: out of memory");
    s->use_tls = tls;
    s->use_sasl = sasl;
    kc_err_t rc = KC_OK;
    if (tls)
        rc = kc_tls_ctx_new(&conf->tls, &s->tls.ctx, err);
    if (rc == KC_OK && sasl) {
        rc = kc_sasl_mech_parse(conf->sasl_mechanism ? conf->sasl_mechanism : "PLAIN", &s->mech,
                                err);
        if (rc == KC_OK && s->mech == KC_SASL_OAUTHBEARER) {
            s->oauth = conf->oauth;
            if (!s->oauth)
                rc = kc_fail(err, KC_ERR_CONFIG,
                             "security.protocol=%s with sasl.mechanism=OAUTHBEARER needs a token: "
                             "sasl.oauthbearer.method=oidc or a token callback",
                             p);
        } else if (rc == KC_OK && s->mech == KC_SASL_GSSAPI) {
            rc = kc_gss_cred_new(&conf->kerberos, &s->gss, err);
        } else if (rc == KC_OK && (!conf->sasl_username || !*conf->sasl_username)) {
            rc = kc_fail(err, KC_ERR_CONFIG,
                         "security.protocol=%s needs sasl.username (and sasl.password)", p);
        }
        if (rc == KC_OK && s->mech != KC_SASL_GSSAPI) {
            s->user = strdup(conf->sasl_username ? conf->sasl_username : "");
            s->password = strdup(conf->sasl_password ? conf->sasl_password : "");
            if (!s->user || !s->password)
                rc = kc_fail(err, KC_ERR_NOMEM, "security: out of memory");
        }
    }
    if (rc != KC_OK) {
        kc_conn_security_free(s);
        return rc;
    }
    *out = s;
    return KC_OK;
}

void kc_conn_security_free(kc_conn_security_t *s)
{
    if (!s)
        return;
    kc_tls_ctx_free(s->tls.ctx);
    kc_gss_cred_free(s->gss);
    free(s->user);
    if (s->password) { /* do not leave the secret in freed heap memory */
        memset(s->password, 0, strlen(s->password));
        free(s->password);
    }
    free(s);
}

static void sasl_free(void *opaque)
{
    kc_conn_sasl_free(opaque);
}

kc_err_t kc_conn_security_apply(const kc_conn_security_t *s, kc_conn_opts_t *opts, kc_error_t *err)
{
    if (!s)
        return KC_OK;
    if (s->use_tls) {
        opts->transport_new = kc_conn_tls_transport_new;
        /* the hook only reads it; the bundle outlives every connection (header) */
        opts->transport_opaque = (void *)&s->tls;
    }
    if (s->use_sasl) {
        kc_conn_sasl_t *cs = NULL;
        kc_err_t rc = s->mech == KC_SASL_OAUTHBEARER
                          ? kc_conn_sasl_new_oauthbearer(s->oauth, &cs, err)
                      : s->gss ? kc_conn_sasl_new_gssapi(s->gss, &cs, err)
                               : kc_conn_sasl_new(s->mech, s->user, s->password, &cs, err);
        if (rc != KC_OK)
            return rc;
        opts->authenticate = kc_conn_sasl_authenticate;
        opts->auth_opaque = cs;
        opts->auth_free = sasl_free;
        /* only a token's credentials change while the consumer runs */
        if (s->mech == KC_SASL_OAUTHBEARER)
            opts->auth_generation = kc_conn_sasl_auth_generation;
    }
    return KC_OK;
}

void kc_conn_security_discard(kc_conn_opts_t *opts)
{
    if (opts->auth_free && opts->auth_opaque)
        opts->auth_free(opts->auth_opaque);
    opts->auth_opaque = NULL;
}
