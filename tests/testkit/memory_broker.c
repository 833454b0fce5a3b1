/*
 * kc-memory-broker: a Kafka broker served from RAM, for benchmarks without the JVM and for
 * client tests that need exact control of what a broker says. One topic, pre-encoded batches,
 * fetch sessions, per-group offsets, classic and KIP-848 group coordination. Usage:
 * tests/testkit/README.md.
 *
 * Threads: the main thread accepts; one thread per connection answers that connection's
 * requests in order (as a Kafka broker does: one in flight per connection). Shared state is in
 * mb_t (mb.h says what the lock guards).
 */
#include "mb.h"

#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS 256

typedef struct conn {
    mb_t *mb;
    int fd; /* -1: free slot */
    pthread_t thread;
    bool done;
} conn_t;

static mb_t g_mb;
static conn_t g_conns[MAX_CONNS];
static pthread_mutex_t g_conns_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_signal(int sig)
{
    (void)sig;
    g_mb.stop = 1;
}

static void *conn_main(void *arg)
{
    conn_t *c = arg;
    mb_t *mb = c->mb;
    kt_frame_t f = {0};
    kc_wbuf_t w = {0};
    kc_arena_t a = {0};
    kc_error_t err;
    while (!mb->stop && kt_read_frame(c->fd, &f, KT_MAX_FRAME) == 0) {
        kc_request_header_t h;
        kc_rbuf_t r;
        kc_arena_reset(&a);
        w.len = 0;
        if (kt_read_request_header(&f, &r, &h, &a, &err) != KC_OK) {
            fprintf(stderr, "kc-memory-broker: bad request header: %s\n", err.msg);
            break;
        }
        if (h.request_api_key >= 0 && h.request_api_key <= KC_PROTO_MAX_API_KEY) {
            pthread_mutex_lock(&mb->lock);
            mb->requests[h.request_api_key]++;
            pthread_mutex_unlock(&mb->lock);
        }
        if (kt_response_begin(&w, h.request_api_key, h.request_api_version, h.correlation_id,
                              &err) != KC_OK ||
            mb_handle(mb, h.request_api_key, h.request_api_version, &r, &w, &a, &err) != KC_OK) {
            /* Kafka closes the connection on a request it cannot parse or does not serve. */
            fprintf(stderr, "kc-memory-broker: api %d v%d: %s\n", h.request_api_key,
                    h.request_api_version, err.msg);
            break;
        }
        kt_response_end(&w, 0);
        if (kt_write_all(c->fd, w.data, w.len) != 0)
            break;
    }
    kt_frame_free(&f);
    kc_wbuf_free(&w);
    kc_arena_free(&a);
    pthread_mutex_lock(&g_conns_lock);
    c->done = true;
    pthread_mutex_unlock(&g_conns_lock);
    return NULL;
}

/* Joins finished connection threads; with `all`, first shuts every socket so blocked reads end. */
static void reap(bool all)
{
    for (int i = 0; i < MAX_CONNS; i++) {
        pthread_mutex_lock(&g_conns_lock);
        bool live = g_conns[i].fd >= 0, done = g_conns[i].done;
        if (live && all && !done)
            shutdown(g_conns[i].fd, SHUT_RDWR);
        pthread_mutex_unlock(&g_conns_lock);
        if (live && (done || all)) {
            pthread_join(g_conns[i].thread, NULL);
            close(g_conns[i].fd);
            g_conns[i].fd = -1;
        }
    }
}

static void write_stats(FILE *out)
{
    pthread_mutex_lock(&g_mb.lock);
    for (int k = 0; k <= KC_PROTO_MAX_API_KEY; k++) {
        if (!g_mb.requests[k])
            continue;
        const kc_proto_api_t *api = kc_proto_api_find((int16_t)k);
        fprintf(out, "requests api=%s key=%d count=%llu\n", api ? api->name : "unknown", k,
                (unsigned long long)g_mb.requests[k]);
    }
    fprintf(out, "served records=%llu bytes=%llu\n", (unsigned long long)g_mb.records_served,
            (unsigned long long)g_mb.bytes_served);
    pthread_mutex_unlock(&g_mb.lock);
}

static void dump_stats(const char *path)
{
    if (!path) {
        write_stats(stderr);
        return;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    write_stats(f);
    fclose(f);
    rename(tmp, path); /* readers never see a half-written file */
}

static int codec_of(const char *s)
{
    static const char *names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: kc-memory-broker [--port P] [--topic NAME] [--partitions P] [--records N]\n"
            "         [--size B] [--batch-records K] [--compression none|gzip|lz4|zstd|snappy]\n"
            "         [--node-id I --peers HOST:PORT,HOST:PORT,...] [--stats-file PATH]\n"
            "         [--group-initial-delay-ms MS] [--trace-groups]\n"
            "  --records is per partition. With --peers (every node, in node-id order, this one\n"
            "  included) node I leads the partitions p with p %% N == I. Node 0 coordinates every\n"
            "  group (classic and KIP-848); --group-initial-delay-ms is Kafka's\n"
            "  group.initial.rebalance.delay.ms (default 0). --trace-groups writes a line to\n"
            "  stderr per group event (KIP-848 assignment steps, removals, committed offsets).\n");
}

