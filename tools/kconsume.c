/*
 * kconsume: the command-line consumer (like kcat -C). A user of the public API only: nothing here
 * includes an internal header, so it shows what the API can and cannot do.
 *
 * Threads and ownership:
 *  - main thread: parses flags, builds the config, creates the consumer, assigns or subscribes,
 *    then loops (signals, -e end checks, periodic commits) until something asks it to stop; then
 *    closes. It owns `kc_app.a`, `kc_app.c` and the lifetime of every part_t.
 *  - workers (the library's): on_assign/on_records/on_revoke/on_lost/on_event. Each worker
 *    renders into its own buffer (worker_t, found through a thread-local) and writes each batch
 *    with one write(2) under out_mu, so lines of concurrent workers never interleave.
 *  - shared: the partition registry (reg_mu), the counters and the stop code (atomics, noted
 *    where they are declared in tools/app/app.h).
 * This file: callbacks, output and the main loop; tools/app/state.c the shared state
 * (kc_app) and its stop code; tools/app/parts.c the partition registry;
 * tools/app/ends.c the start-up assignment and -e end checks; tools/app/view.c the --live view
 * and the summary.
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
#include <time.h>
#include <unistd.h>

#include "kconsume.h"

#include "cli/args.h"
#include "cli/format.h"
#include "cli/live.h"
#include "cli/setup.h"
#include "app/app.h"

#define FLUSH_BYTES 65536 /* a worker writes out mid-batch past this (at a line boundary) */

static volatile sig_atomic_t g_signal;
static _Thread_local worker_t *tl_worker;

static void on_signal(int sig)
{
    if (g_signal) /* second signal: the user does not want to wait for a clean close */
        _exit(128 + sig);
    g_signal = sig;
}

/* ---- output ---------------------------------------------------------------------------------- */

static void write_out(const char *p, size_t n)
{
    pthread_mutex_lock(&kc_app.out_mu);
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            /* EPIPE: the reader left (| head): a normal way to stop, not an error. */
            int e = errno;
            if (e != EPIPE)
                fprintf(stderr, "kconsume: writing the output: %s\n", strerror(e));
            kc_app_request_stop(e == EPIPE ? KC_CLI_EXIT_OK : KC_CLI_EXIT_RUNTIME);
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    pthread_mutex_unlock(&kc_app.out_mu);
}

static worker_t *this_worker(void)
{
    if (tl_worker)
        return tl_worker;
    worker_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    pthread_mutex_lock(&kc_app.reg_mu);
    /* The library's worker id (kc_worker_id): the number stats report as workers[].id and
     * partitions[].worker, so %w and --live agree with the stats file. */
    w->id = kc_worker_id();
    w->next = kc_app.workers;
    kc_app.workers = w;
    pthread_mutex_unlock(&kc_app.reg_mu);
    tl_worker = w;
    return w;
}

/* ---- callbacks (workers) --------------------------------------------------------------------- */

