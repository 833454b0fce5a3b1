/* engine/group/reconcile: the ordered steps revoke → commit → drop → assign → ack as pending state.
 */
#include "kc_test.h"

#include <string.h>

#include "group/reconcile.h"

/* Topic t has the id 0…0t, interned in one table for the whole binary (never freed: reachable
 * to the end, as the sets of a test point into it). */
static const kc_gtopic_t *topic(int t)
{
    static kc_gtopics_t names;
    uint8_t id[16] = {0};
    id[15] = (uint8_t)t;
    const kc_gtopic_t *g = kc_gtopics_id(&names, id);
    assert_non_null(g);
    return g;
}

/* set from "t:p" pairs, terminated by -1 */
static void mkset(kc_tpset_t *s, const int *tp)
{
    kc_tpset_clear(s);
    for (; tp[0] >= 0; tp += 2)
        assert_int_equal(kc_tpset_add(s, topic(tp[0]), tp[1]), KC_OK);
}

static bool has(const kc_tpset_t *s, int t, int p)
{
    return kc_tpset_contains(s, topic(t), p);
}

static kc_recon_action_t expect(kc_reconcile_t *r, int64_t now, kc_recon_act_kind_t kind, size_t n)
{
    kc_recon_action_t a = kc_reconcile_next_action(r, now);
    assert_int_equal(a.kind, kind);
    if (kind != KC_RECON_ACT_NONE)
        assert_int_equal(a.parts->n, n);
    return a;
}

static void tpset_ops(void **state)
{
    (void)state;
    kc_tpset_t a = {0}, b = {0}, d = {0}, u = {0};
    mkset(&a, (int[]){1, 2, 1, 0, 2, 5, 1, 0, -1});
    assert_int_equal(a.n, 3);                  /* dedup */
    assert_int_equal(a.items[0].partition, 0); /* sorted */
    mkset(&b, (int[]){1, 0, 3, 3, -1});
    assert_int_equal(kc_tpset_diff(&d, &a, &b), KC_OK);
    assert_int_equal(d.n, 2);
    assert_true(has(&d, 1, 2) && has(&d, 2, 5) && !has(&d, 1, 0));
    assert_int_equal(kc_tpset_union(&u, &a, &b), KC_OK);
    assert_int_equal(u.n, 4);
    kc_tpset_intersect(&u, &b);
    assert_int_equal(u.n, 2);
    assert_true(kc_tpset_equal(&u, &b));
    kc_tpset_free(&a), kc_tpset_free(&b), kc_tpset_free(&d), kc_tpset_free(&u);
}

/* First assignment: nothing to revoke, straight to ASSIGN, then ack. */
static void initial_assign(void **state)
{
    (void)state;
    kc_reconcile_t r;
    kc_reconcile_init(&r, true, 5000);
    kc_tpset_t t = {0};
    kc_error_t e;
    mkset(&t, (int[]){1, 0, 1, 1, -1});
    assert_int_equal(kc_reconcile_set_target(&r, &t, &e), KC_OK);
    assert_int_equal(r.owned.n, 0);
    kc_recon_action_t a = expect(&r, 0, KC_RECON_ACT_ASSIGN, 2);
    expect(&r, 0, KC_RECON_ACT_NONE, 0); /* waiting for on_assign */
    assert_false(r.ack_pending);
    assert_int_equal(r.owned.n, 0); /* not acknowledgeable before on_assign returned */
    assert_true(kc_reconcile_done(&r, a.seq, 1));
    assert_true(r.ack_pending);
    assert_int_equal(r.owned.n, 2);
    assert_true(kc_reconcile_idle(&r));
    kc_tpset_free(&t);
    kc_reconcile_free(&r);
}

