/*
 * The kconsume CLI's shared state and the functions its files share (tools/kconsume.c: flags,
 * callbacks, output, main loop; tools/app/state.c: kc_app and the stop code; tools/app/parts.c:
 * the partition registry; tools/app/ends.c: start-up assignment and the -e end checks;
 * tools/app/view.c: the --live view and the summary). A user of the public API only.
 *
 * Ownership as documented in tools/kconsume.c: the main thread owns kc_app.a, kc_app.c and the
 * lifetime of every part_t; the registry is under reg_mu; counters are atomics.
 */
#ifndef KC_TOOLS_APP_H
#define KC_TOOLS_APP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "kconsume.h"

#include "cli/args.h"
#include "cli/format.h"
#include "cli/serdes.h"

#define META_TIMEOUT_MS  15000 /* metadata and watermark questions at start-up */
#define CLOSE_TIMEOUT_MS 10000 /* in-flight callbacks, final commit, leaving the group */

/* One assigned (or once assigned) partition. Created by the main thread (manual assignment) or by
 * on_assign (group); never freed before the consumer is destroyed, so p->app stays valid. */
typedef struct part {
    char *topic;
    int32_t partition;
    /* End mark (-e: the high watermark the main thread observed; -o e@MS: the first offset that
     * late, if earlier); -1 until known, INT64_MAX for none. Written by the main thread, read by
     * the partition's worker (relaxed: the worker only compares). */
    _Atomic int64_t end;
    atomic_int done;     /* reached `end`: set by the worker or the main thread */
    atomic_int assigned; /* 1 between on_assign and on_revoke/on_lost (manual: from kc_assign) */
    /* --live: written by the partition's worker at the end of each batch, read by main
     * (relaxed: a progress display needs untorn values, no ordering). */
    _Atomic int64_t recs, pos;
    atomic_int worker;
    int64_t prev_recs;  /* main thread: recs at the previous frame, for the rate */
    struct part *next;  /* registry list, under reg_mu */
    struct part *hnext; /* registry bucket chain (parts.c), under reg_mu */
} part_t;

#define KC_APP_PART_BUCKETS 4096 /* registry hash buckets: chains of ~3 at 10,000 partitions */

/* One per worker thread that ran a callback. Owner: that worker; freed by main after close. */
typedef struct worker {
    kc_cli_buf_t buf;
    kc_cli_buf_t key, value; /* -s: the current record's deserialized key and value */
    int id;
    struct worker *next; /* all workers, under reg_mu */
} worker_t;

typedef struct kc_app {
    kc_cli_args_t a;
    kc_cli_fmt_t fmt;
    /* -s, compiled in main before the consumer starts, then read-only; NULL: printed raw. */
    const kc_cli_serdes_t *key_sd, *value_sd;
    kc_cli_serdes_t sd[2];
    kc_consumer_t *c;
    char client_id[256];

    /* One writer of stdout at a time: no interleaving, even across partial writes. */
    pthread_mutex_t out_mu;
    int stats_fd;

    pthread_mutex_t reg_mu; /* parts and workers lists */
    part_t *parts;
    part_t *part_buckets[KC_APP_PART_BUCKETS]; /* the same parts by topic and partition */
    worker_t *workers;

    _Atomic int64_t reserved; /* -c: records claimed for printing (claim first, then print) */
    _Atomic int64_t printed;
    _Atomic uint64_t bytes; /* key + value bytes of printed records */
    atomic_int stop_code;   /* -1 running; else the exit code someone asked for */
} kc_app_t;

extern kc_app_t kc_app; /* tools/app/state.c */

/* tools/app/state.c. now_ns: CLOCK_MONOTONIC. request_stop: first writer wins (any thread). */
uint64_t kc_app_now_ns(void);
void kc_app_request_stop(int code);
/* tools/app/parts.c: the registry entry, created on first use; NULL when out of memory (any
 * thread). */
part_t *kc_app_part_get(const char *topic, int32_t partition);

/* tools/app/ends.c, main thread. assign_all: manual assignment of every -t partition (-p's), end
 * marks first under -e; 0 ok, else the exit code (reported). all_at_end: 1 when every partition
 * the consumer holds (kc_assignment, not the on_assign flags) is done (blocking questions: never
 * from a callback). */
int kc_app_assign_all(void);
/* 1 when partitions have ends to stop at: -e, or -o e@MS (ends.c). Any thread. */
int kc_app_ends_matter(void);
int kc_app_all_at_end(void);
/* -G -e, before kc_subscribe: the end mark of every partition of the topics (ends.c). 0, or the
 * exit code when a topic is unknown to the cluster or no broker answers (reported): -e waits for
 * no end that cannot come. */
int kc_app_learn_group_ends(void);

/* tools/app/query.c, main thread: -L and -Q, each one question and its answer on stdout; the
 * exit code. */
int kc_app_list(void);
int kc_app_query(void);
/* The exit code for a question the cluster did not answer (args.h lists them). Any thread. */
int kc_app_exit_for(kc_err_t rc);
/* tools/app/view.c, main thread: one --live frame on stderr (final: the last one), the summary. */
void kc_app_live_frame(uint64_t t0, int final);
void kc_app_print_summary(uint64_t t0);
/* tools/app/metrics_http.c (main thread): --metrics-port's HTTP listener on 127.0.0.1, serving
 * kc_metrics on the CLI's consumer. start: 0, or -1 with a message on stderr; stop before
 * kc_destroy. */
int kc_app_metrics_start(int port);
void kc_app_metrics_stop(void);

#endif
