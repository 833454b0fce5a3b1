#include "telemetry/otlp.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- the snapshot ------------------------------------------------------------------------- */

static void point_free(kc_tlm_point_t *pt)
{
    free(pt->name);
    for (int i = 0; i < pt->n_attrs; i++) {
        free(pt->attrs[i].key);
        free(pt->attrs[i].value);
    }
}

void kc_tlm_add(kc_tlm_points_t *p, const char *name, kc_tlm_kind_t kind, double value, int n_attrs,
                ...)
{
    if (p->failed)
        return;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 32;
        kc_tlm_point_t *v = realloc(p->v, cap * sizeof *v);
        if (!v) {
            p->failed = true;
            return;
        }
        p->v = v;
        p->cap = cap;
    }
    kc_tlm_point_t *pt = &p->v[p->n];
    memset(pt, 0, sizeof *pt);
    pt->kind = kind;
    pt->value = value;
    bool ok = (pt->name = strdup(name)) != NULL;
    va_list ap;
    va_start(ap, n_attrs);
    for (int i = 0; i < n_attrs && i < KC_TLM_MAX_ATTRS; i++) {
        const char *k = va_arg(ap, const char *), *v = va_arg(ap, const char *);
        pt->attrs[i].key = strdup(k);
        pt->attrs[i].value = strdup(v);
        pt->n_attrs = i + 1;
        ok = ok && pt->attrs[i].key && pt->attrs[i].value;
    }
    va_end(ap);
    if (!ok) {
        point_free(pt);
        p->failed = true;
        return;
    }
    p->n++;
}

void kc_tlm_points_free(kc_tlm_points_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        point_free(&p->v[i]);
    free(p->v);
    memset(p, 0, sizeof *p);
}

void kc_tlm_keep(kc_tlm_points_t *p, bool (*want)(void *ctx, const char *name), void *ctx)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (want(ctx, p->v[i].name))
            p->v[n++] = p->v[i];
        else
            point_free(&p->v[i]);
    }
    p->n = n;
}

static bool same_series(const kc_tlm_point_t *a, const kc_tlm_point_t *b)
{
    if (a->n_attrs != b->n_attrs || strcmp(a->name, b->name) != 0)
        return false;
    for (int i = 0; i < a->n_attrs; i++)
        if (strcmp(a->attrs[i].key, b->attrs[i].key) != 0 ||
            strcmp(a->attrs[i].value, b->attrs[i].value) != 0)
            return false;
    return true;
}

void kc_tlm_delta(kc_tlm_points_t *now, const kc_tlm_points_t *prev)
{
    /* Both lists come from the same collector in the same order, so the series is usually at
     * the same index; the search is the fallback when partitions came or went. */
    for (size_t i = 0; i < now->n; i++) {
        kc_tlm_point_t *pt = &now->v[i];
        if (pt->kind != KC_TLM_COUNTER || !prev)
            continue;
        const kc_tlm_point_t *was = NULL;
        if (i < prev->n && same_series(pt, &prev->v[i]))
            was = &prev->v[i];
        for (size_t j = 0; !was && j < prev->n; j++)
            if (same_series(pt, &prev->v[j]))
                was = &prev->v[j];
        if (was)
            pt->value = pt->value >= was->value ? pt->value - was->value : pt->value;
    }
}

/* ---- protobuf ----------------------------------------------------------------------------- */

/* Wire types */
#define PB_VARINT 0
#define PB_I64    1
#define PB_LEN    2

typedef struct pb {
    kc_wbuf_t *w;
    bool nomem;
} pb_t;

