/* The CLI's pure parts: -f compile/render with fake records, and flag parsing (tools/cli). */
#include <stdio.h>
#include <string.h>

#include "kc_test.h"

#include "cli/args.h"
#include "cli/conf_file.h"
#include "cli/format.h"
#include "cli/live.h"
#include "cli/serdes.h"

/* Fake headers: "a"="1", "nul"=null, then either the end or a malformed marker. */
typedef struct fake_hdrs {
    int n;
    int malformed_after;
} fake_hdrs_t;

static int fake_next(const void *src, size_t *cursor, const char **name, size_t *name_len,
                     const void **value, size_t *value_len)
{
    const fake_hdrs_t *h = src;
    if (h->malformed_after >= 0 && (int)*cursor == h->malformed_after)
        return -1;
    if ((int)*cursor >= h->n)
        return 1;
    static const char *names[] = {"a", "nul", "c"};
    static const char *vals[] = {"1", NULL, "xyz"};
    *name = names[*cursor];
    *name_len = strlen(names[*cursor]);
    *value = vals[*cursor];
    *value_len = vals[*cursor] ? strlen(vals[*cursor]) : 0;
    ++*cursor;
    return 0;
}

static kc_cli_rec_t sample(void)
{
    return (kc_cli_rec_t){.topic = "orders",
                          .partition = 7,
                          .offset = 1234567890123,
                          .timestamp = 1700000000001,
                          .key = "k1",
                          .key_len = 2,
                          .value = "hello",
                          .value_len = 5,
                          .worker = 3,
                          .member = "m-42",
                          .cb_start_ns = 987654321};
}

/* Renders `spec` for `r` and compares with `want` exactly (lengths included). */
static void expect(const char *spec, const kc_cli_rec_t *r, const char *want, size_t want_len)
{
    kc_cli_fmt_t f;
    char why[256] = "";
    int rc = kc_cli_fmt_compile(&f, spec, why, sizeof why);
    if (rc)
        fail_msg("compile '%s': %s", spec, why);
    kc_cli_buf_t b = {0};
    assert_int_equal(kc_cli_fmt_render(&f, r, &b), 0);
    if (b.len != want_len || (want_len && memcmp(b.p, want, want_len)))
        fail_msg("'%s' rendered '%.*s' (%zu bytes), want '%s'", spec, (int)b.len, b.p ? b.p : "",
                 b.len, want);
    kc_cli_buf_free(&b);
    kc_cli_fmt_free(&f);
}
#define EXPECT(spec, r, lit) expect(spec, r, lit, sizeof lit - 1)

static void every_conversion(void **state)
{
    (void)state;
    kc_cli_rec_t r = sample();
    EXPECT("%s\\n", &r, "hello\n"); /* the CLI's default */
    EXPECT("%t %p %o %k %s %T %K %S %w %M %n", &r,
           "orders 7 1234567890123 k1 hello 1700000000001 2 5 3 m-42 987654321");
    EXPECT("[%t:%p]\\t%%o=%o\\\\x", &r, "[orders:7]\t%o=1234567890123\\x");
    EXPECT("", &r, "");
    EXPECT("plain text only", &r, "plain text only");
    EXPECT("\\r\\n", &r, "\r\n");
}

static void nulls_and_binary(void **state)
{
    (void)state;
    kc_cli_rec_t r = sample();
    r.key = NULL;
    r.value = "";
    r.value_len = 0;
    EXPECT("<%k|%K|%s|%S>", &r, "<|-1||0>"); /* null key: -1; empty value: 0 */
    r.value = NULL;
    EXPECT("%S", &r, "-1");
    static const char bin[] = {'a', 0, 'b', '\n'};
    r.value = bin;
    r.value_len = sizeof bin;
    expect("%s|", &r, "a\0b\n|", 5); /* bytes as they are, NUL included */
}

