/*
 * The eager sticky assignor and the input side of the whole sticky family: reproduces the
 * behaviour of Java's org.apache.kafka.clients.consumer.StickyAssignor and of
 * org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor's preparation and
 * ConstrainedAssignmentBuilder (kafka-clients 4.1). The general builder is in sticky_general.c.
 *
 * What decides the result, in Java's order:
 *   - member data: eager sticky reads the previous assignment and generation from its user data;
 *     cooperative-sticky uses the owned partitions and the subscription's generation;
 *   - conflicting claims: of two members claiming one partition, the higher generation keeps it;
 *     at equal generations neither does and the partition is marked doubly claimed (the
 *     comparison reads the *subscription's* generation of the earlier claimant, as Java does);
 *   - members are visited in Java HashMap order of their ids (see assign.h), which decides who
 *     keeps a partition and who reaches the over-quota slots first;
 *   - when every member lists the same topics (Java's check skips members while its topic set is
 *     still empty), the constrained builder runs: owned partitions kept up to the quota, the rest
 *     dealt round robin to under-filled members sorted by id, rack-matching first.
 *
 * Owner: the network thread; pure function.
 */
#include "group/classic/assign/sticky_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"

const char *kc_sticky_rack(const kc_sticky_t *s, size_t m)
{
    return s->rack_aware ? s->c.mrack[m] : NULL;
}

bool kc_sticky_racks_mismatch(const kc_sticky_t *s, size_t m, int32_t gp)
{
    const char *rack = kc_sticky_rack(s, m);
    return rack && !kc_actx_gp_has_rack(&s->c, gp, rack);
}

static void map_tps(kc_sticky_t *s, const kc_assign_tp_t *tps, size_t n, kc_ivec_t *out)
{
    for (size_t i = 0; i < n; i++) {
        int32_t gp = kc_actx_gp(&s->c, &tps[i]);
        if (gp >= 0)
            kc_ivec_push(out, gp, &s->c.oom);
    }
}

/* memberData() of StickyAssignor / CooperativeStickyAssignor. */
static void member_data(kc_sticky_t *s, size_t m)
{
    const kc_assign_member_t *mb = &s->c.in->members[m];
    s->sub_gen[m] = mb->generation >= 0 ? mb->generation : -1;
    if (s->coop) {
        map_tps(s, mb->owned, mb->n_owned, &s->md_parts[m]);
        if (mb->generation >= 0) {
            s->md_has_gen[m] = true;
            s->md_gen[m] = mb->generation;
        } else if (mb->has_user_data) {
            s->md_has_gen[m] = true; /* undecodable user data counts as generation -1 */
            s->md_gen[m] = mb->prev_has_generation ? mb->prev_generation : -1;
        }
        return;
    }
    if (!mb->has_user_data)
        return;
    map_tps(s, mb->prev, mb->n_prev, &s->md_parts[m]);
    s->md_has_gen[m] = mb->prev_has_generation;
    s->md_gen[m] = mb->prev_has_generation ? mb->prev_generation : 0;
}

static bool topic_in(const char *const *set, size_t n, const char *t)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(set[i], t) == 0)
            return true;
    return false;
}

/* allSubscriptionsEqual(): also resolves conflicting claims into s->owned / s->multi. */
static bool all_subscriptions_equal(kc_sticky_t *s)
{
    kc_actx_t *c = &s->c;
    bool equal = true;
    const char **set = calloc(1, sizeof *set);
    size_t nset = 0;
    int32_t *claimant = malloc(((size_t)c->total + 1) * sizeof *claimant);
    if (!claimant) {
        free(set);
        c->oom = true;
        return false;
    }
    for (int32_t i = 0; i < c->total; i++)
        claimant[i] = -1;
    for (size_t k = 0; k < c->nm; k++) {
        size_t m = c->horder[k];
        const kc_assign_member_t *mb = &c->in->members[m];
        if (nset == 0) {
            const char **ns = realloc(set, (mb->n_topics + 1) * sizeof *ns);
            if (!ns) {
                c->oom = true;
                break;
            }
            set = ns;
            for (size_t i = 0; i < mb->n_topics; i++)
                if (mb->topics[i] && !topic_in(set, nset, mb->topics[i]))
                    set[nset++] = mb->topics[i];
        } else if (equal) {
            bool same = mb->n_topics == nset;
            for (size_t i = 0; i < mb->n_topics && same; i++)
                same = mb->topics[i] && topic_in(set, nset, mb->topics[i]);
            equal = same;
        }
        int32_t gen = s->md_has_gen[m] ? s->md_gen[m] : -1;
        if (gen > s->max_gen)
            s->max_gen = gen;
        for (size_t i = 0; i < s->md_parts[m].n; i++) {
            int32_t gp = s->md_parts[m].v[i];
            int32_t other = claimant[gp];
            if (other < 0) {
                kc_ivec_push(&s->owned[m], gp, &c->oom);
                claimant[gp] = (int32_t)m;
                continue;
            }
            int32_t other_gen = s->sub_gen[other];
            if (gen == other_gen) {
                s->multi[gp] = true;
                kc_ivec_remove(&s->owned[other], gp);
                claimant[gp] = (int32_t)m;
            } else if (gen > other_gen) {
                kc_ivec_push(&s->owned[m], gp, &c->oom);
                kc_ivec_remove(&s->owned[other], gp);
                claimant[gp] = (int32_t)m;
            }
        }
    }
    free(set);
    free(claimant);
    return equal;
}

