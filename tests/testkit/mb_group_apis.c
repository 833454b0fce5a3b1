/*
 * kc-memory-broker: the group APIs on the wire (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
 * ConsumerGroupHeartbeat). Decodes with the generated codec, runs the transition of
 * mb_group.c / mb_g848.c under mb_t.lock, parks the connection on mb_t.group_cond where Kafka
 * parks the request (a JoinGroup until its round ends, a follower's SyncGroup until the leader's),
 * and encodes the answer while still holding the lock (it points into the group's state).
 *
 * Owner: the connection threads; shared state only under mb_t.lock.
 */
#include "mb.h"
#include "proto/kafka_errors.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One slice of waiting: short, so a stopping broker ends its parked threads promptly. */
static void park(mb_t *mb)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&mb->group_cond, &mb->lock, &ts);
}

/* Copies a string the group owns into the arena (parked threads outlive pointers into it). */
static kc_str_t arena_str(kc_arena_t *a, const char *s)
{
    if (!s)
        return KC_STR_NULL;
    size_t n = strlen(s);
    char *p = kc_arena_calloc(a, n + 1, 1);
    if (!p)
        return KC_STR_NULL;
    memcpy(p, s, n + 1);
    return (kc_str_t){p, (int32_t)n};
}

/* v5 SyncGroup: a protocol type/name that is sent must be the group's. */
static bool differs(kc_str_t sent, const char *ours)
{
    return sent.len >= 0 && ours &&
           ((size_t)sent.len != strlen(ours) || memcmp(sent.ptr, ours, (size_t)sent.len) != 0);
}

/* The group named by a request (created on first use); NULL when the table is full. */
static mbg_group_t *group_of(mb_t *mb, kc_str_t id)
{
    return mbg_find(mb, id.len >= 0 ? id : kc_str(""), true);
}

static kc_err_t join_group(mb_t *mb, int16_t v, kc_rbuf_t *rb, kc_wbuf_t *w, kc_arena_t *a,
                           kc_error_t *err)
{
    kc_join_group_request_t q;
    kc_err_t rc = kc_join_group_request_decode(&q, v, rb, a, err);
    if (rc != KC_OK)
        return rc;
    int n = q.protocols.count > 0 ? q.protocols.count : 0;
    kc_str_t *names = kc_arena_calloc(a, (size_t)n + 1, sizeof *names);
    kc_bytes_t *metas = kc_arena_calloc(a, (size_t)n + 1, sizeof *metas);
    if (!names || !metas)
        return kc_fail(err, KC_ERR_NOMEM, "JoinGroup");
    for (int i = 0; i < n; i++) {
        names[i] = q.protocols.items[i].name;
        metas[i] = q.protocols.items[i].metadata;
    }
    mbg_join_req_t jq = {.member_id = q.member_id,
                         .session_ms = q.session_timeout_ms,
                         .rebalance_ms = v >= 1 ? q.rebalance_timeout_ms : q.session_timeout_ms,
                         .protocol_type = q.protocol_type,
                         .n_protos = n,
                         .proto_names = names,
                         .proto_metas = metas,
                         .version = v};
    kc_join_group_response_t r;
    kc_join_group_response_init(&r);
    r.generation_id = -1;
    r.protocol_type = KC_STR_NULL;
    r.protocol_name = v >= 7 ? KC_STR_NULL : kc_str("");
    r.leader = kc_str("");
    r.member_id = q.member_id.len >= 0 ? q.member_id : kc_str("");
    r.members.count = 0;
    pthread_mutex_lock(&mb->lock);
    mbg_group_t *g = group_of(mb, q.group_id);
    mbg_member_t *m = NULL;
    r.error_code = g ? mbg_join(mb, g, &jq, kt_now_ms(), &m) : KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
    if (m)
        r.member_id = arena_str(a, m->id);
    if (r.error_code == 0) {
        /* Parked until the round ends; the member may be dropped meanwhile (LeaveGroup). */
        kc_str_t id = r.member_id;
        m->waiting++;
        while (!mb->stop && (m = mbg_member_find(g, id)) && m->join_gen < 0)
            park(mb);
        if (m) {
            m->waiting--;
            m->last_ms = kt_now_ms();
        }
        if (!m || m->join_gen < 0) {
            r.error_code = KC_KAFKA_UNKNOWN_MEMBER_ID;
        } else if (m->join_gen != g->generation) {
            r.error_code = KC_KAFKA_REBALANCE_IN_PROGRESS; /* a newer round already began */
        } else {
            r.generation_id = g->generation;
            r.protocol_type = v >= 7 ? arena_str(a, g->protocol_type) : KC_STR_NULL;
            r.protocol_name = arena_str(a, g->protocol_name);
            r.leader = arena_str(a, g->leader);
            if (g->leader && strcmp(g->leader, m->id) == 0) {
                r.members.items = kc_arena_calloc(a, (size_t)g->n + 1, sizeof *r.members.items);
                for (int i = 0; r.members.items && i < g->n; i++) {
                    const mbg_member_t *o = g->m[i];
                    if (o->pending || o->join_gen != g->generation)
                        continue;
                    kc_bytes_t meta = mbg_member_meta(g, o);
                    uint8_t *copy = kc_arena_calloc(a, (size_t)meta.len + 1, 1);
                    if (copy && meta.len)
                        memcpy(copy, meta.ptr, (size_t)meta.len);
                    r.members.items[r.members.count++] =
                        (kc_join_group_response_member_t){.member_id = arena_str(a, o->id),
                                                          .group_instance_id = KC_STR_NULL,
                                                          .metadata = {copy, meta.len}};
                }
            }
        }
    }
    pthread_cond_broadcast(&mb->group_cond);
    pthread_mutex_unlock(&mb->lock);
    if (r.error_code && r.protocol_name.len < 0 && v < 7)
        r.protocol_name = kc_str("");
    return kc_join_group_response_encode(&r, v, w, err);
}

