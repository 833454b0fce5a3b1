/*
 * kconsume's own peer for the benchmark (perf/run): the public API only, as an application would
 * use it. Reads a topic from the beginning to the end offsets listed at start, touching every
 * record's value (its bytes are summed, so nothing can skip decode), and prints one JSON line like
 * the other peers: {client, mode, records, bytes, value_sum, wall_s, allocs..., lat...}.
 *
 *   kc_consume -b BROKERS -t TOPIC [-m assign|group|share] [-w WORKERS] [-s STATS-FILE]
 *              [-n RECORDS] [-g GROUP] [-S SLEEP-US] [-l N [-D] [-W W]] [-L LINGER-S]
 *              [-X key=value]...
 *
 * assign: every partition at the beginning (kc_assign), no group. group: kc_subscribe with a fresh
 * group.id (group.protocol as configured; the default is KIP-848). share: kc_subscribe as a member
 * of share group -g GROUP (group.type=share; perf/run sets the group's share.auto.offset.reset to
 * earliest before the run), every record accepted by the callback's result; it needs -n, and the
 * run ends when that many records were delivered (a record whose lock ran out and came back counts
 * again). -S sleeps that many microseconds per record in the callback: a callback that waits on
 * something, where the records/s show how many callbacks run at once. The clock starts before the
 * assignment (group join included, like the other peers) and stops when every partition's last
 * record reached the callback. -n RECORDS (what perf/run counted in the topic) ends the run at that
 * many records instead of asking every partition's watermarks first: at 1,000 partitions those
 * 2,000 ListOffsets round trips would cost more CPU than the records. -l N (latency) instead reads
 * N records of a topic being produced and reports p50/p99/p99.9 of (callback time - record
 * CreateTime), with fetch.min.bytes 1 and fetch.max.wait.ms 10, or with -D the library's defaults;
 * -W W leaves the first W delivered (the producer's warm-up) out of the percentiles.
 * -L keeps fetching idle for that many seconds after the end (T3: the steady-state incremental
 * Fetch), then takes the stats; the process's CPU over that idle time is printed as idle_cpu_pct
 * (T4). first_all_s is the time from the clock's start until every partition delivered a record;
 * first_s the time until the callback had run on the first batch, and first_records that batch's
 * records (MEM-T1's rate from the first record, set against raw_fetch's).
 * Settings are in perf/README.md ("kconsume"); -X overrides any of them.
 *
 * CPU by thread: once the last record arrived (before the linger and kc_close, which joins the
 * threads) each thread's on-CPU time is read from
 * /proc/self/task/TID (schedstat: nanoseconds; stat's utime+stime where schedstat is missing) and
 * told apart by the names the library gives its threads: kc-net is the network thread,
 * kc-worker-N the workers, the rest (kc-dns, kc-login) "other"; main is this program's thread.
 * Printed as cpu_main_s, cpu_net_s, cpu_workers_s, cpu_other_s and workers_seen (worker threads
 * found): the report derives CPU per record per thread and the scaling prediction from them.
 *
 * Heap allocations: when perf/alloc_count.so is preloaded, its counter is read (dlsym) once 10%
 * of the records arrived and again at the end; allocs_per_record is the steady-state figure.
 *
 * Threads: the main thread sets up, waits on `done_cv` and prints. Workers run on_records; the
 * per-partition state (part_t) is owned by the worker running that partition (kconsume runs a
 * consumer group's partition on one worker at a time, happens-before between consecutive
 * callbacks) and read by main after kc_close joined every worker; share mode does not rely on
 * that and counts in atomics. Shared counters are atomics, noted where declared.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kconsume.h"
#include "touch.h"

#define MAX_X           64
#define STEADY_FRACTION 10 /* the allocation window opens after 1/10 of the records */

/* Per partition, for assign and group modes; share mode counts in g.share_* instead, since a share
 * partition's records may run on several workers at once. */
