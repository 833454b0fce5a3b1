/*
 * Command-line parsing for kconsume: argv into kc_cli_args_t, with every error naming the flag.
 * Pure (no library calls, no I/O except the message buffer), so it is unit-tested. Owned by the
 * main thread; read-only once the consumer starts.
 */
#ifndef KC_CLI_ARGS_H
#define KC_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

/* Exit codes, documented in --help and the README. */
enum {
    KC_CLI_EXIT_OK = 0,
    KC_CLI_EXIT_RUNTIME = 1,
    KC_CLI_EXIT_USAGE = 2,
    KC_CLI_EXIT_CONFIG = 3,
    KC_CLI_EXIT_NOT_FOUND = 4,   /* a topic or partition the cluster does not know */
    KC_CLI_EXIT_UNREACHABLE = 5, /* no broker answered in time */
    KC_CLI_EXIT_AUTH = 6,        /* TLS or SASL refused the login */
};

typedef enum kc_cli_start {
    KC_CLI_START_DEFAULT = 0, /* no -o: end without -G; committed offset (auto.offset.reset) with */
    KC_CLI_START_BEGINNING,
    KC_CLI_START_END,
    KC_CLI_START_OFFSET,    /* start_value = offset */
    KC_CLI_START_TIMESTAMP, /* start_value = ms since the epoch (-o s@MS, or -o @MS) */
    KC_CLI_START_STORED, /* -o stored: the committed offset of group.id, else auto.offset.reset */
    KC_CLI_START_TAIL,   /* -o -N: start_value = N records before each partition's end */
} kc_cli_start_t;

/* One -Q question: -t TOPIC:PARTITION:TIMESTAMP (the topic is the argv string up to the colon). */
typedef struct kc_cli_query {
    char *topic;
    int32_t partition;
    int64_t timestamp;
} kc_cli_query_t;

typedef struct kc_cli_args {
    const char *brokers;
    const char *group;
    int share;         /* --share GROUP: group is a share group (group.type=share) */
    int share_verdict; /* --share-verdict: a kc_share_verdict_t for every printed record, 0 none */
    const char **topics; /* argv pointers; n_topics of them */
    size_t n_topics;
    int32_t partition; /* -1: all partitions */
    kc_cli_start_t start;
    int64_t start_value;
    int64_t stop_ts; /* -o e@MS: each partition ends before its first record this late; -1 none */
    int64_t count;   /* 0: unlimited */
    int exit_at_end;
    const char *format;
    const char **conf; /* "key=value" argv pointers, n_conf of them, in order */
    size_t n_conf;
    const char *conf_file; /* -F: key=value lines, applied after the flags and before -X */
    int conf_list;         /* -X list: print every configuration key and exit */
    int conf_dump;         /* -X dump: print the configuration the flags, file and -X make; exit */
    const char *key_serdes, *value_serdes; /* -s: deserializer specs (serdes.h), NULL: raw */
    int workers;                           /* 0: library default */
    int64_t stats_ms;                      /* 0: no stats */
    const char *stats_file;                /* NULL: stderr */
    int quiet;
    int summary;
    int live; /* --live: per-partition table on stderr */
    /* --work-us: simulated processing, each callback sleeps this many microseconds per record
     * it printed (0: none). For demos of slow consumers: sleeping costs no CPU. */
    int64_t work_us;
    int metrics_port; /* --metrics-port: serve kc_metrics on 127.0.0.1:port (0: no) */
    int help, version;
    int config_reference; /* --config-reference: docs/CONFIGURATION.md on stdout */
    int json;             /* -J: kcat's JSON, for records and for -L / -Q */
    /* -L: list metadata (the -t topics, or all) and exit. -Q: print offsets for times and exit;
     * each -t is then TOPIC:PARTITION:TIMESTAMP, parsed into queries. */
    int list, query;
    kc_cli_query_t *queries; /* n_topics of them with -Q */
} kc_cli_args_t;

/* Parses argv. Returns KC_CLI_EXIT_OK, or KC_CLI_EXIT_USAGE with a one-line message in why.
 * args->topics/conf are allocated (kc_cli_args_free). --help / --version only set their flag. */
int kc_cli_args_parse(kc_cli_args_t *args, int argc, char **argv, char *why, size_t why_len);
void kc_cli_args_free(kc_cli_args_t *args);

#endif
