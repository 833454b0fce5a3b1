/*
 * SASL GSSAPI through MIT krb5 (see sasl_gssapi.h for the exchange, the credential store and the
 * threads). Owner: a kc_gss_cred_t's login state is under its mutex (every GSS-API call that uses
 * the credential runs with it held, since a gss_cred_id_t has no reference count and a re-login
 * replaces it); a kc_gss_ctx_t belongs to the thread that holds its job.
 */
#include "sasl_gssapi.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>
#include <krb5.h>

#include "base/clock.h"
#include "base/dynlib.h"

/* MIT krb5's GSS-API library and libkrb5, loaded when the first GSSAPI credential is made
 * (base/dynlib.h). */
#define GSS_SYMS(X)                                                                                \
    X(acquire_cred_from, gss_acquire_cred_from)                                                    \
    X(delete_sec_context, gss_delete_sec_context)                                                  \
    X(display_name, gss_display_name)                                                              \
    X(display_status, gss_display_status)                                                          \
    X(import_name, gss_import_name)                                                                \
    X(init_sec_context, gss_init_sec_context)                                                      \
    X(inquire_cred, gss_inquire_cred)                                                              \
    X(release_buffer, gss_release_buffer)                                                          \
    X(release_cred, gss_release_cred)                                                              \
    X(release_name, gss_release_name)                                                              \
    X(unwrap, gss_unwrap)                                                                          \
    X(wrap, gss_wrap)                                                                              \
    X(mech_krb5, gss_mech_krb5)                                                                    \
    X(nt_principal, GSS_KRB5_NT_PRINCIPAL_NAME)                                                    \
    X(nt_hostbased, GSS_C_NT_HOSTBASED_SERVICE)
#define KRB5_SYMS(X)                                                                               \
    X(cc_destroy, krb5_cc_destroy)                                                                 \
    X(cc_resolve, krb5_cc_resolve)                                                                 \
    X(free_context, krb5_free_context)                                                             \
    X(free_keytab_entry_contents, krb5_free_keytab_entry_contents)                                 \
    X(free_principal, krb5_free_principal)                                                         \
    X(init_context, krb5_init_context)                                                             \
    X(kt_close, krb5_kt_close)                                                                     \
    X(kt_get_entry, krb5_kt_get_entry)                                                             \
    X(kt_resolve, krb5_kt_resolve)                                                                 \
    X(parse_name, krb5_parse_name)
static struct {
    GSS_SYMS(KC_DYNLIB_FIELD)
} lg;
static struct {
    KRB5_SYMS(KC_DYNLIB_FIELD)
} lk;
static const char *const gss_names[] = {GSS_SYMS(KC_DYNLIB_NAME)};
static const char *const krb5_names[] = {KRB5_SYMS(KC_DYNLIB_NAME)};
static kc_dynlib_t gss_lib = KC_DYNLIB("libgssapi_krb5.so.2", "libgssapi-krb5-2",
                                       "SASL GSSAPI (sasl.mechanism=GSSAPI)", gss_names, lg);
static kc_dynlib_t krb5_lib =
    KC_DYNLIB("libkrb5.so.3", "libkrb5-3", "SASL GSSAPI (sasl.mechanism=GSSAPI)", krb5_names, lk);

struct kc_gss_cred {
    pthread_mutex_t mu;
    char *service;   /* immutable after new */
    char *principal; /* immutable; NULL = the default one */
    char *keytab;    /* immutable; NULL = the default ticket cache */
    int64_t min_relogin_ms;
    /* Under mu. */
    krb5_context k5;    /* only to destroy our private caches */
    gss_cred_id_t cred; /* GSS_C_NO_CREDENTIAL until the first login */
    char ccache[64];    /* "MEMORY:..." of this login; "" without a keytab */
    char name[256];     /* the principal's display name: the authzid */
    int64_t login_at_ms;
};

enum gss_state { GS_CONTEXT, GS_LAYER, GS_FINISHED, GS_FAILED };

struct kc_gss_ctx {
    kc_gss_cred_t *cred;
    char target[320]; /* "<service>@<host>" */
    gss_name_t target_name;
    gss_ctx_id_t ctx;
    enum gss_state state;
};

static _Atomic uint64_t cache_seq; /* private cache names: unique in the process */

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

