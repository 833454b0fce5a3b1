/*
 * The cluster questions (kc_topic_partitions, kc_query_watermarks[_list], kc_offsets_for_times,
 * kc_metadata: engine/query.h, asked on the network thread), the member id (kc_member_id,
 * kc_consumer_set_member_id), and what the consumer holds as lists the application frees
 * (kc_assignment, kc_subscription: one block each).
 *
 * Threads: the public calls run on app threads and block on a condition variable; the question
 * is started and answered on the network thread. The wait object is shared by both and freed by
 * whichever drops the last of its two references (the caller may give up at its timeout while
 * the answer is still coming). The member id is an atomic pointer to an immutable string;
 * replaced strings are kept until kc_destroy (ids change only on a rejoin: a handful per life),
 * so a reader never sees freed memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "consumer_int.h"
#include "proto/kafka_errors.h"
#include "query.h"

typedef struct qwait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs, done;
    kc_consumer_t *c;
    kc_engine_query_t q; /* its strings and lookups are the wait's own copies (below) */
    char **names;        /* q.topics: copied, so a caller that gave up may free its own */
    size_t n_names;
    kc_engine_lookup_t *lookups;
} qwait_t;

static void qw_unref(qwait_t *w)
{
    pthread_mutex_lock(&w->mu);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (last) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w->q.md);
        for (size_t i = 0; i < w->n_names; i++)
            free(w->names[i]);
        free(w->names);
        free(w->lookups);
        free(w);
    }
}

/* The wait's own copy of `name`, shared by every lookup of the same topic. */
static const char *intern(qwait_t *w, const char *name)
{
    /* Lists come grouped by topic (every partition of one, then the next): the last name first,
     * so 10,000 partitions of a few topics cost a comparison each, not a scan. */
    if (w->n_names && strcmp(w->names[w->n_names - 1], name) == 0)
        return w->names[w->n_names - 1];
    for (size_t i = 0; i < w->n_names; i++)
        if (strcmp(w->names[i], name) == 0)
            return w->names[i];
    char *s = strdup(name);
    if (!s)
        return NULL;
    w->names[w->n_names++] = s;
    return s;
}

/* Lookup i of w: the partition at `timestamp` (-2 earliest, -1 latest). false when out of
 * memory. */
static bool lookup_set(qwait_t *w, size_t i, const char *topic, int32_t partition,
                       int64_t timestamp)
{
    const char *name = intern(w, topic);
    if (name)
        w->lookups[i] =
            (kc_engine_lookup_t){.topic = name, .partition = partition, .timestamp = timestamp};
    return name != NULL;
}

