/*
 * kc_commit_async and the auto-commit timer.
 *
 * kc_commit_async copies its arguments into one object and posts it to the network thread with
 * kc_netthread_post (no waiting, so it is allowed from callback context). There the offsets are
 * taken (the given ones, or every assigned partition's committable offset) and sent with
 * kc_engine_commit; the engine's answer (network thread) is handed to a worker with
 * kc_rt_post_call, so the application's callback runs on a worker serialised with on_event, as
 * kconsume.h documents. Every call gets one answer: a commit the broker had not answered when the
 * engine closed (kc_close) ends with KC_ERR_CLOSED there; an answer the stopped workers could not
 * run any more is run by kc_destroy, on the destroying thread, with its real result.
 *
 * Auto-commit (enable.auto.commit with group.id), for every kind of consumer: a network-thread
 * timer every auto.commit.interval.ms commits the committable offsets (kc_rt_part_committable:
 * the offset after the last record whose callback returned), one commit in flight at a time;
 * a group member's under its identity as the request is built (kc_rt_group_commit), which the
 * group's answer handling reads too (a classic member whose generation is gone rejoins).
 * Failures are reported as KC_EVENT_ERROR. kc_close's final commit is consumer.c's (a group
 * member's revocation commits its own).
 *
 * Owner: the object belongs to whichever thread holds it in that chain (app → network thread →
 * worker); consumer fields ac_* belong to the network thread.
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "consumer_int.h"
#include "group.h"
#include "coordinator.h"
#include "netthread.h"
#include "proto/kafka_errors.h"

/* How soon a group's auto-commit is asked again after a STALE_MEMBER_EPOCH answer, or when it
 * was due while the member was rebalancing. */
#define AC_SOON_MS 200

typedef struct acommit {
    kc_loop_cmd_t cmd; /* first: the posted command */
    kc_consumer_t *c;
    kc_commit_cb cb;
    kc_commit_results_cb rcb; /* kc_commit_async_results: instead of cb */
    void *opaque;
    kc_topic_partition_t *tps; /* copies; NULL = committable offsets */
    char **meta;               /* copies (an entry NULL: none), or NULL */
    size_t n;
    kc_commit_result_t *res; /* rcb's results, one block (kc_consumer_commit_results) */
    size_t n_res;
    int is_auto;
    bool counted; /* a group's auto-commit that reached the broker: its answer is counted */
    kc_err_t rc;
    kc_error_t err;
} acommit_t;

static void ac_free(acommit_t *a)
{
    for (size_t i = 0; a->tps && i < a->n; i++)
        free((char *)a->tps[i].topic);
    for (size_t i = 0; a->meta && i < a->n; i++)
        free(a->meta[i]);
    free(a->meta);
    free(a->tps);
    free(a->res);
    free(a);
}

kc_commit_result_t *kc_consumer_commit_results(kc_err_t rc, const kc_engine_offset_t *res, size_t n)
{
    if (n == 0)
        return NULL;
    size_t bytes = n * sizeof(kc_commit_result_t);
    for (size_t i = 0; i < n; i++)
        bytes += strlen(res[i].topic) + 1;
    kc_commit_result_t *out = malloc(bytes);
    if (!out)
        return NULL;
    char *str = (char *)(out + n);
    /* A refusal names its partitions; so does a share commit's verdict not sent
     * (KC_ENGINE_SHARE_UNSENT: KC_ERR_STATE); any other failure is the whole commit's. */
    bool per_partition = rc == KC_ERR_BROKER;
    for (size_t i = 0; i < n; i++)
        per_partition |= rc == KC_ERR_STATE && res[i].error == KC_ENGINE_SHARE_UNSENT;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(res[i].topic) + 1;
        memcpy(str, res[i].topic, len);
        kc_err_t code = rc;
        if (per_partition)
            code = res[i].error == KC_ENGINE_SHARE_UNSENT ? KC_ERR_STATE
                   : res[i].error                         ? KC_ERR_BROKER /* -1: Kafka's too */
                                                          : KC_OK;
        out[i] = (kc_commit_result_t){str, res[i].partition, res[i].offset, code,
                                      code == KC_ERR_BROKER ? res[i].error : 0};
        str += len;
    }
    return out;
}

/* Worker (run = 1), or kc_rt_free's thread (run = 0). Every commit posted here was answered
 * already (by the broker, or by the engine's close), so the result is the real one even when the
 * workers stopped before they could run it. */
