/*
 * KIP-714 client telemetry on the wire: the driver around telemetry/state.h. One timer; each
 * firing does what the state machine says: a GetTelemetrySubscriptions, or a PushTelemetry of
 * the metrics the collect hook gives, filtered by the subscription's prefixes, OTLP-encoded
 * (telemetry/otlp.h) and compressed with the broker's first choice this client writes.
 *
 * Requests go on a connection the engine has up already (kc_eng_ready_conn: a named broker's,
 * else the bootstrap one), so telemetry opens no connection of its own and never counts in the
 * decision to rebootstrap. A counter's delta is taken against the values of the last push the
 * broker accepted, so a refused or unanswered push's change is carried by the next one (one the
 * broker took but whose answer was lost is counted again: the client cannot tell the two apart).
 *
 * Owner: the network thread (the engine's).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "backoff.h"
#include "base/log.h"
#include "batch/compress/compress.h"
#include "engine_int.h"
#include "proto/get_telemetry_subscriptions.gen.h"
#include "proto/push_telemetry.gen.h"
#include "telemetry/state.h"

typedef struct kc_eng_tlm {
    kc_engine_t *e;
    kc_tlm_t m;
    kc_engine_telemetry_t hooks;
    char *scope_version;
    kc_loop_timer_t timer;
    int64_t start_ns; /* wall clock, for counters' start */
    /* Counters as of the last push the broker accepted (cumulative values), and its time. */
    kc_tlm_points_t accepted;
    int64_t accepted_ns;
    /* The push in flight: its metrics bytes, and its cumulative counters to keep if accepted. */
    uint8_t *payload;
    size_t payload_len;
    int8_t payload_compression;
    kc_tlm_points_t sent;
    int64_t sent_ns;
    uint64_t skipped;
    uint64_t last_bytes;
    uint32_t last_points;
    int8_t last_compression; /* what the last push carried (its codec could fail: none) */
    uint8_t told_too_large;
} kc_eng_tlm_t;

static void tlm_drive(kc_eng_tlm_t *t);

static void on_timer(kc_loop_t *loop, kc_loop_timer_t *timer)
{
    (void)loop;
    tlm_drive(timer->opaque);
}

/* The first push's spread, in [0.5, 1.5). */
static double jitter(kc_eng_tlm_t *t)
{
    return 0.5 + kc_backoff_rand(&t->e->rng);
}

static void uuid_str(const kc_uuid_t *u, char out[37])
{
    static const char hex[] = "0123456789abcdef";
    size_t j = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[j++] = '-';
        out[j++] = hex[u->b[i] >> 4];
        out[j++] = hex[u->b[i] & 15];
    }
    out[j] = '\0';
}

/* ---- GetTelemetrySubscriptions ------------------------------------------------------------ */

static kc_err_t get_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    kc_eng_tlm_t *t = opaque;
    kc_get_telemetry_subscriptions_request_t m;
    kc_get_telemetry_subscriptions_request_init(&m);
    m.client_instance_id = t->m.instance_id;
    kc_error_t err;
    return kc_get_telemetry_subscriptions_request_encode(&m, version, out, &err);
}

/* The broker lacks the API, or answered it with a version refusal: telemetry stops, said once
 * at DEBUG (most clusters run without a telemetry plugin, and that is not a fault; the stats'
 * telemetry object says it too). `why`: the connection's refusal, when there was one. */
static void unsupported(kc_eng_tlm_t *t, kc_conn_t *conn, const kc_error_t *why)
{
    kc_tlm_stop(&t->m, "the broker does not take client telemetry");
    kc_log(KC_LOG_DEBUG, "telemetry",
           "client telemetry off: broker %s does not take it (KIP-714 needs Kafka 3.7+ with a "
           "telemetry plugin)%s%s",
           kc_conn_peer(conn), why && why->msg[0] ? ": " : "", why ? why->msg : "");
}