/* The order: REVOKE, then COMMIT, then DROP, then ASSIGN; `owned` changes only at the end. */
static void revoke_order(void **state)
{
    (void)state;
    kc_reconcile_t r;
    kc_reconcile_init(&r, true, 5000);
    kc_tpset_t t = {0};
    kc_error_t e;
    mkset(&t, (int[]){1, 0, 1, 1, -1});
    kc_reconcile_set_target(&r, &t, &e);
    kc_reconcile_done(&r, kc_reconcile_next_action(&r, 0).seq, 0);
    kc_reconcile_ack_sent(&r);
    /* New target: lose 1:1, gain 2:0. */
    mkset(&t, (int[]){1, 0, 2, 0, -1});
    kc_reconcile_set_target(&r, &t, &e);
    kc_recon_action_t a = expect(&r, 10, KC_RECON_ACT_REVOKE, 1);
    assert_true(has(a.parts, 1, 1));
    expect(&r, 11, KC_RECON_ACT_NONE, 0);
    assert_false(kc_reconcile_done(&r, a.seq + 7, 11)); /* stale completion ignored */
    expect(&r, 11, KC_RECON_ACT_NONE, 0);
    assert_true(has(&r.owned, 1, 1)); /* still acknowledged as owned */
    assert_true(kc_reconcile_done(&r, a.seq, 12));
    assert_false(has(&r.held, 1, 1)); /* the application no longer holds it */
    assert_true(has(&r.owned, 1, 1)); /* but the ack has not changed yet */
    a = expect(&r, 12, KC_RECON_ACT_COMMIT, 1);
    assert_true(has(a.parts, 1, 1));
    assert_false(kc_reconcile_done(&r, a.seq, 12)); /* a commit completes via commit_result */
    kc_reconcile_commit_result(&r, a.seq, KC_RECON_COMMIT_OK, 13);
    a = expect(&r, 13, KC_RECON_ACT_DROP, 1);
    assert_false(r.ack_pending);
    kc_reconcile_done(&r, a.seq, 14);
    a = expect(&r, 14, KC_RECON_ACT_ASSIGN, 1);
    assert_true(has(a.parts, 2, 0));
    assert_false(r.ack_pending);
    kc_reconcile_done(&r, a.seq, 15);
    assert_true(r.ack_pending);
    assert_true(kc_tpset_equal(&r.owned, &t));
    kc_tpset_free(&t);
    kc_reconcile_free(&r);
}

/* Lost while a revoke's commit is out: the partitions whose on_revoke returned are no longer
 * held but still in the fetch sessions, so the loss drops them too (a LOSE for them finds
 * nothing held); the commit's late answer is stale. Also lost before the revoke-done arrived,
 * and at DROP before it was handed out. */
static void lose_after_revoke_drops_the_revoked(void **state)
{
    (void)state;
    for (int at = 0; at < 3; at++) { /* 0: at COMMIT, 1: before revoke-done, 2: before DROP */
        kc_reconcile_t r;
        kc_reconcile_init(&r, at != 2, 1000);
        kc_tpset_t t = {0};
        kc_error_t e;
        mkset(&t, (int[]){1, 0, 1, 1, 2, 0, -1});
        kc_reconcile_set_target(&r, &t, &e);
        kc_reconcile_done(&r, expect(&r, 0, KC_RECON_ACT_ASSIGN, 3).seq, 0);
        mkset(&t, (int[]){1, 0, -1}); /* 1:1 and 2:0 move away */
        kc_reconcile_set_target(&r, &t, &e);
        kc_recon_action_t rv = expect(&r, 10, KC_RECON_ACT_REVOKE, 2);
        kc_recon_action_t cm = {0};
        if (at != 1)
            kc_reconcile_done(&r, rv.seq, 20);
        if (at == 0)
            cm = expect(&r, 20, KC_RECON_ACT_COMMIT, 2);
        assert_int_equal(r.held.n, at == 1 ? 3 : 1);
        assert_int_equal(kc_reconcile_lose_all(&r, &e), KC_OK);
        kc_recon_action_t lo = expect(&r, 30, KC_RECON_ACT_LOSE, 3);
        assert_true(has(lo.parts, 1, 0) && has(lo.parts, 1, 1) && has(lo.parts, 2, 0));
        if (at == 0)
            assert_false(kc_reconcile_commit_result(&r, cm.seq, KC_RECON_COMMIT_OK, 31));
        assert_false(kc_reconcile_done(&r, rv.seq, 32)); /* the old revoke-done: stale */
        kc_reconcile_done(&r, lo.seq, 40);
        kc_recon_action_t d = expect(&r, 40, KC_RECON_ACT_DROP, 3);
        assert_true(has(d.parts, 1, 1) && has(d.parts, 2, 0));
        kc_reconcile_done(&r, d.seq, 41);
        assert_true(kc_reconcile_idle(&r));
        assert_int_equal(r.held.n, 0);
        assert_int_equal(r.owned.n, 0);
        kc_tpset_free(&t);
        kc_reconcile_free(&r);
    }
}

