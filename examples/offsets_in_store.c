/*
 * Exactly-once processing with the offsets kept in the application's own store instead of in
 * Kafka: each partition's result and the position after the last record it covers are written
 * together, in one atomic step, so the store never holds a result without its position. Here
 * the store is a directory with one file per partition ("count bytes next_offset"), written to
 * a temporary name and renamed over the old file; a database would use one transaction.
 *
 *   offsets_in_store BROKERS GROUP TOPIC STORE_DIR [SECONDS]
 *
 * The group-level rebalance callback (on_rebalance) does the store work for a whole set at once:
 *  - ASSIGN, after the partitions' on_assign and before any of their records: read each one's
 *    stored pair and seek there (kc_seek_partitions), from the beginning when none is stored;
 *  - REVOKE, after their last on_records returned and before the partitions move: write each
 *    one's pair. kc_close reports its revocation the same way, so a clean exit writes too;
 *  - LOST: write nothing. Another member may own the partitions already; it continues from the
 *    last pair written, and this member's work since then is done again there, once.
 * Nothing is committed to Kafka (enable.auto.commit=false): the store alone says where each
 * partition stands. Every record is therefore counted once in the store, whatever the
 * rebalances, as long as every member uses the same store.
 *
 * Threads: a partition's on_assign and on_records run on the library's workers one at a time,
 * and on_rebalance runs between them (after the last on_records of a revoked set, before the
 * first of an assigned one), so the per-partition state needs no lock.
 */
#define _POSIX_C_SOURCE 200809L /* fileno, fsync, nanosleep */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#define MAX_PARTITIONS 256

typedef struct part_state {
    long long count, bytes; /* the result: records and value bytes seen */
    int64_t next;           /* the offset after the last record the result covers */
} part_state_t;

static part_state_t states[MAX_PARTITIONS]; /* by partition number (one topic) */
static const char *store_dir;
static kc_consumer_t *consumer; /* set before any callback can run */
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void path_of(char *out, size_t len, const char *topic, int32_t partition, const char *sfx)
{
    snprintf(out, len, "%s/%s-%d%s", store_dir, topic, (int)partition, sfx);
}

/* The stored pair of one partition; false when none is stored yet. */
static bool load(const char *topic, int32_t partition, part_state_t *st)
{
    char path[1024];
    path_of(path, sizeof path, topic, partition, "");
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    long long next;
    bool ok = fscanf(f, "%lld %lld %lld", &st->count, &st->bytes, &next) == 3;
    st->next = ok ? (int64_t)next : -1;
    fclose(f);
    return ok;
}

/* Result and position in one atomic step: a whole new file renamed over the old one. */
static void save(const char *topic, int32_t partition, const part_state_t *st)
{
    char tmp[1024], path[1024];
    path_of(tmp, sizeof tmp, topic, partition, ".tmp");
    path_of(path, sizeof path, topic, partition, "");
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%lld %lld %lld\n", st->count, st->bytes, (long long)st->next) < 0 ||
        fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "store %s[%d]: %s\n", topic, (int)partition, strerror(errno));
        exit(2); /* a store that cannot be written: stop rather than lose track */
    }
}

static void on_rebalance(void *opaque, kc_rebalance_t kind, const kc_topic_partition_t *tps,
                         size_t n)
{
    (void)opaque;
    if (kind == KC_REBALANCE_ASSIGN) {
        kc_topic_partition_t *where = calloc(n ? n : 1, sizeof *where);
        for (size_t i = 0; where && i < n; i++) {
            part_state_t *st = &states[tps[i].partition % MAX_PARTITIONS];
            memset(st, 0, sizeof *st);
            bool stored = load(tps[i].topic, tps[i].partition, st);
            where[i] = (kc_topic_partition_t){tps[i].topic, tps[i].partition,
                                              stored ? st->next : KC_OFFSET_BEGINNING};
            if (!stored)
                st->next = -1;
            fprintf(stderr, "assigned %s[%d] at %lld (%lld stored)\n", tps[i].topic,
                    (int)tps[i].partition, (long long)where[i].offset, st->count);
        }
        kc_error_t err;
        if (where && kc_seek_partitions(consumer, where, n, &err) != KC_OK)
            fprintf(stderr, "seek: %s\n", err.msg);
        free(where);
    } else if (kind == KC_REBALANCE_REVOKE) {
        for (size_t i = 0; i < n; i++) {
            const part_state_t *st = &states[tps[i].partition % MAX_PARTITIONS];
            if (st->next >= 0) /* something was processed (or stored) */
                save(tps[i].topic, tps[i].partition, st);
            fprintf(stderr, "revoked %s[%d] at %lld\n", tps[i].topic, (int)tps[i].partition,
                    (long long)st->next);
        }
    } else {
        fprintf(stderr, "lost %zu partition(s): their work since the last store is done again\n",
                n);
    }
}

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *batch)
{
    (void)opaque;
    part_state_t *st = &states[p->partition % MAX_PARTITIONS];
    const kc_record_t *r;
    while ((r = kc_records_next(batch)) != NULL) {
        size_t len;
        (void)kc_record_value(r, &len);
        st->count++; /* the "processing" */
        st->bytes += (long long)len;
        st->next = kc_record_offset(r) + 1;
    }
    return KC_CB_CONTINUE;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s BROKERS GROUP TOPIC STORE_DIR [SECONDS]\n", argv[0]);
        return 2;
    }
    store_dir = argv[4];
    int seconds = argc > 5 ? atoi(argv[5]) : 0;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    kc_error_t err;
    kc_conf_t *conf = kc_conf_new();
    if (kc_conf_set(conf, "bootstrap.servers", argv[1], &err) != KC_OK ||
        kc_conf_set(conf, "group.id", argv[2], &err) != KC_OK ||
        kc_conf_set(conf, "enable.auto.commit", "false", &err) != KC_OK) {
        fprintf(stderr, "config: %s\n", err.msg);
        return 1;
    }
    /* on_rebalance is a member added after the first layout: say which layout this is. */
    kc_callbacks_t cbs = {
        .size = sizeof cbs, .on_records = on_records, .on_rebalance = on_rebalance};
    if (kc_consumer_new(conf, &cbs, &consumer, &err) != KC_OK) {
        fprintf(stderr, "kc_consumer_new: %s\n", err.msg);
        return 1;
    }
    const char *topics[] = {argv[3]};
    if (kc_subscribe(consumer, topics, 1, &err) != KC_OK) {
        fprintf(stderr, "subscribe: %s\n", err.msg);
        return 1;
    }
    time_t end = seconds > 0 ? time(NULL) + seconds : 0;
    struct timespec tick = {0, 100 * 1000 * 1000};
    while (!stop && (!end || time(NULL) < end))
        nanosleep(&tick, NULL);
    /* The close revokes every partition: on_rebalance(REVOKE) writes their pairs. */
    if (kc_close(consumer, 10000, &err) != KC_OK)
        fprintf(stderr, "close: %s\n", err.msg);
    kc_destroy(consumer);
    return 0;
}