static qwait_t *qw_new(kc_consumer_t *c, size_t n_topics, size_t n_lookups)
{
    qwait_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    size_t nn = n_topics + n_lookups;
    w->names = calloc(nn ? nn : 1, sizeof *w->names);
    w->lookups = calloc(n_lookups ? n_lookups : 1, sizeof *w->lookups);
    if (!w->names || !w->lookups) {
        free(w->names);
        free(w->lookups);
        free(w);
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    kc_cond_init_monotonic(&w->cv);
    w->refs = 1;
    w->c = c;
    w->q.lookups = w->lookups;
    w->q.rc = KC_OK;
    return w;
}

static void on_answer(void *opaque, kc_engine_query_t *q)
{
    (void)q;
    qwait_t *w = opaque;
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    qw_unref(w);
}

/* Network thread: starts the question; an error here is the answer. */
static void start(kc_loop_t *loop, void *arg)
{
    (void)loop;
    qwait_t *w = arg;
    kc_error_t err;
    kc_err_t rc = w->c->e ? kc_engine_query(w->c->e, &w->q, on_answer, w, &err)
                          : kc_fail(&err, KC_ERR_CLOSED, "consumer is closed");
    if (rc != KC_OK) {
        w->q.rc = rc;
        w->q.err = err;
        for (size_t i = 0; i < w->q.n_lookups; i++)
            w->q.lookups[i].rc = rc;
        on_answer(w, &w->q);
    }
}

/* Asks w's question and waits up to timeout_ms. KC_OK: w->q holds the answer (the caller still
 * holds its reference and drops it with qw_unref). Otherwise the error, and w is released. */
static kc_err_t ask(qwait_t *w, const char *fn, const char *what, int timeout_ms, kc_error_t *err)
{
    kc_consumer_t *c = w->c;
    kc_err_t g = kc_consumer_guard(c, fn, true, err);
    if (g == KC_OK && atomic_load_explicit(&c->phase, memory_order_relaxed) == KC_PHASE_CLOSED)
        g = kc_fail(err, KC_ERR_CLOSED, "consumer is closed");
    if (g != KC_OK) {
        qw_unref(w);
        return g;
    }
    /* The network thread answers by its deadline, with what its tries found so far; this wait
     * ends at the caller's. The margin between them is the time the answer may take to reach
     * this thread (a loaded machine: a tenth of the timeout, at most 250 ms), so that a question
     * refused until its end still reports why and not only that time ran out. */
    int64_t now = kc_now_ms();
    int64_t margin = timeout_ms / 10 < 250 ? timeout_ms / 10 : 250;
    w->q.deadline_ms = timeout_ms < 0 ? INT64_MAX : now + timeout_ms - margin;
    w->refs = 2; /* the caller's and the answer's */
    kc_netthread_call(c->nt, start, w);
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    int64_t ns = dl.tv_nsec + (int64_t)(timeout_ms < 0 ? 0 : timeout_ms % 1000) * 1000000;
    dl.tv_sec += (timeout_ms < 0 ? 0 : timeout_ms / 1000) + ns / 1000000000;
    dl.tv_nsec = ns % 1000000000;
    kc_err_t rc = KC_OK;
    pthread_mutex_lock(&w->mu);
    int to = 0;
    while (!w->done && !to)
        to = timeout_ms < 0 ? pthread_cond_wait(&w->cv, &w->mu) != 0
                            : pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT;
    if (!w->done)
        rc = kc_fail(err, KC_ERR_TIMEOUT, "no answer about %s within %d ms", what, timeout_ms);
    pthread_mutex_unlock(&w->mu);
    if (rc != KC_OK)
        qw_unref(w);
    return rc;
}

/* The Metadata question's own failure, else KC_OK. */
static kc_err_t md_result(const qwait_t *w, kc_error_t *err)
{
    if (w->q.rc != KC_OK && err)
        *err = w->q.err;
    return w->q.rc;
}

static const kc_metadata_topic_t *md_topic(const kc_metadata_t *md, const char *topic)
{
    for (size_t i = 0; md && i < md->n_topics; i++)
        if (strcmp(md->topics[i].name, topic) == 0)
            return &md->topics[i];
    return NULL;
}

KC_API kc_err_t kc_topic_partitions(kc_consumer_t *c, const char *topic, int32_t *count,
                                    int timeout_ms, kc_error_t *err)
{
    if (!c)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_topic_partitions: consumer is NULL");
    if (!topic || !*topic)
        return kc_fail(err, KC_ERR_INVALID_ARG, "query: topic is required");
    qwait_t *w = qw_new(c, 1, 0);
    if (!w || !intern(w, topic)) {
        if (w)
            qw_unref(w);
        return kc_fail(err, KC_ERR_NOMEM, "query: out of memory");
    }
    w->q.topics = (const char *const *)w->names;
    w->q.n_topics = 1;
    kc_err_t rc = ask(w, "kc_topic_partitions", topic, timeout_ms, err);
    if (rc != KC_OK)
        return rc;
    rc = md_result(w, err);
    const kc_metadata_topic_t *t = rc == KC_OK ? md_topic(w->q.md, topic) : NULL;
    if (rc != KC_OK) {
    } else if (!t || t->error_code == KC_KAFKA_UNKNOWN_TOPIC_OR_PARTITION) {
        rc = kc_fail(err, KC_ERR_NOT_FOUND, "topic %s is not known to the cluster", topic);
    } else if (t->error_code) {
        rc =
            kc_fail(err, KC_ERR_BROKER, "Metadata %s: %s", topic, kc_kafka_err_name(t->error_code));
        if (err)
            err->kafka_code = t->error_code;
    } else if (count) {
        *count = (int32_t)t->n_partitions;
    }
    qw_unref(w);
    return rc;
}

/* The first failed lookup as the call's error: which partition, why, and how many of the
 * caller's entries failed (`per` lookups each: two for a watermarks entry). */
static kc_err_t lookups_result(const qwait_t *w, const char *what, size_t per, kc_error_t *err)
{
    size_t failed = 0, first = 0, entries = w->q.n_lookups / per;
    for (size_t e = 0; e < entries; e++)
        for (size_t i = e * per; i < (e + 1) * per; i++)
            if (w->q.lookups[i].rc != KC_OK) {
                if (failed++ == 0)
                    first = i;
                break; /* one count per entry */
            }
    if (!failed)
        return KC_OK;
    const kc_engine_lookup_t *l = &w->q.lookups[first];
    if (w->q.rc != KC_OK && l->rc == w->q.rc) { /* it took the Metadata's failure */
        if (err)
            *err = w->q.err;
        return l->rc;
    }
    if (w->q.lookup_why.code == l->rc && l->rc != KC_OK)
        return kc_fail(err, l->rc, "%s %s[%d]: %s (%zu of %zu failed)", what, l->topic,
                       l->partition, w->q.lookup_why.msg, failed, entries);
    const char *why = l->kafka_code             ? kc_kafka_err_name(l->kafka_code)
                      : l->rc == KC_ERR_TIMEOUT ? "no answer within the timeout"
                                                : kc_err_name(l->rc);
    kc_err_t rc = kc_fail(err, l->rc, "%s %s[%d]: %s (%zu of %zu failed)", what, l->topic,
                          l->partition, why, failed, entries);
    if (err)
        err->kafka_code = l->kafka_code;
    return rc;
}

/* An error for every entry: no answer was had. */
static void watermarks_unanswered(kc_watermarks_t *qs, size_t n, kc_err_t rc)
{
    for (size_t i = 0; i < n; i++) {
        qs[i].low = qs[i].high = -1;
        qs[i].kafka_code = 0;
        qs[i].err = rc;
    }
}

/* The checks of a list call's arguments: the consumer, and each entry's topic and partition. */
static kc_err_t consumer_check(const char *fn, const kc_consumer_t *c, kc_error_t *err)
{
    return c ? KC_OK : kc_fail(err, KC_ERR_INVALID_ARG, "%s: consumer is NULL", fn);
}

static kc_err_t entry_check(const char *fn, size_t i, const char *topic, int32_t partition,
                            kc_error_t *err)
{
    return topic && *topic && partition >= 0
               ? KC_OK
               : kc_fail(err, KC_ERR_INVALID_ARG,
                         "%s: entry %zu needs a topic and a partition >= 0", fn, i);
}

/* Both watermark calls: `fn` names the one the application called (the callback-context refusal
 * says which). Entries already checked. */
static kc_err_t watermarks(kc_consumer_t *c, kc_watermarks_t *qs, size_t n, int timeout_ms,
                           const char *fn, kc_error_t *err);

KC_API kc_err_t kc_query_watermarks_list(kc_consumer_t *c, kc_watermarks_t *qs, size_t n,
                                         int timeout_ms, kc_error_t *err)
{
    if (n && !qs)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_query_watermarks_list: the list is NULL");
    kc_err_t rc = consumer_check("kc_query_watermarks_list", c, err);
    for (size_t i = 0; rc == KC_OK && i < n; i++)
        rc = entry_check("kc_query_watermarks_list", i, qs[i].topic, qs[i].partition, err);
    if (rc != KC_OK) {
        watermarks_unanswered(qs, n, rc); /* every entry says why it has no answer */
        return rc;
    }
    return n ? watermarks(c, qs, n, timeout_ms, "kc_query_watermarks_list", err) : KC_OK;
}

static kc_err_t watermarks(kc_consumer_t *c, kc_watermarks_t *qs, size_t n, int timeout_ms,
                           const char *fn, kc_error_t *err)
{
    /* Two lookups per entry, earliest then latest: the engine asks each leader once per round
     * for every partition it leads (engine/query.c). */
    qwait_t *w = n <= SIZE_MAX / 2 ? qw_new(c, 0, 2 * n) : NULL;
    for (size_t i = 0; w && i < n; i++)
        if (!lookup_set(w, 2 * i, qs[i].topic, qs[i].partition, -2) ||
            !lookup_set(w, 2 * i + 1, qs[i].topic, qs[i].partition, -1)) {
            qw_unref(w);
            w = NULL;
        }
    if (!w) {
        watermarks_unanswered(qs, n, KC_ERR_NOMEM);
        return kc_fail(err, KC_ERR_NOMEM, "%s: out of memory", fn);
    }
    w->q.n_lookups = 2 * n;
    kc_err_t rc = ask(w, fn, qs[0].topic, timeout_ms, err);
    if (rc != KC_OK) {
        watermarks_unanswered(qs, n, rc);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        const kc_engine_lookup_t *lo = &w->lookups[2 * i], *hi = &w->lookups[2 * i + 1];
        const kc_engine_lookup_t *bad = lo->rc != KC_OK ? lo : hi;
        qs[i].err = bad->rc;
        qs[i].kafka_code = bad->rc != KC_OK ? bad->kafka_code : 0;
        qs[i].low = bad->rc == KC_OK ? lo->offset : -1;
        qs[i].high = bad->rc == KC_OK ? hi->offset : -1;
    }
    rc = lookups_result(w, "ListOffsets", 2, err);
    qw_unref(w);
    return rc;
}

KC_API kc_err_t kc_query_watermarks(kc_consumer_t *c, const char *topic, int32_t partition,
                                    int64_t *low, int64_t *high, int timeout_ms, kc_error_t *err)
{
    if (!c)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_query_watermarks: consumer is NULL");
    if (!topic || !*topic)
        return kc_fail(err, KC_ERR_INVALID_ARG, "query: topic is required");
    if (partition < 0)
        return kc_fail(err, KC_ERR_INVALID_ARG, "query_watermarks: partition must be >= 0");
    kc_watermarks_t q = {.topic = topic, .partition = partition};
    kc_err_t rc = watermarks(c, &q, 1, timeout_ms, "kc_query_watermarks", err);
    if (rc == KC_OK) {
        if (low)
            *low = q.low;
        if (high)
            *high = q.high;
    }
    return rc;
}

/* An error for every entry: no answer was had. */
static void times_unanswered(kc_offset_time_t *qs, size_t n, kc_err_t rc)
{
    for (size_t i = 0; i < n; i++) {
        qs[i].err = rc;
        qs[i].offset = qs[i].record_timestamp = -1;
        qs[i].leader_epoch = -1;
        qs[i].kafka_code = 0;
    }
}

KC_API kc_err_t kc_offsets_for_times(kc_consumer_t *c, kc_offset_time_t *qs, size_t n,
                                     int timeout_ms, kc_error_t *err)
{
    if (n && !qs)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_offsets_for_times: the list is NULL");
    kc_err_t rc = consumer_check("kc_offsets_for_times", c, err);
    for (size_t i = 0; rc == KC_OK && i < n; i++) {
        rc = entry_check("kc_offsets_for_times", i, qs[i].topic, qs[i].partition, err);
        if (rc == KC_OK && qs[i].timestamp < 0)
            rc = kc_fail(err, KC_ERR_INVALID_ARG,
                         "kc_offsets_for_times: %s[%d]: timestamp %lld is negative", qs[i].topic,
                         qs[i].partition, (long long)qs[i].timestamp);
    }
    if (rc != KC_OK) {
        times_unanswered(qs, n, rc); /* every entry says why it has no answer */
        return rc;
    }
    if (n == 0)
        return KC_OK;
    qwait_t *w = qw_new(c, 0, n);
    for (size_t i = 0; w && i < n; i++)
        if (!lookup_set(w, i, qs[i].topic, qs[i].partition, qs[i].timestamp)) {
            qw_unref(w);
            w = NULL;
        }
    if (!w) {
        times_unanswered(qs, n, KC_ERR_NOMEM);
        return kc_fail(err, KC_ERR_NOMEM, "kc_offsets_for_times: out of memory");
    }
    w->q.n_lookups = n;
    rc = ask(w, "kc_offsets_for_times", qs[0].topic, timeout_ms, err);
    if (rc != KC_OK) {
        times_unanswered(qs, n, rc);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        const kc_engine_lookup_t *l = &w->lookups[i];
        qs[i].err = l->rc;
        qs[i].kafka_code = l->kafka_code;
        qs[i].offset = l->rc == KC_OK ? l->offset : -1;
        qs[i].record_timestamp = l->rc == KC_OK ? l->record_ts : -1;
        qs[i].leader_epoch = l->rc == KC_OK ? l->leader_epoch : -1;
    }
    rc = lookups_result(w, "offsets for times", 1, err);
    qw_unref(w);
    return rc;
}

KC_API kc_err_t kc_metadata(kc_consumer_t *c, const char *const *topics, size_t n, int timeout_ms,
                            kc_metadata_t **out, kc_error_t *err)
{
    if (!c || !out || (n && !topics))
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_metadata: consumer, topics or out is NULL");
    *out = NULL;
    for (size_t i = 0; i < n; i++)
        if (!topics[i] || !*topics[i])
            return kc_fail(err, KC_ERR_INVALID_ARG, "kc_metadata: topic %zu is empty", i);
    qwait_t *w = qw_new(c, n, 0);
    for (size_t i = 0; w && i < n; i++)
        if (!intern(w, topics[i])) {
            qw_unref(w);
            w = NULL;
        }
    if (!w)
        return kc_fail(err, KC_ERR_NOMEM, "kc_metadata: out of memory");
    w->q.topics = (const char *const *)w->names;
    w->q.n_topics = w->n_names;
    w->q.all_topics = n == 0;
    kc_err_t rc = ask(w, "kc_metadata", n ? topics[0] : "the cluster", timeout_ms, err);
    if (rc != KC_OK)
        return rc;
    rc = md_result(w, err);
    if (rc == KC_OK) {
        *out = w->q.md;
        w->q.md = NULL;
    }
    qw_unref(w);
    return rc;
}

KC_API void kc_topic_id_str(const uint8_t id[16], char out[23])
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;
    for (size_t i = 0; i < 16; i += 3) { /* 5 groups of 3 bytes, then 1 byte as 2 characters */
        uint32_t v = (uint32_t)id[i] << 16 | (i + 1 < 16 ? (uint32_t)id[i + 1] << 8 : 0) |
                     (i + 2 < 16 ? id[i + 2] : 0);
        size_t chars = i + 2 < 16 ? 4 : 2;
        for (size_t k = 0; k < chars; k++)
            out[o++] = b64[(v >> (18 - 6 * k)) & 63];
    }
    out[o] = '\0';
}