kc_err_t kc_gss_cred_new(const kc_gss_conf_t *conf, kc_gss_cred_t **out, kc_error_t *err)
{
    *out = NULL;
    if (kc_dynlib_load(&gss_lib, err) != KC_OK || kc_dynlib_load(&krb5_lib, err) != KC_OK)
        return KC_ERR_UNSUPPORTED;
    kc_gss_cred_t *c = calloc(1, sizeof *c);
    if (!c)
        return kc_fail(err, KC_ERR_NOMEM, "SASL GSSAPI: out of memory");
    const char *svc = conf->service_name && *conf->service_name ? conf->service_name : "kafka";
    c->service = strdup(svc);
    c->principal = dup_or_null(conf->principal);
    c->keytab = dup_or_null(conf->keytab);
    c->min_relogin_ms = conf->min_relogin_ms;
    c->cred = GSS_C_NO_CREDENTIAL;
    if (!c->service || (conf->principal && *conf->principal && !c->principal) ||
        (conf->keytab && *conf->keytab && !c->keytab)) {
        kc_gss_cred_free(c);
        return kc_fail(err, KC_ERR_NOMEM, "SASL GSSAPI: out of memory");
    }
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return KC_OK;
}

/* Under mu: drops the credential and its private cache (tickets are keys: do not leave them in a
 * process-wide MEMORY cache list after we stopped using them). */
static void drop_login(kc_gss_cred_t *c)
{
    OM_uint32 minor;
    if (c->cred != GSS_C_NO_CREDENTIAL)
        lg.release_cred(&minor, &c->cred);
    c->cred = GSS_C_NO_CREDENTIAL;
    if (c->ccache[0]) {
        if (!c->k5)
            (void)lk.init_context(&c->k5);
        krb5_ccache cc;
        if (c->k5 && lk.cc_resolve(c->k5, c->ccache, &cc) == 0)
            lk.cc_destroy(c->k5, cc);
        c->ccache[0] = '\0';
    }
}

void kc_gss_cred_free(kc_gss_cred_t *c)
{
    if (!c)
        return;
    if (c->service) { /* initialised past the allocations */
        drop_login(c);
        if (c->k5)
            lk.free_context(c->k5);
        pthread_mutex_destroy(&c->mu);
    }
    free(c->service);
    free(c->principal);
    free(c->keytab);
    free(c);
}

/* gss_display_status' text for one code (every line of it, "; "-separated). */
static void status_text(OM_uint32 code, int type, char *buf, size_t cap)
{
    OM_uint32 minor, more = 0;
    size_t used = 0;
    buf[0] = '\0';
    do {
        gss_buffer_desc m = GSS_C_EMPTY_BUFFER;
        if (GSS_ERROR(lg.display_status(&minor, code, type, *lg.mech_krb5, &more, &m)))
            break;
        int n = snprintf(buf + used, cap - used, "%s%.*s", used ? "; " : "", (int)m.length,
                         (const char *)m.value);
        lg.release_buffer(&minor, &m);
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
    } while (more != 0);
}

/* KC_ERR_AUTH naming the step, the principal and the service, with both status codes' text (the
 * minor, mechanism-specific one first: it says what went wrong, the major only which class). */
static kc_err_t gss_fail(kc_error_t *err, const kc_gss_cred_t *c, const char *target,
                         const char *what, OM_uint32 major, OM_uint32 minor)
{
    char maj[160], min[200];
    status_text(major, GSS_C_GSS_CODE, maj, sizeof maj);
    min[0] = '\0';
    if (minor != 0)
        status_text(minor, GSS_C_MECH_CODE, min, sizeof min);
    return kc_fail(err, KC_ERR_AUTH, "SASL GSSAPI: %s for principal %s, service %s: %s%s%s%s", what,
                   c->principal ? c->principal : "(default)", target, min, min[0] ? " (" : "", maj,
                   min[0] ? ")" : "");
}

/* Under mu, after a failed login with a keytab: true with the reason in `why` when the keytab
 * itself is the problem (cannot be read, or holds no key for the principal). */
