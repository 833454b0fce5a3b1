/* Records real broker responses as decode fixtures for tests/unit/test_proto_fixtures.c.
 * Single-threaded, blocking sockets: a capture tool, not the data path.
 *   capture_responses HOST:PORT TOPIC OUTDIR
 * For every API in the codec's table and every version both sides speak, sends a small request
 * built with the generated encoders and writes OUTDIR/<Api>Response_v<N>.bin:
 * [int16 api key][int16 version][the response frame without its size: header + body].
 * TOPIC must exist and hold a few records (tests/interop/capture-fixtures arranges it). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "proto/get_telemetry_subscriptions.gen.h"
#include "proto/proto.h"
#include "proto/push_telemetry.gen.h"

static const char *host;
static int port;
static int fd = -1;
static int32_t corr;

static int connect_broker(void)
{
    if (fd >= 0)
        close(fd);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &sa.sin_addr);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return connect(fd, (struct sockaddr *)&sa, sizeof sa);
}

static int io_all(int wr, uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = wr ? write(fd, p, n) : read(fd, p, n);
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Sends one request; returns the response frame body (malloc'd) or NULL when the broker closed
 * the connection (then reconnects). */
static uint8_t *roundtrip(int16_t key, int16_t v, const void *req, size_t *len)
{
    kc_wbuf_t w = {0};
    kc_error_t err;
    int32_t c = ++corr;
    if (kc_proto_write_request(&w, key, v, c, kc_str("kc-capture"), req, &err)) {
        fprintf(stderr, "encode key %d v%d: %s\n", key, v, err.msg);
        exit(1);
    }
    uint8_t hdr[4];
    uint8_t *body = NULL;
    if (io_all(1, w.data, w.len) == 0 && io_all(0, hdr, 4) == 0) {
        *len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
        body = malloc(*len ? *len : 1);
        if (io_all(0, body, *len) != 0) {
            free(body);
            body = NULL;
        }
    }
    kc_wbuf_free(&w);
    if (!body)
        connect_broker();
    return body;
}

static kc_str_t topic;
static kc_uuid_t topic_id;
static kc_arena_t arena;
/* The client instance and subscription GetTelemetrySubscriptions gave, for the PushTelemetry
 * after it (KIP-714: a push names both, else the broker refuses it). */
static kc_get_telemetry_subscriptions_response_t telemetry;

