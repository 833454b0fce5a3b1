/*
 * Replay from a point in time: find, for each partition of TOPIC, the first record at or after
 * TIMESTAMP (ms since the epoch) with kc_offsets_for_times, assign the partitions from there and
 * print records until every partition reached the end it had when the program started
 * (kc_query_watermarks_list). Each question names every partition at once: one round trip per
 * leader, however many partitions.
 *
 *   from_timestamp BROKERS TOPIC TIMESTAMP_MS
 *
 * A partition with no record that late starts at its end (nothing to print). Queries block the
 * calling app thread (never a callback): they run before kc_assign.
 *
 * Threads: main queries and waits; on_records of different partitions run in parallel on the
 * library's workers, so the count of finished partitions is atomic; the per-partition end offset
 * in p->app is only read there.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kconsume.h"

static int64_t *ends; /* per partition: its end offset when we started (read-only after assign) */
static _Atomic int done_parts;

static void on_assign(void *opaque, kc_part_t *p)
{
    (void)opaque;
    p->app = &ends[p->partition];
}

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *batch)
{
    (void)opaque;
    int64_t end = *(int64_t *)p->app;
    const kc_record_t *r;
    while ((r = kc_records_next(batch)) != NULL) {
        int64_t off = kc_record_offset(r);
        if (off >= end)
            break;
        size_t len;
        const char *v = kc_record_value(r, &len);
        printf("%s[%d]@%lld ts=%lld: %.*s\n", p->topic, p->partition, (long long)off,
               (long long)kc_record_timestamp(r), (int)(len > 60 ? 60 : len), v ? v : "");
        if (off + 1 == end) {
            atomic_fetch_add(&done_parts, 1);
            return KC_CB_PAUSE; /* this partition is done: fetch no more of it */
        }
    }
    return KC_CB_CONTINUE;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s BROKERS TOPIC TIMESTAMP_MS\n", argv[0]);
        return 2;
    }
    kc_error_t err;
    kc_conf_t *conf = kc_conf_new();
    if (!conf || kc_conf_set(conf, "bootstrap.servers", argv[1], &err) != KC_OK) {
        fprintf(stderr, "config: %s\n", conf ? err.msg : "out of memory");
        kc_conf_destroy(conf);
        return 3;
    }
    kc_callbacks_t cbs = {.on_assign = on_assign, .on_records = on_records};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK) {
        fprintf(stderr, "consumer: %s\n", err.msg);
        kc_conf_destroy(conf);
        return 1;
    }
    int rc = 1;
    int32_t n = 0;
    kc_offset_time_t *q = NULL;
    kc_watermarks_t *w = NULL;
    kc_topic_partition_t *tps = NULL;
    if (kc_topic_partitions(c, argv[2], &n, 10000, &err) != KC_OK) {
        fprintf(stderr, "partitions of %s: %s\n", argv[2], err.msg);
        goto out;
    }
    q = calloc((size_t)n, sizeof *q);
    w = calloc((size_t)n, sizeof *w);
    tps = calloc((size_t)n, sizeof *tps);
    ends = calloc((size_t)n, sizeof *ends);
    if (!q || !w || !tps || !ends) {
        fprintf(stderr, "out of memory\n");
        goto out;
    }
    int64_t ts = atoll(argv[3]);
    for (int32_t i = 0; i < n; i++) {
        q[i] = (kc_offset_time_t){.topic = argv[2], .partition = i, .timestamp = ts};
        w[i] = (kc_watermarks_t){.topic = argv[2], .partition = i};
    }
    /* Each call's error names the first partition that failed, why, and how many did. */
    if (kc_offsets_for_times(c, q, (size_t)n, 10000, &err) != KC_OK) {
        fprintf(stderr, "offsets for times: %s\n", err.msg);
        goto out;
    }
    if (kc_query_watermarks_list(c, w, (size_t)n, 10000, &err) != KC_OK) {
        fprintf(stderr, "watermarks: %s\n", err.msg);
        goto out;
    }
    int waiting = 0;
    for (int32_t i = 0; i < n; i++) {
        ends[i] = w[i].high;
        /* offset -1: no record that late; start at the end, nothing to wait for. */
        int64_t start = q[i].offset >= 0 ? q[i].offset : ends[i];
        tps[i] = (kc_topic_partition_t){argv[2], i, start};
        waiting += start < ends[i];
    }
    if (kc_assign(c, tps, (size_t)n, &err) != KC_OK) {
        fprintf(stderr, "assign: %s\n", err.msg);
        goto out;
    }
    const struct timespec tick = {0, 50 * 1000 * 1000};
    while (atomic_load(&done_parts) < waiting)
        nanosleep(&tick, NULL);
    rc = 0;
out:
    if (kc_close(c, 10000, &err) != KC_OK) {
        fprintf(stderr, "close: %s\n", err.msg);
        rc = 1;
    }
    kc_destroy(c);
    free(q);
    free(w);
    free(tps);
    free(ends);
    return rc;
}
