/*
 * One-off Metadata and ListOffsets questions (query.h). A query object lives from
 * kc_engine_query until its callback ran: it is freed by whichever response handler finishes it
 * (the connection guarantees every request one answer: response, error, timeout or close).
 *
 * Owner: network thread (every function here runs there).
 */
#include <stdlib.h>
#include <string.h>

#include "conn_wire.h"
#include "engine_int.h"
#include "proto/kafka_errors.h"
#include "query.h"

typedef struct q {
    kc_engine_t *e;
    char *topic;
    int32_t partition;
    int pending; /* ListOffsets answers still to come */
    kc_engine_query_cb cb;
    void *opaque;
    kc_engine_query_result_t res;
} q_t;

typedef struct q_lo {
    q_t *q;
    int64_t ts; /* -2 earliest, -1 latest */
} q_lo_t;

static void finish(q_t *q)
{
    q->cb(q->opaque, &q->res);
    free(q->topic);
    free(q);
}

static void fail(q_t *q, kc_err_t rc, int16_t kcode, const char *what)
{
    if (q->res.rc != KC_OK)
        return; /* the first failure explains best */
    q->res.rc = kc_fail(&q->res.err, rc, "%s %s[%d]: %s", what, q->topic, q->partition,
                        kcode ? kc_kafka_err_name(kcode) : kc_err_name(rc));
    q->res.err.kafka_code = kcode;
}

/* A request that failed in the connection: a version refusal says which API and which
 * versions, an answer that did not decode which API, version and broker, each in the
 * connection's own text (the code alone would not tell a too-old or broken broker from anything
 * else). */
static void fail_conn(q_t *q, kc_conn_t *conn, kc_err_t rc, const char *what)
{
    if ((rc == KC_ERR_UNSUPPORTED || rc == KC_ERR_MALFORMED) && q->res.rc == KC_OK) {
        q->res.rc = kc_fail(&q->res.err, rc, "topic %s: %s", q->topic, kc_conn_refusal(conn)->msg);
        return;
    }
    fail(q, rc, 0, what);
}

/* An answer whose body did not decode: the API, version, broker and the decoder's reason. */
static void bad_body(q_t *q, const kc_conn_t *conn, int16_t api_key, int16_t version,
                     const kc_error_t *decode_err)
{
    if (q->res.rc != KC_OK)
        return; /* the first failure explains best */
    kc_error_t why;
    kc_wire_bad_answer(&why, kc_conn_peer(conn), api_key, version, decode_err->msg);
    q->res.rc = kc_fail(&q->res.err, why.code, "topic %s: %s", q->topic, why.msg);
}

static kc_err_t md_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    q_t *q = opaque;
    kc_metadata_request_t m;
    kc_metadata_request_init(&m);
    m.allow_auto_topic_creation = false;
    kc_metadata_request_topic_t t;
    memset(&t, 0, sizeof t);
    t.name = kc_str(q->topic);
    m.topics.count = 1;
    m.topics.items = &t;
    kc_error_t err;
    return kc_metadata_request_encode(&m, version, out, &err);
}

static kc_err_t lo_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    q_lo_t *l = opaque;
    kc_list_offsets_request_t m;
    kc_list_offsets_request_init(&m);
    m.replica_id = -1;
    m.isolation_level = l->q->e->conf.isolation_level;
    m.timeout_ms = l->q->e->conf.request_timeout_ms;
    kc_list_offsets_request_list_offsets_topic_t t;
    kc_list_offsets_request_list_offsets_partition_t p;
    memset(&t, 0, sizeof t);
    memset(&p, 0, sizeof p);
    t.name = kc_str(l->q->topic);
    p.partition_index = l->q->partition;
    p.current_leader_epoch = -1;
    p.timestamp = l->ts;
    t.partitions.count = 1;
    t.partitions.items = &p;
    m.topics.count = 1;
    m.topics.items = &t;
    kc_error_t err;
    return kc_list_offsets_request_encode(&m, version, out, &err);
}

static void lo_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    q_lo_t *l = opaque;
    q_t *q = l->q;
    int found = 0;
    if (rc != KC_OK) {
        fail_conn(q, conn, rc, "ListOffsets");
    } else {
        kc_arena_t a = {0};
        kc_error_t err;
        kc_list_offsets_response_t m;
        kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
        if (kc_list_offsets_response_decode(&m, version, &r, &a, &err) != KC_OK) {
            bad_body(q, conn, KC_LIST_OFFSETS_REQUEST_API_KEY, version, &err);
        } else {
            for (int32_t t = 0; t < m.topics.count; t++)
                for (int32_t j = 0; j < m.topics.items[t].partitions.count; j++) {
                    const kc_list_offsets_response_list_offsets_partition_response_t *rp =
                        &m.topics.items[t].partitions.items[j];
                    if (rp->partition_index != q->partition)
                        continue;
                    found = 1;
                    if (rp->error_code)
                        fail(q, KC_ERR_BROKER, rp->error_code, "ListOffsets");
                    else if (l->ts == -2)
                        q->res.low = rp->offset;
                    else
                        q->res.high = rp->offset;
                }
            if (!found)
                fail(q, KC_ERR_MALFORMED, 0, "ListOffsets (partition missing from the answer)");
        }
        kc_arena_free(&a);
    }
    kc_buf_unref(frame);
    free(l);
    if (--q->pending == 0)
        finish(q);
}

