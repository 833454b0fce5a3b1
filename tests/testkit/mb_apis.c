/*
 * kc-memory-broker: ApiVersions, Metadata, ListOffsets, FindCoordinator, OffsetCommit,
 * OffsetFetch, and the dispatch of every API (Fetch: mb_fetch.c; groups: mb_group_apis.c).
 * Requests are decoded and responses encoded with the generated codec; this file only decides
 * the contents.
 *
 * Owner: the connection threads; the shared fields of mb_t are read-only here except the
 * groups' committed offsets, which are read and written under mb_t.lock.
 */
#include "mb.h"
#include "proto/kafka_errors.h"

#include <stdio.h>
#include <string.h>

/* DescribeConfigs' enums (Kafka's ConfigResource.Type, DescribeConfigsResponse's ConfigSource
 * and ConfigType). */
enum { RESOURCE_GROUP = 32, CONFIG_SOURCE_DEFAULT = 5, CONFIG_TYPE_INT = 3 };

/* What we serve. Versions are the codec's min..max_stable: everything it can encode. */
static const int16_t served[] = {
    KC_API_VERSIONS_REQUEST_API_KEY,     KC_METADATA_REQUEST_API_KEY,
    KC_LIST_OFFSETS_REQUEST_API_KEY,     KC_FETCH_REQUEST_API_KEY,
    KC_FIND_COORDINATOR_REQUEST_API_KEY, KC_OFFSET_COMMIT_REQUEST_API_KEY,
    KC_OFFSET_FETCH_REQUEST_API_KEY,     KC_JOIN_GROUP_REQUEST_API_KEY,
    KC_SYNC_GROUP_REQUEST_API_KEY,       KC_HEARTBEAT_REQUEST_API_KEY,
    KC_LEAVE_GROUP_REQUEST_API_KEY,      KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY,
    KC_DESCRIBE_CONFIGS_REQUEST_API_KEY,
};

bool mb_api_range(int16_t key, int16_t *min, int16_t *max)
{
    for (size_t i = 0; i < sizeof served / sizeof served[0]; i++)
        if (served[i] == key) {
            const kc_proto_api_t *api = kc_proto_api_find(key);
            *min = api->min_version;
            *max = api->max_stable;
            return true;
        }
    return false;
}

static bool is_our_topic(const mb_t *mb, kc_str_t name)
{
    return name.len == (int32_t)strlen(mb->topic) &&
           memcmp(name.ptr, mb->topic, (size_t)name.len) == 0;
}

static kc_err_t api_versions(int16_t v, kc_wbuf_t *w, kc_arena_t *a, kc_error_t *err)
{
    kc_api_versions_response_t r;
    kc_api_versions_response_init(&r);
    size_t n = sizeof served / sizeof served[0];
    r.api_keys.items = kc_arena_calloc(a, n + 1, sizeof *r.api_keys.items);
    if (!r.api_keys.items)
        return kc_fail(err, KC_ERR_NOMEM, "ApiVersions response");
    for (size_t i = 0; i < n; i++) {
        kc_api_versions_response_api_version_t *e = &r.api_keys.items[i];
        e->api_key = served[i];
        mb_api_range(served[i], &e->min_version, &e->max_version);
    }
    /* Produce v3-9 is advertised but not served (a Produce request closes the connection):
     * librdkafka derives its "MsgVer2" and "ZSTD" features from the Produce range too, and
     * without them it falls back to Fetch v2, which the codec (v4+) does not speak. */
    r.api_keys.items[n] = (kc_api_versions_response_api_version_t){0, 3, 9};
    r.api_keys.count = (int32_t)n + 1;
    /* KIP-511: a client newer than us gets UNSUPPORTED_VERSION in a v0 body, and retries with
     * the newest version our list names. */
    if (v > KC_API_VERSIONS_RESPONSE_MAX_VERSION) {
        r.error_code = KC_KAFKA_UNSUPPORTED_VERSION;
        v = 0;
    }
    return kc_api_versions_response_encode(&r, v, w, err);
}

