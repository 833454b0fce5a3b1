/*
 * group.protocol=consumer (KIP-848): the pure member (member.h) behind group/group.h's protocol
 * interface. What only this protocol sends lives here: ConsumerGroupHeartbeat over the group's
 * coordinator connection (coordinator.h: FindCoordinator cache, REDISCOVER → invalidate and ask
 * again), an all-topics Metadata request that resolves the assignment's topic ids to names, and
 * DescribeConfigs of the GROUP resource for the group's consumer.session.timeout.ms, the session
 * the self-fence is measured against (asked at subscribe and every SESSION_REFRESH_MS: it can be
 * altered at any time; until an answer, and when it cannot be read, the configured
 * group.consumer.session.timeout.ms).
 *
 * The self-fence's clock: a heartbeat answered without error restarts the member's session at
 * the coordinator no earlier than its send time. An answer that fences the member
 * (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) keeps the fence until the partitions are lost and
 * the member joined again.
 *
 * Owner: network thread, all of it. Answers on connections arrive there and call
 * kc_group_drive(); after the engine closed they are refused (`e->closed`), and the engine is
 * closed before the group is freed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "engine_int.h"
#include "group/848/member.h"
#include "group/848/proto_int.h"
#include "group/group.h"
#include "group/self_fence.h"
#include "proto/kafka_errors.h"

/* Owner: network thread. */
typedef struct p848 {
    const kc_g848_wire_t
        *wire; /* the heartbeat API (ConsumerGroupHeartbeat, ShareGroupHeartbeat) */
    kc_group_t *grp;
    kc_engine_t *e;
    const kc_group_conf_t *conf; /* the group's, outlives us */
    kc_g848_t gc;
    kc_consumer_group_heartbeat_request_t req; /* gc's storage, valid while in flight */
    bool hb_inflight, md_inflight;
    bool no_api;        /* the coordinator lacks the heartbeat API: reported, nothing more sent */
    kc_conn_t *hb_conn; /* the in-flight heartbeat's connection */
    int64_t hb_sent_ms, notready_since;
    /* The self-fence's session: the group's consumer.session.timeout.ms once read. */
    int64_t session_ms;
    bool dc_inflight, dc_from_broker, dc_reported;
    int64_t dc_next_ms;
} p848_t;

#define SESSION_REFRESH_MS 60000
#define SESSION_RETRY_MS   5000
/* DescribeConfigs' resource type for a group's configs (KIP-848's group configs). */
#define RESOURCE_TYPE_GROUP 32

/* Topic id → name: the names the Metadata answers gave the member's topics (gc.interned). */
static const char *lookup(void *ctx, const uint8_t id[16])
{
    const kc_gtopic_t *t = kc_gtopics_find_id(&((p848_t *)ctx)->gc.interned, id);
    return t ? t->name : NULL;
}

static const char *group_of(const p848_t *p)
{
    return p->conf->group_id;
}

/* ---- heartbeat ------------------------------------------------------------------------------ */

static kc_err_t cgh_encode(const kc_consumer_group_heartbeat_request_t *req, int16_t version,
                           kc_wbuf_t *w, kc_error_t *err)
{
    return kc_consumer_group_heartbeat_request_encode(req, version, w, err);
}

static kc_err_t cgh_decode(kc_consumer_group_heartbeat_response_t *resp, int16_t version,
                           kc_rbuf_t *r, kc_arena_t *a, kc_error_t *err)
{
    return kc_consumer_group_heartbeat_response_decode(resp, version, r, a, err);
}

const kc_g848_wire_t kc_g848_wire = {
    .api = "ConsumerGroupHeartbeat",
    .api_key = KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY,
    .min_version = 0,
    .max_version = 1,
    .session_config = "consumer.session.timeout.ms",
    .regex = true,
    .encode = cgh_encode,
    .decode = cgh_decode,
};

static kc_err_t hb_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    p848_t *p = opaque;
    kc_error_t e;
    return p->wire->encode(&p->req, version, out, &e);
}

