/*
 * kconsume's flags (see args.h). getopt_long does the splitting; everything it accepts is then
 * checked here so that a bad value names its flag. Main thread only.
 */
#include "args.h"
#include "conf_file.h"
#include "format.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kconsume.h"

enum {
    OPT_WORKERS = 1000,
    OPT_STATS,
    OPT_SUMMARY,
    OPT_LIVE,
    OPT_WORK_US,
    OPT_METRICS_PORT,
    OPT_HELP,
    OPT_VERSION,
    OPT_CONFIG_REFERENCE,
    OPT_SHARE,
    OPT_SHARE_VERDICT
};

static const struct option longopts[] = {
    {"brokers", required_argument, NULL, 'b'},
    {"group", required_argument, NULL, 'G'},
    {"share", required_argument, NULL, OPT_SHARE},
    {"share-verdict", required_argument, NULL, OPT_SHARE_VERDICT},
    {"topic", required_argument, NULL, 't'},
    {"partition", required_argument, NULL, 'p'},
    {"offset", required_argument, NULL, 'o'},
    {"count", required_argument, NULL, 'c'},
    {"exit", no_argument, NULL, 'e'},
    {"format", required_argument, NULL, 'f'},
    {"json", no_argument, NULL, 'J'},
    {"list", no_argument, NULL, 'L'},
    {"query", no_argument, NULL, 'Q'},
    {"quiet", no_argument, NULL, 'q'},
    {"config-file", required_argument, NULL, 'F'},
    {"deserialize", required_argument, NULL, 's'},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"stats", required_argument, NULL, OPT_STATS},
    {"summary", no_argument, NULL, OPT_SUMMARY},
    {"live", no_argument, NULL, OPT_LIVE},
    {"work-us", required_argument, NULL, OPT_WORK_US},
    {"metrics-port", required_argument, NULL, OPT_METRICS_PORT},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {"config-reference", no_argument, NULL, OPT_CONFIG_REFERENCE},
    {NULL, 0, NULL, 0},
};

/* A whole-string decimal integer in [min, max]; anything else (empty, trailing text, overflow)
 * is rejected rather than half-parsed. */
static int parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int push(const char ***list, size_t *n, const char *item)
{
    const char **l = realloc(*list, (*n + 1) * sizeof *l);
    if (!l)
        return -1;
    l[(*n)++] = item;
    *list = l;
    return 0;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(why, why_len, __VA_ARGS__);                                                       \
        return KC_CLI_EXIT_USAGE;                                                                  \
    } while (0)

/* -o, repeatable once: one start (beginning, end, stored, OFFSET, -N, s@MS or @MS) and one stop
 * (e@MS), in either order, as kcat takes them. */
static int parse_offset(kc_cli_args_t *a, const char *s, int *have_start, char *why, size_t why_len)
{
    if (!strncmp(s, "e@", 2)) {
        if (a->stop_ts >= 0)
            FAIL("-o %s: a second e@ (the stop is given once)", s);
        if (parse_i64(s + 2, 0, INT64_MAX, &a->stop_ts))
            FAIL("-o %s: e@ is followed by milliseconds since the epoch (e.g. e@1700000000000)", s);
        return KC_CLI_EXIT_OK;
    }
    if (*have_start)
        FAIL("-o %s: a second start (give one of beginning, end, stored, OFFSET, -N, s@MS, and "
             "optionally e@MS)",
             s);
    *have_start = 1;
    if (!strcmp(s, "beginning")) {
        a->start = KC_CLI_START_BEGINNING;
    } else if (!strcmp(s, "end")) {
        a->start = KC_CLI_START_END;
    } else if (!strcmp(s, "stored")) {
        a->start = KC_CLI_START_STORED;
    } else if (s[0] == '@' || !strncmp(s, "s@", 2)) {
        const char *ms = s + (s[0] == '@' ? 1 : 2);
        if (parse_i64(ms, 0, INT64_MAX, &a->start_value))
            FAIL("-o %s: a timestamp is s@ followed by milliseconds since the epoch (e.g. "
                 "s@1700000000000)",
                 s);
        a->start = KC_CLI_START_TIMESTAMP;
    } else if (s[0] == '-') {
        if (parse_i64(s + 1, 1, INT64_MAX, &a->start_value))
            FAIL("-o %s: -N starts N >= 1 records before each partition's end (e.g. -o -10)", s);
        a->start = KC_CLI_START_TAIL;
    } else {
        if (parse_i64(s, 0, INT64_MAX, &a->start_value))
            FAIL("-o %s: expected beginning, end, stored, an OFFSET >= 0, -N, s@MS or e@MS", s);
        a->start = KC_CLI_START_OFFSET;
    }
    return KC_CLI_EXIT_OK;
}

