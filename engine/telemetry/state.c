#include "telemetry/state.h"

#include <stdlib.h>
#include <string.h>

#include "proto/kafka_errors.h"

kc_tlm_subscription_t kc_tlm_subscription_of(const kc_get_telemetry_subscriptions_response_t *m)
{
    return (kc_tlm_subscription_t){
        .client_instance_id = m->client_instance_id,
        .subscription_id = m->subscription_id,
        .push_interval_ms = m->push_interval_ms,
        .telemetry_max_bytes = m->telemetry_max_bytes,
        .delta_temporality = m->delta_temporality,
        .accepted_compression = m->accepted_compression_types.items,
        .n_accepted_compression = m->accepted_compression_types.count,
        .metrics = m->requested_metrics.items,
        .n_metrics = m->requested_metrics.count,
    };
}

void kc_tlm_init(kc_tlm_t *t, int64_t now_ms, int64_t backoff_ms)
{
    memset(t, 0, sizeof *t);
    t->phase = KC_TLM_NEED_SUBSCRIPTION;
    t->next_ms = now_ms;
    t->backoff_ms = backoff_ms > 0 ? backoff_ms : 1000;
}

static void drop_prefixes(kc_tlm_t *t)
{
    for (int i = 0; i < t->n_prefixes; i++)
        free(t->prefixes[i]);
    free(t->prefixes);
    t->prefixes = NULL;
    t->n_prefixes = 0;
    t->all = false;
}

void kc_tlm_destroy(kc_tlm_t *t)
{
    drop_prefixes(t);
}

/* The wait before asking again after a failure: an interval once the broker gave one (sooner
 * would be throttled), the backoff before. */
static int64_t retry_wait(const kc_tlm_t *t)
{
    return t->push_interval_ms > 0 ? t->push_interval_ms : t->backoff_ms;
}

static void ask_at(kc_tlm_t *t, int64_t at)
{
    t->phase = KC_TLM_NEED_SUBSCRIPTION;
    t->next_ms = at;
}

kc_tlm_action_t kc_tlm_next(kc_tlm_t *t, int64_t now_ms, int64_t *due_ms)
{
    *due_ms = -1;
    switch (t->phase) {
    case KC_TLM_NEED_SUBSCRIPTION:
        if (t->closing)
            return KC_TLM_NOTHING;
        if (now_ms >= t->next_ms)
            return KC_TLM_ASK;
        *due_ms = t->next_ms;
        return KC_TLM_NOTHING;
    case KC_TLM_SUBSCRIBED:
        if (t->closing)
            return t->terminating ? KC_TLM_PUSH : KC_TLM_NOTHING;
        if (now_ms < t->next_ms) {
            *due_ms = t->next_ms;
            return KC_TLM_NOTHING;
        }
        if (t->n_prefixes == 0 && !t->all) {
            /* nothing requested: see whether that changed */
            t->phase = KC_TLM_NEED_SUBSCRIPTION;
            return KC_TLM_ASK;
        }
        return KC_TLM_PUSH;
    case KC_TLM_ASKING:
    case KC_TLM_PUSHING:
    case KC_TLM_STOPPED:
        break;
    }
    return KC_TLM_NOTHING;
}

void kc_tlm_sent(kc_tlm_t *t, kc_tlm_action_t a)
{
    if (a == KC_TLM_ASK) {
        t->phase = KC_TLM_ASKING;
        t->asks++;
    } else if (a == KC_TLM_PUSH) {
        t->phase = KC_TLM_PUSHING;
        t->pushes++;
    }
}

static int8_t pick_compression(const kc_tlm_subscription_t *s)
{
    for (int i = 0; i < s->n_accepted_compression; i++)
        if (s->accepted_compression[i] == KC_TLM_COMPRESSION_ZSTD ||
            s->accepted_compression[i] == KC_TLM_COMPRESSION_GZIP)
            return s->accepted_compression[i];
    return KC_TLM_COMPRESSION_NONE; /* always accepted */
}

static bool take_prefixes(kc_tlm_t *t, const kc_tlm_subscription_t *s)
{
    drop_prefixes(t);
    for (int i = 0; i < s->n_metrics; i++) {
        kc_str_t m = s->metrics[i];
        if (m.len <= 0 || (m.len == 1 && m.ptr[0] == '*'))
            t->all = true;
    }
    if (t->all || s->n_metrics <= 0)
        return true;
    t->prefixes = calloc((size_t)s->n_metrics, sizeof *t->prefixes);
    if (!t->prefixes)
        return false;
    for (int i = 0; i < s->n_metrics; i++) {
        if (!(t->prefixes[i] = malloc((size_t)s->metrics[i].len + 1))) {
            t->n_prefixes = i;
            drop_prefixes(t);
            return false;
        }
        memcpy(t->prefixes[i], s->metrics[i].ptr, (size_t)s->metrics[i].len);
        t->prefixes[i][s->metrics[i].len] = '\0';
        t->n_prefixes = i + 1;
    }
    return true;
}