static kc_err_t sync_group(mb_t *mb, int16_t v, kc_rbuf_t *rb, kc_wbuf_t *w, kc_arena_t *a,
                           kc_error_t *err)
{
    kc_sync_group_request_t q;
    kc_err_t rc = kc_sync_group_request_decode(&q, v, rb, a, err);
    if (rc != KC_OK)
        return rc;
    int n = q.assignments.count > 0 ? q.assignments.count : 0;
    mbg_assignment_t *as = kc_arena_calloc(a, (size_t)n + 1, sizeof *as);
    if (!as)
        return kc_fail(err, KC_ERR_NOMEM, "SyncGroup");
    for (int i = 0; i < n; i++)
        as[i] =
            (mbg_assignment_t){q.assignments.items[i].member_id, q.assignments.items[i].assignment};
    kc_sync_group_response_t r;
    kc_sync_group_response_init(&r);
    r.protocol_type = r.protocol_name = KC_STR_NULL;
    r.assignment = (kc_bytes_t){(const uint8_t *)"", 0};
    pthread_mutex_lock(&mb->lock);
    mbg_group_t *g = mbg_find(mb, q.group_id, false);
    if (!g) {
        r.error_code = KC_KAFKA_UNKNOWN_MEMBER_ID;
    } else if (v >= 5 && (differs(q.protocol_type, g->protocol_type) ||
                          differs(q.protocol_name, g->protocol_name))) {
        r.error_code = KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL;
    } else {
        bool wait = false;
        mbg_member_t *m = mbg_member_find(g, q.member_id);
        if (m)
            m->waiting++;
        r.error_code = mbg_sync(g, q.member_id, q.generation_id, as, n, kt_now_ms(), &wait);
        /* A follower waits for the leader's SyncGroup, or for the round to fail. */
        while (r.error_code == 0 && wait && !mb->stop) {
            park(mb);
            if (!mbg_member_find(g, q.member_id))
                r.error_code = KC_KAFKA_UNKNOWN_MEMBER_ID;
            else
                r.error_code = mbg_sync(g, q.member_id, q.generation_id, as, 0, kt_now_ms(), &wait);
        }
        if (!r.error_code && wait)
            r.error_code = KC_KAFKA_REBALANCE_IN_PROGRESS; /* stopping */
        if ((m = mbg_member_find(g, q.member_id))) {
            m->waiting--;
            m->last_ms = kt_now_ms();
        }
        if (r.error_code == 0 && m) {
            uint8_t *copy = kc_arena_calloc(a, (size_t)m->assignment_len + 1, 1);
            if (!copy) {
                pthread_mutex_unlock(&mb->lock);
                return kc_fail(err, KC_ERR_NOMEM, "SyncGroup response");
            }
            if (m->assignment_len)
                memcpy(copy, m->assignment, (size_t)m->assignment_len);
            r.assignment = (kc_bytes_t){copy, m->assignment_len};
            if (v >= 5) {
                r.protocol_type = arena_str(a, g->protocol_type);
                r.protocol_name = arena_str(a, g->protocol_name);
            }
        }
    }
    pthread_cond_broadcast(&mb->group_cond);
    pthread_mutex_unlock(&mb->lock);
    return kc_sync_group_response_encode(&r, v, w, err);
}

static kc_err_t heartbeat(mb_t *mb, int16_t v, kc_rbuf_t *rb, kc_wbuf_t *w, kc_arena_t *a,
                          kc_error_t *err)
{
    kc_heartbeat_request_t q;
    kc_err_t rc = kc_heartbeat_request_decode(&q, v, rb, a, err);
    if (rc != KC_OK)
        return rc;
    kc_heartbeat_response_t r;
    kc_heartbeat_response_init(&r);
    pthread_mutex_lock(&mb->lock);
    mbg_group_t *g = mbg_find(mb, q.group_id, false);
    r.error_code = g ? mbg_heartbeat(g, q.member_id, q.generation_id, kt_now_ms())
                     : KC_KAFKA_UNKNOWN_MEMBER_ID;
    pthread_mutex_unlock(&mb->lock);
    return kc_heartbeat_response_encode(&r, v, w, err);
}

