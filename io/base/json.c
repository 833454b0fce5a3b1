/* JSON text writer: see json.h. */
#include "base/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for `more` bytes plus the NUL. */
static bool reserve(kc_json_t *w, size_t more)
{
    if (w->oom)
        return false;
    if (w->p && w->n + more < w->cap)
        return true;
    size_t cap = w->cap ? w->cap : 256;
    while (cap <= w->n + more)
        cap *= 2;
    char *np = realloc(w->p, cap);
    if (!np) {
        w->oom = true;
        return false;
    }
    w->p = np;
    w->cap = cap;
    return true;
}

void kc_json_init(kc_json_t *w, size_t hint)
{
    *w = (kc_json_t){0};
    if (hint && (w->p = malloc(hint))) {
        w->cap = hint;
        w->p[0] = '\0';
    }
}

void kc_json_raw(kc_json_t *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(w->p ? w->p + w->n : NULL, w->p ? w->cap - w->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
        w->oom = true;
        return;
    }
    if (w->p && w->n + (size_t)k < w->cap) {
        w->n += (size_t)k;
        return;
    }
    if (!reserve(w, (size_t)k))
        return;
    va_start(ap, fmt);
    vsnprintf(w->p + w->n, w->cap - w->n, fmt, ap);
    va_end(ap);
    w->n += (size_t)k;
}

void kc_json_put(kc_json_t *w, const char *s, size_t len)
{
    if (!reserve(w, len))
        return;
    memcpy(w->p + w->n, s, len);
    w->n += len;
    w->p[w->n] = '\0';
}

/* Digits of v, written backwards from end; returns where they start. */
static char *digits(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

static void put_digits(kc_json_t *w, uint64_t v, bool minus)
{
    char buf[24];
    char *s = digits(buf + sizeof buf, v);
    if (minus)
        *--s = '-';
    kc_json_put(w, s, (size_t)(buf + sizeof buf - s));
}

void kc_json_u64(kc_json_t *w, uint64_t v)
{
    put_digits(w, v, false);
}

void kc_json_i64(kc_json_t *w, int64_t v)
{
    /* the magnitude in unsigned arithmetic: -INT64_MIN does not fit an int64_t */
    put_digits(w, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

void kc_json_str(kc_json_t *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t len = 2;
    for (const char *q = s; q && *q; q++) {
        unsigned char ch = (unsigned char)*q;
        len += ch == '"' || ch == '\\' ? 2 : ch < 0x20 || ch == 0x7f ? 6 : 1;
    }
    if (!reserve(w, len))
        return;
    char *o = w->p + w->n;
    *o++ = '"';
    for (const char *q = s; q && *q; q++) {
        unsigned char ch = (unsigned char)*q;
        if (ch == '"' || ch == '\\') {
            *o++ = '\\';
            *o++ = (char)ch;
        } else if (ch < 0x20 || ch == 0x7f) {
            *o++ = '\\';
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[ch >> 4];
            *o++ = hex[ch & 15];
        } else {
            *o++ = (char)ch;
        }
    }
    *o++ = '"';
    *o = '\0';
    w->n += len;
}

char *kc_json_take(kc_json_t *w)
{
    char *p = w->oom ? NULL : w->p;
    if (w->oom)
        free(w->p);
    else if (!p && (p = malloc(1)))
        p[0] = '\0';
    *w = (kc_json_t){0};
    return p;
}

void kc_json_free(kc_json_t *w)
{
    free(w->p);
    *w = (kc_json_t){0};
}
