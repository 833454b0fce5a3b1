/*
 * The public manual-assignment calls: each is a synchronous command onto the network thread
 * (consumer_int.h); the engine and the part table are touched only there.
 * Threads: any app thread (and, for seek/pause/resume, callback context: the network thread
 * never waits for a worker, so a worker blocking on it cannot deadlock).
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "consumer_int.h"

/* Resolves KC_OFFSET_STORED entries to the group's committed offsets (OffsetFetch) when
 * group.id is set; what has none keeps KC_OFFSET_STORED → auto.offset.reset. */
static kc_err_t resolve_stored(kc_consumer_t *c, kc_topic_partition_t *tps, size_t n,
                               kc_error_t *err)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += tps[i].offset == KC_OFFSET_STORED;
    if (!m || !c->group)
        return KC_OK;
    kc_err_t rc =
        kc_committed(c, tps, n, (int)kc_conf_int(c->conf, KC_CONF_REQUEST_TIMEOUT_MS), err);
    if (rc != KC_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (tps[i].offset == KC_OFFSET_INVALID)
            tps[i].offset = KC_OFFSET_STORED;
    return KC_OK;
}

/* Every entry names a topic and a partition >= 0 (caught here rather than on the network
 * thread, where a NULL name would crash it). */
static kc_err_t check_tps(const char *fn, const kc_topic_partition_t *tps, size_t n,
                          kc_error_t *err)
{
    if (n && !tps)
        return kc_fail(err, KC_ERR_INVALID_ARG, "%s: NULL list of %zu partitions", fn, n);
    for (size_t i = 0; i < n; i++) {
        if (!tps[i].topic || !tps[i].topic[0])
            return kc_fail(err, KC_ERR_INVALID_ARG, "%s: entry %zu has no topic name", fn, i);
        if (tps[i].partition < 0)
            return kc_fail(err, KC_ERR_INVALID_ARG, "%s: entry %zu (%s): partition %d < 0", fn, i,
                           tps[i].topic, (int)tps[i].partition);
    }
    return KC_OK;
}

/* The checks of a call that takes a list and does not wait: the consumer (callback context
 * allowed), then every entry. */
static kc_err_t check_list(kc_consumer_t *c, const char *fn, const kc_topic_partition_t *tps,
                           size_t n, kc_error_t *err)
{
    kc_err_t g = kc_consumer_guard(c, fn, false, err);
    return g == KC_OK ? check_tps(fn, tps, n, err) : g;
}

static kc_err_t assign(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n, int replace,
                       kc_error_t *err)
{
    const char *fn = replace ? "kc_assign" : "kc_incremental_assign";
    kc_err_t g = check_list(c, fn, tps, n, err);
    if (g != KC_OK)
        return g;
    /* Refused from the start of kc_close (the network thread checks again): not after a
     * committed-offset round trip for KC_OFFSET_STORED entries. */
    int phase = atomic_load_explicit(&c->phase, memory_order_relaxed);
    if (phase != KC_PHASE_OPEN)
        return kc_fail(err, KC_ERR_CLOSED, "%s: the consumer is %s", fn,
                       phase == KC_PHASE_CLOSED ? "closed" : "closing");
    kc_topic_partition_t *copy = calloc(n ? n : 1, sizeof *copy);
    if (!copy)
        return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
    memcpy(copy, tps, n * sizeof *copy);
    /* Only STORED entries are looked up; the others keep their own offsets. */
    kc_topic_partition_t *stored = calloc(n ? n : 1, sizeof *stored);
    size_t ns = 0;
    kc_err_t rc = stored ? KC_OK : kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
    for (size_t i = 0; rc == KC_OK && i < n; i++)
        if (copy[i].offset == KC_OFFSET_STORED)
            stored[ns++] = copy[i];
    if (rc == KC_OK && ns)
        rc = resolve_stored(c, stored, ns, err);
    for (size_t i = 0, j = 0; rc == KC_OK && i < n; i++)
        if (copy[i].offset == KC_OFFSET_STORED)
            copy[i].offset = stored[j++].offset;
    /* One command: the difference is computed and applied on the network thread at once, so
     * no other call sees a half-applied assignment. */
    if (rc == KC_OK) {
        kc_ccall_t k = {
            .op = replace ? KC_COP_ASSIGN : KC_COP_ADD, .tps = copy, .asked = tps, .n = n};
        rc = kc_consumer_call(c, &k, err);
    }
    free(stored);
    free(copy);
    return rc;
}

