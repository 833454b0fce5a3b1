/*
 * Pull style: no on_records callback; the application's own threads take record batches with
 * kc_poll and hand each back with kc_records_release. Several threads may poll at once: each gets
 * a different partition's batch, and a partition delivers nothing else while one of its batches
 * is held, so per-partition order holds without any lock in the application.
 *
 *   poll_threads BROKERS TOPIC PARTITIONS THREADS RECORDS
 *
 * Reads partitions 0..PARTITIONS-1 of TOPIC from the beginning on THREADS threads until RECORDS
 * records were taken in all, then prints how many each thread took and closes.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "kconsume.h"

static kc_consumer_t *consumer;
static long long want;
static _Atomic long long taken;

typedef struct worker {
    pthread_t thread;
    long long records;
} worker_t;

static void *poll_loop(void *arg)
{
    worker_t *w = arg;
    while (atomic_load(&taken) < want) {
        kc_records_t *batch = NULL;
        kc_error_t err;
        if (kc_poll(consumer, 200, &batch, &err) != KC_OK) {
            fprintf(stderr, "poll: %s\n", err.msg);
            break;
        }
        if (!batch)
            continue; /* nothing ready within 200 ms */
        long long n = 0;
        while (kc_records_next(batch) != NULL)
            n++;
        w->records += n;
        atomic_fetch_add(&taken, n);
        kc_records_release(consumer, batch, KC_CB_CONTINUE); /* processed */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s BROKERS TOPIC PARTITIONS THREADS RECORDS\n", argv[0]);
        return 2;
    }
    int parts = atoi(argv[3]), threads = atoi(argv[4]);
    want = atoll(argv[5]);
    if (parts < 1 || parts > 1024 || threads < 1 || threads > 64 || want < 1) {
        fprintf(stderr, "PARTITIONS 1..1024, THREADS 1..64, RECORDS >= 1\n");
        return 2;
    }
    kc_error_t err;
    kc_conf_t *conf = kc_conf_new();
    if (!conf || kc_conf_set(conf, "bootstrap.servers", argv[1], &err) != KC_OK) {
        fprintf(stderr, "config: %s\n", conf ? err.msg : "out of memory");
        kc_conf_destroy(conf);
        return 3;
    }
    kc_callbacks_t cbs = {0}; /* on_records NULL: pull style */
    if (kc_consumer_new(conf, &cbs, &consumer, &err) != KC_OK) {
        fprintf(stderr, "consumer: %s\n", err.msg);
        kc_conf_destroy(conf);
        return 1;
    }
    kc_topic_partition_t *tps = calloc((size_t)parts, sizeof *tps);
    worker_t *ws = calloc((size_t)threads, sizeof *ws);
    int rc = 0;
    if (!tps || !ws) {
        fprintf(stderr, "out of memory\n");
        rc = 3;
        goto out;
    }
    for (int i = 0; i < parts; i++)
        tps[i] = (kc_topic_partition_t){argv[2], i, KC_OFFSET_BEGINNING};
    if (kc_assign(consumer, tps, (size_t)parts, &err) != KC_OK) {
        fprintf(stderr, "assign: %s\n", err.msg);
        rc = 1;
        goto out;
    }
    int started = 0;
    for (; started < threads; started++)
        if (pthread_create(&ws[started].thread, NULL, poll_loop, &ws[started]) != 0) {
            fprintf(stderr, "thread %d: cannot start\n", started);
            atomic_store(&taken, want); /* the others stop too */
            rc = 1;
            break;
        }
    for (int i = 0; i < started; i++) {
        pthread_join(ws[i].thread, NULL);
        printf("thread %d: %lld records\n", i, ws[i].records);
    }
    printf("total: %lld records\n", (long long)atomic_load(&taken));
out:
    if (kc_close(consumer, 10000, &err) != KC_OK) {
        fprintf(stderr, "close: %s\n", err.msg);
        rc = 1;
    }
    kc_destroy(consumer);
    free(tps);
    free(ws);
    return rc;
}
