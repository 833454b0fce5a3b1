/*
 * One-off Metadata and ListOffsets questions (query.h).
 *
 * A try is one Metadata request, then one ListOffsets request per (leader, round) for the
 * lookups still unanswered, where round r of a leader holds each topic-partition's r-th lookup
 * (a request names a partition once, and watermarks ask the same partition twice). When the last
 * request of a try is answered, a lookup is either final (answered, or a failure that asking
 * again cannot change) or retriable; retriable ones are asked again in a new try after
 * retry.backoff.ms (growing to retry.backoff.max.ms), while the next try can start before the
 * deadline. Their last failure is their answer otherwise.
 *
 * The deadline is kept even with requests in flight: a timer answers then with what the tries so
 * far found (each lookup's last failure, TIMEOUT for one never answered). The asker waits for the
 * answer only until that deadline, so an answer that came with the next response would reach it
 * too late and its reason would be lost.
 *
 * A query object lives from kc_engine_query until its callback ran and its last request was
 * answered: once answered (q->in is NULL), the question is the asker's again, and the responses
 * still to come only release what they hold. The engine keeps a list of the unanswered ones only
 * so that a close can answer those waiting for their next try; the connection answers every
 * request it took (response, error, timeout or close), so one with requests in flight is answered
 * (or released) through them.
 *
 * Owner: network thread (every function here runs there).
 */
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "base/clock.h"
#include "conn_wire.h"
#include "engine_int.h"
#include "proto/kafka_errors.h"
#include "query.h"

typedef struct kc_eng_query {
    kc_engine_t *e;
    kc_engine_query_t *in;
    kc_engine_query_cb cb;
    void *opaque;
    const char **topics; /* what Metadata asks for (borrowed strings); NULL with all_topics */
    size_t n_topics;
    uint8_t *final; /* per lookup: answered for good */
    int pending;    /* requests in flight this try */
    int tries;
    int md_retry;                      /* this try's Metadata failed retriably */
    kc_loop_timer_t timer;             /* the pause before the next try */
    kc_loop_timer_t deadline;          /* in->deadline_ms, armed while unanswered */
    struct kc_eng_query *next, **prev; /* e->queries */
} q_t;

typedef struct q_req {
    q_t *q;
    size_t n;
    size_t idx[]; /* lookups in this request, sorted by topic then partition */
} q_req_t;

static void try_start(q_t *q);

static void q_free(q_t *q)
{
    free(q->topics);
    free(q->final);
    free(q);
}

/* Answers the asker; the object stays until its requests in flight are answered (q_released). */
static void finish(q_t *q)
{
    if (q->next)
        q->next->prev = q->prev;
    *q->prev = q->next;
    kc_loop_timer_stop(q->e->loop, &q->timer);
    kc_loop_timer_stop(q->e->loop, &q->deadline);
    kc_engine_query_t *in = q->in;
    q->in = NULL;
    q->cb(q->opaque, in);
    if (q->pending == 0)
        q_free(q);
}

/* A response to an answered question: it only releases its request. True when q was answered. */
static int q_released(q_t *q)
{
    if (q->in)
        return 0;
    if (--q->pending == 0)
        q_free(q);
    return 1;
}

static int same_tp(const kc_engine_lookup_t *a, const kc_engine_lookup_t *b)
{
    return a->partition == b->partition && strcmp(a->topic, b->topic) == 0;
}

/* A wire string against a C string in strcmp's order (bytes as unsigned, a prefix first), so a
 * name from an answer can be searched for among names sorted with strcmp. */
static int str_cmp(kc_str_t s, const char *c)
{
    size_t n = strlen(c), sl = s.len > 0 ? (size_t)s.len : 0;
    int r = memcmp(s.ptr ? (const void *)s.ptr : "", c, sl < n ? sl : n);
    return r ? r : (sl > n) - (sl < n);
}

static int cstr_ptr_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void lk_fail(kc_engine_lookup_t *l, kc_err_t rc, int16_t kcode)
{
    l->rc = rc;
    l->kafka_code = kcode;
}

/* Failures that asking again cannot change, from the connection or the decoder: the broker does
 * not speak the API at a version we do, its answer does not decode (it offered that version, so
 * it would send the same bytes again), or the login was refused. */