KC_API void kc_metadata_destroy(kc_metadata_t *md)
{
    free(md); /* one allocation (engine/query_metadata.c) */
}

/* ---- member id ----------------------------------------------------------------------------- */

typedef struct kc_old_id {
    struct kc_old_id *next;
    char *id;
} kc_old_id_t;

void kc_consumer_set_member_id(kc_consumer_t *c, const char *id)
{
    char *s = id && *id ? strdup(id) : NULL;
    char *old = atomic_exchange_explicit(&c->member_id, s, memory_order_acq_rel);
    if (old) {
        kc_old_id_t *o = malloc(sizeof *o);
        if (o) {
            o->id = old;
            pthread_mutex_lock(&c->ext_mu);
            o->next = c->old_ids;
            c->old_ids = o;
            pthread_mutex_unlock(&c->ext_mu);
        }
        /* on malloc failure the old string leaks rather than risk a reader's use after free */
    }
}

/* The header's contract: "" until a group module set an id (the CLI prints client.id then). */
KC_API kc_err_t kc_member_id(kc_consumer_t *c, char *buf, size_t len)
{
    if (!c || !buf || !len)
        return KC_ERR_INVALID_ARG;
    const char *id = atomic_load_explicit(&c->member_id, memory_order_acquire);
    size_t n = id ? strlen(id) : 0;
    buf[0] = '\0';
    if (n >= len)
        return KC_ERR_TOO_LARGE;
    memcpy(buf, id ? id : "", n + 1);
    return KC_OK;
}

