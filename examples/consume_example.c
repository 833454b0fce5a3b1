/*
 * The smallest useful kconsume program: read partitions 0..N-1 of a topic from the beginning,
 * print each record's partition, offset and value, stop cleanly on Ctrl-C. Built by CMake
 * (target consume_example) so it compiles in CI. Joining a group instead is one call:
 * kc_subscribe(c, topics, 1, &err) after setting group.id.
 *
 *   consume_example BROKERS TOPIC N
 *
 * Threads: main only waits for the signal; on_records runs on the library's workers, in parallel
 * for different partitions and one at a time per partition, so the per-partition counter in
 * p->app needs no lock.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kconsume.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void on_assign(void *opaque, kc_part_t *p)
{
    (void)opaque;
    p->app = calloc(1, sizeof(long long)); /* records seen on this partition */
}

static kc_cb_result_t on_records(void *opaque, kc_part_t *p, kc_records_t *batch)
{
    (void)opaque;
    const kc_record_t *r;
    while ((r = kc_records_next(batch)) != NULL) {
        size_t len;
        const char *value = kc_record_value(r, &len);
        printf("%s[%d]@%lld: %.*s\n", p->topic, p->partition, (long long)kc_record_offset(r),
               (int)len, value ? value : "");
        if (p->app)
            ++*(long long *)p->app;
    }
    return KC_CB_CONTINUE; /* done with these: the next batch of this partition may come */
}

static void on_revoke(void *opaque, kc_part_t *p)
{
    (void)opaque;
    if (p->app)
        fprintf(stderr, "%s[%d]: %lld records\n", p->topic, p->partition, *(long long *)p->app);
    free(p->app);
    p->app = NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s BROKERS TOPIC N\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[3]);
    if (n < 1 || n > 1024) {
        fprintf(stderr, "N: 1..1024 partitions\n");
        return 2;
    }
    kc_error_t err;
    kc_conf_t *conf = kc_conf_new();
    if (!conf || kc_conf_set(conf, "bootstrap.servers", argv[1], &err) ||
        kc_conf_set(conf, "enable.auto.commit", "false", &err)) { /* no group: nothing to commit */
        fprintf(stderr, "config: %s\n", conf ? err.msg : "out of memory");
        kc_conf_destroy(conf);
        return 3;
    }
    kc_callbacks_t cbs = {.on_assign = on_assign,
                          .on_records = on_records,
                          .on_revoke = on_revoke,
                          .on_lost = on_revoke}; /* lost: free the same way, no commit */
    kc_consumer_t *c;
    if (kc_consumer_new(conf, &cbs, &c, &err) != KC_OK) {
        fprintf(stderr, "consumer: %s\n", err.msg);
        kc_conf_destroy(conf); /* still ours: kc_consumer_new takes it only on success */
        return 1;
    }
    kc_topic_partition_t tps[1024];
    for (int i = 0; i < n; i++)
        tps[i] = (kc_topic_partition_t){argv[2], i, KC_OFFSET_BEGINNING};
    if (kc_assign(c, tps, (size_t)n, &err) != KC_OK) /* the list is copied */
        fprintf(stderr, "assign: %s\n", err.msg);
    else {
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        while (!stop)
            pause(); /* the work happens on the workers */
    }
    /* Finishes in-flight callbacks and runs on_revoke for every partition. */
    if (kc_close(c, 10000, &err) != KC_OK)
        fprintf(stderr, "close: %s\n", err.msg);
    kc_destroy(c);
    return 0;
}
