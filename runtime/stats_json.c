/*
 * The consumer's stats JSON (a public contract: names are added, never renamed), built
 * every statistics.interval.ms on the network thread from the engine's counters, the runtime's
 * per-partition and per-worker counters and a group hook, then handed to on_event as a
 * KC_EVENT_STATS through the runtime's event queue, so it reaches the app on a worker,
 * serialised with every other on_event, exactly as kconsume.h documents.
 *
 * Owner: the network thread (timer, the part table, the engine). The runtime counters it reads
 * are atomics (relaxed: a snapshot needs untorn values, not ordering).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "group.h"
#include "consumer_int.h"

static void put_group(kc_consumer_t *c, kc_json_t *b)
{
    if (c->group_stats) {
        /* the group module writes the whole object, names as in the contract */
        c->group_stats(c->group_stats_opaque, b);
        return;
    }
    kc_json_raw(b, "{\"protocol\":\"none\",\"state\":\"manual\",\"member_id\":\"\",\"epoch\":-1,"
                   "\"assignment\":[");
    for (size_t i = 0; i < c->n; i++) {
        kc_json_lit(b, i ? ",[" : "[");
        kc_json_str(b, c->parts[i].topic);
        kc_json_field(b, ",", c->parts[i].partition);
        kc_json_lit(b, "]");
    }
    kc_json_raw(b, "],\"rebalances\":0}");
}

/* KIP-714 client telemetry (engine/telemetry/): where it stands and what it sent. */
static void put_telemetry(kc_consumer_t *c, kc_json_t *b)
{
    kc_engine_telemetry_stats_t ts = {.state = "off", .stopped = ""};
    if (c->e)
        kc_engine_telemetry_stats(c->e, &ts);
    kc_json_raw(b, ",\"telemetry\":{\"state\":");
    kc_json_str(b, ts.state);
    kc_json_raw(b, ",\"stopped\":");
    kc_json_str(b, ts.stopped);
    kc_json_raw(b, ",\"client_instance_id\":");
    kc_json_str(b, ts.client_instance_id);
    kc_json_raw(b,
                ",\"subscription_id\":%d,\"push_interval_ms\":%d,\"requested_metrics\":%d,"
                "\"compression\":%d,\"subscription_requests\":%" PRIu64 ",\"pushes\":%" PRIu64
                ",\"push_errors\":%" PRIu64 ",\"pushes_skipped\":%" PRIu64
                ",\"last_push_bytes\":%" PRIu64 ",\"last_push_metrics\":%u}",
                ts.subscription_id, ts.push_interval_ms, ts.requested_metrics, ts.compression,
                ts.subscription_requests, ts.pushes, ts.push_errors, ts.pushes_skipped,
                ts.last_push_bytes, ts.last_push_metrics);
}

/* One entry of "partitions": the n-th (comma before all but the first). */
static void put_part(kc_consumer_t *c, kc_json_t *b, size_t n, const char *topic, int32_t partition,
                     kc_rt_part_t *p)
{
    kc_engine_part_stats_t ps = {.position = -1, .committed = -1, .high_watermark = -1, .lag = -1};
    if (c->e)
        (void)kc_engine_part_stats(c->e, topic, partition, &ps, NULL);
    /* position: the next record to deliver (what the app saw), not what was fetched; before
     * the first delivery, the start once known (e.g. the group's committed offset) */
    int64_t pos = kc_rt_part_position(p);
    int64_t hw = ps.high_watermark;
    kc_json_lit(b, n ? ",{\"topic\":" : "{\"topic\":");
    kc_json_str(b, topic);
    kc_json_field(b, ",\"partition\":", partition);
    kc_json_field(b, ",\"position\":", pos);
    kc_json_field(b, ",\"fetch_position\":", ps.position);
    kc_json_field(b, ",\"committed\":", ps.committed);
    kc_json_field(b, ",\"high_watermark\":", hw);
    kc_json_field(b, ",\"lag\":", hw >= 0 && pos >= 0 ? hw - pos : ps.lag);
    kc_json_field(b,
                  ",\"buffered_bytes\":", atomic_load_explicit(&p->buffered, memory_order_relaxed));
    kc_json_field(b, ",\"worker\":", atomic_load_explicit(&p->last_worker, memory_order_relaxed));
    /* A share member's partitions all carry the share fields, zeros where the engine has none
     * (not added yet, or being revoked): the first one's fields decide the metrics families. */
    kc_engine_share_part_stats_t sp;
    if (c->e && kc_conf_share(c->conf)) {
        (void)kc_engine_share_part_stats(c->e, topic, partition, &sp); /* zeroes it when none */
        const struct {
            const char *name;
            uint64_t v;
        } f[] = {
            {",\"share_acquired\":", sp.acquired}, {",\"share_delivered\":", sp.delivered},
            {",\"share_refused\":", sp.refused},   {",\"share_accepted\":", sp.acked[1]},
            {",\"share_released\":", sp.acked[2]}, {",\"share_rejected\":", sp.acked[3]},
            {",\"share_gaps\":", sp.acked[0]},     {",\"share_ack_errors\":", sp.ack_errors},
            {",\"share_ack_lost\":", sp.ack_lost}, {",\"share_ack_late\":", sp.ack_late},
            {",\"share_lapsed\":", sp.lapsed},     {",\"share_renewed\":", sp.renewed},
        };
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
            kc_json_lit(b, f[i].name);
            kc_json_u64(b, f[i].v);
        }
        kc_json_field(b, ",\"share_held\":", sp.held);
    }
    kc_json_lit(b, "}");
}

