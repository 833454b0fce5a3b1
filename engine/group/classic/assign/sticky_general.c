/*
 * The general case of the sticky family (members subscribe to different topics): reproduces the
 * behaviour of the GeneralAssignmentBuilder inside Java's
 * org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor (kafka-clients 4.1).
 *
 * Kept owned partitions stay; the unassigned ones go, topic by topic (fewest potential members
 * first), to the least loaded eligible member (rack-matching first when rack-aware); then
 * partitions are moved from members holding 2+ more than an eligible peer, preferring to return
 * a partition to its previous-generation owner. A movement that would undo an earlier one swaps
 * in the partition that earlier moved the other way (Java picks the first of a HashSet, so the
 * HashSet's iteration order is modelled here), and a balancing round that does not improve the
 * balance score is rolled back.
 *
 * Owner: the network thread; state lives for one call.
 */
#include "group/classic/assign/sticky_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"

/* One HashSet<TopicPartition> of PartitionMovements: partitions of one topic moved src -> dst.
 * Its table size follows the most entries it held, and a fresh set replaces it once empty. */
typedef struct {
    int32_t t, src, dst;
    size_t size, max_size;
    bool live;
} mset_t;

typedef struct {
    kc_sticky_t *s;
    kc_actx_t *c;
    kc_ivec_t *cur;  /* = c->out: currentAssignment */
    bool *present;   /* [nm]: a key of currentAssignment */
    bool *insorted;  /* [nm]: in sortedCurrentSubscriptions */
    kc_ivec_t *t2c;  /* [nt]: topic2AllPotentialConsumers */
    int32_t *cpc;    /* [total]: currentPartitionConsumer, -1 */
    int32_t *prev_m; /* [total]: prevAssignment consumer, -1 */
    int32_t *prev_g; /* [total] */
    size_t *sorted;  /* scratch [nm] */
    size_t *byrank;  /* [nm]: members in Java string order of their ids */
    size_t *cnt;     /* scratch [total + 2] for sorted_subs */
    /* PartitionMovements */
    mset_t *sets;
    size_t nsets, capsets;
    int32_t *mv_set;  /* [total]: set holding the partition's movement, -1 */
    uint64_t *mv_seq; /* [total]: when it entered that set */
    uint64_t seq;
    bool revocation_required;
} gen_t;

/* sortedCurrentSubscriptions, in order (by assignment size, then member id): a counting sort
 * by size over the members taken in id order, O(members + largest assignment) per call, since
 * balancing walks this order after every single move. */
static size_t sorted_subs(gen_t *g)
{
    size_t nm = g->c->nm, maxs = 0, n = 0;
    for (size_t m = 0; m < nm; m++)
        if (g->insorted[m] && g->cur[m].n > maxs)
            maxs = g->cur[m].n;
    memset(g->cnt, 0, (maxs + 2) * sizeof *g->cnt);
    for (size_t m = 0; m < nm; m++)
        if (g->insorted[m]) {
            g->cnt[g->cur[m].n + 1]++;
            n++;
        }
    for (size_t i = 1; i <= maxs + 1; i++)
        g->cnt[i] += g->cnt[i - 1];
    for (size_t i = 0; i < nm; i++) {
        size_t m = g->byrank[i];
        if (g->insorted[m])
            g->sorted[g->cnt[g->cur[m].n]++] = m;
    }
    return n;
}

static int32_t max_assignment_size(const gen_t *g, size_t m)
{
    const kc_ivec_t *topics = &g->c->subs[m];
    if (topics->n == g->c->nt)
        return g->c->total;
    int32_t sum = 0;
    for (size_t i = 0; i < topics->n; i++)
        sum += g->c->topic[topics->v[i]]->n_partitions;
    return sum;
}

static bool is_balanced(gen_t *g)
{
    size_t n = sorted_subs(g);
    if (n == 0)
        return true;
    size_t min = g->cur[g->sorted[0]].n, max = g->cur[g->sorted[n - 1]].n;
    if (min + 1 >= max)
        return true;
    for (size_t k = 0; k < n; k++) {
        size_t m = g->sorted[k];
        int32_t count = (int32_t)g->cur[m].n;
        if (count == max_assignment_size(g, m))
            continue;
        const kc_ivec_t *topics = &g->c->subs[m];
        for (size_t i = 0; i < topics->n; i++) {
            int t = topics->v[i];
            for (int32_t gp = g->c->toff[t]; gp < g->c->toff[t + 1]; gp++) {
                /* cpc mirrors the lists for every assigned partition here: maybe_assign has
                 * placed all of them, and every move updates both */
                int32_t other = g->cpc[gp];
                if (other == (int32_t)m)
                    continue;
                if (other >= 0 && g->present[other] && count + 1 < (int32_t)g->cur[other].n)
                    return false;
            }
        }
    }
    return true;
}