static bool diagnose_keytab(kc_gss_cred_t *c, char *why, size_t cap)
{
    FILE *f = fopen(c->keytab, "rb");
    if (!f) {
        snprintf(why, cap, "keytab '%s' cannot be read: %s", c->keytab, strerror(errno));
        return true;
    }
    fclose(f);
    if (!c->principal || (!c->k5 && lk.init_context(&c->k5) != 0))
        return false;
    krb5_principal p = NULL;
    krb5_keytab kt = NULL;
    krb5_keytab_entry ent;
    bool missing = false;
    char path[4096 + 8];
    snprintf(path, sizeof path, "FILE:%s", c->keytab);
    if (lk.parse_name(c->k5, c->principal, &p) == 0 && lk.kt_resolve(c->k5, path, &kt) == 0) {
        krb5_error_code e = lk.kt_get_entry(c->k5, kt, p, 0, 0, &ent);
        if (e == 0)
            lk.free_keytab_entry_contents(c->k5, &ent); /* wipes the key */
        missing = e == KRB5_KT_NOTFOUND;
    }
    if (kt)
        lk.kt_close(c->k5, kt);
    if (p)
        lk.free_principal(c->k5, p);
    if (missing)
        snprintf(why, cap, "keytab '%s' has no key for %s", c->keytab, c->principal);
    return missing;
}

/* Under mu: a new login, from the keytab into a fresh private cache (or from the default cache
 * without a keytab). May contact the KDC. */
static kc_err_t login(kc_gss_cred_t *c, const char *target, kc_error_t *err)
{
    OM_uint32 major, minor;
    gss_name_t name = GSS_C_NO_NAME;
    if (c->principal) {
        gss_buffer_desc b = {strlen(c->principal), c->principal};
        major = lg.import_name(&minor, &b, *lg.nt_principal, &name);
        if (GSS_ERROR(major))
            return gss_fail(err, c, target, "parsing sasl.kerberos.principal", major, minor);
    }
    gss_OID_set_desc mechs = {1, *lg.mech_krb5};
    gss_key_value_element_desc el[2];
    gss_key_value_set_desc store = {0, el};
    if (c->keytab) {
        snprintf(
            c->ccache, sizeof c->ccache, "MEMORY:kconsume-%ld-%llu", (long)getpid(),
            (unsigned long long)atomic_fetch_add_explicit(&cache_seq, 1, memory_order_relaxed));
        el[0] = (gss_key_value_element_desc){"client_keytab", c->keytab};
        el[1] = (gss_key_value_element_desc){"ccache", c->ccache};
        store.count = 2;
    }
    major = lg.acquire_cred_from(&minor, name, GSS_C_INDEFINITE, &mechs, GSS_C_INITIATE,
                                 c->keytab ? &store : GSS_C_NO_CRED_STORE, &c->cred, NULL, NULL);
    OM_uint32 ignored;
    if (name != GSS_C_NO_NAME)
        lg.release_name(&ignored, &name);
    if (GSS_ERROR(major)) {
        c->cred = GSS_C_NO_CREDENTIAL;
        char why[200];
        kc_err_t rc;
        /* MIT says "No credentials cache found" both for a keytab that is not there and for one
         * without the principal's key: look at the keytab to say which. */
        if (c->keytab && diagnose_keytab(c, why, sizeof why))
            rc = kc_fail(err, KC_ERR_AUTH, "SASL GSSAPI: login for principal %s, service %s: %s",
                         c->principal ? c->principal : "(default)", target, why);
        else
            rc = gss_fail(err, c, target,
                          c->keytab ? "login with sasl.kerberos.keytab"
                                    : "login from the default ticket cache",
                          major, minor);
        drop_login(c);
        return rc;
    }
    /* The authzid is the principal's full name ("user@REALM"), as the Java client sends it. */
    gss_name_t me = GSS_C_NO_NAME;
    gss_buffer_desc shown = GSS_C_EMPTY_BUFFER;
    major = lg.inquire_cred(&minor, c->cred, &me, NULL, NULL, NULL);
    if (!GSS_ERROR(major))
        major = lg.display_name(&minor, me, &shown, NULL);
    if (GSS_ERROR(major)) {
        if (me != GSS_C_NO_NAME)
            lg.release_name(&minor, &me);
        kc_err_t rc = gss_fail(err, c, target, "reading the logged-in principal", major, minor);
        drop_login(c);
        return rc;
    }
    snprintf(c->name, sizeof c->name, "%.*s", (int)shown.length, (const char *)shown.value);
    lg.release_buffer(&minor, &shown);
    lg.release_name(&minor, &me);
    c->login_at_ms = kc_now_ms();
    return KC_OK;
}

/* Under mu: a credential fit for a new context. One whose lifetime has run out is dropped and
 * logged in again, at most once per min_relogin_ms (0: never; MIT's own refresh from the keytab
 * still applies inside gss_init_sec_context). */
