/* Libraries loaded on first use: see dynlib.h. */
#include "base/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

_Static_assert(sizeof(void (*)(void)) == sizeof(void *),
               "a function's address must fit an object pointer (POSIX dlsym)");

/* Loads are rare (one per library per process) and may take a while: one mutex for all. */
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;

/* Under load_mu. */
static kc_err_t load(kc_dynlib_t *l, kc_error_t *err)
{
    void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return kc_fail(err, KC_ERR_UNSUPPORTED,
                       "%s needs %s (Debian package %s), which could not be loaded: %s", l->what,
                       l->soname, l->package, why ? why : "dlopen failed");
    }
    for (size_t i = 0; i < l->n; i++) {
        dlerror();
        void *p = dlsym(h, l->names[i]);
        const char *why = dlerror();
        if (why || !p) /* the handle stays open: a library may not be unloadable */
            return kc_fail(err, KC_ERR_UNSUPPORTED, "%s needs %s from %s (Debian package %s): %s",
                           l->what, l->names[i], l->soname, l->package, why ? why : "not found");
        memcpy((char *)l->table + i * sizeof p, &p, sizeof p);
    }
    /* release: the table written above is seen by every acquire load that sees true */
    atomic_store_explicit(&l->loaded, true, memory_order_release);
    return KC_OK;
}

kc_err_t kc_dynlib_load(kc_dynlib_t *l, kc_error_t *err)
{
    if (atomic_load_explicit(&l->loaded, memory_order_acquire))
        return KC_OK;
    pthread_mutex_lock(&load_mu);
    /* relaxed: under the mutex, after any earlier load's store */
    kc_err_t rc = atomic_load_explicit(&l->loaded, memory_order_relaxed) ? KC_OK : load(l, err);
    pthread_mutex_unlock(&load_mu);
    return rc;
}
