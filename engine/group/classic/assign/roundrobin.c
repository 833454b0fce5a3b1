/*
 * The roundrobin assignor: reproduces the behaviour of Java's
 * org.apache.kafka.clients.consumer.RoundRobinAssignor (kafka-clients 4.1). It is not rack-aware
 * in Java either.
 *
 * All subscribed partitions, topics in name order, are dealt one at a time to the members in
 * MemberInfo order (static first by instance id, then member id) around a circle; a member not
 * subscribed to the partition's topic is skipped, and the circle does not rewind between topics.
 *
 * Owner: the network thread; pure function.
 */
#include "group/classic/assign/assign_int.h"

#include <stdlib.h>

#include "base/err.h"

kc_err_t kc_assign_roundrobin(const kc_assign_input_t *in, kc_assign_result_t *out, kc_error_t *err)
{
    *out = (kc_assign_result_t){0};
    kc_actx_t c;
    kc_err_t rc = kc_actx_init(&c, in, err);
    if (rc != KC_OK)
        return rc;
    size_t *ring = calloc(c.nm + 1, sizeof *ring);
    if (!ring) {
        c.oom = true;
    } else {
        for (size_t m = 0; m < c.nm; m++)
            ring[m] = c.horder[m]; /* HashMap order, then a stable sort (see range.c) */
        kc_assign_sort_members(in->members, ring, c.nm);
        size_t pos = 0;
        /* c.topic is already in name order; a topic nobody subscribes to is never visited
         * (Java builds its list from the subscriptions), which also keeps the walk finite. */
        for (size_t t = 0; t < c.nt; t++) {
            bool any = false;
            for (size_t m = 0; m < c.nm && !any; m++)
                any = kc_actx_subscribes(&c, m, (int)t);
            if (!any)
                continue;
            for (int32_t p = 0; p < c.topic[t]->n_partitions; p++) {
                while (!kc_actx_subscribes(&c, ring[pos], (int)t))
                    pos = (pos + 1) % c.nm;
                kc_ivec_push(&c.out[ring[pos]], c.toff[t] + p, &c.oom);
                pos = (pos + 1) % c.nm;
            }
        }
    }
    free(ring);
    rc = kc_actx_finish(&c, out, err);
    kc_actx_free(&c);
    return rc;
}
