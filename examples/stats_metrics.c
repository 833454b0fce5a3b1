/*
 * Monitoring a consumer: read TOPIC from the beginning to its end, take the stats JSON that
 * statistics.interval.ms hands to on_event every second (here: count them and keep the size),
 * then print the consumer's metrics in the Prometheus text format (kc_metrics), which a scrape
 * endpoint would serve as is.
 *
 *   stats_metrics BROKERS TOPIC
 *
 * stdout holds only the metrics text; progress goes to stderr. client.id ("stats-example")
 * labels every metric.
 *
 * Threads: main waits and renders; on_records of different partitions run in parallel on the
 * library's workers and on_event on one of them, so the counters are atomic.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kconsume.h"

static _Atomic long records, stats_events, last_stats_bytes;
static _Atomic int at_end;

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *batch)
{
    (void)opaque, (void)p;
    while (kc_records_next(batch) != NULL)
        atomic_fetch_add(&records, 1);
    return KC_CB_CONTINUE;
}

static void on_event(void *opaque, const kc_event_t *ev)
{
    (void)opaque;
    if (ev->type == KC_EVENT_STATS) { /* one JSON object: README, "Statistics" */
        atomic_fetch_add(&stats_events, 1);
        atomic_store(&last_stats_bytes, (long)strlen(ev->json));
    } else if (ev->type == KC_EVENT_PARTITION_EOF) {
        atomic_fetch_add(&at_end, 1);
    } else if (ev->type == KC_EVENT_ERROR) {
        fprintf(stderr, "error: %s\n", ev->error->msg);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s BROKERS TOPIC\n", argv[0]);
        return 2;
    }
    const char *kv[][2] = {{"bootstrap.servers", argv[1]},
                           {"client.id", "stats-example"},
                           {"statistics.interval.ms", "1000"},
                           {"enable.partition.eof", "true"}};
    kc_error_t err;
    kc_conf_t *conf = kc_conf_new();
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        if (kc_conf_set(conf, kv[i][0], kv[i][1], &err) != KC_OK) {
            fprintf(stderr, "%s: %s\n", kv[i][0], err.msg);
            return 1;
        }
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK) {
        fprintf(stderr, "kc_consumer_new: %s\n", err.msg);
        return 1;
    }
    int32_t n = 0;
    int rc = kc_topic_partitions(c, argv[2], &n, 15000, &err) == KC_OK ? 0 : 1;
    kc_topic_partition_t *tps = rc ? NULL : calloc((size_t)n, sizeof *tps);
    for (int32_t i = 0; tps && i < n; i++)
        tps[i] = (kc_topic_partition_t){argv[2], i, KC_OFFSET_BEGINNING};
    if (!rc && (!tps || kc_assign(c, tps, (size_t)n, &err) != KC_OK))
        rc = 1;
    free(tps);
    if (rc)
        fprintf(stderr, "%s: %s\n", argv[2], err.msg);
    /* To the end of every partition, then two more stats intervals so a stats event follows. */
    struct timespec tick = {0, 100 * 1000 * 1000};
    for (int waited = 0; !rc && atomic_load(&at_end) < n && waited < 600; waited++)
        nanosleep(&tick, NULL);
    long seen = atomic_load(&stats_events);
    for (int waited = 0; !rc && atomic_load(&stats_events) < seen + 2 && waited < 50; waited++)
        nanosleep(&tick, NULL);
    fprintf(stderr, "%ld records, %ld stats events (the last %ld bytes of JSON)\n",
            atomic_load(&records), atomic_load(&stats_events), atomic_load(&last_stats_bytes));
    char *text = NULL;
    if (!rc && kc_metrics(c, &text, NULL, &err) == KC_OK)
        fputs(text, stdout);
    else if (!rc)
        fprintf(stderr, "kc_metrics: %s\n", err.msg), rc = 1;
    free(text);
    kc_close(c, 5000, &err);
    kc_destroy(c);
    return rc;
}