/* RackInfo: rack-aware mode and numConsumersByPartition. */
static void rack_info(kc_sticky_t *s)
{
    kc_actx_t *c = &s->c;
    bool any = false;
    for (size_t m = 0; m < c->nm; m++)
        any |= c->mrack[m] != NULL;
    if (!any)
        return;
    s->n_rack_consumers = calloc((size_t)c->total + 1, sizeof *s->n_rack_consumers);
    if (!s->n_rack_consumers) {
        c->oom = true;
        return;
    }
    bool meets = false;
    for (int32_t gp = 0; gp < c->total; gp++) {
        for (size_t r = 0; r < c->gp_nracks[gp]; r++)
            for (size_t m = 0; m < c->nm; m++)
                if (c->mrack[m] && strcmp(c->mrack[m], c->gp_racks[gp][r]) == 0) {
                    s->n_rack_consumers[gp]++;
                    meets = true;
                }
    }
    s->rack_aware = meets && !kc_actx_racks_uniform(c, 0, c->total);
}

/* ---- ConstrainedAssignmentBuilder --------------------------------------------------------- */

typedef struct {
    kc_sticky_t *s;
    int32_t min_quota, max_quota, expected_over, current_over;
    kc_ivec_t under, exactly; /* member indices */
    int32_t *maybe_revoked;   /* [total]: previous owner, -1 */
    bool *assigned;           /* [total] */
} constrained_t;

static int32_t member_id_cmp(const kc_sticky_t *s, int32_t a, int32_t b)
{
    return kc_jstr_cmp(s->c.in->members[a].member_id, s->c.in->members[b].member_id);
}

static void sort_by_id(const kc_sticky_t *s, kc_ivec_t *v)
{
    for (size_t i = 1; i < v->n; i++) {
        int32_t x = v->v[i];
        size_t j = i;
        for (; j > 0 && member_id_cmp(s, v->v[j - 1], x) > 0; j--)
            v->v[j] = v->v[j - 1];
        v->v[j] = x;
    }
}

static int32_t assign_new(constrained_t *b, int32_t gp, int32_t m)
{
    kc_sticky_t *s = b->s;
    kc_ivec_push(&s->c.out[m], gp, &s->c.oom);
    if ((b->maybe_revoked[gp] >= 0 && b->maybe_revoked[gp] != m) || s->multi[gp])
        s->transfer[gp] = m;
    return (int32_t)s->c.out[m].n;
}

/* Owned partitions, kept in (partition, topic) order up to the quota. */
static void assign_owned(constrained_t *b)
{
    kc_sticky_t *s = b->s;
    kc_actx_t *c = &s->c;
    for (size_t k = 0; k < c->nm; k++) {
        size_t m = c->horder[k];
        kc_ivec_t own = {0};
        for (size_t i = 0; i < s->owned[m].n; i++) {
            int32_t gp = s->owned[m].v[i];
            if (kc_sticky_racks_mismatch(s, m, gp))
                b->maybe_revoked[gp] = (int32_t)m;
            else
                kc_ivec_push(&own, gp, &c->oom);
        }
        for (size_t i = 1; i < own.n; i++) { /* stable: (partition, topic) */
            int32_t x = own.v[i];
            size_t j = i;
            for (; j > 0; j--) {
                int32_t y = own.v[j - 1];
                int32_t px = kc_actx_pnum(c, x), py = kc_actx_pnum(c, y);
                if (py < px || (py == px && c->gp_topic[y] <= c->gp_topic[x]))
                    break;
                own.v[j] = y;
            }
            own.v[j] = x;
        }
        for (size_t i = 0; i < own.n;)
            if (s->multi[own.v[i]])
                kc_ivec_remove_at(&own, i);
            else
                i++;
        int32_t n = (int32_t)own.n, keep;
        if (n < b->min_quota) {
            keep = n;
            kc_ivec_push(&b->under, (int32_t)m, &c->oom);
        } else if (n >= b->max_quota && b->current_over < b->expected_over) {
            if (++b->current_over == b->expected_over)
                b->exactly.n = 0;
            keep = b->max_quota;
        } else {
            keep = b->min_quota;
            if (b->current_over < b->expected_over)
                kc_ivec_push(&b->exactly, (int32_t)m, &c->oom);
        }
        for (int32_t i = 0; i < n; i++) {
            if (i < keep) {
                kc_ivec_push(&c->out[m], own.v[i], &c->oom);
                b->assigned[own.v[i]] = true;
            } else {
                b->maybe_revoked[own.v[i]] = (int32_t)m;
            }
        }
        kc_ivec_free(&own);
    }
}