static void hb_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    p848_t *p = opaque;
    p->hb_inflight = false;
    p->hb_conn = NULL;
    if (p->e->closed) {
        kc_buf_unref(frame);
        return;
    }
    kc_group_counters_t *n = kc_group_counters(p->grp);
    int64_t now = kc_now_ms();
    if (rc != KC_OK) {
        kc_error_t why;
        kc_fail(&why, rc, "%s: %s", p->wire->api, kc_err_name(rc));
        n->hb_errors++;
        kc_g848_on_heartbeat_failure(&p->gc, now, &why);
        kc_group_drive(p->grp);
        return;
    }
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    kc_arena_t a = {0};
    kc_error_t e;
    kc_consumer_group_heartbeat_response_t resp;
    if (p->wire->decode(&resp, version, &r, &a, &e) != KC_OK) {
        n->hb_errors++;
        kc_g848_on_heartbeat_failure(&p->gc, now, &e);
    } else {
        n->heartbeats++;
        if (resp.error_code) {
            n->hb_errors++;
            n->last_error_code = resp.error_code;
        } else {
            /* Answered without error: the coordinator restarted our session no earlier than
             * when this heartbeat left. */
            kc_group_session_answered(p->grp, p->hb_sent_ms);
        }
        int32_t before = p->gc.epoch;
        kc_g848_on_heartbeat_response(&p->gc, now, &resp);
        if (p->gc.epoch != before && resp.error_code == 0)
            kc_group_rebalanced(p->grp);
    }
    kc_arena_free(&a);
    kc_buf_unref(frame);
    kc_group_drive(p->grp);
}

static void found(void *m, kc_err_t rc, const kc_error_t *err)
{
    p848_t *p = m;
    if (rc != KC_OK)
        kc_log(KC_LOG_WARN, "group848", "group %s: FindCoordinator: %s", group_of(p),
               err ? err->msg : kc_err_name(rc));
    /* Ready either way: a heartbeat to a coordinator still unknown fails and asks again. */
    kc_g848_coordinator_ready(&p->gc, kc_now_ms());
}

static void find_start(p848_t *p)
{
    (void)kc_group_find_coordinator(p->grp, found);
}

static void maybe_heartbeat(p848_t *p, int64_t now)
{
    if (p->no_api)
        return;
    if (p->hb_inflight) {
        /* A coordinator killed mid-request may leave the answer hanging until request.timeout.ms
         * (30 s), longer than the session: past a few heartbeat intervals the connection is
         * reset, which fails the heartbeat and leads to a rediscovery. */
        int64_t limit = 3 * (int64_t)p->gc.interval_ms;
        if (limit < 3000)
            limit = 3000;
        if (now - p->hb_sent_ms > limit && p->hb_conn)
            kc_conn_reset(p->hb_conn, KC_ERR_TIMEOUT, "heartbeat unanswered");
        return;
    }
    kc_conn_t *conn = kc_engine_coord_conn(p->e, group_of(p));
    if (!conn) {
        if (p->gc.state != KC_G848_UNSUBSCRIBED && p->gc.state != KC_G848_FATAL)
            find_start(p);
        return;
    }
    if (kc_conn_state(conn) != KC_CONN_READY) {
        /* Connecting. A coordinator that went away leaves its connection reconnecting to a
         * dead address: after a failed attempt (or a second without success) that counts as a
         * failed heartbeat, and the state machine asks for a rediscovery. Only once a heartbeat
         * is due: until then the backoff of the previous failure runs. Counted at once, every
         * FindCoordinator answer failed the next heartbeat again: while the brokers still name
         * a dead coordinator (until the controller fences it, ~9 s) that is a loop of thousands
         * of FindCoordinator requests a second, and after the reset of a live coordinator's
         * connection (heartbeat unanswered, above) it ran the backoff up to its maximum within
         * the 50 ms reconnect, so the heartbeat that could keep the session alive went out a
         * second late. */
        if (!p->notready_since)
            p->notready_since = now;
        if (!kc_g848_heartbeat_wanted(&p->gc, now))
            return;
        if (kc_conn_failures(conn) > 0 || now - p->notready_since > 1000) {
            p->notready_since = 0;
            kc_error_t why;
            kc_fail(&why, KC_ERR_TRANSPORT, "group %s: coordinator %s unreachable", group_of(p),
                    kc_conn_peer(conn));
            kc_engine_coord_invalidate(p->e, group_of(p));
            kc_group_counters(p->grp)->hb_errors++;
            kc_g848_on_heartbeat_failure(&p->gc, now, &why);
        }
        return;
    }
    p->notready_since = 0;
    int v =
        kc_conn_pick_version(conn, p->wire->api_key, p->wire->min_version, p->wire->max_version);
    if (v < 0) {
        /* Not a coordinator outage: asking again finds the same broker. Reported once as a
         * fatal error, after which the member sends nothing (it stays JOINING in the stats);
         * under group.protocol=auto the driver falls back to classic instead. */
        if (!p->no_api) {
            p->no_api = true;
            kc_error_t e;
            kc_fail(&e, KC_ERR_UNSUPPORTED,
                    "group %s: the group coordinator (broker %d, %s) does not offer %s",
                    group_of(p), (int)kc_engine_coord_node(p->e, group_of(p)), kc_conn_peer(conn),
                    p->wire->api);
            kc_group_report(p->grp, &e, true);
        }
        return;
    }
    kc_error_t e;
    kc_err_t rc = kc_g848_heartbeat_due(&p->gc, now, (int16_t)v, &p->req, &e);
    if (rc == KC_ERR_AGAIN)
        return;
    if (rc != KC_OK) {
        kc_group_report(p->grp, &e, true);
        return;
    }
    kc_conn_req_spec_t s = {p->wire->api_key, (int16_t)v, (int16_t)v, hb_encode, hb_done, p};
    if (kc_conn_send(conn, &s, &e) != KC_OK) {
        kc_g848_on_heartbeat_failure(&p->gc, now, &e);
        return;
    }
    p->hb_inflight = true;
    p->hb_conn = conn;
    p->hb_sent_ms = now;
    kc_g848_heartbeat_sent(&p->gc, now);
}