static void on_assign(void *opaque, kc_part_t *kp)
{
    (void)opaque;
    part_t *p = kc_app_part_get(kp->topic, kp->partition);
    if (!p) {
        fprintf(stderr, "kconsume: out of memory\n");
        kc_app_request_stop(KC_CLI_EXIT_RUNTIME);
        return;
    }
    kp->app = p;
    atomic_store(&p->assigned, 1);
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

/* -s: the deserialized text of one key or value into the worker's buffer `out`, which the
 * record's view then points at. Bytes that do not fit the spec are printed as they are, with
 * one line on stderr saying why (not with -q). 0, or -1 out of memory. */
static int deserialize(const kc_cli_serdes_t *sd, kc_cli_rec_t *rec, int is_key, kc_cli_buf_t *out)
{
    const void **data = is_key ? &rec->key : &rec->value;
    size_t *len = is_key ? &rec->key_len : &rec->value_len;
    if (!sd || !*data)
        return 0; /* a null key or value stays null */
    char why[160];
    out->len = 0;
    int rc = kc_cli_serdes_render(sd, *data, *len, out, why, sizeof why);
    if (rc == -2)
        return -1;
    if (rc == -1) {
        if (!kc_app.a.quiet)
            fprintf(stderr, "kconsume: %s[%d] offset %" PRId64 ": %s is not -s %s: %s\n",
                    rec->topic, rec->partition, rec->offset, is_key ? "key" : "value", sd->spec,
                    why);
        return 0;
    }
    *data = out->p ? out->p : "";
    *len = out->len;
    return 0;
}

/* Ends the view before `next` (the first record not printed) and pauses the partition: the
 * runtime's committable offset is the end of what was delivered, so a record pulled from the view
 * but not printed must not count as delivered. kc_seek from on_records ends the current view.
 * A share group has no offsets: the records not printed (`unprinted`, the one pulled but not
 * printed, or NULL, and the rest of the view) are released for another member instead, and
 * only the printed ones are accepted with the pause. */
static kc_cb_result_t stop_before(kc_part_t *kp, kc_records_t *batch, const kc_record_t *unprinted,
                                  int64_t next)
{
    if (kc_app.a.share) {
        const kc_record_t *x = unprinted;
        for (; x || (x = kc_records_next(batch)); x = NULL)
            (void)kc_share_ack(batch, x, KC_SHARE_RELEASE, NULL);
    } else if (kc_app.a.group) { /* only commits care, and without -G nothing is committed */
        (void)kc_seek(kc_app.c, kp->topic, kp->partition, KC_SEEK_OFFSET, next, NULL);
    }
    return KC_CB_PAUSE;
}

static kc_cb_result_t on_records(void *opaque, kc_part_t *kp, kc_records_t *batch)
{
    (void)opaque;
    uint64_t t0 = kc_app_now_ns();
    part_t *p = kp->app;
    worker_t *w = this_worker();
    if (!w) {
        fprintf(stderr, "kconsume: out of memory\n");
        kc_app_request_stop(KC_CLI_EXIT_RUNTIME);
        return KC_CB_RETRY; /* not delivered; the stop closes the consumer */
    }
    char member[256] = "";
    if (kc_cli_fmt_uses(&kc_app.fmt, KC_CLI_MEMBER) &&
        (kc_member_id(kc_app.c, member, sizeof member) != KC_OK || !member[0]))
        snprintf(member, sizeof member, "%s", kc_app.client_id);
    kc_cli_rec_t rec = {.topic = kp->topic,
                        .partition = kp->partition,
                        .worker = w->id,
                        .member = member,
                        .delivery_count = kc_records_delivery_count(batch),
                        .cb_start_ns = t0,
                        .ts_type = kc_records_timestamp_type(batch),
                        .broker = kc_records_broker(batch),
                        .hdr_next = kc_cli_fmt_uses(&kc_app.fmt, KC_CLI_HEADERS) ||
                                            kc_cli_fmt_uses(&kc_app.fmt, KC_CLI_JSON)
                                        ? hdr_next
                                        : NULL};
    int64_t end =
        p && kc_app_ends_matter() ? atomic_load_explicit(&p->end, memory_order_relaxed) : -1;
    int64_t n = 0;
    uint64_t bytes = 0;
    kc_cb_result_t res = KC_CB_CONTINUE;
    const kc_record_t *r;
    while ((r = kc_records_next(batch)) != NULL) {
        rec.offset = kc_record_offset(r);
        rec.timestamp = kc_record_timestamp(r);
        /* Past the end observed at start, or (-o e@MS) the first record that late. */
        if ((end >= 0 && rec.offset >= end) ||
            (kc_app.a.stop_ts >= 0 && rec.timestamp >= kc_app.a.stop_ts)) {
            if (p)
                atomic_store(&p->done, 1);
            res = stop_before(kp, batch, r, rec.offset);
            break;
        }
        /* -c: claim a slot before printing, so exactly COUNT records are printed in total. */
        if (kc_app.a.count && atomic_fetch_add(&kc_app.reserved, 1) >= kc_app.a.count) {
            res = stop_before(kp, batch, r, rec.offset);
            break;
        }
        rec.key = kc_record_key(r, &rec.key_len);
        rec.value = kc_record_value(r, &rec.value_len);
        rec.hdr_src = r;
        if (deserialize(kc_app.key_sd, &rec, 1, &w->key) ||
            deserialize(kc_app.value_sd, &rec, 0, &w->value) ||
            kc_cli_fmt_render(&kc_app.fmt, &rec, &w->buf)) {
            fprintf(stderr, "kconsume: out of memory formatting a record\n");
            kc_app_request_stop(KC_CLI_EXIT_RUNTIME);
            res = stop_before(kp, batch, r, rec.offset);
            break;
        }
        n++;
        bytes += rec.key_len + rec.value_len;
        /* --share-verdict: what the broker hears of every printed record (default accept) */
        if (kc_app.a.share_verdict)
            (void)kc_share_ack(batch, r, (kc_share_verdict_t)kc_app.a.share_verdict, NULL);
        if (w->buf.len >= FLUSH_BYTES) {
            write_out(w->buf.p, w->buf.len);
            w->buf.len = 0;
        }
        if (end >= 0 && rec.offset + 1 >= end) {
            atomic_store(&p->done, 1);
            res = stop_before(kp, batch, NULL, rec.offset + 1);
            break;
        }
    }
    if (w->buf.len) {
        write_out(w->buf.p, w->buf.len);
        w->buf.len = 0;
    }
    atomic_fetch_add(&kc_app.bytes, bytes);
    if (p && n > 0) {
        atomic_fetch_add_explicit(&p->recs, n, memory_order_relaxed);
        atomic_store_explicit(&p->pos, rec.offset + 1, memory_order_relaxed);
        atomic_store_explicit(&p->worker, w->id, memory_order_relaxed);
    }
    /* --work-us: the record's "processing", after its line is out and before the callback
     * returns, so the offset becomes committable only once the work is done, as in a real app. */
    if (kc_app.a.work_us > 0 && n > 0) {
        int64_t us = kc_app.a.work_us * n;
        nanosleep(&(struct timespec){us / 1000000, (us % 1000000) * 1000}, NULL);
    }
    /* Counted after the write: once printed reaches COUNT, every counted line is out. */
    if (atomic_fetch_add(&kc_app.printed, n) + n >= kc_app.a.count && kc_app.a.count)
        kc_app_request_stop(KC_CLI_EXIT_OK);
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
            ssize_t wr = write(kc_app.stats_fd, line, len + 1);
            (void)wr; /* stats are best effort: a full disk must not stop consumption */
            free(line);
        }
    } else if (ev->type == KC_EVENT_ERROR && ev->error) {
        /* KC_ERR_UNSUPPORTED: a broker with no version in common for an API the consumer needs
         * (the message names it and both ranges); retrying never changes that. */
        int fatal = ev->error->code == KC_ERR_FATAL || ev->error->code == KC_ERR_UNSUPPORTED;
        if (fatal || !kc_app.a.quiet)
            fprintf(stderr, "kconsume: %s%s: %s\n", fatal ? "fatal: " : "",
                    kc_err_name(ev->error->code), ev->error->msg);
        if (fatal)
            kc_app_request_stop(KC_CLI_EXIT_RUNTIME);
    } else if (ev->type == KC_EVENT_SHARE_ACK && ev->error && !kc_app.a.quiet) {
        /* --share: a verdict that did not count (the records will be handed out again) */
        fprintf(stderr, "kconsume: %s: %s\n", kc_err_name(ev->error->code), ev->error->msg);
    }
}

