/*
 * KIP-227 fetch session state machine; the rules are in fetch/session.h.
 *
 * Owner: network thread. Pure: no I/O, no clock reads (now_ms is passed in); the only side
 * effect besides the struct is one log line when a broker cannot hold a session.
 */
#include "fetch/session.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "proto/kafka_errors.h"

int32_t kc_session_next_epoch(int32_t e)
{
    /* 0 (open) and -1 (close) are sentinels, so the sequence skips them on wrap. */
    return e >= INT32_MAX || e < 1 ? 1 : e + 1;
}

static int part_cmp(const void *a, const void *b)
{
    return kc_tp_cmp(&((const kc_session_part_t *)a)->tp, &((const kc_session_part_t *)b)->tp);
}

static kc_err_t vec_reserve(kc_session_vec_t *v, size_t n, kc_error_t *err)
{
    if (n <= v->cap)
        return KC_OK;
    size_t cap = v->cap ? v->cap : 16;
    while (cap < n)
        cap *= 2;
    kc_session_part_t *p = realloc(v->v, cap * sizeof *p);
    if (!p)
        return kc_fail(err, KC_ERR_NOMEM, "fetch session: %zu partitions", n);
    v->v = p;
    v->cap = cap;
    return KC_OK;
}

static kc_err_t forgotten_reserve(kc_session_t *s, size_t n, kc_error_t *err)
{
    if (n <= s->out_forgotten_cap)
        return KC_OK;
    size_t cap = s->out_forgotten_cap ? s->out_forgotten_cap : 16;
    while (cap < n)
        cap *= 2;
    kc_tp_t *p = realloc(s->out_forgotten, cap * sizeof *p);
    if (!p)
        return kc_fail(err, KC_ERR_NOMEM, "fetch session: %zu forgotten partitions", n);
    s->out_forgotten = p;
    s->out_forgotten_cap = cap;
    return KC_OK;
}

void kc_session_init(kc_session_t *s, int32_t broker_id, int64_t sessionless_backoff_ms)
{
    memset(s, 0, sizeof *s);
    s->broker_id = broker_id;
    s->sessionless_backoff_ms = sessionless_backoff_ms;
    s->mode = KC_SESSION_NONE;
}

void kc_session_free(kc_session_t *s)
{
    free(s->held.v);
    free(s->next_held.v);
    free(s->out_parts.v);
    free(s->out_forgotten);
    memset(s, 0, sizeof *s);
}

int kc_session_holds_partitions(const kc_session_t *s)
{
    return s->mode == KC_SESSION_OPEN && s->held.n > 0;
}

static int same_request_fields(const kc_session_part_t *a, const kc_session_part_t *b)
{
    return a->fetch_offset == b->fetch_offset && a->log_start_offset == b->log_start_offset &&
           a->leader_epoch == b->leader_epoch && a->max_bytes == b->max_bytes;
}

/* next_held := sorted, unpaused copy of `wanted`. */
static kc_err_t snapshot_wanted(kc_session_t *s, const kc_session_part_t *wanted, size_t n,
                                kc_error_t *err)
{
    kc_err_t rc = vec_reserve(&s->next_held, n, err);
    if (rc)
        return rc;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (wanted[i].paused)
            continue;
        s->next_held.v[k] = wanted[i];
        s->next_held.v[k].paused = 0;
        k++;
    }
    s->next_held.n = k;
    /* The plan hands partitions over in the engine's table order, which is sorted already when
     * they were assigned in order within one topic (the common case at thousands of
     * partitions): one pass finds out, and the sort runs only when it is not. */
    bool sorted = true;
    for (size_t i = 1; i < k && sorted; i++)
        sorted = kc_tp_cmp(&s->next_held.v[i - 1].tp, &s->next_held.v[i].tp) < 0;
    if (!sorted)
        qsort(s->next_held.v, k, sizeof *s->next_held.v, part_cmp);
    for (size_t i = 1; i < k && !sorted; i++)
        if (kc_tp_cmp(&s->next_held.v[i - 1].tp, &s->next_held.v[i].tp) == 0)
            return kc_fail(err, KC_ERR_INVALID_ARG,
                           "fetch session broker %d: partition %d "
                           "wanted twice",
                           s->broker_id, (int)s->next_held.v[i].tp.partition);
    return KC_OK;
}

