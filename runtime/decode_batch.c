/*
 * The real decoder behind kc_rt_decoder_t: io/batch's v2 record batches. One context per worker
 * (owner: that worker), one Kafka batch per open (a span's batches are opened one at a time,
 * worker.c). The network thread only reads batch headers; the CRC check and decompression happen
 * here, on the worker, so they never cost the network thread.
 *
 * Control batches (transaction markers) carry no user records: they open as empty batches, and
 * the position still moves past them. Aborted-transaction filtering (read_committed) needs the
 * Fetch response's aborted list and is applied where that list is, before the batch is queued.
 */
#include <stdlib.h>

#include "batch/batch.h"
#include "dispatch.h"
#include "base/err.h"

typedef struct batch_ctx {
    kc_decode_ctx_t dc;
    kc_batch_t batch; /* the open batch; the iterator points into it */
    kc_record_iter_t it;
    bool empty;
    bool verify; /* check.crcs, copied from the configuration at creation */
} batch_ctx_t;

static void *ctx_new(void *opaque)
{
    const kc_rt_batch_decoder_conf_t *c = opaque;
    batch_ctx_t *x = calloc(1, sizeof *x);
    if (x) {
        kc_decode_ctx_init(&x->dc, c->decompress_max_bytes);
        x->verify = c->check_crcs;
    }
    return x;
}

static void ctx_free(void *opaque, void *ctx)
{
    batch_ctx_t *x = ctx;
    (void)opaque;
    kc_decode_ctx_destroy(&x->dc);
    free(x);
}

static kc_err_t open_batch(void *ctx, const kc_part_t *p, const kc_rt_bref_t *b,
                           kc_rt_batch_facts_t *facts, kc_error_t *err)
{
    batch_ctx_t *x = ctx;
    kc_batch_splitter_t sp;
    kc_batch_splitter_init(&sp, &b->raw, p->topic, p->partition, x->verify);
    kc_err_t rc = kc_batch_next(&sp, &x->batch, err);
    if (rc == KC_ERR_NOT_FOUND)
        return kc_fail(err, KC_ERR_MALFORMED,
                       "%s[%d]: offsets %lld..%lld: no whole batch in %zu "
                       "bytes",
                       p->topic, p->partition, (long long)b->base_offset, (long long)b->last_offset,
                       b->raw.len);
    if (rc != KC_OK)
        return rc;
    facts->ts_type = (int)kc_batch_timestamp_type(&x->batch);
    /* Brokers before KIP-101 (and messages converted from the v0/v1 formats) write -1. */
    facts->leader_epoch =
        x->batch.h.partition_leader_epoch < 0 ? -1 : x->batch.h.partition_leader_epoch;
    x->empty = kc_batch_is_control(&x->batch);
    if (x->empty)
        return KC_OK;
    return kc_batch_records(&x->dc, &x->batch, &x->it, err);
}

static int next_record(void *ctx, kc_record_t *rec, kc_error_t *err)
{
    batch_ctx_t *x = ctx;
    if (x->empty)
        return 0;
    kc_err_t rc = kc_record_next(&x->it, rec, err);
    return rc == KC_OK ? 1 : rc == KC_ERR_NOT_FOUND ? 0 : (int)rc;
}

kc_rt_decoder_t kc_rt_batch_decoder(const kc_rt_batch_decoder_conf_t *conf)
{
    kc_rt_decoder_t d = {ctx_new, ctx_free, open_batch, next_record, (void *)conf};
    return d;
}
