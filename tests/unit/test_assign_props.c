/* Properties of the classic assignors (engine/group/classic/assign/): eager assignors assign every
 * subscribed partition exactly once and only to subscribers, balance where Java guarantees it, and
 * cooperative-sticky never hands a partition to a new owner while another member still owns
 * it. Exact equality with Java is tests/interop/assignors.test.sh; this file needs no JVM. */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/classic/assign/assign.h"

#define NM   8
#define NT   5
#define MAXP 30

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

typedef struct {
    char ids[NM][16];
    const char *topics[NM][NT];
    kc_assign_tp_t owned[NM][NT * MAXP];
    kc_assign_member_t m[NM];
    kc_assign_topic_t t[NT];
    kc_assign_input_t in;
    const char *rr[NT][MAXP][2]; /* replica racks */
    const char *const *rrp[NT][MAXP];
    size_t nrr[NT][MAXP];
} group_t;

static const char *const RACKS[3] = {"ra", "rb", "rc"};

/* KIP-881 input: racks on some members, replicas of each partition on one or two racks. */
static void add_racks(group_t *g)
{
    for (size_t i = 0; i < g->in.n_members; i++)
        g->m[i].rack = rnd(4) ? RACKS[rnd(3)] : NULL;
    for (size_t t = 0; t < g->in.n_topics; t++) {
        for (int32_t p = 0; p < g->t[t].n_partitions; p++) {
            g->nrr[t][p] = 1 + rnd(2);
            for (size_t k = 0; k < g->nrr[t][p]; k++)
                g->rr[t][p][k] = RACKS[rnd(3)];
            g->rrp[t][p] = g->rr[t][p];
        }
        g->t[t].replica_racks = (const char *const *const *)g->rrp[t];
        g->t[t].n_replica_racks = g->nrr[t];
    }
}

static const char *const TOPIC_NAMES[NT] = {"alpha", "beta", "gamma", "delta", "eps"};

/* A random group; `uniform` gives every member the same topics. Every member subscribes to at
 * least one topic (Java's sticky check treats an empty subscription specially). */
static void make_group(group_t *g, bool uniform)
{
    memset(g, 0, sizeof *g);
    size_t nt = 1 + rnd(NT), nm = 1 + rnd(NM);
    for (size_t t = 0; t < nt; t++)
        g->t[t] = (kc_assign_topic_t){TOPIC_NAMES[t], (int32_t)(1 + rnd(MAXP))};
    uint32_t mask_all = 1 + rnd((1u << nt) - 1);
    for (size_t i = 0; i < nm; i++) {
        snprintf(g->ids[i], sizeof g->ids[i], "m-%x", rnd(0xfffff));
        for (size_t j = 0; j < i; j++)
            if (strcmp(g->ids[i], g->ids[j]) == 0)
                snprintf(g->ids[i], sizeof g->ids[i], "dup-%u", (unsigned)i & 0xffu);
        uint32_t mask = uniform ? mask_all : 1 + rnd((1u << nt) - 1);
        kc_assign_member_t *m = &g->m[i];
        m->member_id = g->ids[i];
        m->instance_id = rnd(3) == 0 ? g->ids[i] + 2 : NULL;
        m->topics = g->topics[i];
        m->generation = -1;
        for (size_t t = 0; t < nt; t++)
            if (mask & (1u << t))
                g->topics[i][m->n_topics++] = TOPIC_NAMES[t];
    }
    g->in = (kc_assign_input_t){g->m, nm, g->t, nt};
}

/* Random ownership without conflicts: each partition owned by at most one subscriber. */
static void own_randomly(group_t *g, int32_t gen)
{
    for (size_t t = 0; t < g->in.n_topics; t++)
        for (int32_t p = 0; p < g->t[t].n_partitions; p++) {
            if (rnd(3) == 0)
                continue;
            size_t i = rnd((uint32_t)g->in.n_members);
            kc_assign_member_t *m = &g->m[i];
            bool subscribed = false;
            for (size_t k = 0; k < m->n_topics; k++)
                subscribed |= strcmp(m->topics[k], g->t[t].name) == 0;
            if (subscribed)
                g->owned[i][m->n_owned++] = (kc_assign_tp_t){g->t[t].name, p};
        }
    for (size_t i = 0; i < g->in.n_members; i++) {
        g->m[i].owned = g->owned[i];
        g->m[i].generation = gen;
        g->m[i].has_user_data = true;
        g->m[i].prev = g->owned[i];
        g->m[i].n_prev = g->m[i].n_owned;
        g->m[i].prev_has_generation = true;
        g->m[i].prev_generation = gen;
    }
}

static bool subscribes(const kc_assign_member_t *m, const char *topic)
{
    for (size_t k = 0; k < m->n_topics; k++)
        if (strcmp(m->topics[k], topic) == 0)
            return true;
    return false;
}

static int owner_count(const kc_assign_result_t *r, const char *topic, int32_t p, size_t *who)
{
    int n = 0;
    for (size_t i = 0; i < r->n_members; i++)
        for (size_t k = 0; k < r->members[i].n; k++)
            if (strcmp(r->members[i].tps[k].topic, topic) == 0 &&
                r->members[i].tps[k].partition == p) {
                n++;
                *who = i;
            }
    return n;
}

