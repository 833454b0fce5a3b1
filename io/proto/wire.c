/* Wire primitives: bounds-checked reads, growable writes, varints, decode arena.
 * Owner: whichever thread holds the reader/writer/arena passed in; no shared state. */
#include "proto/wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ------------------------------------------------------------------------------- */

struct kc_arena_chunk {
    kc_arena_chunk_t *next;
    size_t cap;
    size_t used;
    _Alignas(16) uint8_t data[];
};

#define ARENA_MIN_CHUNK 4096

void *kc_arena_calloc(kc_arena_t *a, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = (n * size + 15) & ~(size_t)15;
    if (bytes == 0)
        bytes = 16;
    kc_arena_chunk_t *c = a->head;
    if (!c || c->cap - c->used < bytes) {
        size_t cap = bytes > ARENA_MIN_CHUNK ? bytes : ARENA_MIN_CHUNK;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += bytes;
    a->total += bytes;
    memset(p, 0, bytes);
    return p;
}

void kc_arena_reset(kc_arena_t *a)
{
    kc_arena_chunk_t *c = a->head;
    /* Keep the oldest (last in the list) chunk: the common small message fits in it. */
    while (c && c->next) {
        kc_arena_chunk_t *n = c->next;
        free(c);
        c = n;
    }
    if (c)
        c->used = 0;
    a->head = c;
    a->total = 0;
}

void kc_arena_free(kc_arena_t *a)
{
    kc_arena_chunk_t *c = a->head;
    while (c) {
        kc_arena_chunk_t *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->total = 0;
}

/* ---- errors ------------------------------------------------------------------------------ */

kc_err_t kc_dec_fail(kc_dec_t *d, const char *field, const char *fmt, ...)
{
    if (!d->err)
        return KC_ERR_MALFORMED;
    char path[160];
    size_t off = 0;
    path[0] = 0;
    int depth = d->depth < KC_WIRE_MAX_DEPTH ? d->depth : KC_WIRE_MAX_DEPTH;
    for (int i = 0; i < depth && off < sizeof path; i++) {
        int n = d->path[i].idx >= 0
                    ? snprintf(path + off, sizeof path - off, "%s[%d].", d->path[i].name,
                               (int)d->path[i].idx)
                    : snprintf(path + off, sizeof path - off, "%s.", d->path[i].name);
        if (n < 0)
            break;
        off += (size_t)n;
    }
    char reason[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return kc_fail(d->err, KC_ERR_MALFORMED, "%s v%d: %s%s: %s", d->what, (int)d->version, path,
                   field, reason);
}

kc_err_t kc_enc_fail(kc_enc_t *e, kc_err_t code, const char *field, const char *fmt, ...)
{
    if (!e->err)
        return code;
    char reason[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return kc_fail(e->err, code, "%s v%d: %s: %s", e->what, (int)e->version, field, reason);
}

/* ---- reads ------------------------------------------------------------------------------- */

static kc_err_t need(kc_dec_t *d, const char *f, size_t n)
{
    size_t rem = kc_rbuf_remaining(d->r);
    if (n > rem)
        return kc_dec_fail(d, f, "need %zu bytes, %zu remaining", n, rem);
    return KC_OK;
}

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

#define GET_FIXED(fn, type, n, conv)                                                               \
    kc_err_t fn(kc_dec_t *d, const char *f, type *out)                                             \
    {                                                                                              \
        kc_err_t rc = need(d, f, n);                                                               \
        if (rc)                                                                                    \
            return rc;                                                                             \
        uint64_t raw = be(d->r->p, n);                                                             \
        d->r->p += n;                                                                              \
        *out = conv;                                                                               \
        return KC_OK;                                                                              \
    }

GET_FIXED(kc_wire_get_i8, int8_t, 1, (int8_t)(uint8_t)raw)
GET_FIXED(kc_wire_get_i16, int16_t, 2, (int16_t)(uint16_t)raw)
GET_FIXED(kc_wire_get_u16, uint16_t, 2, (uint16_t)raw)
GET_FIXED(kc_wire_get_i32, int32_t, 4, (int32_t)(uint32_t)raw)
GET_FIXED(kc_wire_get_u32, uint32_t, 4, (uint32_t)raw)
GET_FIXED(kc_wire_get_i64, int64_t, 8, (int64_t)raw)

kc_err_t kc_wire_get_bool(kc_dec_t *d, const char *f, bool *out)
{
    int8_t v = 0;
    kc_err_t rc = kc_wire_get_i8(d, f, &v);
    *out = v != 0;
    return rc;
}

kc_err_t kc_wire_get_f64(kc_dec_t *d, const char *f, double *out)
{
    int64_t v = 0;
    kc_err_t rc = kc_wire_get_i64(d, f, &v);
    if (rc)
        return rc;
    memcpy(out, &v, sizeof *out);
    return KC_OK;
}

kc_err_t kc_wire_get_uuid(kc_dec_t *d, const char *f, kc_uuid_t *out)
{
    kc_err_t rc = need(d, f, 16);
    if (rc)
        return rc;
    memcpy(out->b, d->r->p, 16);
    d->r->p += 16;
    return KC_OK;
}

static kc_err_t get_uvar64(kc_dec_t *d, const char *f, uint64_t *out, int max_bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (d->r->p >= d->r->end)
            return kc_dec_fail(d, f, "varint runs past the end");
        uint8_t b = *d->r->p++;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return KC_OK;
        }
    }
    return kc_dec_fail(d, f, "varint longer than %d bytes", max_bytes);
}

kc_err_t kc_wire_get_uvarint(kc_dec_t *d, const char *f, uint32_t *out)
{
    uint64_t v = 0;
    kc_err_t rc = get_uvar64(d, f, &v, 5);
    if (rc)
        return rc;
    if (v > UINT32_MAX)
        return kc_dec_fail(d, f, "unsigned varint exceeds 32 bits");
    *out = (uint32_t)v;
    return KC_OK;
}

kc_err_t kc_wire_get_varint(kc_dec_t *d, const char *f, int32_t *out)
{
    uint32_t u = 0;
    kc_err_t rc = kc_wire_get_uvarint(d, f, &u);
    if (rc)
        return rc;
    *out = (int32_t)((u >> 1) ^ (~(u & 1) + 1));
    return KC_OK;
}

kc_err_t kc_wire_get_varlong(kc_dec_t *d, const char *f, int64_t *out)
{
    uint64_t u = 0;
    kc_err_t rc = get_uvar64(d, f, &u, 10);
    if (rc)
        return rc;
    *out = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
    return KC_OK;
}

/* Length prefix shared by strings, bytes and arrays: -1 for null, else a length. */
static kc_err_t get_len(kc_dec_t *d, const char *f, int64_t *len, bool compact, int width)
{
    kc_err_t rc;
    if (compact) {
        uint32_t u = 0;
        if ((rc = kc_wire_get_uvarint(d, f, &u)))
            return rc;
        *len = (int64_t)u - 1;
    } else if (width == 2) {
        int16_t v = 0;
        if ((rc = kc_wire_get_i16(d, f, &v)))
            return rc;
        *len = v;
    } else {
        int32_t v = 0;
        if ((rc = kc_wire_get_i32(d, f, &v)))
            return rc;
        *len = v;
    }
    if (*len < -1)
        return kc_dec_fail(d, f, "negative length %lld", (long long)*len);
    return KC_OK;
}

static kc_err_t get_view(kc_dec_t *d, const char *f, const uint8_t **ptr, int32_t *olen,
                         bool compact, bool nullable, int width)
{
    int64_t len = 0;
    kc_err_t rc = get_len(d, f, &len, compact, width);
    if (rc)
        return rc;
    if (len == -1) {
        if (!nullable)
            return kc_dec_fail(d, f, "null in a non-nullable field");
        *ptr = NULL;
        *olen = -1;
        return KC_OK;
    }
    size_t rem = kc_rbuf_remaining(d->r);
    if ((uint64_t)len > rem)
        return kc_dec_fail(d, f, "length %lld exceeds remaining %zu", (long long)len, rem);
    *ptr = d->r->p;
    *olen = (int32_t)len;
    d->r->p += len;
    return KC_OK;
}

kc_err_t kc_wire_get_str(kc_dec_t *d, const char *f, kc_str_t *out, bool compact, bool nullable)
{
    const uint8_t *p = NULL;
    kc_err_t rc = get_view(d, f, &p, &out->len, compact, nullable, 2);
    out->ptr = (const char *)p;
    return rc;
}

kc_err_t kc_wire_get_bytes(kc_dec_t *d, const char *f, kc_bytes_t *out, bool compact, bool nullable)
{
    return get_view(d, f, &out->ptr, &out->len, compact, nullable, 4);
}

kc_err_t kc_wire_get_array_len(kc_dec_t *d, const char *f, int32_t *out, bool compact,
                               bool nullable, size_t min_elem)
{
    int64_t len = 0;
    kc_err_t rc = get_len(d, f, &len, compact, 4);
    if (rc)
        return rc;
    if (len == -1) {
        if (!nullable)
            return kc_dec_fail(d, f, "null array in a non-nullable field");
        *out = -1;
        return KC_OK;
    }
    if (min_elem == 0)
        min_elem = 1;
    size_t rem = kc_rbuf_remaining(d->r);
    /* Division, not multiplication: no overflow whatever the claimed count. */
    if ((uint64_t)len > rem / min_elem)
        return kc_dec_fail(d, f,
                           "array of %lld elements (at least %zu bytes each) exceeds remaining %zu",
                           (long long)len, min_elem, rem);
    *out = (int32_t)len;
    return KC_OK;
}

void *kc_wire_alloc(kc_dec_t *d, const char *f, int32_t count, size_t size)
{
    void *p = kc_arena_calloc(d->arena, (size_t)count, size);
    if (!p && d->err)
        kc_fail(d->err, KC_ERR_NOMEM, "%s v%d: %s: no memory for %d elements", d->what,
                (int)d->version, f, (int)count);
    return p;
}

kc_err_t kc_wire_tag_enter(kc_dec_t *d, uint32_t *tag, const uint8_t **saved_end)
{
    uint32_t size = 0;
    kc_err_t rc = kc_wire_get_uvarint(d, "tag", tag);
    if (rc || (rc = kc_wire_get_uvarint(d, "tag size", &size)))
        return rc;
    size_t rem = kc_rbuf_remaining(d->r);
    if (size > rem)
        return kc_dec_fail(d, "tagged field", "tag %u size %u exceeds remaining %zu", *tag, size,
                           rem);
    *saved_end = d->r->end;
    d->r->end = d->r->p + size;
    return KC_OK;
}

void kc_wire_tag_exit(kc_dec_t *d, const uint8_t *saved_end)
{
    d->r->p = d->r->end;
    d->r->end = saved_end;
}

/* ---- writes ------------------------------------------------------------------------------ */

void kc_wbuf_free(kc_wbuf_t *w)
{
    free(w->data);
    w->data = NULL;
    w->len = w->cap = 0;
}

kc_err_t kc_wbuf_reserve(kc_wbuf_t *w, size_t n)
{
    if (w->cap - w->len >= n)
        return KC_OK;
    size_t cap = w->cap ? w->cap : 256;
    while (cap - w->len < n) {
        if (cap > SIZE_MAX / 2)
            return KC_ERR_NOMEM;
        cap *= 2;
    }
    uint8_t *p = realloc(w->data, cap);
    if (!p)
        return KC_ERR_NOMEM;
    w->data = p;
    w->cap = cap;
    return KC_OK;
}

kc_err_t kc_wire_put_raw(kc_enc_t *e, const void *p, size_t n)
{
    if (kc_wbuf_reserve(e->w, n))
        return kc_enc_fail(e, KC_ERR_NOMEM, "buffer", "no memory for %zu bytes", n);
    if (n)
        memcpy(e->w->data + e->w->len, p, n);
    e->w->len += n;
    return KC_OK;
}

static kc_err_t put_be(kc_enc_t *e, uint64_t v, int n)
{
    uint8_t b[8];
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        b[i] = (uint8_t)v;
    return kc_wire_put_raw(e, b, (size_t)n);
}

kc_err_t kc_wire_put_i8(kc_enc_t *e, int8_t v)
{
    return put_be(e, (uint8_t)v, 1);
}
kc_err_t kc_wire_put_bool(kc_enc_t *e, bool v)
{
    return put_be(e, v ? 1 : 0, 1);
}
kc_err_t kc_wire_put_i16(kc_enc_t *e, int16_t v)
{
    return put_be(e, (uint16_t)v, 2);
}
kc_err_t kc_wire_put_u16(kc_enc_t *e, uint16_t v)
{
    return put_be(e, v, 2);
}
kc_err_t kc_wire_put_i32(kc_enc_t *e, int32_t v)
{
    return put_be(e, (uint32_t)v, 4);
}
kc_err_t kc_wire_put_u32(kc_enc_t *e, uint32_t v)
{
    return put_be(e, v, 4);
}
kc_err_t kc_wire_put_i64(kc_enc_t *e, int64_t v)
{
    return put_be(e, (uint64_t)v, 8);
}
kc_err_t kc_wire_put_f64(kc_enc_t *e, double v)
{
    uint64_t u = 0;
    memcpy(&u, &v, sizeof u);
    return put_be(e, u, 8);
}
kc_err_t kc_wire_put_uuid(kc_enc_t *e, const kc_uuid_t *v)
{
    return kc_wire_put_raw(e, v->b, 16);
}

static int uvar_encode(uint8_t *b, uint64_t v)
{
    int n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    return n;
}

kc_err_t kc_wire_put_uvarint(kc_enc_t *e, uint32_t v)
{
    uint8_t b[10];
    return kc_wire_put_raw(e, b, (size_t)uvar_encode(b, v));
}
kc_err_t kc_wire_put_varint(kc_enc_t *e, int32_t v)
{
    uint32_t u = ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
    return kc_wire_put_uvarint(e, u);
}
kc_err_t kc_wire_put_varlong(kc_enc_t *e, int64_t v)
{
    uint8_t b[10];
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    return kc_wire_put_raw(e, b, (size_t)uvar_encode(b, u));
}

static kc_err_t put_len(kc_enc_t *e, const char *f, int32_t len, bool compact, bool nullable,
                        int width)
{
    if (len < -1)
        return kc_enc_fail(e, KC_ERR_INVALID_ARG, f, "negative length %d", (int)len);
    if (len == -1 && !nullable)
        return kc_enc_fail(e, KC_ERR_INVALID_ARG, f, "null in a non-nullable field");
    if (compact)
        return kc_wire_put_uvarint(e, (uint32_t)(len + 1));
    if (width == 2) {
        if (len > INT16_MAX)
            return kc_enc_fail(e, KC_ERR_INVALID_ARG, f, "length %d exceeds int16", (int)len);
        return kc_wire_put_i16(e, (int16_t)len);
    }
    return kc_wire_put_i32(e, len);
}

kc_err_t kc_wire_put_str(kc_enc_t *e, const char *f, kc_str_t s, bool compact, bool nullable)
{
    kc_err_t rc = put_len(e, f, s.len, compact, nullable, 2);
    if (rc || s.len <= 0)
        return rc;
    return kc_wire_put_raw(e, s.ptr, (size_t)s.len);
}

kc_err_t kc_wire_put_bytes(kc_enc_t *e, const char *f, kc_bytes_t b, bool compact, bool nullable)
{
    kc_err_t rc = put_len(e, f, b.len, compact, nullable, 4);
    if (rc || b.len <= 0)
        return rc;
    return kc_wire_put_raw(e, b.ptr, (size_t)b.len);
}

kc_err_t kc_wire_put_array_len(kc_enc_t *e, const char *f, int32_t count, bool compact,
                               bool nullable)
{
    return put_len(e, f, count, compact, nullable, 4);
}

kc_err_t kc_wire_tag_end(kc_enc_t *e, size_t start)
{
    size_t size = e->w->len - start;
    if (size > UINT32_MAX)
        return kc_enc_fail(e, KC_ERR_INVALID_ARG, "tagged field", "too large");
    uint8_t b[10];
    int n = uvar_encode(b, size);
    if (kc_wbuf_reserve(e->w, (size_t)n))
        return kc_enc_fail(e, KC_ERR_NOMEM, "tagged field", "no memory");
    memmove(e->w->data + start + n, e->w->data + start, size);
    memcpy(e->w->data + start, b, (size_t)n);
    e->w->len += (size_t)n;
    return KC_OK;
}
