"""Emitters for the API table (io/proto/apis.gen.[ch]) and the unit tests' value fillers."""
import os

import emit_c
from emit_c import C_TYPES, Msg, header_comment, untagged, vr


def emit_apis(outdir, apis, source):
    H = [header_comment(source, "the API table"), "#ifndef KC_PROTO_APIS_GEN_H",
         "#define KC_PROTO_APIS_GEN_H", "", '#include "proto/wire.h"', ""]
    for stem, _, _ in apis:
        H.append('#include "proto/%s.gen.h"' % stem)
    H += ["",
          "/* One row per API this codec speaks. min/max: the 4.x schema's validVersions;",
          " * max_stable: max unless the schema marks its newest version unstable (brokers do not",
          " * accept it by default), which is the version negotiation may pick at most. */",
          "typedef struct kc_proto_api {",
          "    int16_t key;",
          "    const char *name;",
          "    int16_t min_version;",
          "    int16_t max_version;",
          "    int16_t max_stable;",
          "    int16_t flex_version; /* first flexible version (0x7fff: none) */",
          "    size_t request_size;",
          "    size_t response_size;",
          "    kc_err_t (*encode_request)(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *err);",
          "    kc_err_t (*decode_request)(void *m, int16_t v, kc_rbuf_t *r, kc_arena_t *a,",
          "                               kc_error_t *err);",
          "    kc_err_t (*encode_response)(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *err);",
          "    kc_err_t (*decode_response)(void *m, int16_t v, kc_rbuf_t *r, kc_arena_t *a,",
          "                                kc_error_t *err);",
          "} kc_proto_api_t;", "",
          "#define KC_PROTO_API_COUNT %d" % len(apis),
          "/* The largest API key in the table. */",
          "#define KC_PROTO_API_MAX_KEY %d" % max(req.api_key for _, req, _ in apis),
          "extern const kc_proto_api_t kc_proto_apis[KC_PROTO_API_COUNT];", "",
          "/* The row for an API key, or NULL when this codec does not speak it. */",
          "const kc_proto_api_t *kc_proto_api_find(int16_t key);", "", "#endif", ""]
    C = [header_comment(source, "the API table"), '#include "proto/apis.gen.h"', ""]
    rows = []
    for stem, req, resp in apis:
        for m, d in ((req, "request"), (resp, "response")):
            p = Msg(m).prefix
            C += ["static kc_err_t enc_%s(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *err)"
                  % p[3:], "{", "    return %s_encode(m, v, w, err);" % p, "}", "",
                  "static kc_err_t dec_%s(void *m, int16_t v, kc_rbuf_t *r, kc_arena_t *a,"
                  % p[3:], "                     kc_error_t *err)", "{",
                  "    return %s_decode(m, v, r, a, err);" % p, "}", ""]
        rq, rs = Msg(req).prefix, Msg(resp).prefix
        if req.versions != resp.versions:
            raise SystemExit("%s: request and response version ranges differ" % req.name)
        hi = req.versions[1]
        stable = hi - 1 if (req.unstable_latest or resp.unstable_latest) else hi
        rows.append("    {%d, \"%s\", %d, %d, %d, %d, sizeof(%s_t), sizeof(%s_t), enc_%s, dec_%s, "
                    "enc_%s, dec_%s}," % (req.api_key, req.name[:-len("Request")],
                                          req.versions[0], hi, stable,
                                          req.flex[0] if req.flex else 0x7fff, rq, rs, rq[3:],
                                          rq[3:], rs[3:], rs[3:]))
    C += ["const kc_proto_api_t kc_proto_apis[KC_PROTO_API_COUNT] = {"] + rows + ["};", "",
          "const kc_proto_api_t *kc_proto_api_find(int16_t key)", "{",
          "    for (int i = 0; i < KC_PROTO_API_COUNT; i++)",
          "        if (kc_proto_apis[i].key == key)", "            return &kc_proto_apis[i];",
          "    return NULL;", "}", ""]
    emit_c.write(os.path.join(outdir, "apis.gen.h"), H)
    emit_c.write(os.path.join(outdir, "apis.gen.c"), C)


# ---- test fillers ------------------------------------------------------------------------------

def fill_value(mm, f, expr, v_nullable, in_array):
    t = f.elem
    if f.struct:
        return ["fill_%s(&%s, v, a, seed);" % (mm.fn(f.struct), expr)]
    if t == "bool":
        return ["%s = (rnd(seed) & 1) != 0;" % expr]
    if t == "float64":
        return ["%s = (double)(rnd(seed) %% 1000) / 8.0;" % expr]
    if t == "uuid":
        return ["fill_uuid(&%s, seed);" % expr]
    if t in ("string", "bytes", "records"):
        fn = "fill_str" if t == "string" else "fill_bytes"
        nl = "false" if in_array else v_nullable
        return ["%s = %s(a, seed, %s);" % (expr, fn, nl)]
    return ["%s = (%s)rnd(seed);" % (expr, C_TYPES[t])]


