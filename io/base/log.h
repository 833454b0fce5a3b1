/*
 * Logging. One sink per process-wide logger (default: stderr with a monotonic timestamp). Any
 * thread: each line is written with a
 * single write(2) so lines from different threads never interleave.
 *
 * Never log credentials: SASL passwords, TLS key passwords and tokens stay out of every message.
 */
#ifndef KC_BASE_LOG_H
#define KC_BASE_LOG_H

#include "base/err.h"

typedef enum kc_log_level {
    KC_LOG_ERROR = 3,
    KC_LOG_WARN = 4,
    KC_LOG_INFO = 6,
    KC_LOG_DEBUG = 7,
} kc_log_level_t;

typedef void (*kc_log_sink_fn)(void *opaque, int level, const char *subsystem, const char *line);

/* Installs a sink (NULL restores stderr) and the most verbose level that is emitted. Call before
 * starting threads that log; the pair is read without locks afterwards. */
void kc_log_configure(kc_log_sink_fn sink, void *opaque, int max_level);

/* Makes the logger at least as verbose as `max_level` (never less): the consumer applies its
 * log.level here. The logger is one per process, so with several consumers the most verbose
 * level any of them asked for holds. Any thread. */
void kc_log_raise(int max_level);

/* Logs one line. `subsystem` is a short tag ("conn", "fetch", "group"). */
void kc_log(int level, const char *subsystem, const char *fmt, ...) KC_PRINTF(3, 4);

int kc_log_enabled(int level);

#endif
