/*
 * The range assignor: reproduces the behaviour of Java's
 * org.apache.kafka.clients.consumer.RangeAssignor (kafka-clients 4.1), including its KIP-881
 * rack-aware pass.
 *
 * Per topic, the subscribed members are ordered static-first (by group.instance.id), then by
 * member id, and each takes a contiguous range; the first (partitions % members) take one extra.
 * Rack-aware mode is on when some topic's members have racks that meet its replicas' racks and
 * not every partition of that topic lives on all of those racks. Then, before the plain ranges,
 * partitions go to members on a replica's rack within the same per-member quotas; topics with
 * the same subscribers and partition count are matched together, partition p of all of them to
 * one member, so co-partitioning survives.
 *
 * Owner: the network thread; pure function.
 */
#include "group/classic/assign/assign_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"

typedef struct {
    int t;
    size_t *cons; /* subscribed members in MemberInfo order */
    size_t ncons;
    int32_t *nassigned; /* per member index (size nm) */
    bool *taken;        /* per partition of the topic */
    int32_t unassigned;
    int32_t per;
    int32_t extra_left;
    bool has_rack_info; /* some subscriber has a rack: partitionRacks is filled */
    bool needs_rack;
} topic_state_t;

static int32_t max_assignable(const topic_state_t *s, size_t m)
{
    int32_t v = s->per + (s->extra_left > 0 ? 1 : 0) - s->nassigned[m];
    return v > 0 ? v : 0;
}

static void assign_one(kc_actx_t *c, topic_state_t *s, size_t m, int32_t p)
{
    kc_ivec_push(&c->out[m], c->toff[s->t] + p, &c->oom);
    s->taken[p] = true;
    s->unassigned--;
}

static void on_assigned(topic_state_t *s, size_t m, int32_t k)
{
    s->nassigned[m] += k;
    if (s->nassigned[m] > s->per)
        s->extra_left--;
}

static bool racks_match(const kc_actx_t *c, const topic_state_t *s, size_t m, int32_t p)
{
    const char *rack = c->mrack[m];
    if (!rack)
        return true;
    return s->has_rack_info && kc_actx_gp_has_rack(c, c->toff[s->t] + p, rack);
}

static void assign_ranges(kc_actx_t *c, topic_state_t *s, bool rack_filter)
{
    int32_t np = c->topic[s->t]->n_partitions;
    for (size_t i = 0; i < s->ncons; i++) {
        if (s->unassigned == 0)
            break;
        size_t m = s->cons[i];
        int32_t limit = max_assignable(s, m), k = 0;
        for (int32_t p = 0; p < np && k < limit; p++) {
            if (s->taken[p] || (rack_filter && !racks_match(c, s, m, p)))
                continue;
            assign_one(c, s, m, p);
            k++;
        }
        if (k > 0)
            on_assigned(s, m, k);
    }
}

static bool same_consumers(const topic_state_t *a, const topic_state_t *b)
{
    return a->ncons == b->ncons && memcmp(a->cons, b->cons, a->ncons * sizeof *a->cons) == 0;
}

static int32_t rack_key(const kc_actx_t *c, const topic_state_t *s)
{
    return s->has_rack_info ? c->topic[s->t]->n_partitions : 0;
}

static void assign_copartitioned(kc_actx_t *c, topic_state_t **g, size_t ng, int32_t np)
{
    size_t ncons = g[0]->ncons;
    bool *gone = calloc(ncons + 1, sizeof *gone);
    if (!gone) {
        c->oom = true;
        return;
    }
    size_t left = ncons;
    for (int32_t p = 0; p < np && left > 0; p++) {
        for (size_t i = 0; i < ncons; i++) {
            if (gone[i])
                continue;
            size_t m = g[0]->cons[i];
            bool ok = true;
            for (size_t j = 0; j < ng && ok; j++)
                ok = racks_match(c, g[j], m, p) && max_assignable(g[j], m) > 0;
            if (!ok)
                continue;
            for (size_t j = 0; j < ng; j++) {
                assign_one(c, g[j], m, p);
                on_assigned(g[j], m, 1);
            }
            bool more = false;
            for (size_t j = 0; j < ng; j++)
                more |= max_assignable(g[j], m) > 0;
            if (!more) {
                gone[i] = true;
                left--;
            }
            break;
        }
    }
    free(gone);
}