/* ---- metadata: topic id → name -------------------------------------------------------------- */

static kc_err_t md_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    (void)opaque;
    kc_metadata_request_t m;
    kc_metadata_request_init(&m);
    m.topics.count = -1; /* all topics: a regex subscription names none */
    m.allow_auto_topic_creation = false;
    kc_error_t e;
    return kc_metadata_request_encode(&m, version, out, &e);
}

static void md_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    p848_t *p = opaque;
    p->md_inflight = false;
    if (p->e->closed) {
        kc_buf_unref(frame);
        return;
    }
    if (rc == KC_OK) {
        kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
        kc_arena_t a = {0};
        kc_error_t e;
        kc_metadata_response_t m;
        kc_gtopic_name_t *names = NULL;
        if (kc_metadata_response_decode(&m, version, &r, &a, &e) == KC_OK && m.topics.count > 0)
            names = kc_arena_calloc(&a, (size_t)m.topics.count, sizeof *names);
        size_t n = 0;
        for (int32_t i = 0; names && i < m.topics.count; i++) {
            const kc_metadata_response_topic_t *t = &m.topics.items[i];
            if (t->error_code == 0 && t->name.len > 0)
                names[n++] = (kc_gtopic_name_t){t->topic_id.b, t->name.ptr, (size_t)t->name.len};
        }
        /* out of memory: the names missing are asked for again (kc_g848_on_metadata) */
        (void)kc_gtopics_set_names(&p->gc.interned, names, n);
        kc_arena_free(&a);
        kc_buf_unref(frame);
    }
    /* A topic just created may not be in this answer yet: the state machine asks again. */
    kc_g848_on_metadata(&p->gc, kc_now_ms());
    kc_group_drive(p->grp);
}

static void md_send(p848_t *p)
{
    if (p->md_inflight)
        return;
    kc_conn_t *conn = kc_eng_any_conn(p->e);
    kc_conn_req_spec_t s = {KC_METADATA_REQUEST_API_KEY, 9, 12, md_encode, md_done, p};
    if (!conn || kc_conn_send(conn, &s, NULL) != KC_OK) {
        kc_g848_on_metadata(&p->gc, kc_now_ms()); /* asks again after a while */
        return;
    }
    p->md_inflight = true;
}

