/* Acquired ranges cut along record batches (pieces.h has the rules). Pure. */
#include "share/pieces.h"

#include "batch/batch.h"

/* The acquired offsets of r[0..n) inside [from, to]: acknowledged with `type`. */
static void ack_inside(const kc_share_range_t *r, size_t n, int64_t from, int64_t to,
                       kc_share_ack_type_t type, const kc_share_pieces_out_t *out)
{
    for (size_t k = 0; k < n; k++) {
        int64_t a = r[k].first > from ? r[k].first : from;
        int64_t b = r[k].last < to ? r[k].last : to;
        if (a <= b)
            out->ack(out->opaque, a, b, type);
    }
}

void kc_share_pieces(kc_bytes_t rec, const kc_share_range_t *r, size_t n,
                     const kc_share_pieces_out_t *out)
{
    const uint8_t *base = rec.ptr;
    size_t len = rec.len > 0 ? (size_t)rec.len : 0, pos = 0;
    int64_t next = INT64_MIN; /* acquired offsets below this have their outcome */
    bool cut = false;         /* the batches stop early: the rest is released, not a gap */
    while (len - pos >= KC_BATCH_HEADER_SIZE) {
        kc_batch_header_t h;
        kc_batch_header_parse(base + pos, &h);
        if (h.magic != 2 || h.batch_length < KC_BATCH_HEADER_SIZE - KC_BATCH_LOG_OVERHEAD ||
            h.last_offset_delta < 0 || h.base_offset < 0 || h.base_offset < next ||
            h.base_offset > INT64_MAX - 1 - h.last_offset_delta ||
            (size_t)h.batch_length > len - pos - KC_BATCH_LOG_OVERHEAD) {
            cut = true; /* unreadable, out of order or cut at the size limit */
            break;
        }
        size_t size = (size_t)KC_BATCH_LOG_OVERHEAD + (size_t)h.batch_length;
        int64_t last = h.base_offset + (int64_t)h.last_offset_delta;
        ack_inside(r, n, next, h.base_offset - 1, KC_SHARE_ACK_GAP, out);
        bool control = (h.attributes & KC_BATCH_ATTR_CONTROL) != 0;
        for (size_t k = 0; k < n; k++) {
            int64_t a = r[k].first > h.base_offset ? r[k].first : h.base_offset;
            int64_t b = r[k].last < last ? r[k].last : last;
            if (a > b)
                continue;
            if (control)
                out->ack(out->opaque, a, b, KC_SHARE_ACK_GAP);
            else if (!out->piece(out->opaque, base + pos, size, a, b, r[k].delivery_count))
                out->ack(out->opaque, a, b, KC_SHARE_ACK_RELEASE);
        }
        next = last + 1;
        pos += size;
    }
    if (len - pos > 0)
        cut = true; /* bytes left that are no whole batch header */
    ack_inside(r, n, next, INT64_MAX, cut ? KC_SHARE_ACK_RELEASE : KC_SHARE_ACK_GAP, out);
}
