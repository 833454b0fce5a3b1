/* A growable byte buffer for encoding requests. Owner: whoever holds it (the connection keeps
 * two: the one being filled and the one being sent). Growth failure is sticky (`oom`), checked
 * once after encoding, so encoders need no error path per field. */
#ifndef KC_IO_WBUF_H
#define KC_IO_WBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct kc_wbuf {
    uint8_t *p;
    size_t len, cap;
    int oom;
} kc_wbuf_t;

static inline int kc_wbuf_reserve(kc_wbuf_t *w, size_t n)
{
    if (w->oom)
        return 0;
    if (w->len + n <= w->cap)
        return 1;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n)
        cap *= 2;
    uint8_t *p = realloc(w->p, cap);
    if (!p) {
        w->oom = 1;
        return 0;
    }
    w->p = p;
    w->cap = cap;
    return 1;
}

static inline void kc_wbuf_put(kc_wbuf_t *w, const void *d, size_t n)
{
    if (kc_wbuf_reserve(w, n)) {
        memcpy(w->p + w->len, d, n);
        w->len += n;
    }
}

static inline void kc_wbuf_be16(kc_wbuf_t *w, uint16_t v)
{
    uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    kc_wbuf_put(w, b, 2);
}

static inline void kc_wbuf_be32(kc_wbuf_t *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    kc_wbuf_put(w, b, 4);
}

static inline void kc_wbuf_uvarint(kc_wbuf_t *w, uint32_t v)
{
    while (v >= 0x80) {
        uint8_t b = (uint8_t)(v | 0x80);
        kc_wbuf_put(w, &b, 1);
        v >>= 7;
    }
    uint8_t b = (uint8_t)v;
    kc_wbuf_put(w, &b, 1);
}

static inline void kc_wbuf_free(kc_wbuf_t *w)
{
    free(w->p);
    w->p = NULL;
    w->len = w->cap = 0;
    w->oom = 0;
}

#endif