/* ---- main ------------------------------------------------------------------------------------ */

/* Orderly stop: in-flight callbacks finish (their lines are written), on_revoke, final commit
 * (group mode, auto-commit), leave the group. */
static int shutdown_consumer(void)
{
    kc_error_t e;
    if (kc_close(kc_app.c, CLOSE_TIMEOUT_MS, &e) != KC_OK) {
        fprintf(stderr, "kconsume: close: %s\n", e.msg);
        return -1;
    }
    return 0;
}

static void free_all(void)
{
    for (part_t *p = kc_app.parts, *next; p; p = next) {
        next = p->next;
        free(p->topic);
        free(p);
    }
    for (worker_t *w = kc_app.workers, *next; w; w = next) {
        next = w->next;
        kc_cli_buf_free(&w->buf);
        kc_cli_buf_free(&w->key);
        kc_cli_buf_free(&w->value);
        free(w);
    }
    kc_app.parts = NULL;
    memset(kc_app.part_buckets, 0, sizeof kc_app.part_buckets);
    kc_app.workers = NULL;
    kc_cli_fmt_free(&kc_app.fmt);
    kc_cli_args_free(&kc_app.a);
    if (kc_app.stats_fd > 2)
        close(kc_app.stats_fd);
}

static int run(void)
{
    kc_error_t e;
    kc_conf_t *conf = kc_conf_new();
    if (!conf) {
        fprintf(stderr, "kconsume: out of memory\n");
        return KC_CLI_EXIT_RUNTIME;
    }
    if (kc_cli_build_conf(conf, &kc_app.a, kc_app.client_id, sizeof kc_app.client_id)) {
        kc_conf_destroy(conf);
        return KC_CLI_EXIT_CONFIG;
    }
    if (kc_app.a.conf_dump) { /* -X dump: what the flags, the file and -X made, as kcat does */
        kc_conf_dump(conf, stdout);
        kc_conf_destroy(conf);
        return KC_CLI_EXIT_OK;
    }
    kc_callbacks_t cbs = {.on_assign = on_assign,
                          .on_records = on_records,
                          .on_revoke = on_gone,
                          .on_lost = on_gone,
                          .on_event = on_event};
    kc_err_t rc = kc_consumer_new(conf, &cbs, &kc_app.c, &e);
    if (rc != KC_OK) {
        kc_conf_destroy(conf);
        fprintf(stderr, "kconsume: %s\n", e.msg);
        return rc == KC_ERR_CONFIG ? KC_CLI_EXIT_CONFIG : KC_CLI_EXIT_RUNTIME;
    }
    if (kc_app.a.list || kc_app.a.query) {
        int code = kc_app.a.list ? kc_app_list() : kc_app_query();
        if (shutdown_consumer() && code == KC_CLI_EXIT_OK)
            code = KC_CLI_EXIT_RUNTIME;
        kc_destroy(kc_app.c);
        kc_app.c = NULL;
        return code;
    }
    if (kc_app.a.metrics_port && kc_app_metrics_start(kc_app.a.metrics_port)) {
        kc_destroy(kc_app.c);
        kc_app.c = NULL;
        return KC_CLI_EXIT_RUNTIME;
    }
    uint64_t t0 = kc_app_now_ns();
    int start_code = kc_app.a.group && kc_app_ends_matter() ? kc_app_learn_group_ends() : 0;
    if (start_code) {
        kc_app_request_stop(start_code);
    } else if (kc_app.a.group) {
        rc = kc_subscribe(kc_app.c, kc_app.a.topics, kc_app.a.n_topics, &e);
        if (rc != KC_OK) {
            fprintf(stderr, "kconsume: subscribe: %s\n", e.msg);
            kc_app_request_stop(KC_CLI_EXIT_RUNTIME);
        }
    } else if ((start_code = kc_app_assign_all()) != 0) {
        kc_app_request_stop(start_code);
    }

    uint64_t next_frame = t0;
    while (atomic_load(&kc_app.stop_code) < 0 && !g_signal) {
        nanosleep(&(struct timespec){0, 50 * 1000000}, NULL);
        if (kc_app_ends_matter() && kc_app_all_at_end())
            kc_app_request_stop(KC_CLI_EXIT_OK);
        if (kc_app.a.live && kc_app_now_ns() >= next_frame) {
            kc_app_live_frame(t0, 0);
            next_frame = kc_app_now_ns() + 500000000u;
        }
    }
    int code = g_signal ? 128 + g_signal : atomic_load(&kc_app.stop_code);
    if (shutdown_consumer() && code == KC_CLI_EXIT_OK)
        code = KC_CLI_EXIT_RUNTIME;
    if (kc_app.a.live)
        kc_app_live_frame(t0, 1);
    if (kc_app.a.summary)
        kc_app_print_summary(t0);
    kc_app_metrics_stop();
    kc_destroy(kc_app.c);
    kc_app.c = NULL;
    return code;
}

