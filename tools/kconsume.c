/*
 * kconsume: the command-line consumer (like kcat -C). A user of the public API only: nothing here
 * includes an internal header, so it shows what the API can and cannot do.
 *
 * Threads and ownership:
 *  - main thread: parses flags, builds the config, creates the consumer, assigns or subscribes,
 *    then loops (signals, -e end checks, periodic commits) until something asks it to stop; then
 *    closes. It owns `g.a`, `g.c` and the lifetime of every part_t.
 *  - workers (the library's): on_assign/on_records/on_revoke/on_lost/on_event. Each worker
 *    renders into its own buffer (worker_t, found through a thread-local) and writes each batch
 *    with one write(2) under out_mu, so lines of concurrent workers never interleave.
 *  - shared: the partition registry (reg_mu), the counters and the stop code (atomics, noted
 *    where they are declared).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#include "cli/args.h"
#include "cli/format.h"
#include "cli/live.h"
#include "cli/setup.h"

#define META_TIMEOUT_MS  15000 /* metadata and watermark questions at start-up */
#define CLOSE_TIMEOUT_MS 10000 /* in-flight callbacks, final commit, leaving the group */
#define FLUSH_BYTES      65536 /* a worker writes out mid-batch past this (at a line boundary) */

/* One assigned (or once assigned) partition. Created by the main thread (manual assignment) or by
 * on_assign (group); never freed before the consumer is destroyed, so p->app stays valid. */
typedef struct part {
    char *topic;
    int32_t partition;
    /* -e end mark: the high watermark the main thread observed; -1 until known. Written by the
     * main thread, read by the partition's worker (relaxed: the worker only compares). */
    _Atomic int64_t end;
    atomic_int done;     /* reached `end`: set by the worker or the main thread */
    atomic_int assigned; /* 1 between on_assign and on_revoke/on_lost (manual: from kc_assign) */
    /* --live: written by the partition's worker at the end of each batch, read by main
     * (relaxed: a progress display needs untorn values, no ordering). */
    _Atomic int64_t recs, pos;
    atomic_int worker;
    int64_t prev_recs; /* main thread: recs at the previous frame, for the rate */
    struct part *next; /* registry list, under reg_mu */
} part_t;

/* One per worker thread that ran a callback. Owner: that worker; freed by main after close. */
typedef struct worker {
    kc_cli_buf_t buf;
    int id;
    struct worker *next; /* all workers, under reg_mu */
} worker_t;

static struct {
    kc_cli_args_t a;
    kc_cli_fmt_t fmt;
    kc_consumer_t *c;
    char client_id[256];

    /* One writer of stdout at a time: no interleaving, even across partial writes. */
    pthread_mutex_t out_mu;
    int stats_fd;

    pthread_mutex_t reg_mu; /* parts and workers lists */
    part_t *parts;
    worker_t *workers;

    _Atomic int64_t reserved; /* -c: records claimed for printing (claim first, then print) */
    _Atomic int64_t printed;
    _Atomic uint64_t bytes; /* key + value bytes of printed records */
    atomic_int stop_code;   /* -1 running; else the exit code someone asked for */
} g = {.out_mu = PTHREAD_MUTEX_INITIALIZER, .reg_mu = PTHREAD_MUTEX_INITIALIZER, .stats_fd = 2};

static volatile sig_atomic_t g_signal;
static _Thread_local worker_t *tl_worker;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* First writer wins: a later, different reason to stop does not override the first. */
static void request_stop(int code)
{
    int exp = -1;
    atomic_compare_exchange_strong(&g.stop_code, &exp, code);
}

static void on_signal(int sig)
{
    if (g_signal) /* second signal: the user does not want to wait for a clean close */
        _exit(128 + sig);
    g_signal = sig;
}

/* ---- output ---------------------------------------------------------------------------------- */

static void write_out(const char *p, size_t n)
{
    pthread_mutex_lock(&g.out_mu);
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            /* EPIPE: the reader left (| head): a normal way to stop, not an error. */
            int e = errno;
            if (e != EPIPE)
                fprintf(stderr, "kconsume: writing the output: %s\n", strerror(e));
            request_stop(e == EPIPE ? KC_CLI_EXIT_OK : KC_CLI_EXIT_RUNTIME);
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    pthread_mutex_unlock(&g.out_mu);
}

