/*
 * The metrics a KIP-714 push carries (enable.metrics.push): the stats JSON (stats_json.c, the one
 * source of every number) read back and renamed to the names the Java consumer pushes, so a
 * subscription an operator wrote for Java clients (a prefix such as
 * org.apache.kafka.consumer.fetch.manager.) selects the same quantities from kconsume. Only
 * quantities kconsume counts with Java's meaning are named; the rest of the stats stay in
 * kc_stats / kc_metrics.
 *
 * Java's rule for a telemetry name: "org.apache.kafka." + the metric group without "-metrics" +
 * "." + the metric name, '-' becoming '.' (consumer-fetch-manager-metrics / records-lag-max:
 * org.apache.kafka.consumer.fetch.manager.records.lag.max). Totals are counters, the rest
 * gauges. The Resource carries what KIP-714 has the client say about itself (group_id,
 * group_member_id, ...); the broker adds what it knows (client_id, address, software).
 *
 * Owner: the network thread (the engine calls collect there, at each push).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "consumer_int.h"

#define P "org.apache.kafka.consumer."

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0;
}

static double sum(json_t *arr, const char *k)
{
    double s = 0;
    size_t i;
    json_t *el;
    json_array_foreach(arr, i, el) s += num(el, k);
    return s;
}

static void resource(kc_consumer_t *c, json_t *group, kc_tlm_points_t *r)
{
    const char *gid = kc_conf_str(c->conf, KC_CONF_GROUP_ID);
    const char *rack = kc_conf_str(c->conf, KC_CONF_CLIENT_RACK);
    const char *inst = kc_conf_str(c->conf, KC_CONF_GROUP_INSTANCE_ID);
    const char *member = json_string_value(json_object_get(group, "member_id"));
    if (gid && *gid)
        kc_tlm_add(r, "", KC_TLM_GAUGE, 0, 1, "group_id", gid);
    if (inst && *inst)
        kc_tlm_add(r, "", KC_TLM_GAUGE, 0, 1, "group_instance_id", inst);
    if (member && *member)
        kc_tlm_add(r, "", KC_TLM_GAUGE, 0, 1, "group_member_id", member);
    if (rack && *rack)
        kc_tlm_add(r, "", KC_TLM_GAUGE, 0, 1, "client_rack", rack);
}

static void collect(void *opaque, kc_engine_tlm_snapshot_t *out)
{
    kc_consumer_t *c = opaque;
    char *text = kc_consumer_stats_json(c);
    json_t *s = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (!s) {
        out->points.failed = true;
        return;
    }
    kc_tlm_points_t *p = &out->points;
    json_t *brokers = json_object_get(s, "brokers"), *workers = json_object_get(s, "workers");
    json_t *parts = json_object_get(s, "partitions"), *group = json_object_get(s, "group");
    resource(c, group, &out->resource);

    /* consumer-metrics */
    size_t i;
    json_t *el;
    double up = 0;
    json_array_foreach(brokers, i, el) up +=
        json_is_string(json_object_get(el, "state")) &&
        strcmp(json_string_value(json_object_get(el, "state")), "up") == 0;
    kc_tlm_add(p, P "connection.count", KC_TLM_GAUGE, up, 0);
    kc_tlm_add(p, P "connection.creation.total", KC_TLM_COUNTER, sum(brokers, "connects"), 0);

    /* consumer-fetch-manager-metrics */
    kc_tlm_add(p, P "fetch.manager.fetch.total", KC_TLM_COUNTER, sum(brokers, "fetch_requests"), 0);
    kc_tlm_add(p, P "fetch.manager.bytes.consumed.total", KC_TLM_COUNTER,
               sum(brokers, "fetch_record_bytes"), 0);
    kc_tlm_add(p, P "fetch.manager.records.consumed.total", KC_TLM_COUNTER, sum(workers, "records"),
               0);
    double lag_max = 0;
    json_array_foreach(parts, i, el) if (num(el, "lag") > lag_max) lag_max = num(el, "lag");
    kc_tlm_add(p, P "fetch.manager.records.lag.max", KC_TLM_GAUGE, lag_max, 0);
    json_array_foreach(parts, i, el)
    {
        const char *topic = json_string_value(json_object_get(el, "topic"));
        if (!topic || num(el, "lag") < 0)
            continue;
        char part[16];
        snprintf(part, sizeof part, "%d", (int)num(el, "partition"));
        kc_tlm_add(p, P "fetch.manager.records.lag", KC_TLM_GAUGE, num(el, "lag"), 2, "topic",
                   topic, "partition", part);
    }

    /* consumer-coordinator-metrics: a group member's */
    const char *proto = json_string_value(json_object_get(group, "protocol"));
    if (proto && strcmp(proto, "none") != 0) {
        kc_tlm_add(p, P "coordinator.assigned.partitions", KC_TLM_GAUGE,
                   (double)json_array_size(json_object_get(group, "assignment")), 0);
        kc_tlm_add(p, P "coordinator.rebalance.total", KC_TLM_COUNTER, num(group, "rebalances"), 0);
        kc_tlm_add(p, P "coordinator.commit.total", KC_TLM_COUNTER, num(group, "commits"), 0);
        kc_tlm_add(p, P "coordinator.heartbeat.total", KC_TLM_COUNTER, num(group, "heartbeats"), 0);
    }
    json_decref(s);
}

void kc_consumer_telemetry_start(kc_consumer_t *c)
{
    if (!c->e || !kc_conf_bool(c->conf, KC_CONF_ENABLE_METRICS_PUSH))
        return;
    kc_engine_telemetry_t hooks = {.collect = collect, .opaque = c, .scope_version = kc_version()};
    kc_error_t err;
    if (kc_engine_telemetry_start(c->e, &hooks, &err) != KC_OK)
        kc_log(KC_LOG_WARN, "telemetry", "client telemetry not started: %s", err.msg);
}
