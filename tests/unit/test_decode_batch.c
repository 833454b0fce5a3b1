/* kc-test-label: threads */
/* The io/batch decoder plugged into the dispatcher: real v2 batches (plain and zstd), CRC
 * checked on the worker, a corrupt batch skipped and reported, LogAppendTime and the leader epoch
 * per view. The same batches as one span (one ring entry, as the engine hands a partition's
 * batches of one response): each batch delivered in turn, the corrupt one alone skipped, a start
 * inside the span honoured, and a pause at the end of a middle batch keeping the rest of the span
 * for the resume while the delivered batch's bytes leave the partition's count. */
#include <stdio.h>

#include "batch_builder.h"
#include "rt_harness.h"

static harness_t *H;
static int32_t epoch; /* the next batch's partitionLeaderEpoch */

static kc_rt_bref_t make(int64_t base, int n, int codec, bool log_append, bool corrupt)
{
    tb_record_t recs[8];
    char vals[8][3];
    for (int i = 0; i < n; i++) {
        vals[i][0] = 'v';
        vals[i][1] = (char)('0' + i);
        recs[i] = (tb_record_t){.off_delta = i,
                                .ts_delta = i,
                                .key = "k",
                                .key_len = 1,
                                .value = vals[i],
                                .value_len = 2};
    }
    tb_buf_t out = {0};
    tb_batch_t cfg = {.base_offset = base,
                      .codec = codec,
                      .log_append = log_append,
                      .base_ts = 1000,
                      .max_ts = 2000,
                      .leader_epoch = epoch};
    size_t len = tb_batch(&out, &cfg, recs, n);
    if (corrupt)
        out.p[len - 1] ^= 0x55; /* last record byte: the CRC no longer matches */
    kc_buf_t *buf = kc_buf_new(len);
    memcpy(buf->data, out.p, len);
    buf->len = len;
    tb_free(&out);
    kc_rt_bref_t b = {.base_offset = base, .last_offset = base + n - 1};
    b.raw.buf = buf;
    b.raw.ptr = buf->data;
    b.raw.len = len;
    return b;
}

/* Also the frame freed: the entry is released after its last batch's offsets are committable. */
static bool settled(harness_t *h)
{
    return kc_rt_part_committable(h->p[0]) == 15 && atomic_load(&h->events) >= 1 &&
           kc_rt_frame_bytes(h->rt) == 0;
}

/* Batches b[0..n) as one span: one buffer holding them all, one reference. */
static kc_rt_bref_t span_of(kc_rt_bref_t *b, int n)
{
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += b[i].raw.len;
    kc_buf_t *buf = kc_buf_new(len);
    buf->len = 0;
    for (int i = 0; i < n; i++) {
        memcpy(buf->data + buf->len, b[i].raw.ptr, b[i].raw.len);
        buf->len += b[i].raw.len;
        kc_slice_release(&b[i].raw);
    }
    kc_rt_bref_t s = {.base_offset = b[0].base_offset, .last_offset = b[n - 1].last_offset};
    s.raw.buf = buf;
    s.raw.ptr = buf->data;
    s.raw.len = len;
    s.span = true;
    return s;
}

static harness_t *start_real(unsigned workers)
{
    harness_t *h = calloc(1, sizeof *h);
    static kc_rt_batch_decoder_conf_t dconf = {.check_crcs = true};
    kc_rt_opts_t o = h_opts(h, workers);
    o.decoder = kc_rt_batch_decoder(&dconf);
    h_start(h, &o, 1);
    return h;
}

static void stop(harness_t *h)
{
    kc_rt_shutdown(h->rt, false, 5000);
    kc_rt_free(h->rt);
    free(h);
}

/* Plain, LogAppendTime zstd, corrupt, and lz4 batches of 5, 5, 3 and 2 records; the first two
 * carry leader epoch 4, the last none. */
static void make_four(kc_rt_bref_t b[4])
{
    epoch = 4;
    b[0] = make(0, 5, 0, false, false);
    b[1] = make(5, 5, 4, true, false);
    b[2] = make(10, 3, 0, false, true);
    epoch = -1;
    b[3] = make(13, 2, 3, false, false);
}

/* What make_four's batches come to, however they were queued. */
static void check_four(void)
{
    assert_true(h_wait(H, settled, 5000));
    assert_int_equal(atomic_load(&H->hp[0].records), 12); /* 5 + 5 + (3 skipped) + 2 */
    assert_int_equal(atomic_load(&H->hp[0].batches), 3);  /* one view per good batch */
    assert_int_equal(atomic_load(&H->hp[0].value_bytes), 24);
    assert_int_equal(H->error_cmpl, 1);
    assert_int_equal(atomic_load(&H->events), 1);
    assert_int_equal(atomic_load(&H->violations), 1); /* the one gap, 10..12, that was skipped */
    assert_int_equal(atomic_load(&H->hp[0].ts_type), 0);
    assert_int_equal(atomic_load(&H->hp[0].leader_epoch), -1); /* a batch that carries none */
}