/* Incremental diff of next_held against held: added, altered, forgotten. Both sorted. */
static kc_err_t diff(kc_session_t *s, kc_session_req_t *out, kc_error_t *err)
{
    const kc_session_vec_t *a = &s->held, *b = &s->next_held;
    kc_err_t rc = vec_reserve(&s->out_parts, b->n, err);
    if (!rc)
        rc = forgotten_reserve(s, a->n, err);
    if (rc)
        return rc;
    size_t i = 0, j = 0, np = 0, nf = 0;
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : kc_tp_cmp(&a->v[i].tp, &b->v[j].tp);
        if (c < 0) {
            s->out_forgotten[nf++] = a->v[i++].tp;
        } else if (c > 0) {
            s->out_parts.v[np++] = b->v[j++];
            out->n_added++;
        } else {
            if (!same_request_fields(&a->v[i], &b->v[j])) {
                s->out_parts.v[np++] = b->v[j];
                out->n_altered++;
            }
            i++;
            j++;
        }
    }
    out->parts = s->out_parts.v;
    out->n_parts = np;
    out->forgotten = s->out_forgotten;
    out->n_forgotten = nf;
    return KC_OK;
}

static kc_err_t full(kc_session_t *s, kc_session_req_t *out, kc_error_t *err)
{
    kc_err_t rc = vec_reserve(&s->out_parts, s->next_held.n, err);
    if (rc)
        return rc;
    if (s->next_held.n)
        memcpy(s->out_parts.v, s->next_held.v, s->next_held.n * sizeof *s->next_held.v);
    out->full = 1;
    out->parts = s->out_parts.v;
    out->n_parts = s->next_held.n;
    out->n_added = s->next_held.n;
    return KC_OK;
}

/* The request `out` is in flight: the one a response or failure settles. */
static void pend(kc_session_t *s, const kc_session_req_t *out)
{
    s->pending = 1;
    s->pending_req = *out;
    s->stats.requests_built++;
    s->stats.partitions_sent += out->n_parts;
    s->stats.forgotten_sent += out->n_forgotten;
    s->stats.last_parts = out->n_parts;
    s->stats.last_forgotten = out->n_forgotten;
}

kc_err_t kc_session_build(kc_session_t *s, const kc_session_part_t *wanted, size_t n_wanted,
                          int64_t now_ms, kc_session_req_t *out, kc_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (s->pending || s->mode == KC_SESSION_CLOSING)
        return kc_fail(err, KC_ERR_STATE, "fetch session broker %d: a request is in flight",
                       s->broker_id);
    kc_err_t rc = snapshot_wanted(s, wanted, n_wanted, err);
    if (rc)
        return rc;
    if (s->next_held.n == 0 && !kc_session_holds_partitions(s))
        return kc_fail(err, KC_ERR_AGAIN, "fetch session broker %d: nothing to fetch or forget",
                       s->broker_id);

    if (s->mode == KC_SESSION_SESSIONLESS && now_ms >= s->sessionless_until_ms)
        s->mode = KC_SESSION_NONE; /* the backoff is over: try to open a session again */

    switch (s->mode) {
    case KC_SESSION_OPEN:
        out->session_id = s->id;
        out->epoch = s->epoch;
        rc = diff(s, out, err);
        out->drain_only = s->next_held.n == 0;
        break;
    case KC_SESSION_SESSIONLESS:
        out->session_id = KC_SESSION_INVALID_ID;
        out->epoch = KC_SESSION_FINAL_EPOCH;
        rc = full(s, out, err);
        break;
    default: /* NONE: open, closing the old session if we still know its id */
        out->session_id = s->id;
        out->epoch = KC_SESSION_INITIAL_EPOCH;
        rc = full(s, out, err);
        break;
    }
    if (rc)
        return rc;
    pend(s, out);
    return KC_OK;
}

kc_err_t kc_session_build_same(kc_session_t *s, kc_session_req_t *out, kc_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (s->pending || s->mode != KC_SESSION_OPEN || s->held.n == 0)
        return kc_fail(err, KC_ERR_STATE, "fetch session broker %d: no open session to repeat",
                       s->broker_id);
    out->session_id = s->id;
    out->epoch = s->epoch;
    pend(s, out);
    s->pending_same = 1;
    return KC_OK;
}

static void commit_held(kc_session_t *s)
{
    /* Swap rather than copy: next_held's buffer becomes the scratch for the next build. */
    kc_session_vec_t t = s->held;
    s->held = s->next_held;
    s->next_held = t;
    s->next_held.n = 0;
}

static void set_stats_ids(kc_session_t *s)
{
    s->stats.session_id = s->mode == KC_SESSION_OPEN ? s->id : KC_SESSION_INVALID_ID;
    s->stats.epoch = s->mode == KC_SESSION_OPEN ? s->epoch : 0;
}