static void pb_raw(pb_t *b, const void *p, size_t n)
{
    if (b->nomem || kc_wbuf_reserve(b->w, n) != KC_OK) {
        b->nomem = true;
        return;
    }
    memcpy(b->w->data + b->w->len, p, n);
    b->w->len += n;
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void pb_varint(pb_t *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    pb_raw(b, tmp, n);
}

static void pb_tag(pb_t *b, unsigned field, unsigned wire)
{
    pb_varint(b, (uint64_t)field << 3 | wire);
}

static void pb_fixed64(pb_t *b, unsigned field, uint64_t v)
{
    uint8_t tmp[8];
    for (int i = 0; i < 8; i++)
        tmp[i] = (uint8_t)(v >> (8 * i));
    pb_tag(b, field, PB_I64);
    pb_raw(b, tmp, 8);
}

static void pb_double(pb_t *b, unsigned field, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    pb_fixed64(b, field, v);
}

static void pb_string(pb_t *b, unsigned field, const char *s)
{
    size_t n = strlen(s);
    pb_tag(b, field, PB_LEN);
    pb_varint(b, n);
    pb_raw(b, s, n);
}

/* A nested message: its tag now, its length once it is written (pb_close moves the body up
 * when the length needs more than the one byte kept for it). */
static size_t pb_open(pb_t *b, unsigned field)
{
    pb_tag(b, field, PB_LEN);
    pb_raw(b, "", 1);
    return b->nomem ? 0 : b->w->len;
}

static void pb_close(pb_t *b, size_t body)
{
    if (b->nomem)
        return;
    size_t len = b->w->len - body, k = varint_len(len);
    if (k > 1) {
        if (kc_wbuf_reserve(b->w, k - 1) != KC_OK) {
            b->nomem = true;
            return;
        }
        memmove(b->w->data + body + k - 1, b->w->data + body, len);
        b->w->len += k - 1;
    }
    uint8_t *p = b->w->data + body - 1;
    uint64_t v = len;
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p = (uint8_t)v;
}

/* ---- OTLP messages ------------------------------------------------------------------------ */

/* KeyValue { string key = 1; AnyValue value = 2 } with AnyValue { string string_value = 1 } */
static void put_attr(pb_t *b, unsigned field, const kc_tlm_attr_t *a)
{
    size_t kv = pb_open(b, field);
    pb_string(b, 1, a->key);
    size_t any = pb_open(b, 2);
    pb_string(b, 1, a->value);
    pb_close(b, any);
    pb_close(b, kv);
}

/* NumberDataPoint { fixed64 start_time_unix_nano = 2; fixed64 time_unix_nano = 3;
 * double as_double = 4; sfixed64 as_int = 6; repeated KeyValue attributes = 7 } */
static void put_point(pb_t *b, const kc_otlp_in_t *in, const kc_tlm_point_t *pt)
{
    size_t dp = pb_open(b, 1);
    if (pt->kind == KC_TLM_COUNTER)
        pb_fixed64(b, 2, in->start_ns);
    pb_fixed64(b, 3, in->time_ns);
    if (pt->kind == KC_TLM_COUNTER)
        pb_fixed64(b, 6, (uint64_t)(int64_t)pt->value);
    else
        pb_double(b, 4, pt->value);
    for (int i = 0; i < pt->n_attrs; i++)
        put_attr(b, 7, &pt->attrs[i]);
    pb_close(b, dp);
}

/* Metric { string name = 1; Gauge gauge = 5; Sum sum = 7 }; Gauge { repeated NumberDataPoint
 * data_points = 1 }; Sum { data_points = 1; AggregationTemporality aggregation_temporality = 2
 * (DELTA 1, CUMULATIVE 2); bool is_monotonic = 3 }. Returns the points it took. */
static size_t put_metric(pb_t *b, const kc_otlp_in_t *in, size_t first)
{
    const kc_tlm_point_t *p0 = &in->points[first];
    size_t m = pb_open(b, 2);
    pb_string(b, 1, p0->name);
    size_t data = pb_open(b, p0->kind == KC_TLM_COUNTER ? 7 : 5);
    size_t i = first;
    for (; i < in->n_points && in->points[i].kind == p0->kind &&
           strcmp(in->points[i].name, p0->name) == 0;
         i++)
        put_point(b, in, &in->points[i]);
    if (p0->kind == KC_TLM_COUNTER) {
        pb_tag(b, 2, PB_VARINT);
        pb_varint(b, in->delta ? 1 : 2);
        pb_tag(b, 3, PB_VARINT);
        pb_varint(b, 1);
    }
    pb_close(b, data);
    pb_close(b, m);
    return i - first;
}

/* MetricsData { repeated ResourceMetrics resource_metrics = 1 };
 * ResourceMetrics { Resource resource = 1; repeated ScopeMetrics scope_metrics = 2 };
 * Resource { repeated KeyValue attributes = 1 };
 * ScopeMetrics { InstrumentationScope scope = 1; repeated Metric metrics = 2 };
 * InstrumentationScope { string name = 1; string version = 2 } */
kc_err_t kc_otlp_encode(const kc_otlp_in_t *in, kc_wbuf_t *out, kc_error_t *err)
{
    pb_t b = {.w = out};
    size_t rm = pb_open(&b, 1);
    size_t res = pb_open(&b, 1);
    for (size_t i = 0; i < in->n_resource; i++)
        put_attr(&b, 1, &in->resource[i]);
    pb_close(&b, res);
    size_t sm = pb_open(&b, 2);
    size_t scope = pb_open(&b, 1);
    pb_string(&b, 1, in->scope_name);
    if (in->scope_version)
        pb_string(&b, 2, in->scope_version);
    pb_close(&b, scope);
    for (size_t i = 0; i < in->n_points && !b.nomem;)
        i += put_metric(&b, in, i);
    pb_close(&b, sm);
    pb_close(&b, rm);
    if (b.nomem)
        return kc_fail(err, KC_ERR_NOMEM, "telemetry: out of memory encoding %zu metrics",
                       in->n_points);
    return KC_OK;
}