/* Every partition of a subscribed topic exactly once, to a subscriber; nothing else. */
static void check_complete(const group_t *g, const kc_assign_result_t *r)
{
    size_t assigned = 0, expected = 0;
    for (size_t t = 0; t < g->in.n_topics; t++) {
        bool any = false;
        for (size_t i = 0; i < g->in.n_members; i++)
            any |= subscribes(&g->m[i], g->t[t].name);
        for (int32_t p = 0; p < g->t[t].n_partitions; p++) {
            size_t who = 0;
            int n = owner_count(r, g->t[t].name, p, &who);
            assert_int_equal(n, any ? 1 : 0);
            if (n)
                assert_true(subscribes(&g->m[who], g->t[t].name));
            expected += any;
        }
    }
    for (size_t i = 0; i < r->n_members; i++) {
        assigned += r->members[i].n;
        for (size_t k = 1; k < r->members[i].n; k++) { /* sorted by topic, then partition */
            const kc_assign_tp_t *a = &r->members[i].tps[k - 1], *b = &r->members[i].tps[k];
            int c = strcmp(a->topic, b->topic);
            assert_true(c < 0 || (c == 0 && a->partition < b->partition));
        }
    }
    assert_int_equal(assigned, expected);
}

static void check_totals_within_one(const kc_assign_result_t *r)
{
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t i = 0; i < r->n_members; i++) {
        lo = r->members[i].n < lo ? r->members[i].n : lo;
        hi = r->members[i].n > hi ? r->members[i].n : hi;
    }
    assert_true(hi <= lo + 1);
}

static void run(kc_assignor_t a, const group_t *g, kc_assign_result_t *r)
{
    kc_error_t err;
    kc_err_t rc = kc_assign_run(a, &g->in, r, &err);
    if (rc != KC_OK)
        fail_msg("%s: %s", kc_assignor_name(a), err.msg);
    assert_int_equal(r->n_members, g->in.n_members);
}

static void eager_assignors_cover_every_partition_once(void **state)
{
    (void)state;
    rng_state = 0x9e3779b97f4a7c15ull;
    for (int iter = 0; iter < 400; iter++) {
        group_t g;
        make_group(&g, iter % 2 == 0);
        if (iter % 3 == 0)
            own_randomly(&g, 1 + (int32_t)rnd(5));
        if (iter % 4 == 1)
            add_racks(&g);
        const kc_assignor_t eager[] = {KC_ASSIGNOR_RANGE, KC_ASSIGNOR_ROUNDROBIN,
                                       KC_ASSIGNOR_STICKY};
        for (size_t k = 0; k < 3; k++) {
            kc_assign_result_t r;
            run(eager[k], &g, &r);
            check_complete(&g, &r);
            kc_assign_result_free(&r);
        }
    }
}

static void range_balances_each_topic(void **state)
{
    (void)state;
    rng_state = 12345;
    for (int iter = 0; iter < 300; iter++) {
        group_t g;
        make_group(&g, false);
        if (iter % 2)
            add_racks(&g); /* rack matching keeps Java's per-topic quotas */
        kc_assign_result_t r;
        run(KC_ASSIGNOR_RANGE, &g, &r);
        for (size_t t = 0; t < g.in.n_topics; t++) {
            size_t lo = SIZE_MAX, hi = 0;
            for (size_t i = 0; i < g.in.n_members; i++) {
                if (!subscribes(&g.m[i], g.t[t].name))
                    continue;
                size_t n = 0;
                for (size_t k = 0; k < r.members[i].n; k++)
                    n += strcmp(r.members[i].tps[k].topic, g.t[t].name) == 0;
                lo = n < lo ? n : lo;
                hi = n > hi ? n : hi;
            }
            if (hi)
                assert_true(hi <= lo + 1);
        }
        kc_assign_result_free(&r);
    }
}

static void identical_subscriptions_balance_within_one(void **state)
{
    (void)state;
    rng_state = 777;
    for (int iter = 0; iter < 300; iter++) {
        group_t g;
        make_group(&g, true);
        if (iter % 2)
            own_randomly(&g, 3);
        if (iter % 3 == 0)
            add_racks(&g);
        const kc_assignor_t as[] = {KC_ASSIGNOR_ROUNDROBIN, KC_ASSIGNOR_STICKY};
        for (size_t k = 0; k < 2; k++) {
            kc_assign_result_t r;
            run(as[k], &g, &r);
            check_totals_within_one(&r);
            kc_assign_result_free(&r);
        }
    }
}

/* Round one withholds every moving partition; round two, fed round one's result as ownership,
 * completes the assignment. No partition ever goes to a member while another one owns it. */