static void real_batches_through_the_dispatcher(void **state)
{
    (void)state;
    H = start_real(2);
    kc_rt_bref_t b[4];
    make_four(b);
    for (int i = 0; i < 4; i++)
        assert_int_equal(kc_rt_part_push(H->p[0], &b[i]), KC_OK);
    check_four();
    stop(H);
}

static bool got5(harness_t *h)
{
    return atomic_load(&h->hp[0].records) >= 5;
}

static void log_append_time_per_view(void **state)
{
    (void)state;
    H = calloc(1, sizeof *H);
    kc_rt_batch_decoder_conf_t dconf = {.check_crcs = false};
    kc_rt_opts_t o = h_opts(H, 1);
    o.decoder = kc_rt_batch_decoder(&dconf);
    h_start(H, &o, 1);
    epoch = 7;
    kc_rt_bref_t b = make(0, 5, 1, true, false); /* gzip, LogAppendTime, leader epoch 7 */
    assert_int_equal(kc_rt_part_push(H->p[0], &b), KC_OK);
    assert_true(h_wait(H, got5, 5000));
    assert_int_equal(atomic_load(&H->hp[0].ts_type), 1);
    assert_int_equal(atomic_load(&H->hp[0].leader_epoch), 7);
    assert_int_equal(kc_rt_part_committable(H->p[0]), 5);
    stop(H);
}

static void span_delivers_each_batch(void **state)
{
    (void)state;
    H = start_real(2);
    kc_rt_bref_t b[4];
    make_four(b);
    kc_rt_bref_t s = span_of(b, 4);
    assert_int_equal(kc_rt_part_push(H->p[0], &s), KC_OK);
    check_four(); /* the span released too: settled waits for its frame's free */
    stop(H);
}

/* Plain batches 0..4, 5..9 and 10..11 as one span; *first: the first batch's bytes. */
static kc_rt_bref_t plain_span(size_t *first)
{
    kc_rt_bref_t b[3] = {make(0, 5, 0, false, false), make(5, 5, 0, false, false),
                         make(10, 2, 0, false, false)};
    if (first)
        *first = b[0].raw.len;
    return span_of(b, 3);
}

/* Delivered up to 12, and the entry released (after its last batch's offsets are committable). */
static bool got_to_12(harness_t *h)
{
    return kc_rt_part_committable(h->p[0]) == 12 && kc_rt_frame_bytes(h->rt) == 0;
}

static void span_from_inside(void **state)
{
    (void)state;
    H = start_real(1);
    kc_rt_bref_t s = plain_span(NULL);
    s.base_offset = 7; /* the position after a seek into the second batch */
    H->hp[0].expect = 7;
    assert_int_equal(kc_rt_part_push(H->p[0], &s), KC_OK);
    assert_true(h_wait(H, got_to_12, 5000));
    assert_int_equal(atomic_load(&H->hp[0].records), 5); /* 7, 8, 9, 10, 11 */
    assert_int_equal(atomic_load(&H->violations), 0);
    stop(H);
}

static bool paused_once(harness_t *h)
{
    return h->paused_cmpl == 1;
}

/* What the partition's count must come down to once the paused batch's bytes are given back. */
static int64_t rest_bytes;

static bool rest_counted(harness_t *h)
{
    return atomic_load(&h->p[0]->buffered) == rest_bytes;
}

static void span_pause_keeps_the_rest(void **state)
{
    (void)state;
    H = start_real(1);
    size_t first;
    kc_rt_bref_t s = plain_span(&first);
    rest_bytes = (int64_t)(s.raw.len - first);
    atomic_store(&H->hp[0].script, KC_CB_PAUSE + 1); /* the first batch's view pauses */
    assert_int_equal(kc_rt_part_push(H->p[0], &s), KC_OK);
    assert_true(h_wait(H, paused_once, 5000));
    /* The delivered batch's bytes leave the counts (so fetching may resume), the rest not: the
     * worker gives them back after the pause is posted. */
    assert_true(h_wait(H, rest_counted, 5000));
    usleep(50000); /* a chance for a (wrong) delivery of the rest */
    assert_int_equal(atomic_load(&H->hp[0].records), 5);
    assert_int_equal(kc_rt_part_committable(H->p[0]), 5);
    assert_true(kc_rt_frame_bytes(H->rt) > 0); /* the span, kept for the resume */
    assert_int_equal(atomic_load(&H->p[0]->buffered), rest_bytes);
    assert_int_equal(kc_rt_buffered_bytes(H->rt), rest_bytes);
    kc_rt_part_resume(H->p[0]);
    assert_true(h_wait(H, got_to_12, 5000));
    assert_int_equal(atomic_load(&H->hp[0].records), 12);
    assert_int_equal(atomic_load(&H->violations), 0);
    assert_int_equal(atomic_load(&H->p[0]->buffered), 0);
    assert_int_equal(kc_rt_buffered_bytes(H->rt), 0);
    stop(H);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(real_batches_through_the_dispatcher),
        cmocka_unit_test(log_append_time_per_view),
        cmocka_unit_test(span_delivers_each_batch),
        cmocka_unit_test(span_from_inside),
        cmocka_unit_test(span_pause_keeps_the_rest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