static int next_rack_consumer(const kc_sticky_t *s, int32_t gp, const kc_ivec_t *list, size_t first)
{
    if (s->c.gp_nracks[gp] == 0)
        return -1;
    for (size_t i = 0; i < list->n; i++) {
        size_t idx = (first + i) % list->n;
        const char *rack = kc_sticky_rack(s, (size_t)list->v[idx]);
        if (rack && kc_actx_gp_has_rack(&s->c, gp, rack))
            return (int)idx;
    }
    return -1;
}

static void assign_rack_round_robin(constrained_t *b, kc_ivec_t *un)
{
    kc_sticky_t *s = b->s;
    if (!s->rack_aware)
        return;
    size_t next = 0;
    for (size_t i = 0; i < un->n;) {
        int32_t gp = un->v[i], consumer = -1;
        int idx = next_rack_consumer(s, gp, &b->under, next);
        if (idx >= 0) {
            consumer = b->under.v[idx];
            int32_t count = (int32_t)s->c.out[consumer].n + 1;
            if (count >= b->min_quota) {
                kc_ivec_remove(&b->under, consumer);
                if (count < b->max_quota && b->current_over < b->expected_over)
                    kc_ivec_push(&b->exactly, consumer, &s->c.oom);
            } else {
                idx++;
            }
            next = b->under.n == 0 ? 0 : (size_t)idx % b->under.n;
        } else if (b->exactly.n > 0) {
            int first = next_rack_consumer(s, gp, &b->exactly, 0);
            if (first >= 0) {
                consumer = b->exactly.v[first];
                if ((int32_t)s->c.out[consumer].n + 1 == b->max_quota) {
                    kc_ivec_remove_at(&b->exactly, (size_t)first);
                    if (++b->current_over == b->expected_over)
                        b->exactly.n = 0;
                }
            }
        }
        if (consumer >= 0) {
            assign_new(b, gp, consumer);
            kc_ivec_remove_at(un, i);
        } else {
            i++;
        }
    }
}

static kc_err_t assign_round_robin(constrained_t *b, const kc_ivec_t *un, kc_error_t *err)
{
    kc_sticky_t *s = b->s;
    size_t it = 0; /* the iterator over `under`: index of its next element */
    for (size_t i = 0; i < un->n; i++) {
        int32_t consumer;
        bool from_iter = false;
        if (it < b->under.n) {
            consumer = b->under.v[it++];
            from_iter = true;
        } else if (b->under.n == 0 && b->exactly.n == 0) {
            return kc_fail(err, KC_ERR_STATE, "sticky: no more unfilled consumers to be assigned");
        } else if (b->under.n == 0) {
            consumer = b->exactly.v[0];
            kc_ivec_remove_at(&b->exactly, 0);
        } else {
            it = 0;
            consumer = b->under.v[it++];
            from_iter = true;
        }
        int32_t count = assign_new(b, un->v[i], consumer);
        if (count == b->min_quota) {
            if (!from_iter)
                return kc_fail(err, KC_ERR_STATE, "sticky: iterator state (Java would throw)");
            kc_ivec_remove_at(&b->under, --it);
            kc_ivec_push(&b->exactly, consumer, &s->c.oom);
        } else if (count == b->max_quota) {
            b->current_over++;
        }
    }
    return KC_OK;
}

static kc_err_t verify_unfilled(constrained_t *b, kc_error_t *err)
{
    if (b->under.n == 0)
        return KC_OK;
    if (b->current_over != b->expected_over)
        return kc_fail(err, KC_ERR_STATE,
                       "sticky: expected number of members over minQuota not reached");
    for (size_t i = 0; i < b->under.n; i++)
        if ((int32_t)b->s->c.out[b->under.v[i]].n != b->min_quota)
            return kc_fail(err, KC_ERR_STATE, "sticky: a member does not reach minQuota");
    return KC_OK;
}