static int conn_final(const q_t *q, kc_err_t rc)
{
    /* CLOSED is final only because the engine closes: a broker that moved has its connection
     * closed too, and the next try goes to its new address. A connection refused by TLS or
     * authentication refuses every request until it is restarted. */
    return rc == KC_ERR_UNSUPPORTED || rc == KC_ERR_MALFORMED || rc == KC_ERR_AUTH ||
           rc == KC_ERR_TLS || (rc == KC_ERR_CLOSED && q->e->closing);
}

/* Keeps the first explained lookup failure's text for the asker (which API, which versions or
 * which broker): a lookup itself holds only codes. */
static void lk_explain(q_t *q, kc_err_t rc, const kc_error_t *why)
{
    kc_engine_query_t *in = q->in;
    if (in->lookup_why.code == KC_OK && rc != KC_OK) {
        in->lookup_why = *why;
        in->lookup_why.code = rc;
    }
}

/* Whether asking again may change a lookup's answer. UNKNOWN_TOPIC_OR_PARTITION is retriable to
 * Java (metadata propagating after a create); here it is the answer "no such topic", as the
 * header promises, instead of a wait for the whole timeout. */
static int kafka_retriable(int16_t code)
{
    return code != KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION && kc_kafka_err_retriable(code);
}

/* Answers with what is known: a lookup never answered (its Metadata failed each time, or its
 * request is still in flight at the deadline) takes the Metadata's failure, else CLOSED or
 * TIMEOUT; every other lookup keeps its answer or its last failure. */
static void answer_now(q_t *q)
{
    kc_engine_query_t *in = q->in;
    if (in->rc == KC_OK && !in->md) /* its first Metadata request is still out */
        in->rc = kc_fail(&in->err, q->e->closing ? KC_ERR_CLOSED : KC_ERR_TIMEOUT,
                         "Metadata: no answer within the timeout");
    for (size_t i = 0; i < in->n_lookups; i++)
        if (!q->final[i] && in->lookups[i].rc == KC_OK)
            lk_fail(&in->lookups[i],
                    in->rc != KC_OK ? in->rc
                    : q->e->closing ? KC_ERR_CLOSED
                                    : KC_ERR_TIMEOUT,
                    0);
    finish(q);
}

static void try_end(q_t *q)
{
    kc_engine_t *e = q->e;
    kc_engine_query_t *in = q->in;
    /* A Metadata failure asking again cannot change ends the question, lookups and all. */
    int again = q->md_retry;
    for (size_t i = 0; in->rc == KC_OK && i < in->n_lookups && !again; i++)
        again = !q->final[i];
    int64_t pause = kc_backoff_ms(e->conf.retry_backoff_ms, e->conf.retry_backoff_max_ms, q->tries,
                                  kc_backoff_rand(&e->rng));
    if (again && !e->closing && kc_now_ms() + pause < in->deadline_ms) {
        kc_loop_timer_start(e->loop, &q->timer, pause);
        return;
    }
    answer_now(q);
}

static void req_done(q_t *q)
{
    if (--q->pending == 0)
        try_end(q);
}

static void on_deadline(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    answer_now((q_t *)((char *)t - offsetof(q_t, deadline)));
}

/* ---- ListOffsets -------------------------------------------------------------------------- */

static kc_err_t lo_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    q_req_t *r = opaque;
    kc_engine_query_t *in = r->q->in;
    if (!in) /* answered at its deadline while this waited for its connection: not sent */
        return KC_ERR_CLOSED;
    kc_list_offsets_request_t m;
    kc_list_offsets_request_init(&m);
    m.replica_id = -1;
    m.isolation_level = r->q->e->conf.isolation_level;
    m.timeout_ms = r->q->e->conf.request_timeout_ms;
    kc_list_offsets_request_list_offsets_topic_t *t = calloc(r->n, sizeof *t);
    kc_list_offsets_request_list_offsets_partition_t *p = calloc(r->n, sizeof *p);
    kc_err_t rc = KC_ERR_NOMEM;
    if (t && p) {
        int32_t nt = 0;
        for (size_t j = 0; j < r->n; j++) {
            const kc_engine_lookup_t *l = &in->lookups[r->idx[j]];
            if (j == 0 || strcmp(l->topic, in->lookups[r->idx[j - 1]].topic) != 0) {
                t[nt].name = kc_str(l->topic);
                t[nt].partitions.items = &p[j];
                nt++;
            }
            t[nt - 1].partitions.count++;
            p[j].partition_index = l->partition;
            p[j].current_leader_epoch = -1;
            p[j].timestamp = l->timestamp;
        }
        m.topics.count = nt;
        m.topics.items = t;
        kc_error_t err;
        rc = kc_list_offsets_request_encode(&m, version, out, &err);
    }
    free(t);
    free(p);
    return rc;
}

