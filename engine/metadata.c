/*
 * The metadata cache: brokers (id → address), topics (name → id, partition count, leader and
 * leader epoch per partition), refreshed every metadata.max.age.ms, on demand (a partition
 * error asked for it, a partition has no leader yet) and with backoff after failures. Only the
 * assigned topics are asked for: a consumer does not need the whole cluster.
 *
 * Changes are detected against the previous answer and acted on here: a moved leader moves the
 * partition (kc_partition_on_metadata decides whether KIP-320 validation comes first), a changed
 * partition count and a changed broker address are counted and logged (the group modules read
 * the topic table for partition counts).
 *
 * Owner: network thread.
 */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "backoff.h"
#include "engine_int.h"
#include "proto/kafka_errors.h"

const kc_eng_topic_t *kc_eng_topic_find(const kc_engine_t *e, const char *name)
{
    for (size_t i = 0; i < e->n_topics; i++)
        if (strcmp(e->topics[i].name, name) == 0)
            return &e->topics[i];
    return NULL;
}

static const uint8_t ZERO_ID[16];

static const char *name_of(void *opaque, const uint8_t id[16])
{
    const kc_engine_t *e = opaque;
    for (size_t i = 0; i < e->n_topics; i++)
        if (memcmp(e->topics[i].id, id, 16) == 0)
            return e->topics[i].name;
    for (size_t i = 0; i < e->n_topics; i++)
        if (memcmp(e->topics[i].prev_id, ZERO_ID, 16) != 0 &&
            memcmp(e->topics[i].prev_id, id, 16) == 0)
            return e->topics[i].name;
    return NULL;
}

static int id_of(void *opaque, const char *name, size_t len, uint8_t id[16])
{
    const kc_engine_t *e = opaque;
    for (size_t i = 0; i < e->n_topics; i++)
        if (strlen(e->topics[i].name) == len && memcmp(e->topics[i].name, name, len) == 0) {
            memcpy(id, e->topics[i].id, 16);
            return 1;
        }
    return 0;
}

void kc_eng_names_init(kc_engine_t *e)
{
    e->names = (kc_fetch_names_t){name_of, id_of, e};
}

static void topic_clear(kc_eng_topic_t *t)
{
    free(t->name);
    free(t->leader);
    free(t->epoch);
    memset(t, 0, sizeof *t);
}

void kc_eng_topics_free(kc_engine_t *e)
{
    for (size_t i = 0; i < e->n_topics; i++)
        topic_clear(&e->topics[i]);
    free(e->topics);
    e->topics = NULL;
    e->n_topics = e->cap_topics = 0;
}

static kc_err_t md_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    kc_engine_t *e = opaque;
    kc_metadata_request_t m;
    kc_metadata_request_init(&m);
    m.allow_auto_topic_creation = false;
    kc_metadata_request_topic_t *ts = calloc(e->n_parts ? e->n_parts : 1, sizeof *ts);
    if (!ts)
        return KC_ERR_NOMEM;
    int32_t n = 0;
    for (size_t i = 0; i < e->n_parts; i++) {
        int dup = 0;
        for (int32_t j = 0; j < n && !dup; j++)
            dup = (size_t)ts[j].name.len == strlen(e->info[i].topic) &&
                  memcmp(ts[j].name.ptr, e->info[i].topic, (size_t)ts[j].name.len) == 0;
        if (!dup)
            ts[n++].name = kc_str(e->info[i].topic);
    }
    m.topics.count = n;
    m.topics.items = ts;
    kc_error_t err;
    kc_err_t rc = kc_metadata_request_encode(&m, version, out, &err);
    free(ts);
    return rc;
}

static void md_failed(kc_engine_t *e, int64_t now, const char *why)
{
    e->md_failures++;
    e->md_wanted = 1;
    e->md_retry_ms = now + kc_backoff_ms(e->conf.retry_backoff_ms, e->conf.retry_backoff_max_ms,
                                         e->md_failures, kc_backoff_rand(&e->rng));
    kc_log(KC_LOG_DEBUG, "metadata", "refresh failed: %s", why);
}

/* Replaces topic `name`'s entry with the response's; returns 1 when something changed that the
 * engine should count (leader, epoch, partition count, topic id). */
