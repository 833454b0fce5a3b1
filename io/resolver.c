/* Name lookups as jobs of the loop's DNS offload lane (see resolver.h). */
#include "resolver.h"

#include <stdlib.h>
#include <string.h>

#include "offload.h"

#define JOB_ADDRS 32

struct kc_resolve_job {
    kc_offload_job_t *job; /* the offload's handle, until done or discard runs */
    kc_resolve_cb cb;
    void *opaque;
    char *servers;
    int flags; /* kc_addr_resolve's */
    /* Written by the helper thread (work), read by the network thread (done). */
    kc_err_t rc;
    kc_error_t err;
    int n;
    kc_addr_t addrs[JOB_ADDRS];
};

static void job_free(void *arg)
{
    kc_resolve_job_t *j = arg;
    free(j->servers);
    free(j);
}

static void work(void *arg)
{
    kc_resolve_job_t *j = arg;
    /* Blocking is fine here: this thread exists to block. */
    j->rc = kc_addr_resolve(j->servers, j->flags, j->addrs, JOB_ADDRS, &j->n, &j->err);
}

static void done(void *arg)
{
    kc_resolve_job_t *j = arg;
    j->cb(j->rc, j->addrs, j->n, &j->err, j->opaque);
    job_free(j);
}

static const kc_offload_fns_t fns = {work, done, job_free};

kc_err_t kc_resolve_start(kc_loop_t *loop, const char *servers, int flags, kc_resolve_cb cb,
                          void *opaque, kc_resolve_job_t **out, kc_error_t *err)
{
    kc_offload_t *o = kc_loop_offload(loop, KC_OFFLOAD_DNS, err);
    if (!o)
        return err ? err->code : KC_ERR_SYSTEM;
    kc_resolve_job_t *j = calloc(1, sizeof *j);
    if (!j || !(j->servers = strdup(servers ? servers : ""))) {
        free(j);
        return kc_fail(err, KC_ERR_NOMEM, "resolver: out of memory");
    }
    j->flags = flags;
    j->cb = cb;
    j->opaque = opaque;
    kc_err_t rc = kc_offload_submit(o, &fns, j, &j->job, err);
    if (rc != KC_OK) {
        job_free(j);
        return rc;
    }
    *out = j;
    return KC_OK;
}

void kc_resolve_cancel(kc_resolve_job_t *j)
{
    kc_offload_cancel(j->job); /* job_free runs now, or when the helper hands it back */
}
