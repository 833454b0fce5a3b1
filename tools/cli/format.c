/*
 * -f FORMAT: compile and render (see format.h). No shared mutable state: the compiled format is
 * read-only after compile, and each buffer belongs to the thread that renders into it.
 */
#include "format.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kc_cli_op_t op_of(char c)
{
    switch (c) {
    case 't':
        return KC_CLI_TOPIC;
    case 'p':
        return KC_CLI_PARTITION;
    case 'o':
        return KC_CLI_OFFSET;
    case 'k':
        return KC_CLI_KEY;
    case 's':
        return KC_CLI_VALUE;
    case 'h':
        return KC_CLI_HEADERS;
    case 'T':
        return KC_CLI_TIMESTAMP;
    case 'K':
        return KC_CLI_KEY_LEN;
    case 'S':
        return KC_CLI_VALUE_LEN;
    case 'w':
        return KC_CLI_WORKER;
    case 'M':
        return KC_CLI_MEMBER;
    case 'n':
        return KC_CLI_CB_NS;
    case 'J':
        return KC_CLI_JSON;
    case 'D':
        return KC_CLI_DELIVERY;
    default:
        return KC_CLI_LIT; /* "not a conversion" */
    }
}

/* Adds a literal byte, merging with a preceding literal piece so rendering does one copy per run
 * of text rather than one per character. */
static void add_lit(kc_cli_fmt_t *f, size_t *lit_len, char c)
{
    f->lit[*lit_len] = c;
    if (f->n > 0 && f->pieces[f->n - 1].op == KC_CLI_LIT &&
        f->pieces[f->n - 1].lit_off + f->pieces[f->n - 1].lit_len == *lit_len) {
        f->pieces[f->n - 1].lit_len++;
    } else {
        f->pieces[f->n++] = (kc_cli_piece_t){KC_CLI_LIT, *lit_len, 1};
    }
    (*lit_len)++;
}

int kc_cli_fmt_compile(kc_cli_fmt_t *f, const char *spec, char *why, size_t why_len)
{
    size_t len = strlen(spec), lit_len = 0;
    *f = (kc_cli_fmt_t){0};
    /* At most one piece per input byte, and literal text never outgrows the spec. */
    f->pieces = calloc(len + 1, sizeof *f->pieces);
    f->lit = malloc(len + 1);
    if (!f->pieces || !f->lit) {
        snprintf(why, why_len, "out of memory");
        kc_cli_fmt_free(f);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        char c = spec[i];
        if (c == '%') {
            if (i + 1 == len) {
                snprintf(why, why_len,
                         "'%%' at the end (position %zu): write %%%% for a percent sign", i + 1);
                goto fail;
            }
            char d = spec[++i];
            if (d == '%') {
                add_lit(f, &lit_len, '%');
                continue;
            }
            kc_cli_op_t op = op_of(d);
            if (op == KC_CLI_LIT) {
                snprintf(
                    why, why_len,
                    "unknown conversion '%%%c' at position %zu (known: %%t %%p %%o %%k %%s %%h "
                    "%%T %%K %%S %%w %%M %%n %%D %%%%)",
                    d, i);
                goto fail;
            }
            f->pieces[f->n++] = (kc_cli_piece_t){op, 0, 0};
            f->uses |= 1u << op;
        } else if (c == '\\') {
            if (i + 1 == len) {
                snprintf(why, why_len, "'\\' at the end (position %zu): write \\\\ for a backslash",
                         i + 1);
                goto fail;
            }
            char d = spec[++i];
            char out = d == 'n' ? '\n' : d == 't' ? '\t' : d == 'r' ? '\r' : d == '\\' ? '\\' : 0;
            if (!out) {
                snprintf(why, why_len,
                         "unknown escape '\\%c' at position %zu (known: \\n \\t \\r \\\\)", d, i);
                goto fail;
            }
            add_lit(f, &lit_len, out);
        } else {
            add_lit(f, &lit_len, c);
        }
    }
    return 0;
fail:
    kc_cli_fmt_free(f);
    return -1;
}

void kc_cli_fmt_free(kc_cli_fmt_t *f)
{
    free(f->pieces);
    free(f->lit);
    *f = (kc_cli_fmt_t){0};
}

int kc_cli_buf_put(kc_cli_buf_t *b, const void *data, size_t n)
{
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

void kc_cli_buf_free(kc_cli_buf_t *b)
{
    free(b->p);
    *b = (kc_cli_buf_t){0};
}

static int put_i64(kc_cli_buf_t *b, int64_t v)
{
    char tmp[24];
    int k = snprintf(tmp, sizeof tmp, "%" PRId64, v);
    return kc_cli_buf_put(b, tmp, (size_t)k);
}

static int put_headers(const kc_cli_rec_t *r, kc_cli_buf_t *b)
{
    if (!r->hdr_next)
        return 0;
    size_t cur = 0, nl, vl;
    const char *name;
    const void *val;
    int rc, first = 1;
    while ((rc = r->hdr_next(r->hdr_src, &cur, &name, &nl, &val, &vl)) == 0) {
        if ((!first && kc_cli_buf_put(b, ",", 1)) || kc_cli_buf_put(b, name, nl))
            return -1;
        if (val && (kc_cli_buf_put(b, "=", 1) || kc_cli_buf_put(b, val, vl)))
            return -1;
        first = 0;
    }
    /* A record whose header bytes do not parse still prints; the marker says why headers stop. */
    if (rc < 0)
        return kc_cli_buf_put(b, first ? "(malformed headers)" : ",(malformed headers)",
                              first ? 19 : 20);
    return 0;
}

int kc_cli_json_str(kc_cli_buf_t *b, const void *data, size_t len)
{
    if (!data)
        return kc_cli_buf_put(b, "null", 4);
    const unsigned char *s = data;
    if (kc_cli_buf_put(b, "\"", 1))
        return -1;
    size_t run = 0; /* bytes copied as they are, in one put */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = s[i];
        char esc[8];
        size_t el = 0;
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c, el = 2;
        } else if (c < 0x20) {
            const char *named = c == '\n'   ? "\\n"
                                : c == '\t' ? "\\t"
                                : c == '\r' ? "\\r"
                                : c == '\b' ? "\\b"
                                : c == '\f' ? "\\f"
                                            : NULL;
            el = named ? 2 : 6;
            if (named)
                memcpy(esc, named, 2);
            else
                snprintf(esc, sizeof esc, "\\u%04X", c);
        }
        if (!el)
            continue;
        if (kc_cli_buf_put(b, s + run, i - run) || kc_cli_buf_put(b, esc, el))
            return -1;
        run = i + 1;
    }
    return kc_cli_buf_put(b, s + run, len - run) || kc_cli_buf_put(b, "\"", 1);
}

