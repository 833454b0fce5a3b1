/*
 * Wire primitives for the generated Kafka codec (the io/proto .gen.c files). This and wire.c are
 * the only hand-written protocol code; every message layout comes from io/proto/gen/generate.py.
 *
 * Threads: none of this has shared state. A kc_rbuf_t / kc_wbuf_t / kc_arena_t is owned by the
 * one thread decoding or encoding with it (the network thread for broker traffic).
 *
 * Decoding never copies strings or bytes: kc_str_t and kc_bytes_t are views into the frame, so
 * the frame must outlive the decoded message. Arrays are allocated from a kc_arena_t, one arena
 * per decoded message, freed at once with kc_arena_reset() / kc_arena_free().
 */
#ifndef KC_PROTO_WIRE_H
#define KC_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* A string view. len == -1 means null. Not NUL-terminated: print with "%.*s". */
typedef struct kc_str {
    const char *ptr;
    int32_t len;
} kc_str_t;

/* A byte view (also used for `records`). len == -1 means null. */
typedef struct kc_bytes {
    const uint8_t *ptr;
    int32_t len;
} kc_bytes_t;

typedef struct kc_uuid {
    uint8_t b[16];
} kc_uuid_t;

#define KC_STR_NULL   ((kc_str_t){NULL, -1})
#define KC_BYTES_NULL ((kc_bytes_t){NULL, -1})

/* A view of a NUL-terminated C string (NULL gives the null string). */
static inline kc_str_t kc_str(const char *s);

/* Bounds-checked reader over one frame: reads stay in [p, end). */
typedef struct kc_rbuf {
    const uint8_t *p;
    const uint8_t *end;
} kc_rbuf_t;

static inline kc_rbuf_t kc_rbuf(const void *data, size_t len)
{
    /* An empty message encodes to no bytes and an empty kc_wbuf_t has no buffer: NULL + 0 is
     * undefined in C, so it gets its own case. */
    kc_rbuf_t r = {(const uint8_t *)data, data ? (const uint8_t *)data + len : NULL};
    return r;
}

static inline size_t kc_rbuf_remaining(const kc_rbuf_t *r)
{
    return (size_t)(r->end - r->p);
}

/* Growable writer. Owner: the thread encoding. Free with kc_wbuf_free(). */
typedef struct kc_wbuf {
    uint8_t *data;
    size_t len;
    size_t cap;
} kc_wbuf_t;

void kc_wbuf_free(kc_wbuf_t *w);
/* Makes room for n more bytes; KC_ERR_NOMEM when the heap says no. */
kc_err_t kc_wbuf_reserve(kc_wbuf_t *w, size_t n);

/*
 * Decode arena: chunks of heap memory handed out by bumping, released all at once. Arrays of a
 * decoded message live here, so freeing a message is one kc_arena_reset(). Zero-initialise
 * (kc_arena_t a = {0}) before use.
 */
typedef struct kc_arena_chunk kc_arena_chunk_t;
typedef struct kc_arena {
    kc_arena_chunk_t *head;
    size_t total; /* bytes handed out since the last reset, for bounds and tests */
} kc_arena_t;

/* Zeroed memory for n items of `size` bytes, or NULL (overflow or out of memory). */
void *kc_arena_calloc(kc_arena_t *a, size_t n, size_t size);
/* Frees everything but keeps the first chunk for reuse. */
void kc_arena_reset(kc_arena_t *a);
void kc_arena_free(kc_arena_t *a);

/* ---- used by the generated code ---------------------------------------------------------- */

#define KC_WIRE_MAX_DEPTH 8

/* Decoding context: the reader plus what is needed to name a failing field. */
typedef struct kc_dec {
    kc_rbuf_t *r;
    kc_arena_t *arena;
    kc_error_t *err;
    const char *what; /* "FetchResponse" */
    int16_t version;
    bool flex;
    int depth;
    struct {
        const char *name;
        int32_t idx; /* -1: not an array element */
    } path[KC_WIRE_MAX_DEPTH];
} kc_dec_t;

typedef struct kc_enc {
    kc_wbuf_t *w;
    kc_error_t *err;
    const char *what;
    int16_t version;
    bool flex;
} kc_enc_t;

/* Fails with KC_ERR_MALFORMED naming "<what> v<version>: <path>.<field>: <reason>". */
kc_err_t kc_dec_fail(kc_dec_t *d, const char *field, const char *fmt, ...) KC_PRINTF(3, 4);
kc_err_t kc_enc_fail(kc_enc_t *e, kc_err_t code, const char *field, const char *fmt, ...)
    KC_PRINTF(4, 5);

static inline void kc_dec_push(kc_dec_t *d, const char *name, int32_t idx)
{
    if (d->depth < KC_WIRE_MAX_DEPTH) {
        d->path[d->depth].name = name;
        d->path[d->depth].idx = idx;
    }
    d->depth++;
}
static inline void kc_dec_index(kc_dec_t *d, int32_t idx)
{
    if (d->depth > 0 && d->depth <= KC_WIRE_MAX_DEPTH)
        d->path[d->depth - 1].idx = idx;
}
static inline void kc_dec_pop(kc_dec_t *d)
{
    d->depth--;
}