KC_API kc_err_t kc_assign(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                          kc_error_t *err)
{
    return assign(c, tps, n, 1, err);
}

KC_API kc_err_t kc_incremental_assign(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                                      kc_error_t *err)
{
    return assign(c, tps, n, 0, err);
}

KC_API kc_err_t kc_unassign(kc_consumer_t *c, kc_error_t *err)
{
    kc_ccall_t k = {.op = KC_COP_UNASSIGN};
    return kc_consumer_call(c, &k, err);
}

KC_API kc_err_t kc_incremental_unassign(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                                        kc_error_t *err)
{
    kc_err_t g = check_list(c, "kc_incremental_unassign", tps, n, err);
    if (g != KC_OK)
        return g;
    kc_ccall_t k = {.op = KC_COP_REMOVE, .tps = tps, .n = n};
    return kc_consumer_call(c, &k, err);
}

KC_API kc_err_t kc_seek_partitions(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                                   kc_error_t *err)
{
    kc_err_t g = check_list(c, "kc_seek_partitions", tps, n, err);
    if (g != KC_OK)
        return g;
    for (size_t i = 0; i < n; i++)
        if (tps[i].offset < 0 && tps[i].offset != KC_OFFSET_BEGINNING &&
            tps[i].offset != KC_OFFSET_END)
            return kc_fail(err, KC_ERR_INVALID_ARG,
                           "kc_seek_partitions: entry %zu (%s[%d]): offset %lld is neither >= 0 "
                           "nor KC_OFFSET_BEGINNING / KC_OFFSET_END",
                           i, tps[i].topic, (int)tps[i].partition, (long long)tps[i].offset);
    kc_ccall_t k = {.op = KC_COP_SEEK_MANY, .tps = tps, .n = n};
    return kc_consumer_call(c, &k, err);
}

KC_API kc_err_t kc_seek(kc_consumer_t *c, const char *topic, int32_t partition, kc_seek_kind_t kind,
                        int64_t value, kc_error_t *err)
{
    kc_topic_partition_t tp = {topic, partition, 0};
    kc_err_t g = check_list(c, "kc_seek", &tp, 1, err);
    if (g != KC_OK)
        return g;
    if (kind < KC_SEEK_OFFSET || kind > KC_SEEK_TIMESTAMP)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_seek: unknown kind %d", (int)kind);
    if (kind == KC_SEEK_OFFSET && value < 0)
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "kc_seek: offset %lld < 0 (use KC_SEEK_BEGINNING / KC_SEEK_END)",
                       (long long)value);
    kc_ccall_t k = {.op = KC_COP_SEEK,
                    .topic = topic,
                    .partition = partition,
                    .kind = (int)kind,
                    .value = value};
    return kc_consumer_call(c, &k, err);
}

KC_API kc_err_t kc_pause(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                         kc_error_t *err)
{
    kc_err_t g = check_list(c, "kc_pause", tps, n, err);
    if (g != KC_OK)
        return g;
    kc_ccall_t k = {.op = KC_COP_PAUSE, .tps = tps, .n = n};
    return kc_consumer_call(c, &k, err);
}

KC_API kc_err_t kc_resume(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                          kc_error_t *err)
{
    kc_err_t g = check_list(c, "kc_resume", tps, n, err);
    if (g != KC_OK)
        return g;
    kc_ccall_t k = {.op = KC_COP_RESUME, .tps = tps, .n = n};
    return kc_consumer_call(c, &k, err);
}

KC_API kc_err_t kc_committed(kc_consumer_t *c, kc_topic_partition_t *tps, size_t n, int timeout_ms,
                             kc_error_t *err)
{
    kc_err_t g = kc_consumer_guard(c, "kc_committed", true, err);
    if (g == KC_OK)
        g = check_tps("kc_committed", tps, n, err);
    if (g != KC_OK)
        return g;
    if (!tps || !n)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_committed: no partitions given");
    if (!c->group)
        return kc_fail(err, KC_ERR_CONFIG, "committed needs group.id");
    for (size_t i = 0; i < n; i++)
        tps[i].offset = KC_OFFSET_INVALID;
    kc_ccall_t k = {
        .op = KC_COP_COMMITTED, .tps = tps, .n = n, .timeout_ms = timeout_ms, .out = tps};
    return kc_consumer_call_wait(c, &k, err);
}

