/*
 * A shared library loaded on first use (dlopen by its SONAME) instead of linked. The libraries
 * only one login needs (libcurl for an OIDC token endpoint, MIT krb5 for GSSAPI) bring a dozen
 * more with them (GnuTLS, LDAP, SSH, IDN, ...): linked, they cost every process about 3.4 MiB
 * resident, most of an idle consumer's footprint, and a consumer with neither login never needs
 * them.
 *
 * The user declares a struct of pointers whose types come from the library's own header, in the
 * order of its symbol names:
 *
 *     #define CURL_SYMS(X) X(easy_init, curl_easy_init) X(easy_perform, curl_easy_perform)
 *     static struct { CURL_SYMS(KC_DYNLIB_FIELD) } lc;
 *     static const char *const curl_names[] = {CURL_SYMS(KC_DYNLIB_NAME)};
 *     static kc_dynlib_t curl_lib = KC_DYNLIB("libcurl.so.4", "libcurl4",
 *                                            "SASL OAUTHBEARER's token endpoint", curl_names, lc);
 *     ...
 *     if (kc_dynlib_load(&curl_lib, err) != KC_OK) ...
 *     CURL *h = lc.easy_init();
 *
 * The loader stores the i-th symbol's address in the i-th pointer of the table: a struct of
 * pointers all of one size has no padding between them, which KC_DYNLIB checks against the
 * number of names. Field names differ from the symbols' so that a library's function-like macros
 * (libcurl's type-checking curl_easy_setopt) do not apply to the calls. A data symbol's field
 * holds its address (for gss_mech_krb5, a gss_OID *), so its value is *field.
 *
 * Any thread. A load runs under a process-wide mutex and ends with a release store of `loaded`;
 * every caller's acquire load of it that sees the library loaded also sees the table. A library
 * is never unloaded (libcurl and krb5 keep process-wide state). A failed load is tried again by
 * the next call (a login is set up rarely, and the failure may have been passing: no memory, no
 * file descriptor, or the package installed since).
 */
#ifndef KC_BASE_DYNLIB_H
#define KC_BASE_DYNLIB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

typedef struct kc_dynlib {
    const char *soname;  /* what dlopen is given, e.g. "libcurl.so.4" */
    const char *package; /* the Debian package that installs it, for the error */
    const char *what;    /* what needs it, for the error */
    const char *const *names;
    size_t n;    /* names, and pointers in the table */
    void *table; /* the struct of pointers */
    _Atomic bool loaded;
} kc_dynlib_t;

#define KC_DYNLIB_FIELD(field, sym) __typeof__(&sym) field;
#define KC_DYNLIB_NAME(field, sym)  #sym,
#define KC_DYNLIB(soname, package, what, names, table)                                             \
    {                                                                                              \
        soname, package, what, names,                                                              \
            sizeof names / sizeof names[0] +                                                       \
                0 * sizeof(char[sizeof table == sizeof names / sizeof names[0] * sizeof(void *)    \
                                    ? 1                                                            \
                                    : -1]),                                                        \
            &table, false                                                                          \
    }

/* Loads the library and fills the table, once; KC_OK when every symbol was found, else
 * KC_ERR_UNSUPPORTED naming the library, what needs it, the Debian package that installs it and
 * dlerror's text. */
kc_err_t kc_dynlib_load(kc_dynlib_t *l, kc_error_t *err);

#endif
