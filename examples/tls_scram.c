/*
 * Read a topic over TLS with a SCRAM login: every partition from the beginning to the end it has
 * now, then print how many records were read. The broker's certificate is checked against
 * CA_FILE (and its host name); the password goes only to the SCRAM exchange (kconsume never logs
 * it, and kc_conf_get shows it redacted).
 *
 *   tls_scram BROKERS TOPIC CA_FILE USER PASSWORD [SCRAM-SHA-512|SCRAM-SHA-256]
 *
 * BROKERS are the SASL_SSL listeners. The end of each partition is reported with
 * enable.partition.eof (KC_EVENT_PARTITION_EOF), once its records before it were delivered.
 *
 * Threads: main waits; on_records of different partitions run in parallel on the library's
 * workers and on_event on one of them, so the counters are atomic.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kconsume.h"

static _Atomic long records;
static _Atomic int at_end, failed;

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
    if (ev->type == KC_EVENT_PARTITION_EOF) {
        atomic_fetch_add(&at_end, 1);
    } else if (ev->type == KC_EVENT_ERROR) {
        fprintf(stderr, "error: %s\n", ev->error->msg); /* a refused login says so here */
        if (ev->error->code == KC_ERR_AUTH || ev->error->code == KC_ERR_TLS || ev->fatal)
            atomic_store(&failed, 1);
    }
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s BROKERS TOPIC CA_FILE USER PASSWORD [MECHANISM]\n", argv[0]);
        return 2;
    }
    const char *kv[][2] = {
        {"bootstrap.servers", argv[1]},  {"security.protocol", "SASL_SSL"},
        {"ssl.ca.location", argv[3]},    {"sasl.mechanism", argc > 6 ? argv[6] : "SCRAM-SHA-512"},
        {"sasl.username", argv[4]},      {"sasl.password", argv[5]},
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
    if (kc_topic_partitions(c, argv[2], &n, 15000, &err) != KC_OK) {
        fprintf(stderr, "%s: %s\n", argv[2], err.msg);
        kc_close(c, 5000, &err);
        kc_destroy(c);
        return 1;
    }
    kc_topic_partition_t *tps = calloc((size_t)n, sizeof *tps);
    for (int32_t i = 0; tps && i < n; i++)
        tps[i] = (kc_topic_partition_t){argv[2], i, KC_OFFSET_BEGINNING};
    int rc = tps && kc_assign(c, tps, (size_t)n, &err) == KC_OK ? 0 : 1;
    if (rc)
        fprintf(stderr, "assign: %s\n", tps ? err.msg : "out of memory");
    free(tps);
    struct timespec tick = {0, 100 * 1000 * 1000};
    for (int waited = 0; !rc && atomic_load(&at_end) < n && !atomic_load(&failed); waited++) {
        if (waited == 600) { /* 60 s */
            fprintf(stderr, "timed out with %d of %d partitions at their end\n",
                    atomic_load(&at_end), (int)n);
            rc = 1;
        }
        nanosleep(&tick, NULL);
    }
    if (atomic_load(&failed))
        rc = 1;
    printf("%ld records\n", atomic_load(&records));
    kc_close(c, 5000, &err);
    kc_destroy(c);
    return rc;
}