static void headers(void **state)
{
    (void)state;
    kc_cli_rec_t r = sample();
    EXPECT("[%h]", &r, "[]"); /* no header source */
    fake_hdrs_t h = {.n = 3, .malformed_after = -1};
    r.hdr_src = &h;
    r.hdr_next = fake_next;
    EXPECT("[%h]", &r, "[a=1,nul,c=xyz]");
    h.malformed_after = 1;
    EXPECT("[%h]", &r, "[a=1,(malformed headers)]");
    r.key = NULL;
    r.value = NULL;
    r.broker = 1;
    EXPECT("%J", &r,
           "{\"topic\":\"orders\",\"partition\":7,\"offset\":1234567890123,\"tstype\":"
           "\"create\",\"ts\":1700000000001,\"broker\":1,\"headers\":[\"a\",\"1\"],"
           "\"headers_malformed\":true,\"key\":null,\"payload\":null}");
    r = sample();
    r.hdr_src = &h;
    r.hdr_next = fake_next;
    h.malformed_after = 0;
    EXPECT("[%h]", &r, "[(malformed headers)]");
}

/* -J: kcat's envelope, field by field (the kafka suite compares it with kcat's own output). */
static void json_envelope(void **state)
{
    (void)state;
    kc_cli_rec_t r = sample();
    r.ts_type = 0;
    r.broker = 2;
    EXPECT("%J", &r,
           "{\"topic\":\"orders\",\"partition\":7,\"offset\":1234567890123,\"tstype\":\"create\","
           "\"ts\":1700000000001,\"broker\":2,\"key\":\"k1\",\"payload\":\"hello\"}");
    fake_hdrs_t h = {.n = 3, .malformed_after = -1};
    r.hdr_src = &h;
    r.hdr_next = fake_next;
    r.ts_type = 1;
    r.key = NULL;
    static const char v[] = {'"', '\\', '\n', '\t', 1, 0x1b, (char)0xc3, (char)0xa9, (char)0xff};
    r.value = v;
    r.value_len = sizeof v;
    EXPECT("%J", &r,
           "{\"topic\":\"orders\",\"partition\":7,\"offset\":1234567890123,\"tstype\":"
           "\"logappend\",\"ts\":1700000000001,\"broker\":2,\"headers\":[\"a\",\"1\",\"nul\",null,"
           "\"c\",\"xyz\"],\"key\":null,\"payload\":\"\\\"\\\\\\n\\t\\u0001\\u001B\xc3\xa9\xff\"}");
    h.n = 0; /* a header source with no headers: no "headers" field, as kcat */
    r.ts_type = -1;
    r.value = NULL;
    EXPECT("%J", &r,
           "{\"topic\":\"orders\",\"partition\":7,\"offset\":1234567890123,\"tstype\":"
           "\"unknown\",\"ts\":1700000000001,\"broker\":2,\"key\":null,\"payload\":null}");
}

static void compile_errors(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *needle;
    } bad[] = {
        {"%x", "'%x'"},         {"abc%", "at the end"},  {"\\q", "'\\q'"},
        {"ok\\", "at the end"}, {"%s %Z", "position 4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kc_cli_fmt_t f;
        char why[256] = "";
        assert_int_equal(kc_cli_fmt_compile(&f, bad[i].spec, why, sizeof why), -1);
        if (!strstr(why, bad[i].needle))
            fail_msg("'%s': message '%s' lacks '%s'", bad[i].spec, why, bad[i].needle);
        assert_null(f.pieces); /* nothing to free after a failure */
    }
}

static void uses_and_merging(void **state)
{
    (void)state;
    kc_cli_fmt_t f;
    char why[128];
    assert_int_equal(kc_cli_fmt_compile(&f, "a\\tb%%c%sd", why, sizeof why), 0);
    assert_int_equal(f.n, 3); /* "a\tb%c", %s, "d": literal runs are one piece each */
    assert_true(kc_cli_fmt_uses(&f, KC_CLI_VALUE));
    assert_false(kc_cli_fmt_uses(&f, KC_CLI_MEMBER));
    assert_false(kc_cli_fmt_uses(&f, KC_CLI_HEADERS));
    kc_cli_fmt_free(&f);
}

/* Renders many records into one buffer: it grows and keeps every byte in order. */
static void buffer_growth(void **state)
{
    (void)state;
    kc_cli_fmt_t f;
    char why[128];
    assert_int_equal(kc_cli_fmt_compile(&f, "%p %o\\n", why, sizeof why), 0);
    kc_cli_buf_t b = {0};
    kc_cli_rec_t r = sample();
    for (int i = 0; i < 5000; i++) {
        r.offset = i;
        assert_int_equal(kc_cli_fmt_render(&f, &r, &b), 0);
    }
    size_t pos = 0;
    for (int i = 0; i < 5000; i++) {
        char line[32];
        int n = snprintf(line, sizeof line, "7 %d\n", i);
        assert_true(pos + (size_t)n <= b.len);
        assert_memory_equal(b.p + pos, line, (size_t)n);
        pos += (size_t)n;
    }
    assert_int_equal(pos, b.len);
    kc_cli_buf_free(&b);
    kc_cli_fmt_free(&f);
}