static int64_t balance_score(const kc_ivec_t *a, const bool *present, size_t nm)
{
    int64_t score = 0;
    for (size_t i = 0; i < nm; i++)
        for (size_t j = i + 1; j < nm && present[i]; j++)
            if (present[j])
                score += a[i].n > a[j].n ? (int64_t)(a[i].n - a[j].n) : (int64_t)(a[j].n - a[i].n);
    return score;
}

/* ---- PartitionMovements ------------------------------------------------------------------ */

static int32_t find_set(const gen_t *g, int32_t t, int32_t src, int32_t dst)
{
    for (size_t i = 0; i < g->nsets; i++)
        if (g->sets[i].live && g->sets[i].t == t && g->sets[i].src == src && g->sets[i].dst == dst)
            return (int32_t)i;
    return -1;
}

static bool topic_has_movements(const gen_t *g, int32_t t)
{
    for (size_t i = 0; i < g->nsets; i++)
        if (g->sets[i].live && g->sets[i].t == t)
            return true;
    return false;
}

static void add_movement(gen_t *g, int32_t gp, int32_t src, int32_t dst)
{
    int32_t t = g->c->gp_topic[gp];
    int32_t si = find_set(g, t, src, dst);
    if (si < 0) {
        if (g->nsets == g->capsets) {
            size_t cap = g->capsets ? g->capsets * 2 : 16;
            mset_t *ns = realloc(g->sets, cap * sizeof *ns);
            if (!ns) {
                g->c->oom = true;
                return;
            }
            g->sets = ns;
            g->capsets = cap;
        }
        si = (int32_t)g->nsets++;
        g->sets[si] = (mset_t){.t = t, .src = src, .dst = dst, .live = true};
    }
    mset_t *set = &g->sets[si];
    if (++set->size > set->max_size)
        set->max_size = set->size;
    g->mv_set[gp] = si;
    g->mv_seq[gp] = g->seq++;
}

static void remove_movement(gen_t *g, int32_t gp)
{
    mset_t *set = &g->sets[g->mv_set[gp]];
    g->mv_set[gp] = -1;
    if (--set->size == 0)
        set->live = false;
}

/* HashSet.iterator().next(): lowest bucket, then earliest insertion. */
static int32_t set_first(const gen_t *g, int32_t si)
{
    size_t cap = kc_jmap_cap(g->sets[si].max_size);
    int32_t best = -1;
    uint32_t best_bucket = 0;
    int32_t t = g->sets[si].t;
    for (int32_t gp = g->c->toff[t]; gp < g->c->toff[t + 1]; gp++) {
        if (g->mv_set[gp] != si)
            continue;
        uint32_t b = kc_jbucket(kc_jtp_hash(g->c->topic[t]->name, kc_actx_pnum(g->c, gp)), cap);
        if (best < 0 || b < best_bucket || (b == best_bucket && g->mv_seq[gp] < g->mv_seq[best])) {
            best = gp;
            best_bucket = b;
        }
    }
    return best;
}

static void move_partition(gen_t *g, int32_t gp, int32_t old, int32_t neu)
{
    if (g->mv_set[gp] >= 0) {
        int32_t src = g->sets[g->mv_set[gp]].src;
        remove_movement(g, gp);
        if (src != neu)
            add_movement(g, gp, src, neu);
    } else {
        add_movement(g, gp, old, neu);
    }
}

static int32_t actual_partition_to_move(gen_t *g, int32_t gp, int32_t old, int32_t neu)
{
    int32_t t = g->c->gp_topic[gp];
    if (!topic_has_movements(g, t))
        return gp;
    if (g->mv_set[gp] >= 0)
        old = g->sets[g->mv_set[gp]].src;
    int32_t si = find_set(g, t, neu, old);
    return si < 0 ? gp : set_first(g, si);
}

static void process_movement(gen_t *g, int32_t gp, int32_t neu)
{
    int32_t old = g->cpc[gp];
    move_partition(g, gp, old, neu);
    kc_ivec_remove(&g->cur[old], gp);
    kc_ivec_push(&g->cur[neu], gp, &g->c->oom);
    g->cpc[gp] = neu;
}