static void deliver(void *arg, int run)
{
    acommit_t *a = arg;
    (void)run;
    if (a->rcb)
        a->rcb(a->opaque, a->rc, a->rc == KC_OK ? NULL : &a->err, a->res, a->n_res);
    else if (a->cb)
        a->cb(a->opaque, a->rc, a->rc == KC_OK ? NULL : &a->err);
    ac_free(a);
}

static bool membership_moved(int16_t code)
{
    return code == KC_KAFKA_REBALANCE_IN_PROGRESS || code == KC_KAFKA_ILLEGAL_GENERATION ||
           code == KC_KAFKA_UNKNOWN_MEMBER_ID || code == KC_KAFKA_FENCED_MEMBER_EPOCH;
}

/* Network thread: the engine's answer, or a failure to ask. */
static void answered(acommit_t *a)
{
    kc_consumer_t *c = a->c;
    c->async_pending--;
    if (a->is_auto) {
        c->ac_inflight = 0;
        int16_t code = a->rc == KC_OK ? 0 : a->err.kafka_code;
        if (c->grp && a->counted)
            kc_rt_group_count_commit(c->grp, a->rc == KC_OK ? 0 : code ? code : -1);
        if (a->rc != KC_OK && code == KC_KAFKA_STALE_MEMBER_EPOCH && c->grp) {
            /* The epoch moved under the commit (a rebalance): not an error; asked again
             * shortly, with the offsets and the epoch of then (kc_rt_group_auto_commit). */
            kc_loop_t *loop = kc_netthread_loop(c->nt);
            if (kc_loop_timer_armed(&c->ac_timer))
                kc_loop_timer_stop(loop, &c->ac_timer);
            kc_loop_timer_start(loop, &c->ac_timer, AC_SOON_MS);
            ac_free(a);
            return;
        }
        if (a->rc != KC_OK && c->grp && membership_moved(code)) {
            /* The generation ended under the commit (a rebalance, or the member left after a
             * max.poll.interval.ms overrun): what it held is committed by its revocation or
             * redelivered after its loss, and the member rejoins. Not the application's
             * error; logged and counted in the group's commit_failures. */
            c->ac_failures++;
            kc_log(KC_LOG_INFO, "commit", "auto-commit: %s", a->err.msg);
        } else if (a->rc != KC_OK) {
            c->ac_failures++;
            kc_event_t ev = {.type = KC_EVENT_ERROR, .error = &a->err};
            (void)kc_rt_post_event(c->rt, &ev);
        } else {
            c->ac_commits++;
        }
        ac_free(a);
        return;
    }
    if (kc_rt_post_call(c->rt, deliver, a) != KC_OK)
        deliver(a, 0); /* out of memory: answered here rather than never */
}

static void engine_done(void *opaque, kc_err_t rc, const kc_error_t *err,
                        const kc_engine_offset_t *res, size_t n)
{
    /* rc already says KC_ERR_BROKER, the message names each refused partition */
    acommit_t *a = opaque;
    a->rc = rc;
    if (rc != KC_OK) {
        if (err)
            a->err = *err;
        else
            kc_fail(&a->err, rc, "commit failed");
    }
    if (a->c->grp && !kc_conf_share(a->c->conf))
        /* network thread: the group reads the answer (and explains refusals) */
        kc_rt_group_commit_result(a->c->grp, rc, rc != KC_OK ? &a->err : NULL, res, n);
    if (a->rcb && (a->res = kc_consumer_commit_results(rc, res, n)))
        a->n_res = n;
    answered(a);
}

/* A group member's commit: under its identity as of the moment the request is built
 * (group.h), the group's held partitions when no list was given. */
static void start_member(acommit_t *a)
{
    kc_consumer_t *c = a->c;
    kc_engine_offset_t *offs = calloc(a->n ? a->n : 1, sizeof *offs);
    if (!offs) {
        a->rc = kc_fail(&a->err, KC_ERR_NOMEM, "commit: out of memory");
        answered(a);
        return;
    }
    for (size_t i = 0; a->tps && i < a->n; i++)
        offs[i] = (kc_engine_offset_t){a->tps[i].topic,
                                       a->tps[i].partition,
                                       a->tps[i].offset,
                                       -1,
                                       a->meta ? a->meta[i] : NULL,
                                       0};
    bool none = false;
    int timeout = (int)kc_conf_int(c->conf, KC_CONF_REQUEST_TIMEOUT_MS);
    /* Before the call: once started, the engine may answer inside it, and `a` is gone then. */
    a->counted = a->is_auto;
    kc_err_t rc = a->is_auto
                      ? kc_rt_group_auto_commit(c->grp, timeout, engine_done, a, &none, &a->err)
                      : kc_rt_group_commit(c->grp, a->tps ? offs : NULL, a->n, timeout, engine_done,
                                           a, &none, &a->err);
    free(offs);
    if (rc != KC_OK || none) { /* none: nothing processed yet, nothing to commit: a success */
        a->counted = false;    /* never reached the broker */
        a->rc = rc;
        answered(a);
    }
}

