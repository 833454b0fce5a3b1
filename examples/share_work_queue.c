/*
 * A work queue on a share group (KIP-932, Kafka 4.2+): every member of GROUP takes jobs (the
 * records of TOPIC) from the same partitions, and each job gets a verdict of its own. A job that
 * worked is accepted; one that failed for a passing reason is released, so the broker hands it out
 * again (to any member, its delivery count raised); one that can never work, or failed too often,
 * is rejected and never handed out again. Run several copies to share the work.
 *
 *   share_work_queue BROKERS GROUP TOPIC [SECONDS]
 *
 * SECONDS (default: until Ctrl-C) bounds the run, for scripts. Where the group starts reading a
 * partition is the group's own setting on the broker (share.auto.offset.reset, latest by default;
 * kafka-configs --entity-type groups --entity-name GROUP --alter --add-config
 * share.auto.offset.reset=earliest).
 *
 * The "work" is a stand-in: a job's value read as a number; a multiple of 7 can never work, a
 * multiple of 10 fails the first time it is handed out. One line per verdict on stdout:
 *   done|retry|reject PARTITION OFFSET DELIVERY_COUNT VALUE
 *
 * Threads: main waits; on_records runs on the library's workers, several at once (for one
 * partition too: a share group's batches of a partition run side by side), so the output is
 * line-buffered (one line per write).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kconsume.h"

#define MAX_ATTEMPTS 3 /* deliveries before a job that keeps failing is rejected */

typedef enum { WORKED, FAILED_FOR_NOW, CANNOT_WORK } outcome_t;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* The stand-in for real work. */
static outcome_t run_job(const char *value, size_t len, int attempt)
{
    char text[32];
    if (len >= sizeof text)
        return CANNOT_WORK;
    memcpy(text, value, len);
    text[len] = '\0';
    long n = strtol(text, NULL, 10);
    if (n % 7 == 0)
        return CANNOT_WORK;
    if (n % 10 == 0 && attempt == 1)
        return FAILED_FOR_NOW;
    return WORKED;
}

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *batch)
{
    (void)opaque;
    int attempt = kc_records_delivery_count(batch); /* 1 the first time it is handed out */
    const kc_record_t *r;
    while ((r = kc_records_next(batch)) != NULL) {
        size_t len;
        const char *value = kc_record_value(r, &len);
        outcome_t o = run_job(value ? value : "", value ? len : 0, attempt);
        const char *what = "done";
        kc_error_t err;
        /* A record without a verdict of its own gets the callback's: CONTINUE accepts it. */
        if (o == CANNOT_WORK || (o == FAILED_FOR_NOW && attempt >= MAX_ATTEMPTS)) {
            what = "reject";
            if (kc_share_ack(batch, r, KC_SHARE_REJECT, &err) != KC_OK)
                fprintf(stderr, "reject: %s\n", err.msg);
        } else if (o == FAILED_FOR_NOW) {
            what = "retry";
            if (kc_share_ack(batch, r, KC_SHARE_RELEASE, &err) != KC_OK)
                fprintf(stderr, "release: %s\n", err.msg);
        }
        printf("%s %d %lld %d %.*s\n", what, (int)p->partition, (long long)kc_record_offset(r),
               attempt, value ? (int)len : 0, value ? value : "");
    }
    return KC_CB_CONTINUE;
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
    setvbuf(stdout, NULL, _IOLBF, 0);
    int seconds = argc == 5 ? atoi(argv[4]) : 0;
    const char *keys[][2] = {
        {"bootstrap.servers", argv[1]},
        {"group.id", argv[2]},
        {"group.type", "share"}, /* a share group: records, not partitions, are handed out */
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
    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *consumer;
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
    /* Sends the last verdicts, releases what was acquired and not delivered, leaves the group. */
    if (kc_close(consumer, 10000, &err) != KC_OK) {
        fprintf(stderr, "close: %s\n", err.msg);
        rc = 1;
    }
    kc_destroy(consumer);
    return rc;
}