static kc_err_t ensure_login(kc_gss_cred_t *c, const char *target, kc_error_t *err)
{
    if (c->cred != GSS_C_NO_CREDENTIAL && c->min_relogin_ms > 0 &&
        kc_now_ms() - c->login_at_ms >= c->min_relogin_ms) {
        OM_uint32 minor, life = 0;
        OM_uint32 major = lg.inquire_cred(&minor, c->cred, NULL, &life, NULL, NULL);
        if (GSS_ERROR(major) || life == 0)
            drop_login(c);
    }
    if (c->cred == GSS_C_NO_CREDENTIAL)
        return login(c, target, err);
    return KC_OK;
}

kc_err_t kc_gss_ctx_new(kc_gss_cred_t *cred, const char *host, kc_gss_ctx_t **out, kc_error_t *err)
{
    *out = NULL;
    kc_gss_ctx_t *x = calloc(1, sizeof *x);
    if (!x)
        return kc_fail(err, KC_ERR_NOMEM, "SASL GSSAPI: out of memory");
    int n = snprintf(x->target, sizeof x->target, "%s@%s", cred->service, host ? host : "");
    if (n < 0 || (size_t)n >= sizeof x->target || !host || !*host) {
        free(x);
        return kc_fail(err, KC_ERR_CONFIG, "SASL GSSAPI: broker host name '%s' is unusable",
                       host ? host : "");
    }
    x->cred = cred;
    x->target_name = GSS_C_NO_NAME;
    x->ctx = GSS_C_NO_CONTEXT;
    x->state = GS_CONTEXT;
    *out = x;
    return KC_OK;
}

void kc_gss_ctx_free(kc_gss_ctx_t *x)
{
    if (!x)
        return;
    OM_uint32 minor;
    if (x->ctx != GSS_C_NO_CONTEXT)
        lg.delete_sec_context(&minor, &x->ctx, GSS_C_NO_BUFFER);
    if (x->target_name != GSS_C_NO_NAME)
        lg.release_name(&minor, &x->target_name);
    free(x);
}

bool kc_gss_ctx_finished(const kc_gss_ctx_t *x)
{
    return x->state == GS_FINISHED;
}

/* Moves a GSS buffer into a malloc'd one (an empty message is a valid 0-byte result). */
static kc_err_t take_buffer(gss_buffer_desc *b, uint8_t **out, size_t *out_len, kc_error_t *err)
{
    OM_uint32 minor;
    *out = malloc(b->length ? b->length : 1);
    if (!*out) {
        lg.release_buffer(&minor, b);
        return kc_fail(err, KC_ERR_NOMEM, "SASL GSSAPI: out of memory");
    }
    if (b->length)
        memcpy(*out, b->value, b->length);
    *out_len = b->length;
    lg.release_buffer(&minor, b);
    return KC_OK;
}

static kc_err_t step_context(kc_gss_ctx_t *x, const uint8_t *in, size_t in_len, uint8_t **out,
                             size_t *out_len, kc_error_t *err)
{
    kc_gss_cred_t *c = x->cred;
    OM_uint32 major, minor;
    kc_err_t rc = ensure_login(c, x->target, err);
    if (rc != KC_OK)
        return rc;
    if (x->target_name == GSS_C_NO_NAME) {
        gss_buffer_desc t = {strlen(x->target), x->target};
        major = lg.import_name(&minor, &t, *lg.nt_hostbased, &x->target_name);
        if (GSS_ERROR(major))
            return gss_fail(err, c, x->target, "parsing the service name", major, minor);
    }
    gss_buffer_desc ib = {in_len, (void *)in}, ob = GSS_C_EMPTY_BUFFER;
    /* Mutual authentication: the broker proves it holds the service key (RFC 4752 asks for it). */
    major = lg.init_sec_context(&minor, c->cred, &x->ctx, x->target_name, *lg.mech_krb5,
                                GSS_C_MUTUAL_FLAG | GSS_C_INTEG_FLAG, 0, GSS_C_NO_CHANNEL_BINDINGS,
                                in ? &ib : GSS_C_NO_BUFFER, NULL, &ob, NULL, NULL);
    if (GSS_ERROR(major)) {
        lg.release_buffer(&minor, &ob);
        return gss_fail(err, c, x->target, "gss_init_sec_context", major, minor);
    }
    if (major == GSS_S_COMPLETE)
        x->state = GS_LAYER;
    else if (ob.length == 0)
        return kc_fail(err, KC_ERR_AUTH,
                       "SASL GSSAPI: gss_init_sec_context for service %s "
                       "wants more input but produced no token",
                       x->target);
    return take_buffer(&ob, out, out_len, err);
}

