/* KIP-714 client telemetry, the pure parts: when to ask for a subscription and when to push
 * (engine/telemetry/state.c), the OTLP MetricsData a push carries (engine/telemetry/otlp.c, read
 * back here field by field with a protobuf reader of the test's own), counters' deltas, and the
 * one-shot compression of the payload (io/batch/compress/encode.c, read back by kc_decompress). */
#include "kc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/compress/compress.h"
#include "proto/kafka_errors.h"
#include "telemetry/otlp.h"
#include "telemetry/state.h"

/* ---- the state machine -------------------------------------------------------------------- */

static kc_str_t prefixes[2];
static const int8_t zstd_first[] = {4, 3, 1, 2};

static kc_tlm_subscription_t sub_of(int n_metrics, int32_t interval)
{
    prefixes[0] = kc_str("org.apache.kafka.consumer.fetch.");
    prefixes[1] = kc_str("org.apache.kafka.consumer.coordinator.");
    kc_tlm_subscription_t s = {
        .subscription_id = 77,
        .push_interval_ms = interval,
        .telemetry_max_bytes = 1 << 20,
        .delta_temporality = true,
        .accepted_compression = zstd_first,
        .n_accepted_compression = 4,
        .metrics = prefixes,
        .n_metrics = n_metrics,
    };
    memset(s.client_instance_id.b, 0xab, 16);
    return s;
}

static void subscribed(kc_tlm_t *t, int64_t now, double jitter)
{
    int64_t due;
    kc_tlm_init(t, 0, 100);
    assert_int_equal(kc_tlm_next(t, 0, &due), KC_TLM_ASK);
    kc_tlm_sent(t, KC_TLM_ASK);
    assert_int_equal(kc_tlm_next(t, 5, &due), KC_TLM_NOTHING); /* one request at a time */
    assert_int_equal(due, -1);
    kc_tlm_subscription_t s = sub_of(2, 1000);
    assert_true(kc_tlm_on_subscription(t, now, 0, &s, jitter));
}

static void first_push_jittered_then_interval_after_answer(void **state)
{
    (void)state;
    kc_tlm_t t;
    int64_t due;
    subscribed(&t, 10, 0.5);
    assert_int_equal(t.instance_id.b[0], 0xab);
    assert_int_equal(t.subscription_id, 77);
    assert_int_equal(t.compression, KC_TLM_COMPRESSION_ZSTD);
    assert_int_equal(kc_tlm_next(&t, 10, &due), KC_TLM_NOTHING);
    assert_int_equal(due, 510); /* 1000 ms x 0.5 */
    assert_int_equal(kc_tlm_next(&t, 510, &due), KC_TLM_PUSH);
    kc_tlm_sent(&t, KC_TLM_PUSH);
    kc_tlm_on_push(&t, 600, 0);
    assert_int_equal(kc_tlm_next(&t, 600, &due), KC_TLM_NOTHING);
    assert_int_equal(due, 1600); /* an interval after the answer, not after the send */
    assert_int_equal(kc_tlm_next(&t, 1600, &due), KC_TLM_PUSH);
    /* a later answer keeps the first instance id: it is the client's for its whole life */
    kc_tlm_sent(&t, KC_TLM_PUSH);
    kc_tlm_on_push(&t, 1700, KC_KAFKA_UNKNOWN_SUBSCRIPTION_ID);
    assert_int_equal(kc_tlm_next(&t, 1700, &due), KC_TLM_ASK); /* at once */
    kc_tlm_sent(&t, KC_TLM_ASK);
    kc_tlm_subscription_t s = sub_of(1, 2000);
    memset(s.client_instance_id.b, 0x11, 16);
    assert_true(kc_tlm_on_subscription(&t, 1800, 0, &s, 1.0));
    assert_int_equal(t.instance_id.b[0], 0xab);
    assert_int_equal(t.push_interval_ms, 2000);
    assert_int_equal(t.asks, 2);
    assert_int_equal(t.pushes, 2);
    assert_int_equal(t.push_errors, 1);
    kc_tlm_destroy(&t);
}

