/* engine/share/spans.h: the sorted, disjoint offset runs under held.h and acks.h. Each way a cut
 * meets an element (trim on the left, on the right, removal, a split with and without a free
 * slot), insertion in order, and the search. */
#include "kc_test.h"

#include <stdlib.h>
#include <string.h>

#include "share/spans.h"

typedef struct elem {
    kc_share_span_t span;
    int tag;
} elem_t;

#define E sizeof(elem_t)

static void fill(elem_t *a, size_t *n, const int64_t (*r)[2], size_t k)
{
    *n = 0;
    for (size_t i = 0; i < k; i++) {
        elem_t x = {{r[i][0], r[i][1]}, (int)i};
        kc_share_span_insert(a, n, E, *n, &x);
    }
}

static void search_finds_first_reaching(void **state)
{
    (void)state;
    elem_t a[4];
    size_t n;
    fill(a, &n, (const int64_t[][2]){{0, 4}, {10, 14}, {20, 20}}, 3);
    assert_int_equal(kc_share_span_lower_bound(a, n, E, 0), 0);
    assert_int_equal(kc_share_span_lower_bound(a, n, E, 4), 0);
    assert_int_equal(kc_share_span_lower_bound(a, n, E, 5), 1); /* in a hole: the next one */
    assert_int_equal(kc_share_span_lower_bound(a, n, E, 14), 1);
    assert_int_equal(kc_share_span_lower_bound(a, n, E, 20), 2);
    assert_int_equal(kc_share_span_lower_bound(a, n, E, 21), 3);
    assert_int_equal(kc_share_span_lower_bound(a, 0, E, 0), 0);
}

static void cuts(void **state)
{
    (void)state;
    elem_t a[4];
    size_t n, next;
    /* the left end stays */
    fill(a, &n, (const int64_t[][2]){{0, 9}, {20, 29}}, 2);
    assert_int_equal(kc_share_span_cut(a, &n, 4, E, 0, 5, 25, &next), 5);
    assert_int_equal(n, 2);
    assert_int_equal(a[0].span.last, 4);
    assert_int_equal(next, 1);
    /* the right end stays; nothing past it can overlap */
    assert_int_equal(kc_share_span_cut(a, &n, 4, E, 1, 5, 25, &next), 6);
    assert_int_equal(a[1].span.first, 26);
    assert_int_equal(a[1].tag, 1);
    assert_int_equal(next, n);
    /* covered: removed, the next one moves into its place */
    fill(a, &n, (const int64_t[][2]){{0, 9}, {20, 29}}, 2);
    assert_int_equal(kc_share_span_cut(a, &n, 4, E, 0, 0, 15, &next), 10);
    assert_int_equal(n, 1);
    assert_int_equal(next, 0);
    assert_int_equal(a[0].span.first, 20);
    /* reaching past both ends, with a free slot: split, the payload copied */
    fill(a, &n, (const int64_t[][2]){{0, 9}, {20, 29}}, 2);
    assert_int_equal(kc_share_span_cut(a, &n, 4, E, 0, 3, 5, &next), 3);
    assert_int_equal(n, 3);
    assert_int_equal(next, n);
    assert_int_equal(a[0].span.first, 0);
    assert_int_equal(a[0].span.last, 2);
    assert_int_equal(a[1].span.first, 6);
    assert_int_equal(a[1].span.last, 9);
    assert_int_equal(a[1].tag, 0);
    assert_int_equal(a[2].span.first, 20);
    /* without one: the part past the cut goes too, and is counted */
    assert_int_equal(kc_share_span_cut(a, &n, 3, E, 2, 22, 23, &next), 8);
    assert_int_equal(n, 3);
    assert_int_equal(a[2].span.last, 21);
}

static void room_grows_and_keeps(void **state)
{
    (void)state;
    size_t cap = 0, n = 0;
    elem_t *a = kc_share_span_room(NULL, &cap, n, 1, E, 2);
    assert_non_null(a);
    assert_int_equal(cap, 2);
    for (int i = 0; i < 9; i++) {
        elem_t *p = kc_share_span_room(a, &cap, n, 1, E, 2);
        assert_non_null(p);
        a = p;
        elem_t x = {{i * 10, i * 10 + 1}, i};
        kc_share_span_insert(a, &n, E, n, &x);
    }
    assert_int_equal(cap, 16);
    assert_true(kc_share_span_room(a, &cap, n, 7, E, 2) == a); /* room already */
    for (size_t i = 0; i < n; i++)
        assert_int_equal(a[i].tag, (int)i);
    kc_share_span_remove(a, &n, E, 0);
    assert_int_equal(a[0].tag, 1);
    assert_int_equal(n, 8);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(search_finds_first_reaching),
        cmocka_unit_test(cuts),
        cmocka_unit_test(room_grows_and_keeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
