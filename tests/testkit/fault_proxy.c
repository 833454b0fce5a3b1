/*
 * kc-fault-proxy: a protocol-aware TCP proxy in front of real brokers that injects faults on
 * command. Every response is parsed with the generated codec; Metadata and FindCoordinator
 * answers are rewritten so clients keep coming back through the proxy. Usage and the control
 * language: tests/testkit/README.md.
 *
 * Threads: the main thread accepts clients and serves the control socket (one line in, one line
 * out). Each proxied connection has two threads: `up` (client → broker: requests, remembering
 * each correlation id's API and version) and `down` (broker → client: responses, where the
 * rules apply). The in-flight table of a connection is shared by its two threads under
 * conn.lock; rules and counters are in fp_t under fp_t.lock.
 */
#include "fp.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Kafka clients keep a handful of requests in flight (max.in.flight 5); more than this on one
 * connection is treated as abuse and the connection is closed instead of growing a table. */
#define MAX_INFLIGHT 1024

typedef struct conn {
    fp_t *fp;
    int broker;
    int cfd, ufd;
    pthread_mutex_t lock; /* guards the in-flight ring */
    struct {
        int32_t corr;
        int16_t api, version;
    } ring[MAX_INFLIGHT];
    int head, n;
    atomic_int refs; /* the two threads; the last one out frees */
} conn_t;

#define MAX_CONNS 512

static fp_t g_fp;
static atomic_int g_live; /* connection threads running, for a clean SIGTERM */
/* Live connections, so SIGTERM can shut their sockets and wake their threads. */
static conn_t *g_conns[MAX_CONNS];
static pthread_mutex_t g_conns_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_signal(int sig)
{
    (void)sig;
    g_fp.stop = 1;
}

static void sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !g_fp.stop)
        ;
}

static void conn_release(conn_t *c)
{
    /* Either thread ending kills the connection both ways, as a dead peer would. */
    shutdown(c->cfd, SHUT_RDWR);
    shutdown(c->ufd, SHUT_RDWR);
    if (atomic_fetch_sub(&c->refs, 1) == 1) {
        pthread_mutex_lock(&g_conns_lock);
        for (int i = 0; i < MAX_CONNS; i++)
            if (g_conns[i] == c)
                g_conns[i] = NULL;
        pthread_mutex_unlock(&g_conns_lock);
        close(c->cfd);
        close(c->ufd);
        pthread_mutex_destroy(&c->lock);
        free(c);
    }
    atomic_fetch_sub(&g_live, 1);
}

/* A network partition holds the stream rather than cutting frames out of it: TCP retransmits
 * what a partition delays, so when it heals both sides see every byte, in order, late. A frame
 * that arrives while the partition is on waits here until it is off. Returns false when the
 * connection is to end instead: the proxy stops, or the client hung up while held (its late
 * answers would go nowhere, and a client retrying through a long partition must not pile up
 * held connections). */