static void start(kc_loop_t *loop, kc_loop_cmd_t *cmd)
{
    (void)loop;
    acommit_t *a = (acommit_t *)cmd;
    kc_consumer_t *c = a->c;
    a->rc = KC_OK;
    c->async_pending++; /* until answered(): kc_close waits for it before closing the engine */
    /* CLOSED: kc_close has waited for the commits in flight (COMMITS_IDLE) and is closing the
     * engine; one that raced the phase is answered here rather than killed by that close. */
    if (!c->e || !atomic_load_explicit(&c->rt_live, memory_order_acquire) ||
        atomic_load_explicit(&c->phase, memory_order_relaxed) == KC_PHASE_CLOSED) {
        a->rc = kc_fail(&a->err, KC_ERR_CLOSED, "commit: consumer is closed");
        answered(a);
        return;
    }
    if (kc_conf_share(c->conf)) { /* acknowledgements, not offsets: share_commit.c */
        kc_error_t e;
        /* engine_done may answer (and free a) before kc_share_commit_start returns: a is not
         * touched after a successful start */
        kc_err_t rc =
            a->tps ? kc_fail(&e, KC_ERR_INVALID_ARG,
                             "commit: a share group commits its acknowledgements, not "
                             "offsets: pass no partitions (NULL, 0)")
                   : kc_share_commit_start(c, (int)kc_conf_int(c->conf, KC_CONF_REQUEST_TIMEOUT_MS),
                                           engine_done, a, &e);
        if (rc != KC_OK) {
            a->rc = rc;
            a->err = e;
            answered(a);
        }
        return;
    }
    if (kc_rt_group_subscribed(c->grp)) {
        start_member(a);
        return;
    }
    size_t n = a->tps ? a->n : c->n, m = 0;
    kc_engine_offset_t *offs = calloc(n ? n : 1, sizeof *offs);
    if (!offs) {
        a->rc = kc_fail(&a->err, KC_ERR_NOMEM, "commit: out of memory");
        answered(a);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (a->tps) {
            offs[m++] = (kc_engine_offset_t){a->tps[i].topic,
                                             a->tps[i].partition,
                                             a->tps[i].offset,
                                             -1,
                                             a->meta ? a->meta[i] : NULL,
                                             0};
        } else {
            int64_t o = kc_rt_part_committable(c->parts[i].rtp);
            if (o >= 0)
                offs[m++] =
                    (kc_engine_offset_t){c->parts[i].topic, c->parts[i].partition, o, -1, NULL, 0};
        }
    }
    if (m == 0) { /* nothing processed yet: nothing to commit, and that is a success */
        free(offs);
        answered(a);
        return;
    }
    kc_commit_identity_t who;
    kc_err_t rc = kc_offsets_identity_anonymous(&who, c->group, &a->err);
    int timeout = (int)kc_conf_int(c->conf, KC_CONF_REQUEST_TIMEOUT_MS);
    if (rc == KC_OK)
        rc = kc_engine_commit(c->e, &who, offs, m, timeout, engine_done, a, &a->err);
    free(offs);
    if (rc != KC_OK) {
        a->rc = rc;
        answered(a);
    }
}

/* Both async forms: tps (and meta, NULL or one per entry) copied; exactly one of cb, rcb may be
 * set (or neither). */
