/*
 * Configuration keys: parsing and per-key validation, driven by the table in conf_keys.h.
 * Threads: a kc_conf_t is owned by one thread at a time (no shared state here); the table is
 * read-only static data, so the reference printer is callable from any thread.
 */
#include "conf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "conf_peers.h"

enum { T_INT, T_BOOL, T_STR, T_ENUM, T_LIST };
enum { F_SECRET = 1, F_HOSTPORT = 2, F_EMPTY_OK = 4, F_MEMBER_ID = 8, F_FRACTION = 16 };
#define TYPE_INT       T_INT
#define TYPE_BOOL      T_BOOL
#define TYPE_STR       T_STR
#define TYPE_ENUM      T_ENUM
#define TYPE_LIST      T_LIST
#define FLAG_0         0
#define FLAG_SECRET    F_SECRET
#define FLAG_HOSTPORT  F_HOSTPORT
#define FLAG_EMPTY_OK  F_EMPTY_OK
#define FLAG_MEMBER_ID F_MEMBER_ID
#define FLAG_FRACTION  F_FRACTION

typedef struct key_def {
    const char *name;
    int type;
    const char *def;
    int64_t min, max;
    const char *allowed;
    int flags;
    const char *doc;
} key_def_t;

static const key_def_t keys[KC_CONF__COUNT] = {
#define KC__CONF_DEF(id, name, type, def, min, max, allowed, flags, doc)                           \
    [KC_CONF_##id] = {name, TYPE_##type, def, min, max, allowed, FLAG_##flags, doc},
    KC_CONF_TABLE(KC__CONF_DEF)
#undef KC__CONF_DEF
};

/* Names other clients use for the same key (librdkafka's plural; Java's names of the PEM
 * settings, which mean the same with its ssl.keystore.type / ssl.truststore.type PEM, the only
 * in-memory type there is), accepted silently. */
static const struct {
    const char *alias, *name;
} aliases[] = {{"sasl.mechanisms", "sasl.mechanism"},
               {"metadata.broker.list", "bootstrap.servers"},
               {"ssl.keystore.key", "ssl.key.pem"},
               {"ssl.keystore.certificate.chain", "ssl.certificate.pem"},
               {"ssl.truststore.certificates", "ssl.ca.pem"}};

static const char *type_name(int t)
{
    static const char *n[] = {"int", "bool", "string", "enum", "list"};
    return n[t];
}

const char *kc_conf_name(kc_conf_id_t id)
{
    return keys[id].name;
}

void kc_conf_key_info(kc_conf_id_t id, kc_conf_key_info_t *out)
{
    static const kc_conf_type_t types[] = {KC_CONF_T_INT, KC_CONF_T_BOOL, KC_CONF_T_STR,
                                           KC_CONF_T_ENUM, KC_CONF_T_LIST};
    const key_def_t *k = &keys[id];
    *out = (kc_conf_key_info_t){.name = k->name,
                                .type = types[k->type],
                                .def = k->def,
                                .min = k->min,
                                .max = k->max,
                                .allowed = k->allowed,
                                .secret = (k->flags & F_SECRET) != 0,
                                .empty_ok = (k->flags & F_EMPTY_OK) != 0};
}

int kc_conf_edit_distance(const char *a, const char *b)
{
    /* Two rows of the classic DP; inputs are clipped to 63 chars (key names are shorter). */
    int prev[64], cur[64];
    size_t la = strnlen(a, 63), lb = strnlen(b, 63);
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] +
                      (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(int) * (lb + 1));
    }
    return prev[lb];
}

static int find_key(const char *key)
{
    for (int i = 0; i < KC_CONF__COUNT; i++)
        if (strcmp(keys[i].name, key) == 0)
            return i;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(aliases[i].alias, key) == 0)
            return find_key(aliases[i].name);
    return -1;
}

static const char *nearest_key(const char *key, int *dist)
{
    int best = -1, bestd = 1 << 30;
    for (int i = 0; i < KC_CONF__COUNT; i++) {
        int d = kc_conf_edit_distance(key, keys[i].name);
        if (d < bestd) {
            bestd = d;
            best = i;
        }
    }
    *dist = bestd;
    return keys[best].name;
}