int main(int argc, char **argv)
{
    char why[512];
    atomic_init(&kc_app.stop_code, -1);
    if (kc_cli_args_parse(&kc_app.a, argc, argv, why, sizeof why) != KC_CLI_EXIT_OK) {
        fprintf(stderr, "kconsume: %s\nTry 'kconsume --help' for the flags.\n", why);
        kc_cli_args_free(&kc_app.a);
        return KC_CLI_EXIT_USAGE;
    }
    if (kc_app.a.help) {
        kc_cli_usage(stdout);
        kc_conf_print_reference(stdout, 0);
        kc_cli_args_free(&kc_app.a);
        return KC_CLI_EXIT_OK;
    }
    if (kc_app.a.conf_list) { /* -X list: kcat's name for the key reference */
        kc_conf_print_reference(stdout, 0);
        kc_cli_args_free(&kc_app.a);
        return KC_CLI_EXIT_OK;
    }
    if (kc_app.a.config_reference) {
        kc_conf_print_reference(stdout, 1);
        kc_cli_args_free(&kc_app.a);
        return KC_CLI_EXIT_OK;
    }
    if (kc_app.a.version) {
        printf("kconsume %s\n", kc_version());
        kc_cli_args_free(&kc_app.a);
        return KC_CLI_EXIT_OK;
    }
    if (kc_cli_fmt_compile(&kc_app.fmt, kc_app.a.format, why, sizeof why)) {
        fprintf(stderr, "kconsume: -f: %s\nTry 'kconsume --help' for the flags.\n", why);
        kc_cli_args_free(&kc_app.a);
        return KC_CLI_EXIT_USAGE;
    }
    const char *sd_spec[2] = {kc_app.a.key_serdes, kc_app.a.value_serdes};
    for (int i = 0; i < 2; i++) {
        if (!sd_spec[i])
            continue;
        if (kc_cli_serdes_compile(&kc_app.sd[i], sd_spec[i], why, sizeof why)) {
            fprintf(stderr, "kconsume: %s\nTry 'kconsume --help' for the flags.\n", why);
            free_all();
            return KC_CLI_EXIT_USAGE;
        }
        *(i ? &kc_app.value_sd : &kc_app.key_sd) = &kc_app.sd[i];
    }
    if (kc_app.a.stats_file) {
        kc_app.stats_fd =
            open(kc_app.a.stats_file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (kc_app.stats_fd < 0) {
            fprintf(stderr, "kconsume: --stats: cannot open '%s': %s\n", kc_app.a.stats_file,
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
