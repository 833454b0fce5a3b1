/* libFuzzer: a ShareFetch answer's record bytes and acquired ranges as engine/share/pieces.h
 * cuts them: batches unreadable, cut short, out of order, overlapping the ranges anyhow, control
 * batches. Whatever the bytes, every acquired offset gets exactly one outcome (a piece, a GAP or
 * a RELEASE) and no other offset any, and every piece lies inside the records and inside one
 * batch header's span.
 * Input: [k][k x (gap, length, count)][records...]: k & 7 ranges, each starting `gap` offsets
 * after the previous one's end (the first at gap), `length` + 1 long, delivery count
 * (count & 3) + 1 — ascending without overlap, as share/acquired.h leaves them. Seeds: batches
 * built by tests/support/batch_builder behind such headers. Single-threaded. */
#include <stdlib.h>
#include <string.h>

#include "batch/batch.h"
#include "share/pieces.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

#define SPAN (8 * 512 + 8)

typedef struct fz {
    const uint8_t *lo, *hi;
    unsigned char seen[SPAN];
} fz_t;

static void mark(fz_t *f, int64_t a, int64_t b)
{
    if (a > b || a < 0 || b >= SPAN)
        abort();
    for (int64_t o = a; o <= b; o++)
        if (f->seen[o]++)
            abort(); /* two outcomes */
}

static bool piece(void *o, const uint8_t *batch, size_t size, int64_t first, int64_t last,
                  int16_t count)
{
    fz_t *f = o;
    if (batch < f->lo || size > (size_t)(f->hi - batch) || size < KC_BATCH_HEADER_SIZE || count < 1)
        abort();
    kc_batch_header_t h;
    kc_batch_header_parse(batch, &h);
    if (first < h.base_offset || last > h.base_offset + h.last_offset_delta)
        abort();
    if (first & 1)
        return false; /* refuse some: they must come back as a RELEASE */
    mark(f, first, last);
    return true;
}

static void ack(void *o, int64_t first, int64_t last, kc_share_ack_type_t type)
{
    if (type != KC_SHARE_ACK_GAP && type != KC_SHARE_ACK_RELEASE)
        abort();
    mark(o, first, last);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len < 1)
        return 0;
    size_t k = data[0] & 7, pos = 1;
    if (len < 1 + 3 * k)
        return 0;
    kc_share_range_t r[8];
    int64_t at = 0;
    for (size_t i = 0; i < k; i++, pos += 3) {
        r[i].first = at + data[pos];
        r[i].last = r[i].first + data[pos + 1];
        r[i].delivery_count = (int16_t)((data[pos + 2] & 3) + 1);
        at = r[i].last + 1;
    }
    /* the records in a buffer of their own, so reads past them are caught */
    size_t rl = len - pos;
    uint8_t *rec = malloc(rl ? rl : 1);
    if (!rec)
        return 0;
    memcpy(rec, data + pos, rl);
    fz_t *f = calloc(1, sizeof *f);
    if (!f) {
        free(rec);
        return 0;
    }
    f->lo = rec;
    f->hi = rec + rl;
    kc_share_pieces_out_t out = {piece, ack, f};
    kc_share_pieces((kc_bytes_t){rec, (int32_t)rl}, r, k, &out);
    for (int64_t o = 0; o < SPAN; o++) {
        bool acquired = false;
        for (size_t i = 0; i < k; i++)
            acquired |= o >= r[i].first && o <= r[i].last;
        if (f->seen[o] != (acquired ? 1 : 0))
            abort();
    }
    free(f);
    free(rec);
    return 0;
}