/* A request for (key, v): defaults plus what makes the answer interesting. */
static void *build(int16_t key, int16_t v, const kc_proto_api_t *api)
{
    void *m = kc_arena_calloc(&arena, 1, api->request_size);
    static int32_t part0[1] = {0};
    static kc_str_t group = {"kc-capture-group", 16};
    switch (key) {
    case 18: {
        kc_api_versions_request_t *r = m;
        r->client_software_name = kc_str("kconsume");
        r->client_software_version = kc_str("0.1.0");
        break;
    }
    case 3: {
        kc_metadata_request_t *r = m;
        kc_metadata_request_init(r);
        r->topics.count = v == 0 ? 0 : -1; /* all topics */
        break;
    }
    case 10: {
        kc_find_coordinator_request_t *r = m;
        r->key = group;
        r->coordinator_keys.count = 1;
        r->coordinator_keys.items = &group;
        break;
    }
    case 1: {
        kc_fetch_request_t *r = m;
        kc_fetch_request_init(r);
        r->replica_id = -1;
        r->max_wait_ms = 0;
        r->min_bytes = 0;
        r->max_bytes = 1 << 20;
        r->session_epoch = -1; /* sessionless full fetch */
        kc_fetch_request_fetch_topic_t *t = kc_arena_calloc(&arena, 1, sizeof *t);
        kc_fetch_request_fetch_partition_t *p = kc_arena_calloc(&arena, 1, sizeof *p);
        p->current_leader_epoch = -1;
        p->last_fetched_epoch = -1;
        p->log_start_offset = -1;
        p->partition_max_bytes = 1 << 20;
        t->topic = topic;
        t->topic_id = topic_id;
        t->partitions.count = 1;
        t->partitions.items = p;
        r->topics.count = 1;
        r->topics.items = t;
        r->rack_id = kc_str("");
        break;
    }
    case 2: {
        kc_list_offsets_request_t *r = m;
        kc_list_offsets_request_init(r);
        r->replica_id = -1;
        kc_list_offsets_request_list_offsets_topic_t *t = kc_arena_calloc(&arena, 1, sizeof *t);
        kc_list_offsets_request_list_offsets_partition_t *p = kc_arena_calloc(&arena, 1, sizeof *p);
        p->current_leader_epoch = -1;
        p->timestamp = -1; /* latest */
        t->name = topic;
        t->partitions.count = 1;
        t->partitions.items = p;
        r->topics.count = 1;
        r->topics.items = t;
        r->timeout_ms = 1000;
        break;
    }
    case 23: {
        kc_offset_for_leader_epoch_request_t *r = m;
        kc_offset_for_leader_epoch_request_init(r);
        r->replica_id = -1;
        kc_offset_for_leader_epoch_request_offset_for_leader_topic_t *t =
            kc_arena_calloc(&arena, 1, sizeof *t);
        kc_offset_for_leader_epoch_request_offset_for_leader_partition_t *p =
            kc_arena_calloc(&arena, 1, sizeof *p);
        p->current_leader_epoch = -1;
        p->leader_epoch = 0;
        t->topic = topic;
        t->partitions.count = 1;
        t->partitions.items = p;
        r->topics.count = 1;
        r->topics.items = t;
        break;
    }
    case 9: {
        kc_offset_fetch_request_t *r = m;
        kc_offset_fetch_request_init(r);
        r->group_id = group;
        kc_offset_fetch_request_topic_t *t = kc_arena_calloc(&arena, 1, sizeof *t);
        t->name = topic;
        t->partition_indexes.count = 1;
        t->partition_indexes.items = part0;
        r->topics.count = 1;
        r->topics.items = t;
        kc_offset_fetch_request_group_t *g = kc_arena_calloc(&arena, 1, sizeof *g);
        g->group_id = group;
        g->member_id = KC_STR_NULL;
        g->member_epoch = -1;
        g->topics.count = -1;
        r->groups.count = 1;
        r->groups.items = g;
        break;
    }
    case 15: {
        kc_describe_groups_request_t *r = m;
        r->groups.count = 1;
        r->groups.items = &group;
        break;
    }
    case 68: {
        kc_consumer_group_heartbeat_request_t *r = m;
        kc_consumer_group_heartbeat_request_init(r);
        r->group_id = kc_str("kc-capture-848");
        /* v1 (KIP-1082) wants a client-generated member id; v0 lets the broker pick. */
        r->member_id = v >= 1 ? kc_str("kc-capture-member-0000000001") : kc_str("");
        r->rebalance_timeout_ms = 30000;
        r->subscribed_topic_names.count = 1;
        r->subscribed_topic_names.items = &topic;
        r->topic_partitions.count = 0;
        break;
    }
    case 69: {
        static kc_str_t g848 = {"kc-capture-848", 14};
        kc_consumer_group_describe_request_t *r = m;
        r->group_ids.count = 1;
        r->group_ids.items = &g848;
        break;
    }
    case 32: {
        /* the KIP-848 group's configs (resource type 32, GROUP), all of them (keys null) */
        static kc_describe_configs_request_describe_configs_resource_t res = {
            32, {"kc-capture-848", 14}, {-1, NULL}};
        kc_describe_configs_request_t *r = m;
        r->resources.count = 1;
        r->resources.items = &res;
        break;
    }
    case 76: {
        /* a share member joining (client-generated member id), so that ShareFetch and
         * ShareAcknowledge below come from a member of the group */
        kc_share_group_heartbeat_request_t *r = m;
        kc_share_group_heartbeat_request_init(r);
        r->group_id = kc_str("kc-capture-share");
        r->member_id = kc_str("kc-capture-share-member-01");
        r->member_epoch = 0;
        r->subscribed_topic_names.count = 1;
        r->subscribed_topic_names.items = &topic;
        break;
    }
    case 77: {
        static kc_str_t gshare = {"kc-capture-share", 16};
        kc_share_group_describe_request_t *r = m;
        r->group_ids.count = 1;
        r->group_ids.items = &gshare;
        break;
    }
    case 78: {
        /* opens a share session (epoch 0) on partition 0 of the topic */
        static kc_share_fetch_request_fetch_partition_t fp = {0, {0, NULL}};
        static kc_share_fetch_request_fetch_topic_t ft;
        ft.topic_id = topic_id;
        ft.partitions.count = 1;
        ft.partitions.items = &fp;
        kc_share_fetch_request_t *r = m;
        kc_share_fetch_request_init(r);
        r->group_id = kc_str("kc-capture-share");
        r->member_id = kc_str("kc-capture-share-member-01");
        r->share_session_epoch = 0;
        r->max_wait_ms = 2000;
        r->min_bytes = 1;
        r->max_bytes = 1 << 20;
        r->max_records = 10;
        r->batch_size = 10;
        r->topics.count = 1;
        r->topics.items = &ft;
        r->forgotten_topics_data.count = 0;
        break;
    }
    case 79: {
        /* accepts offset 0 in the session ShareFetch opened (its epoch is 1 now) */
        static int8_t accept[1] = {1};
        static kc_share_acknowledge_request_acknowledgement_batch_t ab = {0, 0, {1, accept}};
        static kc_share_acknowledge_request_acknowledge_partition_t ap = {0, {1, &ab}};
        static kc_share_acknowledge_request_acknowledge_topic_t at;
        at.topic_id = topic_id;
        at.partitions.count = 1;
        at.partitions.items = &ap;
        kc_share_acknowledge_request_t *r = m;
        kc_share_acknowledge_request_init(r);
        r->group_id = kc_str("kc-capture-share");
        r->member_id = kc_str("kc-capture-share-member-01");
        r->share_session_epoch = 1;
        r->topics.count = 1;
        r->topics.items = &at;
        break;
    }
    case 72: {
        kc_push_telemetry_request_t *r = m;
        kc_push_telemetry_request_init(r);
        r->client_instance_id = telemetry.client_instance_id;
        r->subscription_id = telemetry.subscription_id;
        r->metrics = (kc_bytes_t){NULL, 0};
        break;
    }
    default:
        break; /* defaults: the broker answers with an error code, still a real response */
    }
    return m;
}

