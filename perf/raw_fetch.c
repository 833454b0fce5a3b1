/*
 * raw_fetch: the loopback ceiling for MEM-T1. It asks one broker for a topic's records with
 * kc_consume's default request sizes and wait (every partition, one request in flight, no fetch
 * session: kconsume's own requests ask for the same or less) and reads each response into one
 * reused buffer, by default with a plain blocking recv loop. Of a
 * response it reads only what it needs to ask for the next one: the partition headers (through
 * the generated codec) and each record batch's 61-byte header (its base offset, last offset
 * delta and record count). No CRC, no record iteration, no second thread, no callback: what is
 * left is the kernel's copy of the same response bytes and the broker's side of it, so
 * kconsume's records/s over this reader's is the share of the loopback limit it reaches.
 *
 *   raw_fetch -b HOST:PORT -t TOPIC -n RECORDS [-r recv|uring|fixedfile|multishot|fixedbuf]
 *
 * -r picks how the same responses are received (rx_mode_t below): the plain loop (the default,
 * MEM-T1's ceiling) or one of the io_uring patterns MEM-IO compares.
 *
 * Prints one JSON line like the other perf peers: records, bytes (response bytes received, not
 * value bytes), wall_s, responses, recv_calls (receive completions), and first_s and
 * first_records: when the first response carrying records was in hand (from the clock's start,
 * the first request), and how many it carried. Exit 1 on any error, with the reason on stderr.
 *
 * Owner: the one thread of the program.
 */
#include "proto/fetch.gen.h"
#include "proto/metadata.gen.h"
#include "proto/proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* kc_consume's settings (perf/peers/kc_consume.c and the library's defaults). A request's
 * max_bytes is not fetch.max.bytes (50 MiB) but the runtime's fetch budget, at most
 * max(queued.max.bytes / 32, max.partition.fetch.bytes) = 8 MiB (runtime/backpressure.c,
 * rt_conf.c): the responses kc_consume reads are 8 MiB ones, and so are this reader's. */
#define PART_MAX_BYTES  8388608 /* max.partition.fetch.bytes */
#define FETCH_MAX_BYTES 8388608 /* the request's max_bytes, as above */
#define FETCH_MIN_BYTES 1048576 /* fetch.min.bytes */
#define FETCH_WAIT_MS   100     /* fetch.max.wait.ms */
#define MAX_PARTS       4096
#define MAX_FRAME       (128u << 20)

/* Record batch v2 header offsets (Kafka's DefaultRecordBatch). */
#define BATCH_LEN_OFF        8
#define BATCH_MAGIC_OFF      16
#define BATCH_LAST_DELTA_OFF 23
#define BATCH_COUNT_OFF      57
#define BATCH_HEADER         61

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("raw_fetch: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* How responses are received (-r): the io_uring patterns the network thread could use, each
 * reading the same response bytes, so their CPU and syscalls per record compare directly. */
typedef enum rx_mode {
    RX_RECV,      /* blocking recv() until n bytes: the ceiling */
    RX_URING,     /* io_uring recv(MSG_WAITALL) straight into place: kconsume's pattern */
    RX_FIXEDFILE, /* RX_URING on a registered file, with the ring fd registered too */
    RX_MULTISHOT, /* a multishot recv on a provided-buffer ring, each chunk copied into place */
    RX_FIXEDBUF,  /* read_fixed into a registered frame buffer, short reads resubmitted */
} rx_mode_t;

/* 4 MiB of provided buffers, half an 8 MiB response: when the reader falls behind the socket the
 * multishot recv ends with ENOBUFS and is armed again (its extra system calls in MEM-IO). */
#define PBUF_COUNT 64
#define PBUF_SIZE  65536
#define PBUF_GROUP 1

typedef struct conn {
    int fd;
    int32_t corr;
    uint8_t *frame;
    size_t cap;
    uint64_t recv_bytes, recv_calls;
    rx_mode_t mode;
    struct io_uring ring;
    struct io_uring_buf_ring *br; /* RX_MULTISHOT: the provided buffers */
    uint8_t *pbufs;
    int armed;           /* RX_MULTISHOT: the multishot recv is live */
    int held;            /* RX_MULTISHOT: buffer id of the chunk being consumed, or -1 */
    const uint8_t *left; /* RX_MULTISHOT: its bytes not yet copied out */
    size_t left_len;
} conn_t;

static void conn_open(conn_t *c, const char *hostport)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (!colon || colon - hostport >= (long)sizeof host)
        die("bad address %s (HOST:PORT)", hostport);
    snprintf(host, sizeof host, "%.*s", (int)(colon - hostport), hostport);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, &sa.sin_addr) != 1)
        die("%s is not an IPv4 address", host);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        die("connect %s: %s", hostport, strerror(errno));
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void send_request(conn_t *c, int16_t key, int16_t v, const void *body)
{
    kc_wbuf_t w = {0};
    kc_error_t err;
    if (kc_proto_write_request(&w, key, v, ++c->corr, kc_str("raw_fetch"), body, &err) != KC_OK)
        die("encode api %d v%d: %s", key, v, err.msg);
    for (size_t off = 0; off < w.len;) {
        ssize_t n = send(c->fd, w.data + off, w.len - off, MSG_NOSIGNAL);
        if (n <= 0)
            die("send: %s", n == 0 ? "closed" : strerror(errno));
        off += (size_t)n;
    }
    kc_wbuf_free(&w);
}

