/*
 * librdkafka peer for the kconsume benchmark (perf/run): reads a topic from the beginning to its
 * end, touching every record's value (its bytes are summed, so nothing can skip decoding), and
 * prints one JSON line {client, mode, records, bytes, wall_s, fetch_requests, ...}.
 *
 *   rdkafka_consume -b BROKERS -t TOPIC [-m group|assign] [-l N [-D] [-W W]] [-L SECONDS]
 *                   [-X key=value]...
 *
 * group:  subscribe + rd_kafka_consumer_poll (the usual deployment; fresh group id each run).
 * assign: rd_kafka_assign of every partition at OFFSET_BEGINNING, same poll loop, no group.
 * The end is the partition-EOF event (enable.partition.eof=true): the run stops once every
 * partition reported EOF. -l N (latency mode) instead reads N records of a topic being produced
 * and reports p50/p99/p99.9 of (poll time - record CreateTime), with fetch.min.bytes 1 and
 * fetch.wait.max.ms 10, or with -D librdkafka's defaults (1 and 500); -W W leaves the first W
 * delivered (the producer's warm-up) out of the percentiles. -L keeps the client fetching
 * idle for that many seconds after the end, so the last Fetch it sent is a steady-state one (T3),
 * and prints the process's CPU over that idle time as idle_cpu_pct (T4). first_all_s: the time from
 * client creation until every partition delivered a record.
 * Settings are in perf/README.md ("librdkafka"); -X overrides any of them.
 *
 * Threads: librdkafka's own threads fetch and decode; all state below is the main thread's,
 * except `fetches` (written by the log callback on librdkafka's threads, under its mutex).
 */
#define _POSIX_C_SOURCE 200809L
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "touch.h"

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "rdkafka_consume: %s: %s\n", what, detail);
    exit(1);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double process_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int64_t real_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Fetch requests, exactly: librdkafka logs every request it sends at debug=protocol
 * ("Sent FetchRequest (v11, 9387 bytes @ 0, CorrId 5)"), one line per request, not per record,
 * so the cost is small. The log callback runs on librdkafka's broker threads: hence the mutex. */
static struct {
    pthread_mutex_t lock;
    long long n, bytes, lo, hi, last;
} fetches = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0};

static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk, (void)fac;
    int v;
    long long b;
    const char *p = strstr(buf, "Sent FetchRequest (");
    if (p && sscanf(p, "Sent FetchRequest (v%d, %lld bytes", &v, &b) == 2) {
        pthread_mutex_lock(&fetches.lock);
        fetches.n++;
        fetches.bytes += b;
        if (fetches.lo == 0 || b < fetches.lo)
            fetches.lo = b;
        if (b > fetches.hi)
            fetches.hi = b;
        fetches.last = b;
        pthread_mutex_unlock(&fetches.lock);
    } else if (level <= 4) {
        fprintf(stderr, "rdkafka_consume: %s\n", buf); /* warnings and errors stay visible */
    }
}