static int send_lo(q_t *q, kc_conn_t *c, int64_t ts)
{
    q_lo_t *l = calloc(1, sizeof *l);
    if (!l)
        return 0;
    l->q = q;
    l->ts = ts;
    kc_conn_req_spec_t spec = {KC_LIST_OFFSETS_REQUEST_API_KEY,
                               KC_ENG_LIST_OFFSETS_MIN,
                               KC_ENG_LIST_OFFSETS_MAX,
                               lo_encode,
                               lo_done,
                               l};
    kc_error_t err;
    kc_err_t rc = kc_conn_send(c, &spec, &err);
    if (rc != KC_OK) {
        if (rc == KC_ERR_UNSUPPORTED && q->res.rc == KC_OK)
            q->res.rc = kc_fail(&q->res.err, rc, "topic %s: %s", q->topic, err.msg);
        free(l);
        return 0;
    }
    q->pending++;
    return 1;
}

static void md_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    q_t *q = opaque;
    kc_engine_t *e = q->e;
    int32_t leader = -1;
    if (rc != KC_OK) {
        fail_conn(q, conn, rc, "Metadata");
        kc_buf_unref(frame);
        finish(q);
        return;
    }
    kc_arena_t a = {0};
    kc_error_t err;
    kc_metadata_response_t m;
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    if (kc_metadata_response_decode(&m, version, &r, &a, &err) != KC_OK) {
        bad_body(q, conn, KC_METADATA_REQUEST_API_KEY, version, &err);
    } else {
        char host[256];
        for (int32_t i = 0; !e->closed && i < m.brokers.count; i++) {
            const kc_metadata_response_broker_t *b = &m.brokers.items[i];
            size_t hl =
                b->host.len > 0 && (size_t)b->host.len < sizeof host ? (size_t)b->host.len : 0;
            memcpy(host, b->host.ptr, hl);
            host[hl] = '\0';
            kc_eng_broker_update(e, b->node_id, host, b->port);
        }
        const kc_metadata_response_topic_t *t = NULL;
        for (int32_t i = 0; i < m.topics.count && !t; i++)
            if ((size_t)(m.topics.items[i].name.len > 0 ? m.topics.items[i].name.len : 0) ==
                    strlen(q->topic) &&
                memcmp(m.topics.items[i].name.ptr, q->topic, strlen(q->topic)) == 0)
                t = &m.topics.items[i];
        if (!t || t->error_code == KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION) {
            q->res.rc = kc_fail(&q->res.err, KC_ERR_NOT_FOUND,
                                "topic %s is not known to the cluster", q->topic);
        } else if (t->error_code) {
            fail(q, KC_ERR_BROKER, t->error_code, "Metadata");
        } else {
            q->res.count = t->partitions.count > 0 ? t->partitions.count : 0;
            for (int32_t j = 0; j < t->partitions.count; j++)
                if (t->partitions.items[j].partition_index == q->partition)
                    leader = t->partitions.items[j].leader_id;
            if (q->partition >= 0 && q->partition >= q->res.count)
                q->res.rc = kc_fail(&q->res.err, KC_ERR_NOT_FOUND, "%s has %d partitions, no %d",
                                    q->topic, q->res.count, q->partition);
            else if (q->partition >= 0 && leader < 0)
                fail(q, KC_ERR_BROKER, KC_KAFKA_LEADER_NOT_AVAILABLE, "Metadata");
        }
    }
    kc_arena_free(&a);
    kc_buf_unref(frame);
    if (q->res.rc == KC_OK && q->partition >= 0) {
        kc_conn_t *c = e->closed ? NULL : kc_eng_broker_conn(e, leader);
        if (!c) {
            fail(q, KC_ERR_TRANSPORT, 0, "no connection to the leader of");
        } else {
            send_lo(q, c, -2);
            send_lo(q, c, -1);
            if (q->pending != 2)
                fail(q, KC_ERR_TRANSPORT, 0, "ListOffsets not sent for");
            if (q->pending)
                return; /* the last answer finishes */
        }
    }
    finish(q);
}

kc_err_t kc_engine_query(kc_engine_t *e, const char *topic, int32_t partition,
                         kc_engine_query_cb cb, void *opaque, kc_error_t *err)
{
    if (e->closing || e->closed)
        return kc_fail(err, KC_ERR_CLOSED, "engine is closing");
    kc_conn_t *c = kc_eng_any_conn(e);
    if (!c)
        return kc_fail(err, KC_ERR_TRANSPORT, "no connection for metadata");
    q_t *q = calloc(1, sizeof *q);
    if (!q || !(q->topic = strdup(topic))) {
        free(q);
        return kc_fail(err, KC_ERR_NOMEM, "query: out of memory");
    }
    q->e = e;
    q->partition = partition;
    q->cb = cb;
    q->opaque = opaque;
    q->res.low = q->res.high = -1;
    kc_conn_req_spec_t spec = {KC_METADATA_REQUEST_API_KEY,
                               KC_ENG_METADATA_MIN,
                               KC_ENG_METADATA_MAX,
                               md_encode,
                               md_done,
                               q};
    kc_err_t rc = kc_conn_send(c, &spec, err);
    if (rc != KC_OK) {
        free(q->topic);
        free(q);
    }
    return rc;
}
