/* A delivery tally for kafka tests: what a consumer delivered (records, duplicates by offset per
 * partition) and which errors it reported, read by the test thread while the consumer runs.
 *
 * Threads: the on_records side is written by the worker running a partition (the runtime runs a
 * partition on one worker at a time, so next_off[p] needs no read-modify-write), the on_event side
 * by whichever thread delivers events; the test thread reads. Counters are atomics; the texts are
 * under mu. */
#ifndef KC_TALLY_H
#define KC_TALLY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kconsume.h"

#define KC_TALLY_PARTS 64 /* partitions 0..63 of the tested topic */
#define KC_TALLY_CODES 64 /* kc_err_t values 0..-63 */

typedef struct kc_tally {
    _Atomic int64_t total;  /* records delivered */
    _Atomic int64_t dups;   /* records at an offset below one already delivered */
    _Atomic int64_t errors; /* KC_EVENT_ERROR events */
    _Atomic int64_t errors_of[KC_TALLY_CODES];
    _Atomic int64_t next_off[KC_TALLY_PARTS];
    pthread_mutex_t mu;
    bool mu_ready;          /* mu initialised (kc_tally_reset) */
    char last_error[1024];  /* under mu: the latest error's message */
    char last_stats[32768]; /* under mu: the latest stats JSON (truncated to fit) */
} kc_tally_t;

/* Zeroes everything; call before the consumer starts (and between cases, with no consumer
 * using the tally). The tally is for one topic: records are keyed by partition only. */
void kc_tally_reset(kc_tally_t *t);

/* The tally's halves, for a test's own callbacks to call; and callbacks that do only that, with
 * the tally as opaque: {.on_records = kc_tally_on_records, .on_event = kc_tally_on_event,
 * .opaque = &tally}. */
void kc_tally_records(kc_tally_t *t, const kc_part_t *p, kc_records_t *batch);
void kc_tally_event(kc_tally_t *t, const kc_event_t *ev);
kc_cb_result_t kc_tally_on_records(void *tally, kc_part_t *p, kc_records_t *batch);
void kc_tally_on_event(void *tally, const kc_event_t *ev);

/* Error events with this code so far. */
int64_t kc_tally_errors_of(kc_tally_t *t, kc_err_t code);
/* Copies of the latest error message and stats JSON ("" before any). */
void kc_tally_last_error(kc_tally_t *t, char *out, size_t cap);
void kc_tally_last_stats(kc_tally_t *t, char *out, size_t cap);

/* Waits until `want` records were delivered or `timeout_ms` passed, then a further `settle_ms`
 * (duplicates arrive after the count is reached); prints a "# what: ..." summary and returns the
 * total. */
int64_t kc_tally_wait(kc_tally_t *t, int64_t want, int timeout_ms, int settle_ms, const char *what);
/* kc_tally_wait, then fails the test unless exactly `want` records came with no duplicate. */
void kc_tally_expect(kc_tally_t *t, int64_t want, int timeout_ms, const char *what);

#endif