static void save(const char *dir, const kc_proto_api_t *api, int16_t v, const uint8_t *body,
                 size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%sResponse_v%d.bin", dir, api->name, (int)v);
    FILE *f = fopen(path, "wb");
    uint8_t pre[4] = {(uint8_t)(api->key >> 8), (uint8_t)api->key, (uint8_t)(v >> 8), (uint8_t)v};
    fwrite(pre, 1, 4, f);
    fwrite(body, 1, len, f);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: capture_responses HOST:PORT TOPIC OUTDIR\n");
        return 2;
    }
    static char hostbuf[64];
    snprintf(hostbuf, sizeof hostbuf, "%s", argv[1]);
    char *colon = strchr(hostbuf, ':');
    if (!colon)
        return 2;
    *colon = 0;
    host = hostbuf;
    port = atoi(colon + 1);
    topic = kc_str(argv[2]);
    if (connect_broker() != 0) {
        perror("connect");
        return 1;
    }
    kc_error_t err;
    /* ApiVersions v3 first: what the broker speaks. */
    kc_api_versions_request_t avq = {kc_str("kconsume"), kc_str("0.1.0")};
    size_t len;
    uint8_t *body = roundtrip(18, 3, &avq, &len);
    kc_rbuf_t r = kc_rbuf(body, len);
    int32_t c;
    kc_api_versions_response_t av;
    if (!body || kc_proto_read_response_header(&r, 18, 3, &c, &err) ||
        kc_api_versions_response_decode(&av, 3, &r, &arena, &err)) {
        fprintf(stderr, "ApiVersions failed: %s\n", err.msg);
        return 1;
    }
    kc_proto_versions_t nv;
    if (kc_proto_negotiate(&av, &nv, &err))
        return 1;
    /* Metadata v12 for the topic id (Fetch v13+ names topics by id). */
    kc_metadata_request_t mq;
    kc_metadata_request_init(&mq);
    mq.topics.count = -1;
    uint8_t *mb = roundtrip(3, 12, &mq, &len);
    r = kc_rbuf(mb, len);
    kc_metadata_response_t md;
    if (!mb || kc_proto_read_response_header(&r, 3, 12, &c, &err) ||
        kc_metadata_response_decode(&md, 12, &r, &arena, &err))
        return 1;
    for (int32_t i = 0; i < md.topics.count; i++)
        if (md.topics.items[i].name.len == topic.len &&
            memcmp(md.topics.items[i].name.ptr, topic.ptr, (size_t)topic.len) == 0)
            topic_id = md.topics.items[i].topic_id;
    int saved = 0, skipped = 0;
    for (int i = 0; i < KC_PROTO_API_COUNT; i++) {
        const kc_proto_api_t *api = &kc_proto_apis[i];
        int16_t lo = api->min_version, hi = nv.version[api->key];
        const kc_api_versions_response_api_version_t *b = NULL;
        for (int32_t k = 0; k < av.api_keys.count; k++)
            if (av.api_keys.items[k].api_key == api->key)
                b = &av.api_keys.items[k];
        if (!b || hi < 0) {
            printf("%-24s not offered by the broker\n", api->name);
            continue;
        }
        if (b->min_version > lo)
            lo = b->min_version;
        for (int16_t v = lo; v <= hi; v++) {
            void *req = build(api->key, v, api);
            uint8_t *resp = roundtrip(api->key, v, req, &len);
            if (!resp) {
                printf("%-24s v%-2d connection closed by the broker: skipped\n", api->name, v);
                skipped++;
                continue;
            }
            save(argv[3], api, v, resp, len);
            saved++;
            if (api->key == 71) {
                kc_rbuf_t tr = kc_rbuf(resp, len);
                if (kc_proto_read_response_header(&tr, 71, v, &c, &err) ||
                    kc_get_telemetry_subscriptions_response_decode(&telemetry, v, &tr, &arena,
                                                                   &err))
                    fprintf(stderr, "GetTelemetrySubscriptions answer: %s\n", err.msg);
            }
            free(resp);
        }
    }
    printf("saved %d fixtures, %d skipped\n", saved, skipped);
    free(body);
    free(mb);
    kc_arena_free(&arena);
    close(fd);
    return 0;
}