/* A share group member's share sessions, one per broker. */
static void put_share_sessions(const kc_consumer_t *c, kc_json_t *b)
{
    kc_engine_share_session_stats_t s[64];
    size_t n = kc_engine_share_session_stats(c->e, s, 64);
    kc_json_raw(b, ",\"share_sessions\":[");
    for (size_t i = 0; i < n && i < 64; i++)
        kc_json_raw(b,
                    "%s{\"broker\":%d,\"epoch\":%d,\"requests\":%" PRIu64 ",\"resets\":%" PRIu64
                    ",\"opened\":%" PRIu64 ",\"acquired\":%" PRIu64 ",\"accepted\":%" PRIu64
                    ",\"released\":%" PRIu64 ",\"rejected\":%" PRIu64 ",\"gaps\":%" PRIu64
                    ",\"ack_errors\":%" PRIu64 ",\"ack_lost\":%" PRIu64 ",\"ack_late\":%" PRIu64
                    ",\"lapsed\":%" PRIu64 ",\"renewed\":%" PRIu64 ",\"bad_answers\":%" PRIu64
                    ",\"partitions\":%zu,\"held\":%lld}",
                    i ? "," : "", s[i].broker, s[i].epoch, s[i].requests, s[i].resets, s[i].opened,
                    s[i].acquired, s[i].acked[1], s[i].acked[2], s[i].acked[3], s[i].acked[0],
                    s[i].ack_errors, s[i].ack_lost, s[i].ack_late, s[i].lapsed, s[i].renewed,
                    s[i].bad_answers, s[i].partitions, (long long)s[i].held);
    kc_json_raw(b, "]");
}