static void reassign_to(gen_t *g, int32_t gp, int32_t neu)
{
    int32_t moved = actual_partition_to_move(g, gp, g->cpc[gp], neu);
    process_movement(g, moved, neu);
}

static void reassign(gen_t *g, int32_t gp)
{
    size_t n = sorted_subs(g);
    int t = g->c->gp_topic[gp];
    for (size_t k = 0; k < n; k++)
        if (kc_actx_subscribes(g->c, g->sorted[k], t)) {
            reassign_to(g, gp, (int32_t)g->sorted[k]);
            return;
        }
}

/* ---- the builder ------------------------------------------------------------------------- */

static bool maybe_assign_partition(gen_t *g, int32_t gp, bool rack)
{
    size_t n = sorted_subs(g);
    int t = g->c->gp_topic[gp];
    for (size_t k = 0; k < n; k++) {
        size_t m = g->sorted[k];
        if (kc_actx_subscribes(g->c, m, t) && (!rack || !kc_sticky_racks_mismatch(g->s, m, gp))) {
            kc_ivec_push(&g->cur[m], gp, &g->c->oom);
            g->cpc[gp] = (int32_t)m;
            return true;
        }
    }
    return false;
}

static void maybe_assign(gen_t *g, kc_ivec_t *list, bool rack, bool remove_assigned)
{
    for (size_t i = 0; i < list->n;) {
        int32_t gp = list->v[i];
        if (g->t2c[g->c->gp_topic[gp]].n == 0) {
            i++;
            continue;
        }
        if (maybe_assign_partition(g, gp, rack) && remove_assigned)
            kc_ivec_remove_at(list, i);
        else
            i++;
    }
}

static bool can_consumer_participate(const gen_t *g, size_t m)
{
    if ((int32_t)g->cur[m].n < max_assignment_size(g, m))
        return true;
    for (size_t i = 0; i < g->cur[m].n; i++)
        if (g->t2c[g->c->gp_topic[g->cur[m].v[i]]].n >= 2)
            return true;
    return false;
}

static kc_err_t perform_reassignments(gen_t *g, const kc_ivec_t *list, bool *performed,
                                      kc_error_t *err)
{
    bool modified;
    *performed = false;
    do {
        modified = false;
        for (size_t i = 0; i < list->n && !is_balanced(g); i++) {
            int32_t gp = list->v[i];
            int t = g->c->gp_topic[gp];
            int32_t consumer = g->cpc[gp];
            if (consumer < 0 || !g->present[consumer])
                return kc_fail(err, KC_ERR_STATE, "sticky: partition without a current owner");
            int32_t pm = g->prev_m[gp];
            if (pm >= 0) {
                if (!g->present[pm]) /* Java dereferences a missing entry here and throws */
                    return kc_fail(err, KC_ERR_STATE, "sticky: previous owner not assignable");
                if (g->cur[consumer].n > g->cur[pm].n + 1) {
                    reassign_to(g, gp, pm);
                    *performed = modified = true;
                    continue;
                }
            }
            const char *crack = kc_sticky_rack(g->s, (size_t)consumer);
            bool found = false;
            if (crack && g->c->gp_nracks[gp] > 0 && kc_actx_gp_has_rack(g->c, gp, crack)) {
                for (size_t k = 0; k < g->t2c[t].n && !found; k++) {
                    int32_t other = g->t2c[t].v[k];
                    const char *orack = kc_sticky_rack(g->s, (size_t)other);
                    if (!orack || !kc_actx_gp_has_rack(g->c, gp, orack))
                        continue;
                    if (!g->present[other])
                        return kc_fail(err, KC_ERR_STATE, "sticky: fixed member in balancing");
                    if (g->cur[consumer].n > g->cur[other].n + 1) {
                        reassign(g, gp);
                        *performed = modified = found = true;
                    }
                }
            }
            for (size_t k = 0; k < g->t2c[t].n && !found; k++) {
                int32_t other = g->t2c[t].v[k];
                if (!g->present[other])
                    return kc_fail(err, KC_ERR_STATE, "sticky: fixed member in balancing");
                if (g->cur[consumer].n > g->cur[other].n + 1) {
                    reassign(g, gp);
                    *performed = modified = found = true;
                }
            }
        }
    } while (modified);
    return KC_OK;
}

