/* libFuzzer: KIP-714 answers as the telemetry state machine takes them (engine/telemetry/state.h),
 * beyond the generated decoders (fuzz_proto_response): null or huge metric lists, empty and "*"
 * prefixes, negative or huge intervals, unknown compression types, any error code, answers in
 * any order with a close anywhere. Whatever the bytes, the machine must not crash or leak, never
 * have two requests out, send nothing after its terminating push, and every metric a snapshot
 * builds must encode (engine/telemetry/otlp.h).
 * Input: a sequence of steps [op][len][body...]: op & 3 picks GetTelemetrySubscriptions answer
 * (body decoded at v0), PushTelemetry answer (v0), close, or time passing (body[0] x 100 ms).
 * Single-threaded. */
#include <stdlib.h>
#include <string.h>

#include "proto/get_telemetry_subscriptions.gen.h"
#include "proto/kafka_errors.h"
#include "proto/push_telemetry.gen.h"
#include "telemetry/otlp.h"
#include "telemetry/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    kc_tlm_t t;
    int64_t now = 0, due;
    kc_tlm_init(&t, now, 100);
    bool closed = false, last_sent = false;
    kc_tlm_action_t inflight = KC_TLM_NOTHING;
    size_t i = 0;
    while (i + 2 <= len) {
        uint8_t op = data[i], n = data[i + 1];
        i += 2;
        if (n > len - i)
            n = (uint8_t)(len - i);
        const uint8_t *body = data + i;
        i += n;
        /* whatever is due goes out first, one request at a time */
        kc_tlm_action_t a = kc_tlm_next(&t, now, &due);
        if (a != KC_TLM_NOTHING) {
            if (inflight != KC_TLM_NOTHING || last_sent)
                abort();
            if (a == KC_TLM_PUSH) {
                if (!t.all && t.n_prefixes == 0)
                    abort(); /* a push with nothing asked for */
                last_sent = t.terminating;
            }
            if (closed && a == KC_TLM_ASK)
                abort();
            kc_tlm_sent(&t, a);
            inflight = a;
        } else if (due >= 0 && due < now) {
            abort(); /* a past due time must have been acted on */
        }
        kc_arena_t arena = {0};
        kc_error_t err;
        switch (op & 3) {
        case 0: {
            kc_get_telemetry_subscriptions_response_t m;
            kc_rbuf_t r = kc_rbuf(body, n);
            if (inflight == KC_TLM_ASK &&
                kc_get_telemetry_subscriptions_response_decode(&m, 0, &r, &arena, &err) == KC_OK) {
                kc_tlm_subscription_t s = kc_tlm_subscription_of(&m);
                kc_tlm_on_subscription(&t, now, m.error_code, &s, 0.5 + (op >> 2) / 64.0);
                inflight = KC_TLM_NOTHING;
                if (t.compression != KC_TLM_COMPRESSION_NONE &&
                    t.compression != KC_TLM_COMPRESSION_ZSTD &&
                    t.compression != KC_TLM_COMPRESSION_GZIP)
                    abort();
            }
            break;
        }
        case 1: {
            kc_push_telemetry_response_t m;
            kc_rbuf_t r = kc_rbuf(body, n);
            if (inflight == KC_TLM_PUSH &&
                kc_push_telemetry_response_decode(&m, 0, &r, &arena, &err) == KC_OK) {
                kc_tlm_on_push(&t, now, m.error_code);
                inflight = KC_TLM_NOTHING;
            } else if (inflight == KC_TLM_PUSH && (op & 4)) {
                kc_tlm_on_push(&t, now, -1); /* no usable answer */
                inflight = KC_TLM_NOTHING;
            }
            break;
        }
        case 2:
            closed = true;
            (void)kc_tlm_close(&t);
            break;
        default:
            now += n ? body[0] * 100 : 1;
            break;
        }
        kc_arena_free(&arena);
    }
    /* a snapshot under the subscription encodes */
    kc_tlm_points_t p = {0};
    kc_tlm_add(&p, "org.apache.kafka.consumer.fetch.manager.records.lag", KC_TLM_GAUGE, 1, 2,
               "topic", "t", "partition", "0");
    kc_tlm_add(&p, "org.apache.kafka.consumer.coordinator.commit.total", KC_TLM_COUNTER, 2, 0);
    size_t keep = 0;
    for (size_t k = 0; k < p.n; k++)
        keep += kc_tlm_wants(&t, p.v[k].name);
    kc_otlp_in_t in = {
        .scope_name = "kconsume", .points = p.v, .n_points = keep ? p.n : 0, .delta = t.delta};
    kc_wbuf_t w = {0};
    kc_error_t err;
    if (kc_otlp_encode(&in, &w, &err) != KC_OK)
        abort();
    kc_wbuf_free(&w);
    kc_tlm_points_free(&p);
    kc_tlm_destroy(&t);
    return 0;
}
