/* engine/group/topics and tpset: a member's interned topics (one entry per key, the key's order
 * kept as ranks while topics arrive in any order) and the one partition set over them (sorted by
 * rank, so a set built before a topic arrived stays sorted after it). */
#include "kc_test.h"

#include <string.h>

#include "group/classic/assign/assign_int.h"
#include "group/tpset.h"

static void id_of(uint8_t id[16], uint8_t hi, uint8_t lo)
{
    memset(id, 0, 16);
    id[0] = hi;
    id[15] = lo;
}

static bool sorted(const kc_tpset_t *s)
{
    for (size_t i = 1; i < s->n; i++)
        if (kc_gtp_cmp(&s->items[i - 1], &s->items[i]) >= 0)
            return false;
    return true;
}

/* Ranks follow memcmp order of the ids, whatever order they were interned in. */
static void ids_interned_in_id_order(void **state)
{
    (void)state;
    kc_gtopics_t t;
    kc_gtopics_init_by_id(&t);
    const uint8_t order[] = {5, 1, 9, 3, 7, 0, 8};
    const kc_gtopic_t *e[10] = {0};
    uint8_t id[16];
    for (size_t i = 0; i < sizeof order; i++) {
        id_of(id, order[i], (uint8_t)(255 - order[i])); /* high byte decides the order */
        e[order[i]] = kc_gtopics_id(&t, id);
        assert_non_null(e[order[i]]);
        assert_null(e[order[i]]->name);
    }
    assert_int_equal(t.n, sizeof order);
    for (size_t i = 0; i < t.n; i++) {
        assert_int_equal(t.items[i]->rank, i);
        if (i)
            assert_true(memcmp(t.items[i - 1]->id, t.items[i]->id, 16) < 0);
    }
    /* The same key is the same entry; a lookup adds nothing. */
    id_of(id, 3, 252);
    assert_ptr_equal(kc_gtopics_id(&t, id), e[3]);
    assert_ptr_equal(kc_gtopics_find_id(&t, id), e[3]);
    id_of(id, 4, 0);
    assert_null(kc_gtopics_find_id(&t, id));
    assert_int_equal(t.n, sizeof order);
    /* An id-keyed table has no name keys. */
    assert_null(kc_gtopics_name(&t, "x", -1));
    assert_null(kc_gtopics_find_name(&t, "x"));
    kc_gtopics_free(&t);
}

/* Names come in a whole answer at a time: an entry that exists keeps its address and its
 * place (a set sorted before stays sorted), one named before keeps its first name, absent ones
 * are added in id order, and an id an answer names twice is added once. */
static void names_filled_in_from_an_answer(void **state)
{
    (void)state;
    kc_gtopics_t t;
    kc_gtopics_init_by_id(&t);
    uint8_t id[6][16];
    for (int i = 0; i < 6; i++)
        id_of(id[i], (uint8_t)(10 * i), 0);
    const kc_gtopic_t *e2 = kc_gtopics_id(&t, id[2]), *e4 = kc_gtopics_id(&t, id[4]);
    kc_tpset_t s = {0};
    assert_int_equal(kc_tpset_add(&s, e4, 0), KC_OK);
    assert_int_equal(kc_tpset_add(&s, e2, 1), KC_OK);
    const kc_gtopic_name_t first[] = {{id[4], "orders-and-more", 6}};
    assert_true(kc_gtopics_set_names(&t, first, 1));
    assert_string_equal(e4->name, "orders");
    const kc_gtopic_name_t answer[] = {{id[5], "e", 1}, {id[4], "other", 5}, {id[0], "a", 1},
                                       {id[2], "c", 1}, {id[3], "d", 1},     {id[0], "a-again", 7},
                                       {id[1], "b", 1}};
    assert_true(kc_gtopics_set_names(&t, answer, sizeof answer / sizeof answer[0]));
    assert_int_equal(t.n, 6);
    for (int i = 0; i < 6; i++) {
        const kc_gtopic_t *e = kc_gtopics_find_id(&t, id[i]);
        assert_non_null(e);
        assert_int_equal(e->rank, (size_t)i);
        assert_ptr_equal(t.items[i], e);
    }
    assert_ptr_equal(kc_gtopics_find_id(&t, id[2]), e2);
    assert_ptr_equal(kc_gtopics_find_id(&t, id[4]), e4);
    assert_string_equal(e4->name, "orders"); /* the first name stays */
    assert_string_equal(e2->name, "c");
    assert_string_equal(kc_gtopics_find_id(&t, id[0])->name, "a");
    assert_true(sorted(&s));
    assert_ptr_equal(s.items[0].topic, e2);
    assert_true(kc_gtopics_set_names(&t, NULL, 0));
    kc_tpset_free(&s);
    kc_gtopics_free(&t);
}