static kc_err_t balance(gen_t *g, kc_ivec_t *sorted_all, kc_ivec_t *unassigned, kc_error_t *err)
{
    kc_actx_t *c = g->c;
    size_t nm = c->nm, n = sorted_subs(g);
    bool initializing = n == 0 || g->cur[g->sorted[n - 1]].n == 0;
    kc_err_t rc = KC_OK;
    if (g->s->rack_aware) {
        kc_ivec_t copy = {0};
        for (size_t i = 0; i < unassigned->n; i++)
            kc_ivec_push(&copy, unassigned->v[i], &c->oom);
        maybe_assign(g, &copy, true, true);
        maybe_assign(g, &copy, false, false);
        kc_ivec_free(&copy);
    } else {
        maybe_assign(g, unassigned, false, false);
    }
    /* partitions of topics with fewer than two potential members cannot move */
    for (kc_ivec_t *l = sorted_all; l; l = l == sorted_all ? unassigned : NULL)
        for (size_t i = 0; i < l->n;)
            if (g->t2c[c->gp_topic[l->v[i]]].n < 2)
                kc_ivec_remove_at(l, i);
            else
                i++;
    bool *fixed = calloc(nm + 1, sizeof *fixed);
    kc_ivec_t *pre = calloc(nm + 1, sizeof *pre);
    int32_t *pre_cpc = malloc(((size_t)c->total + 1) * sizeof *pre_cpc);
    if (!fixed || !pre || !pre_cpc) {
        c->oom = true;
        goto out;
    }
    for (size_t m = 0; m < nm; m++)
        if (!can_consumer_participate(g, m)) {
            fixed[m] = true;
            g->insorted[m] = false;
            g->present[m] = false;
        }
    for (size_t m = 0; m < nm; m++)
        for (size_t i = 0; i < g->cur[m].n; i++)
            kc_ivec_push(&pre[m], g->cur[m].v[i], &c->oom);
    memcpy(pre_cpc, g->cpc, (size_t)c->total * sizeof *pre_cpc);
    bool performed = false;
    if (!g->revocation_required)
        rc = perform_reassignments(g, unassigned, &performed, err);
    if (rc == KC_OK)
        rc = perform_reassignments(g, sorted_all, &performed, err);
    if (rc == KC_OK && !initializing && performed &&
        balance_score(g->cur, g->present, nm) >= balance_score(pre, g->present, nm)) {
        for (size_t m = 0; m < nm; m++) {
            kc_ivec_t tmp = g->cur[m];
            g->cur[m] = pre[m];
            pre[m] = tmp;
        }
        memcpy(g->cpc, pre_cpc, (size_t)c->total * sizeof *pre_cpc);
    }
    for (size_t m = 0; m < nm; m++)
        if (fixed[m])
            g->present[m] = g->insorted[m] = true;
out:
    if (pre)
        for (size_t m = 0; m < nm; m++)
            kc_ivec_free(&pre[m]);
    free(pre);
    free(pre_cpc);
    free(fixed);
    return rc;
}

/* Topics ordered by (number of potential members, name): TopicComparator. */
static void sorted_topics(const gen_t *g, int *order)
{
    size_t nt = g->c->nt;
    for (size_t t = 0; t < nt; t++) {
        size_t j = t;
        for (; j > 0 && g->t2c[order[j - 1]].n > g->t2c[t].n; j--)
            order[j] = order[j - 1];
        order[j] = (int)t;
    }
}