/* ---- the group's session timeout: DescribeConfigs ------------------------------------------ */

static kc_err_t dc_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    p848_t *p = opaque;
    kc_describe_configs_request_t q;
    kc_describe_configs_request_init(&q);
    kc_str_t key = kc_str(p->wire->session_config);
    kc_describe_configs_request_describe_configs_resource_t res = {
        .resource_type = RESOURCE_TYPE_GROUP, .resource_name = kc_str(group_of(p))};
    res.configuration_keys.count = 1;
    res.configuration_keys.items = &key;
    q.resources.count = 1;
    q.resources.items = &res;
    kc_error_t e;
    return kc_describe_configs_request_encode(&q, version, out, &e);
}

/* The session timeout from one DescribeConfigs answer, -1 with *why set when it has none. */
static int64_t dc_session(const kc_describe_configs_response_t *m, const char *group,
                          const char *name, kc_error_t *why)
{
    for (int32_t i = 0; i < m->results.count; i++) {
        const kc_describe_configs_response_describe_configs_result_t *r = &m->results.items[i];
        if (r->error_code) {
            kc_fail_kafka(why, r->error_code, "DescribeConfigs of group %s", group);
            return -1;
        }
        for (int32_t j = 0; j < r->configs.count; j++) {
            const kc_describe_configs_response_describe_configs_resource_result_t *c =
                &r->configs.items[j];
            if (c->name.len != (int32_t)strlen(name) ||
                memcmp(c->name.ptr, name, (size_t)c->name.len) != 0 || c->value.len <= 0 ||
                c->value.len > 18)
                continue;
            char num[20];
            memcpy(num, c->value.ptr, (size_t)c->value.len);
            num[c->value.len] = '\0';
            char *end;
            long long v = strtoll(num, &end, 10);
            if (*end == '\0' && v > 0)
                return v;
        }
    }
    kc_fail(why, KC_ERR_NOT_FOUND, "DescribeConfigs of group %s: no %s", group, name);
    return -1;
}

static void dc_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    p848_t *p = opaque;
    p->dc_inflight = false;
    if (p->e->closed) {
        kc_buf_unref(frame);
        return;
    }
    int64_t now = kc_now_ms(), v = -1;
    kc_error_t why;
    if (rc != KC_OK) {
        kc_fail(&why, rc, "DescribeConfigs of group %s: %s", group_of(p), kc_err_name(rc));
    } else {
        kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
        kc_arena_t a = {0};
        kc_describe_configs_response_t m;
        if (kc_describe_configs_response_decode(&m, version, &r, &a, &why) == KC_OK)
            v = dc_session(&m, group_of(p), p->wire->session_config, &why);
        kc_arena_free(&a);
        kc_buf_unref(frame);
    }
    if (v > 0) {
        if (v != p->session_ms)
            kc_log(KC_LOG_DEBUG, "group848", "group %s: %s is %lld ms", group_of(p),
                   p->wire->session_config, (long long)v);
        p->session_ms = v;
        p->dc_from_broker = true;
        p->dc_next_ms = now + SESSION_REFRESH_MS;
    } else {
        /* Not fatal: the member runs with the configured value (an older broker, no
         * DescribeConfigs permission on the group). Said once; asked again later. */
        if (!p->dc_reported)
            kc_log(KC_LOG_INFO, "group848",
                   "group %s: %s; the self-fence assumes group.consumer.session.timeout.ms "
                   "(%lld ms)",
                   group_of(p), why.msg, (long long)p->session_ms);
        p->dc_reported = true;
        p->dc_next_ms = now + (p->dc_from_broker ? SESSION_REFRESH_MS : SESSION_RETRY_MS);
    }
    kc_group_drive(p->grp);
}