kc_topic_partition_t *kc_consumer_tp_block(const kc_topic_partition_t *tps, size_t n)
{
    size_t bytes = n * sizeof *tps;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(tps[i].topic) + 1;
    kc_topic_partition_t *b = malloc(bytes ? bytes : 1);
    char *str = (char *)(b + n);
    for (size_t i = 0; b && i < n; i++) {
        size_t len = strlen(tps[i].topic) + 1;
        memcpy(str, tps[i].topic, len);
        b[i] = (kc_topic_partition_t){str, tps[i].partition, KC_OFFSET_INVALID};
        str += len;
    }
    return b;
}

char **kc_consumer_str_block(const char *const *s, size_t n)
{
    size_t bytes = n * sizeof(char *);
    for (size_t i = 0; i < n; i++)
        bytes += strlen(s[i]) + 1;
    char **b = malloc(bytes ? bytes : 1);
    char *str = (char *)(b + n);
    for (size_t i = 0; b && i < n; i++) {
        size_t len = strlen(s[i]) + 1;
        memcpy(str, s[i], len);
        b[i] = str;
        str += len;
    }
    return b;
}

KC_API kc_err_t kc_assignment(kc_consumer_t *c, kc_topic_partition_t **out, size_t *n,
                              kc_error_t *err)
{
    if (!c || !out || !n)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_assignment: bad arguments");
    *out = NULL;
    *n = 0;
    kc_ccall_t k = {.op = KC_COP_ASSIGNMENT};
    kc_err_t rc = kc_consumer_call(c, &k, err);
    if (rc == KC_OK) {
        *out = k.result;
        *n = (size_t)k.value;
    }
    return rc;
}

KC_API kc_err_t kc_subscription(kc_consumer_t *c, char ***out, size_t *n, kc_error_t *err)
{
    if (!c || !out || !n)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_subscription: bad arguments");
    *out = NULL;
    *n = 0;
    kc_ccall_t k = {.op = KC_COP_SUBSCRIPTION};
    kc_err_t rc = kc_consumer_call(c, &k, err);
    if (rc == KC_OK) {
        *out = k.result;
        *n = (size_t)k.value;
    }
    return rc;
}

void kc_consumer_ext_free(kc_consumer_t *c)
{
    free(atomic_load(&c->member_id));
    while (c->old_ids) {
        kc_old_id_t *o = c->old_ids;
        c->old_ids = o->next;
        free(o->id);
        free(o);
    }
    pthread_mutex_destroy(&c->ext_mu);
}