kc_err_t kc_wire_get_i8(kc_dec_t *d, const char *f, int8_t *out);
kc_err_t kc_wire_get_bool(kc_dec_t *d, const char *f, bool *out);
kc_err_t kc_wire_get_i16(kc_dec_t *d, const char *f, int16_t *out);
kc_err_t kc_wire_get_u16(kc_dec_t *d, const char *f, uint16_t *out);
kc_err_t kc_wire_get_i32(kc_dec_t *d, const char *f, int32_t *out);
kc_err_t kc_wire_get_u32(kc_dec_t *d, const char *f, uint32_t *out);
kc_err_t kc_wire_get_i64(kc_dec_t *d, const char *f, int64_t *out);
kc_err_t kc_wire_get_f64(kc_dec_t *d, const char *f, double *out);
kc_err_t kc_wire_get_uuid(kc_dec_t *d, const char *f, kc_uuid_t *out);
kc_err_t kc_wire_get_uvarint(kc_dec_t *d, const char *f, uint32_t *out);
kc_err_t kc_wire_get_varint(kc_dec_t *d, const char *f, int32_t *out);
kc_err_t kc_wire_get_varlong(kc_dec_t *d, const char *f, int64_t *out);
/* compact: uvarint length+1 (0 = null); else int16 (strings) / int32 (bytes) with -1 = null.
 * A null where the version does not allow it is an error. */
kc_err_t kc_wire_get_str(kc_dec_t *d, const char *f, kc_str_t *out, bool compact, bool nullable);
kc_err_t kc_wire_get_bytes(kc_dec_t *d, const char *f, kc_bytes_t *out, bool compact,
                           bool nullable);
/* An array length: refused unless count * min_elem ≤ remaining bytes (min_elem ≥ 1), so a
 * hostile count never reaches an allocation. *out = -1 for null. */
kc_err_t kc_wire_get_array_len(kc_dec_t *d, const char *f, int32_t *out, bool compact,
                               bool nullable, size_t min_elem);
/* Allocates count zeroed items from the arena (count already validated). */
void *kc_wire_alloc(kc_dec_t *d, const char *f, int32_t count, size_t size);
/* Tagged-field framing: reads tag and size, and narrows the reader to the field's bytes;
 * kc_wire_tag_exit() moves past them whatever the field decoder consumed. */
kc_err_t kc_wire_tag_enter(kc_dec_t *d, uint32_t *tag, const uint8_t **saved_end);
void kc_wire_tag_exit(kc_dec_t *d, const uint8_t *saved_end);

/* One put (and get above) per fixed-width schema type of the generator's table (emit_c.py WIRE),
 * including uint16, uint32 and float64, which no generated API uses today: a schema that adds
 * such a field must compile. */
kc_err_t kc_wire_put_raw(kc_enc_t *e, const void *p, size_t n);
kc_err_t kc_wire_put_i8(kc_enc_t *e, int8_t v);
kc_err_t kc_wire_put_bool(kc_enc_t *e, bool v);
kc_err_t kc_wire_put_i16(kc_enc_t *e, int16_t v);
kc_err_t kc_wire_put_u16(kc_enc_t *e, uint16_t v);
kc_err_t kc_wire_put_i32(kc_enc_t *e, int32_t v);
kc_err_t kc_wire_put_u32(kc_enc_t *e, uint32_t v);
kc_err_t kc_wire_put_i64(kc_enc_t *e, int64_t v);
kc_err_t kc_wire_put_f64(kc_enc_t *e, double v);
kc_err_t kc_wire_put_uuid(kc_enc_t *e, const kc_uuid_t *v);
kc_err_t kc_wire_put_uvarint(kc_enc_t *e, uint32_t v);
kc_err_t kc_wire_put_varint(kc_enc_t *e, int32_t v);
kc_err_t kc_wire_put_varlong(kc_enc_t *e, int64_t v);
kc_err_t kc_wire_put_str(kc_enc_t *e, const char *f, kc_str_t s, bool compact, bool nullable);
kc_err_t kc_wire_put_bytes(kc_enc_t *e, const char *f, kc_bytes_t b, bool compact, bool nullable);
kc_err_t kc_wire_put_array_len(kc_enc_t *e, const char *f, int32_t count, bool compact,
                               bool nullable);
/* A tagged field's value is written first and its uvarint size inserted before it afterwards,
 * because the size is only known once the value is encoded. */
static inline size_t kc_wire_tag_begin(kc_enc_t *e)
{
    return e->w->len;
}
kc_err_t kc_wire_tag_end(kc_enc_t *e, size_t start);

static inline kc_str_t kc_str(const char *s)
{
    kc_str_t v = {s, -1};
    if (s) {
        size_t n = 0;
        while (s[n])
            n++;
        v.len = (int32_t)n;
    }
    return v;
}

#endif