static bool parse_i64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0' || isspace((unsigned char)*s))
        return false;
    *out = v;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    if (strcasecmp(s, "true") == 0)
        *out = true;
    else if (strcasecmp(s, "false") == 0)
        *out = false;
    else
        return false;
    return true;
}

/* Is [v, v+n) one of the '|'-separated words of `allowed`? Case-sensitive, as in Kafka. */
static bool in_allowed(const char *allowed, const char *v, size_t n)
{
    const char *p = allowed;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && memcmp(p, v, n) == 0)
            return true;
        if (!bar)
            break;
        p = bar + 1;
    }
    return false;
}

static bool valid_hostport(const char *s, size_t n)
{
    const char *colon = memrchr(s, ':', n);
    if (!colon || colon == s)
        return false;
    size_t plen = n - (size_t)(colon + 1 - s);
    if (plen == 0 || plen > 5)
        return false;
    int port = 0;
    for (size_t i = 0; i < plen; i++) {
        if (!isdigit((unsigned char)colon[1 + i]))
            return false;
        port = port * 10 + (colon[1 + i] - '0');
    }
    return port >= 1 && port <= 65535;
}

static kc_err_t check_list(const key_def_t *k, const char *v, kc_error_t *err)
{
    const char *p = v;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        while (n && isspace((unsigned char)*p)) {
            p++;
            n--;
        }
        while (n && isspace((unsigned char)p[n - 1]))
            n--;
        if (n == 0)
            return kc_fail(err, KC_ERR_CONFIG, "%s: empty element in \"%s\"", k->name, v);
        if (k->allowed && !in_allowed(k->allowed, p, n))
            return kc_fail(err, KC_ERR_CONFIG, "%s: \"%.*s\" is not allowed; allowed: %s", k->name,
                           (int)n, p, k->allowed);
        if ((k->flags & F_HOSTPORT) && !valid_hostport(p, n))
            return kc_fail(err, KC_ERR_CONFIG, "%s: \"%.*s\" is not host:port (port 1..65535)",
                           k->name, (int)n, p);
        if (!comma)
            return KC_OK;
        p = comma + 1;
    }
}

/* Java's rule for group.instance.id (the broker enforces the same and would answer
 * INVALID_REQUEST much later, at the first join): at most 249 of [a-zA-Z0-9._-], not "." or "..".
 * Empty means unset (dynamic membership). */
static kc_err_t check_member_id(const key_def_t *k, const char *v, kc_error_t *err)
{
    size_t n = strlen(v);
    if (n > 249)
        return kc_fail(err, KC_ERR_CONFIG, "%s: %zu characters is too long (allowed: at most 249)",
                       k->name, n);
    if (strcmp(v, ".") == 0 || strcmp(v, "..") == 0)
        return kc_fail(err, KC_ERR_CONFIG, "%s: \"%s\" is not allowed", k->name, v);
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)v[i]) && !strchr("._-", v[i]))
            return kc_fail(err, KC_ERR_CONFIG,
                           "%s: \"%s\" has the character '%c' (allowed: a-z A-Z 0-9 . _ -)",
                           k->name, v, isprint((unsigned char)v[i]) ? v[i] : '?');
    return KC_OK;
}

/* The value check of one key. Secret values are never echoed back. */
/* A FRACTION value: a decimal number with 0 <= x < 1 ("0", "0.8", ".25"); no exponent, sign,
 * infinity or NaN spellings (strtod would take them). */
static bool parse_fraction(const char *v, double *out)
{
    bool digit = false;
    for (const char *p = v; *p; p++) {
        if (*p >= '0' && *p <= '9')
            digit = true;
        else if (*p != '.')
            return false;
    }
    char *end;
    errno = 0;
    double x = digit ? strtod(v, &end) : -1;
    if (!digit || *end || errno || !(x >= 0 && x < 1))
        return false;
    if (out)
        *out = x;
    return true;
}

double kc_conf_fraction(const kc_conf_t *c, kc_conf_id_t id)
{
    double x = 0;
    (void)parse_fraction(kc_conf_str(c, id), &x); /* checked at set time; the default parses */
    return x;
}