static void nothing_requested_asks_again_an_interval_later(void **state)
{
    (void)state;
    kc_tlm_t t;
    int64_t due;
    kc_tlm_init(&t, 0, 100);
    kc_tlm_next(&t, 0, &due);
    kc_tlm_sent(&t, KC_TLM_ASK);
    kc_tlm_subscription_t s = sub_of(0, 1000);
    /* no jitter here: a request inside the interval would be throttled */
    assert_true(kc_tlm_on_subscription(&t, 0, 0, &s, 0.5));
    assert_int_equal(kc_tlm_next(&t, 999, &due), KC_TLM_NOTHING);
    assert_int_equal(due, 1000);
    assert_int_equal(kc_tlm_next(&t, 1000, &due), KC_TLM_ASK); /* never a push */
    assert_false(kc_tlm_wants(&t, "org.apache.kafka.consumer.fetch.manager.fetch.total"));
    /* and nothing is owed at close */
    kc_tlm_sent(&t, KC_TLM_ASK);
    assert_true(kc_tlm_on_subscription(&t, 1000, 0, &s, 1.0));
    assert_false(kc_tlm_close(&t));
    assert_true(kc_tlm_idle(&t));
    kc_tlm_destroy(&t);
}

static void errors_by_kind(void **state)
{
    (void)state;
    kc_tlm_t t;
    int64_t due;
    /* throttled or too large: skip to the next interval */
    subscribed(&t, 0, 1.0);
    kc_tlm_next(&t, 1000, &due);
    kc_tlm_sent(&t, KC_TLM_PUSH);
    kc_tlm_on_push(&t, 1100, KC_KAFKA_THROTTLING_QUOTA_EXCEEDED);
    assert_int_equal(kc_tlm_next(&t, 1100, &due), KC_TLM_NOTHING);
    assert_int_equal(due, 2100);
    kc_tlm_sent(&t, kc_tlm_next(&t, 2100, &due));
    kc_tlm_on_push(&t, 2200, KC_KAFKA_TELEMETRY_TOO_LARGE);
    assert_int_equal(kc_tlm_next(&t, 2200, &due), KC_TLM_NOTHING);
    assert_int_equal(due, 3200);
    /* no usable answer: the subscription again, an interval later (sooner is throttled) */
    kc_tlm_sent(&t, kc_tlm_next(&t, 3200, &due));
    kc_tlm_on_push(&t, 3300, -1);
    assert_int_equal(kc_tlm_next(&t, 3300, &due), KC_TLM_NOTHING);
    assert_int_equal(due, 4300);
    assert_int_equal(kc_tlm_next(&t, 4300, &due), KC_TLM_ASK);
    /* the broker cannot read what we send: stop for good */
    kc_tlm_sent(&t, KC_TLM_ASK);
    kc_tlm_subscription_t s = sub_of(2, 1000);
    kc_tlm_on_subscription(&t, 4400, 0, &s, 1.0);
    kc_tlm_sent(&t, kc_tlm_next(&t, 5400, &due));
    kc_tlm_on_push(&t, 5500, KC_KAFKA_INVALID_RECORD);
    assert_int_equal(t.phase, KC_TLM_STOPPED);
    assert_non_null(t.stopped);
    assert_int_equal(kc_tlm_next(&t, 99999, &due), KC_TLM_NOTHING);
    assert_int_equal(due, -1);
    assert_false(kc_tlm_close(&t));
    kc_tlm_destroy(&t);

    /* the first ask failing: the backoff, no interval being known yet */
    kc_tlm_init(&t, 0, 250);
    kc_tlm_sent(&t, kc_tlm_next(&t, 0, &due));
    assert_true(kc_tlm_on_subscription(&t, 10, -1, NULL, 1.0));
    assert_int_equal(kc_tlm_next(&t, 10, &due), KC_TLM_NOTHING);
    assert_int_equal(due, 260);
    kc_tlm_sent(&t, kc_tlm_next(&t, 260, &due));
    kc_tlm_on_subscription(&t, 270, KC_KAFKA_INVALID_REQUEST, NULL, 1.0);
    assert_int_equal(t.phase, KC_TLM_STOPPED);
    kc_tlm_destroy(&t);
}