/* Asks for the group's session timeout when due. */
static void dc_maybe_send(p848_t *p, int64_t now)
{
    if (p->dc_inflight || now < p->dc_next_ms || kc_group_closing(p->grp) ||
        !p->wire->session_config || !(p->conf->self_fence_ratio > 0))
        return;
    kc_conn_t *conn = kc_eng_any_conn(p->e);
    kc_conn_req_spec_t s = {KC_DESCRIBE_CONFIGS_REQUEST_API_KEY,
                            KC_DESCRIBE_CONFIGS_REQUEST_MIN_VERSION,
                            KC_DESCRIBE_CONFIGS_REQUEST_MAX_VERSION,
                            dc_encode,
                            dc_done,
                            p};
    if (!conn || kc_conn_state(conn) != KC_CONN_READY) {
        p->dc_next_ms = now + 100; /* the bootstrap connection is still being set up */
        return;
    }
    if (kc_conn_pick_version(conn, KC_DESCRIBE_CONFIGS_REQUEST_API_KEY,
                             KC_DESCRIBE_CONFIGS_REQUEST_MIN_VERSION,
                             KC_DESCRIBE_CONFIGS_REQUEST_MAX_VERSION) < 0) {
        if (!p->dc_reported)
            kc_log(KC_LOG_INFO, "group848",
                   "group %s: the broker does not speak DescribeConfigs; the self-fence assumes "
                   "group.consumer.session.timeout.ms (%lld ms)",
                   group_of(p), (long long)p->session_ms);
        p->dc_reported = true;
        p->dc_next_ms = now + SESSION_REFRESH_MS;
        return;
    }
    if (kc_conn_send(conn, &s, NULL) != KC_OK) {
        p->dc_next_ms = now + SESSION_RETRY_MS;
        return;
    }
    p->dc_inflight = true;
}

/* ---- the protocol interface ----------------------------------------------------------------- */

kc_err_t kc_g848_proto_create(void **out, kc_group_t *grp, const kc_g848_wire_t *wire,
                              bool commit_on_revoke, kc_error_t *err)
{
    p848_t *p = calloc(1, sizeof *p);
    if (!p)
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    p->wire = wire;
    p->grp = grp;
    p->e = kc_group_engine(grp);
    p->conf = kc_group_config(grp);
    p->session_ms = p->conf->consumer_session_timeout_ms;
    kc_g848_config_t c = {0};
    c.group_id = p->conf->group_id;
    c.group_instance_id = p->conf->group_instance_id;
    c.rack_id = p->conf->rack_id;
    c.server_assignor = p->conf->server_assignor;
    c.rebalance_timeout_ms = p->conf->rebalance_timeout_ms;
    c.commit_on_revoke = commit_on_revoke;
    c.commit_timeout_ms = p->conf->commit_timeout_ms;
    c.coordinator_timeout_ms = p->conf->coordinator_timeout_ms;
    c.retry_backoff_ms = p->e->conf.retry_backoff_ms;
    c.retry_backoff_max_ms = p->e->conf.retry_backoff_max_ms;
    c.lookup = lookup;
    c.lookup_ctx = p;
    kc_err_t rc = kc_g848_init(&p->gc, &c, err);
    if (rc != KC_OK) {
        free(p);
        return rc;
    }
    *out = p;
    return KC_OK;
}

static kc_err_t p_create(void **out, kc_group_t *grp, kc_error_t *err)
{
    return kc_g848_proto_create(out, grp, &kc_g848_wire, kc_group_config(grp)->commit_on_revoke,
                                err);
}

void kc_g848_p_destroy(void *m)
{
    p848_t *p = m;
    kc_g848_free(&p->gc);
    free(p);
}

kc_err_t kc_g848_p_subscribe(void *m, const char *const *topics, size_t n, const char *regex,
                             kc_error_t *err)
{
    p848_t *p = m;
    if (regex && !p->wire->regex)
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "group %s: %s has no regular-expression subscription (got '%s')",
                       group_of(p), p->wire->api, regex);
    return kc_g848_subscribe(&p->gc, topics, (int32_t)n, regex, kc_now_ms(), err);
}

void kc_g848_p_step(void *m, int64_t now)
{
    p848_t *p = m;
    kc_g848_tick(&p->gc, now);
}

/* The action's partitions by name; a topic id metadata has not named yet is left out (the
 * member holds such partitions back until it is known). Out of memory: none, and the step
 * completes with nothing done. */