static bool hold_while_blackholed(conn_t *c)
{
    fp_t *fp = c->fp;
    for (;;) {
        pthread_mutex_lock(&fp->lock);
        bool hole = fp->blackhole[c->broker];
        pthread_mutex_unlock(&fp->lock);
        if (!hole)
            return true;
        if (fp->stop)
            return false;
        struct pollfd p = {.fd = c->cfd, .events = POLLRDHUP};
        if (poll(&p, 1, 20) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
            return false;
    }
}

static void *up_main(void *arg)
{
    conn_t *c = arg;
    fp_t *fp = c->fp;
    kt_frame_t f = {0};
    uint8_t sz[4];
    while (!fp->stop && kt_read_frame(c->cfd, &f, KT_MAX_FRAME) == 0) {
        int16_t api, v;
        kc_request_header_t h;
        kc_rbuf_t r;
        kc_arena_t a = {0};
        kc_error_t err;
        /* The header must parse with the generated decoder; an API the codec does not know
         * (Produce, telemetry) still has key, version and correlation id at fixed places. */
        if (!kt_peek_api(&f, &api, &v) || f.len < 8)
            break;
        int32_t corr = (int32_t)((uint32_t)f.buf[4] << 24 | (uint32_t)f.buf[5] << 16 |
                                 (uint32_t)f.buf[6] << 8 | f.buf[7]);
        if (kc_proto_api_find(api) && kt_read_request_header(&f, &r, &h, &a, &err) != KC_OK) {
            fprintf(stderr, "kc-fault-proxy: bad request header: %s\n", err.msg);
            kc_arena_free(&a);
            break;
        }
        kc_arena_free(&a);
        if (fp_over_cap(fp, api, v)) {
            fprintf(stderr, "kc-fault-proxy: %s v%d is above its cap-api cap: closing\n",
                    kc_proto_api_find(api) ? kc_proto_api_find(api)->name : "?", (int)v);
            break; /* what a broker that does not speak the version does */
        }
        pthread_mutex_lock(&fp->lock);
        if (api >= 0 && api <= KC_PROTO_MAX_API_KEY)
            fp->requests[api]++;
        pthread_mutex_unlock(&fp->lock);
        if (!hold_while_blackholed(c))
            break; /* a network partition: the broker hears of it only when it heals */
        pthread_mutex_lock(&c->lock);
        bool full = c->n == MAX_INFLIGHT;
        if (!full) {
            int slot = (c->head + c->n++) % MAX_INFLIGHT;
            c->ring[slot].corr = corr, c->ring[slot].api = api, c->ring[slot].version = v;
        }
        pthread_mutex_unlock(&c->lock);
        if (full)
            break;
        sz[0] = (uint8_t)(f.len >> 24), sz[1] = (uint8_t)(f.len >> 16);
        sz[2] = (uint8_t)(f.len >> 8), sz[3] = (uint8_t)f.len;
        if (kt_write_all(c->ufd, sz, 4) != 0 || kt_write_all(c->ufd, f.buf, f.len) != 0)
            break;
    }
    kt_frame_free(&f);
    conn_release(c);
    return NULL;
}

/* Sends n bytes towards the client, paced to `bandwidth` bytes/s and stopping at the
 * close-after budget. -1 when the connection is to be closed. */
static int send_paced(conn_t *c, const uint8_t *p, size_t n, int64_t bandwidth, int64_t *budget)
{
    size_t chunk = bandwidth > 0 ? (size_t)(bandwidth / 20 > 0 ? bandwidth / 20 : 1) : n;
    while (n > 0) {
        size_t k = n < chunk ? n : chunk;
        bool last = false;
        if (*budget >= 0 && (int64_t)k >= *budget)
            k = (size_t)*budget, last = true;
        if (k && kt_write_all(c->cfd, p, k) != 0)
            return -1;
        if (last)
            return -1;
        if (*budget >= 0)
            *budget -= (int64_t)k;
        p += k, n -= k;
        if (bandwidth > 0)
            sleep_ms((int64_t)k * 1000 / bandwidth);
    }
    return 0;
}

static bool claim_close_after(fp_t *fp, int broker, int64_t *budget)
{
    bool got = false;
    pthread_mutex_lock(&fp->lock);
    for (int i = 0; i < fp->n_rules && !got; i++) {
        fp_rule_t *r = &fp->rules[i];
        if (r->kind == FP_CLOSE_AFTER && (r->broker < 0 || r->broker == broker)) {
            *budget = r->bytes;
            fp->fired[FP_CLOSE_AFTER]++;
            if (--r->count == 0)
                fp->rules[i] = fp->rules[--fp->n_rules];
            got = true;
        }
    }
    pthread_mutex_unlock(&fp->lock);
    return got;
}

static void *down_main(void *arg)
{
    conn_t *c = arg;
    fp_t *fp = c->fp;
    kt_frame_t f = {0};
    kc_wbuf_t out = {0};
    kc_arena_t a = {0};
    int64_t budget = -1; /* close-after bytes left for this connection, -1: no limit */
    unsigned seed = (unsigned)(uintptr_t)c;
    while (!fp->stop && kt_read_frame(c->ufd, &f, KT_MAX_FRAME) == 0) {
        if (f.len < 4)
            break;
        int32_t corr = (int32_t)((uint32_t)f.buf[0] << 24 | (uint32_t)f.buf[1] << 16 |
                                 (uint32_t)f.buf[2] << 8 | f.buf[3]);
        /* Responses come back in request order on one connection; match anyway by id. */
        int16_t api = -1, v = -1;
        pthread_mutex_lock(&c->lock);
        if (c->n > 0 && c->ring[c->head].corr == corr) {
            api = c->ring[c->head].api, v = c->ring[c->head].version;
            c->head = (c->head + 1) % MAX_INFLIGHT, c->n--;
        }
        pthread_mutex_unlock(&c->lock);
        if (api < 0) {
            fprintf(stderr, "kc-fault-proxy: response with unknown correlation id %d\n", corr);
            break;
        }
        fp_plan_t plan;
        fp_plan_response(fp, api, c->broker, &plan);
        if (budget < 0)
            claim_close_after(fp, c->broker, &budget);
        sleep_ms(plan.latency_ms);
        if (!hold_while_blackholed(c))
            break; /* the client hears of it only when the partition heals */
        kc_arena_reset(&a);
        fp_transform(fp, api, v, &f, &plan, &out, &a);
        if (out.len < 4)
            break;
        if (plan.garbage)
            for (size_t i = 4; i < out.len; i++)
                out.data[i] = (uint8_t)rand_r(&seed);
        if (plan.truncate) {
            size_t n = plan.truncate_bytes >= 0 && (size_t)plan.truncate_bytes < out.len
                           ? (size_t)plan.truncate_bytes
                           : out.len / 2;
            kt_write_all(c->cfd, out.data, n);
            break;
        }
        if (send_paced(c, out.data, out.len, plan.bandwidth, &budget) != 0)
            break;
    }
    kt_frame_free(&f);
    kc_wbuf_free(&out);
    kc_arena_free(&a);
    conn_release(c);
    return NULL;
}

static void start_conn(fp_t *fp, int broker, int cfd)
{
    int ufd = kt_connect(fp->up_host[broker], fp->up_port[broker]);
    conn_t *c = ufd >= 0 ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        fprintf(stderr, "kc-fault-proxy: cannot reach %s:%d\n", fp->up_host[broker],
                fp->up_port[broker]);
        if (ufd >= 0)
            close(ufd);
        close(cfd);
        return;
    }
    *c = (conn_t){.fp = fp, .broker = broker, .cfd = cfd, .ufd = ufd};
    int slot = -1;
    pthread_mutex_lock(&g_conns_lock);
    for (int i = 0; i < MAX_CONNS && slot < 0; i++)
        if (!g_conns[i])
            g_conns[slot = i] = c;
    pthread_mutex_unlock(&g_conns_lock);
    if (slot < 0) { /* bounded: refuse rather than grow */
        close(cfd), close(ufd), free(c);
        return;
    }
    pthread_mutex_init(&c->lock, NULL);
    atomic_store(&c->refs, 2);
    atomic_fetch_add(&g_live, 2);
    pthread_mutex_lock(&fp->lock);
    fp->connections++;
    pthread_mutex_unlock(&fp->lock);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    if (pthread_create(&t, &attr, up_main, c) != 0)
        conn_release(c);
    if (pthread_create(&t, &attr, down_main, c) != 0)
        conn_release(c);
    pthread_attr_destroy(&attr);
}

