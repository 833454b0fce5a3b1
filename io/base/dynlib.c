/* Libraries loaded on first use: see dynlib.h. */
#include "base/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(void (*)(void)) == sizeof(void *),
               "a function's address must fit an object pointer (POSIX dlsym)");

/* Loads are rare (one per library per process) and may take a while: one mutex for all. */
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;

static void load(kc_dynlib_t *l)
{
    void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(l->msg, sizeof l->msg,
                 "%s needs %s (Debian package %s), which could not be "
                 "loaded: %s",
                 l->what, l->soname, l->package, why ? why : "dlopen failed");
        atomic_store_explicit(&l->state, -1, memory_order_release);
        return;
    }
    for (size_t i = 0; i < l->n; i++) {
        dlerror();
        void *p = dlsym(h, l->names[i]);
        const char *why = dlerror();
        if (why || !p) {
            snprintf(l->msg, sizeof l->msg, "%s needs %s from %s (Debian package %s): %s", l->what,
                     l->names[i], l->soname, l->package, why ? why : "not found");
            /* the handle stays open: a library may not be unloadable, and this is once */
            atomic_store_explicit(&l->state, -1, memory_order_release);
            return;
        }
        memcpy((char *)l->table + i * sizeof p, &p, sizeof p);
    }
    /* release: the table written above is seen by every acquire load that sees 1 */
    atomic_store_explicit(&l->state, 1, memory_order_release);
}

kc_err_t kc_dynlib_load(kc_dynlib_t *l, kc_error_t *err)
{
    int s = atomic_load_explicit(&l->state, memory_order_acquire);
    if (s == 0) {
        pthread_mutex_lock(&load_mu);
        if (atomic_load_explicit(&l->state, memory_order_relaxed) == 0) /* under the mutex */
            load(l);
        pthread_mutex_unlock(&load_mu);
        s = atomic_load_explicit(&l->state, memory_order_acquire);
    }
    if (s == 1)
        return KC_OK;
    return kc_fail(err, KC_ERR_UNSUPPORTED, "%s", l->msg);
}