static void by_name(p848_t *p, const kc_tpset_t *s, kc_group_action_t *out)
{
    kc_group_tp_t *parts = kc_group_parts(p->grp, s->n);
    out->parts = parts;
    out->n = 0;
    for (size_t i = 0; parts && i < s->n; i++) {
        const char *t = s->items[i].topic->name;
        if (t)
            parts[out->n++] = (kc_group_tp_t){t, s->items[i].partition};
    }
}

bool kc_g848_p_next_action(void *m, int64_t now, kc_group_action_t *out)
{
    p848_t *p = m;
    kc_g848_action_t a;
    while (kc_g848_next_action(&p->gc, now, &a)) {
        memset(out, 0, sizeof *out);
        out->seq = a.seq;
        switch (a.kind) {
        case KC_G848_ACT_REVOKE:
            out->kind = KC_GROUP_ACT_REVOKE;
            break;
        case KC_G848_ACT_LOSE:
            out->kind = KC_GROUP_ACT_LOSE;
            break;
        case KC_G848_ACT_DROP:
            out->kind = KC_GROUP_ACT_DROP;
            break;
        case KC_G848_ACT_ASSIGN:
            out->kind = KC_GROUP_ACT_ASSIGN;
            break;
        case KC_G848_ACT_COMMIT:
            out->kind = KC_GROUP_ACT_COMMIT;
            if (kc_g848_commit_identity(&p->gc, &out->who, NULL) != KC_OK) {
                /* No epoch to commit under: nothing can be committed, the step is over. */
                kc_g848_on_commit_result(&p->gc, a.seq, 0, now);
                continue;
            }
            break;
        case KC_G848_ACT_REDISCOVER:
            kc_group_counters(p->grp)->rediscoveries++;
            kc_engine_coord_invalidate(p->e, group_of(p));
            find_start(p);
            continue;
        case KC_G848_ACT_METADATA:
            md_send(p);
            continue;
        case KC_G848_ACT_ERROR:
            kc_group_counters(p->grp)->last_error_code = a.error.kafka_code;
            kc_group_report(p->grp, &a.error, a.fatal);
            continue;
        default:
            continue;
        }
        by_name(p, a.parts, out);
        return true;
    }
    return false;
}

void kc_g848_p_action_done(void *m, uint64_t seq, int64_t now)
{
    p848_t *p = m;
    kc_g848_action_done(&p->gc, seq, now);
}

void kc_g848_p_commit_result(void *m, uint64_t seq, int16_t code, int64_t now)
{
    p848_t *p = m;
    kc_g848_on_commit_result(&p->gc, seq, code, now);
}

void kc_g848_p_finish(void *m, int64_t now)
{
    p848_t *p = m;
    maybe_heartbeat(p, now);
    dc_maybe_send(p, now);
}

int64_t kc_g848_p_next_wakeup(void *m, int64_t now)
{
    p848_t *p = m;
    return kc_g848_next_wakeup(&p->gc, now);
}

static void p_commits_in_flight(void *m, bool in_flight, int64_t now)
{
    kc_g848_commits_in_flight(&((p848_t *)m)->gc, in_flight, now);
}

void kc_g848_p_poll_expired(void *m, bool expired, int64_t now)
{
    p848_t *p = m;
    if (expired)
        kc_g848_poll_expired(&p->gc, now);
    else
        kc_g848_poll_resumed(&p->gc, now);
}

void kc_g848_p_close(void *m, int64_t now)
{
    p848_t *p = m;
    kc_g848_close(&p->gc, now);
}

void kc_g848_p_unsubscribe(void *m, int64_t now)
{
    p848_t *p = m;
    kc_g848_unsubscribe(&p->gc, now);
}

bool kc_g848_p_closed(const void *m)
{
    const p848_t *p = m;
    return (p->gc.state == KC_G848_UNSUBSCRIBED || p->gc.state == KC_G848_FATAL) && !p->hb_inflight;
}

