/*
 * group.protocol=auto: the placeholder protocol that runs until the driver knows which protocol
 * the group gets (group.h states the rules). At subscribe it finds the group's coordinator and
 * reads two things there:
 *   - the coordinator connection's ApiVersions: without ConsumerGroupHeartbeat the broker has no
 *     KIP-848 (before Kafka 3.7), so classic;
 *   - DescribeGroups of the group: a classic group with members (Java or librdkafka consumers,
 *     other kconsume members on classic) stays classic, so that joining does not convert the
 *     group under them (a 4.x coordinator converts a classic group when a KIP-848 member joins
 *     it, and the classic members then rejoin as migrated members). A group that does not
 *     exist, is empty, or is a KIP-848 group gets KIP-848: for the last two Kafka answers
 *     DescribeGroups v0-5 with error 0, state Dead and no members (v6+: GROUP_ID_NOT_FOUND).
 *     A coordinator error (moving, loading) is asked again after a new lookup; another
 *     group-level error (no DescribeGroups permission) is logged and decides nothing against
 *     KIP-848, whose join then reports a refusal of its own.
 * A failed lookup or DescribeGroups is asked again after retry.backoff.ms, doubling (with
 * jitter) up to retry.backoff.max.ms, as every other group request: the common failure is the
 * first group of a fresh cluster, whose coordinator answers NOT_COORDINATOR until it has
 * created and loaded its __consumer_offsets partition, which takes a few hundred ms.
 * The driver may still fall back to classic later (group.c): a broker that lists the API but
 * does not run the protocol (3.7-3.9 without group.coordinator.rebalance.protocols=consumer)
 * answers the first heartbeat with UNSUPPORTED_VERSION.
 *
 * Owner: network thread. Answers arrive there; after the engine closed they are refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "base/clock.h"
#include "base/log.h"
#include "engine_int.h"
#include "group/group.h"
#include "proto/consumer_group_heartbeat.gen.h"
#include "proto/describe_groups.gen.h"
#include "proto/kafka_errors.h"

/* Owner: network thread. */
typedef struct chooser {
    kc_group_t *grp;
    kc_engine_t *e;
    const kc_group_conf_t *conf;
    bool subscribed, decided, describing, failure_logged;
    int failures; /* lookups, coordinator connections and DescribeGroups failed so far */
    int64_t retry_at;
} chooser_t;

static void decide(chooser_t *c, const kc_group_proto_t *p, const char *why)
{
    c->decided = true;
    kc_group_choose(c->grp, p, why);
}

/* When a failed lookup or DescribeGroups is asked again: after the failures-th backoff. */
static void back_off(chooser_t *c, int64_t now)
{
    const kc_engine_conf_t *ec = &c->e->conf;
    c->retry_at = now + kc_backoff_ms(ec->retry_backoff_ms, ec->retry_backoff_max_ms, ++c->failures,
                                      kc_backoff_rand(&c->e->rng));
}

/* A lookup or DescribeGroups that failed: said once, asked again after the backoff. */
static void failed(chooser_t *c, const char *what)
{
    if (!c->failure_logged)
        kc_log(KC_LOG_WARN, "group",
               "group %s: group.protocol=auto: %s; asking again after retry.backoff.ms (%lld "
               "ms), doubling up to retry.backoff.max.ms (the protocol is chosen once the "
               "coordinator answers)",
               c->conf->group_id, what, (long long)c->e->conf.retry_backoff_ms);
    c->failure_logged = true;
    back_off(c, kc_now_ms());
}

static bool coordinator_error(int16_t code)
{
    return code == KC_KAFKA_NOT_COORDINATOR || code == KC_KAFKA_COORDINATOR_NOT_AVAILABLE ||
           code == KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS;
}

static void found(void *m, kc_err_t rc, const kc_error_t *err)
{
    if (rc != KC_OK)
        failed(m, err ? err->msg : kc_err_name(rc));
}

static kc_err_t dg_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    chooser_t *c = opaque;
    kc_describe_groups_request_t d;
    kc_describe_groups_request_init(&d);
    kc_str_t id = kc_str(c->conf->group_id);
    d.groups.count = 1;
    d.groups.items = &id;
    kc_error_t e;
    return kc_describe_groups_request_encode(&d, version, out, &e);
}

