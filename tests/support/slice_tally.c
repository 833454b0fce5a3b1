#include "slice_tally.h"

#include "batch/batch.h"

void kc_slice_tally_add(kc_slice_tally_t *t, kc_slice_t *s, const char *topic, int32_t partition,
                        int64_t first, int64_t next)
{
    kc_batch_splitter_t sp;
    kc_batch_splitter_init(&sp, s, topic, partition, true);
    kc_decode_ctx_t dc;
    kc_decode_ctx_init(&dc, 64u << 20);
    kc_batch_t b;
    kc_error_t err;
    kc_err_t rc;
    t->slices++;
    while ((rc = kc_batch_next(&sp, &b, &err)) != KC_ERR_NOT_FOUND) {
        t->batches++;
        if (rc != KC_OK) {
            t->bad_batches++;
            if (sp.stopped)
                break;
            continue;
        }
        if (kc_batch_is_control(&b))
            continue;
        kc_record_iter_t it;
        if (kc_batch_records(&dc, &b, &it, &err) != KC_OK) {
            t->bad_batches++;
            continue;
        }
        kc_record_t r;
        while (kc_record_next(&it, &r, &err) == KC_OK) {
            if (r.offset < first)
                continue;
            if (r.offset < t->expected)
                t->dups++;
            else if (r.offset > t->expected)
                t->gaps++;
            t->expected = r.offset + 1;
            t->records++;
        }
    }
    kc_decode_ctx_destroy(&dc);
    if (next > t->expected)
        t->expected = next;
    kc_slice_release(s);
}