kc_err_t kc_g848_p_identity(void *m, kc_commit_identity_t *who, kc_error_t *err)
{
    p848_t *p = m;
    if (kc_group_closing(p->grp) && p->gc.epoch <= 0)
        return kc_fail(err, KC_ERR_STATE, "group %s: the member has left the group", group_of(p));
    return kc_g848_commit_identity(&p->gc, who, err);
}

bool kc_g848_p_stable(const void *m)
{
    const p848_t *p = m;
    return p->gc.state == KC_G848_STABLE;
}

int64_t kc_g848_p_session_ms(const void *m)
{
    return ((const p848_t *)m)->session_ms;
}

/* The configured ratio, raised for the heartbeat interval the coordinator gave
 * (group/self_fence.h). */
double kc_g848_p_fence_ratio(const void *m)
{
    const p848_t *p = m;
    if (!p->wire->session_config)
        return 0;
    return kc_self_fence_ratio(p->conf->self_fence_ratio, p->session_ms, p->gc.interval_ms);
}

bool kc_g848_p_fence_applies(const void *m)
{
    const p848_t *p = m;
    return p->gc.rc.held.n > 0 && p->gc.state != KC_G848_UNSUBSCRIBED &&
           p->gc.state != KC_G848_FATAL;
}

int32_t kc_g848_p_epoch(const void *m)
{
    return ((const p848_t *)m)->gc.epoch;
}

const char *kc_g848_p_member_id(const void *m)
{
    return ((const p848_t *)m)->gc.member_id;
}

int32_t kc_g848_p_coordinator(const void *m)
{
    const p848_t *p = m;
    return kc_engine_coord_node(p->e, group_of(p));
}

void kc_g848_p_stats_head(const void *m, kc_json_t *w)
{
    const p848_t *p = m;
    kc_json_raw(w, "\"state\":");
    kc_json_str(w, kc_g848_state_name(p->gc.state));
    kc_json_raw(w, ",\"member_id\":");
    kc_json_str(w, p->gc.member_id);
    kc_json_raw(w, ",\"epoch\":%d,\"assignment\":[", (int)p->gc.epoch);
    const kc_tpset_t *o = kc_g848_owned(&p->gc);
    for (size_t i = 0; i < o->n; i++) {
        const char *t = o->items[i].topic->name;
        kc_json_lit(w, i ? ",[" : "[");
        kc_json_str(w, t ? t : "?");
        kc_json_field(w, ",", o->items[i].partition);
        kc_json_lit(w, "]");
    }
    kc_json_raw(w, "]");
}

void kc_g848_p_stats_extra(const void *m, kc_json_t *w)
{
    const p848_t *p = m;
    kc_json_raw(
        w, ",\"session_timeout_ms\":%lld,\"session_timeout_source\":", (long long)p->session_ms);
    kc_json_str(w, p->dc_from_broker ? "group" : "config");
}
const kc_group_proto_t kc_g848_proto = {
    .name = "consumer",
    .epoch_name = "epoch",
    .create = p_create,
    .destroy = kc_g848_p_destroy,
    .subscribe = kc_g848_p_subscribe,
    .step = kc_g848_p_step,
    .next_action = kc_g848_p_next_action,
    .action_done = kc_g848_p_action_done,
    .commit_result = kc_g848_p_commit_result,
    .finish = kc_g848_p_finish,
    .next_wakeup = kc_g848_p_next_wakeup,
    .poll_expired = kc_g848_p_poll_expired,
    .commits_in_flight = p_commits_in_flight,
    .close = kc_g848_p_close,
    .unsubscribe = kc_g848_p_unsubscribe,
    .closed = kc_g848_p_closed,
    .identity = kc_g848_p_identity,
    .offset_fetch_names_member = true,
    .app_commit_result = NULL,
    .stable = kc_g848_p_stable,
    .session_ms = kc_g848_p_session_ms,
    .fence_ratio = kc_g848_p_fence_ratio,
    .fence_applies = kc_g848_p_fence_applies,
    .epoch = kc_g848_p_epoch,
    .member_id = kc_g848_p_member_id,
    .coordinator = kc_g848_p_coordinator,
    .stats_head = kc_g848_p_stats_head,
    .stats_extra = kc_g848_p_stats_extra,
};