static worker_t *this_worker(void)
{
    if (tl_worker)
        return tl_worker;
    worker_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    pthread_mutex_lock(&g.reg_mu);
    /* The library's worker id (kc_worker_id): the number stats report as workers[].id and
     * partitions[].worker, so %w and --live agree with the stats file. */
    w->id = kc_worker_id();
    w->next = g.workers;
    g.workers = w;
    pthread_mutex_unlock(&g.reg_mu);
    tl_worker = w;
    return w;
}

/* ---- the partition registry ------------------------------------------------------------------ */

static part_t *part_get(const char *topic, int32_t partition)
{
    pthread_mutex_lock(&g.reg_mu);
    part_t *p;
    for (p = g.parts; p; p = p->next)
        if (p->partition == partition && !strcmp(p->topic, topic))
            break;
    if (!p) {
        p = calloc(1, sizeof *p);
        if (p && !(p->topic = strdup(topic))) {
            free(p);
            p = NULL;
        }
        if (p) {
            p->partition = partition;
            atomic_init(&p->end, -1);
            atomic_init(&p->pos, -1);
            atomic_init(&p->worker, -1);
            p->next = g.parts;
            g.parts = p;
        }
    }
    pthread_mutex_unlock(&g.reg_mu);
    return p;
}

/* ---- callbacks (workers) --------------------------------------------------------------------- */

static void on_assign(void *opaque, kc_part_t *kp)
{
    (void)opaque;
    part_t *p = part_get(kp->topic, kp->partition);
    if (!p) {
        fprintf(stderr, "kconsume: out of memory\n");
        request_stop(KC_CLI_EXIT_RUNTIME);
        return;
    }
    kp->app = p;
    atomic_store(&p->assigned, 1);
    if (g.a.start == KC_CLI_START_TIMESTAMP) {
        kc_error_t e;
        if (kc_seek(g.c, kp->topic, kp->partition, KC_SEEK_TIMESTAMP, g.a.start_value, &e)) {
            fprintf(stderr, "kconsume: %s[%d]: seeking to @%" PRId64 ": %s\n", kp->topic,
                    kp->partition, g.a.start_value, e.msg);
            request_stop(KC_CLI_EXIT_RUNTIME);
        }
    }
}

static void on_gone(void *opaque, kc_part_t *kp)
{
    (void)opaque;
    part_t *p = kp->app;
    if (p)
        atomic_store(&p->assigned, 0);
    kp->app = NULL;
}

static int hdr_next(const void *src, size_t *cursor, const char **name, size_t *name_len,
                    const void **value, size_t *value_len)
{
    kc_err_t rc = kc_record_header_next(src, cursor, name, name_len, value, value_len);
    return rc == KC_OK ? 0 : rc == KC_ERR_NOT_FOUND ? 1 : -1;
}

/* Ends the view before `next` (the first record not printed) and pauses the partition: the
 * runtime's committable offset is the end of what was delivered, so a record pulled from the view
 * but not printed must not count as delivered. kc_seek from on_records ends the current view. */
static kc_cb_result_t stop_before(kc_part_t *kp, int64_t next)
{
    if (g.a.group) /* only commits care, and without -G nothing is committed */
        (void)kc_seek(g.c, kp->topic, kp->partition, KC_SEEK_OFFSET, next, NULL);
    return KC_CB_PAUSE;
}