kc_err_t kc_sticky_general(kc_sticky_t *s, kc_error_t *err)
{
    kc_actx_t *c = &s->c;
    size_t nm = c->nm, total = (size_t)c->total;
    gen_t g = {.s = s, .c = c, .cur = c->out};
    kc_ivec_t sorted_all = {0}, unassigned = {0};
    kc_err_t rc = KC_OK;
    g.present = calloc(nm + 1, sizeof *g.present);
    g.insorted = calloc(nm + 1, sizeof *g.insorted);
    g.t2c = calloc(c->nt + 1, sizeof *g.t2c);
    g.cpc = malloc((total + 1) * sizeof *g.cpc);
    g.prev_m = malloc((total + 1) * sizeof *g.prev_m);
    g.prev_g = calloc(total + 1, sizeof *g.prev_g);
    g.sorted = calloc(nm + 1, sizeof *g.sorted);
    g.byrank = calloc(nm + 1, sizeof *g.byrank);
    g.cnt = calloc(total + 2, sizeof *g.cnt);
    g.mv_set = malloc((total + 1) * sizeof *g.mv_set);
    g.mv_seq = calloc(total + 1, sizeof *g.mv_seq);
    int *torder = calloc(c->nt + 1, sizeof *torder);
    bool *assigned = calloc(total + 1, sizeof *assigned);
    if (!g.present || !g.insorted || !g.t2c || !g.cpc || !g.prev_m || !g.prev_g || !g.sorted ||
        !g.byrank || !g.cnt || !g.mv_set || !g.mv_seq || !torder || !assigned) {
        c->oom = true;
        goto out;
    }
    for (size_t i = 0; i < total; i++)
        g.cpc[i] = g.prev_m[i] = g.mv_set[i] = -1;
    /* the TreeSet orders by (size, member id): order the ids once (see sorted_subs) */
    for (size_t m = 0; m < nm; m++)
        g.byrank[m] = m;
    for (size_t i = 1; i < nm; i++) {
        size_t x = g.byrank[i], j = i;
        for (; j > 0 && kc_jstr_cmp(c->in->members[g.byrank[j - 1]].member_id,
                                    c->in->members[x].member_id) > 0;
             j--)
            g.byrank[j] = g.byrank[j - 1];
        g.byrank[j] = x;
    }
    for (size_t k = 0; k < nm; k++) {
        size_t m = c->horder[k];
        g.present[m] = true;
        for (size_t i = 0; i < c->subs[m].n; i++)
            kc_ivec_push(&g.t2c[c->subs[m].v[i]], (int32_t)m, &c->oom);
        for (size_t i = 0; i < s->owned[m].n; i++) {
            kc_ivec_push(&g.cur[m], s->owned[m].v[i], &c->oom);
            g.cpc[s->owned[m].v[i]] = (int32_t)m;
        }
    }
    sorted_topics(&g, torder);
    for (size_t i = 0; i < c->nt; i++)
        for (int32_t gp = c->toff[torder[i]]; gp < c->toff[torder[i] + 1]; gp++)
            kc_ivec_push(&sorted_all, gp, &c->oom);

    /* prepopulateCurrentAssignments: partitions of members behind the newest generation */
    for (size_t k = 0; k < nm; k++) {
        size_t m = c->horder[k];
        int32_t gen;
        if (s->md_has_gen[m] && s->md_gen[m] < s->max_gen)
            gen = s->md_gen[m];
        else if (!s->md_has_gen[m] && s->max_gen > -1)
            gen = -1;
        else
            continue;
        for (size_t i = 0; i < s->md_parts[m].n; i++) {
            int32_t gp = s->md_parts[m].v[i];
            if (g.prev_m[gp] < 0 || gen > g.prev_g[gp]) {
                g.prev_m[gp] = (int32_t)m;
                g.prev_g[gp] = gen;
            }
        }
    }

    /* assignOwnedPartitions: drop what the member no longer subscribes to or is off-rack */
    for (size_t m = 0; m < nm; m++) {
        kc_ivec_t *own = &g.cur[m];
        for (size_t i = 0; i < own->n;) {
            int32_t gp = own->v[i];
            if (!kc_actx_subscribes(c, m, c->gp_topic[gp]) || kc_sticky_racks_mismatch(s, m, gp)) {
                kc_ivec_remove_at(own, i);
                g.revocation_required = true;
            } else {
                assigned[gp] = true;
                i++;
            }
        }
    }
    for (size_t i = 0; i < sorted_all.n; i++)
        if (!assigned[sorted_all.v[i]])
            kc_ivec_push(&unassigned, sorted_all.v[i], &c->oom);
    for (size_t m = 0; m < nm; m++)
        g.insorted[m] = true;
    if (!c->oom)
        rc = balance(&g, &sorted_all, &unassigned, err);
out:
    if (g.t2c)
        for (size_t t = 0; t < c->nt; t++)
            kc_ivec_free(&g.t2c[t]);
    kc_ivec_free(&sorted_all);
    kc_ivec_free(&unassigned);
    free(g.present);
    free(g.insorted);
    free(g.t2c);
    free(g.cpc);
    free(g.prev_m);
    free(g.prev_g);
    free(g.sorted);
    free(g.byrank);
    free(g.cnt);
    free(g.mv_set);
    free(g.mv_seq);
    free(g.sets);
    free(torder);
    free(assigned);
    return rc;
}