int main(int argc, char **argv)
{
    mb_t *mb = &g_mb;
    mb->topic = "bench";
    mb->partitions = 1;
    mb->records = 1000;
    mb->value_size = 100;
    mb->batch_records = 100;
    mb->n_nodes = 1;
    int port = 0;
    const char *peers = NULL, *stats_file = NULL;
    static const struct option opts[] = {
        {"port", 1, 0, 'p'},          {"topic", 1, 0, 't'},
        {"partitions", 1, 0, 'P'},    {"records", 1, 0, 'n'},
        {"size", 1, 0, 's'},          {"compression", 1, 0, 'c'},
        {"batch-records", 1, 0, 'k'}, {"node-id", 1, 0, 'i'},
        {"peers", 1, 0, 'e'},         {"stats-file", 1, 0, 'S'},
        {"help", 0, 0, 'h'},          {"group-initial-delay-ms", 1, 0, 'D'},
        {"trace-groups", 0, 0, 'T'},  {0, 0, 0, 0}};
    for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (o) {
        case 'p':
            port = atoi(optarg);
            break;
        case 't':
            mb->topic = optarg;
            break;
        case 'P':
            mb->partitions = atoi(optarg);
            break;
        case 'n':
            mb->records = atoll(optarg);
            break;
        case 's':
            mb->value_size = atoi(optarg);
            break;
        case 'k':
            mb->batch_records = atoi(optarg);
            break;
        case 'c':
            mb->codec = codec_of(optarg);
            break;
        case 'i':
            mb->node_id = atoi(optarg);
            break;
        case 'e':
            peers = optarg;
            break;
        case 'S':
            stats_file = optarg;
            break;
        case 'D':
            mb->group_initial_delay_ms = atoi(optarg);
            break;
        case 'T':
            mb->trace_groups = true;
            break;
        default:
            usage();
            return 2;
        }
    }
    if (mb->partitions < 1 || mb->partitions > 100000 || mb->records < 0 || mb->value_size < 0 ||
        mb->value_size > (1 << 20) || mb->batch_records < 1 || mb->batch_records > 100000 ||
        mb->codec < 0 || strlen(mb->topic) > 249 || mb->group_initial_delay_ms < 0) {
        usage();
        return 2;
    }
    if (peers) {
        char *list = strdup(peers), *save = NULL;
        mb->n_nodes = 0;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (mb->n_nodes == MB_MAX_NODES ||
                !kt_split_hostport(t, mb->node_host[mb->n_nodes], sizeof mb->node_host[0],
                                   &mb->node_port[mb->n_nodes])) {
                fprintf(stderr, "kc-memory-broker: bad --peers entry '%s'\n", t);
                return 2;
            }
            mb->n_nodes++;
        }
        free(list);
        if (mb->node_id < 0 || mb->node_id >= mb->n_nodes) {
            fprintf(stderr, "kc-memory-broker: --node-id %d not in --peers\n", mb->node_id);
            return 2;
        }
        if (port == 0)
            port = mb->node_port[mb->node_id];
    } else if (mb->node_id != 0) {
        fprintf(stderr, "kc-memory-broker: --node-id needs --peers\n");
        return 2;
    }
    /* A stable topic id from the name, so N instances agree on it without talking. */
    uint64_t h = 1469598103934665603ull;
    for (const char *c = mb->topic; *c; c++)
        h = (h ^ (uint8_t)*c) * 1099511628211ull;
    for (int i = 0; i < 16; i++)
        mb->topic_id.b[i] = (uint8_t)(h >> (8 * (i % 8))) ^ (uint8_t)(i * 37 + 1);
    pthread_mutex_init(&mb->lock, NULL);
    pthread_cond_init(&mb->group_cond, NULL);
    srandom((unsigned)getpid() ^ (unsigned)kt_now_ms()); /* member ids */
    if (!mb_data_init(mb)) {
        fprintf(stderr, "kc-memory-broker: out of memory building batches\n");
        return 1;
    }

    int bound = 0;
    int lfd = kt_listen(port, &bound);
    if (lfd < 0) {
        perror("kc-memory-broker: listen");
        return 1;
    }
    if (!peers) {
        snprintf(mb->node_host[0], sizeof mb->node_host[0], "127.0.0.1");
        mb->node_port[0] = bound;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < MAX_CONNS; i++)
        g_conns[i].fd = -1;
    printf("BOOTSTRAP=127.0.0.1:%d\n", bound);
    fflush(stdout);

    int64_t last_stats = kt_now_ms();
    while (!mb->stop) {
        struct pollfd pfd = {.fd = lfd, .events = POLLIN};
        int n = poll(&pfd, 1, 200);
        reap(false);
        /* Group timers (sessions, rebalance timeouts) run here, at least every 200 ms. */
        pthread_mutex_lock(&mb->lock);
        mbg_tick(mb, kt_now_ms());
        pthread_cond_broadcast(&mb->group_cond);
        pthread_mutex_unlock(&mb->lock);
        if (stats_file && kt_now_ms() - last_stats >= 1000) {
            dump_stats(stats_file);
            last_stats = kt_now_ms();
        }
        if (n <= 0)
            continue;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        int slot = -1;
        for (int i = 0; i < MAX_CONNS && slot < 0; i++)
            if (g_conns[i].fd < 0)
                slot = i;
        if (slot < 0) {
            close(fd); /* bounded: a client storm cannot make us spawn without limit */
            continue;
        }
        g_conns[slot] = (conn_t){.mb = mb, .fd = fd};
        if (pthread_create(&g_conns[slot].thread, NULL, conn_main, &g_conns[slot]) != 0) {
            close(fd);
            g_conns[slot].fd = -1;
        }
    }
    close(lfd);
    reap(true);
    dump_stats(stats_file);
    if (stats_file)
        write_stats(stderr);
    mb_data_free(mb);
    mbg_free_all(mb);
    return 0;
}
