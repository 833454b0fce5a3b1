/* For engine-level tests of the offset calls (kc_engine_commit, kc_engine_committed and their
 * _member forms): the call's answer, written by its callback on the network thread and waited for
 * by the test thread; and a record sink for an engine that is asked no records.
 *
 * Threads: kc_test_offsets_on_result on the network thread, the others on the test thread; one
 * process-wide mutex and condition order the answer's writes before the waiter's reads. */
#ifndef KC_OFFSETS_WAIT_H
#define KC_OFFSETS_WAIT_H

#include "coordinator.h"
#include "engine.h"

typedef struct kc_test_offsets_result {
    int done;
    kc_err_t rc;
    kc_error_t err;
    kc_engine_offset_t res[2]; /* the first two partitions' outcomes */
} kc_test_offsets_result_t;

/* The kc_engine_offsets_cb to pass, with the result as opaque. */
void kc_test_offsets_on_result(void *opaque, kc_err_t rc, const kc_error_t *err,
                               const kc_engine_offset_t *res, size_t n);
/* Clears r before a call. */
void kc_test_offsets_reset(kc_test_offsets_result_t *r);
/* Waits until r's callback ran. */
void kc_test_offsets_wait(kc_test_offsets_result_t *r);

/* kc_engine_sink_t.records for an engine that fetches nothing: releases what it is handed. */
kc_err_t kc_test_discard_records(void *opaque, void *user, const char *topic, int32_t partition,
                                 int32_t broker, kc_slice_t *s, int64_t first, int64_t next);

#endif
