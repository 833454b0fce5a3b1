/* Loggers: see log.h. */
#include "base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"

/* The process-wide sink: written once by kc_log_configure before threads start, then only read.
 * Its level is an atomic read relaxed: a line emitted or dropped around a change orders nothing
 * else. */
static kc_log_sink_fn g_sink;
static void *g_sink_opaque;
static _Atomic int g_max_level = KC_LOG_WARN;

/* The calling thread's logger: each thread sees only its own, so no ordering is involved. */
static _Thread_local const kc_logger_t *tl_logger;

void kc_logger_init(kc_logger_t *lg, kc_log_cb_t cb, void *opaque, int max_level, const char *name)
{
    lg->cb = cb;
    lg->opaque = opaque;
    lg->max_level = max_level;
    snprintf(lg->name, sizeof lg->name, "%s", name ? name : "");
}

const kc_logger_t *kc_log_bind(const kc_logger_t *lg)
{
    const kc_logger_t *prev = tl_logger;
    tl_logger = lg;
    return prev;
}

void kc_log_configure(kc_log_sink_fn sink, void *opaque, int max_level)
{
    g_sink = sink;
    g_sink_opaque = opaque;
    atomic_store_explicit(&g_max_level, max_level, memory_order_relaxed);
}

int kc_log_enabled(int level)
{
    const kc_logger_t *lg = tl_logger;
    return level <= (lg ? lg->max_level : atomic_load_explicit(&g_max_level, memory_order_relaxed));
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

/* One line on stderr: "<s.ms> kconsume LEVEL [subsystem] message", the logger's name after the
 * level when there is one. client.id may hold anything: its control characters print as '?',
 * so one line stays one line. */
static void to_stderr(int level, const char *name, const char *subsystem, const char *line)
{
    char safe[sizeof((kc_logger_t *)0)->name];
    size_t k = 0;
    for (; name && name[k] && k + 1 < sizeof safe; k++)
        safe[k] = (unsigned char)name[k] < 0x20 || name[k] == 0x7f ? '?' : name[k];
    safe[k] = '\0';
    name = safe;
    char out[1200];
    int64_t ms = kc_now_ms();
    int n = snprintf(out, sizeof out, "%lld.%03lld kconsume %s%s%s [%s] %s\n",
                     (long long)(ms / 1000), (long long)(ms % 1000), level_name(level),
                     name && *name ? " " : "", name ? name : "", subsystem, line);
    if (n > 0) {
        size_t len = (size_t)n < sizeof out ? (size_t)n : sizeof out - 1;
        ssize_t w = write(STDERR_FILENO, out, len); /* one write: lines never interleave */
        (void)w;
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
    const kc_logger_t *lg = tl_logger;
    if (lg) {
        if (lg->cb)
            lg->cb(lg->opaque, level, subsystem, lg->name, line);
        else
            to_stderr(level, lg->name, subsystem, line);
        return;
    }
    if (g_sink)
        g_sink(g_sink_opaque, level, subsystem, line);
    else
        to_stderr(level, NULL, subsystem, line);
}