static kc_err_t check_value(const key_def_t *k, const char *v, kc_error_t *err)
{
    const char *shown = (k->flags & F_SECRET) ? "[redacted]" : v;
    int64_t i;
    bool b;
    switch (k->type) {
    case T_INT:
        if (!parse_i64(v, &i))
            return kc_fail(err, KC_ERR_CONFIG, "%s: \"%s\" is not an integer (allowed: %lld..%lld)",
                           k->name, shown, (long long)k->min, (long long)k->max);
        if (i < k->min || i > k->max)
            return kc_fail(err, KC_ERR_CONFIG, "%s: %lld is out of range (allowed: %lld..%lld)",
                           k->name, (long long)i, (long long)k->min, (long long)k->max);
        return KC_OK;
    case T_BOOL:
        if (!parse_bool(v, &b))
            return kc_fail(err, KC_ERR_CONFIG, "%s: \"%s\" is not a boolean (allowed: true|false)",
                           k->name, shown);
        return KC_OK;
    case T_ENUM:
        if (!in_allowed(k->allowed, v, strlen(v)) && !(!v[0] && (k->flags & F_EMPTY_OK)))
            return kc_fail(err, KC_ERR_CONFIG, "%s: \"%s\" is not allowed; allowed: %s%s", k->name,
                           shown, k->allowed, (k->flags & F_EMPTY_OK) ? " or empty" : "");
        return KC_OK;
    case T_STR:
        if (k->flags & F_MEMBER_ID)
            return check_member_id(k, v, err);
        if ((k->flags & F_FRACTION) && !parse_fraction(v, NULL))
            return kc_fail(err, KC_ERR_CONFIG,
                           "%s: \"%s\" is not a fraction (allowed: a decimal number from 0 up to, "
                           "not including, 1)",
                           k->name, shown);
        return KC_OK;
    case T_LIST:
        return check_list(k, v, err);
    default:
        return KC_OK;
    }
}

kc_conf_t *kc_conf_new(void)
{
    return calloc(1, sizeof(kc_conf_t));
}

void kc_conf_destroy(kc_conf_t *conf)
{
    if (!conf)
        return;
    for (int i = 0; i < KC_CONF__COUNT; i++) {
        if (conf->val[i] && (keys[i].flags & F_SECRET))
            explicit_bzero(conf->val[i], strlen(conf->val[i]));
        free(conf->val[i]);
    }
    free(conf);
}

kc_conf_t *kc_conf_dup(const kc_conf_t *conf)
{
    kc_conf_t *d = kc_conf_new();
    if (!d)
        return NULL;
    for (int i = 0; i < KC_CONF__COUNT; i++) {
        if (conf->val[i] && !(d->val[i] = strdup(conf->val[i]))) {
            kc_conf_destroy(d);
            return NULL;
        }
    }
    d->log_cb = conf->log_cb;
    d->log_opaque = conf->log_opaque;
    d->oauth_cb = conf->oauth_cb;
    d->oauth_opaque = conf->oauth_opaque;
    return d;
}

kc_err_t kc_conf_set_oauthbearer_token_cb(kc_conf_t *conf, kc_oauthbearer_token_cb_t cb,
                                          void *opaque, kc_error_t *err)
{
    if (!conf)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_conf_set_oauthbearer_token_cb: NULL conf");
    conf->oauth_cb = cb;
    conf->oauth_opaque = cb ? opaque : NULL;
    return KC_OK;
}

kc_err_t kc_conf_set_log_cb(kc_conf_t *conf, kc_log_cb_t cb, void *opaque, kc_error_t *err)
{
    if (!conf)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_conf_set_log_cb: NULL conf");
    conf->log_cb = cb;
    conf->log_opaque = cb ? opaque : NULL;
    return KC_OK;
}