static bool str_is(kc_str_t s, const char *c)
{
    return s.len == (int32_t)strlen(c) && memcmp(s.ptr, c, (size_t)s.len) == 0;
}

static void dg_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    chooser_t *c = opaque;
    c->describing = false;
    /* A chooser already decided (a regex subscription came meanwhile) or retired: the answer
     * decides nothing any more. */
    if (c->e->closed || c->decided || kc_group_member(c->grp) != c) {
        kc_buf_unref(frame);
        return;
    }
    bool ok = false;
    char why[200] = "DescribeGroups failed";
    if (rc == KC_OK) {
        kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
        kc_arena_t a = {0};
        kc_error_t e;
        kc_describe_groups_response_t m;
        if (kc_describe_groups_response_decode(&m, version, &r, &a, &e) == KC_OK &&
            m.groups.count == 1) {
            const kc_describe_groups_response_described_group_t *d = &m.groups.items[0];
            ok = !coordinator_error(d->error_code);
            if (!ok) {
                snprintf(why, sizeof why, "DescribeGroups: %s", kc_kafka_err_name(d->error_code));
                if (d->error_code != KC_KAFKA_COORDINATOR_LOAD_IN_PROGRESS)
                    kc_engine_coord_invalidate(c->e, c->conf->group_id);
            } else if (d->error_code && d->error_code != KC_KAFKA_GROUP_ID_NOT_FOUND) {
                kc_log(KC_LOG_WARN, "group",
                       "group %s: group.protocol=auto: DescribeGroups: %s; choosing KIP-848 "
                       "without knowing whether the group is a classic group",
                       c->conf->group_id, kc_kafka_err_name(d->error_code));
            }
            bool live = !str_is(d->group_state, "Empty") && !str_is(d->group_state, "Dead");
            if (!ok) {
                /* asked again below */
            } else if (d->error_code == 0 && str_is(d->protocol_type, "consumer") && live &&
                       d->members.count > 0) {
                char cls[200];
                snprintf(cls, sizeof cls,
                         "the group exists as a classic group with %d member(s), which "
                         "group.protocol=consumer would convert",
                         (int)d->members.count);
                decide(c, &kc_classic_proto, cls);
            } else {
                decide(c, &kc_g848_proto, "the group coordinator offers KIP-848");
            }
        }
        kc_arena_free(&a);
        kc_buf_unref(frame);
    }
    if (!ok)
        failed(c, why);
    kc_group_drive(c->grp);
}

static void c_step(void *m, int64_t now)
{
    chooser_t *c = m;
    if (!c->subscribed || c->decided || c->describing || kc_group_closing(c->grp) ||
        now < c->retry_at)
        return;
    kc_conn_t *conn = kc_engine_coord_conn(c->e, c->conf->group_id);
    if (!conn) {
        if (!kc_group_find_coordinator(c->grp, found))
            back_off(c, now);
        return;
    }
    if (kc_conn_state(conn) != KC_CONN_READY) {
        /* A coordinator that went away: after a failed attempt ask for it again. */
        if (kc_conn_failures(conn) > 0) {
            kc_engine_coord_invalidate(c->e, c->conf->group_id);
            back_off(c, now);
        }
        return;
    }
    if (kc_conn_pick_version(conn, KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY, 0, 1) < 0) {
        char why[200];
        snprintf(why, sizeof why,
                 "the group coordinator (broker %d) does not offer ConsumerGroupHeartbeat "
                 "(KIP-848)",
                 (int)kc_engine_coord_node(c->e, c->conf->group_id));
        decide(c, &kc_classic_proto, why);
        return;
    }
    if (kc_conn_pick_version(conn, KC_DESCRIBE_GROUPS_REQUEST_API_KEY, 0, 5) < 0) {
        /* Every Kafka release has it; a broker without it cannot hold a classic group either. */
        decide(c, &kc_g848_proto,
               "the group coordinator offers KIP-848 and no DescribeGroups (no classic group to "
               "keep)");
        return;
    }
    kc_conn_req_spec_t s = {KC_DESCRIBE_GROUPS_REQUEST_API_KEY, 0, 5, dg_encode, dg_done, c};
    if (kc_conn_send(conn, &s, NULL) == KC_OK)
        c->describing = true;
    else
        failed(c, "DescribeGroups could not be sent");
}