static void get_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off,
                     int16_t version, void *opaque)
{
    kc_eng_tlm_t *t = opaque;
    int64_t now = kc_now_ms();
    if (rc == KC_ERR_UNSUPPORTED) {
        unsupported(t, conn, kc_conn_refusal(conn));
    } else if (rc != KC_OK) {
        kc_tlm_on_subscription(&t->m, now, -1, NULL, 1.0);
    } else {
        kc_arena_t a = {0};
        kc_error_t err;
        kc_get_telemetry_subscriptions_response_t m;
        kc_rbuf_t rb = kc_rbuf(frame->data + body_off, frame->len - body_off);
        if (kc_get_telemetry_subscriptions_response_decode(&m, version, &rb, &a, &err) != KC_OK) {
            kc_error_t why;
            kc_wire_bad_answer(&why, kc_conn_peer(conn),
                               KC_GET_TELEMETRY_SUBSCRIPTIONS_REQUEST_API_KEY, version, err.msg);
            kc_log(KC_LOG_WARN, "telemetry", "%s", why.msg);
            kc_tlm_on_subscription(&t->m, now, -1, NULL, 1.0);
        } else {
            kc_tlm_subscription_t s = kc_tlm_subscription_of(&m);
            if (!kc_tlm_on_subscription(&t->m, now, m.error_code, &s, jitter(t)))
                kc_log(KC_LOG_WARN, "telemetry", "no memory for the metrics subscription");
            else if (m.error_code)
                kc_log(KC_LOG_DEBUG, "telemetry", "GetTelemetrySubscriptions: error %d (%s)",
                       m.error_code, kc_kafka_err_name(m.error_code));
        }
        kc_arena_free(&a);
    }
    if (frame)
        kc_buf_unref(frame);
    if (!t->e->closed)
        tlm_drive(t);
}

/* ---- PushTelemetry ------------------------------------------------------------------------ */

static kc_err_t push_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    kc_eng_tlm_t *t = opaque;
    kc_push_telemetry_request_t m;
    kc_push_telemetry_request_init(&m);
    m.client_instance_id = t->m.instance_id;
    m.subscription_id = t->m.subscription_id;
    m.terminating = t->m.terminating;
    m.compression_type = t->payload_compression;
    m.metrics = (kc_bytes_t){t->payload, (int32_t)t->payload_len};
    kc_error_t err;
    return kc_push_telemetry_request_encode(&m, version, out, &err);
}

/* A push's outcome: 0, the broker's error code, or -1 for no usable answer (conn NULL: never
 * sent). Its counters become the base of the next deltas only when the broker took it. */
static void push_answered(kc_eng_tlm_t *t, kc_conn_t *conn, int16_t code)
{
    if (code == 0) {
        kc_tlm_points_free(&t->accepted);
        t->accepted = t->sent;
        t->accepted_ns = t->sent_ns;
        memset(&t->sent, 0, sizeof t->sent);
    } else {
        kc_tlm_points_free(&t->sent);
    }
    bool fatal = code == KC_KAFKA_INVALID_RECORD || code == KC_KAFKA_INVALID_REQUEST;
    if (code > 0)
        kc_log(fatal ? KC_LOG_ERROR : KC_LOG_DEBUG, "telemetry",
               "PushTelemetry to broker %s: error %d (%s)%s", conn ? kc_conn_peer(conn) : "?", code,
               kc_kafka_err_name(code), fatal ? "; client telemetry stops" : "");
    free(t->payload);
    t->payload = NULL;
    kc_tlm_on_push(&t->m, kc_now_ms(), code); /* nothing once unsupported() stopped it */
}

static void push_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off,
                      int16_t version, void *opaque)
{
    kc_eng_tlm_t *t = opaque;
    int16_t code = -1;
    if (rc == KC_OK) {
        kc_arena_t a = {0};
        kc_error_t err;
        kc_push_telemetry_response_t m;
        kc_rbuf_t rb = kc_rbuf(frame->data + body_off, frame->len - body_off);
        if (kc_push_telemetry_response_decode(&m, version, &rb, &a, &err) == KC_OK) {
            code = m.error_code;
        } else {
            kc_error_t why;
            kc_wire_bad_answer(&why, kc_conn_peer(conn), KC_PUSH_TELEMETRY_REQUEST_API_KEY, version,
                               err.msg);
            kc_log(KC_LOG_WARN, "telemetry", "%s", why.msg);
        }
        kc_arena_free(&a);
    } else if (rc == KC_ERR_UNSUPPORTED) {
        unsupported(t, conn, kc_conn_refusal(conn));
    }
    if (frame)
        kc_buf_unref(frame);
    push_answered(t, conn, code);
    if (!t->e->closed)
        tlm_drive(t);
}

static bool want(void *ctx, const char *name)
{
    const kc_eng_tlm_t *t = ctx;
    return kc_tlm_wants(&t->m, name);
}

/* The requested metrics of a fresh snapshot, OTLP-encoded and compressed into t->payload; the
 * cumulative counters go to t->sent. False when nothing can be sent this time. */