kc_err_t kc_conf_set(kc_conf_t *conf, const char *key, const char *value, kc_error_t *err)
{
    if (!conf || !key || !value)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_conf_set: NULL %s",
                       !conf  ? "conf"
                       : !key ? "key"
                              : "value");
    int id = find_key(key);
    if (id < 0) {
        int d;
        const char *near = nearest_key(key, &d);
        /* Suggest only a plausible typo: more than a third of the name wrong is another key. */
        if (d <= (int)strlen(key) / 3 + 1)
            return kc_fail(err, KC_ERR_CONFIG,
                           "unknown configuration key \"%s\"; did you mean "
                           "\"%s\"?",
                           key, near);
        return kc_fail(err, KC_ERR_CONFIG,
                       "unknown configuration key \"%s\" (kconsume --help "
                       "lists every key)",
                       key);
    }
    kc_err_t rc = check_value(&keys[id], value, err);
    if (rc != KC_OK)
        return rc;
    char *copy = strdup(value);
    if (!copy)
        return kc_fail(err, KC_ERR_NOMEM, "kc_conf_set: %s", key);
    if (conf->val[id] && (keys[id].flags & F_SECRET))
        explicit_bzero(conf->val[id], strlen(conf->val[id]));
    free(conf->val[id]);
    conf->val[id] = copy;
    kc_error_clear(err);
    return KC_OK;
}

const char *kc_conf_str(const kc_conf_t *c, kc_conf_id_t id)
{
    return c && c->val[id] ? c->val[id] : keys[id].def;
}

bool kc_conf_is_set(const kc_conf_t *c, kc_conf_id_t id)
{
    return c && c->val[id] != NULL;
}

int64_t kc_conf_int(const kc_conf_t *c, kc_conf_id_t id)
{
    int64_t v = 0;
    parse_i64(kc_conf_str(c, id), &v);
    return v;
}

bool kc_conf_bool(const kc_conf_t *c, kc_conf_id_t id)
{
    bool b = false;
    parse_bool(kc_conf_str(c, id), &b);
    return b;
}

kc_err_t kc_conf_get(const kc_conf_t *conf, const char *key, char *buf, size_t *len)
{
    int id = find_key(key);
    if (id < 0)
        return KC_ERR_NOT_FOUND;
    const char *v = (keys[id].flags & F_SECRET) ? "[redacted]" : kc_conf_str(conf, id);
    size_t need = strlen(v) + 1;
    if (len) {
        size_t have = *len;
        *len = need;
        if (have < need)
            return KC_ERR_TOO_LARGE;
    }
    if (buf)
        memcpy(buf, v, need);
    return KC_OK;
}

/* A key's allowed values for the reference: the range, the booleans as `bools`, or the ENUM/LIST
 * choices separated by `sep`; empty when anything goes. */
static void allowed_text(const key_def_t *k, char sep, const char *bools, char *buf, size_t cap)
{
    buf[0] = 0;
    if (k->type == T_INT)
        snprintf(buf, cap, "%lld..%lld", (long long)k->min, (long long)k->max);
    else if (k->type == T_BOOL)
        snprintf(buf, cap, "%s", bools);
    else if (k->allowed)
        snprintf(buf, cap, "%s%s", k->allowed, (k->flags & F_EMPTY_OK) ? " or empty" : "");
    if (k->type != T_BOOL)
        for (char *c = buf; *c; c++)
            if (*c == '|')
                *c = sep;
}

/* A secret key's default is empty by construction; print nothing for it regardless. */
static const char *default_text(const key_def_t *k)
{
    return (k->flags & F_SECRET) ? "(secret)" : k->def[0] ? k->def : "(unset)";
}

/* One table cell: '|' would end the cell, so it is escaped. */
static void md_cell(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|')
            fputc('\\', f);
        fputc(*s, f);
    }
}

static void md_peer(FILE *f, const char *name)
{
    if (name) {
        fputc('`', f);
        md_cell(f, name);
        fputc('`', f);
    } else {
        fputs("-", f);
    }
}

