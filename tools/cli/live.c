/*
 * --live table rendering (see live.h). Pure; the caller owns the rows and the buffer.
 */
#include "live.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#define BAR 20

static int line(kc_cli_buf_t *out, int ansi, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0)
        return -1;
    size_t len = (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1;
    if (kc_cli_buf_put(out, tmp, len))
        return -1;
    return ansi ? kc_cli_buf_put(out, "\x1b[K\n", 4) : kc_cli_buf_put(out, "\n", 1);
}

int kc_cli_live_render(kc_cli_buf_t *out, const kc_cli_live_row_t *rows, size_t n, double secs,
                       int ansi)
{
    int lines = 0;
    int64_t total = 0, left = 0;
    double rate = 0;
    if (line(out, ansi, "%-24s %9s %9s %8s %10s %6s  %s", "partition", "position", "end", "lag",
             "records/s", "worker", "progress"))
        return -1;
    lines++;
    for (size_t i = 0; i < n; i++) {
        const kc_cli_live_row_t *r = &rows[i];
        char name[64], pos[24] = "-", end[24] = "-", lag[24] = "-", wk[16] = "-";
        char bar[BAR + 3] = "";
        snprintf(name, sizeof name, "%.18s[%" PRId32 "]", r->topic, r->partition);
        if (r->position >= 0)
            snprintf(pos, sizeof pos, "%" PRId64, r->position);
        if (r->worker >= 0)
            snprintf(wk, sizeof wk, "%d", r->worker);
        if (r->end >= 0) {
            /* Before the first record the position is unknown: count the whole end as lag. */
            int64_t at = r->position >= 0 ? r->position : 0, l = r->end > at ? r->end - at : 0;
            snprintf(end, sizeof end, "%" PRId64, r->end);
            snprintf(lag, sizeof lag, "%" PRId64, l);
            left += l;
            int fill = r->end > 0 ? (int)((double)(r->end - l) * BAR / (double)r->end) : BAR;
            bar[0] = '[';
            for (int b = 0; b < BAR; b++)
                bar[1 + b] = b < fill ? '#' : '.';
            bar[BAR + 1] = ']';
            bar[BAR + 2] = 0;
        }
        total += r->records;
        rate += r->rate;
        if (line(out, ansi, "%-24s %9s %9s %8s %10.0f %6s  %s", name, pos, end, lag, r->rate, wk,
                 bar))
            return -1;
        lines++;
    }
    if (line(out, ansi, "%-24s %9" PRId64 " records in %.1f s, %.0f records/s now%s", "total",
             total, secs, rate, left ? "" : (n ? ", nothing left" : "")))
        return -1;
    return lines + 1;
}