static kc_cb_result_t on_records(void *opaque, kc_part_t *kp, kc_records_t *batch)
{
    (void)opaque;
    uint64_t t0 = now_ns();
    part_t *p = kp->app;
    worker_t *w = this_worker();
    if (!w) {
        fprintf(stderr, "kconsume: out of memory\n");
        request_stop(KC_CLI_EXIT_RUNTIME);
        return KC_CB_RETRY; /* not delivered; the stop closes the consumer */
    }
    char member[256] = "";
    if (kc_cli_fmt_uses(&g.fmt, KC_CLI_MEMBER) &&
        (kc_member_id(g.c, member, sizeof member) != KC_OK || !member[0]))
        snprintf(member, sizeof member, "%s", g.client_id);
    kc_cli_rec_t rec = {.topic = kp->topic,
                        .partition = kp->partition,
                        .worker = w->id,
                        .member = member,
                        .cb_start_ns = t0,
                        .hdr_next = kc_cli_fmt_uses(&g.fmt, KC_CLI_HEADERS) ? hdr_next : NULL};
    int64_t end = p && g.a.exit_at_end ? atomic_load_explicit(&p->end, memory_order_relaxed) : -1;
    int64_t n = 0;
    uint64_t bytes = 0;
    kc_cb_result_t res = KC_CB_CONTINUE;
    const kc_record_t *r;
    while ((r = kc_records_next(batch)) != NULL) {
        rec.offset = kc_record_offset(r);
        if (end >= 0 && rec.offset >= end) { /* past the end observed at start */
            atomic_store(&p->done, 1);
            res = stop_before(kp, rec.offset);
            break;
        }
        /* -c: claim a slot before printing, so exactly COUNT records are printed in total. */
        if (g.a.count && atomic_fetch_add(&g.reserved, 1) >= g.a.count) {
            res = stop_before(kp, rec.offset);
            break;
        }
        rec.timestamp = kc_record_timestamp(r);
        rec.key = kc_record_key(r, &rec.key_len);
        rec.value = kc_record_value(r, &rec.value_len);
        rec.hdr_src = r;
        if (kc_cli_fmt_render(&g.fmt, &rec, &w->buf)) {
            fprintf(stderr, "kconsume: out of memory formatting a record\n");
            request_stop(KC_CLI_EXIT_RUNTIME);
            res = stop_before(kp, rec.offset);
            break;
        }
        n++;
        bytes += rec.key_len + rec.value_len;
        if (w->buf.len >= FLUSH_BYTES) {
            write_out(w->buf.p, w->buf.len);
            w->buf.len = 0;
        }
        if (end >= 0 && rec.offset + 1 >= end) {
            atomic_store(&p->done, 1);
            res = stop_before(kp, rec.offset + 1);
            break;
        }
    }
    if (w->buf.len) {
        write_out(w->buf.p, w->buf.len);
        w->buf.len = 0;
    }
    atomic_fetch_add(&g.bytes, bytes);
    if (p && n > 0) {
        atomic_fetch_add_explicit(&p->recs, n, memory_order_relaxed);
        atomic_store_explicit(&p->pos, rec.offset + 1, memory_order_relaxed);
        atomic_store_explicit(&p->worker, w->id, memory_order_relaxed);
    }
    /* --work-us: the record's "processing", after its line is out and before the callback
     * returns, so the offset becomes committable only once the work is done, as in a real app. */
    if (g.a.work_us > 0 && n > 0) {
        int64_t us = g.a.work_us * n;
        nanosleep(&(struct timespec){us / 1000000, (us % 1000000) * 1000}, NULL);
    }
    /* Counted after the write: once printed reaches COUNT, every counted line is out. */
    if (atomic_fetch_add(&g.printed, n) + n >= g.a.count && g.a.count)
        request_stop(KC_CLI_EXIT_OK);
    return res;
}

static void on_event(void *opaque, const kc_event_t *ev)
{
    (void)opaque;
    if (ev->type == KC_EVENT_STATS && ev->json) {
        /* One object per line, one write: a reader tailing the file never sees half of one. */
        size_t len = strlen(ev->json);
        char *line = malloc(len + 1);
        if (line) {
            memcpy(line, ev->json, len);
            line[len] = '\n';
            ssize_t wr = write(g.stats_fd, line, len + 1);
            (void)wr; /* stats are best effort: a full disk must not stop consumption */
            free(line);
        }
    } else if (ev->type == KC_EVENT_ERROR && ev->error) {
        int fatal = ev->error->code == KC_ERR_FATAL;
        if (fatal || !g.a.quiet)
            fprintf(stderr, "kconsume: %s%s: %s\n", fatal ? "fatal: " : "",
                    kc_err_name(ev->error->code), ev->error->msg);
        if (fatal)
            request_stop(KC_CLI_EXIT_RUNTIME);
    }
}

/* ---- start-up -------------------------------------------------------------------------------- */

static int64_t start_offset(void)
{
    switch (g.a.start) {
    case KC_CLI_START_BEGINNING:
        return KC_OFFSET_BEGINNING;
    case KC_CLI_START_OFFSET:
        return g.a.start_value;
    default:
        return KC_OFFSET_END; /* default and end; @MS seeks in on_assign from there */
    }
}

/* ---- -e: the main thread's end checks -------------------------------------------------------- */