bool kc_tlm_on_subscription(kc_tlm_t *t, int64_t now_ms, int16_t code,
                            const kc_tlm_subscription_t *sub, double jitter)
{
    if (t->phase != KC_TLM_ASKING)
        return true;
    bool stored = true;
    if (code == 0 && (!sub || !take_prefixes(t, sub))) {
        code = -1;
        stored = sub == NULL;
    }
    if (code != 0) {
        if (code == KC_KAFKA_INVALID_REQUEST)
            kc_tlm_stop(t, "the broker refused the subscription request as invalid");
        else
            ask_at(t, now_ms + retry_wait(t));
        return stored;
    }
    static const kc_uuid_t none;
    if (memcmp(&t->instance_id, &none, sizeof none) == 0)
        t->instance_id = sub->client_instance_id;
    t->subscription_id = sub->subscription_id;
    t->push_interval_ms = sub->push_interval_ms > 0 ? sub->push_interval_ms : 300000;
    t->max_bytes = sub->telemetry_max_bytes;
    t->delta = sub->delta_temporality;
    t->compression = pick_compression(sub);
    t->phase = KC_TLM_SUBSCRIBED;
    /* Only a first push is spread; asking again when nothing is requested must wait the whole
     * interval, or the broker throttles the request. */
    if (jitter < 0.5 || jitter >= 1.5 || (t->n_prefixes == 0 && !t->all))
        jitter = 1.0;
    t->next_ms = now_ms + (int64_t)((double)t->push_interval_ms * jitter);
    if (t->closing)
        t->terminating = t->n_prefixes > 0 || t->all;
    return true;
}

void kc_tlm_on_push(kc_tlm_t *t, int64_t now_ms, int16_t code)
{
    if (t->phase != KC_TLM_PUSHING)
        return;
    if (t->terminating) {
        /* the last push went, answered or not: nothing more is sent */
        t->terminating = false;
        t->phase = KC_TLM_STOPPED;
        t->stopped = "closed";
        if (code != 0)
            t->push_errors++;
        return;
    }
    if (code != 0)
        t->push_errors++;
    switch (code) {
    case 0:
    case KC_KAFKA_TELEMETRY_TOO_LARGE:
    case KC_KAFKA_THROTTLING_QUOTA_EXCEEDED:
        t->phase = KC_TLM_SUBSCRIBED;
        t->next_ms = now_ms + t->push_interval_ms;
        break;
    case KC_KAFKA_UNKNOWN_SUBSCRIPTION_ID:
    case KC_KAFKA_UNSUPPORTED_COMPRESSION_TYPE:
        ask_at(t, now_ms);
        break;
    case KC_KAFKA_INVALID_REQUEST:
        kc_tlm_stop(t, "the broker refused a push as an invalid request");
        return;
    case KC_KAFKA_INVALID_RECORD:
        kc_tlm_stop(t, "the broker could not read the pushed metrics");
        return;
    default:
        ask_at(t, now_ms + retry_wait(t));
        break;
    }
    if (t->closing)
        t->terminating = t->phase == KC_TLM_SUBSCRIBED;
}

void kc_tlm_push_skipped(kc_tlm_t *t, int64_t now_ms)
{
    if (t->phase != KC_TLM_SUBSCRIBED)
        return;
    t->next_ms = now_ms + t->push_interval_ms;
}

void kc_tlm_stop(kc_tlm_t *t, const char *why)
{
    t->phase = KC_TLM_STOPPED;
    t->stopped = why;
    t->terminating = false;
}

bool kc_tlm_close(kc_tlm_t *t)
{
    if (t->closing)
        return !kc_tlm_idle(t);
    t->closing = true;
    switch (t->phase) {
    case KC_TLM_SUBSCRIBED:
        t->terminating = t->n_prefixes > 0 || t->all;
        if (!t->terminating)
            kc_tlm_stop(t, "closed");
        return t->terminating;
    case KC_TLM_PUSHING:
    case KC_TLM_ASKING:
        return true; /* decided when the answer comes */
    case KC_TLM_NEED_SUBSCRIPTION:
        kc_tlm_stop(t, "closed");
        return false;
    case KC_TLM_STOPPED:
        break;
    }
    return false;
}

bool kc_tlm_idle(const kc_tlm_t *t)
{
    if (t->phase == KC_TLM_ASKING || t->phase == KC_TLM_PUSHING)
        return false;
    return !(t->closing && t->terminating);
}

bool kc_tlm_wants(const kc_tlm_t *t, const char *name)
{
    if (t->all)
        return true;
    for (int i = 0; i < t->n_prefixes; i++)
        if (strncmp(name, t->prefixes[i], strlen(t->prefixes[i])) == 0)
            return true;
    return false;
}