static struct io_uring_cqe *uring_wait(conn_t *c)
{
    struct io_uring_cqe *cqe;
    if (io_uring_sq_ready(&c->ring) == 0 && io_uring_peek_cqe(&c->ring, &cqe) == 0)
        return cqe; /* already posted: no syscall */
    int rc = io_uring_submit_and_wait(&c->ring, 1);
    if (rc < 0 || (rc = io_uring_peek_cqe(&c->ring, &cqe)) != 0)
        die("io_uring wait: %s", strerror(-rc));
    return cqe;
}

static void uring_setup(conn_t *c)
{
    struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
    int rc = io_uring_queue_init_params(64, &c->ring, &p);
    if (rc != 0)
        die("io_uring_queue_init: %s", strerror(-rc));
    if (c->mode == RX_MULTISHOT) {
        /* liburing 2.3 (Debian's) has no io_uring_setup_buf_ring: the ring is a page-aligned
         * array registered by hand. */
        void *mem = NULL;
        size_t ring_bytes = PBUF_COUNT * sizeof(struct io_uring_buf);
        c->pbufs = malloc((size_t)PBUF_COUNT * PBUF_SIZE);
        if (!c->pbufs || posix_memalign(&mem, 4096, ring_bytes) != 0)
            die("out of memory for the provided buffers");
        c->br = mem;
        io_uring_buf_ring_init(c->br);
        struct io_uring_buf_reg reg = {
            .ring_addr = (uintptr_t)mem, .ring_entries = PBUF_COUNT, .bgid = PBUF_GROUP};
        if ((rc = io_uring_register_buf_ring(&c->ring, &reg, 0)) != 0)
            die("io_uring_register_buf_ring: %s", strerror(-rc));
        for (int i = 0; i < PBUF_COUNT; i++)
            io_uring_buf_ring_add(c->br, c->pbufs + (size_t)i * PBUF_SIZE, PBUF_SIZE,
                                  (unsigned short)i, io_uring_buf_ring_mask(PBUF_COUNT), i);
        io_uring_buf_ring_advance(c->br, PBUF_COUNT);
        c->held = -1;
    }
    if (c->mode == RX_FIXEDFILE) {
        if ((rc = io_uring_register_files(&c->ring, &c->fd, 1)) != 0)
            die("io_uring_register_files: %s", strerror(-rc));
        if ((rc = io_uring_register_ring_fd(&c->ring)) != 1)
            die("io_uring_register_ring_fd: %s", strerror(-rc));
    }
}

/* The frame buffer changed: register it (RX_FIXEDBUF) as buffer 0. Registering pins it, which
 * counts against RLIMIT_MEMLOCK for a process without CAP_IPC_LOCK. */
static void uring_frame_changed(conn_t *c)
{
    if (c->mode != RX_FIXEDBUF)
        return;
    struct iovec iov = {.iov_base = c->frame, .iov_len = c->cap};
    int rc = io_uring_register_buffers(&c->ring, &iov, 1);
    if (rc == -ENOMEM)
        die("io_uring_register_buffers: a %zu-byte frame is more than this process may lock "
            "(ulimit -l, RLIMIT_MEMLOCK): -r fixedbuf needs the limit above the largest response",
            c->cap);
    if (rc != 0)
        die("io_uring_register_buffers: %s", strerror(-rc));
}

