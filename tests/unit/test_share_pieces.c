/* engine/share/pieces.h: acquired ranges cut along the answer's record batches. Every acquired
 * offset gets exactly one outcome (a piece, a GAP or a RELEASE), checked per case and by an
 * offset map over the span. */
#include "kc_test.h"

#include <string.h>

#include "batch_builder.h"
#include "share/pieces.h"

#define SPAN 64

typedef struct got {
    int outcome[SPAN]; /* 0 none, 1 piece, 2 GAP, 3 RELEASE; 9: two outcomes */
    int16_t count[SPAN];
    int pieces;
    int refuse_from; /* pieces starting at or after this are refused (-1: none) */
    const uint8_t *lo, *hi;
} got_t;

static void mark(got_t *g, int64_t a, int64_t b, int what)
{
    for (int64_t o = a; o <= b; o++) {
        assert_true(o >= 0 && o < SPAN);
        g->outcome[o] = g->outcome[o] ? 9 : what;
    }
}

static bool piece(void *o, const uint8_t *batch, size_t size, int64_t first, int64_t last,
                  int16_t count)
{
    got_t *g = o;
    assert_true(batch >= g->lo && batch + size <= g->hi);
    if (g->refuse_from >= 0 && first >= g->refuse_from)
        return false;
    mark(g, first, last, 1);
    for (int64_t x = first; x <= last; x++)
        g->count[x] = count;
    g->pieces++;
    return true;
}

static void ack(void *o, int64_t first, int64_t last, kc_share_ack_type_t type)
{
    mark(o, first, last, type == KC_SHARE_ACK_GAP ? 2 : type == KC_SHARE_ACK_RELEASE ? 3 : 8);
}

/* Appends a batch of n records from base (control: a control batch). */
static void batch(tb_buf_t *b, int64_t base, int n, bool control)
{
    tb_record_t recs[16];
    memset(recs, 0, sizeof recs);
    for (int i = 0; i < n; i++) {
        recs[i].off_delta = i;
        recs[i].value = "v";
        recs[i].value_len = 1;
    }
    tb_batch_t cfg = {.base_offset = base, .control = control};
    tb_batch(b, &cfg, recs, n);
}

static got_t *run(const tb_buf_t *b, size_t len, const kc_share_range_t *r, size_t n, int refuse)
{
    static got_t g;
    memset(&g, 0, sizeof g);
    g.refuse_from = refuse;
    g.lo = b->p;
    g.hi = b->p + len;
    kc_share_pieces_out_t out = {piece, ack, &g};
    kc_share_pieces((kc_bytes_t){b->p, (int32_t)len}, r, n, &out);
    /* exactly one outcome for each acquired offset, none for the others */
    for (int o = 0; o < SPAN; o++) {
        bool acquired = false;
        for (size_t k = 0; k < n; k++)
            acquired |= o >= r[k].first && o <= r[k].last;
        assert_true(acquired ? g.outcome[o] >= 1 && g.outcome[o] <= 3 : g.outcome[o] == 0);
    }
    return &g;
}

static void inside_one_batch(void **state)
{
    (void)state;
    tb_buf_t b = {0};
    batch(&b, 0, 10, false);
    const kc_share_range_t r[] = {{3, 5, 2}, {7, 7, 1}};
    got_t *g = run(&b, b.len, r, 2, -1);
    assert_int_equal(g->pieces, 2);
    assert_int_equal(g->outcome[4], 1);
    assert_int_equal(g->count[4], 2);
    assert_int_equal(g->count[7], 1);
    tb_free(&b);
}

static void gaps_between_and_after(void **state)
{
    (void)state;
    tb_buf_t b = {0};
    batch(&b, 0, 10, false);
    batch(&b, 20, 10, false);
    const kc_share_range_t r[] = {{0, 34, 1}};
    got_t *g = run(&b, b.len, r, 1, -1);
    assert_int_equal(g->pieces, 2);
    assert_int_equal(g->outcome[9], 1);
    assert_int_equal(g->outcome[15], 2);
    assert_int_equal(g->outcome[25], 1);
    assert_int_equal(g->outcome[32], 2);
    tb_free(&b);
}

static void control_batch_is_a_gap(void **state)
{
    (void)state;
    tb_buf_t b = {0};
    batch(&b, 0, 5, false);
    batch(&b, 5, 1, true);
    const kc_share_range_t r[] = {{0, 5, 1}};
    got_t *g = run(&b, b.len, r, 1, -1);
    assert_int_equal(g->pieces, 1);
    assert_int_equal(g->outcome[5], 2);
    tb_free(&b);
}

/* The answer cut at its size limit in the second batch: its offsets are released, not gaps. */
static void cut_short_is_released(void **state)
{
    (void)state;
    tb_buf_t b = {0};
    size_t first = (batch(&b, 0, 10, false), b.len);
    batch(&b, 10, 10, false);
    const kc_share_range_t r[] = {{0, 19, 1}};
    got_t *g = run(&b, first + 30, r, 1, -1);
    assert_int_equal(g->pieces, 1);
    assert_int_equal(g->outcome[12], 3);
    assert_int_equal(g->outcome[19], 3);
    tb_free(&b);
}

static void refused_piece_is_released(void **state)
{
    (void)state;
    tb_buf_t b = {0};
    batch(&b, 0, 10, false);
    const kc_share_range_t r[] = {{0, 2, 1}, {6, 8, 1}};
    got_t *g = run(&b, b.len, r, 2, 6);
    assert_int_equal(g->pieces, 1);
    assert_int_equal(g->outcome[1], 1);
    assert_int_equal(g->outcome[7], 3);
    tb_free(&b);
}

static void no_records_all_gaps(void **state)
{
    (void)state;
    tb_buf_t b = {0};
    tb_put(&b, "", 0);
    const kc_share_range_t r[] = {{3, 9, 1}};
    got_t *g = run(&b, 0, r, 1, -1);
    assert_int_equal(g->pieces, 0);
    assert_int_equal(g->outcome[3], 2);
    tb_free(&b);
}

int main(void)
{
    kc_test_filter();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inside_one_batch),          cmocka_unit_test(gaps_between_and_after),
        cmocka_unit_test(control_batch_is_a_gap),    cmocka_unit_test(cut_short_is_released),
        cmocka_unit_test(refused_piece_is_released), cmocka_unit_test(no_records_all_gaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
