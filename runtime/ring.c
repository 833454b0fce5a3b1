/* Ring storage. Init/fini run on the ring's owner before/after the threads that use it.
 *
 * Slots are malloc'd, not calloc'd: a slot is only read after it was written (ck_ring copies
 * entries between its cursors), and zeroing would make every slot page resident up front. A
 * partition's batch ring starts with KC_RT_BRING_FIRST slots and grows (ring.h), so a consumer
 * of many quiet partitions pays about 0.3 KiB for each, not a page. */
#include "ring.h"

#include <stdlib.h>

static unsigned pow2(unsigned n)
{
    unsigned p = 2;
    while (p < n)
        p <<= 1;
    return p;
}

static kc_rt_bseg_t *bseg_new(unsigned size)
{
    kc_rt_bseg_t *g = malloc(sizeof *g + size * sizeof g->slots[0]);
    if (!g)
        return NULL;
    ck_ring_init(&g->ring, size);
    atomic_init(&g->next, NULL);
    return g;
}

kc_err_t kc_rt_bring_init(kc_rt_bring_t *r, unsigned size)
{
    r->max = pow2(size);
    r->prod = r->cons = bseg_new(r->max < KC_RT_BRING_FIRST ? r->max : KC_RT_BRING_FIRST);
    r->pushed = 0;
    atomic_init(&r->popped, 0);
    return r->prod ? KC_OK : KC_ERR_NOMEM;
}

bool kc_rt_bring_grow(kc_rt_bring_t *r)
{
    unsigned size = ck_ring_capacity(&r->prod->ring);
    if (size >= r->max)
        return false;
    kc_rt_bseg_t *g = bseg_new(size * 2);
    if (!g)
        return false;
    /* release: every push into the full segment (its p_tail stores) happens-before the
     * consumer's acquire load that sees the link (ring.h, growth) */
    atomic_store_explicit(&r->prod->next, g, memory_order_release);
    r->prod = g;
    return true;
}

bool kc_rt_bring_next_segment(kc_rt_bring_t *r)
{
    kc_rt_bseg_t *old = r->cons;
    kc_rt_bseg_t *g = atomic_load_explicit(&old->next, memory_order_acquire);
    if (!g)
        return false;
    if (ck_ring_size(&old->ring) != 0)
        return true; /* pushed before the link: popped before anything of the next segment */
    r->cons = g;
    free(old);
    return true;
}

void kc_rt_bring_fini(kc_rt_bring_t *r)
{
    for (kc_rt_bseg_t *g = r->cons, *next; g; g = next) {
        next = atomic_load_explicit(&g->next, memory_order_relaxed);
        free(g);
    }
    r->prod = r->cons = NULL;
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
