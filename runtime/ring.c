/* Ring storage. Init/fini run on the ring's owner before/after the threads that use it. */
#include "ring.h"

#include <stdlib.h>

static unsigned pow2(unsigned n)
{
    unsigned p = 2;
    while (p < n)
        p <<= 1;
    return p;
}

kc_err_t kc_rt_bring_init(kc_rt_bring_t *r, unsigned size)
{
    size = pow2(size);
    r->slots = calloc(size, sizeof *r->slots);
    if (!r->slots)
        return KC_ERR_NOMEM;
    ck_ring_init(&r->ring, size);
    return KC_OK;
}

void kc_rt_bring_fini(kc_rt_bring_t *r)
{
    free(r->slots);
    r->slots = NULL;
}

kc_err_t kc_rt_cring_init(kc_rt_cring_t *r, unsigned size)
{
    size = pow2(size);
    r->slots = calloc(size, sizeof *r->slots);
    if (!r->slots)
        return KC_ERR_NOMEM;
    ck_ring_init(&r->ring, size);
    return KC_OK;
}

void kc_rt_cring_fini(kc_rt_cring_t *r)
{
    free(r->slots);
    r->slots = NULL;
}