/* The request's lookup for (name, partition), or r->n: r->idx is sorted by topic then partition
 * and holds each topic-partition once (lookups_send), so a binary search finds it. */
static size_t req_find(const q_req_t *r, const kc_engine_lookup_t *lk, kc_str_t name,
                       int32_t partition)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const kc_engine_lookup_t *l = &lk[r->idx[mid]];
        int c = str_cmp(name, l->topic);
        if (c == 0)
            c = (partition > l->partition) - (partition < l->partition);
        if (c == 0)
            return mid;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return r->n;
}

static void lo_answer(q_req_t *r, const kc_list_offsets_response_t *m)
{
    q_t *q = r->q;
    kc_engine_query_t *in = q->in;
    uint8_t *seen = calloc(r->n, 1);
    if (!seen) {
        for (size_t j = 0; j < r->n; j++)
            lk_fail(&in->lookups[r->idx[j]], KC_ERR_NOMEM, 0); /* not final: asked again */
        return;
    }
    for (int32_t t = 0; t < m->topics.count; t++) {
        const kc_list_offsets_response_list_offsets_topic_response_t *mt = &m->topics.items[t];
        for (int32_t k = 0; k < mt->partitions.count; k++) {
            const kc_list_offsets_response_list_offsets_partition_response_t *rp =
                &mt->partitions.items[k];
            size_t j = req_find(r, in->lookups, mt->name, rp->partition_index);
            if (j < r->n && !seen[j]) {
                kc_engine_lookup_t *l = &in->lookups[r->idx[j]];
                seen[j] = 1;
                if (rp->error_code == 0) {
                    l->rc = KC_OK;
                    l->kafka_code = 0;
                    l->offset = rp->offset;
                    l->record_ts = rp->offset < 0 ? -1 : rp->timestamp;
                    l->leader_epoch = rp->leader_epoch;
                    q->final[r->idx[j]] = 1;
                } else {
                    lk_fail(l,
                            rp->error_code == KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION ? KC_ERR_NOT_FOUND
                                                                                  : KC_ERR_BROKER,
                            rp->error_code);
                    q->final[r->idx[j]] = !kafka_retriable(rp->error_code);
                }
            }
        }
    }
    for (size_t j = 0; j < r->n; j++)
        if (!seen[j]) { /* a broker that leaves a partition out would leave it out again */
            lk_fail(&in->lookups[r->idx[j]], KC_ERR_MALFORMED, 0);
            q->final[r->idx[j]] = 1;
        }
    free(seen);
}

static void lo_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    (void)conn;
    q_req_t *r = opaque;
    q_t *q = r->q;
    kc_engine_query_t *in = q->in;
    if (q_released(q)) {
        kc_buf_unref(frame);
        free(r);
        return;
    }
    if (rc == KC_OK) {
        kc_arena_t a = {0};
        kc_error_t err;
        kc_list_offsets_response_t m;
        kc_rbuf_t rb = kc_rbuf(frame->data + body_off, frame->len - body_off);
        if (kc_list_offsets_response_decode(&m, version, &rb, &a, &err) == KC_OK) {
            lo_answer(r, &m);
        } else {
            kc_error_t why;
            kc_wire_bad_answer(&why, kc_conn_peer(conn), KC_LIST_OFFSETS_REQUEST_API_KEY, version,
                               err.msg);
            lk_explain(q, KC_ERR_MALFORMED, &why);
            for (size_t j = 0; j < r->n; j++) {
                lk_fail(&in->lookups[r->idx[j]], KC_ERR_MALFORMED, 0);
                q->final[r->idx[j]] = 1;
            }
        }
        kc_arena_free(&a);
    } else {
        /* A version refusal or an undecodable answer cannot change by asking again; the
         * transport kinds can. */
        if (rc == KC_ERR_UNSUPPORTED || rc == KC_ERR_MALFORMED)
            lk_explain(q, rc, kc_conn_refusal(conn));
        for (size_t j = 0; j < r->n; j++) {
            lk_fail(&in->lookups[r->idx[j]], rc, 0);
            q->final[r->idx[j]] = conn_final(q, rc);
        }
    }
    kc_buf_unref(frame);
    free(r);
    req_done(q);
}

