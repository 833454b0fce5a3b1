/*
 * --help text and flags -> configuration (see setup.h). Main thread only.
 */
#include "setup.h"
#include "conf_file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void kc_cli_usage(FILE *out)
{
    fprintf(
        out,
        "Usage: kconsume -b BROKERS [-G GROUP] -t TOPIC... [-p PARTITION]\n"
        "                [-o START] [-o e@MS] [-c COUNT] [-e] [-f FORMAT] [-s [key=|value=]SPEC]\n"
        "                [-F FILE] [-X key=value]... [--workers N] [--stats MS[:FILE]] "
        "[--summary]\n"
        "                [--live] [-q]"
        " [--work-us N] [--metrics-port N] [-J]\n"
        "       kconsume -b BROKERS -L [-t TOPIC]... [-J]\n"
        "       kconsume -b BROKERS -Q -t TOPIC:PARTITION:TIMESTAMP... [-J]\n"
        "\n"
        "Reads Kafka topics and prints their records (-C, kcat's consumer mode, is accepted\n"
        "and changes nothing); -L lists metadata and -Q queries offsets for times, then exit.\n"
        "\n"
        "  -b, --brokers LIST     bootstrap.servers (host:port,...)\n"
        "  -G, --group GROUP      join GROUP (group.id) and consume what it assigns; without\n"
        "                         -G every partition of each -t topic is assigned by hand\n"
        "      --share GROUP      join share group GROUP (KIP-932; group.type=share): the\n"
        "                         broker hands out records and each is acknowledged (accepted\n"
        "                         once printed; records not printed with -c are released)\n"
        "      --share-verdict V  accept (default), release or reject every printed record\n"
        "  -t, --topic TOPIC      topic to read; repeat for several\n"
        "  -p, --partition N      only partition N of each topic (not with -G)\n"
        "  -o, --offset START     start: beginning, end, stored (group.id's committed offset,\n"
        "                         else auto.offset.reset), an OFFSET, -N (N records before\n"
        "                         each partition's end), or s@MS (first record with timestamp\n"
        "                         >= MS ms since the epoch; @MS too). Default: end without -G;\n"
        "                         with -G the committed offset, else auto.offset.reset\n"
        "                         (-o beginning|end set auto.offset.reset; OFFSET, -N, s@MS\n"
        "                         need no -G)\n"
        "  -o e@MS                stop each partition before its first record with timestamp\n"
        "                         >= MS, and exit once every assigned partition stopped (with\n"
        "                         -G too; combines with a start -o and with -e)\n"
        "  -c, --count N          stop after printing N records in total\n"
        "  -e, --exit             stop once every assigned partition reached the end (high\n"
        "                         watermark, or last stable offset under read_committed) seen\n"
        "                         when it was assigned\n"
        "  -f, --format FORMAT    output per record (default '%%s\\n'):\n"
        "                           %%t topic  %%p partition  %%o offset  %%k key  %%s value\n"
        "                           %%h headers (name=value,...)  %%T timestamp (ms)\n"
        "                           %%K key length  %%S value length (-1 for null)\n"
        "                           %%w worker id (as stats workers[].id)\n"
        "                           %%M group member id (client.id before joining)\n"
        "                           %%D share-group delivery count (-1 without --share)\n"
        "                           %%n CLOCK_MONOTONIC ns when the delivering callback started\n"
        "                           %%%% percent   \\n newline  \\t tab  \\r return  \\\\ "
        "backslash\n"
        "                           %%J the record as kcat -J's JSON object\n"
        "  -J, --json             records as kcat -J's JSON lines (topic, partition, offset,\n"
        "                         tstype, ts, broker, headers, key, payload); -L and -Q\n"
        "                         answer in JSON too\n"
        "  -L, --list             list the cluster's brokers and the -t topics (all without\n"
        "                         -t) with their partitions, leaders, replicas and ISRs\n"
        "  -Q, --query            for each -t TOPIC:PARTITION:TIMESTAMP, the first offset whose\n"
        "                         timestamp is >= TIMESTAMP (-1: none that late)\n"
        "  -s [key=|value=]SPEC   print keys and/or values (both without key=/value=)\n"
        "                         deserialized: json (indented), or a pack format as kcat's:\n"
        "                         < > (little/big endian, big by default), b B h H i I q Q\n"
        "                         (signed/unsigned 8/16/32/64-bit), c (a character), s (the\n"
        "                         rest as bytes), $ (the end); fields joined by spaces. Bytes\n"
        "                         that do not fit are printed raw, with a line on stderr\n"
        "  -F, --config-file FILE key=value lines ('#' comments), e.g. a kcat.conf: applied\n"
        "                         after the flags, before -X (librdkafka's sasl.mechanisms and\n"
        "                         metadata.broker.list are accepted). Without -F, kcat's default\n"
        "                         file ($KCAT_CONFIG, else ~/.config/kcat.conf) is applied before\n"
        "                         the flags, its unknown keys skipped; -F none reads no file\n"
        "  -X key=value           any configuration key below (repeatable; wins over flags)\n"
        "  -X list                print every configuration key below and exit\n"
        "  -X dump                print every key's value as the flags and files set it, exit\n"
        "  --workers N            worker.threads\n"
        "  --stats MS[:FILE]      statistics every MS ms, one JSON object per line, to FILE\n"
        "                         (truncated at start) or stderr\n"
        "  --summary              at exit, print records, MB, seconds, records/s and CPU\n"
        "                         seconds per million records to stderr\n"
        "  --live                 a per-partition table on stderr, redrawn twice a second:\n"
        "                         position, end (-e), lag, records/s, worker, progress\n"
        "  --work-us N            simulated processing: each callback sleeps N microseconds\n"
        "                         per record it printed (for demos of slow consumers; the\n"
        "                         sleep costs no CPU, so --summary's CPU figure stays real)\n"
        "  --metrics-port N       serve the stats as Prometheus text (kc_metrics) over HTTP\n"
        "                         on 127.0.0.1:N, for scraping (any path, GET)\n"
        "  -q, --quiet            no non-fatal error messages on stderr\n"
        "  --help, --version, --config-reference (every key as Markdown)\n"
        "\n"
        "With -G, offsets are committed by the library's auto-commit (enable.auto.commit)\n"
        "and at exit; they cover only records that were printed (with -c and -e too).\n"
        "Records of concurrent workers never interleave within a line.\n"
        "\n"
        "Exit codes: 0 done (-e, -c, or the output reader went away); 1 runtime error;\n"
        "2 usage error; 3 configuration error (-X key or value, or a conflict); 4 a topic or\n"
        "partition the cluster does not know; 5 no broker answered in time; 6 TLS or SASL\n"
        "refused the login (4-6: -L, -Q, and at start: a -t topic, with -G -e too);\n"
        "130 / 143 stopped by SIGINT / SIGTERM (a first signal closes cleanly and commits,\n"
        "a second one exits at once).\n"
        "\n"
        "Configuration keys (-X):\n");
}