/* Asks p's watermarks (blocking: main thread only, never a callback) and sets its end mark. A
 * partition with nothing to read, or whose start is at or past the end, is done at once: no
 * callback will ever come for it. 0 ok, -1 not known yet (asked again later). */
static int learn_end(part_t *p)
{
    int64_t low, high;
    kc_error_t e;
    if (kc_query_watermarks(g.c, p->topic, p->partition, &low, &high, META_TIMEOUT_MS, &e) !=
        KC_OK) {
        if (!g.a.quiet)
            fprintf(stderr, "kconsume: %s[%d]: watermarks: %s (asking again)\n", p->topic,
                    p->partition, e.msg);
        return -1;
    }
    atomic_store(&p->end, high);
    if (low >= high || g.a.start == KC_CLI_START_END ||
        (g.a.start == KC_CLI_START_DEFAULT && !g.a.group) ||
        (g.a.start == KC_CLI_START_OFFSET && g.a.start_value >= high))
        atomic_store(&p->done, 1);
    return 0;
}

/* Manual assignment: every partition of each -t (or -p's). With -e the end marks are learned
 * before the assignment, so no record past them can be printed before they are known. */
static int assign_all(void)
{
    kc_topic_partition_t *tps = NULL;
    size_t n = 0;
    kc_error_t e;
    for (size_t t = 0; t < g.a.n_topics; t++) {
        int32_t count = 1, first = g.a.partition;
        if (first < 0) {
            first = 0;
            if (kc_topic_partitions(g.c, g.a.topics[t], &count, META_TIMEOUT_MS, &e) != KC_OK) {
                fprintf(stderr, "kconsume: topic '%s': %s\n", g.a.topics[t], e.msg);
                free(tps);
                return -1;
            }
        }
        kc_topic_partition_t *more = realloc(tps, (n + (size_t)count) * sizeof *tps);
        if (!more) {
            free(tps);
            return -1;
        }
        tps = more;
        for (int32_t i = 0; i < count; i++) {
            part_t *p = part_get(g.a.topics[t], first + i);
            if (!p) {
                free(tps);
                return -1;
            }
            atomic_store(&p->assigned, 1);
            if (g.a.exit_at_end)
                (void)learn_end(p); /* on failure, all_at_end asks again */
            tps[n++] = (kc_topic_partition_t){g.a.topics[t], first + i, start_offset()};
        }
    }
    kc_err_t rc = kc_assign(g.c, tps, n, &e);
    free(tps);
    if (rc != KC_OK) {
        fprintf(stderr, "kconsume: assign: %s\n", e.msg);
        return -1;
    }
    return 0;
}

/* -G: partitions handed to this member whose delivery position is still unknown (nothing
 * delivered yet: the library resolved the start from the group's committed offset, and
 * kc_position answers only after a delivery). A partition handed over already at its end never
 * delivers a record, so its committed offset is asked instead (one batched, blocking question at
 * most once a second, main thread). Committed at or past the end: nothing below the end is left
 * for anyone, and nothing past it is printed. */
static void committed_ends(part_t **ps, size_t n)
{
    static uint64_t last;
    kc_topic_partition_t tps[256];
    if (n == 0 || now_ns() - last < 1000000000u)
        return;
    last = now_ns();
    if (n > sizeof tps / sizeof *tps)
        n = sizeof tps / sizeof *tps;
    for (size_t i = 0; i < n; i++)
        tps[i] = (kc_topic_partition_t){ps[i]->topic, ps[i]->partition, KC_OFFSET_INVALID};
    if (kc_committed(g.c, tps, n, META_TIMEOUT_MS, NULL) != KC_OK)
        return; /* asked again in a second */
    for (size_t i = 0; i < n; i++)
        if (tps[i].offset >= 0 && tps[i].offset >= atomic_load(&ps[i]->end))
            atomic_store(&ps[i]->done, 1);
}

/* Returns 1 when every assigned partition is done and at least one is assigned. Asks the
 * watermarks of newly assigned partitions (blocking, so here on the main thread and never in a
 * callback). */