static void recv_uring(conn_t *c, uint8_t *p, size_t n)
{
    while (n > 0) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);
        if (c->mode == RX_FIXEDBUF && p >= c->frame && p < c->frame + c->cap) {
            io_uring_prep_read_fixed(sqe, c->fd, p, (unsigned)n, 0, 0);
        } else if (c->mode == RX_FIXEDFILE) {
            io_uring_prep_recv(sqe, 0, p, n, MSG_WAITALL); /* slot 0 of the file table */
            sqe->flags |= IOSQE_FIXED_FILE;
        } else {
            io_uring_prep_recv(sqe, c->fd, p, n, MSG_WAITALL);
        }
        struct io_uring_cqe *cqe = uring_wait(c);
        int r = cqe->res;
        io_uring_cqe_seen(&c->ring, cqe);
        if (r <= 0)
            die("recv: %s", r == 0 ? "connection closed" : strerror(-r));
        c->recv_calls++;
        c->recv_bytes += (uint64_t)r;
        p += r, n -= (size_t)r;
    }
}

static void release_held(conn_t *c)
{
    io_uring_buf_ring_add(c->br, c->pbufs + (size_t)c->held * PBUF_SIZE, PBUF_SIZE,
                          (unsigned short)c->held, io_uring_buf_ring_mask(PBUF_COUNT), 0);
    io_uring_buf_ring_advance(c->br, 1);
    c->held = -1;
}

static void recv_multishot(conn_t *c, uint8_t *p, size_t n)
{
    while (n > 0) {
        if (c->left_len) {
            size_t k = c->left_len < n ? c->left_len : n;
            memcpy(p, c->left, k);
            c->left += k, c->left_len -= k, p += k, n -= k;
            if (!c->left_len)
                release_held(c);
            continue;
        }
        if (!c->armed) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);
            io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
            sqe->flags |= IOSQE_BUFFER_SELECT;
            sqe->buf_group = PBUF_GROUP;
            c->armed = 1;
        }
        struct io_uring_cqe *cqe = uring_wait(c);
        int r = cqe->res;
        unsigned flags = cqe->flags;
        io_uring_cqe_seen(&c->ring, cqe);
        if (!(flags & IORING_CQE_F_MORE))
            c->armed = 0; /* ended (out of buffers, or an error): armed again above */
        if (r == -ENOBUFS)
            continue;
        if (r <= 0)
            die("recv: %s", r == 0 ? "connection closed" : strerror(-r));
        if (!(flags & IORING_CQE_F_BUFFER))
            die("multishot recv completed without a buffer");
        c->recv_calls++;
        c->recv_bytes += (uint64_t)r;
        c->held = (int)(flags >> IORING_CQE_BUFFER_SHIFT);
        c->left = c->pbufs + (size_t)c->held * PBUF_SIZE;
        c->left_len = (size_t)r;
    }
}