static void close_sends_one_terminating_push(void **state)
{
    (void)state;
    kc_tlm_t t;
    int64_t due;
    /* subscribed and waiting: the terminating push goes at once, inside the interval */
    subscribed(&t, 0, 1.0);
    assert_true(kc_tlm_close(&t));
    assert_false(kc_tlm_idle(&t));
    assert_int_equal(kc_tlm_next(&t, 1, &due), KC_TLM_PUSH);
    assert_true(t.terminating);
    kc_tlm_sent(&t, KC_TLM_PUSH);
    kc_tlm_on_push(&t, 2, 0);
    assert_true(kc_tlm_idle(&t));
    assert_int_equal(t.phase, KC_TLM_STOPPED);
    assert_int_equal(kc_tlm_next(&t, 5000, &due), KC_TLM_NOTHING);
    kc_tlm_destroy(&t);

    /* a push in flight at close: the terminating one follows its answer */
    subscribed(&t, 0, 1.0);
    kc_tlm_sent(&t, kc_tlm_next(&t, 1000, &due));
    assert_true(kc_tlm_close(&t));
    assert_int_equal(kc_tlm_next(&t, 1001, &due), KC_TLM_NOTHING);
    kc_tlm_on_push(&t, 1002, 0);
    assert_int_equal(kc_tlm_next(&t, 1002, &due), KC_TLM_PUSH);
    assert_true(t.terminating);
    kc_tlm_sent(&t, KC_TLM_PUSH);
    kc_tlm_on_push(&t, 1003, -1); /* answered or not, it was the last */
    assert_true(kc_tlm_idle(&t));
    kc_tlm_destroy(&t);

    /* the last push cannot be made (no connection at close): stopping leaves nothing owed */
    subscribed(&t, 0, 1.0);
    assert_true(kc_tlm_close(&t));
    kc_tlm_stop(&t, "closed");
    assert_true(kc_tlm_idle(&t));
    assert_int_equal(kc_tlm_next(&t, 1, &due), KC_TLM_NOTHING);
    kc_tlm_destroy(&t);

    /* never subscribed: nothing to say at close */
    kc_tlm_init(&t, 0, 100);
    assert_false(kc_tlm_close(&t));
    assert_true(kc_tlm_idle(&t));
    assert_int_equal(kc_tlm_next(&t, 0, &due), KC_TLM_NOTHING);
    kc_tlm_destroy(&t);

    /* asking at close: an answer with metrics owes the terminating push, one without does not */
    kc_tlm_init(&t, 0, 100);
    kc_tlm_sent(&t, kc_tlm_next(&t, 0, &due));
    assert_true(kc_tlm_close(&t));
    kc_tlm_subscription_t s = sub_of(2, 1000);
    kc_tlm_on_subscription(&t, 5, 0, &s, 1.0);
    assert_int_equal(kc_tlm_next(&t, 5, &due), KC_TLM_PUSH);
    kc_tlm_destroy(&t);
}

static void prefixes_and_compression(void **state)
{
    (void)state;
    kc_tlm_t t;
    subscribed(&t, 0, 1.0);
    assert_true(kc_tlm_wants(&t, "org.apache.kafka.consumer.fetch.manager.records.lag"));
    assert_true(kc_tlm_wants(&t, "org.apache.kafka.consumer.coordinator.commit.total"));
    assert_false(kc_tlm_wants(&t, "org.apache.kafka.consumer.connection.count"));
    /* "*" is every metric; a broker that accepts nothing we write gets none */
    kc_tlm_sent(&t, KC_TLM_PUSH);
    kc_tlm_on_push(&t, 10, KC_KAFKA_UNSUPPORTED_COMPRESSION_TYPE);
    int64_t due;
    kc_tlm_sent(&t, kc_tlm_next(&t, 10, &due));
    kc_str_t all = kc_str("*");
    static const int8_t lz4_snappy[] = {3, 2};
    kc_tlm_subscription_t s = sub_of(1, 1000);
    s.metrics = &all;
    s.accepted_compression = lz4_snappy;
    s.n_accepted_compression = 2;
    kc_tlm_on_subscription(&t, 20, 0, &s, 1.0);
    assert_true(kc_tlm_wants(&t, "org.apache.kafka.consumer.connection.count"));
    assert_int_equal(t.compression, KC_TLM_COMPRESSION_NONE);
    kc_tlm_destroy(&t);
}

/* ---- OTLP, read back ---------------------------------------------------------------------- */

typedef struct pbr {
    const uint8_t *p, *end;
} pbr_t;

