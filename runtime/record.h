/*
 * The record and batch views behind the public kc_record_t / kc_batch_t. A decoder (io/batch's
 * iterator, through kc_rt_decoder_t) fills a kc_record_t in place; the worker owns one kc_batch_t
 * and hands it to every on_records call it makes, so nothing is allocated per record or batch.
 * Owner: the worker running the partition (the views never cross threads in push mode).
 */
#ifndef KC_RUNTIME_RECORD_H
#define KC_RUNTIME_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "kconsume.h"

struct kc_record {
    int64_t offset;
    int64_t timestamp;
    int ts_type;        /* 0 CreateTime, 1 LogAppendTime */
    const uint8_t *key; /* NULL for a null key */
    size_t key_len;
    const uint8_t *value; /* NULL for a null value */
    size_t value_len;
    const uint8_t *headers; /* the record's header bytes after the count (wire format) */
    size_t headers_len;
    uint32_t header_count;
};

struct kc_rt_part;
struct kc_rt_decoder;

struct kc_batch {
    struct kc_rt_part *part;
    const struct kc_rt_decoder *dec;
    void *dctx;
    kc_record_t rec;   /* the one record view, reused by every kc_batch_next */
    bool peeked;       /* rec holds the view's first record, not yet returned */
    bool end;          /* the decoder reported the end of the batch (or an error) */
    uint32_t left;     /* records this view may still return */
    uint32_t returned; /* records returned by this view */
    int64_t first_offset;
    int64_t next_offset; /* after the last record returned */
    kc_err_t err;
    kc_error_t errinfo;
};

/* The worker's decoder step: next record from the open batch into b->rec (1), end (0), error
 * (< 0, recorded in b->err/errinfo and ends the batch). */
int kc_rt_batch_pull(kc_batch_t *b);

#endif
