/*
 * read_committed filtering of one partition's batches against the Fetch response's
 * aborted_transactions, following Java's consumer (CompletedFetch.nextFetchedRecord):
 *   for each batch that has a producer id (in offset order):
 *     every aborted txn with first_offset <= batch.lastOffset adds its producer id to the set;
 *     if the batch is a control batch holding an ABORT marker: remove its producer id;
 *     else if it is transactional and its producer is in the set: skip it (aborted data);
 *   control batches are never delivered.
 * State: a kc_txn_filter_t is owned by the worker running the partition.
 */
#include <stdlib.h>

#include "batch/batch.h"

static int by_first_offset(const void *a, const void *b)
{
    int64_t x = ((const kc_aborted_txn_t *)a)->first_offset;
    int64_t y = ((const kc_aborted_txn_t *)b)->first_offset;
    return (x > y) - (x < y);
}

void kc_txn_filter_init(kc_txn_filter_t *f, kc_aborted_txn_t *txns, size_t n, kc_decode_ctx_t *ctx)
{
    /* Brokers send them in order already; sorting costs nothing then and makes us independent of
     * it (Java keeps them in a priority queue for the same reason). */
    if (n > 1)
        qsort(txns, n, sizeof *txns, by_first_offset);
    f->txns = txns;
    f->n = n;
    f->next = 0;
    f->n_active = 0;
    f->ctx = ctx;
}

static bool active(const kc_txn_filter_t *f, int64_t pid, size_t *at)
{
    for (size_t i = 0; i < f->n_active; i++)
        if (f->txns[i].producer_id == pid) {
            if (at)
                *at = i;
            return true;
        }
    return false;
}

/* Moves reached txns into the set. The set lives in txns[0..n_active), which never overtakes
 * `next`: each reached entry frees one slot and adds at most one id. */
static void reach(kc_txn_filter_t *f, int64_t last_offset)
{
    while (f->next < f->n && f->txns[f->next].first_offset <= last_offset) {
        int64_t pid = f->txns[f->next].producer_id;
        f->next++;
        if (!active(f, pid, NULL))
            f->txns[f->n_active++].producer_id = pid;
    }
}

bool kc_txn_filter_skip(kc_txn_filter_t *f, const kc_batch_t *b)
{
    /* -1 is "no producer id": idempotence off, never transactional. */
    if (b->h.producer_id >= 0) {
        reach(f, kc_batch_last_offset(b));
        if (kc_batch_is_control(b)) {
            kc_control_t m;
            size_t at;
            if (kc_batch_control(f->ctx, b, &m, NULL) == KC_OK && m.type == KC_CONTROL_ABORT &&
                active(f, b->h.producer_id, &at))
                f->txns[at].producer_id = f->txns[--f->n_active].producer_id;
            return true;
        }
        if (kc_batch_is_transactional(b) && active(f, b->h.producer_id, NULL))
            return true;
    }
    return kc_batch_is_control(b);
}