static uint64_t rd_varint(pbr_t *r)
{
    uint64_t v = 0;
    for (int shift = 0; r->p < r->end; shift += 7) {
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    fail_msg("truncated varint");
    return 0;
}

/* The next field: its number and wire type; a LEN field's body in *sub, a fixed64 in *fixed, a
 * varint in *fixed. */
static bool next_field(pbr_t *r, unsigned *field, pbr_t *sub, uint64_t *fixed)
{
    if (r->p >= r->end)
        return false;
    uint64_t key = rd_varint(r);
    *field = (unsigned)(key >> 3);
    switch (key & 7) {
    case 0:
        *fixed = rd_varint(r);
        break;
    case 1:
        assert_true(r->end - r->p >= 8);
        *fixed = 0;
        for (int i = 0; i < 8; i++)
            *fixed |= (uint64_t)r->p[i] << (8 * i);
        r->p += 8;
        break;
    case 2: {
        uint64_t n = rd_varint(r);
        assert_true((uint64_t)(r->end - r->p) >= n);
        sub->p = r->p;
        sub->end = r->p + n;
        r->p += n;
        break;
    }
    default:
        fail_msg("unexpected wire type %u", (unsigned)(key & 7));
    }
    return true;
}

static bool str_is(const pbr_t *s, const char *want)
{
    return (size_t)(s->end - s->p) == strlen(want) && memcmp(s->p, want, strlen(want)) == 0;
}

/* KeyValue with a string AnyValue, as "key=value" */
static void kv_text(pbr_t kv, char *out, size_t cap)
{
    unsigned f;
    pbr_t sub, key = {0}, val = {0};
    uint64_t x;
    while (next_field(&kv, &f, &sub, &x)) {
        if (f == 1)
            key = sub;
        else if (f == 2) {
            pbr_t any = sub;
            assert_true(next_field(&any, &f, &sub, &x));
            assert_int_equal(f, 1); /* string_value */
            val = sub;
        }
    }
    snprintf(out, cap, "%.*s=%.*s", (int)(key.end - key.p), (const char *)key.p,
             (int)(val.end - val.p), (const char *)val.p);
}

static void otlp_reads_back(void **state)
{
    (void)state;
    kc_tlm_points_t p = {0};
    kc_tlm_add(&p, "org.apache.kafka.consumer.connection.count", KC_TLM_GAUGE, 3, 0);
    kc_tlm_add(&p, "org.apache.kafka.consumer.fetch.manager.records.lag", KC_TLM_GAUGE, 5, 2,
               "topic", "t1", "partition", "0");
    kc_tlm_add(&p, "org.apache.kafka.consumer.fetch.manager.records.lag", KC_TLM_GAUGE, 7, 2,
               "topic", "t1", "partition", "1");
    kc_tlm_add(&p, "org.apache.kafka.consumer.fetch.manager.fetch.total", KC_TLM_COUNTER, 300, 0);
    assert_false(p.failed);
    /* a long name makes one Metric longer than 127 bytes: a two-byte length */
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    kc_tlm_add(&p, longname, KC_TLM_GAUGE, 1.5, 0);
    kc_tlm_attr_t res[] = {{"client_id", "c1"}, {"group_id", "g1"}};
    kc_otlp_in_t in = {.resource = res,
                       .n_resource = 2,
                       .scope_name = "kconsume",
                       .scope_version = "0.1.0",
                       .points = p.v,
                       .n_points = p.n,
                       .delta = true,
                       .start_ns = 1000,
                       .time_ns = 2000};
    kc_wbuf_t w = {0};
    kc_error_t err;
    assert_int_equal(kc_otlp_encode(&in, &w, &err), KC_OK);

    pbr_t r = {w.data, w.data + w.len}, rm, sub, scope_metrics = {0};
    unsigned f;
    uint64_t x;
    assert_true(next_field(&r, &f, &rm, &x));
    assert_int_equal(f, 1); /* resource_metrics */
    assert_false(next_field(&r, &f, &sub, &x));
    char text[256];
    int n_res = 0;
    while (next_field(&rm, &f, &sub, &x)) {
        if (f == 1) { /* Resource */
            pbr_t kv, res_body = sub;
            while (next_field(&res_body, &f, &kv, &x)) {
                assert_int_equal(f, 1);
                kv_text(kv, text, sizeof text);
                assert_string_equal(text, n_res ? "group_id=g1" : "client_id=c1");
                n_res++;
            }
        } else {
            assert_int_equal(f, 2);
            scope_metrics = sub;
        }
    }
    assert_int_equal(n_res, 2);
    int n_metrics = 0;
    while (next_field(&scope_metrics, &f, &sub, &x)) {
        if (f == 1) { /* InstrumentationScope */
            pbr_t s = sub, v;
            assert_true(next_field(&s, &f, &v, &x));
            assert_true(str_is(&v, "kconsume"));
            continue;
        }
        assert_int_equal(f, 2); /* Metric */
        pbr_t m = sub, name = {0}, data = {0};
        unsigned kind = 0;
        while (next_field(&m, &f, &sub, &x)) {
            if (f == 1)
                name = sub;
            else if (f == 5 || f == 7) {
                kind = f;
                data = sub;
            }
        }
        int points = 0;
        uint64_t temporality = 0, monotonic = 0;
        double dv = 0;
        int64_t iv = 0;
        char attrs[128] = "";
        while (next_field(&data, &f, &sub, &x)) {
            if (f == 2)
                temporality = x;
            else if (f == 3)
                monotonic = x;
            else {
                assert_int_equal(f, 1); /* NumberDataPoint */
                points++;
                pbr_t dp = sub, kv;
                uint64_t start = 0, time = 0;
                while (next_field(&dp, &f, &kv, &x)) {
                    if (f == 2)
                        start = x;
                    else if (f == 3)
                        time = x;
                    else if (f == 4)
                        memcpy(&dv, &x, sizeof dv);
                    else if (f == 6)
                        iv = (int64_t)x;
                    else if (f == 7) {
                        kv_text(kv, text, sizeof text);
                        strcat(attrs, text);
                        strcat(attrs, ";");
                    }
                }
                assert_int_equal(time, 2000);
                assert_int_equal(start, kind == 7 ? 1000 : 0);
            }
        }
        n_metrics++;
        if (str_is(&name, "org.apache.kafka.consumer.connection.count")) {
            assert_int_equal(kind, 5);
            assert_int_equal(points, 1);
            assert_true(dv == 3.0);
        } else if (str_is(&name, "org.apache.kafka.consumer.fetch.manager.records.lag")) {
            assert_int_equal(kind, 5);
            assert_int_equal(points, 2); /* one Metric, two points */
            assert_true(dv == 7.0);
            assert_string_equal(attrs, "topic=t1;partition=0;topic=t1;partition=1;");
        } else if (str_is(&name, "org.apache.kafka.consumer.fetch.manager.fetch.total")) {
            assert_int_equal(kind, 7);
            assert_int_equal(iv, 300);
            assert_int_equal(temporality, 1); /* DELTA */
            assert_int_equal(monotonic, 1);
        } else {
            assert_true(str_is(&name, longname));
            assert_true(dv == 1.5);
        }
    }
    assert_int_equal(n_metrics, 4);
    kc_wbuf_free(&w);
    kc_tlm_points_free(&p);
}

/* Cumulative temporality (a broker may ask for it): AggregationTemporality 2, and the counters'
 * start is what the caller gives (the consumer's start). */
static void otlp_cumulative(void **state)
{
    (void)state;
    kc_tlm_points_t p = {0};
    kc_tlm_add(&p, "c.total", KC_TLM_COUNTER, 42, 0);
    kc_otlp_in_t in = {.scope_name = "kconsume",
                       .points = p.v,
                       .n_points = p.n,
                       .delta = false,
                       .start_ns = 111,
                       .time_ns = 222};
    kc_wbuf_t w = {0};
    kc_error_t err;
    assert_int_equal(kc_otlp_encode(&in, &w, &err), KC_OK);
    pbr_t r = {w.data, w.data + w.len}, sub;
    unsigned f;
    uint64_t x, temporality = 0, start = 0, iv = 0;
    /* MetricsData.1 > ResourceMetrics.2 > ScopeMetrics.2 > Metric.7 > Sum */
    assert_true(next_field(&r, &f, &sub, &x));
    pbr_t rm = sub, sm = {0}, m = {0}, sum = {0};
    while (next_field(&rm, &f, &sub, &x))
        if (f == 2)
            sm = sub;
    while (next_field(&sm, &f, &sub, &x))
        if (f == 2)
            m = sub;
    while (next_field(&m, &f, &sub, &x))
        if (f == 7)
            sum = sub;
    while (next_field(&sum, &f, &sub, &x)) {
        if (f == 2)
            temporality = x;
        if (f == 1) {
            pbr_t dp = sub, kv;
            while (next_field(&dp, &f, &kv, &x)) {
                if (f == 2)
                    start = x;
                if (f == 6)
                    iv = x;
            }
        }
    }
    assert_int_equal(temporality, 2); /* CUMULATIVE */
    assert_int_equal(start, 111);
    assert_int_equal(iv, 42);
    kc_wbuf_free(&w);
    kc_tlm_points_free(&p);
}

static void counters_become_deltas(void **state)
{
    (void)state;
    kc_tlm_points_t prev = {0}, now = {0};
    kc_tlm_add(&prev, "a.total", KC_TLM_COUNTER, 10, 0);
    kc_tlm_add(&prev, "lag", KC_TLM_GAUGE, 4, 2, "topic", "t", "partition", "0");
    kc_tlm_add(&prev, "b.total", KC_TLM_COUNTER, 5, 1, "node_id", "1");
    kc_tlm_add(&now, "b.total", KC_TLM_COUNTER, 9, 1, "node_id", "1"); /* moved */
    kc_tlm_add(&now, "b.total", KC_TLM_COUNTER, 2, 1, "node_id", "2"); /* new series */
    kc_tlm_add(&now, "a.total", KC_TLM_COUNTER, 25, 0);
    kc_tlm_add(&now, "lag", KC_TLM_GAUGE, 6, 2, "topic", "t", "partition", "0");
    kc_tlm_delta(&now, &prev);
    assert_true(now.v[0].value == 4);
    assert_true(now.v[1].value == 2);
    assert_true(now.v[2].value == 15);
    assert_true(now.v[3].value == 6); /* a gauge is what it is */
    kc_tlm_points_free(&prev);
    kc_tlm_points_free(&now);
}

static bool keep_a(void *ctx, const char *name)
{
    (void)ctx;
    return name[0] == 'a';
}

static void keep_filters_in_order(void **state)
{
    (void)state;
    kc_tlm_points_t p = {0};
    kc_tlm_add(&p, "a1", KC_TLM_GAUGE, 1, 0);
    kc_tlm_add(&p, "b1", KC_TLM_GAUGE, 2, 1, "k", "v");
    kc_tlm_add(&p, "a2", KC_TLM_GAUGE, 3, 0);
    kc_tlm_keep(&p, keep_a, NULL);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.v[0].name, "a1");
    assert_string_equal(p.v[1].name, "a2");
    kc_tlm_points_free(&p);
}