/* ---- flags ----------------------------------------------------------------------------------- */

static int parse(kc_cli_args_t *a, char *why, const char *const *argv_in)
{
    char *argv[32];
    int argc = 0;
    while (argv_in[argc]) {
        argv[argc] = (char *)argv_in[argc];
        argc++;
    }
    argv[argc] = NULL;
    return kc_cli_args_parse(a, argc, argv, why, 256);
}

static void flags_ok(void **state)
{
    (void)state;
    kc_cli_args_t a;
    char why[256];
    const char *argv[] = {"kconsume", "-b",        "h:1", "-t",      "x",
                          "-t",       "y",         "-p",  "3",       "-o",
                          "@1700",    "-c",        "10",  "-e",      "-X",
                          "a.b=c=d",  "--workers", "4",   "--stats", "500:/t/s:1.jsonl",
                          "-q",       "--work-us", "50",  NULL};
    assert_int_equal(parse(&a, why, argv), KC_CLI_EXIT_OK);
    assert_string_equal(a.brokers, "h:1");
    assert_int_equal(a.n_topics, 2);
    assert_string_equal(a.topics[1], "y");
    assert_int_equal(a.partition, 3);
    assert_int_equal(a.start, KC_CLI_START_TIMESTAMP);
    assert_int_equal(a.start_value, 1700);
    assert_int_equal(a.count, 10);
    assert_true(a.exit_at_end);
    assert_int_equal(a.n_conf, 1);
    assert_string_equal(a.conf[0], "a.b=c=d");
    assert_int_equal(a.workers, 4);
    assert_int_equal(a.stats_ms, 500);
    assert_string_equal(a.stats_file, "/t/s:1.jsonl"); /* only the first ':' splits */
    assert_true(a.quiet);
    assert_int_equal(a.work_us, 50);
    assert_string_equal(a.format, "%s\\n");
    kc_cli_args_free(&a);

    const char *argvj[] = {"kconsume", "-C", "-b", "h:1", "-t", "x", "-J", NULL};
    assert_int_equal(parse(&a, why, argvj), KC_CLI_EXIT_OK);
    assert_string_equal(a.format, KC_CLI_JSON_FORMAT);
    kc_cli_args_free(&a);
    const char *argvl[] = {"kconsume", "-b", "h:1", "-L", NULL}; /* -L: -t optional */
    assert_int_equal(parse(&a, why, argvl), KC_CLI_EXIT_OK);
    assert_true(a.list);
    kc_cli_args_free(&a);
    const char *argvq[] = {"kconsume", "-b", "h:1", "-Q", "-t", "a.b-c:3:1700000000000", NULL};
    assert_int_equal(parse(&a, why, argvq), KC_CLI_EXIT_OK);
    assert_true(a.query);
    assert_string_equal(a.queries[0].topic, "a.b-c");
    assert_int_equal(a.queries[0].partition, 3);
    assert_int_equal(a.queries[0].timestamp, 1700000000000);
    kc_cli_args_free(&a);

    const char *argv2[] = {"kconsume", "-b", "h:1", "-t", "x", "-o", "beginning", NULL};
    assert_int_equal(parse(&a, why, argv2), KC_CLI_EXIT_OK);
    assert_int_equal(a.start, KC_CLI_START_BEGINNING);
    assert_int_equal(a.partition, -1);
    kc_cli_args_free(&a);
}

