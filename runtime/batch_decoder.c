/*
 * The runtime's record decoder (kc_rt_decoder_t) over io/batch: one Kafka batch per bref, CRC
 * checked (check.crcs) and decompressed here, on the worker — the network thread only read the
 * batch header. Control batches (transaction markers) deliver no records.
 *
 * Owner: each context belongs to one worker (kc_rt_decoder_t contract); nothing is shared.
 */
#include <stdlib.h>

#include "batch/batch.h"
#include "batch_decoder.h"

typedef struct bdec {
    kc_decode_ctx_t dc;
    kc_batch_splitter_t sp;
    kc_batch_t b; /* the open batch: the record iterator points into it */
    kc_record_iter_t it;
    int has_it;
    int check_crcs;
} bdec_t;

static void *ctx_new(void *opaque)
{
    bdec_t *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    /* Bound on one batch's decompressed size: a hostile ratio stops here, not in the heap. */
    kc_decode_ctx_init(&d->dc, 256u << 20);
    d->check_crcs = opaque != NULL;
    return d;
}

static void ctx_free(void *opaque, void *ctx)
{
    (void)opaque;
    bdec_t *d = ctx;
    kc_decode_ctx_destroy(&d->dc);
    free(d);
}

static kc_err_t open_batch(void *ctx, const kc_part_t *p, const kc_rt_bref_t *br, int *ts_type,
                           kc_error_t *err)
{
    bdec_t *d = ctx;
    d->has_it = 0;
    kc_batch_splitter_init(&d->sp, &br->raw, p->topic, p->partition, d->check_crcs);
    kc_err_t rc = kc_batch_next(&d->sp, &d->b, err);
    if (rc != KC_OK)
        return rc == KC_ERR_NOT_FOUND ? kc_fail(err, KC_ERR_MALFORMED, "%s[%d]: empty batch ref",
                                                p->topic, p->partition)
                                      : rc;
    *ts_type = (int)kc_batch_timestamp_type(&d->b);
    if (kc_batch_is_control(&d->b))
        return KC_OK;
    rc = kc_batch_records(&d->dc, &d->b, &d->it, err);
    d->has_it = rc == KC_OK;
    return rc;
}

static int next_record(void *ctx, kc_record_t *rec, kc_error_t *err)
{
    bdec_t *d = ctx;
    if (!d->has_it)
        return 0;
    kc_err_t rc = kc_record_next(&d->it, rec, err);
    if (rc == KC_OK)
        return 1;
    d->has_it = 0;
    return rc == KC_ERR_NOT_FOUND ? 0 : (int)rc;
}

kc_rt_decoder_t kc_batch_decoder(int check_crcs)
{
    kc_rt_decoder_t d = {ctx_new, ctx_free, open_batch, next_record, check_crcs ? (void *)1 : NULL};
    return d;
}