static bool build_push(kc_eng_tlm_t *t)
{
    kc_engine_tlm_snapshot_t s = {0};
    t->hooks.collect(t->hooks.opaque, &s);
    kc_tlm_points_t *all = &s.points;
    kc_tlm_keep(all, want, t); /* a metric's points stay together, in order */
    size_t n = all->n;
    kc_tlm_points_t wanted = *all;
    bool ok = !all->failed && !s.resource.failed;
    double *cum = NULL;
    int64_t now_ns = kc_wall_ms() * 1000000;
    kc_wbuf_t w = {0};
    if (ok && t->m.delta) {
        /* the wire carries the change since the last accepted push; `sent` keeps the totals */
        ok = (cum = malloc((n ? n : 1) * sizeof *cum)) != NULL;
        for (size_t i = 0; ok && i < n; i++)
            cum[i] = wanted.v[i].value;
        if (ok)
            kc_tlm_delta(&wanted, t->accepted.n ? &t->accepted : NULL);
    }
    kc_tlm_attr_t res[16];
    size_t n_res = 0;
    for (size_t i = 0; i < s.resource.n && n_res < 16; i++)
        if (s.resource.v[i].n_attrs == 1)
            res[n_res++] = s.resource.v[i].attrs[0];
    kc_error_t err;
    if (ok) {
        kc_otlp_in_t in = {
            .resource = res,
            .n_resource = n_res,
            .scope_name = "kconsume",
            .scope_version = t->scope_version,
            .points = wanted.v,
            .n_points = n,
            .delta = t->m.delta,
            .start_ns = (uint64_t)(t->m.delta && t->accepted_ns ? t->accepted_ns : t->start_ns),
            .time_ns = (uint64_t)now_ns,
        };
        ok = kc_otlp_encode(&in, &w, &err) == KC_OK;
        if (!ok)
            kc_log(KC_LOG_WARN, "telemetry", "%s", err.msg);
    }
    if (ok && cum)
        for (size_t i = 0; i < n; i++)
            wanted.v[i].value = cum[i];
    free(cum);
    kc_tlm_points_free(&s.resource);
    if (!ok) {
        kc_wbuf_free(&w);
        kc_tlm_points_free(&wanted);
        return false;
    }
    t->payload_compression = t->m.compression;
    if (t->m.compression != KC_TLM_COMPRESSION_NONE &&
        kc_compress(t->m.compression, w.data, w.len, &t->payload, &t->payload_len, &err) == KC_OK) {
        kc_wbuf_free(&w);
    } else {
        t->payload_compression = KC_TLM_COMPRESSION_NONE;
        t->payload = w.data; /* the writer's buffer, handed over */
        t->payload_len = w.len;
    }
    if (t->m.max_bytes > 0 && t->payload_len > (size_t)t->m.max_bytes) {
        if (!t->told_too_large++)
            kc_log(KC_LOG_WARN, "telemetry",
                   "%zu metrics take %zu bytes, more than the %d the broker takes: not pushed", n,
                   t->payload_len, t->m.max_bytes);
        free(t->payload);
        t->payload = NULL;
        kc_tlm_points_free(&wanted);
        return false;
    }
    kc_tlm_points_free(&t->sent);
    t->sent = wanted;
    t->sent_ns = now_ns;
    t->last_bytes = t->payload_len;
    t->last_points = (uint32_t)n;
    t->last_compression = t->payload_compression;
    return true;
}

/* ---- the drive ---------------------------------------------------------------------------- */

static void tlm_drive(kc_eng_tlm_t *t)
{
    kc_engine_t *e = t->e;
    int64_t now = kc_now_ms(), due;
    kc_tlm_action_t a = kc_tlm_next(&t->m, now, &due);
    if (a == KC_TLM_NOTHING) {
        if (due >= 0)
            kc_loop_timer_start(e->loop, &t->timer, due - now);
        return;
    }
    if (a == KC_TLM_ASK && e->closing)
        return; /* a subscription asked for now could only owe a terminating push */
    kc_conn_t *c = kc_eng_ready_conn(e);
    if (!c && t->m.closing) {
        /* the engine is closing: no connection comes up any more, so the last push is lost */
        kc_tlm_stop(&t->m, "closed");
        return;
    }
    if (!c) {
        /* no connection up yet (metadata is making one) or none now: look again later */
        kc_loop_timer_start(e->loop, &t->timer, t->m.backoff_ms);
        return;
    }
    if (kc_conn_pick_version(c, KC_GET_TELEMETRY_SUBSCRIPTIONS_REQUEST_API_KEY, 0, 0) < 0 ||
        kc_conn_pick_version(c, KC_PUSH_TELEMETRY_REQUEST_API_KEY, 0, 0) < 0) {
        unsupported(t, c, NULL);
        return;
    }
    kc_conn_req_spec_t spec;
    if (a == KC_TLM_ASK) {
        spec = (kc_conn_req_spec_t){
            KC_GET_TELEMETRY_SUBSCRIPTIONS_REQUEST_API_KEY, 0, 0, get_encode, get_done, t};
    } else {
        if (!build_push(t)) {
            t->skipped++;
            if (t->m.terminating)
                kc_tlm_stop(&t->m, "closed");
            else
                kc_tlm_push_skipped(&t->m, now);
            tlm_drive(t);
            return;
        }
        spec = (kc_conn_req_spec_t){
            KC_PUSH_TELEMETRY_REQUEST_API_KEY, 0, 0, push_encode, push_done, t};
    }
    kc_tlm_sent(&t->m, a);
    kc_error_t err;
    if (kc_conn_send(c, &spec, &err) == KC_OK)
        return; /* the callback drives again */
    /* Not sent, and no callback comes (io/conn.h): the request counts as unanswered. */
    kc_log(KC_LOG_DEBUG, "telemetry", "not sent: %s", err.msg);
    if (a == KC_TLM_ASK)
        kc_tlm_on_subscription(&t->m, kc_now_ms(), -1, NULL, 1.0);
    else
        push_answered(t, NULL, -1);
    tlm_drive(t);
}

