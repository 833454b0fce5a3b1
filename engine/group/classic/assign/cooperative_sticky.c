/*
 * The cooperative-sticky assignor (KIP-429): reproduces the behaviour of Java's
 * org.apache.kafka.clients.consumer.CooperativeStickyAssignor (kafka-clients 4.1).
 *
 * The sticky target is computed from the members' owned partitions and subscription generations
 * (sticky.c), then every partition whose owner changes is withheld: assigned to nobody in this
 * round. Its previous owner revokes it and rejoins; the next round hands it over. Without this
 * step a moved partition would have two owners at once and its records would be delivered twice.
 *
 * Which partitions change owner: the constrained builder records them as it deals them out
 * (including partitions two members claimed in one generation); after the general builder it is
 * every partition newly assigned to a member that some other member reported owning.
 *
 * Owner: the network thread; pure function.
 */
#include "group/classic/assign/sticky_int.h"

#include <stdlib.h>

#include "base/err.h"

static void withhold(kc_sticky_t *s)
{
    kc_actx_t *c = &s->c;
    int32_t *transfer = s->transfer;
    int32_t *computed = NULL;
    if (!transfer) {
        size_t total = (size_t)c->total;
        computed = malloc((total + 1) * sizeof *computed);
        bool *revoked = calloc(total + 1, sizeof *revoked);
        bool *owned_by = calloc(total + 1, sizeof *owned_by);
        if (!computed || !revoked || !owned_by) {
            c->oom = true;
            free(computed);
            free(revoked);
            free(owned_by);
            return;
        }
        for (size_t i = 0; i < total; i++)
            computed[i] = -1;
        for (size_t m = 0; m < c->nm; m++) {
            const kc_assign_member_t *mb = &c->in->members[m];
            /* owned_by marks this member's owned partitions, cleared again below */
            for (size_t i = 0; i < mb->n_owned; i++) {
                int32_t gp = kc_actx_gp(c, &mb->owned[i]);
                if (gp >= 0)
                    owned_by[gp] = true;
            }
            for (size_t i = 0; i < c->out[m].n; i++)
                if (!owned_by[c->out[m].v[i]])
                    computed[c->out[m].v[i]] = (int32_t)m;
            for (size_t i = 0; i < mb->n_owned; i++) {
                int32_t gp = kc_actx_gp(c, &mb->owned[i]);
                if (gp >= 0 && kc_ivec_find(&c->out[m], gp) < 0)
                    revoked[gp] = true;
            }
            for (size_t i = 0; i < mb->n_owned; i++) {
                int32_t gp = kc_actx_gp(c, &mb->owned[i]);
                if (gp >= 0)
                    owned_by[gp] = false;
            }
        }
        for (size_t i = 0; i < total; i++)
            if (!revoked[i])
                computed[i] = -1;
        free(revoked);
        free(owned_by);
        transfer = computed;
    }
    for (int32_t gp = 0; gp < c->total; gp++)
        if (transfer[gp] >= 0)
            kc_ivec_remove(&c->out[transfer[gp]], gp);
    free(computed);
}

kc_err_t kc_assign_cooperative_sticky(const kc_assign_input_t *in, kc_assign_result_t *out,
                                      kc_error_t *err)
{
    *out = (kc_assign_result_t){0};
    kc_sticky_t s;
    kc_err_t rc = kc_sticky_compute(&s, in, true, err);
    if (rc == KC_OK && s.c.nm > 0)
        withhold(&s);
    if (rc == KC_OK)
        rc = kc_actx_finish(&s.c, out, err);
    kc_sticky_free(&s);
    return rc;
}