/* Commit retries while the deadline holds, then is abandoned; without auto-commit it is skipped. */
static void commit_deadline(void **state)
{
    (void)state;
    kc_reconcile_t r;
    kc_reconcile_init(&r, true, 100);
    kc_tpset_t t = {0};
    kc_error_t e;
    mkset(&t, (int[]){1, 0, -1});
    kc_reconcile_set_target(&r, &t, &e);
    kc_reconcile_done(&r, kc_reconcile_next_action(&r, 0).seq, 0);
    kc_tpset_clear(&t);
    kc_reconcile_set_target(&r, &t, &e);
    kc_reconcile_done(&r, expect(&r, 0, KC_RECON_ACT_REVOKE, 1).seq, 0);
    kc_recon_action_t a = expect(&r, 1000, KC_RECON_ACT_COMMIT, 1); /* deadline 1100 */
    assert_true(kc_reconcile_commit_result(&r, a.seq, KC_RECON_COMMIT_RETRY, 1050));
    a = expect(&r, 1060, KC_RECON_ACT_COMMIT, 1); /* handed out again, same deadline */
    kc_reconcile_tick(&r, 1099);
    expect(&r, 1099, KC_RECON_ACT_NONE, 0);
    kc_reconcile_tick(&r, 1100); /* no answer by the deadline: abandoned */
    kc_recon_action_t d = expect(&r, 1100, KC_RECON_ACT_DROP, 1);
    assert_false(kc_reconcile_commit_result(&r, a.seq, KC_RECON_COMMIT_OK, 1101)); /* late: stale */
    kc_reconcile_done(&r, d.seq, 1101);
    assert_true(kc_reconcile_idle(&r));
    assert_int_equal(r.owned.n, 0);
    kc_reconcile_free(&r);

    kc_reconcile_init(&r, false, 100); /* no auto-commit: REVOKE → DROP */
    mkset(&t, (int[]){1, 0, -1});
    kc_reconcile_set_target(&r, &t, &e);
    kc_reconcile_done(&r, kc_reconcile_next_action(&r, 0).seq, 0);
    kc_tpset_clear(&t);
    kc_reconcile_set_target(&r, &t, &e);
    kc_reconcile_done(&r, expect(&r, 0, KC_RECON_ACT_REVOKE, 1).seq, 0);
    expect(&r, 0, KC_RECON_ACT_DROP, 1);
    kc_tpset_free(&t);
    kc_reconcile_free(&r);
}

/* A new target mid-reconciliation waits for the current one (one at a time); its unissued
 * assignments that the new target dropped are trimmed. A reissued revoke runs on_revoke again. */