kc_err_t kc_engine_telemetry_start(kc_engine_t *e, const kc_engine_telemetry_t *hooks,
                                   kc_error_t *err)
{
    if (e->tlm)
        return kc_fail(err, KC_ERR_STATE, "telemetry: already started");
    if (!hooks || !hooks->collect)
        return kc_fail(err, KC_ERR_INVALID_ARG, "telemetry: no collect hook");
    kc_eng_tlm_t *t = calloc(1, sizeof *t);
    if (!t || (hooks->scope_version && !(t->scope_version = strdup(hooks->scope_version)))) {
        free(t);
        return kc_fail(err, KC_ERR_NOMEM, "telemetry: out of memory");
    }
    t->e = e;
    t->hooks = *hooks;
    t->hooks.scope_version = NULL;
    t->start_ns = kc_wall_ms() * 1000000;
    kc_tlm_init(&t->m, kc_now_ms(), e->conf.retry_backoff_max_ms);
    t->timer = (kc_loop_timer_t){.cb = on_timer, .opaque = t};
    e->tlm = t;
    kc_loop_timer_start(e->loop, &t->timer, 0);
    return KC_OK;
}

static bool tlm_busy(kc_engine_t *e)
{
    return !kc_tlm_idle(&e->tlm->m);
}

void kc_eng_telemetry_close(kc_engine_t *e, int64_t deadline)
{
    kc_eng_tlm_t *t = e->tlm;
    if (!t)
        return;
    kc_loop_timer_stop(e->loop, &t->timer);
    if (!kc_tlm_close(&t->m))
        return;
    tlm_drive(t); /* the terminating push, unless one is in flight (then after its answer) */
    kc_eng_run_while(e, deadline, tlm_busy);
    kc_loop_timer_stop(e->loop, &t->timer);
}

void kc_eng_telemetry_free(kc_engine_t *e)
{
    kc_eng_tlm_t *t = e->tlm;
    if (!t)
        return;
    kc_loop_timer_stop(e->loop, &t->timer);
    kc_tlm_destroy(&t->m);
    kc_tlm_points_free(&t->accepted);
    kc_tlm_points_free(&t->sent);
    free(t->payload);
    free(t->scope_version);
    free(t);
    e->tlm = NULL;
}

void kc_engine_telemetry_stats(const kc_engine_t *e, kc_engine_telemetry_stats_t *out)
{
    memset(out, 0, sizeof *out);
    const kc_eng_tlm_t *t = e->tlm;
    out->stopped = "";
    if (!t) {
        out->state = "off";
        return;
    }
    static const char *const names[] = {"asking", "asking", "subscribed", "pushing", "stopped"};
    out->state = names[t->m.phase];
    if (t->m.stopped)
        out->stopped = t->m.stopped;
    static const kc_uuid_t none;
    if (memcmp(&t->m.instance_id, &none, sizeof none) != 0)
        uuid_str(&t->m.instance_id, out->client_instance_id);
    out->subscription_id = t->m.subscription_id;
    out->push_interval_ms = t->m.push_interval_ms;
    out->requested_metrics = t->m.all ? -1 : t->m.n_prefixes;
    out->compression = t->last_points || t->last_bytes ? t->last_compression : t->m.compression;
    out->subscription_requests = t->m.asks;
    out->pushes = t->m.pushes;
    out->push_errors = t->m.push_errors;
    out->pushes_skipped = t->skipped;
    out->last_push_bytes = t->last_bytes;
    out->last_push_metrics = t->last_points;
}