static int topic_store(kc_engine_t *e, const kc_metadata_response_topic_t *rt, const char *name)
{
    kc_eng_topic_t *t = (kc_eng_topic_t *)kc_eng_topic_find(e, name);
    if (!t) {
        if (e->n_topics == e->cap_topics) {
            size_t cap = e->cap_topics ? e->cap_topics * 2 : 8;
            kc_eng_topic_t *nt = realloc(e->topics, cap * sizeof *nt);
            if (!nt)
                return 0;
            e->topics = nt;
            e->cap_topics = cap;
        }
        t = &e->topics[e->n_topics++];
        memset(t, 0, sizeof *t);
        t->name = strdup(name);
        if (!t->name) {
            e->n_topics--;
            return 0;
        }
    }
    int changed = 0;
    t->error = rt->error_code;
    if (rt->error_code != 0)
        return 0;
    int32_t n = rt->partitions.count > 0 ? rt->partitions.count : 0;
    if (memcmp(rt->topic_id.b, ZERO_ID, 16) == 0) {
        /* No id in the answer (Metadata before v10): keep the key the topic has, or give it a
         * synthetic one. Such a broker cannot tell a recreated topic from the old one. */
        if (memcmp(t->id, ZERO_ID, 16) == 0) {
            kc_tp_synthetic_id(t->id, e->n_synthetic++);
            changed = 1;
        }
    } else if (memcmp(t->id, rt->topic_id.b, 16) != 0) {
        memcpy(t->prev_id, t->id, 16);
        memcpy(t->id, rt->topic_id.b, 16);
        changed = 1;
    }
    if (n != t->n_parts) {
        int report = t->n_parts != 0;
        if (report)
            kc_log(KC_LOG_INFO, "metadata", "topic %s: %d -> %d partitions", name, t->n_parts, n);
        int32_t *l = realloc(t->leader, (size_t)(n ? n : 1) * sizeof *l);
        if (!l)
            return changed;
        t->leader = l;
        int32_t *ep = realloc(t->epoch, (size_t)(n ? n : 1) * sizeof *ep);
        if (!ep)
            return changed;
        t->epoch = ep;
        for (int32_t i = t->n_parts; i < n; i++)
            t->leader[i] = KC_NO_BROKER, t->epoch[i] = KC_NO_EPOCH;
        t->n_parts = n;
        changed = 1;
        if (report && e->md_cb)
            e->md_cb(e->md_cb_opaque, KC_ENGINE_MD_PARTITION_COUNT, name, n);
    }
    for (int32_t i = 0; i < n; i++) {
        const kc_metadata_response_partition_t *rp = &rt->partitions.items[i];
        if (rp->partition_index < 0 || rp->partition_index >= n)
            continue;
        int32_t leader = rp->error_code == 0 || rp->leader_id >= 0 ? rp->leader_id : KC_NO_BROKER;
        if (t->leader[rp->partition_index] != leader ||
            t->epoch[rp->partition_index] != rp->leader_epoch)
            changed = 1;
        t->leader[rp->partition_index] = leader;
        t->epoch[rp->partition_index] = rp->leader_epoch;
    }
    return changed;
}

bool kc_eng_metadata_refused(kc_engine_t *e, int16_t error_code)
{
    if (error_code == 0)
        return false;
    if (error_code == KC_KAFKA_REBOOTSTRAP_REQUIRED)
        kc_eng_rebootstrap_required(e);
    return true;
}

void kc_eng_metadata_apply_part(kc_engine_t *e, size_t i)
{
    kc_partition_t *p = &e->parts[i];
    kc_eng_pinfo_t *in = &e->info[i];
    const kc_eng_topic_t *t = kc_eng_topic_find(e, in->topic);
    if (!t || t->error || in->partition >= t->n_parts) {
        kc_partition_on_metadata(p, KC_NO_BROKER, KC_NO_EPOCH);
        e->md_wanted = 1;
        return;
    }
    if (!in->have_id || memcmp(p->tp.topic_id, t->id, 16) != 0) {
        /* A synthetic key giving way to the topic's real id (a broker that has ids answered)
         * is the same log under a new key: the sessions forget the old key and add the new. */
        if (in->have_id && !kc_tp_id_is_synthetic(p->tp.topic_id)) {
            /* Deleted and recreated under the same name: a different log. */
            kc_log(KC_LOG_WARN, "metadata", "topic %s was recreated; resetting %s[%d]", in->topic,
                   in->topic, in->partition);
            p->state = KC_FS_AWAIT_RESET;
            p->position_epoch = KC_NO_EPOCH;
            /* Leader epochs count a log's leaders: the new log's start again, and a request
             * carrying the old log's (higher) epoch is refused as UNKNOWN_LEADER_EPOCH. */
            p->leader_epoch = KC_NO_EPOCH;
            in->reset_ts = e->conf.auto_offset_reset == KC_RESET_EARLIEST ? -2 : -1;
        }
        kc_eng_part_set_id(e, i, t->id);
    }
    int32_t leader = t->leader[in->partition];
    if (kc_partition_on_metadata(p, leader, t->epoch[in->partition]))
        kc_log(KC_LOG_DEBUG, "metadata", "%s[%d]: leader %d epoch %d, validating position %lld",
               in->topic, in->partition, leader, t->epoch[in->partition], (long long)p->position);
    if (leader == KC_NO_BROKER)
        e->md_wanted = 1;
}