static void cooperative_never_double_assigns(void **state)
{
    (void)state;
    rng_state = 4242;
    int withheld_total = 0;
    for (int iter = 0; iter < 300; iter++) {
        group_t g;
        make_group(&g, iter % 2 == 0);
        own_randomly(&g, 2);
        kc_assign_result_t r1;
        run(KC_ASSIGNOR_COOPERATIVE_STICKY, &g, &r1);
        for (size_t i = 0; i < r1.n_members; i++)
            for (size_t k = 0; k < r1.members[i].n; k++)
                for (size_t j = 0; j < g.in.n_members; j++) {
                    if (j == i)
                        continue;
                    for (size_t o = 0; o < g.m[j].n_owned; o++)
                        if (strcmp(g.m[j].owned[o].topic, r1.members[i].tps[k].topic) == 0 &&
                            g.m[j].owned[o].partition == r1.members[i].tps[k].partition)
                            fail_msg("%s:%d assigned to %s while %s owns it",
                                     r1.members[i].tps[k].topic,
                                     (int)r1.members[i].tps[k].partition, g.m[i].member_id,
                                     g.m[j].member_id);
                }
        /* members revoke what they lost, keep what they were given */
        for (size_t i = 0; i < g.in.n_members; i++) {
            memcpy(g.owned[i], r1.members[i].tps, r1.members[i].n * sizeof(kc_assign_tp_t));
            g.m[i].n_owned = r1.members[i].n;
            g.m[i].generation = 3;
        }
        if (iter % 2 == 0) { /* identical subscriptions: Java converges in the second round */
            kc_assign_result_t r2;
            run(KC_ASSIGNOR_COOPERATIVE_STICKY, &g, &r2);
            check_complete(&g, &r2);
            size_t total = 0;
            for (size_t i = 0; i < r1.n_members; i++)
                total += r1.members[i].n;
            size_t total2 = 0;
            for (size_t i = 0; i < r2.n_members; i++)
                total2 += r2.members[i].n;
            withheld_total += (int)(total2 - total);
            kc_assign_result_free(&r2);
        }
        kc_assign_result_free(&r1);
    }
    assert_true(withheld_total > 0); /* the property above was exercised, not vacuous */
}

/* RangeAssignor's javadoc example, and static members ordered by instance id before others. */
static void range_known_answers(void **state)
{
    (void)state;
    const char *both[] = {"t0", "t1"};
    kc_assign_member_t m[2] = {
        {.member_id = "C1", .topics = both, .n_topics = 2, .generation = -1},
        {.member_id = "C0", .topics = both, .n_topics = 2, .generation = -1},
    };
    kc_assign_topic_t t[2] = {{"t1", 3}, {"t0", 3}};
    kc_assign_input_t in = {m, 2, t, 2};
    kc_assign_result_t r;
    assert_int_equal(kc_assign_range(&in, &r, NULL), KC_OK);
    assert_int_equal(r.members[1].n, 4); /* C0: t0p0, t0p1, t1p0, t1p1 */
    assert_string_equal(r.members[1].tps[0].topic, "t0");
    assert_int_equal(r.members[1].tps[1].partition, 1);
    assert_string_equal(r.members[1].tps[3].topic, "t1");
    assert_int_equal(r.members[0].n, 2); /* C1: t0p2, t1p2 */
    assert_int_equal(r.members[0].tps[0].partition, 2);
    kc_assign_result_free(&r);

    m[0].instance_id = "zzz"; /* static C1 now sorts first despite its member id */
    assert_int_equal(kc_assign_range(&in, &r, NULL), KC_OK);
    assert_int_equal(r.members[0].n, 4);
    assert_int_equal(r.members[1].n, 2);
    kc_assign_result_free(&r);
}

static void empty_group_is_empty(void **state)
{
    (void)state;
    kc_assign_topic_t t[1] = {{"t0", 3}};
    kc_assign_input_t in = {NULL, 0, t, 1};
    for (int a = 0; a < 4; a++) {
        kc_assign_result_t r;
        assert_int_equal(kc_assign_run((kc_assignor_t)a, &in, &r, NULL), KC_OK);
        assert_int_equal(r.n_members, 0);
        kc_assign_result_free(&r);
    }
}

static void bad_input_is_an_error(void **state)
{
    (void)state;
    const char *t0[] = {"t0"};
    kc_assign_member_t m[2] = {{.member_id = "same", .topics = t0, .n_topics = 1},
                               {.member_id = "same", .topics = t0, .n_topics = 1}};
    kc_assign_topic_t t[1] = {{"t0", 3}};
    kc_assign_input_t in = {m, 2, t, 1};
    kc_assign_result_t r;
    kc_error_t err;
    for (int a = 0; a < 4; a++) {
        assert_int_equal(kc_assign_run((kc_assignor_t)a, &in, &r, &err), KC_ERR_INVALID_ARG);
        assert_null(r.members);
    }
    assert_int_equal(kc_assignor_from_name("cooperative-sticky"), KC_ASSIGNOR_COOPERATIVE_STICKY);
    assert_int_equal(kc_assignor_from_name("nope"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eager_assignors_cover_every_partition_once),
        cmocka_unit_test(range_balances_each_topic),
        cmocka_unit_test(identical_subscriptions_balance_within_one),
        cmocka_unit_test(cooperative_never_double_assigns),
        cmocka_unit_test(range_known_answers),
        cmocka_unit_test(empty_group_is_empty),
        cmocka_unit_test(bad_input_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