typedef struct part {
    int64_t end;      /* high watermark at start; written by main before the assignment */
    int64_t next;     /* next offset expected; owner: the partition's worker */
    uint64_t records; /* owner: the partition's worker */
    uint64_t bytes;   /* value bytes; owner: the partition's worker */
    uint64_t sum;     /* sum of every value byte; owner: the partition's worker */
    int done;         /* owner: the partition's worker */
} part_t;

static struct {
    part_t *parts;
    int32_t nparts;
    int64_t total; /* records to read; written by main before the assignment */
    int by_count;  /* -n: the end is `total` records, not each partition's watermark */
    int share;     /* -m share */
    long sleep_us; /* -S: per record, in the callback */
    /* share mode's totals: any worker adds (relaxed: main reads them after kc_close joined the
     * workers) */
    _Atomic uint64_t share_records, share_bytes, share_sum;
    int64_t latency_n;   /* -l */
    int client_defaults; /* -D: -l with the library's own fetch.min.bytes / fetch.max.wait.ms */
    int64_t lat_warmup;  /* -W: the first this many of the -l records are not in the percentiles */
    int64_t *lat_us;     /* -l: preallocated, slot claimed with lat_next */
    _Atomic int64_t lat_next;
    _Atomic int64_t seen;  /* records delivered so far (one add per batch) */
    atomic_int parts_done; /* partitions whose end reached the callback */
    atomic_int parts_seen; /* partitions that delivered at least one record */
    double t0;             /* the clock's start; written by main before the assignment */
    double t_all_first;    /* when parts_seen reached nparts; written once by that worker, read
                              by main after kc_close joined the workers */
    double t_first;        /* when the first batch was delivered, and its records: written once by
                              the worker whose add to `seen` started from 0, read like t_all_first */
    int64_t first_records;
    /* Allocation window: opened by the worker whose batch crosses total/10 (CAS on win_open). */
    atomic_int win_open;
    _Atomic int64_t win_seen0;
    _Atomic uint64_t win_allocs0;
    uint64_t (*alloc_count)(void); /* from the preloaded shim; NULL without it */
    void (*alloc_window)(int on);  /* the shim's per-call-site window */
    /* done: set once by the worker that finished the last partition (or the -l quota), under
     * done_mu; main waits on done_cv. */
    pthread_mutex_t done_mu;
    pthread_cond_t done_cv;
    int done;
    double t_done;
} g = {.done_mu = PTHREAD_MUTEX_INITIALIZER, .done_cv = PTHREAD_COND_INITIALIZER};

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "kc_consume: %s: %s\n", what, detail);
    exit(1);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t real_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void finish(void)
{
    pthread_mutex_lock(&g.done_mu);
    if (!g.done) {
        g.done = 1;
        g.t_done = mono_s();
        pthread_cond_broadcast(&g.done_cv);
    }
    pthread_mutex_unlock(&g.done_mu);
}