static void set(rd_kafka_conf_t *conf, const char *kv)
{
    char key[256], errstr[512];
    const char *eq = strchr(kv, '=');
    if (!eq || (size_t)(eq - kv) >= sizeof key)
        die("bad -X (want key=value)", kv);
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    if (rd_kafka_conf_set(conf, key, eq + 1, errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
        die(key, errstr);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *brokers = "127.0.0.1:18092", *topic = NULL, *mode = "group";
    long latency_n = 0;
    int client_defaults = 0; /* -D */
    long lat_warmup = 0;     /* -W: the first this many of the -l records are not counted */
    double linger = 0;
    char errstr[512], group[128];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();

    snprintf(group, sizeof group, "perf-rdkafka-%d-%lld", (int)getpid(), (long long)real_us());
    /* Documented high-throughput consumer settings; the why of each is in perf/README.md. */
    static const char *defaults[] = {
        "enable.partition.eof=true",
        "auto.offset.reset=earliest",
        "enable.auto.commit=false",
        "fetch.min.bytes=1048576",
        "fetch.wait.max.ms=100",
        "fetch.max.bytes=52428800",
        "max.partition.fetch.bytes=8388608",
        "queued.min.messages=1000000",
        "queued.max.messages.kbytes=131072",
    };
    /* -D (latency): librdkafka's documented defaults for the same keys instead */
    static const char *client_own[] = {
        "fetch.min.bytes=1",          "fetch.wait.max.ms=500",
        "fetch.max.bytes=52428800",   "max.partition.fetch.bytes=1048576",
        "queued.min.messages=100000", "queued.max.messages.kbytes=65536",
    };
    const char *xs[32];
    int nx = 0;

    int opt;
    while ((opt = getopt(argc, argv, "b:t:m:l:DW:L:X:")) != -1) {
        switch (opt) {
        case 'b':
            brokers = optarg;
            break;
        case 't':
            topic = optarg;
            break;
        case 'm':
            mode = optarg;
            break;
        case 'l':
            latency_n = atol(optarg);
            break;
        case 'D':
            client_defaults = 1;
            break;
        case 'W':
            lat_warmup = atol(optarg);
            break;
        case 'L':
            linger = atof(optarg);
            break;
        case 'X': /* applied after the settings below, so they override them */
            if (nx == (int)(sizeof xs / sizeof *xs))
                die("usage", "too many -X");
            xs[nx++] = optarg;
            break;
        default:
            die("usage", "-b BROKERS -t TOPIC [-m group|assign] [-l N [-D] [-W W]] [-X k=v]...");
        }
    }
    int group_mode = strcmp(mode, "group") == 0;
    if (!topic || (!group_mode && strcmp(mode, "assign") != 0))
        die("usage", "-b BROKERS -t TOPIC [-m group|assign] [-l N [-D] [-W W]] [-X k=v]...");
    int own = latency_n > 0 && client_defaults;
    for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++)
        set(conf, defaults[i]);
    for (size_t i = 0; own && i < sizeof client_own / sizeof *client_own; i++)
        set(conf, client_own[i]);
    if (latency_n > 0 && !own) {
        /* Latency: answer as soon as anything is there rather than filling 1 MiB responses. */
        set(conf, "fetch.min.bytes=1");
        set(conf, "fetch.wait.max.ms=10");
    }
    /* The protocol log counts the Fetch requests (log_cb); latency rows do not report them, and
     * a log line per request would be CPU no other latency peer spends. */
    if (!latency_n)
        set(conf, "debug=protocol");
    for (int i = 0; i < nx; i++)
        set(conf, xs[i]);
    if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof errstr) ||
        rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof errstr))
        die("conf", errstr);
    rd_kafka_conf_set_log_cb(conf, log_cb);

    double t0 = mono_s();
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!rk)
        die("rd_kafka_new", errstr);
    rd_kafka_poll_set_consumer(rk);

    /* Partition count from metadata: the EOF bookkeeping needs it in both modes. */
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
    if (e || md->topic_cnt != 1 || md->topics[0].err)
        die("metadata", rd_kafka_err2str(e ? e : md->topic_cnt ? md->topics[0].err : 0));
    int nparts = md->topics[0].partition_cnt;
    rd_kafka_topic_partition_list_t *tpl = rd_kafka_topic_partition_list_new(nparts);
    for (int i = 0; i < nparts; i++)
        rd_kafka_topic_partition_list_add(tpl, topic, md->topics[0].partitions[i].id)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);

    if (group_mode) {
        rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
        if ((e = rd_kafka_subscribe(rk, sub)))
            die("subscribe", rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_destroy(sub);
    } else if ((e = rd_kafka_assign(rk, tpl))) {
        die("assign", rd_kafka_err2str(e));
    }

    char *eof = calloc((size_t)nparts + 1, 1);
    char *seen = calloc((size_t)nparts + 1, 1);
    int nseen = 0;
    double first_all = 0;
    int64_t *lat = latency_n > 0 ? malloc(sizeof *lat * (size_t)latency_n) : NULL;
    long long records = 0, bytes = 0, polls = 0;
    uint64_t value_sum = 0;
    int eofs = 0;
    while (latency_n > 0 ? records < latency_n : eofs < nparts) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 1000);
        polls++;
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (m->partition >= 0 && m->partition < nparts && !eof[m->partition]) {
                eof[m->partition] = 1;
                eofs++;
            }
        } else if (m->err) {
            die("consume", rd_kafka_message_errstr(m));
        } else {
            if (m->partition >= 0 && m->partition < nparts && !seen[m->partition]) {
                seen[m->partition] = 1;
                if (++nseen == nparts)
                    first_all = mono_s() - t0;
            }
            const unsigned char *v = m->payload;
            value_sum += perf_value_sum(v, m->len);
            bytes += (long long)m->len;
            if (lat && records < latency_n) {
                rd_kafka_timestamp_type_t tt;
                int64_t ts_ms = rd_kafka_message_timestamp(m, &tt);
                lat[records] = real_us() - ts_ms * 1000;
            }
            records++;
        }
        rd_kafka_message_destroy(m);
    }
    double wall = mono_s() - t0;
    double idle_cpu0 = process_cpu_s(), idle_t0 = mono_s();
    for (double t1 = mono_s(); mono_s() - t1 < linger;) { /* idle fetches, records none */
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (m)
            rd_kafka_message_destroy(m);
    }

    double idle_pct = 100.0 * (process_cpu_s() - idle_cpu0) / (mono_s() - idle_t0);
    pthread_mutex_lock(&fetches.lock); /* librdkafka's threads still run until destroy */
    printf("{\"client\":\"librdkafka\",\"version\":\"%s\",\"mode\":\"%s\",\"topic\":\"%s\","
           "\"partitions\":%d,\"records\":%lld,\"bytes\":%lld,\"value_sum\":%llu,"
           "\"wall_s\":%.3f,\"polls\":%lld,\"fetch_requests\":%lld,\"fetch_request_bytes\":%lld,"
           "\"fetch_request_bytes_min\":%lld,\"fetch_request_bytes_max\":%lld,"
           "\"fetch_request_bytes_last\":%lld",
           rd_kafka_version_str(), mode, topic, nparts, records, bytes,
           (unsigned long long)value_sum, wall, polls, fetches.n, fetches.bytes, fetches.lo,
           fetches.hi, fetches.last);
    pthread_mutex_unlock(&fetches.lock);
    if (first_all > 0)
        printf(",\"first_all_s\":%.3f", first_all);
    if (linger > 0)
        printf(",\"idle_s\":%.1f,\"idle_cpu_pct\":%.3f", linger, idle_pct);
    /* in delivery order: the first w; a warm-up of every record leaves no percentiles */
    long long w = lat_warmup < 0 ? 0 : lat_warmup < records ? lat_warmup : records;
    if (lat && records - w > 0) {
        long long n = records - w;
        const int64_t *l = lat + w;
        qsort(lat + w, (size_t)n, sizeof *lat, cmp_i64);
        printf(",\"lat_records\":%lld,\"lat_p50_ms\":%.2f,\"lat_p99_ms\":%.2f,\"lat_p999_ms\":%.2f",
               n, l[n / 2] / 1000.0, l[n * 99 / 100] / 1000.0, l[n * 999 / 1000] / 1000.0);
    }
    printf("}\n");
    fflush(stdout);

    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    rd_kafka_topic_partition_list_destroy(tpl);
    free(eof);
    free(seen);
    free(lat);
    return 0;
}
