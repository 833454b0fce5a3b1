/* libFuzzer: a broker's ShareFetch and ShareAcknowledge answers as a share session reads them
 * (engine/share/session.h), beyond the generated decoders (fuzz_proto_response): acquired ranges
 * that overlap, repeat, run backwards or point past the records, partitions never asked for,
 * acknowledgement answers for batches never sent. Whatever the bytes, the session must not crash
 * or read outside the frame, every range it hands out must lie inside the records and ascend
 * without overlap, and every acknowledgement batch sent is reported exactly once.
 * Input: [which][body...]: which & 1 picks the answer (0 ShareFetch v1, 1 ShareAcknowledge v1);
 * the session has partitions 0..2 of the topic whose id ends in 1 and, for ShareAcknowledge, a
 * request in flight acknowledging offsets 0..4 of each. Seeds: the broker's answers
 * (fuzz_proto_response's broker_Share*) with `which` in front. Single-threaded. */
#include <stdlib.h>
#include <string.h>

#include "batch/batch.h"
#include "proto/proto.h"
#include "share/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

typedef struct fz {
    const uint8_t *lo, *hi; /* the frame */
    int acked;
} fz_t;

static void on_records(void *o, const kc_tp_t *tp, kc_bytes_t rec, const kc_share_range_t *r,
                       size_t n, int32_t lock_ms)
{
    (void)lock_ms;
    (void)tp;
    fz_t *f = o;
    if (rec.len > 0 && (rec.ptr < f->lo || rec.ptr + rec.len > f->hi))
        abort();
    for (size_t i = 0; i < n; i++)
        if (r[i].first > r[i].last || r[i].delivery_count < 1 || (i && r[i].first <= r[i - 1].last))
            abort();
    /* every acquired offset inside the batches the records hold */
    kc_batch_splitter_t sp;
    kc_batch_splitter_init_bytes(&sp, rec.ptr, rec.len > 0 ? (size_t)rec.len : 0, NULL, 0, false);
    kc_batch_t b;
    kc_error_t e;
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (;;) {
        kc_err_t rc = kc_batch_next(&sp, &b, &e);
        if (rc == KC_ERR_NOT_FOUND || (rc != KC_OK && (!b.header_ok || sp.stopped)))
            break;
        if (!b.header_ok)
            continue;
        if (b.h.base_offset < first)
            first = b.h.base_offset;
        if (kc_batch_last_offset(&b) > last)
            last = kc_batch_last_offset(&b);
    }
    if (n && (r[0].first < first || r[n - 1].last > last))
        abort();
}

static void on_acked(void *o, const kc_tp_t *tp, const kc_share_ack_batch_t *b, int32_t n,
                     int16_t code, const char *why)
{
    (void)tp;
    (void)b;
    (void)code;
    fz_t *f = o;
    if (n <= 0 || !why)
        abort();
    f->acked++;
}

static void on_error(void *o, const kc_tp_t *tp, const kc_error_t *e)
{
    (void)o;
    (void)tp;
    if (e->msg[0] == 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len < 1)
        return 0;
    int which = data[0] & 1;
    size_t blen = len - 1;
    uint8_t *frame = malloc(blen ? blen : 1);
    if (blen)
        memcpy(frame, data + 1, blen);
    fz_t f = {frame, frame + blen, 0};
    kc_share_handler_t h = {on_records, on_acked, on_error, &f};
    kc_share_session_t s;
    kc_share_session_init(&s, 1);
    kc_error_t e;
    for (int32_t p = 0; p < 3; p++) {
        kc_tp_t tp = {{0}, p};
        tp.topic_id[15] = 1;
        (void)kc_share_session_want(&s, &tp, true, &e);
    }
    kc_share_fetch_params_t params = {"g", "m", 0, 1, 1 << 20, 100, 100};
    kc_share_fetch_request_t fq;
    kc_arena_t a = {0};
    kc_rbuf_t r = kc_rbuf(frame, blen);
    if (which == 0) {
        if (kc_share_session_fetch(&s, &params, &fq, &e) != KC_OK)
            abort();
        kc_share_fetch_response_t m;
        if (kc_share_fetch_response_decode(&m, 1, &r, &a, &e) == KC_OK)
            kc_share_session_fetch_answer(&s, &m, &a, &h);
        else
            kc_share_session_failed(&s, &e, &h);
    } else {
        /* an open session (epoch 1) with five acknowledgements per partition in flight */
        kc_share_fetch_response_t empty;
        kc_share_fetch_response_init(&empty);
        if (kc_share_session_fetch(&s, &params, &fq, &e) != KC_OK)
            abort();
        kc_share_session_fetch_answer(&s, &empty, &a, &h);
        for (int32_t p = 0; p < 3; p++) {
            kc_tp_t tp = {{0}, p};
            tp.topic_id[15] = 1;
            for (int64_t o = 0; o < 5; o++)
                if (kc_share_session_ack(&s, &tp, o, o, KC_SHARE_ACK_ACCEPT, &e) != KC_OK)
                    abort();
            /* and a renewal of records held (the answer may move their deadline) */
            if (kc_share_session_hold(&s, &tp, 5, 9, 1, 1000, &e) != KC_OK ||
                kc_share_session_renew(&s, &tp, 5, 9, 1, 0, &e) != KC_OK)
                abort();
        }
        kc_share_acknowledge_request_t aq;
        if (kc_share_session_acknowledge(&s, "g", "m", false, &aq, &e) != KC_OK)
            abort();
        kc_share_acknowledge_response_t m;
        if (!aq.is_renew_ack)
            abort();
        /* v2 carries the lock's length; bit 1 of the first byte picks the version */
        if (kc_share_acknowledge_response_decode(&m, data[0] & 2 ? 2 : 1, &r, &a, &e) == KC_OK)
            kc_share_session_ack_answer(&s, &m, 0, &h);
        else
            kc_share_session_failed(&s, &e, &h);
        if (f.acked != 3) /* each partition's batch reported once, answered or not */
            abort();
    }
    kc_arena_free(&a);
    kc_share_session_free(&s);
    free(frame);
    return 0;
}