static void lo_send(q_t *q, int32_t leader, const size_t *idx, size_t n)
{
    kc_engine_query_t *in = q->in;
    q_req_t *r = malloc(sizeof *r + n * sizeof r->idx[0]);
    kc_conn_t *c = kc_eng_broker_conn(q->e, leader);
    kc_err_t rc = KC_ERR_NOMEM;
    if (r && c) {
        r->q = q;
        r->n = n;
        memcpy(r->idx, idx, n * sizeof idx[0]);
        kc_conn_req_spec_t spec = {KC_LIST_OFFSETS_REQUEST_API_KEY,
                                   KC_ENG_LIST_OFFSETS_MIN,
                                   KC_ENG_LIST_OFFSETS_MAX,
                                   lo_encode,
                                   lo_done,
                                   r};
        kc_error_t err;
        /* Counted before the send: a connection that fails while sending answers at once. */
        q->pending++;
        rc = kc_conn_send(c, &spec, &err);
        if (rc == KC_OK)
            return;
        q->pending--;
        lk_explain(q, rc, &err);
    } else if (r) {
        rc = KC_ERR_TRANSPORT; /* a leader the engine has no address for: metadata again */
    }
    free(r);
    for (size_t j = 0; j < n; j++) {
        lk_fail(&in->lookups[idx[j]], rc, 0);
        q->final[idx[j]] = conn_final(q, rc);
    }
}

/* ---- routing the unanswered lookups by the Metadata answer --------------------------------- */

typedef struct route {
    int32_t leader;
    size_t idx;
    const kc_engine_lookup_t *l;
} route_t;

