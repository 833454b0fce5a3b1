#include "offsets_wait.h"

#include <pthread.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

void kc_test_offsets_on_result(void *opaque, kc_err_t rc, const kc_error_t *err,
                               const kc_engine_offset_t *res, size_t n)
{
    kc_test_offsets_result_t *r = opaque;
    pthread_mutex_lock(&mu);
    r->rc = rc;
    if (err)
        r->err = *err;
    for (size_t i = 0; i < n && i < 2; i++)
        r->res[i] = res[i];
    r->done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

void kc_test_offsets_reset(kc_test_offsets_result_t *r)
{
    pthread_mutex_lock(&mu);
    memset(r, 0, sizeof *r);
    pthread_mutex_unlock(&mu);
}

void kc_test_offsets_wait(kc_test_offsets_result_t *r)
{
    pthread_mutex_lock(&mu);
    while (!r->done)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

kc_err_t kc_test_discard_records(void *opaque, void *user, const char *topic, int32_t partition,
                                 int32_t broker, kc_slice_t *s, int64_t first, int64_t next)
{
    (void)opaque, (void)user, (void)topic, (void)partition, (void)broker, (void)first, (void)next;
    kc_slice_release(s);
    return KC_OK;
}