static kc_err_t c_create(void **out, kc_group_t *grp, kc_error_t *err)
{
    chooser_t *c = calloc(1, sizeof *c);
    if (!c)
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    c->grp = grp;
    c->e = kc_group_engine(grp);
    c->conf = kc_group_config(grp);
    *out = c;
    return KC_OK;
}

static void c_destroy(void *m)
{
    free(m);
}

static kc_err_t c_subscribe(void *m, const char *const *topics, size_t n, const char *regex,
                            kc_error_t *err)
{
    (void)topics, (void)n, (void)err;
    chooser_t *c = m;
    c->subscribed = true;
    /* A pattern is KIP-848's (the broker's RE2/J) unless classic was chosen explicitly: the
     * classic member matches POSIX extended syntax itself, and picking between the two dialects
     * by what the broker runs would let one subscription mean different topics on different
     * clusters. */
    if (regex)
        decide(c, &kc_g848_proto, "the subscription is a regular expression");
    return KC_OK;
}

static bool c_next_action(void *m, int64_t now, kc_group_action_t *a)
{
    (void)m, (void)now, (void)a;
    return false;
}

static void c_seq(void *m, uint64_t seq, int64_t now)
{
    (void)m, (void)seq, (void)now;
}

static void c_commit_result(void *m, uint64_t seq, int16_t code, int64_t now)
{
    (void)m, (void)seq, (void)code, (void)now;
}

static void c_now(void *m, int64_t now)
{
    (void)m, (void)now;
}

static int64_t c_next_wakeup(void *m, int64_t now)
{
    chooser_t *c = m;
    return c->retry_at > now ? c->retry_at : INT64_MAX;
}

static void c_poll_expired(void *m, bool expired, int64_t now)
{
    (void)m, (void)expired, (void)now;
}

static bool c_closed(const void *m)
{
    const chooser_t *c = m;
    return !c->describing;
}

static kc_err_t c_identity(void *m, kc_commit_identity_t *who, kc_error_t *err)
{
    (void)who;
    chooser_t *c = m;
    return kc_fail(err, KC_ERR_STATE, "group %s: not a member yet (choosing the group protocol)",
                   c->conf->group_id);
}

static bool c_false(const void *m)
{
    (void)m;
    return false;
}

static int64_t c_session_ms(const void *m)
{
    (void)m;
    return 0;
}

static double c_fence_ratio(const void *m)
{
    (void)m;
    return 0;
}

static int32_t c_epoch(const void *m)
{
    (void)m;
    return -1;
}

static const char *c_member_id(const void *m)
{
    (void)m;
    return "";
}

static int32_t c_coordinator(const void *m)
{
    const chooser_t *c = m;
    return kc_engine_coord_node(c->e, c->conf->group_id);
}

static void c_stats_head(const void *m, kc_json_t *w)
{
    (void)m;
    kc_json_raw(w, "\"state\":\"choosing\",\"member_id\":\"\",\"epoch\":-1,\"assignment\":[]");
}

static void c_stats_extra(const void *m, kc_json_t *w)
{
    (void)m, (void)w;
}

const kc_group_proto_t kc_group_auto_proto = {
    .name = "auto",
    .epoch_name = "epoch",
    .create = c_create,
    .destroy = c_destroy,
    .subscribe = c_subscribe,
    .step = c_step,
    .next_action = c_next_action,
    .action_done = c_seq,
    .commit_result = c_commit_result,
    .finish = c_now,
    .next_wakeup = c_next_wakeup,
    .poll_expired = c_poll_expired,
    .close = c_now,
    .unsubscribe = c_now, /* nothing joined yet; the driver forgets the subscription */
    .closed = c_closed,
    .identity = c_identity,
    .offset_fetch_names_member = false,
    .app_commit_result = NULL,
    .stable = c_false,
    .session_ms = c_session_ms,
    .fence_ratio = c_fence_ratio,
    .fence_applies = c_false,
    .epoch = c_epoch,
    .member_id = c_member_id,
    .coordinator = c_coordinator,
    .stats_head = c_stats_head,
    .stats_extra = c_stats_extra,
};