static void compress_round_trip(void **state)
{
    (void)state;
    uint8_t in[5000];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)(i % 97);
    kc_decode_ctx_t ctx;
    kc_decode_ctx_init(&ctx, 0);
    static const int codecs[] = {KC_CODEC_ZSTD, KC_CODEC_GZIP};
    for (size_t c = 0; c < 2; c++) {
        uint8_t *z = NULL;
        size_t zn = 0;
        kc_error_t err;
        assert_int_equal(kc_compress(codecs[c], in, sizeof in, &z, &zn, &err), KC_OK);
        assert_true(zn < sizeof in);
        const uint8_t *out;
        size_t n;
        assert_int_equal(kc_decompress(&ctx, codecs[c], z, zn, &out, &n, &err), KC_OK);
        assert_int_equal(n, sizeof in);
        assert_memory_equal(out, in, n);
        free(z);
    }
    uint8_t *z = NULL;
    size_t zn;
    kc_error_t err;
    assert_int_equal(kc_compress(KC_CODEC_SNAPPY, in, 10, &z, &zn, &err), KC_ERR_UNSUPPORTED);
    kc_decode_ctx_destroy(&ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_push_jittered_then_interval_after_answer),
        cmocka_unit_test(nothing_requested_asks_again_an_interval_later),
        cmocka_unit_test(errors_by_kind),
        cmocka_unit_test(close_sends_one_terminating_push),
        cmocka_unit_test(prefixes_and_compression),
        cmocka_unit_test(otlp_reads_back),
        cmocka_unit_test(otlp_cumulative),
        cmocka_unit_test(counters_become_deltas),
        cmocka_unit_test(keep_filters_in_order),
        cmocka_unit_test(compress_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