static kc_session_outcome_t fall_back(kc_session_t *s, int64_t now_ms, const char *why)
{
    s->mode = KC_SESSION_SESSIONLESS;
    s->id = KC_SESSION_INVALID_ID;
    s->held.n = 0;
    s->sessionless_until_ms = now_ms + s->sessionless_backoff_ms;
    s->stats.fallbacks++;
    if (!s->fallback_logged) {
        /* Once per episode: a broker with fetch sessions disabled would otherwise log on every
         * retry, forever. The flag clears when a session is established. */
        s->fallback_logged = 1;
        s->stats.fallback_logs++;
        kc_log(KC_LOG_WARN, "fetch",
               "broker %d cannot hold a fetch session (%s): sessionless fetches, retrying "
               "sessions every %lld ms",
               (int)s->broker_id, why, (long long)s->sessionless_backoff_ms);
    }
    set_stats_ids(s);
    return KC_SESSION_FALLBACK;
}

static kc_session_outcome_t reset(kc_session_t *s, int32_t close_id)
{
    s->mode = KC_SESSION_NONE;
    s->id = close_id; /* the next open is (close_id, 0) */
    s->held.n = 0;
    s->stats.resets++;
    set_stats_ids(s);
    return KC_SESSION_RESET;
}

kc_session_outcome_t kc_session_on_response(kc_session_t *s, const kc_session_resp_t *resp,
                                            int64_t now_ms)
{
    if (!s->pending)
        return KC_SESSION_FAILED; /* a response nobody asked for: change nothing */
    const kc_session_req_t req = s->pending_req;
    s->pending = 0;
    const int same = s->pending_same;
    s->pending_same = 0;

    if (req.close) {
        s->mode = KC_SESSION_NONE;
        s->id = KC_SESSION_INVALID_ID;
        s->held.n = 0;
        set_stats_ids(s);
        return KC_SESSION_CLOSED;
    }
    const int opening = req.epoch == KC_SESSION_INITIAL_EPOCH;
    if (resp->error_code == KC_KAFKA_FETCH_SESSION_ID_NOT_FOUND) {
        if (opening && req.session_id == KC_SESSION_INVALID_ID)
            return fall_back(s, now_ms, "FETCH_SESSION_ID_NOT_FOUND on an opening request");
        return reset(s, KC_SESSION_INVALID_ID); /* gone: nothing to close */
    }
    if (resp->error_code == KC_KAFKA_INVALID_FETCH_SESSION_EPOCH)
        return reset(s, req.session_id);
    if (resp->error_code != 0) {
        /* Java resets on any top-level error too: we cannot know what the broker applied. */
        reset(s, req.session_id);
        return KC_SESSION_FAILED;
    }

    if (req.epoch == KC_SESSION_FINAL_EPOCH) {
        /* Sessionless: the broker keeps nothing, but `held` records what it fetched for this
         * answer, so kc_session_held() can vouch for the response's partitions. */
        commit_held(s);
        return KC_SESSION_OK;
    }
    if (opening) {
        if (resp->session_id == KC_SESSION_INVALID_ID) {
            /* A full answer without a session: its partitions are valid, keep them. */
            kc_session_outcome_t o = fall_back(s, now_ms, "opening request answered with id 0");
            commit_held(s);
            return o;
        }
        s->mode = KC_SESSION_OPEN;
        s->id = resp->session_id;
        s->epoch = 1;
        s->fallback_logged = 0;
    } else {
        s->epoch = kc_session_next_epoch(s->epoch);
    }
    if (!same) /* a repeat: the broker holds what it held, and so do we */
        commit_held(s);
    set_stats_ids(s);
    return KC_SESSION_OK;
}

const kc_session_part_t *kc_session_held(const kc_session_t *s, const kc_tp_t *tp)
{
    if ((s->mode != KC_SESSION_OPEN && s->mode != KC_SESSION_SESSIONLESS) || s->held.n == 0)
        return NULL;
    kc_session_part_t key;
    key.tp = *tp;
    return bsearch(&key, s->held.v, s->held.n, sizeof key, part_cmp);
}

void kc_session_on_failure(kc_session_t *s)
{
    if (!s->pending)
        return;
    s->pending = 0;
    s->pending_same = 0;
    s->next_held.n = 0;
    if (s->pending_req.close) {
        /* The close may or may not have landed; either way we never use the session again. */
        s->mode = KC_SESSION_NONE;
        s->id = KC_SESSION_INVALID_ID;
        s->held.n = 0;
        set_stats_ids(s);
    }
}

kc_err_t kc_session_close(kc_session_t *s, kc_session_req_t *out, kc_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (s->pending)
        return kc_fail(err, KC_ERR_STATE, "fetch session broker %d: a request is in flight",
                       s->broker_id);
    if (s->mode != KC_SESSION_OPEN)
        return kc_fail(err, KC_ERR_AGAIN, "fetch session broker %d: no session to close",
                       s->broker_id);
    out->session_id = s->id;
    out->epoch = KC_SESSION_FINAL_EPOCH;
    out->close = 1;
    s->mode = KC_SESSION_CLOSING;
    pend(s, out);
    return KC_OK;
}
