/*
 * kconsume CLI: the --live per-partition view (redrawn in place on a terminal) and the end-of-run
 * summary, both on stderr.
 *
 * Owner: the main thread (frame state is function-static there); rows are read from the
 * registry under reg_mu, counters with relaxed loads (a display needs untorn values only).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "app.h"
#include "cli/live.h"

static int row_cmp(const void *a, const void *b)
{
    const kc_cli_live_row_t *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* One --live frame on stderr. On a terminal it redraws in place (cursor up over the previous
 * frame); otherwise it prints a frame every 2 s so logs stay readable. */
void kc_app_live_frame(uint64_t t0, int final)
{
    static int prev_lines, frames;
    static uint64_t last;
    int ansi = isatty(STDERR_FILENO);
    if (!ansi && !final && frames++ % 4)
        return;
    uint64_t now = kc_app_now_ns();
    double dt = last ? (double)(now - last) / 1e9 : 0;
    last = now;
    kc_cli_live_row_t rows[1024];
    size_t n = 0;
    pthread_mutex_lock(&kc_app.reg_mu);
    for (part_t *p = kc_app.parts; p && n < sizeof rows / sizeof *rows; p = p->next) {
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
    pthread_mutex_unlock(&kc_app.reg_mu);
    qsort(rows, n, sizeof *rows, row_cmp);
    kc_cli_buf_t b = {0};
    char up[32];
    if (ansi && prev_lines)
        kc_cli_buf_put(&b, up, (size_t)snprintf(up, sizeof up, "\x1b[%dA", prev_lines));
    int lines = kc_cli_live_render(&b, rows, n, (double)(kc_app_now_ns() - t0) / 1e9, ansi);
    if (lines > 0) {
        ssize_t wr = write(STDERR_FILENO, b.p, b.len);
        (void)wr; /* a display: nothing to do if the terminal is gone */
        prev_lines = lines;
    }
    kc_cli_buf_free(&b);
}

void kc_app_print_summary(uint64_t t0)
{
    double secs = (double)(kc_app_now_ns() - t0) / 1e9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    int64_t recs = atomic_load(&kc_app.printed);
    double mb = (double)atomic_load(&kc_app.bytes) / 1e6;
    fprintf(stderr,
            "kconsume: %" PRId64 " records, %.1f MB, %.2f s, %.0f records/s, %.2f CPU s per "
            "million records (%.2f CPU s)\n",
            recs, mb, secs, secs > 0 ? (double)recs / secs : 0.0,
            recs > 0 ? cpu * 1e6 / (double)recs : 0.0, cpu);
}