/* Control connections are short: read one line, answer one line, close. */
static void serve_control(fp_t *fp, int cfd)
{
    char line[512];
    size_t n = 0;
    struct pollfd p = {.fd = cfd, .events = POLLIN};
    while (n < sizeof line - 1 && poll(&p, 1, 2000) > 0) {
        ssize_t r = read(cfd, line + n, sizeof line - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (memchr(line, '\n', n))
            break;
    }
    line[n] = '\0';
    char reply[2048];
    fp_control(fp, line, reply, sizeof reply);
    size_t len = strlen(reply);
    reply[len++] = '\n';
    kt_write_all(cfd, reply, len);
    close(cfd);
}

static int control_listen(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return -1;
    strcpy(sa.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 16) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* `kc-fault-proxy --ctl PATH COMMAND...`: the command-line client of the control socket. */
static int ctl_main(const char *path, int argc, char **argv)
{
    char line[512] = "";
    for (int i = 0; i < argc; i++) {
        strncat(line, argv[i], sizeof line - strlen(line) - 2);
        strncat(line, i + 1 < argc ? " " : "\n", sizeof line - strlen(line) - 1);
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        perror("kc-fault-proxy --ctl");
        return 1;
    }
    kt_write_all(fd, line, strlen(line));
    char reply[2048];
    ssize_t n = read(fd, reply, sizeof reply - 1);
    close(fd);
    if (n <= 0)
        return 1;
    reply[n] = '\0';
    fputs(reply, stdout);
    return strncmp(reply, "OK", 2) == 0 ? 0 : 1;
}

static void usage(void)
{
    fprintf(stderr, "usage: kc-fault-proxy --control PATH (--listen PORT --upstream HOST:PORT)...\n"
                    "       kc-fault-proxy --map PORT=HOST:PORT,... --control PATH\n"
                    "       kc-fault-proxy --ctl PATH COMMAND [ARGS...]\n");
}

int main(int argc, char **argv)
{
    fp_t *fp = &g_fp;
    const char *control = NULL;
    int nlisten = 0;
    static const struct option opts[] = {{"listen", 1, 0, 'l'}, {"upstream", 1, 0, 'u'},
                                         {"map", 1, 0, 'm'},    {"control", 1, 0, 'c'},
                                         {"ctl", 1, 0, 'C'},    {0, 0, 0, 0}};
    for (int o; (o = getopt_long(argc, argv, "+", opts, NULL)) != -1;) {
        if (o == 'C')
            return ctl_main(optarg, argc - optind, argv + optind);
        if (o == 'l' && nlisten < FP_MAX_BROKERS) {
            fp->listen_port[nlisten++] = atoi(optarg);
        } else if (o == 'u' && fp->n < FP_MAX_BROKERS) {
            if (!kt_split_hostport(optarg, fp->up_host[fp->n], sizeof fp->up_host[0],
                                   &fp->up_port[fp->n]))
                return usage(), 2;
            fp->n++;
        } else if (o == 'm') {
            char *list = strdup(optarg), *save = NULL;
            for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(t, '=');
                if (!eq || fp->n == FP_MAX_BROKERS ||
                    !kt_split_hostport(eq + 1, fp->up_host[fp->n], sizeof fp->up_host[0],
                                       &fp->up_port[fp->n]))
                    return free(list), usage(), 2;
                fp->listen_port[fp->n++] = atoi(t);
                nlisten = fp->n;
            }
            free(list);
        } else if (o == 'c') {
            control = optarg;
        } else {
            return usage(), 2;
        }
    }
    if (fp->n == 0 || nlisten != fp->n || !control)
        return usage(), 2;
    pthread_mutex_init(&fp->lock, NULL);
    struct pollfd pfd[FP_MAX_BROKERS + 1];
    for (int i = 0; i < fp->n; i++) {
        pfd[i] = (struct pollfd){.fd = kt_listen(fp->listen_port[i], &fp->listen_port[i]),
                                 .events = POLLIN};
        if (pfd[i].fd < 0) {
            fprintf(stderr, "kc-fault-proxy: cannot listen on %d\n", fp->listen_port[i]);
            return 1;
        }
    }
    pfd[fp->n] = (struct pollfd){.fd = control_listen(control), .events = POLLIN};
    if (pfd[fp->n].fd < 0) {
        fprintf(stderr, "kc-fault-proxy: cannot create control socket %s\n", control);
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    printf("BOOTSTRAP=");
    for (int i = 0; i < fp->n; i++)
        printf("%s127.0.0.1:%d", i ? "," : "", fp->listen_port[i]);
    printf("\nCONTROL=%s\n", control);
    fflush(stdout);

    while (!fp->stop) {
        if (poll(pfd, (nfds_t)fp->n + 1, 200) <= 0)
            continue;
        for (int i = 0; i <= fp->n; i++) {
            if (!(pfd[i].revents & POLLIN))
                continue;
            int fd = accept4(pfd[i].fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd < 0)
                continue;
            if (i == fp->n)
                serve_control(fp, fd);
            else
                start_conn(fp, i, fd);
        }
    }
    for (int i = 0; i <= fp->n; i++)
        close(pfd[i].fd);
    unlink(control);
    /* Connection threads are blocked in read(): shutting their sockets wakes them. */
    pthread_mutex_lock(&g_conns_lock);
    for (int i = 0; i < MAX_CONNS; i++)
        if (g_conns[i]) {
            shutdown(g_conns[i]->cfd, SHUT_RDWR);
            shutdown(g_conns[i]->ufd, SHUT_RDWR);
        }
    pthread_mutex_unlock(&g_conns_lock);
    for (int i = 0; i < 250 && atomic_load(&g_live) > 0; i++)
        sleep_ms(20);
    return 0;
}