def fill_field(mm, f, tagged):
    nullc = mm.c(f.nullable) if f.nullable else "false"
    n = f.cname
    L = []
    if f.array:
        elem = mm.ctype(f.struct) if f.struct else C_TYPES[f.elem]
        L += ["m->%s.count = (%s) && rnd(seed) %% 5 == 0 ? -1 : (int32_t)(rnd(seed) %% 3);"
              % (n, nullc),
              "if (m->%s.count > 0) {" % n,
              "    m->%s.items = kc_arena_calloc(a, (size_t)m->%s.count, sizeof(%s));"
              % (n, n, elem),
              "    for (int32_t i = 0; i < m->%s.count; i++) {" % n]
        L += ["        " + s for s in fill_value(mm, f, "m->%s.items[i]" % n, nullc, True)]
        L += ["    }", "}"]
        return L
    if f.struct and f.nullable and not tagged:
        L += ["m->has_%s = !(%s) || rnd(seed) %% 4 != 0;" % (n, nullc),
              "if (m->has_%s)" % n]
        L += ["    " + s for s in fill_value(mm, f, "m->%s" % n, nullc, False)]
        return L
    return fill_value(mm, f, "m->%s" % n, nullc, False)


def gen_fill(mm, st):
    L = ["static void fill_%s(%s *m, int16_t v, kc_arena_t *a, uint32_t *seed)"
         % (mm.fn(st), mm.ctype(st)), "{", "    (void)v;", "    (void)a;", "    (void)seed;"]
    for f in st.fields:
        r = untagged(f)
        if r is not None:
            L += emit_c.guarded(mm.c(r), fill_field(mm, f, False))
        elif f.tagged:
            L += ["    if ((%s) && v >= FLEX_MIN_%s && (rnd(seed) & 1)) {"
                  % (mm.c(f.tagged), mm.prefix.upper()),
                  "        m->has_%s = true;" % f.cname]
            L += ["        " + s for s in fill_field(mm, f, True)]
            L += ["    }"]
    L += ["}", ""]
    return L


def emit_fill(path, apis, singles, source):
    msgs = []
    stems = []
    for stem, req, resp in apis:
        stems.append(stem)
        msgs += [req, resp]
    for stem, ms in singles:
        stems.append(stem)
        msgs += ms
    L = ["/* GENERATED by io/proto/gen/generate.py from %s. Do not edit." % source,
         " * Deterministic value fillers for every generated message, for the round-trip tests:",
         " * fill a message for a version, encode, decode, re-encode, compare bytes. */",
         "#include <stdbool.h>", "#include <stdint.h>", "#include <string.h>", ""]
    for s in stems:
        L.append('#include "proto/%s.gen.h"' % s)
    L += ["",
          "static uint32_t rnd(uint32_t *s)", "{",
          "    *s = *s * 1103515245u + 12345u;", "    return *s >> 8;", "}", "",
          "static void fill_uuid(kc_uuid_t *u, uint32_t *seed)", "{",
          "    for (int i = 0; i < 16; i++)", "        u->b[i] = (uint8_t)rnd(seed);", "}", "",
          "static kc_str_t fill_str(kc_arena_t *a, uint32_t *seed, bool nullable)", "{",
          "    if (nullable && rnd(seed) % 4 == 0)", "        return KC_STR_NULL;",
          "    int32_t n = (int32_t)(rnd(seed) % 7);",
          "    char *p = kc_arena_calloc(a, (size_t)n + 1, 1);",
          "    for (int32_t i = 0; i < n; i++)", "        p[i] = (char)('a' + rnd(seed) % 26);",
          "    return (kc_str_t){p, n};", "}", "",
          "static kc_bytes_t fill_bytes(kc_arena_t *a, uint32_t *seed, bool nullable)", "{",
          "    kc_str_t s = fill_str(a, seed, nullable);",
          "    return (kc_bytes_t){(const uint8_t *)s.ptr, s.len};", "}", ""]
    for m in msgs:
        mm = Msg(m)
        L.append("#define FLEX_MIN_%s %d" % (mm.prefix.upper(), m.flex[0] if m.flex else 0x7fff))
        for st in m.structs:
            L.append("static void fill_%s(%s *m, int16_t v, kc_arena_t *a, uint32_t *seed);"
                     % (mm.fn(st), mm.ctype(st)))
    L.append("")
    for m in msgs:
        mm = Msg(m)
        for st in m.structs:
            L += gen_fill(mm, st)
        p = mm.prefix
        L += ["static void fillv_%s(void *m, int16_t v, kc_arena_t *a, uint32_t *seed)" % p[3:],
              "{", "    fill_%s(m, v, a, seed);" % mm.fn(m.root), "}", "",
              "static kc_err_t encv_%s(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *err)"
              % p[3:], "{", "    return %s_encode(m, v, w, err);" % p, "}", "",
              "static kc_err_t decv_%s(void *m, int16_t v, kc_rbuf_t *r, kc_arena_t *a," % p[3:],
              "                      kc_error_t *err)", "{",
              "    return %s_decode(m, v, r, a, err);" % p, "}", ""]
    L += ["typedef struct fill_entry {", "    const char *name;", "    int16_t min_version;",
          "    int16_t max_version;", "    int16_t api_key; /* -1: not an API message */",
          "    bool is_request;", "    size_t size;",
          "    void (*fill)(void *m, int16_t v, kc_arena_t *a, uint32_t *seed);",
          "    kc_err_t (*encode)(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *err);",
          "    kc_err_t (*decode)(void *m, int16_t v, kc_rbuf_t *r, kc_arena_t *a, kc_error_t *err);",
          "} fill_entry_t;", "", "static const fill_entry_t fill_entries[] = {"]
    for m in msgs:
        p = Msg(m).prefix
        L.append("    {\"%s\", %d, %d, %d, %s, sizeof(%s_t), fillv_%s, encv_%s, decv_%s},"
                 % (m.name, m.versions[0], m.versions[1],
                    m.api_key if m.api_key is not None else -1,
                    "true" if m.kind == "request" else "false", p, p[3:], p[3:], p[3:]))
    L += ["};", ""]
    emit_c.write(path, L)