static kc_err_t step_layer(kc_gss_ctx_t *x, const uint8_t *in, size_t in_len, uint8_t **out,
                           size_t *out_len, kc_error_t *err)
{
    kc_gss_cred_t *c = x->cred;
    OM_uint32 major, minor;
    gss_buffer_desc ib = {in_len, (void *)in}, plain = GSS_C_EMPTY_BUFFER;
    int conf = 0;
    major = lg.unwrap(&minor, x->ctx, &ib, &plain, &conf, NULL);
    if (GSS_ERROR(major))
        return gss_fail(err, c, x->target, "gss_unwrap of the security-layer challenge", major,
                        minor);
    uint8_t layers;
    uint32_t max_size;
    kc_err_t rc = kc_gss_layer_parse(plain.value, plain.length, &layers, &max_size, err);
    lg.release_buffer(&minor, &plain);
    if (rc != KC_OK)
        return rc;
    uint8_t reply[4 + sizeof c->name];
    size_t n = kc_gss_layer_reply(c->name, reply, sizeof reply);
    if (n == 0)
        return kc_fail(err, KC_ERR_AUTH, "SASL GSSAPI: principal name too long");
    gss_buffer_desc rb = {n, reply}, wrapped = GSS_C_EMPTY_BUFFER;
    /* Integrity only (conf_req_flag 0), as RFC 4752 §3.1 says. */
    major = lg.wrap(&minor, x->ctx, 0, GSS_C_QOP_DEFAULT, &rb, NULL, &wrapped);
    if (GSS_ERROR(major)) {
        lg.release_buffer(&minor, &wrapped);
        return gss_fail(err, c, x->target, "gss_wrap of the security-layer answer", major, minor);
    }
    x->state = GS_FINISHED;
    return take_buffer(&wrapped, out, out_len, err);
}

kc_err_t kc_gss_step(kc_gss_ctx_t *x, const uint8_t *in, size_t in_len, uint8_t **out,
                     size_t *out_len, kc_error_t *err)
{
    *out = NULL;
    *out_len = 0;
    kc_gss_cred_t *c = x->cred;
    kc_err_t rc;
    pthread_mutex_lock(&c->mu);
    switch (x->state) {
    case GS_CONTEXT:
        rc = step_context(x, in, in_len, out, out_len, err);
        break;
    case GS_LAYER:
        rc = step_layer(x, in, in_len, out, out_len, err);
        break;
    default:
        rc = kc_fail(err, KC_ERR_MALFORMED,
                     "SASL GSSAPI: unexpected %zu-byte server message after the exchange ended",
                     in_len);
        break;
    }
    pthread_mutex_unlock(&c->mu);
    if (rc != KC_OK)
        x->state = GS_FAILED;
    return rc;
}

/* ---- RFC 4752 security-layer framing ---- */

kc_err_t kc_gss_layer_parse(const uint8_t *msg, size_t len, uint8_t *layers, uint32_t *max_size,
                            kc_error_t *err)
{
    if (len != 4)
        return kc_fail(err, KC_ERR_MALFORMED,
                       "SASL GSSAPI: the security-layer challenge is %zu bytes, not 4", len);
    *layers = msg[0];
    *max_size = (uint32_t)msg[1] << 16 | (uint32_t)msg[2] << 8 | msg[3];
    if (!(msg[0] & KC_GSS_LAYER_NONE))
        return kc_fail(err, KC_ERR_AUTH,
                       "SASL GSSAPI: the broker requires a security layer (offered mask 0x%02x); "
                       "Kafka clients support only 'no security layer' (protect the channel "
                       "with SASL_SSL)",
                       msg[0]);
    return KC_OK;
}

size_t kc_gss_layer_reply(const char *authzid, uint8_t *out, size_t cap)
{
    size_t n = authzid ? strlen(authzid) : 0;
    if (cap < 4 || n > cap - 4)
        return 0;
    out[0] = KC_GSS_LAYER_NONE;
    out[1] = out[2] = out[3] = 0;
    if (n)
        memcpy(out + 4, authzid, n);
    return 4 + n;
}