static void queued_target_and_reissue(void **state)
{
    (void)state;
    kc_reconcile_t r;
    kc_reconcile_init(&r, false, 100);
    kc_tpset_t t = {0};
    kc_error_t e;
    mkset(&t, (int[]){1, 0, 1, 1, -1});
    kc_reconcile_set_target(&r, &t, &e);
    kc_reconcile_done(&r, kc_reconcile_next_action(&r, 0).seq, 0);
    kc_reconcile_ack_sent(&r);
    mkset(&t, (int[]){1, 0, 2, 0, 2, 1, -1}); /* revoke 1:1, assign 2:0 2:1 */
    kc_reconcile_set_target(&r, &t, &e);
    kc_recon_action_t a = expect(&r, 0, KC_RECON_ACT_REVOKE, 1);
    mkset(&t, (int[]){1, 0, 2, 0, 3, 0, -1}); /* newer: 2:1 gone, 3:0 new */
    kc_reconcile_set_target(&r, &t, &e);
    assert_true(r.has_next);
    /* Interruption: the runtime lost track (e.g. close); the revoke is handed out again. */
    kc_reconcile_reissue(&r);
    kc_recon_action_t a2 = expect(&r, 1, KC_RECON_ACT_REVOKE, 1);
    assert_int_equal(r.revoke_issues, 2); /* at-least-once on_revoke: never skipped */
    assert_false(kc_reconcile_done(&r, a.seq, 1));
    assert_true(kc_reconcile_done(&r, a2.seq, 1));
    kc_reconcile_done(&r, expect(&r, 2, KC_RECON_ACT_DROP, 1).seq, 2);
    a = expect(&r, 3, KC_RECON_ACT_ASSIGN, 1); /* 2:1 trimmed */
    assert_true(has(a.parts, 2, 0) && !has(a.parts, 2, 1));
    kc_reconcile_done(&r, a.seq, 3);
    /* First finished; owned is an intermediate set and the queued target starts. */
    assert_true(r.ack_pending);
    assert_true(has(&r.owned, 2, 0) && !has(&r.owned, 3, 0));
    a = expect(&r, 4, KC_RECON_ACT_ASSIGN, 1);
    assert_true(has(a.parts, 3, 0));
    kc_reconcile_done(&r, a.seq, 4);
    assert_true(kc_tpset_equal(&r.owned, &t));
    kc_tpset_free(&t);
    kc_reconcile_free(&r);
}

/* Lost: on_lost for everything held (including a revoke or assign in flight), no commit. */
static void lose_all(void **state)
{
    (void)state;
    kc_reconcile_t r;
    kc_reconcile_init(&r, true, 100);
    kc_tpset_t t = {0};
    kc_error_t e;
    mkset(&t, (int[]){1, 0, 1, 1, -1});
    kc_reconcile_set_target(&r, &t, &e);
    kc_reconcile_done(&r, kc_reconcile_next_action(&r, 0).seq, 0);
    mkset(&t, (int[]){1, 0, 4, 4, -1});
    kc_reconcile_set_target(&r, &t, &e);
    kc_recon_action_t rv = expect(&r, 0, KC_RECON_ACT_REVOKE, 1);
    assert_int_equal(kc_reconcile_lose_all(&r, &e), KC_OK);
    kc_recon_action_t a = expect(&r, 1, KC_RECON_ACT_LOSE, 2); /* 1:1 still revoking: held */
    assert_false(kc_reconcile_done(&r, rv.seq, 1)); /* the old revoke's completion is stale */
    kc_reconcile_done(&r, a.seq, 2);
    a = expect(&r, 2, KC_RECON_ACT_DROP, 2); /* no COMMIT */
    kc_reconcile_done(&r, a.seq, 3);
    assert_true(kc_reconcile_idle(&r));
    assert_int_equal(r.owned.n, 0);
    assert_int_equal(r.held.n, 0);
    assert_false(r.ack_pending);
    kc_tpset_free(&t);
    kc_reconcile_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tpset_ops),
        cmocka_unit_test(initial_assign),
        cmocka_unit_test(revoke_order),
        cmocka_unit_test(commit_deadline),
        cmocka_unit_test(queued_target_and_reissue),
        cmocka_unit_test(lose_all),
        cmocka_unit_test(lose_after_revoke_drops_the_revoked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