static kc_err_t leave_group(mb_t *mb, int16_t v, kc_rbuf_t *rb, kc_wbuf_t *w, kc_arena_t *a,
                            kc_error_t *err)
{
    kc_leave_group_request_t q;
    kc_err_t rc = kc_leave_group_request_decode(&q, v, rb, a, err);
    if (rc != KC_OK)
        return rc;
    kc_leave_group_response_t r;
    kc_leave_group_response_init(&r);
    r.members.count = 0;
    pthread_mutex_lock(&mb->lock);
    mbg_group_t *g = mbg_find(mb, q.group_id, false);
    if (v < 3) {
        r.error_code = g ? mbg_leave(mb, g, q.member_id, kt_now_ms()) : KC_KAFKA_UNKNOWN_MEMBER_ID;
    } else {
        /* v3+ (KIP-345): a batch; each member answered on its own. */
        int n = q.members.count > 0 ? q.members.count : 0;
        r.members.items = kc_arena_calloc(a, (size_t)n + 1, sizeof *r.members.items);
        if (!r.members.items) {
            pthread_mutex_unlock(&mb->lock);
            return kc_fail(err, KC_ERR_NOMEM, "LeaveGroup response");
        }
        for (int i = 0; i < n; i++) {
            const kc_leave_group_request_member_identity_t *id = &q.members.items[i];
            r.members.items[i] = (kc_leave_group_response_member_response_t){
                .member_id = id->member_id,
                .group_instance_id = id->group_instance_id,
                .error_code =
                    g ? mbg_leave(mb, g, id->member_id, kt_now_ms()) : KC_KAFKA_UNKNOWN_MEMBER_ID};
        }
        r.members.count = n;
    }
    pthread_cond_broadcast(&mb->group_cond);
    pthread_mutex_unlock(&mb->lock);
    return kc_leave_group_response_encode(&r, v, w, err);
}

static kc_err_t consumer_group_heartbeat(mb_t *mb, int16_t v, kc_rbuf_t *rb, kc_wbuf_t *w,
                                         kc_arena_t *a, kc_error_t *err)
{
    kc_consumer_group_heartbeat_request_t q;
    kc_err_t rc = kc_consumer_group_heartbeat_request_decode(&q, v, rb, a, err);
    if (rc != KC_OK)
        return rc;
    kc_consumer_group_heartbeat_response_t r;
    kc_consumer_group_heartbeat_response_init(&r);
    r.error_message = KC_STR_NULL;
    r.member_id = q.member_id.len >= 0 ? q.member_id : KC_STR_NULL;
    r.member_epoch = q.member_epoch;
    r.heartbeat_interval_ms = MBG_848_HEARTBEAT_MS;
    r.has_assignment = false;
    pthread_mutex_lock(&mb->lock);
    mbg_group_t *g = group_of(mb, q.group_id);
    mbg_member_t *m = NULL;
    bool send = false;
    r.error_code = g ? mbg848_heartbeat(mb, g, &q, kt_now_ms(), &m, &send)
                     : KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
    if (r.error_code == 0 && m) {
        r.member_id = arena_str(a, m->id);
        r.member_epoch = m->epoch;
        if (send) {
            int32_t n = 0;
            int32_t *ps = kc_arena_calloc(a, (size_t)mb->partitions, sizeof *ps);
            kc_consumer_group_heartbeat_response_topic_partitions_t *t =
                kc_arena_calloc(a, 1, sizeof *t);
            if (!ps || !t) {
                pthread_mutex_unlock(&mb->lock);
                return kc_fail(err, KC_ERR_NOMEM, "ConsumerGroupHeartbeat response");
            }
            for (int32_t p = 0; p < mb->partitions; p++)
                if (m->assigned[p])
                    ps[n++] = p;
            t->topic_id = mb->topic_id;
            t->partitions.items = ps;
            t->partitions.count = n;
            r.has_assignment = true;
            r.assignment.topic_partitions.items = t;
            r.assignment.topic_partitions.count = n ? 1 : 0;
        }
    } else if (r.error_code) {
        r.member_epoch = 0;
        r.error_message = kc_str("kc-memory-broker");
    }
    pthread_cond_broadcast(&mb->group_cond);
    pthread_mutex_unlock(&mb->lock);
    return kc_consumer_group_heartbeat_response_encode(&r, v, w, err);
}

kc_err_t mb_group_handle(mb_t *mb, int16_t key, int16_t v, kc_rbuf_t *r, kc_wbuf_t *w,
                         kc_arena_t *a, kc_error_t *err)
{
    switch (key) {
    case KC_JOIN_GROUP_REQUEST_API_KEY:
        return join_group(mb, v, r, w, a, err);
    case KC_SYNC_GROUP_REQUEST_API_KEY:
        return sync_group(mb, v, r, w, a, err);
    case KC_HEARTBEAT_REQUEST_API_KEY:
        return heartbeat(mb, v, r, w, a, err);
    case KC_LEAVE_GROUP_REQUEST_API_KEY:
        return leave_group(mb, v, r, w, a, err);
    case KC_CONSUMER_GROUP_HEARTBEAT_REQUEST_API_KEY:
        return consumer_group_heartbeat(mb, v, r, w, a, err);
    }
    return kc_fail(err, KC_ERR_UNSUPPORTED, "api key %d", key);
}