static void fill_topic(const mb_t *mb, kc_metadata_response_topic_t *t, kc_arena_t *a)
{
    t->name = kc_str(mb->topic);
    t->topic_id = mb->topic_id;
    kc_metadata_response_partition_t *ps = kc_arena_calloc(a, (size_t)mb->partitions, sizeof *ps);
    int32_t *ids = kc_arena_calloc(a, (size_t)mb->n_nodes, sizeof *ids);
    if (!ps || !ids) {
        t->error_code = KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    for (int32_t i = 0; i < mb->n_nodes; i++)
        ids[i] = i;
    for (int32_t p = 0; p < mb->partitions; p++) {
        kc_metadata_response_partition_t *mp = &ps[p];
        mp->partition_index = p;
        mp->leader_id = p % mb->n_nodes;
        mp->leader_epoch = 0;
        mp->replica_nodes.count = mp->isr_nodes.count = 1;
        mp->replica_nodes.items = mp->isr_nodes.items = &ids[p % mb->n_nodes];
        mp->offline_replicas.count = 0;
    }
    t->partitions.items = ps;
    t->partitions.count = mb->partitions;
}

static kc_err_t metadata(mb_t *mb, int16_t v, kc_rbuf_t *rb, kc_wbuf_t *w, kc_arena_t *a,
                         kc_error_t *err)
{
    kc_metadata_request_t q;
    kc_err_t rc = kc_metadata_request_decode(&q, v, rb, a, err);
    if (rc != KC_OK)
        return rc;
    kc_metadata_response_t r;
    kc_metadata_response_init(&r);
    r.brokers.items = kc_arena_calloc(a, (size_t)mb->n_nodes, sizeof *r.brokers.items);
    bool all = q.topics.count < 0 || (v == 0 && q.topics.count == 0);
    int32_t nt = all ? 1 : q.topics.count;
    r.topics.items = kc_arena_calloc(a, (size_t)nt + 1, sizeof *r.topics.items);
    if (!r.brokers.items || !r.topics.items)
        return kc_fail(err, KC_ERR_NOMEM, "Metadata response");
    for (int32_t i = 0; i < mb->n_nodes; i++)
        r.brokers.items[i] = (kc_metadata_response_broker_t){.node_id = i,
                                                             .host = kc_str(mb->node_host[i]),
                                                             .port = mb->node_port[i],
                                                             .rack = KC_STR_NULL};
    r.brokers.count = mb->n_nodes;
    r.cluster_id = kc_str("kc-memory-broker");
    r.controller_id = 0;
    r.topics.count = nt;
    for (int32_t i = 0; i < nt; i++) {
        kc_metadata_response_topic_t *t = &r.topics.items[i];
        t->topic_authorized_operations = INT32_MIN;
        t->partitions.count = 0;
        if (all) {
            fill_topic(mb, t, a);
            continue;
        }
        const kc_metadata_request_topic_t *qt = &q.topics.items[i];
        bool by_id = qt->name.len < 0;
        if (by_id ? memcmp(qt->topic_id.b, mb->topic_id.b, 16) == 0 : is_our_topic(mb, qt->name)) {
            fill_topic(mb, t, a);
        } else {
            t->error_code = by_id ? KC_KAFKA_UNKNOWN_TOPIC_ID : KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            t->name = qt->name;
            t->topic_id = qt->topic_id;
        }
    }
    return kc_metadata_response_encode(&r, v, w, err);
}

static kc_err_t list_offsets(mb_t *mb, int16_t v, kc_rbuf_t *rb, kc_wbuf_t *w, kc_arena_t *a,
                             kc_error_t *err)
{
    kc_list_offsets_request_t q;
    kc_err_t rc = kc_list_offsets_request_decode(&q, v, rb, a, err);
    if (rc != KC_OK)
        return rc;
    kc_list_offsets_response_t r;
    kc_list_offsets_response_init(&r);
    r.topics.items = kc_arena_calloc(a, (size_t)q.topics.count + 1, sizeof *r.topics.items);
    if (!r.topics.items)
        return kc_fail(err, KC_ERR_NOMEM, "ListOffsets response");
    r.topics.count = q.topics.count;
    for (int32_t i = 0; i < q.topics.count; i++) {
        const kc_list_offsets_request_list_offsets_topic_t *qt = &q.topics.items[i];
        kc_list_offsets_response_list_offsets_topic_response_t *t = &r.topics.items[i];
        t->name = qt->name;
        t->partitions.items =
            kc_arena_calloc(a, (size_t)qt->partitions.count + 1, sizeof *t->partitions.items);
        if (!t->partitions.items)
            return kc_fail(err, KC_ERR_NOMEM, "ListOffsets response");
        t->partitions.count = qt->partitions.count;
        for (int32_t j = 0; j < qt->partitions.count; j++) {
            int32_t p = qt->partitions.items[j].partition_index;
            int64_t ts = qt->partitions.items[j].timestamp;
            kc_list_offsets_response_list_offsets_partition_response_t *o = &t->partitions.items[j];
            o->partition_index = p;
            o->timestamp = -1;
            o->offset = -1;
            o->leader_epoch = 0;
            if (!is_our_topic(mb, qt->name) || p < 0 || p >= mb->partitions)
                o->error_code = KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            else if (!mb_owns(mb, p))
                o->error_code = KC_KAFKA_NOT_LEADER_OR_FOLLOWER;
            else if (ts == -2) /* EARLIEST */
                o->offset = 0;
            else if (ts == -3) /* MAX_TIMESTAMP: the newest record */
                o->offset = mb->records ? mb->records - 1 : 0;
            else /* LATEST, and any real timestamp: every record has the same base time */
                o->offset = ts == -1 || ts > 1767225600000 ? mb->records : 0;
        }
    }
    return kc_list_offsets_response_encode(&r, v, w, err);
}

static kc_err_t find_coordinator(mb_t *mb, int16_t v, kc_rbuf_t *rb, kc_wbuf_t *w, kc_arena_t *a,
                                 kc_error_t *err)
{
    kc_find_coordinator_request_t q;
    kc_err_t rc = kc_find_coordinator_request_decode(&q, v, rb, a, err);
    if (rc != KC_OK)
        return rc;
    kc_find_coordinator_response_t r;
    kc_find_coordinator_response_init(&r);
    /* Node 0 coordinates every group: the committed offsets live in its RAM. */
    r.node_id = 0;
    r.host = kc_str(mb->node_host[0]);
    r.port = mb->node_port[0];
    r.error_message = KC_STR_NULL;
    if (v >= 4) {
        r.coordinators.items =
            kc_arena_calloc(a, (size_t)q.coordinator_keys.count + 1, sizeof *r.coordinators.items);
        if (!r.coordinators.items)
            return kc_fail(err, KC_ERR_NOMEM, "FindCoordinator response");
        r.coordinators.count = q.coordinator_keys.count;
        for (int32_t i = 0; i < q.coordinator_keys.count; i++)
            r.coordinators.items[i] =
                (kc_find_coordinator_response_coordinator_t){.key = q.coordinator_keys.items[i],
                                                             .node_id = 0,
                                                             .host = r.host,
                                                             .port = r.port,
                                                             .error_message = KC_STR_NULL};
    }
    return kc_find_coordinator_response_encode(&r, v, w, err);
}

static kc_err_t offset_commit(mb_t *mb, int16_t v, kc_rbuf_t *rb, kc_wbuf_t *w, kc_arena_t *a,
                              kc_error_t *err)
{
    kc_offset_commit_request_t q;
    kc_err_t rc = kc_offset_commit_request_decode(&q, v, rb, a, err);
    if (rc != KC_OK)
        return rc;
    kc_offset_commit_response_t r;
    kc_offset_commit_response_init(&r);
    r.topics.items = kc_arena_calloc(a, (size_t)q.topics.count + 1, sizeof *r.topics.items);
    if (!r.topics.items)
        return kc_fail(err, KC_ERR_NOMEM, "OffsetCommit response");
    r.topics.count = q.topics.count;
    pthread_mutex_lock(&mb->lock);
    /* Offsets are kept per group. The membership check is a sanity check (unknown member,
     * wrong generation or member epoch); the anonymous form (no member, -1) always commits. */
    mbg_group_t *g = q.group_id.len > 0 ? mbg_find(mb, q.group_id, true) : NULL;
    int16_t gerr = q.group_id.len <= 0 ? KC_KAFKA_INVALID_GROUP_ID
                   : !g                ? KC_KAFKA_COORDINATOR_NOT_AVAILABLE
                        : mbg_commit_check(g, q.member_id, q.generation_id_or_member_epoch);
    for (int32_t i = 0; i < q.topics.count; i++) {
        const kc_offset_commit_request_topic_t *qt = &q.topics.items[i];
        kc_offset_commit_response_topic_t *t = &r.topics.items[i];
        t->name = qt->name;
        t->topic_id = qt->topic_id;
        t->partitions.items =
            kc_arena_calloc(a, (size_t)qt->partitions.count + 1, sizeof *t->partitions.items);
        t->partitions.count = t->partitions.items ? qt->partitions.count : 0;
        for (int32_t j = 0; j < t->partitions.count; j++) {
            int32_t p = qt->partitions.items[j].partition_index;
            t->partitions.items[j].partition_index = p;
            if (gerr)
                t->partitions.items[j].error_code = gerr;
            else if (is_our_topic(mb, qt->name) && p >= 0 && p < mb->partitions)
                g->committed[p] = qt->partitions.items[j].committed_offset;
            else
                t->partitions.items[j].error_code = KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            mbg_trace(mb, kt_now_ms(),
                      "commit group=%.*s member=%.*s epoch=%d partition=%d offset=%lld error=%d",
                      (int)(q.group_id.len > 0 ? q.group_id.len : 0), q.group_id.ptr,
                      (int)(q.member_id.len > 0 ? q.member_id.len : 0), q.member_id.ptr,
                      (int)q.generation_id_or_member_epoch, (int)p,
                      (long long)qt->partitions.items[j].committed_offset,
                      (int)t->partitions.items[j].error_code);
        }
    }
    pthread_mutex_unlock(&mb->lock);
    return kc_offset_commit_response_encode(&r, v, w, err);
}

static kc_err_t offset_fetch(mb_t *mb, int16_t v, kc_rbuf_t *rb, kc_wbuf_t *w, kc_arena_t *a,
                             kc_error_t *err)
{
    kc_offset_fetch_request_t q;
    kc_err_t rc = kc_offset_fetch_request_decode(&q, v, rb, a, err);
    if (rc != KC_OK)
        return rc;
    kc_offset_fetch_response_t r;
    kc_offset_fetch_response_init(&r);
    int32_t np = mb->partitions;
    /* One topic (ours) with every partition, whatever was asked: enough for a consumer that
     * reads its committed positions back, and a partition it did not ask for is ignored.
     * A group never seen has no offsets (-1). */
    pthread_mutex_lock(&mb->lock);
    if (v < 8) {
        const mbg_group_t *g = mbg_find(mb, q.group_id, false);
        kc_offset_fetch_response_topic_t *t = kc_arena_calloc(a, 1, sizeof *t);
        kc_offset_fetch_response_partition_t *ps = kc_arena_calloc(a, (size_t)np, sizeof *ps);
        if (!t || !ps) {
            pthread_mutex_unlock(&mb->lock);
            return kc_fail(err, KC_ERR_NOMEM, "OffsetFetch response");
        }
        for (int32_t p = 0; p < np; p++)
            ps[p] =
                (kc_offset_fetch_response_partition_t){.partition_index = p,
                                                       .committed_offset = g ? g->committed[p] : -1,
                                                       .committed_leader_epoch = -1,
                                                       .metadata = kc_str("")};
        t->name = kc_str(mb->topic);
        t->partitions.items = ps;
        t->partitions.count = np;
        r.topics.items = t;
        r.topics.count = 1;
    } else {
        int32_t ng = q.groups.count;
        r.groups.items = kc_arena_calloc(a, (size_t)ng + 1, sizeof *r.groups.items);
        if (!r.groups.items) {
            pthread_mutex_unlock(&mb->lock);
            return kc_fail(err, KC_ERR_NOMEM, "OffsetFetch response");
        }
        r.groups.count = ng;
        for (int32_t g = 0; g < ng; g++) {
            kc_offset_fetch_response_group_t *rg = &r.groups.items[g];
            kc_offset_fetch_response_topics_t *t = kc_arena_calloc(a, 1, sizeof *t);
            kc_offset_fetch_response_partitions_t *ps = kc_arena_calloc(a, (size_t)np, sizeof *ps);
            rg->group_id = q.groups.items[g].group_id;
            const mbg_group_t *grp = mbg_find(mb, rg->group_id, false);
            if (!t || !ps) {
                rg->topics.count = 0;
                continue;
            }
            for (int32_t p = 0; p < np; p++)
                ps[p] = (kc_offset_fetch_response_partitions_t){.partition_index = p,
                                                                .committed_offset =
                                                                    grp ? grp->committed[p] : -1,
                                                                .committed_leader_epoch = -1,
                                                                .metadata = kc_str("")};
            t->name = kc_str(mb->topic);
            t->topic_id = mb->topic_id;
            t->partitions.items = ps;
            t->partitions.count = np;
            rg->topics.items = t;
            rg->topics.count = 1;
        }
    }
    pthread_mutex_unlock(&mb->lock);
    return kc_offset_fetch_response_encode(&r, v, w, err);
}

/* DescribeConfigs: a GROUP resource (type 32) has the KIP-848 group configs this broker applies
 * to every group (mb.h's MBG_848_*); any other resource type is refused. Configuration keys
 * filter as in Kafka (null: all). */
static kc_err_t describe_configs(int16_t v, kc_rbuf_t *r, kc_wbuf_t *w, kc_arena_t *a,
                                 kc_error_t *err)
{
    kc_describe_configs_request_t q;
    kc_err_t rc = kc_describe_configs_request_decode(&q, v, r, a, err);
    if (rc != KC_OK)
        return rc;
    char session[16], interval[16];
    snprintf(session, sizeof session, "%d", MBG_848_SESSION_MS);
    snprintf(interval, sizeof interval, "%d", MBG_848_HEARTBEAT_MS);
    const char *names[] = {"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"};
    const char *values[] = {session, interval};
    kc_describe_configs_response_t m;
    kc_describe_configs_response_init(&m);
    int32_t n = q.resources.count > 0 ? q.resources.count : 0;
    m.results.items = kc_arena_calloc(a, (size_t)n + 1, sizeof *m.results.items);
    if (!m.results.items)
        return kc_fail(err, KC_ERR_NOMEM, "DescribeConfigs response");
    m.results.count = n;
    for (int32_t i = 0; i < n; i++) {
        const kc_describe_configs_request_describe_configs_resource_t *res = &q.resources.items[i];
        kc_describe_configs_response_describe_configs_result_t *out = &m.results.items[i];
        out->resource_type = res->resource_type;
        out->resource_name = res->resource_name;
        out->error_message = KC_STR_NULL;
        if (res->resource_type != RESOURCE_GROUP) {
            out->error_code = KC_KAFKA_INVALID_REQUEST;
            out->error_message = kc_str("kc-memory-broker describes group configs only");
            continue;
        }
        out->configs.items = kc_arena_calloc(a, 2, sizeof *out->configs.items);
        if (!out->configs.items)
            return kc_fail(err, KC_ERR_NOMEM, "DescribeConfigs response");
        for (int k = 0; k < 2; k++) {
            bool want = res->configuration_keys.count < 0;
            for (int32_t j = 0; j < res->configuration_keys.count; j++)
                want |=
                    res->configuration_keys.items[j].len == (int32_t)strlen(names[k]) &&
                    memcmp(res->configuration_keys.items[j].ptr, names[k], strlen(names[k])) == 0;
            if (!want)
                continue;
            kc_describe_configs_response_describe_configs_resource_result_t *c =
                &out->configs.items[out->configs.count++];
            c->name = kc_str(names[k]);
            char *val = kc_arena_calloc(a, strlen(values[k]) + 1, 1);
            if (!val)
                return kc_fail(err, KC_ERR_NOMEM, "DescribeConfigs response");
            memcpy(val, values[k], strlen(values[k]));
            c->value = kc_str(val);
            c->config_source = CONFIG_SOURCE_DEFAULT;
            c->config_type = CONFIG_TYPE_INT;
            c->documentation = KC_STR_NULL;
        }
    }
    return kc_describe_configs_response_encode(&m, v, w, err);
}

kc_err_t mb_handle(mb_t *mb, int16_t key, int16_t v, kc_rbuf_t *r, kc_wbuf_t *w, kc_arena_t *a,
                   kc_error_t *err)
{
    int16_t lo, hi;
    if (!mb_api_range(key, &lo, &hi) ||
        (key != KC_API_VERSIONS_REQUEST_API_KEY && (v < lo || v > hi)))
        return kc_fail(err, KC_ERR_UNSUPPORTED, "api key %d v%d", key, v);
    switch (key) {
    case KC_API_VERSIONS_REQUEST_API_KEY:
        return api_versions(v, w, a, err);
    case KC_METADATA_REQUEST_API_KEY:
        return metadata(mb, v, r, w, a, err);
    case KC_LIST_OFFSETS_REQUEST_API_KEY:
        return list_offsets(mb, v, r, w, a, err);
    case KC_FIND_COORDINATOR_REQUEST_API_KEY:
        return find_coordinator(mb, v, r, w, a, err);
    case KC_OFFSET_COMMIT_REQUEST_API_KEY:
        return offset_commit(mb, v, r, w, a, err);
    case KC_OFFSET_FETCH_REQUEST_API_KEY:
        return offset_fetch(mb, v, r, w, a, err);
    case KC_JOIN_GROUP_REQUEST_API_KEY:
    case KC_SYNC_GROUP_REQUEST_API_KEY:
    case KC_HEARTBEAT_REQUEST_API_KEY:
    case KC_LEAVE_GROUP_REQUEST_API_KEY:
    case KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY:
        return mb_group_handle(mb, key, v, r, w, a, err);
    case KC_DESCRIBE_CONFIGS_REQUEST_API_KEY:
        return describe_configs(v, r, w, a, err);
    case KC_FETCH_REQUEST_API_KEY: {
        kc_fetch_request_t q;
        kc_err_t rc = kc_fetch_request_decode(&q, v, r, a, err);
        return rc != KC_OK ? rc : mb_fetch(mb, &q, v, w, a, err);
    }
    }
    return kc_fail(err, KC_ERR_UNSUPPORTED, "api key %d", key);
}