KC_API kc_err_t kc_commit(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                          int timeout_ms, kc_error_t *err)
{
    kc_err_t g = kc_consumer_guard(c, "kc_commit", true, err);
    if (g == KC_OK && tps)
        g = check_tps("kc_commit", tps, n, err);
    if (g != KC_OK)
        return g;
    kc_ccall_t k = {.op = KC_COP_COMMIT, .tps = tps, .n = n, .timeout_ms = timeout_ms};
    return kc_consumer_call_wait(c, &k, err);
}

/* The metadata calls reuse kc_commit's and kc_committed's commands: the entries become a
 * kc_topic_partition_t list and the strings ride beside it (kc_ccall_t.meta_in / meta_out). */
static kc_topic_partition_t *meta_tps(const kc_offset_meta_t *tps, size_t n)
{
    kc_topic_partition_t *t = calloc(n ? n : 1, sizeof *t);
    for (size_t i = 0; t && i < n; i++)
        t[i] = (kc_topic_partition_t){tps[i].topic, tps[i].partition, tps[i].offset};
    return t;
}

KC_API kc_err_t kc_commit_metadata(kc_consumer_t *c, const kc_offset_meta_t *tps, size_t n,
                                   int timeout_ms, kc_error_t *err)
{
    kc_err_t g = kc_consumer_guard(c, "kc_commit_metadata", true, err);
    if (g != KC_OK)
        return g;
    if (!tps || !n)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_commit_metadata: no partitions given");
    kc_topic_partition_t *t = meta_tps(tps, n);
    const char **meta = calloc(n, sizeof *meta);
    kc_err_t rc = t && meta ? check_tps("kc_commit_metadata", t, n, err)
                            : kc_fail(err, KC_ERR_NOMEM, "kc_commit_metadata: out of memory");
    for (size_t i = 0; rc == KC_OK && i < n; i++)
        meta[i] = tps[i].metadata;
    if (rc == KC_OK) {
        kc_ccall_t k = {
            .op = KC_COP_COMMIT, .tps = t, .n = n, .timeout_ms = timeout_ms, .meta_in = meta};
        rc = kc_consumer_call_wait(c, &k, err);
    }
    free(meta);
    free(t);
    return rc;
}

KC_API kc_err_t kc_commit_results(kc_consumer_t *c, const kc_offset_meta_t *tps, size_t n,
                                  int timeout_ms, kc_commit_result_t **results, size_t *n_results,
                                  kc_error_t *err)
{
    if (!results || !n_results)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_commit_results: NULL results");
    *results = NULL;
    *n_results = 0;
    kc_err_t g = kc_consumer_guard(c, "kc_commit_results", true, err);
    if (g != KC_OK)
        return g;
    if (!tps && n)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_commit_results: NULL list of %zu", n);
    kc_topic_partition_t *t = tps ? meta_tps(tps, n) : NULL;
    const char **meta = tps ? calloc(n ? n : 1, sizeof *meta) : NULL;
    kc_err_t rc = KC_OK;
    if (tps && (!t || !meta))
        rc = kc_fail(err, KC_ERR_NOMEM, "kc_commit_results: out of memory");
    else if (tps)
        rc = check_tps("kc_commit_results", t, n, err);
    for (size_t i = 0; rc == KC_OK && tps && i < n; i++)
        meta[i] = tps[i].metadata;
    if (rc == KC_OK) {
        kc_ccall_t k = {.op = KC_COP_COMMIT,
                        .tps = t,
                        .n = tps ? n : 0,
                        .timeout_ms = timeout_ms,
                        .meta_in = meta,
                        .want_results = true};
        rc = kc_consumer_call_wait(c, &k, err);
        *results = k.results; /* the answer's, also when it was a refusal */
        *n_results = k.n_results;
    }
    free(meta);
    free(t);
    return rc;
}

