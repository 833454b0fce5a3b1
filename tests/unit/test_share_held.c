/* engine/share/held.h: records handed out and awaiting verdicts, each hold with its delivery
 * count and lock deadline. Cases for each outcome, then a random walk checked against a model
 * that keeps one delivery count per offset. */
#include "kc_test.h"

#include <stdlib.h>
#include <string.h>

#include "share/held.h"

static void live_verdicts_take_their_records(void **state)
{
    (void)state;
    kc_share_held_t h = {0};
    kc_error_t e;
    int16_t now_count;
    assert_int_equal(kc_share_held_add(&h, 0, 9, 1, 100, &e), KC_OK);
    assert_int_equal(h.records, 10);
    assert_true(kc_share_held_has(&h, 0, 1));
    assert_true(kc_share_held_has(&h, 9, 1));
    assert_false(kc_share_held_has(&h, 9, 2));
    assert_false(kc_share_held_has(&h, 10, 1));
    /* views of one piece, judged in any order, each before the lock runs out */
    assert_int_equal(kc_share_held_take(&h, 3, 5, 1, 50, &now_count), KC_SHARE_HELD_LIVE);
    assert_int_equal(h.n, 2); /* split: 0..2 and 6..9 */
    assert_false(kc_share_held_has(&h, 4, 1));
    assert_int_equal(h.items[0].span.last, 2);
    assert_int_equal(h.items[1].span.first, 6);
    assert_int_equal(h.records, 7);
    assert_int_equal(kc_share_held_take(&h, 6, 9, 1, 99, &now_count), KC_SHARE_HELD_LIVE);
    assert_int_equal(kc_share_held_take(&h, 0, 2, 1, 99, &now_count), KC_SHARE_HELD_LIVE);
    assert_int_equal(h.n, 0);
    assert_int_equal(h.records, 0);
    kc_share_held_free(&h);
}

static void verdict_after_the_lock_is_refused(void **state)
{
    (void)state;
    kc_share_held_t h = {0};
    kc_error_t e;
    int16_t now_count;
    assert_int_equal(kc_share_held_add(&h, 0, 9, 1, 100, &e), KC_OK);
    assert_int_equal(kc_share_held_take(&h, 0, 4, 1, 100, &now_count), KC_SHARE_HELD_EXPIRED);
    assert_int_equal(h.records, 5); /* held no more all the same */
    assert_int_equal(kc_share_held_take(&h, 5, 9, 1, 101, &now_count), KC_SHARE_HELD_EXPIRED);
    assert_int_equal(h.n, 0);
    /* no deadline known (a broker that does not say): never expired */
    assert_int_equal(kc_share_held_add(&h, 0, 0, 1, KC_SHARE_NO_DEADLINE, &e), KC_OK);
    assert_int_equal(kc_share_held_take(&h, 0, 0, 1, INT64_MAX - 1, &now_count),
                     KC_SHARE_HELD_LIVE);
    kc_share_held_free(&h);
}

/* The lock ran out while the callback ran and the broker handed the records to this member
 * again: the old delivery's verdict is refused whether it comes before the new one's or after
 * (then nothing holds them: the broker would take it as the new delivery's, or ignore it). */
static void redelivered_records_refuse_the_old_verdict(void **state)
{
    (void)state;
    kc_share_held_t h = {0};
    kc_error_t e;
    int16_t now_count;
    assert_int_equal(kc_share_held_add(&h, 0, 9, 1, 100, &e), KC_OK);
    assert_int_equal(kc_share_held_add(&h, 0, 9, 2, 200, &e), KC_OK); /* replaces delivery 1 */
    assert_int_equal(h.n, 1);
    assert_int_equal(h.records, 10);
    assert_int_equal(kc_share_held_take(&h, 0, 9, 1, 50, &now_count), KC_SHARE_HELD_AGAIN);
    assert_int_equal(now_count, 2);
    assert_int_equal(h.records, 10); /* delivery 2 still holds them */
    assert_int_equal(kc_share_held_take(&h, 0, 9, 2, 150, &now_count), KC_SHARE_HELD_LIVE);

    /* the new delivery judged first */
    assert_int_equal(kc_share_held_add(&h, 20, 29, 1, 100, &e), KC_OK);
    assert_int_equal(kc_share_held_add(&h, 20, 29, 2, 200, &e), KC_OK);
    assert_int_equal(kc_share_held_take(&h, 20, 29, 2, 150, &now_count), KC_SHARE_HELD_LIVE);
    assert_int_equal(kc_share_held_take(&h, 20, 29, 1, 150, &now_count), KC_SHARE_HELD_AGAIN);
    assert_int_equal(now_count, 0);

    /* part of a view handed back (the rest went to another member): the verdict is refused
     * whole, and takes the part its delivery still held */
    assert_int_equal(kc_share_held_add(&h, 40, 49, 1, 100, &e), KC_OK);
    assert_int_equal(kc_share_held_add(&h, 45, 49, 2, 200, &e), KC_OK);
    assert_int_equal(kc_share_held_take(&h, 40, 49, 1, 150, &now_count), KC_SHARE_HELD_AGAIN);
    assert_int_equal(now_count, 2);
    assert_int_equal(h.n, 1);
    assert_int_equal(h.items[0].span.first, 45);
    assert_int_equal(h.records, 5);

    /* a new delivery inside an old one splits it */
    assert_int_equal(kc_share_held_add(&h, 60, 69, 1, 100, &e), KC_OK);
    assert_int_equal(kc_share_held_add(&h, 63, 65, 2, 200, &e), KC_OK);
    assert_int_equal(h.records, 15);
    assert_int_equal(h.n, 4);
    assert_int_equal(kc_share_held_take(&h, 60, 62, 1, 50, &now_count), KC_SHARE_HELD_LIVE);
    assert_int_equal(kc_share_held_take(&h, 66, 69, 1, 50, &now_count), KC_SHARE_HELD_LIVE);
    assert_int_equal(kc_share_held_take(&h, 63, 65, 1, 50, &now_count), KC_SHARE_HELD_AGAIN);
    kc_share_held_free(&h);
}