/* Exactly n bytes into p, by the connection's receive mode. */
static void recv_n(conn_t *c, uint8_t *p, size_t n)
{
    if (c->mode == RX_URING || c->mode == RX_FIXEDFILE || c->mode == RX_FIXEDBUF) {
        recv_uring(c, p, n);
        return;
    }
    if (c->mode == RX_MULTISHOT) {
        recv_multishot(c, p, n);
        return;
    }
    while (n > 0) {
        ssize_t r = recv(c->fd, p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            die("recv: %s", r == 0 ? "connection closed" : strerror(errno));
        c->recv_calls++;
        c->recv_bytes += (uint64_t)r;
        p += r, n -= (size_t)r;
    }
}

/* Reads one response frame into the reused buffer and positions r after its header. */
static void recv_response(conn_t *c, int16_t key, int16_t v, kc_rbuf_t *r)
{
    uint8_t sz[4];
    recv_n(c, sz, 4);
    uint32_t len = be32(sz);
    if (len > MAX_FRAME)
        die("response of %" PRIu32 " bytes", len);
    if (len > c->cap) {
        if (c->mode == RX_FIXEDBUF && c->frame)
            (void)io_uring_unregister_buffers(&c->ring); /* before the memory goes */
        free(c->frame);
        c->cap = len;
        if (!(c->frame = malloc(c->cap)))
            die("out of memory for a %" PRIu32 "-byte response", len);
        uring_frame_changed(c);
    }
    recv_n(c, c->frame, len);
    *r = kc_rbuf(c->frame, len);
    kc_error_t err;
    int32_t corr;
    if (kc_proto_read_response_header(r, key, v, &corr, &err) != KC_OK)
        die("response header: %s", err.msg);
    if (corr != c->corr)
        die("correlation id %d, expected %d", corr, c->corr);
}

static void decode_response(conn_t *c, int16_t key, int16_t v, void *body, kc_arena_t *a)
{
    kc_rbuf_t r;
    recv_response(c, key, v, &r);
    kc_arena_reset(a);
    kc_error_t err;
    if (kc_proto_api_find(key)->decode_response(body, v, &r, a, &err) != KC_OK)
        die("decode api %d v%d: %s", key, v, err.msg);
}

/* Walks the batch headers of one partition's records: the next offset and the record count. */
static void walk_batches(kc_bytes_t recs, int64_t *next, uint64_t *records)
{
    const uint8_t *p = recs.ptr, *end = recs.ptr + (recs.len > 0 ? recs.len : 0);
    while (end - p >= BATCH_HEADER) {
        int64_t base = (int64_t)be64(p);
        uint32_t blen = be32(p + BATCH_LEN_OFF);
        if (blen < BATCH_HEADER - 12 || blen > INT32_MAX)
            die("record batch at offset %" PRId64 ": length %" PRIu32, base, blen);
        if ((size_t)(end - p) < (size_t)blen + 12)
            break; /* a partial batch at the end of the response (max bytes): fetched again */
        if (p[BATCH_MAGIC_OFF] != 2)
            die("record batch magic %d", p[BATCH_MAGIC_OFF]);
        int64_t last = base + (int32_t)be32(p + BATCH_LAST_DELTA_OFF);
        if (last >= *next) {
            *records += be32(p + BATCH_COUNT_OFF);
            *next = last + 1;
        }
        p += (size_t)blen + 12;
    }
}

int main(int argc, char **argv)
{
    const char *bootstrap = NULL, *topic = NULL;
    uint64_t want = 0;
    rx_mode_t mode = RX_RECV;
    static const char *const modes[] = {"recv", "uring", "fixedfile", "multishot", "fixedbuf"};
    for (int o; (o = getopt(argc, argv, "b:t:n:r:")) != -1;) {
        if (o == 'r') {
            size_t m = 0;
            while (m < sizeof modes / sizeof modes[0] && strcmp(optarg, modes[m]) != 0)
                m++;
            if (m == sizeof modes / sizeof modes[0])
                die("-r %s: recv, uring, fixedfile, multishot or fixedbuf", optarg);
            mode = (rx_mode_t)m;
        } else if (o == 'b')
            bootstrap = optarg;
        else if (o == 't')
            topic = optarg;
        else if (o == 'n')
            want = strtoull(optarg, NULL, 10);
        else
            die("usage: raw_fetch -b HOST:PORT -t TOPIC -n RECORDS [-r MODE]");
    }
    if (!bootstrap || !topic || want == 0)
        die("usage: raw_fetch -b HOST:PORT -t TOPIC -n RECORDS [-r MODE]");
    char first[300];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(bootstrap, ","), bootstrap);

    conn_t c = {.mode = mode};
    kc_arena_t a = {0};
    kc_error_t err;
    conn_open(&c, first);
    if (mode != RX_RECV)
        uring_setup(&c);

    kc_api_versions_request_t avq = {kc_str("raw_fetch"), kc_str("0")};
    send_request(&c, KC_API_VERSIONS_REQUEST_API_KEY, 3, &avq);
    kc_api_versions_response_t avr;
    decode_response(&c, KC_API_VERSIONS_REQUEST_API_KEY, 3, &avr, &a);
    kc_proto_versions_t v;
    if (kc_proto_negotiate(&avr, &v, &err) != KC_OK)
        die("ApiVersions: %s", err.msg);
    int16_t mv = v.version[KC_METADATA_REQUEST_API_KEY], fv = v.version[KC_FETCH_REQUEST_API_KEY];
    if (mv < 10 || fv < 13)
        die("the broker has no Metadata v10+ or Fetch v13+ (topic ids)");

    /* The topic's id and partitions; every partition must be led by this broker (the one whose
     * port is ours: the memory broker advertises 127.0.0.1). */
    kc_metadata_request_topic_t mt = {.name = kc_str(topic)};
    kc_metadata_request_t mq;
    kc_metadata_request_init(&mq);
    mq.topics.count = 1, mq.topics.items = &mt;
    send_request(&c, KC_METADATA_REQUEST_API_KEY, mv, &mq);
    kc_metadata_response_t mr;
    decode_response(&c, KC_METADATA_REQUEST_API_KEY, mv, &mr, &a);
    if (mr.topics.count != 1 || mr.topics.items[0].error_code != 0)
        die("Metadata for %s: error %d", topic,
            mr.topics.count == 1 ? mr.topics.items[0].error_code : -1);
    kc_uuid_t id = mr.topics.items[0].topic_id;
    int32_t np = mr.topics.items[0].partitions.count;
    if (np <= 0 || np > MAX_PARTS)
        die("%s has %d partitions (1..%d here)", topic, np, MAX_PARTS);
    int32_t self = -1, port = atoi(strrchr(first, ':') + 1);
    for (int32_t b = 0; b < mr.brokers.count; b++)
        if (mr.brokers.items[b].port == port)
            self = mr.brokers.items[b].node_id;
    int32_t idx[MAX_PARTS];
    for (int32_t i = 0; i < np; i++) {
        const kc_metadata_response_partition_t *mp = &mr.topics.items[0].partitions.items[i];
        if (mp->leader_id != self)
            die("partition %d is led by node %d, not by the broker at %s (node %d): raw_fetch "
                "reads from one broker",
                mp->partition_index, mp->leader_id, first, self);
        idx[i] = mp->partition_index;
    }

    static int64_t next[MAX_PARTS];
    static kc_fetch_request_fetch_partition_t fp[MAX_PARTS];
    kc_fetch_request_fetch_topic_t ft = {.topic_id = id};
    ft.partitions.count = np, ft.partitions.items = fp;
    kc_fetch_request_t fq;
    kc_fetch_request_init(&fq);
    fq.replica_id = -1, fq.max_wait_ms = FETCH_WAIT_MS, fq.min_bytes = FETCH_MIN_BYTES;
    fq.max_bytes = FETCH_MAX_BYTES, fq.isolation_level = 1;
    fq.session_id = 0, fq.session_epoch = -1; /* sessionless: every partition, every time */
    fq.topics.count = 1, fq.topics.items = &ft;
    fq.forgotten_topics_data.count = 0;

    uint64_t records = 0, responses = 0, first_records = 0;
    double t_first = 0;
    int empty = 0;
    uint64_t bytes0 = c.recv_bytes, calls0 = c.recv_calls;
    double t0 = now_s();
    while (records < want) {
        for (int32_t i = 0; i < np; i++)
            fp[i] = (kc_fetch_request_fetch_partition_t){.partition = idx[i],
                                                         .current_leader_epoch = -1,
                                                         .fetch_offset = next[i],
                                                         .last_fetched_epoch = -1,
                                                         .log_start_offset = -1,
                                                         .partition_max_bytes = PART_MAX_BYTES};
        send_request(&c, KC_FETCH_REQUEST_API_KEY, fv, &fq);
        kc_fetch_response_t fr;
        decode_response(&c, KC_FETCH_REQUEST_API_KEY, fv, &fr, &a);
        responses++;
        if (fr.error_code != 0)
            die("Fetch error %d", fr.error_code);
        uint64_t before = records;
        for (int32_t t = 0; t < fr.responses.count; t++) {
            const kc_fetch_response_fetchable_topic_response_t *tr = &fr.responses.items[t];
            for (int32_t k = 0; k < tr->partitions.count; k++) {
                const kc_fetch_response_partition_data_t *pd = &tr->partitions.items[k];
                int32_t i = 0;
                while (i < np && idx[i] != pd->partition_index)
                    i++;
                if (i == np)
                    die("a response for partition %d, which was not asked for",
                        pd->partition_index);
                if (pd->error_code != 0)
                    die("partition %d: error %d", pd->partition_index, pd->error_code);
                walk_batches(pd->records, &next[i], &records);
            }
        }
        if (records > 0 && before == 0) {
            t_first = now_s();
            first_records = records;
        }
        empty = records == before ? empty + 1 : 0;
        if (empty == 50) {
            /* Five seconds of answers without a record (each waited fetch.max.wait.ms): the
             * topic holds fewer records than asked for. */
            int64_t hw_total = 0;
            for (int32_t i = 0; i < np; i++)
                hw_total += next[i];
            die("no more records after %" PRIu64 " of %" PRIu64 " (offsets sum %" PRId64 ")",
                records, want, hw_total);
        }
    }
    double wall = now_s() - t0;
    printf("{\"client\":\"raw_fetch\",\"version\":\"Fetch v%d, %s\",\"topic\":\"%s\","
           "\"partitions\":%d,\"records\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"wall_s\":%.3f,"
           "\"responses\":%" PRIu64 ",\"recv_calls\":%" PRIu64,
           fv, modes[mode], topic, np, records, c.recv_bytes - bytes0, wall, responses,
           c.recv_calls - calls0);
    if (t_first > 0)
        printf(",\"first_s\":%.3f,\"first_records\":%" PRIu64, t_first - t0, first_records);
    printf("}\n");
    if (mode != RX_RECV)
        io_uring_queue_exit(&c.ring);
    free(c.pbufs);
    free(c.br);
    close(c.fd);
    free(c.frame);
    kc_arena_free(&a);
    return 0;
}