static int all_at_end(void)
{
    part_t *snap[4096];
    size_t n = 0;
    pthread_mutex_lock(&g.reg_mu);
    for (part_t *p = g.parts; p && n < sizeof snap / sizeof *snap; p = p->next)
        snap[n++] = p; /* entries are never freed while running: safe to use unlocked */
    pthread_mutex_unlock(&g.reg_mu);
    size_t assigned = 0, done = 0, n_unknown = 0;
    part_t *unknown[256];
    for (size_t i = 0; i < n; i++) {
        part_t *p = snap[i];
        if (!atomic_load(&p->assigned))
            continue;
        assigned++;
        if (atomic_load(&p->done)) {
            done++;
            continue;
        }
        if (atomic_load(&p->end) < 0 && learn_end(p))
            continue;
        int64_t pos = -1;
        if (!atomic_load(&p->done) &&
            kc_position(g.c, p->topic, p->partition, &pos, NULL) == KC_OK && pos >= 0 &&
            pos >= atomic_load(&p->end))
            atomic_store(&p->done, 1);
        else if (g.a.group && pos < 0 && atomic_load(&p->end) >= 0 &&
                 n_unknown < sizeof unknown / sizeof *unknown)
            unknown[n_unknown++] = p;
        done += (size_t)atomic_load(&p->done);
    }
    if (done < assigned)
        committed_ends(unknown, n_unknown);
    return assigned > 0 && done == assigned;
}

/* ---- main ------------------------------------------------------------------------------------ */