/* Name-keyed in Java's String order (UTF-16 units: a supplementary character's surrogates sort
 * below U+FF21); counted names are interned up to their length. */
static void names_in_the_given_order(void **state)
{
    (void)state;
    kc_gtopics_t t;
    kc_gtopics_init_by_name(&t, kc_jstr_cmp);
    const kc_gtopic_t *fw = kc_gtopics_name(&t, "\xef\xbc\xa1", -1);     /* U+FF21 */
    const kc_gtopic_t *cl = kc_gtopics_name(&t, "\xf0\x9d\x84\x9e", -1); /* U+1D11E */
    const kc_gtopic_t *ab = kc_gtopics_name(&t, "abcdef", 2);
    const kc_gtopic_t *b = kc_gtopics_name(&t, "b", -1);
    assert_true(fw && cl && ab && b);
    assert_string_equal(ab->name, "ab");
    assert_ptr_equal(kc_gtopics_name(&t, "ab", -1), ab);
    assert_ptr_equal(kc_gtopics_find_name(&t, "ab"), ab);
    assert_null(kc_gtopics_find_name(&t, "a"));
    assert_true(ab->rank < b->rank && b->rank < cl->rank && cl->rank < fw->rank);
    uint8_t id[16] = {0};
    assert_null(kc_gtopics_id(&t, id)); /* a name-keyed table has no id keys */
    const kc_gtopic_name_t x = {id, "x", 1};
    assert_false(kc_gtopics_set_names(&t, &x, 1));
    kc_gtopics_free(&t);
}

/* Sets built before a topic arrived between theirs stay sorted and keep answering, and every
 * operation keeps the order. */
static void sets_survive_topics_arriving(void **state)
{
    (void)state;
    kc_gtopics_t t;
    kc_gtopics_init_by_name(&t, strcmp);
    const kc_gtopic_t *c = kc_gtopics_name(&t, "c", -1), *a = kc_gtopics_name(&t, "a", -1);
    kc_tpset_t x = {0}, y = {0}, d = {0}, u = {0};
    assert_int_equal(kc_tpset_add(&x, c, 1), KC_OK);
    assert_int_equal(kc_tpset_add(&x, a, 2), KC_OK);
    assert_int_equal(kc_tpset_add(&x, c, 0), KC_OK);
    assert_int_equal(kc_tpset_add(&x, a, 2), KC_OK); /* once */
    assert_int_equal(x.n, 3);
    assert_true(sorted(&x));
    const kc_gtopic_t *b = kc_gtopics_name(&t, "b", -1); /* between: ranks of c move */
    assert_true(sorted(&x));
    assert_true(kc_tpset_contains(&x, c, 1) && kc_tpset_contains(&x, a, 2));
    assert_false(kc_tpset_contains(&x, b, 1));
    assert_false(kc_tpset_contains(&x, NULL, 1));
    assert_int_equal(kc_tpset_add(&x, b, 5), KC_OK);
    assert_true(sorted(&x));
    assert_ptr_equal(x.items[1].topic, b); /* a:2, b:5, c:0, c:1 */

    assert_int_equal(kc_tpset_add(&y, c, 0), KC_OK);
    assert_int_equal(kc_tpset_add(&y, a, 9), KC_OK);
    assert_int_equal(kc_tpset_diff(&d, &x, &y), KC_OK); /* a:2 b:5 c:1 */
    assert_int_equal(d.n, 3);
    assert_true(sorted(&d) && !kc_tpset_contains(&d, c, 0));
    assert_int_equal(kc_tpset_union(&u, &x, &y), KC_OK); /* a:2 a:9 b:5 c:0 c:1 */
    assert_int_equal(u.n, 5);
    assert_true(sorted(&u));
    kc_tpset_subtract(&u, &d); /* a:9 c:0 */
    assert_int_equal(u.n, 2);
    assert_true(kc_tpset_contains(&u, a, 9) && kc_tpset_contains(&u, c, 0));
    assert_true(kc_tpset_equal(&u, &y));
    kc_tpset_intersect(&x, &y); /* c:0 */
    assert_int_equal(x.n, 1);
    assert_true(kc_tpset_contains(&x, c, 0));
    assert_false(kc_tpset_equal(&x, &y));
    assert_int_equal(kc_tpset_copy(&d, &y), KC_OK);
    assert_true(kc_tpset_equal(&d, &y));
    kc_tpset_free(&x);
    kc_tpset_free(&y);
    kc_tpset_free(&d);
    kc_tpset_free(&u);
    kc_gtopics_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids_interned_in_id_order),
        cmocka_unit_test(names_filled_in_from_an_answer),
        cmocka_unit_test(names_in_the_given_order),
        cmocka_unit_test(sets_survive_topics_arriving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
