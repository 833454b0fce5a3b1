/*
 * A JSON text writer: the one place JSON strings are escaped, so every emitter (the consumer's
 * stats object, the group protocols' members of it, the workers' array) quotes a string the same
 * way and none can print a client-chosen id raw. The text grows in one heap buffer; numbers and
 * punctuation go through kc_json_raw (printf), every string value or name a caller did not write
 * itself through kc_json_str.
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
/* Appends `s` as one quoted JSON string (NULL as ""): `"` and `\` escaped, every control
 * character (below 0x20, and 0x7f) as \u00XX; other bytes, UTF-8 included, as they are. */
void kc_json_str(kc_json_t *w, const char *s);
/* The text (caller frees) and an empty writer; NULL after an allocation failure. */
char *kc_json_take(kc_json_t *w);
void kc_json_free(kc_json_t *w);

#endif
