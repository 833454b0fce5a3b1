/*
 * -s deserializers (see serdes.h). No state beyond the caller's: the compiled spec is read-only
 * and the output buffer is the caller's.
 */
#include "serdes.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static size_t width_of(char op)
{
    switch (op) {
    case 'b':
    case 'B':
    case 'c':
        return 1;
    case 'h':
    case 'H':
        return 2;
    case 'i':
    case 'I':
        return 4;
    case 'q':
    case 'Q':
        return 8;
    default:
        return 0;
    }
}

int kc_cli_serdes_compile(kc_cli_serdes_t *sd, const char *spec, char *why, size_t why_len)
{
    *sd = (kc_cli_serdes_t){.spec = spec};
    if (!strcmp(spec, "json")) {
        sd->json = 1;
        return 0;
    }
    if (!strcmp(spec, "avro")) {
        snprintf(why, why_len, "-s %s: Avro needs a schema registry, which kconsume does not use",
                 spec);
        return -1;
    }
    size_t n = strlen(spec);
    if (n == 0 || n >= sizeof sd->ops) {
        snprintf(why, why_len, "-s %s: a pack format of 1 to %zu characters, or json", spec,
                 sizeof sd->ops - 1);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char c = spec[i];
        if (!strchr("<>bBhHiIqQcs$", c)) {
            snprintf(why, why_len,
                     "-s %s: '%c' at position %zu is not a pack character (< > b B h H i I q Q "
                     "c s $) and the spec is not json",
                     spec, c, i + 1);
            return -1;
        }
        if ((c == 's' || c == '$') && i + 1 < n &&
            !(c == 's' && spec[i + 1] == '$' && i + 2 == n)) {
            snprintf(why, why_len, "-s %s: '%c' at position %zu takes the rest: nothing may follow",
                     spec, c, i + 1);
            return -1;
        }
    }
    memcpy(sd->ops, spec, n + 1);
    return 0;
}

static uint64_t load(const unsigned char *p, size_t w, int little)
{
    uint64_t v = 0;
    for (size_t k = 0; k < w; k++)
        v |= (uint64_t)p[little ? k : w - 1 - k] << (8 * k);
    return v;
}

static int pack_render(const char *ops, const unsigned char *s, size_t len, kc_cli_buf_t *out,
                       char *why, size_t why_len)
{
    size_t at = 0;
    int little = 0, fields = 0;
    for (const char *op = ops; *op; op++) {
        if (*op == '<' || *op == '>') {
            little = *op == '<';
            continue;
        }
        if (*op == '$') {
            if (at != len) {
                snprintf(why, why_len, "%zu bytes left at byte %zu where $ wants the end", len - at,
                         at);
                return -1;
            }
            continue;
        }
        if (fields++ && kc_cli_buf_put(out, " ", 1))
            return -2;
        if (*op == 's') {
            if (kc_cli_buf_put(out, s + at, len - at))
                return -2;
            at = len;
            continue;
        }
        size_t w = width_of(*op);
        if (len - at < w) {
            snprintf(why, why_len, "'%c' needs %zu bytes at byte %zu, %zu left", *op, w, at,
                     len - at);
            return -1;
        }
        uint64_t u = load(s + at, w, little);
        at += w;
        char num[24];
        int k;
        if (*op == 'c') {
            num[0] = (char)u;
            k = 1;
        } else if (*op == 'B' || *op == 'H' || *op == 'I' || *op == 'Q') {
            k = snprintf(num, sizeof num, "%" PRIu64, u);
        } else { /* sign-extend from w bytes */
            uint64_t sign = (uint64_t)1 << (8 * w - 1);
            int64_t v = w == 8 ? (int64_t)u : (int64_t)((u ^ sign) - sign);
            k = snprintf(num, sizeof num, "%" PRId64, v);
        }
        if (kc_cli_buf_put(out, num, (size_t)k))
            return -2;
    }
    return 0;
}