static int row_cmp(const void *a, const void *b)
{
    const kc_cli_live_row_t *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* One --live frame on stderr. On a terminal it redraws in place (cursor up over the previous
 * frame); otherwise it prints a frame every 2 s so logs stay readable. */
static void live_frame(uint64_t t0, int final)
{
    static int prev_lines, frames;
    static uint64_t last;
    int ansi = isatty(STDERR_FILENO);
    if (!ansi && !final && frames++ % 4)
        return;
    uint64_t now = now_ns();
    double dt = last ? (double)(now - last) / 1e9 : 0;
    last = now;
    kc_cli_live_row_t rows[1024];
    size_t n = 0;
    pthread_mutex_lock(&g.reg_mu);
    for (part_t *p = g.parts; p && n < sizeof rows / sizeof *rows; p = p->next) {
        if (!atomic_load(&p->assigned) && !final)
            continue;
        int64_t recs = atomic_load_explicit(&p->recs, memory_order_relaxed);
        rows[n++] = (kc_cli_live_row_t){p->topic,
                                        p->partition,
                                        atomic_load_explicit(&p->pos, memory_order_relaxed),
                                        atomic_load(&p->end),
                                        recs,
                                        dt > 0 ? (double)(recs - p->prev_recs) / dt : 0,
                                        atomic_load_explicit(&p->worker, memory_order_relaxed)};
        p->prev_recs = recs;
    }
    pthread_mutex_unlock(&g.reg_mu);
    qsort(rows, n, sizeof *rows, row_cmp);
    kc_cli_buf_t b = {0};
    char up[32];
    if (ansi && prev_lines)
        kc_cli_buf_put(&b, up, (size_t)snprintf(up, sizeof up, "\x1b[%dA", prev_lines));
    int lines = kc_cli_live_render(&b, rows, n, (double)(now_ns() - t0) / 1e9, ansi);
    if (lines > 0) {
        ssize_t wr = write(STDERR_FILENO, b.p, b.len);
        (void)wr; /* a display: nothing to do if the terminal is gone */
        prev_lines = lines;
    }
    kc_cli_buf_free(&b);
}

static void print_summary(uint64_t t0)
{
    double secs = (double)(now_ns() - t0) / 1e9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    int64_t recs = atomic_load(&g.printed);
    double mb = (double)atomic_load(&g.bytes) / 1e6;
    fprintf(stderr,
            "kconsume: %" PRId64 " records, %.1f MB, %.2f s, %.0f records/s, %.2f CPU s per "
            "million records (%.2f CPU s)\n",
            recs, mb, secs, secs > 0 ? (double)recs / secs : 0.0,
            recs > 0 ? cpu * 1e6 / (double)recs : 0.0, cpu);
}

/* Orderly stop: in-flight callbacks finish (their lines are written), on_revoke, final commit
 * (group mode, auto-commit), leave the group. */
static int shutdown_consumer(void)
{
    kc_error_t e;
    if (kc_close(g.c, CLOSE_TIMEOUT_MS, &e) != KC_OK) {
        fprintf(stderr, "kconsume: close: %s\n", e.msg);
        return -1;
    }
    return 0;
}

static void free_all(void)
{
    for (part_t *p = g.parts, *next; p; p = next) {
        next = p->next;
        free(p->topic);
        free(p);
    }
    for (worker_t *w = g.workers, *next; w; w = next) {
        next = w->next;
        kc_cli_buf_free(&w->buf);
        free(w);
    }
    g.parts = NULL;
    g.workers = NULL;
    kc_cli_fmt_free(&g.fmt);
    kc_cli_args_free(&g.a);
    if (g.stats_fd > 2)
        close(g.stats_fd);
}

static int run(void)
{
    kc_error_t e;
    kc_conf_t *conf = kc_conf_new();
    if (!conf) {
        fprintf(stderr, "kconsume: out of memory\n");
        return KC_CLI_EXIT_RUNTIME;
    }
    if (kc_cli_build_conf(conf, &g.a, g.client_id, sizeof g.client_id)) {
        kc_conf_destroy(conf);
        return KC_CLI_EXIT_CONFIG;
    }
    kc_callbacks_t cbs = {.on_assign = on_assign,
                          .on_records = on_records,
                          .on_revoke = on_gone,
                          .on_lost = on_gone,
                          .on_event = on_event};
    kc_err_t rc = kc_consumer_new(conf, &cbs, &g.c, &e);
    if (rc != KC_OK) {
        kc_conf_destroy(conf);
        fprintf(stderr, "kconsume: %s\n", e.msg);
        return rc == KC_ERR_CONFIG ? KC_CLI_EXIT_CONFIG : KC_CLI_EXIT_RUNTIME;
    }
    uint64_t t0 = now_ns();
    if (g.a.group)
        rc = kc_subscribe(g.c, g.a.topics, g.a.n_topics, &e);
    else
        rc = assign_all() ? KC_ERR_NOT_FOUND : KC_OK;
    if (rc != KC_OK) {
        if (g.a.group)
            fprintf(stderr, "kconsume: subscribe: %s\n", e.msg);
        request_stop(KC_CLI_EXIT_RUNTIME);
    }

    uint64_t next_frame = t0;
    while (atomic_load(&g.stop_code) < 0 && !g_signal) {
        nanosleep(&(struct timespec){0, 50 * 1000000}, NULL);
        if (g.a.exit_at_end && all_at_end())
            request_stop(KC_CLI_EXIT_OK);
        if (g.a.live && now_ns() >= next_frame) {
            live_frame(t0, 0);
            next_frame = now_ns() + 500000000u;
        }
    }
    int code = g_signal ? 128 + g_signal : atomic_load(&g.stop_code);
    if (shutdown_consumer() && code == KC_CLI_EXIT_OK)
        code = KC_CLI_EXIT_RUNTIME;
    if (g.a.live)
        live_frame(t0, 1);
    if (g.a.summary)
        print_summary(t0);
    kc_destroy(g.c);
    g.c = NULL;
    return code;
}

int main(int argc, char **argv)
{
    char why[512];
    atomic_init(&g.stop_code, -1);
    if (kc_cli_args_parse(&g.a, argc, argv, why, sizeof why) != KC_CLI_EXIT_OK) {
        fprintf(stderr, "kconsume: %s\nTry 'kconsume --help' for the flags.\n", why);
        kc_cli_args_free(&g.a);
        return KC_CLI_EXIT_USAGE;
    }
    if (g.a.help) {
        kc_cli_usage(stdout);
        kc_conf_print_reference(stdout, 0);
        kc_cli_args_free(&g.a);
        return KC_CLI_EXIT_OK;
    }
    if (g.a.version) {
        printf("kconsume %s\n", kc_version());
        kc_cli_args_free(&g.a);
        return KC_CLI_EXIT_OK;
    }
    if (kc_cli_fmt_compile(&g.fmt, g.a.format, why, sizeof why)) {
        fprintf(stderr, "kconsume: -f: %s\nTry 'kconsume --help' for the flags.\n", why);
        kc_cli_args_free(&g.a);
        return KC_CLI_EXIT_USAGE;
    }
    if (g.a.stats_file) {
        g.stats_fd =
            open(g.a.stats_file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (g.stats_fd < 0) {
            fprintf(stderr, "kconsume: --stats: cannot open '%s': %s\n", g.a.stats_file,
                    strerror(errno));
            free_all();
            return KC_CLI_EXIT_USAGE;
        }
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* EPIPE from write(2) instead: the reader left */

    int code = run();
    free_all();
    return code;
}