static void init_topic(kc_actx_t *c, topic_state_t *s, int t, size_t *scratch)
{
    const kc_assign_input_t *in = c->in;
    int32_t np = c->topic[t]->n_partitions;
    s->t = t;
    s->ncons = 0;
    /* Java lists the subscribers in HashMap order before its stable sort; that order only
     * shows when two members share an instance id, which a broker does not allow */
    for (size_t k = 0; k < c->nm; k++)
        if (kc_actx_subscribes(c, c->horder[k], t))
            scratch[s->ncons++] = c->horder[k];
    kc_assign_sort_members(in->members, scratch, s->ncons);
    s->cons = malloc((s->ncons + 1) * sizeof *s->cons);
    s->nassigned = calloc(c->nm + 1, sizeof *s->nassigned);
    s->taken = calloc((size_t)np + 1, sizeof *s->taken);
    if (!s->cons || !s->nassigned || !s->taken) {
        c->oom = true;
        return;
    }
    memcpy(s->cons, scratch, s->ncons * sizeof *s->cons);
    s->unassigned = np;
    s->per = s->ncons ? np / (int32_t)s->ncons : 0;
    s->extra_left = s->ncons ? np % (int32_t)s->ncons : 0;

    /* useRackAwareAssignment(): member racks must exist and meet the replicas' racks, and not
     * every partition may have exactly the full set of racks. */
    bool any_member_rack = false, meets = false;
    for (size_t i = 0; i < s->ncons; i++)
        any_member_rack |= c->mrack[s->cons[i]] != NULL;
    s->has_rack_info = any_member_rack;
    if (!any_member_rack)
        return;
    int32_t g0 = c->toff[t];
    for (size_t i = 0; i < s->ncons && !meets; i++) {
        const char *r = c->mrack[s->cons[i]];
        for (int32_t p = 0; r && p < np && !meets; p++)
            meets = kc_actx_gp_has_rack(c, g0 + p, r);
    }
    if (!meets)
        return;
    s->needs_rack = !kc_actx_racks_uniform(c, g0, g0 + np);
}

kc_err_t kc_assign_range(const kc_assign_input_t *in, kc_assign_result_t *out, kc_error_t *err)
{
    *out = (kc_assign_result_t){0};
    kc_actx_t c;
    kc_err_t rc = kc_actx_init(&c, in, err);
    if (rc != KC_OK)
        return rc;
    /* the topics Java sees: subscribed by someone, with metadata */
    topic_state_t *st = calloc(c.nt + 1, sizeof *st);
    topic_state_t **grp = calloc(c.nt + 1, sizeof *grp);
    bool *done = calloc(c.nt + 1, sizeof *done);
    size_t *scratch = calloc(c.nm + 1, sizeof *scratch);
    size_t ns = 0;
    if (!st || !grp || !done || !scratch) {
        c.oom = true;
        goto out;
    }
    for (size_t t = 0; t < c.nt; t++) {
        bool subscribed = false;
        for (size_t m = 0; m < c.nm && !subscribed; m++)
            subscribed = kc_actx_subscribes(&c, m, (int)t);
        if (subscribed)
            init_topic(&c, &st[ns++], (int)t, scratch);
        if (c.oom)
            goto out;
    }
    bool rack_aware = false;
    for (size_t i = 0; i < ns; i++)
        rack_aware |= st[i].needs_rack;
    if (rack_aware) {
        /* Group by (subscribers, partition count as seen through partitionRacks); each topic
         * is in one group, so the order groups are visited in does not change the result. */
        for (size_t i = 0; i < ns; i++) {
            if (done[i])
                continue;
            size_t ng = 0;
            for (size_t j = i; j < ns; j++)
                if (!done[j] && same_consumers(&st[i], &st[j]) &&
                    rack_key(&c, &st[i]) == rack_key(&c, &st[j])) {
                    grp[ng++] = &st[j];
                    done[j] = true;
                }
            if (ng > 1)
                assign_copartitioned(&c, grp, ng, rack_key(&c, &st[i]));
            else if (st[i].needs_rack)
                assign_ranges(&c, &st[i], true);
        }
    }
    for (size_t i = 0; i < ns; i++)
        assign_ranges(&c, &st[i], false);
out:
    for (size_t i = 0; st && i < ns; i++) {
        free(st[i].cons);
        free(st[i].nassigned);
        free(st[i].taken);
    }
    free(st);
    free(grp);
    free(done);
    free(scratch);
    rc = kc_actx_finish(&c, out, err);
    kc_actx_free(&c);
    return rc;
}