static int route_cmp(const void *a, const void *b)
{
    const route_t *x = a, *y = b;
    if (x->leader != y->leader)
        return x->leader < y->leader ? -1 : 1;
    int c = strcmp(x->l->topic, y->l->topic);
    if (c)
        return c;
    if (x->l->partition != y->l->partition)
        return x->l->partition < y->l->partition ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The Metadata answer searched by name and partition: its topics sorted by name and its
 * partitions by (topic, id), built once per routing, so routing n lookups costs n log n rather
 * than a scan of every topic per lookup (10,000 topics: 10^8 comparisons on the network thread).
 * Ties keep the answer's order and a search finds the first, as a scan would. */
typedef struct md_part {
    size_t topic; /* index in md->topics */
    const kc_metadata_partition_t *p;
} md_part_t;

typedef struct md_find {
    const kc_metadata_t *md;
    const kc_metadata_topic_t **by_name;
    md_part_t *parts;
    size_t n_parts;
} md_find_t;

static const char *md_name(const kc_metadata_topic_t *t)
{
    return t->name ? t->name : "";
}

static int md_topic_cmp(const void *a, const void *b)
{
    const kc_metadata_topic_t *x = *(const kc_metadata_topic_t *const *)a;
    const kc_metadata_topic_t *y = *(const kc_metadata_topic_t *const *)b;
    int c = strcmp(md_name(x), md_name(y));
    return c ? c : (x > y) - (x < y);
}

static int md_part_cmp(const void *a, const void *b)
{
    const md_part_t *x = a, *y = b;
    if (x->topic != y->topic)
        return x->topic < y->topic ? -1 : 1;
    if (x->p->id != y->p->id)
        return x->p->id < y->p->id ? -1 : 1;
    return (x->p > y->p) - (x->p < y->p);
}

static void md_find_free(md_find_t *f)
{
    free(f->by_name);
    free(f->parts);
}

static int md_find_init(md_find_t *f, const kc_metadata_t *md)
{
    *f = (md_find_t){.md = md};
    size_t np = 0;
    for (size_t t = 0; t < md->n_topics; t++)
        np += md->topics[t].n_partitions;
    f->by_name = malloc((md->n_topics ? md->n_topics : 1) * sizeof *f->by_name);
    f->parts = malloc((np ? np : 1) * sizeof *f->parts);
    if (!f->by_name || !f->parts) {
        md_find_free(f);
        return -1;
    }
    for (size_t t = 0; t < md->n_topics; t++) {
        f->by_name[t] = &md->topics[t];
        for (size_t p = 0; p < md->topics[t].n_partitions; p++)
            f->parts[f->n_parts++] = (md_part_t){t, &md->topics[t].partitions[p]};
    }
    qsort(f->by_name, md->n_topics, sizeof *f->by_name, md_topic_cmp);
    qsort(f->parts, f->n_parts, sizeof *f->parts, md_part_cmp);
    return 0;
}

/* The first topic of the answer named `name`, or NULL. */
static const kc_metadata_topic_t *md_find_topic(const md_find_t *f, const char *name)
{
    size_t lo = 0, hi = f->md->n_topics;
    while (lo < hi) { /* the first whose name is not below `name` */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(md_name(f->by_name[mid]), name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->md->n_topics && strcmp(md_name(f->by_name[lo]), name) == 0 ? f->by_name[lo]
                                                                              : NULL;
}

/* The first partition `id` of topic index `t`, or NULL. */
static const kc_metadata_partition_t *md_find_part(const md_find_t *f, size_t t, int32_t id)
{
    size_t lo = 0, hi = f->n_parts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const md_part_t *x = &f->parts[mid];
        if (x->topic < t || (x->topic == t && x->p->id < id))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->n_parts && f->parts[lo].topic == t && f->parts[lo].p->id == id ? f->parts[lo].p
                                                                                  : NULL;
}

/* The lookup's leader from the answer, or -1 with the lookup failed (final or not). */
static int32_t leader_of(q_t *q, size_t i, const md_find_t *f)
{
    kc_engine_lookup_t *l = &q->in->lookups[i];
    const kc_metadata_topic_t *mt = md_find_topic(f, l->topic);
    if (!mt) {
        lk_fail(l, KC_ERR_NOT_FOUND, KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
        q->final[i] = 1;
        return -1;
    }
    if (mt->error_code) {
        lk_fail(l,
                mt->error_code == KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION ? KC_ERR_NOT_FOUND
                                                                      : KC_ERR_BROKER,
                mt->error_code);
        q->final[i] = !kafka_retriable(mt->error_code);
        return -1;
    }
    const kc_metadata_partition_t *p = md_find_part(f, (size_t)(mt - f->md->topics), l->partition);
    if (!p) {
        lk_fail(l, KC_ERR_NOT_FOUND, KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION);
        q->final[i] = 1;
        return -1;
    }
    if (p->leader >= 0)
        return p->leader;
    lk_fail(l, KC_ERR_BROKER, KC_KAFKA_LEADER_NOT_AVAILABLE);
    return -1;
}

static void lookups_send(q_t *q)
{
    kc_engine_query_t *in = q->in;
    route_t *rt = calloc(in->n_lookups ? in->n_lookups : 1, sizeof *rt);
    size_t *idx = calloc(in->n_lookups ? in->n_lookups : 1, sizeof *idx);
    uint8_t *used = calloc(in->n_lookups ? in->n_lookups : 1, 1);
    md_find_t f;
    int found = md_find_init(&f, in->md);
    if (!rt || !idx || !used || found != 0) {
        for (size_t i = 0; i < in->n_lookups; i++)
            if (!q->final[i]) {
                lk_fail(&in->lookups[i], KC_ERR_NOMEM, 0);
                q->final[i] = 1;
            }
        free(rt), free(idx), free(used);
        if (found == 0)
            md_find_free(&f);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < in->n_lookups; i++) {
        if (q->final[i])
            continue;
        int32_t leader = leader_of(q, i, &f);
        if (leader >= 0)
            rt[n++] = (route_t){leader, i, &in->lookups[i]};
    }
    md_find_free(&f);
    qsort(rt, n, sizeof *rt, route_cmp);
    /* One request per (leader, round): within a leader's run (sorted by topic-partition), each
     * pass takes the first unused lookup of every topic-partition. */
    for (size_t s = 0; s < n;) {
        size_t end = s;
        while (end < n && rt[end].leader == rt[s].leader)
            end++;
        for (size_t left = end - s; left > 0;) {
            size_t k = 0;
            const kc_engine_lookup_t *last = NULL;
            for (size_t j = s; j < end; j++) {
                if (used[j] || (last && same_tp(last, rt[j].l)))
                    continue;
                used[j] = 1;
                last = rt[j].l;
                idx[k++] = rt[j].idx;
            }
            lo_send(q, rt[s].leader, idx, k);
            left -= k;
        }
        s = end;
    }
    free(rt), free(idx), free(used);
}

/* ---- Metadata ------------------------------------------------------------------------------ */

static kc_err_t md_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    q_t *q = opaque;
    if (!q->in) /* as lo_encode: the asker's topic strings may be gone */
        return KC_ERR_CLOSED;
    kc_metadata_request_t m;
    kc_metadata_request_init(&m);
    m.allow_auto_topic_creation = false;
    kc_metadata_request_topic_t *t = NULL;
    if (q->topics) {
        t = calloc(q->n_topics ? q->n_topics : 1, sizeof *t);
        if (!t)
            return KC_ERR_NOMEM;
        for (size_t i = 0; i < q->n_topics; i++)
            t[i].name = kc_str(q->topics[i]);
        m.topics.count = (int32_t)q->n_topics;
        m.topics.items = t;
    } else {
        m.topics.count = -1; /* every topic */
    }
    kc_error_t err;
    kc_err_t rc = kc_metadata_request_encode(&m, version, out, &err);
    free(t);
    return rc;
}

static void md_fail(q_t *q, kc_conn_t *conn, kc_err_t rc, const char *why)
{
    kc_engine_query_t *in = q->in;
    if ((rc == KC_ERR_UNSUPPORTED || rc == KC_ERR_MALFORMED) && conn)
        in->rc = kc_fail(&in->err, rc, "%s", kc_conn_refusal(conn)->msg);
    else
        in->rc = kc_fail(&in->err, rc, "Metadata: %s", why);
}

static void md_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    q_t *q = opaque;
    kc_engine_t *e = q->e;
    kc_engine_query_t *in = q->in;
    if (q_released(q)) {
        kc_buf_unref(frame);
        return;
    }
    if (rc != KC_OK) {
        md_fail(q, conn, rc, kc_err_name(rc));
        q->md_retry = !conn_final(q, rc);
    } else {
        kc_arena_t a = {0};
        kc_error_t err;
        kc_metadata_response_t m;
        kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
        if (kc_metadata_response_decode(&m, version, &r, &a, &err) != KC_OK) {
            kc_error_t why;
            kc_wire_bad_answer(&why, kc_conn_peer(conn), KC_METADATA_REQUEST_API_KEY, version,
                               err.msg);
            in->rc = kc_fail(&in->err, KC_ERR_MALFORMED, "%s", why.msg);
        } else {
            kc_metadata_t *md = kc_eng_metadata_export(&m);
            if (!md) {
                md_fail(q, NULL, KC_ERR_NOMEM, "out of memory");
            } else {
                free(in->md); /* one allocation (query_metadata.c) */
                in->md = md;
                in->rc = KC_OK;
                /* Brokers the engine does not know yet are added (a lookup needs a connection
                 * to its leader); a known broker's address is the engine's own metadata's to
                 * change, with what a move entails (metadata.c). */
                for (size_t i = 0; !e->closing && i < md->n_brokers; i++)
                    if (!kc_eng_broker_get(e, md->brokers[i].id))
                        kc_eng_broker_update(e, md->brokers[i].id, md->brokers[i].host,
                                             md->brokers[i].port);
                if (!e->closing)
                    lookups_send(q);
            }
        }
        kc_arena_free(&a);
    }
    kc_buf_unref(frame);
    req_done(q);
}

static void try_start(q_t *q)
{
    kc_engine_t *e = q->e;
    q->tries++;
    q->md_retry = 0;
    q->pending = 1; /* this try, until its requests are all sent */
    kc_conn_t *c = e->closing ? NULL : kc_eng_any_conn(e);
    kc_error_t err;
    if (!c) {
        md_fail(q, NULL, e->closing ? KC_ERR_CLOSED : KC_ERR_TRANSPORT,
                e->closing ? "the consumer is closing" : "no connection to ask");
        q->md_retry = !e->closing;
    } else {
        kc_conn_req_spec_t spec = {KC_METADATA_REQUEST_API_KEY,
                                   KC_ENG_METADATA_MIN,
                                   KC_ENG_METADATA_MAX,
                                   md_encode,
                                   md_done,
                                   q};
        q->pending++; /* before the send: see lo_send */
        kc_err_t rc = kc_conn_send(c, &spec, &err);
        if (rc != KC_OK) {
            q->pending--;
            md_fail(q, NULL, rc, err.msg);
        }
        q->md_retry = rc != KC_OK && !conn_final(q, rc);
    }
    req_done(q);
}

static void on_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    q_t *q = (q_t *)((char *)t - offsetof(q_t, timer));
    try_start(q);
}

kc_err_t kc_engine_query(kc_engine_t *e, kc_engine_query_t *in, kc_engine_query_cb cb, void *opaque,
                         kc_error_t *err)
{
    if (e->closing || e->closed)
        return kc_fail(err, KC_ERR_CLOSED, "engine is closing");
    q_t *q = calloc(1, sizeof *q);
    size_t nl = in->n_lookups, nt = in->n_topics ? in->n_topics : nl;
    if (q) {
        q->final = calloc(nl ? nl : 1, 1);
        q->topics = in->all_topics && !in->n_topics ? NULL : calloc(nt ? nt : 1, sizeof(char *));
    }
    if (!q || !q->final || (!q->topics && !(in->all_topics && !in->n_topics))) {
        if (q)
            free(q->final), free(q->topics);
        free(q);
        return kc_fail(err, KC_ERR_NOMEM, "query: out of memory");
    }
    if (q->topics && in->n_topics) {
        memcpy(q->topics, in->topics, in->n_topics * sizeof(char *));
        q->n_topics = in->n_topics;
    } else if (q->topics) { /* the lookups' distinct topics, sorted to drop the repeats */
        for (size_t i = 0; i < nl; i++)
            q->topics[i] = in->lookups[i].topic;
        qsort(q->topics, nl, sizeof *q->topics, cstr_ptr_cmp);
        for (size_t i = 0; i < nl; i++)
            if (q->n_topics == 0 || strcmp(q->topics[q->n_topics - 1], q->topics[i]) != 0)
                q->topics[q->n_topics++] = q->topics[i];
    }
    for (size_t i = 0; i < nl; i++) {
        kc_engine_lookup_t *l = &in->lookups[i];
        l->rc = KC_OK;
        l->kafka_code = 0;
        l->offset = l->record_ts = -1;
        l->leader_epoch = -1;
    }
    in->rc = KC_OK;
    in->md = NULL;
    memset(&in->lookup_why, 0, sizeof in->lookup_why);
    q->e = e;
    q->in = in;
    q->cb = cb;
    q->opaque = opaque;
    q->timer.cb = on_timer;
    q->deadline.cb = on_deadline;
    q->next = e->queries;
    if (q->next)
        q->next->prev = &q->next;
    q->prev = &e->queries;
    e->queries = q;
    if (in->deadline_ms != INT64_MAX) {
        int64_t left = in->deadline_ms - kc_now_ms();
        kc_loop_timer_start(e->loop, &q->deadline, left > 0 ? left : 0);
    }
    try_start(q);
    return KC_OK;
}

void kc_eng_queries_close(kc_engine_t *e)
{
    for (q_t *q = e->queries, *next; q; q = next) {
        next = q->next;
        if (q->pending == 0 && kc_loop_timer_armed(&q->timer)) {
            kc_loop_timer_stop(e->loop, &q->timer);
            try_end(q); /* closing: no further try */
        }
    }
}