/* docs/CONFIGURATION.md, whole: tests/unit/test_conf.c compares the file with this. */
static void print_markdown(FILE *f)
{
    fprintf(f, "# Configuration\n\n"
               "Generated by `kconsume --config-reference` from runtime/conf_keys.h and "
               "runtime/conf_peers.c (`make docs` rewrites it; `make test` fails when it is "
               "stale). Keys are set with kc_conf_set (or `-X key=value` on the command line) "
               "and use Kafka's names; the Java and librdkafka columns give each client's key "
               "of the same meaning (`-`: it has none). Secret keys are never printed or read "
               "back.\n\n");
    fprintf(f, "| key | type | default | allowed | Java | librdkafka | description |\n"
               "|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < KC_CONF__COUNT; i++) {
        const key_def_t *k = &keys[i];
        char allowed[256];
        allowed_text(k, '/', "true, false", allowed, sizeof allowed);
        const char *def = default_text(k);
        const kc_conf_peer_t *p = kc_conf_peer(k->name);
        fprintf(f, "| `%s` | %s | ", k->name, type_name(k->type));
        md_cell(f, def);
        fputs(" | ", f);
        md_cell(f, allowed);
        fputs(" | ", f);
        md_peer(f, p ? p->java : NULL);
        fputs(" | ", f);
        md_peer(f, p ? p->rdkafka : NULL);
        fputs(" | ", f);
        md_cell(f, k->doc);
        if (p && p->note) {
            fputs(" (", f);
            md_cell(f, p->note);
            fputs(")", f);
        }
        fputs(" |\n", f);
    }
    size_t n;
    const kc_conf_foreign_t *fo = kc_conf_foreign(&n);
    fprintf(f, "\n## Keys of other clients that kconsume does not take\n\n"
               "| client | key | instead |\n|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "| %s | `", fo[i].client);
        md_cell(f, fo[i].keys);
        fputs("` | ", f);
        md_cell(f, fo[i].instead);
        fputs(" |\n", f);
    }
}

void kc_conf_print_reference(void *out, int markdown)
{
    FILE *f = out;
    if (markdown) {
        print_markdown(f);
        return;
    }
    for (int i = 0; i < KC_CONF__COUNT; i++) {
        const key_def_t *k = &keys[i];
        char allowed[256];
        allowed_text(k, '|', "true|false", allowed, sizeof allowed);
        const char *def = default_text(k);
        fprintf(f, "  %-38s %-6s default %s%s%s\n      %s\n", k->name, type_name(k->type), def,
                allowed[0] ? "; allowed " : "", allowed, k->doc);
    }
}

void kc_conf_dump(const kc_conf_t *conf, void *out)
{
    FILE *f = out;
    for (int i = 0; i < KC_CONF__COUNT; i++) {
        const char *v = kc_conf_str(conf, (kc_conf_id_t)i);
        bool secret = (keys[i].flags & F_SECRET) && v[0];
        fprintf(f, "%s=%s\n", keys[i].name, secret ? "[redacted]" : v);
    }
}

bool kc_conf_share(const kc_conf_t *c)
{
    return strcmp(kc_conf_str(c, KC_CONF_GROUP_TYPE), "share") == 0;
}

kc_group_proto_choice_t kc_conf_group_protocol(const kc_conf_t *c, const char **key)
{
    static const kc_conf_id_t classic_only[] = {
        KC_CONF_PARTITION_ASSIGNMENT_STRATEGY, KC_CONF_SESSION_TIMEOUT_MS,
        KC_CONF_HEARTBEAT_INTERVAL_MS, KC_CONF_REBALANCE_TIMEOUT_MS};
    static const kc_conf_id_t consumer_only[] = {KC_CONF_GROUP_REMOTE_ASSIGNOR,
                                                 KC_CONF_GROUP_CONSUMER_SESSION_TIMEOUT_MS};
    const char *dummy;
    if (!key)
        key = &dummy;
    *key = NULL;
    const char *named = kc_conf_str(c, KC_CONF_GROUP_PROTOCOL);
    if (strcmp(named, "classic") == 0)
        return KC_GROUP_PROTO_CLASSIC;
    if (strcmp(named, "consumer") == 0)
        return KC_GROUP_PROTO_CONSUMER;
    const char *cl = NULL, *co = NULL;
    for (size_t i = 0; !cl && i < sizeof classic_only / sizeof classic_only[0]; i++)
        if (kc_conf_is_set(c, classic_only[i]))
            cl = kc_conf_name(classic_only[i]);
    for (size_t i = 0; !co && i < sizeof consumer_only / sizeof consumer_only[0]; i++)
        if (kc_conf_is_set(c, consumer_only[i]))
            co = kc_conf_name(consumer_only[i]);
    if (cl && co) {
        *key = cl;
        return KC_GROUP_PROTO_CONFLICT;
    }
    *key = cl ? cl : co;
    return cl ? KC_GROUP_PROTO_CLASSIC : co ? KC_GROUP_PROTO_CONSUMER : KC_GROUP_PROTO_AUTO;
}