static kc_err_t constrained(kc_sticky_t *s, kc_error_t *err)
{
    kc_actx_t *c = &s->c;
    constrained_t b = {.s = s};
    kc_ivec_t un = {0};
    kc_err_t rc = KC_OK;
    int32_t n = (int32_t)c->nm;
    b.min_quota = c->total / n;
    b.max_quota = (c->total + n - 1) / n;
    b.expected_over = c->total % n;
    b.maybe_revoked = malloc(((size_t)c->total + 1) * sizeof *b.maybe_revoked);
    b.assigned = calloc((size_t)c->total + 1, sizeof *b.assigned);
    if (!b.maybe_revoked || !b.assigned) {
        c->oom = true;
        goto out;
    }
    for (int32_t i = 0; i < c->total; i++)
        b.maybe_revoked[i] = -1;
    assign_owned(&b);
    for (int32_t gp = 0; gp < c->total; gp++) /* topic, then partition */
        if (!b.assigned[gp])
            kc_ivec_push(&un, gp, &c->oom);
    sort_by_id(s, &b.under);
    sort_by_id(s, &b.exactly);
    if (s->n_rack_consumers) /* stable, by how many members share a rack with the partition */
        for (size_t i = 1; i < un.n; i++) {
            int32_t x = un.v[i];
            size_t j = i;
            for (; j > 0 && s->n_rack_consumers[un.v[j - 1]] > s->n_rack_consumers[x]; j--)
                un.v[j] = un.v[j - 1];
            un.v[j] = x;
        }
    if (c->oom)
        goto out;
    assign_rack_round_robin(&b, &un);
    rc = assign_round_robin(&b, &un, err);
    if (rc == KC_OK)
        rc = verify_unfilled(&b, err);
out:
    kc_ivec_free(&un);
    kc_ivec_free(&b.under);
    kc_ivec_free(&b.exactly);
    free(b.maybe_revoked);
    free(b.assigned);
    return rc;
}

void kc_sticky_free(kc_sticky_t *s)
{
    for (size_t m = 0; m < s->c.nm; m++) {
        if (s->md_parts)
            kc_ivec_free(&s->md_parts[m]);
        if (s->owned)
            kc_ivec_free(&s->owned[m]);
    }
    free(s->md_parts);
    free(s->md_has_gen);
    free(s->md_gen);
    free(s->sub_gen);
    free(s->owned);
    free(s->multi);
    free(s->n_rack_consumers);
    free(s->transfer);
    kc_actx_free(&s->c);
    *s = (kc_sticky_t){0};
}

kc_err_t kc_sticky_compute(kc_sticky_t *s, const kc_assign_input_t *in, bool coop, kc_error_t *err)
{
    *s = (kc_sticky_t){.coop = coop, .max_gen = -1};
    kc_err_t rc = kc_actx_init(&s->c, in, err);
    if (rc != KC_OK)
        return rc;
    size_t nm = s->c.nm, total = (size_t)s->c.total;
    s->md_parts = calloc(nm + 1, sizeof *s->md_parts);
    s->md_has_gen = calloc(nm + 1, sizeof *s->md_has_gen);
    s->md_gen = calloc(nm + 1, sizeof *s->md_gen);
    s->sub_gen = calloc(nm + 1, sizeof *s->sub_gen);
    s->owned = calloc(nm + 1, sizeof *s->owned);
    s->multi = calloc(total + 1, sizeof *s->multi);
    if (!s->md_parts || !s->md_has_gen || !s->md_gen || !s->sub_gen || !s->owned || !s->multi)
        return kc_fail(err, KC_ERR_NOMEM, "sticky: out of memory");
    if (nm == 0)
        return KC_OK;
    for (size_t m = 0; m < nm; m++)
        member_data(s, m);
    s->all_equal = all_subscriptions_equal(s);
    rack_info(s);
    if (s->c.oom)
        return kc_fail(err, KC_ERR_NOMEM, "sticky: out of memory");
    if (s->all_equal) {
        s->transfer = malloc((total + 1) * sizeof *s->transfer);
        if (!s->transfer)
            return kc_fail(err, KC_ERR_NOMEM, "sticky: out of memory");
        for (size_t i = 0; i < total; i++)
            s->transfer[i] = -1;
        rc = constrained(s, err);
    } else {
        rc = kc_sticky_general(s, err);
    }
    if (rc == KC_OK && s->c.oom)
        rc = kc_fail(err, KC_ERR_NOMEM, "sticky: out of memory");
    return rc;
}

kc_err_t kc_assign_sticky(const kc_assign_input_t *in, kc_assign_result_t *out, kc_error_t *err)
{
    *out = (kc_assign_result_t){0};
    kc_sticky_t s;
    kc_err_t rc = kc_sticky_compute(&s, in, false, err);
    if (rc == KC_OK)
        rc = kc_actx_finish(&s.c, out, err);
    kc_sticky_free(&s);
    return rc;
}