static kc_cb_result_t on_records(void *opaque, kc_part_t *kp, kc_records_t *batch)
{
    (void)opaque;
    if (kp->partition < 0 || kp->partition >= g.nparts)
        return KC_CB_CONTINUE;
    part_t *p = &g.parts[kp->partition];
    uint64_t n = 0, bytes = 0, sum = 0;
    int64_t next = g.share ? 0 : p->next;
    int64_t now_us = g.latency_n ? real_us() : 0;
    const kc_record_t *r;
    while ((r = kc_records_next(batch)) != NULL) {
        size_t len;
        const unsigned char *v = kc_record_value(r, &len);
        sum += perf_value_sum(v, len); /* touch every byte: decode cannot be skipped */
        bytes += len;
        n++;
        next = kc_record_offset(r) + 1;
        if (g.sleep_us > 0)
            nanosleep(&(struct timespec){g.sleep_us / 1000000, (g.sleep_us % 1000000) * 1000},
                      NULL);
        if (g.latency_n) {
            int64_t slot = atomic_fetch_add_explicit(&g.lat_next, 1, memory_order_relaxed);
            if (slot < g.latency_n)
                g.lat_us[slot] = now_us - kc_record_timestamp(r) * 1000;
        }
    }
    if (g.share) {
        atomic_fetch_add_explicit(&g.share_records, n, memory_order_relaxed);
        atomic_fetch_add_explicit(&g.share_bytes, bytes, memory_order_relaxed);
        atomic_fetch_add_explicit(&g.share_sum, sum, memory_order_relaxed);
    } else {
        if (p->records == 0 && n > 0 && atomic_fetch_add(&g.parts_seen, 1) + 1 == g.nparts)
            g.t_all_first = mono_s();
        p->records += n;
        p->bytes += bytes;
        p->sum += sum;
        p->next = next;
    }
    /* acq_rel: pairs with the main thread's acquire after `done` (it reads the totals only after
     * kc_close, which joins the workers, so this is for the window figures only). */
    int64_t seen =
        atomic_fetch_add_explicit(&g.seen, (int64_t)n, memory_order_acq_rel) + (int64_t)n;
    if (n > 0 && seen == (int64_t)n) {
        g.t_first = mono_s();
        g.first_records = (int64_t)n;
    }
    if (g.alloc_count && seen >= g.total / STEADY_FRACTION && !atomic_load(&g.win_open)) {
        int exp = 0;
        if (atomic_compare_exchange_strong(&g.win_open, &exp, 1)) {
            atomic_store(&g.win_allocs0, g.alloc_count());
            atomic_store(&g.win_seen0, seen);
            if (g.alloc_window)
                g.alloc_window(1);
        }
    }
    if (g.latency_n) {
        if (atomic_load_explicit(&g.lat_next, memory_order_relaxed) >= g.latency_n)
            finish();
    } else if (g.by_count) {
        if (seen >= g.total)
            finish();
    } else if (!p->done && next >= p->end) {
        p->done = 1;
        if (atomic_fetch_add(&g.parts_done, 1) + 1 == g.nparts)
            finish();
    }
    return KC_CB_CONTINUE;
}

static void on_event(void *opaque, const kc_event_t *ev)
{
    (void)opaque;
    if (ev->type == KC_EVENT_ERROR && ev->error) {
        fprintf(stderr, "kc_consume: %s: %s\n", kc_err_name(ev->error->code), ev->error->msg);
        if (ev->error->code == KC_ERR_FATAL)
            exit(1);
    }
}

static void set(kc_conf_t *conf, const char *key, const char *value)
{
    kc_error_t e;
    if (kc_conf_set(conf, key, value, &e) != KC_OK)
        die(key, e.msg);
}