static int indent(kc_cli_buf_t *out, size_t depth)
{
    if (kc_cli_buf_put(out, "\n", 1))
        return -1;
    for (size_t i = 0; i < depth; i++)
        if (kc_cli_buf_put(out, "  ", 2))
            return -1;
    return 0;
}

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Re-indents JSON token by token. What it checks: brackets match and nest at most 64 deep,
 * strings end, scalars are made of number and literal characters, and one value is given; a
 * value that fails is reported rather than printed half-indented. */
static int json_render(const unsigned char *s, size_t len, kc_cli_buf_t *out, char *why,
                       size_t why_len)
{
    char stack[64];
    size_t depth = 0, i = 0;
    int values = 0;
#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(why, why_len, __VA_ARGS__);                                                       \
        return -1;                                                                                 \
    } while (0)
#define PUT(p, n)                                                                                  \
    do {                                                                                           \
        if (kc_cli_buf_put(out, p, n))                                                             \
            return -2;                                                                             \
    } while (0)
    while (i < len) {
        unsigned char c = s[i];
        if (is_ws(c)) {
            i++;
            continue;
        }
        if (depth == 0 && values)
            BAD("not JSON: more than one value (byte %zu)", i);
        if (c == '"') {
            size_t j = i + 1;
            while (j < len && s[j] != '"')
                j += s[j] == '\\' ? 2 : 1;
            if (j >= len)
                BAD("not JSON: a string from byte %zu does not end", i);
            PUT(s + i, j + 1 - i);
            i = j + 1;
            values += depth == 0;
        } else if (c == '{' || c == '[') {
            if (depth == sizeof stack)
                BAD("JSON nested deeper than %zu levels", sizeof stack);
            stack[depth++] = (char)c;
            size_t j = i + 1;
            while (j < len && is_ws(s[j]))
                j++;
            if (j < len && s[j] == (c == '{' ? '}' : ']')) { /* empty: stays on one line */
                PUT(c == '{' ? "{}" : "[]", 2);
                depth--;
                i = j + 1;
                values += depth == 0;
                continue;
            }
            PUT(&s[i], 1);
            if (indent(out, depth))
                return -2;
            i++;
        } else if (c == '}' || c == ']') {
            if (!depth || stack[depth - 1] != (c == '}' ? '{' : '['))
                BAD("not JSON: '%c' at byte %zu closes nothing open", c, i);
            depth--;
            if (indent(out, depth))
                return -2;
            PUT(&s[i], 1);
            i++;
            values += depth == 0;
        } else if (c == ',' || c == ':') {
            if (!depth)
                BAD("not JSON: '%c' at byte %zu outside an object or array", c, i);
            if (c == ',') {
                PUT(",", 1);
                if (indent(out, depth))
                    return -2;
            } else {
                PUT(": ", 2);
            }
            i++;
        } else {
            size_t j = i;
            while (j < len && (strchr("+-.0123456789eE", s[j]) || (s[j] >= 'a' && s[j] <= 'z')))
                j++;
            if (j == i)
                BAD("not JSON: byte %zu (0x%02x) starts no value", i, c);
            PUT(s + i, j - i);
            i = j;
            values += depth == 0;
        }
    }
    if (depth)
        BAD("not JSON: %zu bracket%s left open at the end", depth, depth == 1 ? "" : "s");
    if (!values)
        BAD("not JSON: no value");
    return 0;
#undef BAD
#undef PUT
}

int kc_cli_serdes_render(const kc_cli_serdes_t *sd, const void *data, size_t len, kc_cli_buf_t *out,
                         char *why, size_t why_len)
{
    size_t mark = out->len;
    int rc = sd->json ? json_render(data, len, out, why, why_len)
                      : pack_render(sd->ops, data, len, out, why, why_len);
    if (rc)
        out->len = mark;
    if (rc == -2)
        snprintf(why, why_len, "out of memory");
    return rc;
}