char *kc_consumer_stats_json(kc_consumer_t *c)
{
    /* Sized for the usual object up front (a partition entry is ~230 bytes): one allocation per
     * snapshot instead of a realloc chain that doubled from 4 KiB (7 at 1,000 partitions, seen
     * by perf/alloc_count.so). */
    size_t nparts = c->n;
    const char *gt;
    int32_t gpn;
    kc_rt_part_t *grtp;
    for (size_t i = 0; c->grp && kc_rt_group_part_at(c->grp, i, &gt, &gpn, &grtp); i++)
        nparts++;
    kc_json_t b;
    kc_json_init(&b, 4096 + 256 * nparts);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    kc_json_raw(&b, "{\"ts_ms\":%lld,\"brokers\":[",
                (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    if (c->e) {
        kc_engine_broker_stats_t bs[64];
        size_t nb = kc_engine_broker_stats(c->e, bs, 64);
        for (size_t i = 0; i < nb && i < 64; i++) {
            kc_json_raw(&b, "%s{\"id\":%d,\"state\":", i ? "," : "", bs[i].broker_id);
            kc_json_str(&b, bs[i].state ? bs[i].state : "down");
            kc_json_raw(
                &b,
                ",\"fetch_requests\":%" PRIu64 ",\"fetch_request_bytes\":%" PRIu64
                ",\"fetch_partitions_sent\":%" PRIu64 ",\"fetch_forgotten_sent\":%" PRIu64
                ",\"fetch_responses\":%" PRIu64 ",\"fetch_errors\":%" PRIu64
                ",\"fetch_record_bytes\":%" PRIu64
                ",\"fetch_session_id\":%d,\"fetch_session_epoch\":%d,"
                "\"fetch_request_bytes_min\":%" PRIu64 ",\"fetch_request_bytes_max\":%" PRIu64
                ",\"fetch_request_bytes_last\":%" PRIu64 ",\"fetch_request_parts_last\":%" PRIu64
                ",\"connects\":%" PRIu64 ",\"reauths\":%" PRIu64 ",\"io_backend\":",
                bs[i].fetch_requests, bs[i].fetch_request_bytes, bs[i].fetch_partitions_sent,
                bs[i].fetch_forgotten_sent, bs[i].fetch_responses, bs[i].fetch_errors,
                bs[i].fetch_record_bytes, bs[i].fetch_session_id, bs[i].fetch_session_epoch,
                bs[i].fetch_request_bytes_min, bs[i].fetch_request_bytes_max,
                bs[i].last_request_bytes, bs[i].last_request_parts, bs[i].connects, bs[i].reauths);
            kc_json_str(&b, bs[i].io_backend ? bs[i].io_backend : "");
            kc_json_raw(&b, "}");
        }
    }
    kc_json_raw(&b, "],\"partitions\":[");
    size_t np = 0;
    for (size_t i = 0; i < c->n; i++)
        put_part(c, &b, np++, c->parts[i].topic, c->parts[i].partition, c->parts[i].rtp);
    /* a group's partitions live in group.c, not in the manual table */
    for (size_t i = 0; c->grp && kc_rt_group_part_at(c->grp, i, &gt, &gpn, &grtp); i++)
        if (grtp)
            put_part(c, &b, np++, gt, gpn, grtp);
    kc_json_raw(&b, "],\"group\":");
    put_group(c, &b);
    kc_engine_stats_t es = {0};
    if (c->e)
        kc_engine_stats(c->e, &es);
    kc_json_raw(&b, ",\"connections\":{\"idle_closes\":%" PRIu64 ",\"rebootstraps\":%" PRIu64 "}",
                es.idle_closes, es.rebootstraps);
    if (c->e && kc_conf_share(c->conf)) { /* a share group's member: its share sessions' totals */
        kc_engine_share_stats_t ss;
        kc_engine_share_stats(c->e, &ss);
        kc_json_raw(&b,
                    ",\"share\":{\"fetches\":%" PRIu64 ",\"acquired_delivered\":%" PRIu64
                    ",\"acquired_refused\":%" PRIu64 ",\"verdicts\":%" PRIu64
                    ",\"accepted\":%" PRIu64 ",\"released\":%" PRIu64 ",\"rejected\":%" PRIu64
                    ",\"gaps\":%" PRIu64 ",\"ack_errors\":%" PRIu64 ",\"ack_lost\":%" PRIu64
                    ",\"ack_late\":%" PRIu64 ",\"lapsed\":%" PRIu64 ",\"renewed\":%" PRIu64 "}",
                    ss.fetches, ss.delivered, ss.refused, ss.acks_queued, ss.acked[1], ss.acked[2],
                    ss.acked[3], ss.acked[0], ss.ack_errors, ss.ack_lost, ss.ack_late, ss.lapsed,
                    ss.renewed);
        put_share_sessions(c, &b);
    }
    put_telemetry(c, &b);
    kc_json_raw(&b, ",\"buffered_bytes\":%lld,\"frame_bytes\":%lld,\"workers\":",
                (long long)kc_rt_buffered_bytes(c->rt), (long long)kc_rt_frame_bytes(c->rt));
    kc_rt_stats_workers(c->rt, &b);
    kc_json_raw(&b, "}");
    return kc_json_take(&b);
}

static void tick(kc_loop_t *loop, kc_loop_timer_t *t)
{
    kc_consumer_t *c = t->opaque;
    if (!atomic_load_explicit(&c->rt_live, memory_order_acquire) || !c->e)
        return;
    char *json = kc_consumer_stats_json(c);
    if (json)
        (void)kc_rt_post_stats(c->rt, json); /* a full queue drops this one snapshot */
    kc_loop_timer_start(loop, t, kc_conf_int(c->conf, KC_CONF_STATISTICS_INTERVAL_MS));
}

void kc_consumer_stats_start(kc_consumer_t *c, kc_loop_t *loop)
{
    int64_t ms = kc_conf_int(c->conf, KC_CONF_STATISTICS_INTERVAL_MS);
    if (ms <= 0 || !c->cbs.on_event)
        return;
    c->stats_timer.cb = tick;
    c->stats_timer.opaque = c;
    kc_loop_timer_start(loop, &c->stats_timer, ms);
}

void kc_consumer_stats_stop(kc_consumer_t *c, kc_loop_t *loop)
{
    if (kc_loop_timer_armed(&c->stats_timer))
        kc_loop_timer_stop(loop, &c->stats_timer);
}
