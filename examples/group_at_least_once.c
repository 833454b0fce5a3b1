/*
 * A group member with at-least-once processing: join GROUP, read TOPIC, "process" each record
 * (here: add its value's length to a per-partition total), and mark a record committable only
 * after it was processed. Auto-commit then commits what was marked; on a rebalance or at close
 * the member commits the marks of the partitions it gives up before another member may read
 * them. A record is processed again only if this member dies between processing it and the next
 * commit (the redelivery window), never skipped.
 *
 *   group_at_least_once BROKERS GROUP TOPIC [SECONDS]
 *
 * SECONDS (default: until Ctrl-C) bounds the run, for scripts. The group protocol is negotiated
 * (group.protocol=auto: KIP-848 where the broker has it, else the classic protocol).
 *
 * Threads: main waits; on_assign, on_records and on_revoke/on_lost of one partition run on the
 * library's workers one at a time, so the partition's state in p->app needs no lock. The totals
 * printed at revocation are that state.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

typedef struct part_state {
    long long records, bytes;
} part_state_t;

static volatile sig_atomic_t stop;
static kc_consumer_t *consumer; /* set before any callback can run */

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void on_assign(void *opaque, kc_part_t *p)
{
    (void)opaque;
    p->app = calloc(1, sizeof(part_state_t));
    fprintf(stderr, "assigned %s[%d]\n", p->topic, p->partition);
}

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *batch)
{
    (void)opaque;
    part_state_t *st = p->app;
    const kc_record_t *r;
    while ((r = kc_records_next(batch)) != NULL) {
        size_t len;
        (void)kc_record_value(r, &len);
        st->records++; /* the "processing" */
        st->bytes += (long long)len;
        kc_error_t err;
        /* Processed: the next offset to read is committable. */
        if (kc_store_offset(consumer, p->topic, p->partition, kc_record_offset(r) + 1, &err) !=
            KC_OK)
            fprintf(stderr, "store %s[%d]: %s\n", p->topic, p->partition, err.msg);
    }
    return KC_CB_CONTINUE;
}

static void on_revoke(void *opaque, kc_part_t *p)
{
    (void)opaque;
    part_state_t *st = p->app;
    if (st)
        printf("%s[%d]: %lld records, %lld bytes\n", p->topic, p->partition, st->records,
               st->bytes);
    fflush(stdout);
    free(st);
    p->app = NULL;
}

static void on_event(void *opaque, const kc_event_t *ev)
{
    (void)opaque;
    if (ev->type == KC_EVENT_ERROR && ev->error)
        fprintf(stderr, "error: %s: %s\n", kc_err_name(ev->error->code), ev->error->msg);
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s BROKERS GROUP TOPIC [SECONDS]\n", argv[0]);
        return 2;
    }
    int seconds = argc == 5 ? atoi(argv[4]) : 0;
    const char *keys[][2] = {
        {"bootstrap.servers", argv[1]},        {"group.id", argv[2]},
        {"auto.offset.reset", "earliest"},     /* a new group reads from the start */
        {"enable.auto.offset.store", "false"}, /* only kc_store_offset marks records done */
        {"enable.auto.commit", "true"},        /* commits what was marked */
    };
    kc_error_t err;
    kc_conf_t *conf = kc_conf_new();
    if (!conf) {
        fprintf(stderr, "out of memory\n");
        return 3;
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (kc_conf_set(conf, keys[i][0], keys[i][1], &err) != KC_OK) {
            fprintf(stderr, "config: %s\n", err.msg);
            kc_conf_destroy(conf);
            return 3;
        }
    kc_callbacks_t cbs = {.on_assign = on_assign,
                          .on_records = on_records,
                          .on_revoke = on_revoke,
                          .on_lost = on_revoke, /* lost: another member may own it already */
                          .on_event = on_event};
    if (kc_consumer_new(conf, &cbs, &consumer, &err) != KC_OK) {
        fprintf(stderr, "consumer: %s\n", err.msg);
        kc_conf_destroy(conf);
        return 1;
    }
    const char *topics[] = {argv[3]};
    int rc = 0;
    if (kc_subscribe(consumer, topics, 1, &err) != KC_OK) {
        fprintf(stderr, "subscribe: %s\n", err.msg);
        rc = 1;
    } else {
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        for (int waited = 0; !stop && (seconds <= 0 || waited < seconds); waited++)
            sleep(1);
    }
    /* Revokes every partition (on_revoke), commits what was stored, leaves the group. */
    if (kc_close(consumer, 10000, &err) != KC_OK) {
        fprintf(stderr, "close: %s\n", err.msg);
        rc = 1;
    }
    kc_destroy(consumer);
    return rc;
}