static int conf_set(kc_conf_t *conf, const char *key, const char *value, const char *flag)
{
    kc_error_t e;
    if (kc_conf_set(conf, key, value, &e) == KC_OK)
        return 0;
    fprintf(stderr, "kconsume: %s: %s\n", flag, e.msg);
    return -1;
}

typedef struct file_ctx {
    kc_conf_t *conf;
    const char *path;
    const char *what; /* "-F" or "the default configuration file" (kcat's, read without -F) */
    bool implicit;
} file_ctx_t;

static int file_pair(void *opaque, const char *key, const char *value, int line)
{
    file_ctx_t *f = opaque;
    char flag[1100];
    snprintf(flag, sizeof flag, "%s %s:%d", f->what, f->path, line);
    /* kcat's own file may hold librdkafka keys kconsume does not take: read without being asked
     * for, such a key is said once and skipped rather than stopping every run. */
    if (f->implicit && kc_conf_get(f->conf, key, NULL, &(size_t){0}) == KC_ERR_NOT_FOUND) {
        fprintf(stderr, "kconsume: %s: \"%s\" is not a kconsume key: skipped\n", flag, key);
        return 0;
    }
    return conf_set(f->conf, key, value, flag) ? 1 : 0;
}

/* A configuration file: the whole file read once, then its pairs set in order. */
static int apply_file(kc_conf_t *conf, const char *path, bool implicit)
{
    const char *what = implicit ? "the default configuration file" : "-F";
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "kconsume: %s %s: %s\n", what, path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096) {
            char *t = realloc(text, cap = cap ? cap * 2 : 8192);
            if (!t) {
                free(text);
                fclose(fp);
                fprintf(stderr, "kconsume: %s %s: out of memory\n", what, path);
                return -1;
            }
            text = t;
        }
        size_t r = fread(text + len, 1, cap - len, fp);
        len += r;
        if (r == 0)
            break;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (bad) {
        free(text);
        fprintf(stderr, "kconsume: %s %s: read error\n", what, path);
        return -1;
    }
    char why[256];
    file_ctx_t f = {conf, path, what, implicit};
    int rc = kc_cli_conf_parse(text, len, file_pair, &f, why, sizeof why);
    free(text);
    if (rc < 0)
        fprintf(stderr, "kconsume: %s %s: %s\n", what, path, why);
    return rc ? -1 : 0;
}