static int put_json(const kc_cli_rec_t *r, kc_cli_buf_t *b)
{
    static const char *const tstype[] = {"unknown", "create", "logappend"};
    int t = r->ts_type >= 0 && r->ts_type <= 1 ? r->ts_type + 1 : 0;
    if (kc_cli_buf_put(b, "{\"topic\":", 9) || kc_cli_json_str(b, r->topic, strlen(r->topic)) ||
        kc_cli_buf_put(b, ",\"partition\":", 13) || put_i64(b, r->partition) ||
        kc_cli_buf_put(b, ",\"offset\":", 10) || put_i64(b, r->offset) ||
        kc_cli_buf_put(b, ",\"tstype\":\"", 11) ||
        kc_cli_buf_put(b, tstype[t], strlen(tstype[t])) || kc_cli_buf_put(b, "\",\"ts\":", 7) ||
        put_i64(b, r->timestamp) || kc_cli_buf_put(b, ",\"broker\":", 10) || put_i64(b, r->broker))
        return -1;
    if (r->hdr_next) {
        size_t cur = 0, nl, vl;
        const char *name;
        const void *val;
        int rc, n = 0;
        while ((rc = r->hdr_next(r->hdr_src, &cur, &name, &nl, &val, &vl)) == 0) {
            if (kc_cli_buf_put(b, n ? "," : ",\"headers\":[", n ? 1 : 12) ||
                kc_cli_json_str(b, name, nl) || kc_cli_buf_put(b, ",", 1) ||
                kc_cli_json_str(b, val, vl))
                return -1;
            n++;
        }
        if (n && kc_cli_buf_put(b, "]", 1))
            return -1;
        /* Header bytes that do not parse: the record still prints, and says so. */
        if (rc < 0 && kc_cli_buf_put(b, ",\"headers_malformed\":true", 25))
            return -1;
    }
    return kc_cli_buf_put(b, ",\"key\":", 7) || kc_cli_json_str(b, r->key, r->key_len) ||
           kc_cli_buf_put(b, ",\"payload\":", 11) || kc_cli_json_str(b, r->value, r->value_len) ||
           kc_cli_buf_put(b, "}", 1);
}

int kc_cli_fmt_render(const kc_cli_fmt_t *f, const kc_cli_rec_t *r, kc_cli_buf_t *b)
{
    size_t mark = b->len;
    int rc = 0;
    for (size_t i = 0; i < f->n && rc == 0; i++) {
        const kc_cli_piece_t *pc = &f->pieces[i];
        switch (pc->op) {
        case KC_CLI_LIT:
            rc = kc_cli_buf_put(b, f->lit + pc->lit_off, pc->lit_len);
            break;
        case KC_CLI_TOPIC:
            rc = kc_cli_buf_put(b, r->topic, strlen(r->topic));
            break;
        case KC_CLI_PARTITION:
            rc = put_i64(b, r->partition);
            break;
        case KC_CLI_OFFSET:
            rc = put_i64(b, r->offset);
            break;
        case KC_CLI_KEY:
            rc = r->key ? kc_cli_buf_put(b, r->key, r->key_len) : 0;
            break;
        case KC_CLI_VALUE:
            rc = r->value ? kc_cli_buf_put(b, r->value, r->value_len) : 0;
            break;
        case KC_CLI_HEADERS:
            rc = put_headers(r, b);
            break;
        case KC_CLI_TIMESTAMP:
            rc = put_i64(b, r->timestamp);
            break;
        case KC_CLI_KEY_LEN:
            rc = put_i64(b, r->key ? (int64_t)r->key_len : -1);
            break;
        case KC_CLI_VALUE_LEN:
            rc = put_i64(b, r->value ? (int64_t)r->value_len : -1);
            break;
        case KC_CLI_WORKER:
            rc = put_i64(b, r->worker);
            break;
        case KC_CLI_MEMBER:
            rc = kc_cli_buf_put(b, r->member, strlen(r->member));
            break;
        case KC_CLI_DELIVERY:
            rc = put_i64(b, r->delivery_count);
            break;
        case KC_CLI_CB_NS:
            rc = put_i64(b, (int64_t)r->cb_start_ns);
            break;
        case KC_CLI_JSON:
            rc = put_json(r, b);
            break;
        case KC_CLI_OP_COUNT:
            break;
        }
    }
    if (rc)
        b->len = mark; /* never leave half a record behind */
    return rc;
}
