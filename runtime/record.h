/*
 * The batch view behind the public kc_records_t. A decoder (io/batch's iterator, through
 * kc_rt_decoder_t) fills a kc_record_t in place; the worker owns one kc_records_t
 * and hands it to every on_records call it makes, so nothing is allocated per record or batch.
 * Owner: the worker running the partition (the views never cross threads in push mode).
 */
#ifndef KC_RUNTIME_RECORD_H
#define KC_RUNTIME_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "kconsume.h"
/* struct kc_record (the public kc_record_t) is io/batch's record view: one type end to end. */
#include "batch/batch.h"

/* What a view tells about its Kafka batch (a view never spans two). */
typedef struct kc_rt_batch_facts {
    int ts_type;          /* 0 CreateTime, 1 LogAppendTime */
    int32_t leader_epoch; /* the partition leader epoch it was written under, -1: none */
} kc_rt_batch_facts_t;

struct kc_rt_part;
struct kc_rt_decoder;

/* An explicit share verdict (kc_share_ack) on one record of a view. */
typedef struct kc_rt_share_pick {
    int64_t offset;
    int8_t verdict;
} kc_rt_share_pick_t;

struct kc_records {
    struct kc_rt_part *part;
    const struct kc_rt_decoder *dec;
    void *dctx;
    kc_record_t rec;           /* the one record view, reused by every kc_records_next */
    kc_rt_batch_facts_t facts; /* of the open Kafka batch */
    int32_t broker;            /* whose Fetch answer carried it */
    int16_t delivery_count;    /* share groups: the records' delivery count; 0 otherwise */
    /* Share groups: the view's batch is a piece of a Kafka batch (kc_rt_bref_t), whose records
     * past share_last belong to other deliveries and end it. */
    bool share;
    int64_t share_last;
    /* kc_share_ack's verdicts on this view's records, ascending by offset (the worker's array,
     * room for max_records); the rest get the callback result's (worker.c, share_verdict). */
    kc_rt_share_pick_t *picks;
    uint32_t n_picks;
    struct kc_rt_worker *worker; /* whose view this is (the verdict barrier's count) */
    bool counted;                /* handed to the application: its verdicts count as posted */
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
int kc_rt_records_pull(kc_records_t *b);

#endif