static void bad_ranges_refused(void **state)
{
    (void)state;
    kc_share_held_t h = {0};
    kc_error_t e;
    assert_int_equal(kc_share_held_add(&h, -1, 3, 1, 1, &e), KC_ERR_INVALID_ARG);
    assert_int_equal(kc_share_held_add(&h, 5, 4, 1, 1, &e), KC_ERR_INVALID_ARG);
    assert_int_equal(kc_share_held_add(&h, 0, INT64_MAX, 1, 1, &e), KC_ERR_INVALID_ARG);
    assert_int_equal(h.records, 0);
    kc_share_held_free(&h);
}

/* Random adds and takes over 96 offsets against a model of one delivery count (and deadline)
 * per offset: every outcome, the records count and the holds' order and disjointness agree (and
 * ASan sees a split that writes past the array). */
#define SPAN 96

static void random_walk_matches_model(void **state)
{
    (void)state;
    srand(7);
    for (int round = 0; round < 200; round++) {
        kc_share_held_t h = {0};
        int16_t count[SPAN] = {0};
        int64_t deadline[SPAN] = {0};
        kc_error_t e;
        for (int step = 0; step < 300; step++) {
            int64_t a = rand() % SPAN, b = a + rand() % 12;
            if (b >= SPAN)
                b = SPAN - 1;
            int16_t c = (int16_t)(1 + rand() % 3);
            if (rand() % 2) {
                int64_t dl = 50 + rand() % 100;
                assert_int_equal(kc_share_held_add(&h, a, b, c, dl, &e), KC_OK);
                for (int64_t o = a; o <= b; o++) {
                    count[o] = c;
                    deadline[o] = dl;
                }
            } else {
                int64_t now = rand() % 200;
                bool all = true, expired = false;
                for (int64_t o = a; o <= b; o++) {
                    all = all && count[o] == c;
                    expired = expired || (count[o] == c && now >= deadline[o]);
                }
                kc_share_held_verdict_t want = !all      ? KC_SHARE_HELD_AGAIN
                                               : expired ? KC_SHARE_HELD_EXPIRED
                                                         : KC_SHARE_HELD_LIVE;
                int16_t now_count;
                assert_int_equal(kc_share_held_take(&h, a, b, c, now, &now_count), want);
                for (int64_t o = a; o <= b; o++)
                    if (count[o] == c)
                        count[o] = 0;
            }
            int64_t records = 0;
            for (int o = 0; o < SPAN; o++)
                records += count[o] != 0;
            assert_int_equal(h.records, records);
            for (size_t i = 0; i < h.n; i++) {
                assert_true(h.items[i].span.first <= h.items[i].span.last);
                assert_true(i == 0 || h.items[i - 1].span.last < h.items[i].span.first);
                for (int64_t o = h.items[i].span.first; o <= h.items[i].span.last; o++) {
                    assert_int_equal(count[o], h.items[i].delivery_count);
                    assert_int_equal(deadline[o], h.items[i].deadline);
                }
            }
        }
        kc_share_held_free(&h);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(live_verdicts_take_their_records),
        cmocka_unit_test(verdict_after_the_lock_is_refused),
        cmocka_unit_test(redelivered_records_refuse_the_old_verdict),
        cmocka_unit_test(bad_ranges_refused),
        cmocka_unit_test(random_walk_matches_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