/* kcat's default file (without -F) first, then the flags, then -F's file, then -X in order: an
 * explicit -X always wins, and an explicit flag wins over a file nobody named, as in kcat. */
int kc_cli_build_conf(kc_conf_t *conf, const kc_cli_args_t *a, char *client_id, size_t len)
{
    char num[32], dflt[4096];
    const char *implicit = a->conf_file ? NULL : kc_cli_default_conf_file(dflt, sizeof dflt);
    if (implicit && apply_file(conf, implicit, true))
        return -1;
    if (a->brokers && conf_set(conf, "bootstrap.servers", a->brokers, "-b"))
        return -1;
    /* The CLI says once what is wrong; the library's INFO lines (a reset per reconnect attempt,
     * each rebalance) are there for -X log.level=info. */
    if (conf_set(conf, "log.level", "warn", "-b"))
        return -1;
    if (a->group) {
        if (conf_set(conf, "group.id", a->group, a->share ? "--share" : "-G"))
            return -1;
        if (a->share && conf_set(conf, "group.type", "share", "--share"))
            return -1;
        if (a->start == KC_CLI_START_BEGINNING &&
            conf_set(conf, "auto.offset.reset", "earliest", "-o"))
            return -1;
        if (a->start == KC_CLI_START_END && conf_set(conf, "auto.offset.reset", "latest", "-o"))
            return -1;
    } else if (conf_set(conf, "enable.auto.commit", "false", "-b")) {
        return -1; /* no group, nothing to commit to */
    }
    if (a->workers) {
        snprintf(num, sizeof num, "%d", a->workers);
        if (conf_set(conf, "worker.threads", num, "--workers"))
            return -1;
    }
    if (a->stats_ms) {
        snprintf(num, sizeof num, "%" PRId64, a->stats_ms);
        if (conf_set(conf, "statistics.interval.ms", num, "--stats"))
            return -1;
    }
    if (a->conf_file && strcmp(a->conf_file, "none") != 0 && apply_file(conf, a->conf_file, false))
        return -1;
    for (size_t i = 0; i < a->n_conf; i++) {
        char kv[1024], flag[1040];
        snprintf(kv, sizeof kv, "%s", a->conf[i]);
        char *eq = strchr(kv, '=');
        *eq = 0;
        snprintf(flag, sizeof flag, "-X %s", a->conf[i]);
        if (conf_set(conf, kv, eq + 1, flag))
            return -1;
    }
    kc_error_t e;
    if (kc_conf_validate(conf, &e) != KC_OK) {
        /* -X dump shows a configuration whatever it is, and says what a run would refuse */
        fprintf(stderr, "kconsume: configuration%s: %s\n",
                a->conf_dump ? " (a run would refuse it)" : "", e.msg);
        if (!a->conf_dump)
            return -1;
    }
    if (kc_conf_get(conf, "client.id", client_id, &len) != KC_OK)
        snprintf(client_id, len, "kconsume");
    return 0;
}