/* -s [key=|value=]SPEC: a spec without a side applies to both, as kcat's; checked by
 * kc_cli_serdes_compile once parsing is done. */
static int parse_serdes(kc_cli_args_t *a, const char *s, char *why, size_t why_len)
{
    int key = 1, value = 1;
    if (!strncmp(s, "key=", 4))
        value = 0, s += 4;
    else if (!strncmp(s, "value=", 6))
        key = 0, s += 6;
    if (!*s)
        FAIL("-s: empty deserializer (e.g. -s value=i, -s key=s, -s json)");
    if (key)
        a->key_serdes = s;
    if (value)
        a->value_serdes = s;
    return KC_CLI_EXIT_OK;
}

/* -Q: every -t is TOPIC:PARTITION:TIMESTAMP; the topic is what precedes the last two colons
 * (topic names cannot hold ':', but the check stays on the numbers). */
static int parse_queries(kc_cli_args_t *a, char *why, size_t why_len)
{
    if (a->n_topics == 0)
        FAIL("-Q needs -t TOPIC:PARTITION:TIMESTAMP (repeatable; TIMESTAMP in ms since the epoch)");
    a->queries = calloc(a->n_topics, sizeof *a->queries);
    if (!a->queries)
        FAIL("out of memory");
    for (size_t i = 0; i < a->n_topics; i++) {
        const char *s = a->topics[i];
        const char *c2 = strrchr(s, ':');
        const char *c1 = NULL;
        for (const char *x = s; c2 && x < c2; x++)
            if (*x == ':')
                c1 = x;
        int64_t p, ts;
        char num[32];
        size_t pl = c1 ? (size_t)(c2 - c1 - 1) : 0;
        if (!c1 || c1 == s || pl == 0 || pl >= sizeof num)
            FAIL("-t %s: -Q needs TOPIC:PARTITION:TIMESTAMP (e.g. -t orders:0:1700000000000)", s);
        memcpy(num, c1 + 1, pl);
        num[pl] = '\0';
        if (parse_i64(num, 0, INT32_MAX, &p))
            FAIL("-t %s: the partition is a number >= 0", s);
        if (parse_i64(c2 + 1, 0, INT64_MAX, &ts))
            FAIL("-t %s: the timestamp is milliseconds since the epoch (>= 0)", s);
        size_t tl = (size_t)(c1 - s);
        a->queries[i].topic = malloc(tl + 1);
        if (!a->queries[i].topic)
            FAIL("out of memory");
        memcpy(a->queries[i].topic, s, tl);
        a->queries[i].topic[tl] = '\0';
        a->queries[i].partition = (int32_t)p;
        a->queries[i].timestamp = ts;
        for (size_t k = 0; k < i; k++) /* one answer per partition, as kcat's JSON keys it */
            if (a->queries[k].partition == a->queries[i].partition &&
                strcmp(a->queries[k].topic, a->queries[i].topic) == 0)
                FAIL("-t %s: partition %d of %s is asked twice", s, (int)p, a->queries[i].topic);
    }
    return KC_CLI_EXIT_OK;
}

