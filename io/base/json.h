/*
 * A JSON text writer: the one place JSON strings are escaped, so every emitter (the consumer's
 * stats object, the group protocols' members of it, the workers' array) quotes a string the same
 * way and none can print a client-chosen id raw. The text grows in one heap buffer; every string
 * value or name a caller did not write itself goes through kc_json_str.
 *
 * Numbers have their own writers (kc_json_i64, kc_json_u64, kc_json_field): the stats object
 * prints about ten numbers per partition on every snapshot, and through vsnprintf those were
 * nearly half of an idle consumer's network-thread CPU at 10,000 partitions (perf record of
 * perf/kc_consume with statistics every 500 ms). kc_json_raw (printf) stays for the rest.
 *
 * Hand-written rather than a DOM library's writer: the stats object is rebuilt every
 * statistics.interval.ms on the network thread, a tree would cost an allocation per value (about
 * ten per partition entry), and the emitters live in three layers that append to one buffer.
 *
 * Owner: the thread that initialised it (no locking).
 */
#ifndef KC_BASE_JSON_H
#define KC_BASE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct kc_json {
    char *p;    /* NUL-terminated text, heap; NULL until the first write */
    size_t n;   /* its length */
    size_t cap; /* bytes allocated */
    bool oom;   /* a write failed for memory: the text is incomplete, kc_json_take gives NULL */
} kc_json_t;

/* An empty writer whose first allocation is `hint` bytes (0: a small default). */
void kc_json_init(kc_json_t *w, size_t hint);
/* Appends printf output as is: numbers, literals, punctuation, names the caller spelt. */
void kc_json_raw(kc_json_t *w, const char *fmt, ...) KC_PRINTF(2, 3);
/* Appends the `len` bytes at s as they are. */
void kc_json_put(kc_json_t *w, const char *s, size_t len);
/* Appends v in decimal, the same text printf's %lld / %llu would give. */
void kc_json_i64(kc_json_t *w, int64_t v);
void kc_json_u64(kc_json_t *w, uint64_t v);
/* Appends `s` as it is: punctuation or a name the caller spelt, never a value from outside.
 * Inline so that a literal's length is known where it is written. */
static inline void kc_json_lit(kc_json_t *w, const char *s)
{
    kc_json_put(w, s, __builtin_strlen(s));
}
/* Appends the literal `name` (e.g. ",\"lag\":") and then v: one numeric member. */
static inline void kc_json_field(kc_json_t *w, const char *name, int64_t v)
{
    kc_json_lit(w, name);
    kc_json_i64(w, v);
}
/* Appends `s` as one quoted JSON string (NULL as ""): `"` and `\` escaped, every control
 * character (below 0x20, and 0x7f) as \u00XX; other bytes, UTF-8 included, as they are. */
void kc_json_str(kc_json_t *w, const char *s);
/* The text (caller frees) and an empty writer; NULL after an allocation failure. */
char *kc_json_take(kc_json_t *w);
void kc_json_free(kc_json_t *w);

#endif
