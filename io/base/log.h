/*
 * Logging. A line goes to the logger bound to the calling thread (kc_log_bind): each consumer
 * owns one (its log callback, its log.level, its client.id as the name) and binds it on the
 * threads it starts, so two consumers in one process log at their own levels into their own
 * callbacks. A thread with no bound logger (an app thread, a test) uses the process-wide one
 * (default: stderr at WARN; kc_log_configure). With no callback a line goes to stderr with a
 * monotonic timestamp, in a single write(2) so lines from different threads never interleave.
 * The levels are the public ones (kconsume.h, KC_LOG_*).
 *
 * Never log credentials: SASL passwords, TLS key passwords and tokens stay out of every message.
 */
#ifndef KC_BASE_LOG_H
#define KC_BASE_LOG_H

#include "base/err.h"

/* The process-wide sink of threads with no bound logger. */
typedef void (*kc_log_sink_fn)(void *opaque, int level, const char *subsystem, const char *line);

/* One consumer's logger. Owner: the consumer; filled by kc_logger_init before any thread that
 * binds it starts, read-only afterwards (pthread_create orders the writes before the reads). */
typedef struct kc_logger {
    kc_log_cb_t cb; /* NULL: stderr */
    void *opaque;
    int max_level;
    char name[128]; /* client.id, truncated */
} kc_logger_t;

void kc_logger_init(kc_logger_t *lg, kc_log_cb_t cb, void *opaque, int max_level, const char *name);

/* Binds `lg` to the calling thread until the next bind (NULL: back to the process-wide one);
 * returns the one bound before. `lg` must outlive the binding. */
const kc_logger_t *kc_log_bind(const kc_logger_t *lg);

/* Installs the process-wide sink (NULL restores stderr) and the most verbose level it emits.
 * Call before starting threads that log; the sink is read without locks afterwards. */
void kc_log_configure(kc_log_sink_fn sink, void *opaque, int max_level);

/* Logs one line. `subsystem` is a short tag ("conn", "fetch", "group"). */
void kc_log(int level, const char *subsystem, const char *fmt, ...) KC_PRINTF(3, 4);

/* Whether a line at `level` would be emitted on this thread. */
int kc_log_enabled(int level);

#endif