static void set_kv(kc_conf_t *conf, const char *kv)
{
    char key[256];
    const char *eq = strchr(kv, '=');
    if (!eq || (size_t)(eq - kv) >= sizeof key)
        die("bad -X (want key=value)", kv);
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    set(conf, key, eq + 1);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* One stats object taken now (kc_stats) as one line of `path`: after the run and its linger, so
 * the Fetch counters cover the whole run and the last request is a steady-state one, and before
 * kc_close, whose session-closing Fetch (it forgets every partition) is not the run's. */
static void write_stats(kc_consumer_t *c, const char *path)
{
    kc_error_t e;
    char *json;
    size_t len;
    if (kc_stats(c, &json, &len, &e) != KC_OK) {
        fprintf(stderr, "kc_consume: kc_stats: %s\n", e.msg);
        return;
    }
    FILE *f = fopen(path, "w");
    if (!f)
        die(path, strerror(errno));
    fwrite(json, 1, len, f);
    fputc('\n', f);
    fclose(f);
    free(json);
}

/* User+system CPU seconds of the whole process so far. */
static double process_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* On-CPU seconds of thread `tid` of this process, or -1 if it is gone. */
static double thread_cpu_s(int tid)
{
    char path[64];
    unsigned long long ns;
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    FILE *f = fopen(path, "r");
    if (f) {
        int ok = fscanf(f, "%llu", &ns) == 1;
        fclose(f);
        if (ok)
            return (double)ns / 1e9;
    }
    /* stat: "pid (comm) state ..." with utime and stime the 14th and 15th fields; comm may hold
     * spaces, so parse after its closing parenthesis. */
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    if (!(f = fopen(path, "r")))
        return -1;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The name of thread `tid` of this process into `name` ("" if it is gone). */
static void thread_name(int tid, char *name, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    FILE *f = fopen(path, "r");
    name[0] = '\0';
    if (f) {
        if (fgets(name, (int)cap, f))
            name[strcspn(name, "\n")] = '\0';
        fclose(f);
    }
}

/* Prints ,"cpu_main_s":..,"cpu_net_s":..,"cpu_workers_s":..,"cpu_other_s":..,"workers_seen":N
 * into `out` (the library's threads still run: call before kc_close). The library names its
 * threads: kc-net (the network thread), kc-worker-<id>; the rest (name lookups, logins, the
 * application's main thread is counted apart) is "other". */
static void thread_cpu_split(char *out, size_t cap)
{
    int main_tid = (int)getpid(), nw = 0;
    double cpu_main = 0, cpu_workers = 0, cpu_net = 0, cpu_other = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d) {
        out[0] = '\0';
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int tid = atoi(de->d_name);
        if (tid <= 0)
            continue;
        double s = thread_cpu_s(tid);
        if (s < 0)
            continue;
        char name[32];
        thread_name(tid, name, sizeof name);
        if (tid == main_tid)
            cpu_main += s;
        else if (strncmp(name, "kc-worker-", 10) == 0)
            cpu_workers += s, nw++;
        else if (strcmp(name, "kc-net") == 0)
            cpu_net += s;
        else
            cpu_other += s;
    }
    closedir(d);
    snprintf(out, cap,
             ",\"cpu_main_s\":%.4f,\"cpu_net_s\":%.4f,\"cpu_workers_s\":%.4f,"
             "\"cpu_other_s\":%.4f,\"workers_seen\":%d",
             cpu_main, cpu_net, cpu_workers, cpu_other, nw);
}

int main(int argc, char **argv)
{
    const char *brokers = "127.0.0.1:9092", *topic = NULL, *mode = "assign", *stats = NULL;
    const char *share_group = NULL;
    const char *xs[MAX_X];
    int nx = 0, workers = 1;
    double linger = 0;
    int opt;
    while ((opt = getopt(argc, argv, "b:t:m:w:s:n:g:S:l:DW:L:X:")) != -1) {
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
        case 'w':
            workers = atoi(optarg);
            break;
        case 's':
            stats = optarg;
            break;
        case 'l':
            g.latency_n = atol(optarg);
            break;
        case 'D':
            g.client_defaults = 1;
            break;
        case 'W':
            g.lat_warmup = atol(optarg);
            break;
        case 'n':
            g.total = atoll(optarg);
            g.by_count = g.total > 0;
            break;
        case 'g':
            share_group = optarg;
            break;
        case 'S':
            g.sleep_us = atol(optarg);
            break;
        case 'L':
            linger = atof(optarg);
            break;
        case 'X':
            if (nx == MAX_X)
                die("-X", "too many");
            xs[nx++] = optarg;
            break;
        default:
            die("usage", "-b BROKERS -t TOPIC [-m assign|group|share] [-w N] [-s STATS] "
                         "[-n RECORDS] [-g GROUP] [-S SLEEP-US] [-l N] [-L SECONDS] [-X k=v]...");
        }
    }
    g.share = strcmp(mode, "share") == 0;
    int group_mode = strcmp(mode, "group") == 0 || g.share;
    if (!topic || (!group_mode && strcmp(mode, "assign") != 0) || workers < 1)
        die("usage", "-b BROKERS -t TOPIC [-m assign|group|share] [-w N] [-s STATS] [-l N] [-L S]");
    if (g.share && (!g.by_count || !share_group || g.latency_n))
        die("usage", "-m share needs -n RECORDS and -g GROUP (and no -l)");
    *(void **)&g.alloc_count = dlsym(RTLD_DEFAULT, "kc_perf_alloc_count");
    *(void **)&g.alloc_window = dlsym(RTLD_DEFAULT, "kc_perf_alloc_window");

    kc_conf_t *conf = kc_conf_new();
    if (!conf)
        die("kc_conf_new", "out of memory");
    char wbuf[16], group[128];
    snprintf(wbuf, sizeof wbuf, "%d", workers);
    snprintf(group, sizeof group, "perf-kconsume-%d-%lld", (int)getpid(), (long long)real_us());
    /* The same high-throughput fetch settings as the librdkafka peer (perf/README.md). */
    set(conf, "bootstrap.servers", brokers);
    set(conf, "worker.threads", wbuf);
    set(conf, "auto.offset.reset", "earliest");
    set(conf, "enable.auto.commit", "false");
    /* Latency: answer as soon as anything is there (or, -D, the library's defaults); else the
     * throughput settings every peer shares. */
    if (!g.latency_n || !g.client_defaults) {
        set(conf, "fetch.min.bytes", g.latency_n ? "1" : "1048576");
        set(conf, "fetch.max.wait.ms", g.latency_n ? "10" : "100");
        set(conf, "max.partition.fetch.bytes", "8388608");
    }
    if (g.share) {
        set(conf, "group.type", "share");
        set(conf, "group.id", share_group);
    } else if (group_mode)
        set(conf, "group.id", group);
    for (int i = 0; i < nx; i++)
        set_kv(conf, xs[i]);
    if (g.latency_n > 0 && !(g.lat_us = malloc(sizeof *g.lat_us * (size_t)g.latency_n)))
        die("latency", "out of memory");

    kc_callbacks_t cbs = {.on_records = on_records, .on_event = on_event};
    kc_consumer_t *c;
    kc_error_t e;
    if (kc_consumer_new(conf, &cbs, &c, &e) != KC_OK)
        die("kc_consumer_new", e.msg);

    /* End offsets before the clock starts (as the franz-go peer lists them with kadm). */
    if (kc_topic_partitions(c, topic, &g.nparts, 30000, &e) != KC_OK)
        die("partitions", e.msg);
    if (!(g.parts = calloc((size_t)g.nparts, sizeof *g.parts)))
        die("partitions", "out of memory");
    for (int32_t i = 0; i < g.nparts && !g.by_count; i++) {
        int64_t low = 0, high = 0;
        if (!g.latency_n && kc_query_watermarks(c, topic, i, &low, &high, 30000, &e) != KC_OK)
            die("watermarks", e.msg);
        g.parts[i].end = high;
        g.parts[i].next = low;
        g.total += high - low;
        if (!g.latency_n && high <= low) { /* nothing to read: done before it starts */
            g.parts[i].done = 1;
            atomic_fetch_add(&g.parts_done, 1);
        }
    }
    if (!g.latency_n && !g.by_count && atomic_load(&g.parts_done) == g.nparts)
        die("topic", "empty");

    double t0 = g.t0 = mono_s();
    if (group_mode) {
        const char *topics[1] = {topic};
        if (kc_subscribe(c, topics, 1, &e) != KC_OK)
            die("subscribe", e.msg);
    } else {
        kc_topic_partition_t *tps = calloc((size_t)g.nparts, sizeof *tps);
        if (!tps)
            die("assign", "out of memory");
        for (int32_t i = 0; i < g.nparts; i++)
            tps[i] = (kc_topic_partition_t){topic, i, KC_OFFSET_BEGINNING};
        if (kc_assign(c, tps, (size_t)g.nparts, &e) != KC_OK)
            die("assign", e.msg);
        free(tps);
    }

    pthread_mutex_lock(&g.done_mu);
    while (!g.done)
        pthread_cond_wait(&g.done_cv, &g.done_mu);
    double wall = g.t_done - t0;
    pthread_mutex_unlock(&g.done_mu);
    /* The window closes here, before the linger and close (whose allocations are not steady
     * state). */
    uint64_t allocs1 = g.alloc_count ? g.alloc_count() : 0;
    if (g.alloc_window)
        g.alloc_window(0);
    /* The split covers the run up to the last record: not the linger (idle) or the close. */
    char cpu_split[256];
    thread_cpu_split(cpu_split, sizeof cpu_split);
    int64_t seen1 = atomic_load(&g.seen);
    double idle_cpu0 = process_cpu_s(), idle_t0 = mono_s();
    if (linger > 0)
        nanosleep(
            &(struct timespec){(time_t)linger, (long)((linger - (double)(time_t)linger) * 1e9)},
            NULL);

    double idle_pct = 100.0 * (process_cpu_s() - idle_cpu0) / (mono_s() - idle_t0);
    if (stats)
        write_stats(c, stats);
    if (kc_close(c, 10000, &e) != KC_OK)
        fprintf(stderr, "kc_consume: close: %s\n", e.msg);
    kc_destroy(c);

    uint64_t records = 0, bytes = 0, sum = 0;
    for (int32_t i = 0; i < g.nparts; i++) {
        records += g.parts[i].records;
        bytes += g.parts[i].bytes;
        sum += g.parts[i].sum;
    }
    if (g.share) {
        records = atomic_load(&g.share_records);
        bytes = atomic_load(&g.share_bytes);
        sum = atomic_load(&g.share_sum);
    }
    printf("{\"client\":\"kconsume\",\"version\":\"%s\",\"mode\":\"%s\",\"workers\":%d,"
           "\"topic\":\"%s\",\"partitions\":%d,\"records\":%" PRIu64 ",\"bytes\":%" PRIu64
           ",\"value_sum\":%" PRIu64 ",\"wall_s\":%.3f",
           kc_version(), mode, workers, topic, g.nparts, records, bytes, sum, wall);
    fputs(cpu_split, stdout);
    if (g.t_all_first > 0)
        printf(",\"first_all_s\":%.3f", g.t_all_first - t0);
    if (g.t_first > 0)
        printf(",\"first_s\":%.3f,\"first_records\":%" PRId64, g.t_first - t0, g.first_records);
    if (linger > 0)
        printf(",\"idle_s\":%.1f,\"idle_cpu_pct\":%.3f", linger, idle_pct);
    if (g.alloc_count && atomic_load(&g.win_open) && seen1 > atomic_load(&g.win_seen0)) {
        uint64_t a = allocs1 - atomic_load(&g.win_allocs0);
        int64_t r = seen1 - atomic_load(&g.win_seen0);
        printf(",\"allocs_window\":%" PRIu64 ",\"allocs_window_records\":%" PRId64
               ",\"allocs_per_record\":%.6f",
               a, r, (double)a / (double)r);
    }
    if (g.latency_n > 0) {
        int64_t n = atomic_load(&g.lat_next);
        if (n > g.latency_n)
            n = g.latency_n;
        /* in delivery order: the first w; a warm-up of every record leaves no percentiles */
        int64_t w = g.lat_warmup < 0 ? 0 : g.lat_warmup < n ? g.lat_warmup : n;
        const int64_t *l = g.lat_us + w;
        n -= w;
        if (n > 0) {
            qsort(g.lat_us + w, (size_t)n, sizeof *g.lat_us, cmp_i64);
            printf(",\"lat_records\":%" PRId64
                   ",\"lat_p50_ms\":%.2f,\"lat_p99_ms\":%.2f,\"lat_p999_ms\":%.2f",
                   n, (double)l[n / 2] / 1000.0, (double)l[n * 99 / 100] / 1000.0,
                   (double)l[n * 999 / 1000] / 1000.0);
        }
    }
    printf("}\n");
    fflush(stdout);
    free(g.parts);
    free(g.lat_us);
    return 0;
}