KC_API kc_err_t kc_committed_metadata(kc_consumer_t *c, kc_offset_meta_t *tps, size_t n,
                                      int timeout_ms, char **block, kc_error_t *err)
{
    if (!block)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_committed_metadata: NULL block");
    *block = NULL;
    if (!tps && n)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_committed_metadata: NULL list of %zu", n);
    for (size_t i = 0; i < n; i++)
        tps[i].metadata = NULL;
    kc_topic_partition_t *t = meta_tps(tps, n);
    char **meta = calloc(n ? n : 1, sizeof *meta);
    if (!t || !meta) {
        free(t);
        free(meta);
        return kc_fail(err, KC_ERR_NOMEM, "kc_committed_metadata: out of memory");
    }
    kc_err_t rc = kc_consumer_guard(c, "kc_committed_metadata", true, err);
    if (rc == KC_OK)
        rc = check_tps("kc_committed_metadata", t, n, err);
    if (rc == KC_OK && !n)
        rc = kc_fail(err, KC_ERR_INVALID_ARG, "kc_committed_metadata: no partitions given");
    if (rc == KC_OK && !c->group)
        rc = kc_fail(err, KC_ERR_CONFIG, "committed needs group.id");
    if (rc == KC_OK) {
        for (size_t i = 0; i < n; i++)
            t[i].offset = KC_OFFSET_INVALID;
        kc_ccall_t k = {.op = KC_COP_COMMITTED,
                        .tps = t,
                        .n = n,
                        .timeout_ms = timeout_ms,
                        .out = t,
                        .meta_out = meta};
        rc = kc_consumer_call_wait(c, &k, err);
    }
    /* One block for every string, so the caller frees once. */
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += meta[i] ? strlen(meta[i]) + 1 : 0;
    char *b = rc == KC_OK && bytes ? malloc(bytes) : NULL;
    if (rc == KC_OK && bytes && !b)
        rc = kc_fail(err, KC_ERR_NOMEM, "kc_committed_metadata: out of memory");
    for (size_t i = 0, at = 0; i < n; i++) {
        if (rc == KC_OK)
            tps[i].offset = t[i].offset;
        if (b && meta[i]) {
            size_t l = strlen(meta[i]) + 1;
            memcpy(b + at, meta[i], l);
            tps[i].metadata = b + at;
            at += l;
        }
        free(meta[i]);
    }
    *block = b;
    free(meta);
    free(t);
    return rc;
}

/* From the partition's own callbacks (the usual place) both are one atomic access, since that
 * worker holds the partition; from any other thread the partition table, which lives on the
 * network thread, is asked with one command round trip (never waiting for I/O or a callback). */
KC_API kc_err_t kc_store_offset(kc_consumer_t *c, const char *topic, int32_t partition,
                                int64_t offset, kc_error_t *err)
{
    if (!c || !topic || offset < 0)
        return kc_fail(err, KC_ERR_INVALID_ARG, "store_offset: bad arguments");
    kc_rt_part_t *own = kc_rt_own_part(c->rt, topic, partition);
    if (own) {
        kc_rt_part_store(own, offset);
        return KC_OK;
    }
    kc_ccall_t k = {.op = KC_COP_STORE, .topic = topic, .partition = partition, .value = offset};
    return kc_consumer_call(c, &k, err);
}

KC_API kc_err_t kc_position(kc_consumer_t *c, const char *topic, int32_t partition, int64_t *offset,
                            kc_error_t *err)
{
    if (!c || !topic || !offset)
        return kc_fail(err, KC_ERR_INVALID_ARG, "position: bad arguments");
    kc_rt_part_t *own = kc_rt_own_part(c->rt, topic, partition);
    if (own) {
        int64_t v = kc_rt_part_position(own);
        *offset = v >= 0 ? v : KC_OFFSET_INVALID;
        return KC_OK;
    }
    kc_ccall_t k = {.op = KC_COP_POSITION, .topic = topic, .partition = partition};
    kc_err_t rc = kc_consumer_call(c, &k, err);
    if (rc == KC_OK)
        *offset = k.value >= 0 ? k.value : KC_OFFSET_INVALID;
    return rc;
}

KC_API kc_err_t kc_position_list(kc_consumer_t *c, kc_topic_partition_t *tps, size_t n,
                                 kc_error_t *err)
{
    kc_err_t g = check_list(c, "kc_position_list", tps, n, err);
    if (g != KC_OK)
        return g;
    if (n == 0)
        return KC_OK;
    kc_ccall_t k = {.op = KC_COP_POSITIONS, .tps = tps, .out = tps, .n = n};
    return kc_consumer_call(c, &k, err);
}