static void md_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    kc_engine_t *e = opaque;
    e->md_inflight = 0;
    int64_t now = kc_now_ms();
    if (e->closed) {
        kc_buf_unref(frame);
        return;
    }
    if (rc != KC_OK) {
        kc_eng_conn_failed(e, KC_METADATA_REQUEST_API_KEY, conn, rc);
        md_failed(e, now, kc_err_name(rc));
        kc_eng_drive(e);
        return;
    }
    kc_arena_t a = {0};
    kc_error_t err;
    kc_metadata_response_t m;
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    if (kc_metadata_response_decode(&m, version, &r, &a, &err) != KC_OK) {
        kc_eng_bad_answer(e, KC_METADATA_REQUEST_API_KEY, conn, version, &err);
        md_failed(e, now, err.msg);
        goto out;
    }
    if (kc_eng_metadata_refused(e, m.error_code)) {
        md_failed(e, now, kc_kafka_err_name(m.error_code));
        goto out;
    }
    for (size_t i = 0; i < e->n_brokers; i++)
        e->brokers[i]->in_metadata = 0;
    char host[256], name[256];
    for (int32_t i = 0; i < m.brokers.count; i++) {
        const kc_metadata_response_broker_t *b = &m.brokers.items[i];
        size_t hl = b->host.len > 0 && (size_t)b->host.len < sizeof host ? (size_t)b->host.len : 0;
        memcpy(host, b->host.ptr, hl);
        host[hl] = '\0';
        if (kc_eng_broker_update(e, b->node_id, host, b->port)) {
            e->stats.metadata_changes++;
            if (e->md_cb)
                e->md_cb(e->md_cb_opaque, KC_ENGINE_MD_BROKER_ADDRESS, NULL, b->node_id);
        }
    }
    int missing = 0;
    for (int32_t i = 0; i < m.topics.count; i++) {
        const kc_metadata_response_topic_t *t = &m.topics.items[i];
        if (t->name.len <= 0 || (size_t)t->name.len >= sizeof name)
            continue;
        memcpy(name, t->name.ptr, (size_t)t->name.len);
        name[t->name.len] = '\0';
        if (t->error_code) {
            missing = 1;
            kc_log(KC_LOG_DEBUG, "metadata", "topic %s: %s", name,
                   kc_kafka_err_name(t->error_code));
        }
        if (topic_store(e, t, name))
            e->stats.metadata_changes++;
    }
    kc_mdr_on_metadata(&e->mdr, m.brokers.count);
    e->md_wanted = 0;
    e->md_failures = 0;
    e->md_next_ms = now + e->conf.metadata_max_age_ms;
    /* Rate-limit on-demand refreshes: a partition whose leader is still unknown asks again
     * after retry.backoff.ms, not in a tight loop. */
    e->md_retry_ms = now + e->conf.retry_backoff_ms;
    for (size_t i = 0; i < e->n_parts; i++)
        kc_eng_metadata_apply_part(e, i);
    if (missing)
        e->md_wanted = 1;
out:
    kc_arena_free(&a);
    kc_buf_unref(frame);
    kc_eng_drive(e);
}

void kc_eng_metadata_maybe_send(kc_engine_t *e, int64_t now_ms)
{
    if (e->md_inflight || e->closing || e->n_parts == 0)
        return;
    if (!(e->md_wanted && now_ms >= e->md_retry_ms) && now_ms < e->md_next_ms)
        return;
    kc_conn_t *c = kc_eng_any_conn(e);
    if (!c)
        return;
    kc_conn_req_spec_t spec = {KC_METADATA_REQUEST_API_KEY,
                               KC_ENG_METADATA_MIN,
                               KC_ENG_METADATA_MAX,
                               md_encode,
                               md_done,
                               e};
    kc_error_t err;
    kc_err_t rc = kc_conn_send(c, &spec, &err);
    if (rc != KC_OK) {
        if (rc == KC_ERR_UNSUPPORTED)
            kc_eng_api_unusable(e, KC_METADATA_REQUEST_API_KEY, &err);
        md_failed(e, now_ms, err.msg);
        return;
    }
    e->md_inflight = 1;
    e->stats.metadata_requests++;
}

void kc_engine_on_metadata_change(kc_engine_t *e, kc_engine_md_cb cb, void *opaque)
{
    e->md_cb = cb;
    e->md_cb_opaque = opaque;
}