int kc_cli_args_parse(kc_cli_args_t *a, int argc, char **argv, char *why, size_t why_len)
{
    *a = (kc_cli_args_t){.partition = -1, .format = "%s\\n", .stop_ts = -1};
    int64_t v;
    int c, have_start = 0;
    optind = 1;
    opterr = 0; /* our messages, not getopt's */
    int have_format = 0;
    while ((c = getopt_long(argc, argv, ":b:G:t:p:o:c:ef:X:F:s:qJLQC", longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            a->brokers = optarg;
            break;
        case 'G':
            if (a->share)
                FAIL("-G joins a consumer group and --share a share group: use one of them");
            a->group = optarg;
            break;
        case OPT_SHARE:
            if (a->group)
                FAIL("-G joins a consumer group and --share a share group: use one of them");
            a->group = optarg;
            a->share = 1;
            break;
        case OPT_SHARE_VERDICT:
            a->share_verdict = strcmp(optarg, "accept") == 0    ? KC_SHARE_ACCEPT
                               : strcmp(optarg, "release") == 0 ? KC_SHARE_RELEASE
                               : strcmp(optarg, "reject") == 0  ? KC_SHARE_REJECT
                                                                : -1;
            if (a->share_verdict < 0)
                FAIL("--share-verdict %s: expected accept, release or reject", optarg);
            break;
        case 't':
            if (!*optarg)
                FAIL("-t: empty topic name");
            if (push(&a->topics, &a->n_topics, optarg))
                FAIL("out of memory");
            break;
        case 'p':
            if (parse_i64(optarg, 0, INT32_MAX, &v))
                FAIL("-p %s: expected a partition number >= 0", optarg);
            a->partition = (int32_t)v;
            break;
        case 'o':
            if (parse_offset(a, optarg, &have_start, why, why_len))
                return KC_CLI_EXIT_USAGE;
            break;
        case 'c':
            if (parse_i64(optarg, 1, INT64_MAX, &a->count))
                FAIL("-c %s: expected a record count >= 1", optarg);
            break;
        case 'e':
            a->exit_at_end = 1;
            break;
        case 'f':
            a->format = optarg;
            have_format = 1;
            break;
        case 'J':
            a->json = 1;
            break;
        case 'C': /* kcat's consumer mode: the only mode kconsume has besides -L and -Q */
            break;
        case 'L':
            a->list = 1;
            break;
        case 'Q':
            a->query = 1;
            break;
        case 'F':
            if (a->conf_file)
                FAIL("-F %s: one configuration file (-F %s already)", optarg, a->conf_file);
            a->conf_file = optarg;
            break;
        case 's':
            if (parse_serdes(a, optarg, why, why_len))
                return KC_CLI_EXIT_USAGE;
            break;
        case 'X':
            if (!strcmp(optarg, "list")) {
                a->conf_list = 1;
                return KC_CLI_EXIT_OK;
            }
            if (!strcmp(optarg, "dump")) { /* after every other flag: they make what it shows */
                a->conf_dump = 1;
                break;
            }
            if (!strchr(optarg, '=') || optarg[0] == '=')
                FAIL("-X %s: expected key=value (e.g. -X fetch.max.wait.ms=100)", optarg);
            if (push(&a->conf, &a->n_conf, optarg))
                FAIL("out of memory");
            break;
        case 'q':
            a->quiet = 1;
            break;
        case OPT_WORKERS:
            if (parse_i64(optarg, 1, 1024, &v))
                FAIL("--workers %s: expected a thread count from 1 to 1024", optarg);
            a->workers = (int)v;
            break;
        case OPT_STATS: {
            /* MS[:FILE]: the file name may itself contain ':' after the first one. */
            char ms[32];
            const char *colon = strchr(optarg, ':');
            size_t n = colon ? (size_t)(colon - optarg) : strlen(optarg);
            if (n == 0 || n >= sizeof ms)
                FAIL("--stats %s: expected MS or MS:FILE (e.g. --stats 500:stats.jsonl)", optarg);
            memcpy(ms, optarg, n);
            ms[n] = 0;
            if (parse_i64(ms, 1, 86400000, &a->stats_ms))
                FAIL("--stats %s: the interval is milliseconds from 1 to 86400000", optarg);
            if (colon && !colon[1])
                FAIL("--stats %s: empty file name after ':'", optarg);
            a->stats_file = colon ? colon + 1 : NULL;
            break;
        }
        case OPT_SUMMARY:
            a->summary = 1;
            break;
        case OPT_LIVE:
            a->live = 1;
            break;
        case OPT_METRICS_PORT:
            if (parse_i64(optarg, 1, 65535, &v))
                FAIL("--metrics-port %s: expected a TCP port from 1 to 65535", optarg);
            a->metrics_port = (int)v;
            break;
        case OPT_WORK_US:
            if (parse_i64(optarg, 0, 1000000, &a->work_us))
                FAIL("--work-us %s: expected microseconds per record from 0 to 1000000", optarg);
            break;
        case OPT_HELP:
            a->help = 1;
            return KC_CLI_EXIT_OK;
        case OPT_VERSION:
            a->version = 1;
            return KC_CLI_EXIT_OK;
        case OPT_CONFIG_REFERENCE:
            a->config_reference = 1;
            return KC_CLI_EXIT_OK;
        case ':':
            FAIL("%s needs a value", argv[optind - 1]);
        default:
            if (optopt && optopt < 256)
                FAIL("unknown option '-%c'", optopt);
            FAIL("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        FAIL("unexpected argument '%s' (topics go after -t)", argv[optind]);
    if (a->conf_dump) /* needs no topic or broker: it prints what the settings make */
        return KC_CLI_EXIT_OK;
    char dflt[4096];
    bool no_file = a->conf_file ? strcmp(a->conf_file, "none") == 0
                                : !kc_cli_default_conf_file(dflt, sizeof dflt);
    if (!a->brokers && no_file)
        FAIL("-b BROKERS is required (e.g. -b localhost:9092), or -F FILE (or kcat's "
             "~/.config/kcat.conf) giving bootstrap.servers");
    if (a->json && have_format)
        FAIL("-J prints kcat's JSON and -f a format of your own: use one of them");
    if (a->json)
        a->format = KC_CLI_JSON_FORMAT;
    if (a->list && a->query)
        FAIL("-L lists metadata and -Q queries offsets: use one of them");
    if (a->list || a->query) {
        const char *m = a->list ? "-L" : "-Q";
        if (a->group)
            FAIL("%s asks the cluster and exits: -G does not apply", m);
        if (a->partition >= 0 || a->start != KC_CLI_START_DEFAULT || a->stop_ts >= 0 || a->count ||
            a->exit_at_end)
            FAIL("%s asks the cluster and exits: -p, -o, -c and -e do not apply", m);
        if (a->key_serdes || a->value_serdes)
            FAIL("%s asks the cluster and exits: -s does not apply", m);
        return a->query ? parse_queries(a, why, why_len) : KC_CLI_EXIT_OK;
    }
    if (a->n_topics == 0)
        FAIL("-t TOPIC is required (repeat -t for several topics)");
    if (a->group && a->partition >= 0)
        FAIL("-p selects partitions by hand and -G lets the group assign them: use one of them");
    if (a->share_verdict && !a->share)
        FAIL("--share-verdict applies to --share GROUP only");
    if (a->share && a->exit_at_end)
        FAIL("--share: a share group has no end to reach (records are handed out by the "
             "broker): -e does not apply; use -c COUNT");
    if (a->share && a->start != KC_CLI_START_DEFAULT)
        FAIL("--share: a share group's broker decides what is delivered (its "
             "share.auto.offset.reset): -o does not apply");
    if (a->group && (a->start == KC_CLI_START_OFFSET || a->start == KC_CLI_START_TIMESTAMP ||
                     a->start == KC_CLI_START_TAIL))
        FAIL("-o OFFSET, -o -N and -o s@MS need manual assignment (no -G); with -G, -o "
             "beginning|end sets auto.offset.reset for partitions without a committed offset, and "
             "-o e@MS still applies");
    return KC_CLI_EXIT_OK;
}

void kc_cli_args_free(kc_cli_args_t *a)
{
    for (size_t i = 0; a->queries && i < a->n_topics; i++)
        free(a->queries[i].topic);
    free(a->queries);
    a->queries = NULL;
    free(a->topics);
    free(a->conf);
    a->topics = NULL;
    a->conf = NULL;
}
