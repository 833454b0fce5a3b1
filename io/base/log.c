/* Process-wide logger: see log.h. */
#include "base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"

/* The sink: written once by kc_log_configure before threads start, then only read. The level
 * also moves later (kc_log_raise, from log.level at consumer creation): an atomic read relaxed,
 * since a line emitted or dropped around the change orders nothing else. */
static kc_log_sink_fn g_sink;
static void *g_sink_opaque;
static _Atomic int g_max_level = KC_LOG_WARN;

void kc_log_configure(kc_log_sink_fn sink, void *opaque, int max_level)
{
    g_sink = sink;
    g_sink_opaque = opaque;
    atomic_store_explicit(&g_max_level, max_level, memory_order_relaxed);
}

void kc_log_raise(int max_level)
{
    int cur = atomic_load_explicit(&g_max_level, memory_order_relaxed);
    while (max_level > cur &&
           !atomic_compare_exchange_weak_explicit(&g_max_level, &cur, max_level,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

int kc_log_enabled(int level)
{
    return level <= atomic_load_explicit(&g_max_level, memory_order_relaxed);
}

static const char *level_name(int level)
{
    switch (level) {
    case KC_LOG_ERROR:
        return "ERROR";
    case KC_LOG_WARN:
        return "WARN";
    case KC_LOG_INFO:
        return "INFO";
    default:
        return "DEBUG";
    }
}

void kc_log(int level, const char *subsystem, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (!kc_log_enabled(level))
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (g_sink) {
        g_sink(g_sink_opaque, level, subsystem, line);
        return;
    }
    char out[1200];
    int64_t ms = kc_now_ms();
    int n = snprintf(out, sizeof out, "%lld.%03lld kconsume %s [%s] %s\n", (long long)(ms / 1000),
                     (long long)(ms % 1000), level_name(level), subsystem, line);
    if (n > 0) {
        size_t len = (size_t)n < sizeof out ? (size_t)n : sizeof out - 1;
        ssize_t w = write(STDERR_FILENO, out, len); /* one write: lines never interleave */
        (void)w;
    }
}
