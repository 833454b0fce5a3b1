/* Ring storage. Init/fini run on the ring's owner before/after the threads that use it.
 *
 * Slots are malloc'd, not calloc'd: a slot is only read after it was written (ck_ring copies
 * entries between its cursors), and zeroing would make every slot page resident up front. Each
 * partition has a ring (256 batch refs, 20 KiB), and with many partitions most of a ring is
 * never used: only the pages of slots that held a batch should cost memory. */
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
    r->slots = malloc(size * sizeof *r->slots);
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
    r->slots = malloc(size * sizeof *r->slots);
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