static void flags_bad(void **state)
{
    (void)state;
    static const struct {
        const char *argv[10];
        const char *needle;
    } bad[] = {
        {{"kconsume", "-t", "x", NULL}, "-b BROKERS is required"},
        {{"kconsume", "-b", "h", NULL}, "-t TOPIC is required"},
        {{"kconsume", "-b", "h", "-t", "x", "-p", "abc", NULL}, "-p abc"},
        {{"kconsume", "-b", "h", "-t", "x", "-o", "12x", NULL}, "-o 12x"},
        {{"kconsume", "-b", "h", "-t", "x", "-o", "@", NULL}, "-o @"},
        {{"kconsume", "-b", "h", "-t", "x", "-c", "0", NULL}, "-c 0"},
        {{"kconsume", "-b", "h", "-t", "x", "-X", "novalue", NULL}, "-X novalue"},
        {{"kconsume", "-b", "h", "-t", "x", "--stats", "fast", NULL}, "--stats fast"},
        {{"kconsume", "-b", "h", "-t", "x", "--workers", "0", NULL}, "--workers 0"},
        {{"kconsume", "-b", "h", "-t", "x", "--work-us", "-1", NULL}, "--work-us -1"},
        {{"kconsume", "-b", "h", "-t", "x", "-Z", NULL}, "'-Z'"},
        {{"kconsume", "-b", "h", "-t", "x", "--frobnicate", NULL}, "'--frobnicate'"},
        {{"kconsume", "-b", "h", "-t", NULL}, "-t needs a value"},
        {{"kconsume", "-b", "h", "-t", "x", "stray", NULL}, "'stray'"},
        {{"kconsume", "-b", "h", "-t", "x", "-G", "g", "-p", "1", NULL}, "-p"},
        {{"kconsume", "-b", "h", "-t", "x", "-G", "g", "-o", "5", NULL}, "-o OFFSET"},
        {{"kconsume", "-b", "h", "-t", "x", "-J", "-f", "%s", NULL}, "-J prints"},
        {{"kconsume", "-b", "h", "-L", "-Q", NULL}, "use one of them"},
        {{"kconsume", "-b", "h", "-Q", NULL}, "-Q needs -t"},
        {{"kconsume", "-b", "h", "-Q", "-t", "x:1", NULL}, "TOPIC:PARTITION:TIMESTAMP"},
        {{"kconsume", "-b", "h", "-Q", "-t", "x:a:1", NULL}, "the partition"},
        {{"kconsume", "-b", "h", "-Q", "-t", "x:1:-5", NULL}, "the timestamp"},
        {{"kconsume", "-b", "h", "-L", "-G", "g", NULL}, "-G does not apply"},
        {{"kconsume", "-b", "h", "-L", "-e", NULL}, "-e do not apply"},
        {{"kconsume", "-b", "h", "-Q", "-t", "x:1:5", "-t", "x:1:6", NULL}, "asked twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kc_cli_args_t a;
        char why[256] = "";
        assert_int_equal(parse(&a, why, bad[i].argv), KC_CLI_EXIT_USAGE);
        if (!strstr(why, bad[i].needle))
            fail_msg("case %zu: message '%s' lacks '%s'", i, why, bad[i].needle);
        kc_cli_args_free(&a);
    }
}

/* The -o forms kcat has: one start (beginning, end, stored, OFFSET, -N, s@MS, @MS) and one
 * e@MS stop, in either order; -s per side or for both; -F; -X list alone. */
static void flags_kcat_forms(void **state)
{
    (void)state;
    kc_cli_args_t a;
    char why[256];
    static const struct {
        const char *o;
        kc_cli_start_t start;
        int64_t value;
    } starts[] = {
        {"beginning", KC_CLI_START_BEGINNING, 0}, {"end", KC_CLI_START_END, 0},
        {"stored", KC_CLI_START_STORED, 0},       {"42", KC_CLI_START_OFFSET, 42},
        {"-10", KC_CLI_START_TAIL, 10},           {"s@1700", KC_CLI_START_TIMESTAMP, 1700},
        {"@1800", KC_CLI_START_TIMESTAMP, 1800}};
    for (size_t i = 0; i < sizeof starts / sizeof *starts; i++) {
        const char *argv[] = {"kconsume", "-b", "h:1", "-t", "x", "-o", starts[i].o, NULL};
        assert_int_equal(parse(&a, why, argv), KC_CLI_EXIT_OK);
        assert_int_equal(a.start, starts[i].start);
        assert_int_equal(a.start_value, starts[i].value);
        assert_int_equal(a.stop_ts, -1);
        kc_cli_args_free(&a);
    }
    const char *both[] = {"kconsume", "-b", "h:1", "-t", "x", "-o", "e@2000", "-o", "s@1000", NULL};
    assert_int_equal(parse(&a, why, both), KC_CLI_EXIT_OK);
    assert_int_equal(a.start, KC_CLI_START_TIMESTAMP);
    assert_int_equal(a.start_value, 1000);
    assert_int_equal(a.stop_ts, 2000);
    kc_cli_args_free(&a);
    /* e@ alone keeps the default start, and applies under -G too */
    const char *grp[] = {"kconsume", "-b", "h:1", "-G", "g", "-t", "x", "-o", "e@5", NULL};
    assert_int_equal(parse(&a, why, grp), KC_CLI_EXIT_OK);
    assert_int_equal(a.start, KC_CLI_START_DEFAULT);
    assert_int_equal(a.stop_ts, 5);
    kc_cli_args_free(&a);

    const char *sd[] = {"kconsume", "-b",     "h:1", "-t",         "x",
                        "-s",       "key=<i", "-s",  "value=json", NULL};
    assert_int_equal(parse(&a, why, sd), KC_CLI_EXIT_OK);
    assert_string_equal(a.key_serdes, "<i");
    assert_string_equal(a.value_serdes, "json");
    kc_cli_args_free(&a);
    const char *sd2[] = {"kconsume", "-b", "h:1", "-t", "x", "-s", "Q", NULL};
    assert_int_equal(parse(&a, why, sd2), KC_CLI_EXIT_OK);
    assert_string_equal(a.key_serdes, "Q");
    assert_string_equal(a.value_serdes, "Q");
    kc_cli_args_free(&a);

    const char *f[] = {"kconsume", "-b", "h:1", "-t", "x", "-F", "/etc/k.conf", NULL};
    assert_int_equal(parse(&a, why, f), KC_CLI_EXIT_OK);
    assert_string_equal(a.conf_file, "/etc/k.conf");
    kc_cli_args_free(&a);
    const char *xl[] = {"kconsume", "-X", "list", NULL}; /* needs no -b */
    assert_int_equal(parse(&a, why, xl), KC_CLI_EXIT_OK);
    assert_true(a.conf_list);
    kc_cli_args_free(&a);

    static const struct {
        const char *argv[12];
        const char *needle;
    } bad[] = {
        {{"kconsume", "-b", "h", "-t", "x", "-o", "-0", NULL}, "-N starts N >= 1"},
        {{"kconsume", "-b", "h", "-t", "x", "-o", "-x", NULL}, "-o -x"},
        {{"kconsume", "-b", "h", "-t", "x", "-o", "s@", NULL}, "s@ followed by"},
        {{"kconsume", "-b", "h", "-t", "x", "-o", "e@x", NULL}, "e@ is followed"},
        {{"kconsume", "-b", "h", "-t", "x", "-o", "end", "-o", "5", NULL}, "a second start"},
        {{"kconsume", "-b", "h", "-t", "x", "-o", "e@1", "-o", "e@2", NULL}, "a second e@"},
        {{"kconsume", "-b", "h", "-t", "x", "-G", "g", "-o", "-5", NULL}, "-o -N"},
        {{"kconsume", "-b", "h", "-t", "x", "-G", "g", "-o", "s@5", NULL}, "s@MS need manual"},
        {{"kconsume", "-b", "h", "-t", "x", "-s", "value=", NULL}, "empty deserializer"},
        {{"kconsume", "-b", "h", "-t", "x", "-F", "a", "-F", "b", NULL}, "one configuration file"},
        {{"kconsume", "-b", "h", "-L", "-s", "json", NULL}, "-s does not apply"},
        {{"kconsume", "-b", "h", "-L", "-o", "e@5", NULL}, "-o, -c and -e do not apply"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char w[256] = "";
        assert_int_equal(parse(&a, w, bad[i].argv), KC_CLI_EXIT_USAGE);
        if (!strstr(w, bad[i].needle))
            fail_msg("case %zu: message '%s' lacks '%s'", i, w, bad[i].needle);
        kc_cli_args_free(&a);
    }
}

/* ---- -s deserializers ------------------------------------------------------------------------ */

static void serdes_expect(const char *spec, const void *data, size_t len, const char *want)
{
    kc_cli_serdes_t sd;
    char why[200] = "";
    if (kc_cli_serdes_compile(&sd, spec, why, sizeof why))
        fail_msg("compile '%s': %s", spec, why);
    kc_cli_buf_t b = {0};
    if (kc_cli_serdes_render(&sd, data, len, &b, why, sizeof why))
        fail_msg("render '%s': %s", spec, why);
    if (b.len != strlen(want) || (b.len && memcmp(b.p, want, b.len)))
        fail_msg("-s %s: got '%.*s', want '%s'", spec, (int)b.len, b.p ? b.p : "", want);
    kc_cli_buf_free(&b);
}

static void serdes_fails(const char *spec, const void *data, size_t len, const char *needle)
{
    kc_cli_serdes_t sd;
    char why[200] = "";
    assert_int_equal(kc_cli_serdes_compile(&sd, spec, why, sizeof why), 0);
    kc_cli_buf_t b = {0};
    assert_int_equal(kc_cli_buf_put(&b, "keep", 4), 0);
    assert_int_equal(kc_cli_serdes_render(&sd, data, len, &b, why, sizeof why), -1);
    assert_int_equal(b.len, 4); /* nothing half-written */
    if (!strstr(why, needle))
        fail_msg("-s %s: reason '%s' lacks '%s'", spec, why, needle);
    kc_cli_buf_free(&b);
}

static void serdes_pack(void **state)
{
    (void)state;
    const unsigned char be[] = {0xff, 0xff, 0xff, 0xfe}; /* -2 as a big-endian int32 */
    serdes_expect("i", be, 4, "-2");
    serdes_expect("I", be, 4, "4294967294");
    serdes_expect(">h>H", be, 4, "-1 65534");
    serdes_expect("<i", (const unsigned char[]){0x2a, 0, 0, 0}, 4, "42");
    const unsigned char mix[] = {0x80, 0x80, 0x01, 0x02, 'A', 'h', 'i'};
    serdes_expect("bBhcs", mix, sizeof mix, "-128 128 258 A hi");
    serdes_expect("<H", mix + 2, 2, "513");
    const unsigned char q[] = {0x80, 0, 0, 0, 0, 0, 0, 0};
    serdes_expect("q", q, 8, "-9223372036854775808");
    serdes_expect("Q", q, 8, "9223372036854775808");
    serdes_expect("i", "\0\0\0\x07trailing", 12, "7"); /* no $: the rest is ignored */
    serdes_expect("i$", "\0\0\0\x07", 4, "7");
    serdes_expect("s", "", 0, "");
    serdes_expect("is$",
                  "\0\0\0\x01"
                  "ab",
                  6, "1 ab");
    serdes_fails("i", "\0\0\x01", 3, "'i' needs 4 bytes at byte 0, 3 left");
    serdes_fails("hi", "\0\x01\0", 3, "'i' needs 4 bytes at byte 2, 1 left");
    serdes_fails("i$", "\0\0\0\x07x", 5, "1 bytes left at byte 4");

    static const struct {
        const char *spec, *needle;
    } bad[] = {{"iz", "'z' at position 2"},
               {"si", "nothing may follow"},
               {"$i", "nothing may follow"},
               {"avro", "schema registry"},
               {"", "1 to 63 characters"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kc_cli_serdes_t sd;
        char why[200] = "";
        assert_int_equal(kc_cli_serdes_compile(&sd, bad[i].spec, why, sizeof why), -1);
        if (!strstr(why, bad[i].needle))
            fail_msg("spec '%s': '%s' lacks '%s'", bad[i].spec, why, bad[i].needle);
    }
}

static void serdes_json(void **state)
{
    (void)state;
    const char *in = " {\"a\": [1, 2.5e3, {}], \"b\":{\"c\":\"x,\\\"]}\"},\"d\":[ ],\"e\":null} ";
    serdes_expect("json", in, strlen(in),
                  "{\n  \"a\": [\n    1,\n    2.5e3,\n    {}\n  ],\n  \"b\": {\n    \"c\": "
                  "\"x,\\\"]}\"\n  },\n  \"d\": [],\n  \"e\": null\n}");
    serdes_expect("json", "42", 2, "42");
    serdes_expect("json", "\"s\"", 3, "\"s\"");
    serdes_fails("json", "{\"a\":1", 6, "1 bracket left open");
    serdes_fails("json", "[1}", 3, "'}' at byte 2 closes nothing open");
    serdes_fails("json", "\"abc", 4, "does not end");
    serdes_fails("json", "1 2", 3, "more than one value");
    serdes_fails("json", "", 0, "no value");
    serdes_fails("json", "\x01", 1, "byte 0 (0x01)");
}

/* ---- -F files -------------------------------------------------------------------------------- */

typedef struct pairs {
    char got[512];
    int stop_at;
} pairs_t;

static int collect(void *opaque, const char *key, const char *value, int line)
{
    pairs_t *p = opaque;
    size_t l = strlen(p->got);
    snprintf(p->got + l, sizeof p->got - l, "%d:[%s]=[%s];", line, key, value);
    return line == p->stop_at ? 7 : 0;
}

static void conf_file_lines(void **state)
{
    (void)state;
    const char *text = "# kcat.conf\n\n  bootstrap.servers = h:1,h:2  \r\nsasl.mechanisms=PLAIN\n"
                       "\t# indented comment\nsasl.password=a=b#c\nempty=\nlast=1";
    pairs_t p = {.stop_at = -1};
    char why[200] = "";
    assert_int_equal(kc_cli_conf_parse(text, strlen(text), collect, &p, why, sizeof why), 0);
    assert_string_equal(p.got, "3:[bootstrap.servers]=[h:1,h:2];4:[sasl.mechanisms]=[PLAIN];"
                               "6:[sasl.password]=[a=b#c];7:[empty]=[];8:[last]=[1];");
    pairs_t s = {.stop_at = 4};
    assert_int_equal(kc_cli_conf_parse(text, strlen(text), collect, &s, why, sizeof why), 7);
    assert_string_equal(s.got, "3:[bootstrap.servers]=[h:1,h:2];4:[sasl.mechanisms]=[PLAIN];");

    static const struct {
        const char *text;
        size_t len;
        const char *needle;
    } bad[] = {{"a=1\nnovalue\n", 12, "line 2: expected key=value, got 'novalue'"},
               {"=v\n", 3, "line 1: expected key=value"},
               {"a=1\0\n", 5, "line 1: a NUL byte"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pairs_t q = {.stop_at = -1};
        assert_int_equal(kc_cli_conf_parse(bad[i].text, bad[i].len, collect, &q, why, sizeof why),
                         -1);
        if (!strstr(why, bad[i].needle))
            fail_msg("case %zu: '%s' lacks '%s'", i, why, bad[i].needle);
    }
    char big[5000];
    memset(big, 'a', sizeof big);
    big[0] = 'k', big[1] = '=';
    pairs_t q = {.stop_at = -1};
    assert_int_equal(kc_cli_conf_parse(big, sizeof big, collect, &q, why, sizeof why), -1);
    assert_non_null(strstr(why, "longer than 4095 bytes"));
}

/* ---- --live table ------------------------------------------------------------------------- */

static void live_table(void **state)
{
    (void)state;
    kc_cli_live_row_t rows[] = {
        {"demo", 0, 50, 100, 50, 10.0, 1}, /* half-way */
        {"demo", 1, -1, 40, 0, 0.0, -1},   /* nothing yet: all 40 are lag */
        {"demo", 2, 7, -1, 7, 2.5, 0},     /* no end known: no lag, no bar */
    };
    kc_cli_buf_t b = {0};
    assert_int_equal(kc_cli_live_render(&b, rows, 3, 2.0, 0), 5); /* header, 3 rows, total */
    assert_int_equal(kc_cli_buf_put(&b, "", 1), 0);               /* NUL for strstr */
    const char *t = b.p;
    if (!strstr(t, "demo[0]") || !strstr(t, "[##########..........]") ||
        !strstr(t, "[....................]") || !strstr(t, "57 records in 2.0 s, 12 records/s"))
        fail_msg("table:\n%s", t);
    /* row 1: 40 lag; row 0: 50 lag */
    const char *r1 = strstr(t, "demo[1]");
    assert_non_null(r1);
    assert_non_null(strstr(r1, " 40 "));
    kc_cli_buf_free(&b);
    assert_int_equal(kc_cli_live_render(&b, rows, 1, 1.0, 1), 3);
    assert_non_null(b.p);
    assert_int_equal(memcmp(b.p + b.len - 4, "\x1b[K\n", 4), 0); /* ANSI: erase to line end */
    kc_cli_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_conversion), cmocka_unit_test(nulls_and_binary),
        cmocka_unit_test(headers),          cmocka_unit_test(compile_errors),
        cmocka_unit_test(uses_and_merging), cmocka_unit_test(buffer_growth),
        cmocka_unit_test(flags_ok),         cmocka_unit_test(flags_bad),
        cmocka_unit_test(live_table),       cmocka_unit_test(json_envelope),
        cmocka_unit_test(flags_kcat_forms), cmocka_unit_test(serdes_pack),
        cmocka_unit_test(serdes_json),      cmocka_unit_test(conf_file_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