static kc_err_t commit_async(kc_consumer_t *c, const kc_topic_partition_t *tps,
                             const char *const *meta, size_t n, kc_commit_cb cb,
                             kc_commit_results_cb rcb, void *opaque, kc_error_t *err)
{
    if (!c || (n && !tps))
        return kc_fail(err, KC_ERR_INVALID_ARG, "commit_async: bad arguments");
    if (!c->group)
        return kc_fail(err, KC_ERR_CONFIG, "commit needs group.id");
    /* Refused only once the close passed its final commit: on_revoke may still commit. */
    if (atomic_load_explicit(&c->phase, memory_order_relaxed) == KC_PHASE_CLOSED)
        return kc_fail(err, KC_ERR_CLOSED, "consumer is closed");
    acommit_t *a = calloc(1, sizeof *a);
    if (!a)
        return kc_fail(err, KC_ERR_NOMEM, "commit_async: out of memory");
    a->c = c;
    a->cb = cb;
    a->rcb = rcb;
    a->opaque = opaque;
    if (tps) {
        a->tps = calloc(n ? n : 1, sizeof *a->tps);
        a->meta = meta ? calloc(n ? n : 1, sizeof *a->meta) : NULL;
        if (!a->tps || (meta && !a->meta)) {
            ac_free(a);
            return kc_fail(err, KC_ERR_NOMEM, "commit_async: out of memory");
        }
        for (size_t i = 0; i < n; i++, a->n++) {
            a->tps[i] = tps[i];
            if (!(a->tps[i].topic = strdup(tps[i].topic ? tps[i].topic : "")) ||
                (meta && meta[i] && !(a->meta[i] = strdup(meta[i])))) {
                a->n++; /* this entry's copies are freed too */
                ac_free(a);
                return kc_fail(err, KC_ERR_NOMEM, "commit_async: out of memory");
            }
        }
    }
    a->cmd.fn = start;
    a->cmd.opaque = a;
    kc_netthread_post(c->nt, &a->cmd);
    return KC_OK;
}

KC_API kc_err_t kc_commit_async(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                                kc_commit_cb cb, void *opaque, kc_error_t *err)
{
    return commit_async(c, tps, NULL, n, cb, NULL, opaque, err);
}

KC_API kc_err_t kc_commit_async_results(kc_consumer_t *c, const kc_offset_meta_t *tps, size_t n,
                                        kc_commit_results_cb cb, void *opaque, kc_error_t *err)
{
    if (!tps && n)
        return kc_fail(err, KC_ERR_INVALID_ARG, "commit_async: NULL list of %zu", n);
    kc_topic_partition_t *t = tps ? calloc(n ? n : 1, sizeof *t) : NULL;
    const char **meta = tps ? calloc(n ? n : 1, sizeof *meta) : NULL;
    kc_err_t rc = KC_OK;
    if (tps && (!t || !meta))
        rc = kc_fail(err, KC_ERR_NOMEM, "commit_async: out of memory");
    for (size_t i = 0; rc == KC_OK && tps && i < n; i++) {
        t[i] = (kc_topic_partition_t){tps[i].topic, tps[i].partition, tps[i].offset};
        meta[i] = tps[i].metadata;
    }
    if (rc == KC_OK)
        rc = commit_async(c, t, meta, n, NULL, cb, opaque, err);
    free(meta);
    free(t);
    return rc;
}

/* ---- auto-commit (network thread) ------------------------------------------------------------ */

static void ac_tick(kc_loop_t *loop, kc_loop_timer_t *t)
{
    kc_consumer_t *c = t->opaque;
    if (!c->e || !atomic_load_explicit(&c->rt_live, memory_order_acquire) ||
        atomic_load_explicit(&c->phase, memory_order_relaxed) != KC_PHASE_OPEN)
        return; /* closing: kc_close's own commit takes over */
    int64_t interval = kc_conf_int(c->conf, KC_CONF_AUTO_COMMIT_INTERVAL_MS);
    /* A group member commits under its identity (start_member), only while it is in its group
     * with no reconciliation running (the reconciliation commits what it revokes) and not
     * self-fenced: a due commit waits for that and looks again shortly; a manual assignment
     * commits anonymously, once it holds partitions. */
    bool member = kc_rt_group_subscribed(c->grp);
    bool wait = member && !kc_rt_group_may_auto_commit(c->grp);
    kc_loop_timer_start(loop, t, wait && interval > AC_SOON_MS ? AC_SOON_MS : interval);
    if (c->ac_inflight || wait || (!member && c->n == 0))
        return;
    acommit_t *a = calloc(1, sizeof *a);
    if (!a)
        return;
    a->c = c;
    a->is_auto = 1;
    c->ac_inflight = 1;
    start(loop, &a->cmd);
}

void kc_consumer_autocommit_start(kc_consumer_t *c, kc_loop_t *loop)
{
    /* A share group commits no offsets: its records are acknowledged (worker.c). */
    if (!c->group || !kc_conf_bool(c->conf, KC_CONF_ENABLE_AUTO_COMMIT) || kc_conf_share(c->conf))
        return;
    c->ac_timer.cb = ac_tick;
    c->ac_timer.opaque = c;
    kc_loop_timer_start(loop, &c->ac_timer, kc_conf_int(c->conf, KC_CONF_AUTO_COMMIT_INTERVAL_MS));
}

void kc_consumer_autocommit_stop(kc_consumer_t *c, kc_loop_t *loop)
{
    if (kc_loop_timer_armed(&c->ac_timer))
        kc_loop_timer_stop(loop, &c->ac_timer);
}
