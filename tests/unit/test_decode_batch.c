/* kc-test-label: threads */
/* The io/batch decoder plugged into the dispatcher: real v2 batches (plain and zstd), CRC
 * checked on the worker, a corrupt batch skipped and reported, LogAppendTime and the leader epoch
 * per view. */
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

static bool settled(harness_t *h)
{
    return kc_rt_part_committable(h->p[0]) == 15 && atomic_load(&h->events) >= 1;
}

static void real_batches_through_the_dispatcher(void **state)
{
    (void)state;
    H = calloc(1, sizeof *H);
    kc_rt_batch_decoder_conf_t dconf = {.check_crcs = true};
    kc_rt_opts_t o = h_opts(H, 2);
    o.decoder = kc_rt_batch_decoder(&dconf);
    h_start(H, &o, 1);
    kc_rt_bref_t b[4];
    epoch = 4;
    b[0] = make(0, 5, 0, false, false);
    b[1] = make(5, 5, 4, true, false);
    b[2] = make(10, 3, 0, false, true);
    epoch = -1;
    b[3] = make(13, 2, 3, false, false);
    for (int i = 0; i < 4; i++)
        assert_int_equal(kc_rt_part_push(H->p[0], &b[i]), KC_OK);
    assert_true(h_wait(H, settled, 5000));
    assert_int_equal(atomic_load(&H->hp[0].records), 12); /* 5 + 5 + (3 skipped) + 2 */
    assert_int_equal(atomic_load(&H->hp[0].value_bytes), 24);
    assert_int_equal(H->error_cmpl, 1);
    assert_int_equal(atomic_load(&H->events), 1);
    assert_int_equal(atomic_load(&H->violations), 1); /* the one gap, 10..12, that was skipped */
    assert_int_equal(atomic_load(&H->hp[0].ts_type), 0);
    assert_int_equal(atomic_load(&H->hp[0].leader_epoch), -1); /* a batch that carries none */
    kc_rt_shutdown(H->rt, false, 5000);
    kc_rt_free(H->rt);
    free(H);
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
    kc_rt_shutdown(H->rt, false, 5000);
    kc_rt_free(H->rt);
    free(H);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(real_batches_through_the_dispatcher),
        cmocka_unit_test(log_append_time_per_view),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
