/*
 * The public consumer for manual assignment: kc_consumer_new starts the network thread, builds
 * the engine on it (engine/engine.h) and the runtime's workers (dispatch.h) with io/batch as the
 * record decoder, and plugs them together: the engine's sink pushes each fetched batch (a slice
 * of the response frame, no copy) into the partition's ring; the runtime's backpressure answers
 * the engine's "may I fetch"; worker completions come back through one wake command.
 *
 * Threads:
 *  - app threads call the kc_* functions below; each becomes a kc_netthread_call() (the network
 *    thread's MPSC command queue + eventfd), so engine state and the part table are touched only
 *    on the network thread. Blocking calls (kc_commit, kc_committed, kc_close) then wait on a
 *    condition variable for the result the network thread signals.
 *  - workers call only kc_rt_* (committable offsets) and the wake hook (an atomic flag plus one
 *    posted command).
 * Owner of `parts`, `revoking`, the engine: the network thread. Atomics: wake_pending (wake hook
 * vs the command that clears it: kc_rt_wake_claim / kc_rt_wake_rearm, dispatch.h), rt_live
 * (set before the first call posts, cleared on the network thread before the runtime is freed;
 * the wake command reads it there, so no completion drain can race kc_rt_free).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "group.h"
#include "consumer_int.h"
#include "oauth_refresh.h"
#include "proto/kafka_errors.h"
#include "coordinator.h"

/* ---- engine sink and runtime completions (network thread) ---------------------------------- */

static kc_err_t sink_records(void *opaque, void *user, const char *topic, int32_t partition,
                             int32_t broker, kc_slice_t *s, int64_t first, int64_t next)
{
    (void)opaque, (void)topic, (void)partition;
    kc_rt_bref_t b = {.raw = *s, .base_offset = first, .last_offset = next - 1, .broker = broker};
    /* The engine's slices hold one or more whole batches: the worker takes them apart, reading
     * each header once, so the network thread does not read them a second time here. */
    b.span = true;
    kc_err_t rc = kc_rt_part_push(user, &b);
    if (rc == KC_OK)
        s->buf = NULL; /* the ring owns the reference now */
    return rc;
}

/* A share group's acquired records (engine.h): as sink_records, with their delivery count. */
static kc_err_t sink_share_records(void *opaque, void *user, const char *topic, int32_t partition,
                                   int32_t broker, kc_slice_t *s, int64_t first, int64_t next,
                                   int16_t delivery_count, int64_t lock_deadline)
{
    (void)opaque, (void)topic, (void)partition;
    kc_rt_bref_t b = {.raw = *s,
                      .base_offset = first,
                      .last_offset = next - 1,
                      .broker = broker,
                      .delivery_count = delivery_count > 0 ? delivery_count : 1,
                      .lock_deadline = lock_deadline};
    kc_err_t rc = kc_rt_part_push(user, &b);
    if (rc == KC_OK)
        s->buf = NULL;
    return rc;
}

/* Share groups: the broker's answer to acknowledgements, as KC_EVENT_SHARE_ACK (kconsume.h):
 * refusals always, applied ones with share.ack.events=all. */
static void sink_share_acked(void *opaque, const char *topic, int32_t partition, int64_t first,
                             int64_t last, int64_t records, int16_t code, const char *why)
{
    kc_consumer_t *c = opaque;
    /* A refusal is logged by the engine too; with no on_event there is no one else to tell. */
    if ((code == 0 && !c->share_ack_all) || !c->cbs.on_event)
        return;
    kc_error_t e;
    bool said = why && *why;
    if (code > 0) {
        kc_fail(&e, KC_ERR_BROKER, "acknowledgement of %s[%d] offsets %lld..%lld refused: %s%s%s",
                topic, (int)partition, (long long)first, (long long)last, kc_kafka_err_name(code),
                said ? ": " : "", said ? why : "");
        e.kafka_code = code;
    } else if (code == KC_ENGINE_SHARE_UNSENT) {
        kc_fail(&e, KC_ERR_STATE, "acknowledgement of %s[%d] offsets %lld..%lld not sent: %s",
                topic, (int)partition, (long long)first, (long long)last, said ? why : "");
    } else if (code < 0) {
        kc_fail(&e, KC_ERR_TRANSPORT,
                "acknowledgement of %s[%d] offsets %lld..%lld got no answer%s%s", topic,
                (int)partition, (long long)first, (long long)last, said ? ": " : "",
                said ? why : "");
    }
    kc_event_t ev = {.type = KC_EVENT_SHARE_ACK,
                     .error = code ? &e : NULL,
                     .topic = topic,
                     .partition = partition,
                     .offset = last,
                     .ack_first = first,
                     .ack_records = records};
    if (kc_rt_post_bulk_event(c->rt, &ev) != KC_OK && code)
        kc_log(KC_LOG_WARN, "share", "%s (not reported: on_event is behind)", e.msg);
}

/* A verdict the session would not take: logged, and reported as a refused KC_EVENT_SHARE_ACK.
 * KC_ERR_STATE is a callback that outlasted the acquisition lock (engine/share/held.h): the
 * lock ran out, or the broker handed the records out again, before the verdict, so this
 * delivery's verdict cannot count and is not sent. */
static void share_ack_unsent(kc_consumer_t *c, const kc_rt_part_t *p, int64_t first, int64_t last,
                             const kc_error_t *why)
{
    kc_error_t e;
    kc_fail(&e, why->code, "acknowledgement of %s[%d] offsets %lld..%lld not sent: %s",
            p->pub.topic, (int)p->pub.partition, (long long)first, (long long)last, why->msg);
    kc_log(KC_LOG_WARN, "share", "%s", e.msg);
    if (!c->cbs.on_event)
        return;
    kc_event_t ev = {.type = KC_EVENT_SHARE_ACK,
                     .error = &e,
                     .topic = p->pub.topic,
                     .partition = p->pub.partition,
                     .offset = last,
                     .ack_first = first,
                     .ack_records = last - first + 1};
    (void)kc_rt_post_bulk_event(c->rt, &ev); /* logged above either way */
}

static void sink_error(void *opaque, void *user, const char *topic, int32_t partition,
                       const kc_error_t *e)
{
    (void)user;
    kc_consumer_t *c = opaque;
    kc_event_t ev = {.type = KC_EVENT_ERROR, .error = e, .topic = topic, .partition = partition};
    (void)kc_rt_post_event(c->rt, &ev);
}

static int sink_may_fetch(void *opaque, void *user)
{
    kc_consumer_t *c = opaque;
    return kc_rt_may_fetch(c->rt, user);
}

static uint64_t sink_fetch_gen(void *opaque)
{
    kc_consumer_t *c = opaque;
    return kc_rt_fetch_gen(c->rt);
}

static void sink_at_end(void *opaque, void *user, int64_t end)
{
    (void)opaque;
    kc_rt_part_at_end(user, end);
}

static int64_t sink_budget(void *opaque)
{
    kc_consumer_t *c = opaque;
    return kc_rt_fetch_budget(c->rt);
}

static void cpart_name(const void *ctx, size_t pos, const char **topic, int32_t *partition)
{
    const kc_cpart_t *p = &((const kc_consumer_t *)ctx)->parts[pos];
    *topic = p->topic;
    *partition = p->partition;
}

static ssize_t find(const kc_consumer_t *c, const char *topic, int32_t partition)
{
    return kc_pidx_find_name(&c->parts_at, cpart_name, c, topic, partition);
}

/* The runtime partition of an assigned partition: the manual table's, else the group's (not
 * one being revoked); NULL when neither holds it. */
static kc_rt_part_t *part_of(const kc_consumer_t *c, const char *topic, int32_t partition)
{
    ssize_t i = find(c, topic, partition);
    if (i >= 0)
        return c->parts[i].rtp;
    return c->grp ? kc_rt_group_find(c->grp, topic, partition) : NULL;
}

/* A partition kc_close revoked: its entry stays in the table, and its runtime part stays alive,
 * until kc_destroy, so the final commit reads the offset its callbacks (and its on_revoke's
 * kc_store_offset) left. */
static bool kept_for_close(const kc_consumer_t *c, const kc_rt_part_t *p)
{
    ssize_t i = find(c, p->pub.topic, p->pub.partition); /* one entry per topic-partition */
    return i >= 0 && c->parts[i].rtp == p && c->parts[i].closing;
}

/* Older copies of topic[partition] still revoking (REVOKE_DONE not drained). */
static size_t revoking_copies(const kc_consumer_t *c, const char *topic, int32_t partition)
{
    size_t n = 0;
    for (size_t i = 0; i < c->revoking; i++)
        n += c->revs[i]->pub.partition == partition && strcmp(c->revs[i]->pub.topic, topic) == 0;
    return n;
}

/* Takes p out of `revs`; false when it is not a manual copy. */
static bool revs_drop(kc_consumer_t *c, const kc_rt_part_t *p)
{
    for (size_t i = 0; i < c->revoking; i++) {
        if (c->revs[i] == p) {
            c->revs[i] = c->revs[--c->revoking];
            return true;
        }
    }
    return false;
}

bool kc_consumer_copy_revoking(const kc_consumer_t *c, const char *topic, int32_t partition)
{
    return revoking_copies(c, topic, partition) > 0;
}

/* A manual copy's REVOKE_DONE: frees it, and starts the newer copy of the same topic-partition
 * that waits for it once no older copy is left: the manual table's (held by add_one) or, after
 * kc_unassign and kc_subscribe, the group's (held by the group's assign hook). So its on_assign
 * starts after the last old on_revoke returned (that worker's REVOKED store, acquired by
 * kc_rt_part_free, happens-before the run queue push of kc_rt_part_unhold). */
static void manual_revoke_done(kc_consumer_t *c, kc_rt_part_t *p)
{
    bool last = revs_drop(c, p) && revoking_copies(c, p->pub.topic, p->pub.partition) == 0;
    ssize_t i = last ? find(c, p->pub.topic, p->pub.partition) : -1;
    kc_rt_part_t *next = NULL;
    if (i >= 0 && c->parts[i].held) {
        c->parts[i].held = false;
        next = c->parts[i].rtp;
    } else if (last && c->grp) {
        next = kc_rt_group_find(c->grp, p->pub.topic, p->pub.partition); /* held or not */
    }
    kc_rt_part_free(p);
    if (next)
        kc_rt_part_unhold(next); /* nothing when it was not held */
}

static void on_cmpl(void *ctx, const kc_rt_cmpl_t *m)
{
    kc_consumer_t *c = ctx;
    kc_rt_part_t *p = m->part;
    switch (m->type) {
    case KC_RT_CMPL_REVOKE_DONE:
        if (c->grp && kc_rt_group_on_revoke_done(c->grp, p))
            break;                  /* the group's: freed after its commit and drop steps */
        if (kept_for_close(c, p)) { /* kc_rt_free frees it, after the final commit */
            c->close_revoking--;
            break;
        }
        manual_revoke_done(c, p);
        break;
    case KC_RT_CMPL_DRAINED:
        kc_engine_wake(c->e);
        break;
    case KC_RT_CMPL_PARKED: /* only the group's partitions park (on_rebalance) */
        if (c->grp)
            kc_rt_group_on_parked(c->grp, p);
        break;
    case KC_RT_CMPL_REBALANCED:
        if (c->grp)
            kc_rt_group_on_rebalanced(c->grp, m->offset);
        break;
    case KC_RT_CMPL_PAUSED:
    case KC_RT_CMPL_STOPPED:
        /* The engine entry is found by name, and a newer copy of the partition may own that
         * name by now (assigned again while this one was revoking): only the copy that the
         * assignment holds pauses it. m->part cannot be a freed copy's address reused:
         * kc_rt_drain_completions hands over a REVOKE_DONE (which frees its part) only after
         * every completion that named the part, and a copy added while another lives has
         * its own address. */
        if (part_of(c, p->pub.topic, p->pub.partition) == p)
            kc_engine_pause(c->e, p->pub.topic, p->pub.partition, 1, NULL);
        break;
    case KC_RT_CMPL_SHARE_ACK: {
        /* Before this partition's REVOKE_DONE (same ring, in order): the part and its engine
         * entry are still there. */
        if (m->ack == KC_RT_SHARE_LAPSED) {
            kc_engine_share_lapsed(c->e, p->pub.topic, p->pub.partition, m->offset, m->last,
                                   m->delivery_count);
            break;
        }
        kc_error_t e;
        if (kc_engine_share_ack(c->e, p->pub.topic, p->pub.partition, m->offset, m->last,
                                m->delivery_count, m->ack, &e) != KC_OK)
            share_ack_unsent(c, p, m->offset, m->last, &e);
        break;
    }
    default:
        break;
    }
}

/* The completion wake-up (dispatch.h, kc_rt_wake_claim): re-armed with a seq_cst fence before
 * the drain, which pairs with the claim's fence in wake_hook; without the pair a completion can
 * be stranded on ARM64 (store-buffer pattern). rt_live is written and read on this thread only. */
static void wake_run(kc_loop_t *loop, kc_loop_cmd_t *cmd)
{
    (void)loop;
    kc_consumer_t *c = cmd->opaque;
    kc_rt_wake_rearm(&c->wake_pending);
    kc_consumer_drain_completions(c);
}

void kc_consumer_drain_completions(kc_consumer_t *c)
{
    if (!atomic_load_explicit(&c->rt_live, memory_order_acquire))
        return;
    kc_share_commit_mark(c); /* before the drain: share_commit.c */
    kc_rt_drain_completions(c->rt, on_cmpl, c);
    kc_share_commit_run(c);
}

/* Worker side (kc_rt_post calls it after the ring push): one command in the queue at a time. */
static void wake_hook(void *ctx)
{
    kc_consumer_t *c = ctx;
    if (kc_rt_wake_claim(&c->wake_pending))
        kc_netthread_post(c->nt, &c->wake_cmd);
}

static void finish_later(void *opaque, kc_err_t rc, const kc_error_t *err,
                         const kc_engine_offset_t *res, size_t n)
{
    kc_ccall_t *k = opaque;
    kc_error_t why;
    if (err)
        why = *err;
    if (k->op == KC_COP_COMMIT && k->c->grp && !kc_conf_share(k->c->conf))
        /* network thread: the group reads the answer (a share group's commits are not its) */
        kc_rt_group_commit_result(k->c->grp, rc, err ? &why : NULL, res, n);
    pthread_mutex_lock(&k->mu);
    k->fin_rc = rc;
    if (err)
        k->fin_err = why;
    if (k->op == KC_COP_COMMIT && k->want_results && !k->results) {
        k->results = kc_consumer_commit_results(rc, res, n);
        k->n_results = k->results ? n : 0;
    }
    for (size_t i = 0; k->out && i < n; i++) {
        ssize_t j = -1;
        for (size_t t = 0; t < k->n && j < 0; t++)
            if (k->out[t].partition == res[i].partition &&
                strcmp(k->out[t].topic, res[i].topic) == 0)
                j = (ssize_t)t;
        if (j >= 0)
            k->out[j].offset =
                res[i].error == 0 && res[i].offset >= 0 ? res[i].offset : KC_OFFSET_INVALID;
        if (j >= 0 && k->meta_out && !k->meta_out[j] && res[i].error == 0 && res[i].metadata)
            k->meta_out[j] = strdup(res[i].metadata); /* NULL when out of memory: none */
    }
    k->done = 1;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

/* A revoke of a manual copy: on_revoke runs on its worker, its REVOKE_DONE frees it. */
static void revoke_copy(kc_consumer_t *c, kc_rt_part_t *rtp)
{
    kc_rt_part_revoke(rtp, false);
    c->revs[c->revoking++] = rtp; /* room reserved by add_one */
}

static kc_err_t add_one(kc_consumer_t *c, const kc_topic_partition_t *tp, kc_error_t *err)
{
    if (find(c, tp->topic, tp->partition) >= 0)
        return KC_OK; /* already assigned: kept running */
    if (c->revs_cap < c->n + c->revoking + 1) {
        size_t cap = (c->n + c->revoking + 1) * 2;
        kc_rt_part_t **nr = realloc(c->revs, cap * sizeof *nr);
        if (!nr)
            return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
        c->revs = nr;
        c->revs_cap = cap;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        kc_cpart_t *np = realloc(c->parts, cap * sizeof *np);
        if (!np)
            return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
        c->parts = np;
        c->cap = cap;
    }
    /* Everything that can fail before anything is added: the copy of the name, the index's room
     * (inserting into it then cannot fail). */
    char *topic = strdup(tp->topic);
    if (!topic || kc_pidx_reserve(&c->parts_at, c->n + 1, err) != KC_OK) {
        free(topic);
        return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
    }
    int64_t start = tp->offset >= 0                     ? tp->offset
                    : tp->offset == KC_OFFSET_BEGINNING ? KC_ENGINE_START_EARLIEST
                    : tp->offset == KC_OFFSET_END       ? KC_ENGINE_START_LATEST
                                                        : KC_ENGINE_START_RESET;
    /* KC_OFFSET_STORED without group offsets here: auto.offset.reset (the committed offset is
     * resolved by kc_assign before this, when group.id is set). */
    /* An older copy still revoking (kc_unassign or a kc_assign that dropped it, its on_revoke
     * or last on_records maybe still running): this one is fetched from now on, but runs only
     * after that copy's REVOKE_DONE (on_cmpl), so no callbacks of the two overlap. */
    bool held = revoking_copies(c, tp->topic, tp->partition) > 0;
    kc_rt_part_t *rtp =
        kc_rt_part_add_held(c->rt, tp->topic, tp->partition, start >= 0 ? start : 0, held, false);
    if (!rtp) {
        free(topic);
        return kc_fail(err, KC_ERR_NOMEM, "assign: out of memory");
    }
    kc_err_t rc = kc_engine_add(c->e, tp->topic, tp->partition, start, rtp, err);
    if (rc != KC_OK) {
        free(topic);
        revoke_copy(c, rtp);
        return rc;
    }
    if (start >= 0)
        kc_rt_part_set_start(rtp, start); /* kc_position before the first delivery */
    kc_pidx_insert(&c->parts_at, kc_pidx_hash_name(topic, tp->partition), c->n);
    kc_cpart_t *cp = &c->parts[c->n++];
    cp->topic = topic;
    cp->partition = tp->partition;
    cp->rtp = rtp;
    cp->closing = false;
    cp->held = held;
    c->assignment_changed = true;
    return KC_OK;
}

static void remove_at(kc_consumer_t *c, size_t i)
{
    kc_cpart_t *p = &c->parts[i], *last = &c->parts[c->n - 1];
    kc_engine_remove(c->e, p->topic, p->partition, NULL);
    revoke_copy(c, p->rtp); /* a held one never ran: no callback at all */
    kc_pidx_remove(&c->parts_at, kc_pidx_hash_name(p->topic, p->partition), i);
    if (last != p)
        kc_pidx_move(&c->parts_at, kc_pidx_hash_name(last->topic, last->partition), c->n - 1, i);
    free(p->topic);
    *p = *last;
    c->n--;
    c->assignment_changed = true;
}

/* KC_EVENT_ASSIGNMENT after a manual change: the whole manual assignment, once per call that
 * changed it (also one that failed part-way: what it changed is the new assignment). */
/* The manual assignment, calloc'd (topics borrowed from the table); NULL out of memory. */
static kc_topic_partition_t *manual_list(const kc_consumer_t *c)
{
    kc_topic_partition_t *tps = calloc(c->n ? c->n : 1, sizeof *tps);
    for (size_t i = 0; tps && i < c->n; i++)
        tps[i] = (kc_topic_partition_t){c->parts[i].topic, c->parts[i].partition, 0};
    return tps;
}

static void post_manual_assignment(kc_consumer_t *c)
{
    if (!c->assignment_changed)
        return;
    kc_topic_partition_t *tps = manual_list(c);
    if (!tps)
        return; /* out of memory: the next change posts the whole set again */
    if (kc_rt_post_assignment(c->rt, tps, c->n) == KC_OK)
        c->assignment_changed = false;
    free(tps);
}

/* kc_incremental_unassign: every entry must be assigned (checked first, so a refusal changes
 * nothing); those are revoked, the others keep running. */
static kc_err_t unassign_some(kc_consumer_t *c, const kc_topic_partition_t *tps, size_t n,
                              kc_error_t *err)
{
    for (size_t j = 0; j < n; j++)
        if (find(c, tps[j].topic, tps[j].partition) < 0)
            return kc_fail(err, KC_ERR_NOT_FOUND,
                           "kc_incremental_unassign: %s[%d] is not assigned (nothing removed)",
                           tps[j].topic, (int)tps[j].partition);
    for (size_t j = 0; j < n; j++) {
        ssize_t i = find(c, tps[j].topic, tps[j].partition);
        if (i >= 0) /* a duplicate entry was removed already */
            remove_at(c, (size_t)i);
    }
    return KC_OK;
}

/* kc_assignment: the group's or the manual one, as one block for free(). */
static kc_err_t assignment_block(kc_consumer_t *c, kc_ccall_t *k)
{
    size_t n = c->n;
    kc_topic_partition_t *tps =
        kc_rt_group_subscribed(c->grp) ? kc_rt_group_assignment(c->grp, &n) : manual_list(c);
    kc_topic_partition_t *block = tps && n ? kc_consumer_tp_block(tps, n) : NULL;
    free(tps);
    if (!tps || (n && !block))
        return kc_fail(&k->err, KC_ERR_NOMEM, "kc_assignment: out of memory");
    k->result = block;
    k->value = (int64_t)n;
    return KC_OK;
}

/* kc_seek's network-thread half: the engine's position, then the runtime (seek.c: drop stale
 * batches, move the floor). */
static kc_err_t seek_one(kc_consumer_t *c, const char *topic, int32_t partition, int kind,
                         int64_t value, kc_error_t *err)
{
    if (kc_conf_share(c->conf)) /* the broker decides what a share group's member gets */
        return kc_fail(err, KC_ERR_STATE,
                       "seek: a share group has no positions of its own; records are handed out "
                       "by the broker");
    kc_err_t rc = kc_engine_seek(c->e, topic, partition, (kc_engine_seek_t)kind, value, err);
    if (rc == KC_OK) {
        kc_rt_part_t *sp = part_of(c, topic, partition);
        if (sp)
            kc_rt_part_seek(sp, kind == KC_SEEK_OFFSET ? value : -1);
    }
    return rc;
}

/* kc_assign: the difference between the manual assignment and k->tps. Partitions not listed
 * are revoked; listed ones already assigned stay running untouched (no on_revoke/on_assign, no
 * re-delivery), except that an explicit offset in the caller's entry is a seek, as kc_seek;
 * the rest are added. */
static kc_err_t assign_diff(kc_consumer_t *c, kc_ccall_t *k)
{
    /* The entries the list names, marked by position: a search per listed entry, not a walk of
     * the list per assigned one. */
    bool *listed = calloc(c->n ? c->n : 1, sizeof *listed);
    if (!listed)
        return kc_fail(&k->err, KC_ERR_NOMEM, "assign: out of memory");
    for (size_t j = 0; j < k->n; j++) {
        ssize_t i = find(c, k->tps[j].topic, k->tps[j].partition);
        if (i >= 0)
            listed[i] = true;
    }
    for (size_t i = c->n; i-- > 0;) /* remove_at moves the last (already seen) entry into i */
        if (!listed[i])
            remove_at(c, i);
    free(listed);
    size_t stay = c->n; /* parts[0 .. stay) were assigned before; add_one appends */
    kc_err_t rc = KC_OK;
    for (size_t j = 0; j < k->n && rc == KC_OK; j++) {
        const kc_topic_partition_t *tp = &k->tps[j];
        ssize_t i = find(c, tp->topic, tp->partition);
        if (i < 0 || (size_t)i >= stay) {
            rc = add_one(c, tp, &k->err);
            continue;
        }
        int64_t o = k->asked[j].offset; /* KC_OFFSET_STORED (or another sentinel): untouched */
        if (o >= 0)
            rc = seek_one(c, tp->topic, tp->partition, KC_SEEK_OFFSET, o, &k->err);
        else if (o == KC_OFFSET_BEGINNING || o == KC_OFFSET_END)
            rc = seek_one(c, tp->topic, tp->partition,
                          o == KC_OFFSET_BEGINNING ? KC_SEEK_BEGINNING : KC_SEEK_END, 0, &k->err);
    }
    return rc;
}

static kc_err_t commit_all(kc_ccall_t *k)
{
    kc_consumer_t *c = k->c;
    if (!c->group)
        return kc_fail(&k->err, KC_ERR_CONFIG, "commit needs group.id");
    if (kc_conf_share(c->conf)) {
        if (k->tps)
            return kc_fail(&k->err, KC_ERR_INVALID_ARG,
                           "commit: a share group commits its acknowledgements, not offsets: "
                           "pass no partitions (NULL, 0)");
        return kc_share_commit_start(c, k->timeout_ms, finish_later, k, &k->err);
    }
    size_t n = k->tps ? k->n : c->n, m = 0;
    kc_engine_offset_t *offs = calloc(n ? n : 1, sizeof *offs);
    if (!offs)
        return kc_fail(&k->err, KC_ERR_NOMEM, "commit: out of memory");
    for (size_t i = 0; i < n; i++) {
        if (k->tps) {
            offs[m++] = (kc_engine_offset_t){k->tps[i].topic,
                                             k->tps[i].partition,
                                             k->tps[i].offset,
                                             -1,
                                             k->meta_in ? k->meta_in[i] : NULL,
                                             0};
        } else {
            int64_t o = kc_rt_part_committable(c->parts[i].rtp);
            if (o >= 0)
                offs[m++] =
                    (kc_engine_offset_t){c->parts[i].topic, c->parts[i].partition, o, -1, NULL, 0};
        }
    }
    kc_err_t rc = KC_OK;
    /* kc_close's final commit (internal) is the manual assignment's: a group member's
     * revocation committed its partitions itself. */
    if (kc_rt_group_subscribed(c->grp) && !k->internal) {
        /* A group member commits under its own identity, read by the group module when the
         * request is built (group.h); the manual table above is empty then, so
         * tps == NULL means the group's held partitions. */
        bool none = false;
        rc = kc_rt_group_commit(c->grp, k->tps ? offs : NULL, m, k->timeout_ms, finish_later, k,
                                &none, &k->err);
        if (rc == KC_OK && none)
            k->done = 1;
    } else if (m == 0) {
        k->done = 1; /* nothing processed yet: nothing to commit */
    } else {
        /* No membership: the anonymous form (engine/offsets.h), which the broker honours while
         * the group has no members. */
        kc_commit_identity_t who;
        rc = kc_offsets_identity_anonymous(&who, c->group, &k->err);
        if (rc == KC_OK)
            rc = kc_engine_commit(c->e, &who, offs, m, k->timeout_ms, finish_later, k, &k->err);
    }
    free(offs);
    return rc;
}

/* The network thread's half of the close gate (consumer_int.h, KC_PHASE_*): authoritative, since
 * commands run in order here and the closing thread stores each phase before it posts the command
 * that depends on it. */
static bool past_close_gate(const kc_ccall_t *k)
{
    return k->internal || k->op == KC_COP_CLOSE || k->op == KC_COP_RT_DEAD ||
           k->op == KC_COP_GROUP_CLOSE || k->op == KC_COP_COMMITS_IDLE || k->op == KC_COP_NEW;
}

static bool refused_by_close(kc_consumer_t *c, kc_ccall_t *k)
{
    int phase = atomic_load_explicit(&c->phase, memory_order_relaxed);
    bool assignment = k->op == KC_COP_ADD || k->op == KC_COP_ASSIGN || k->op == KC_COP_UNASSIGN ||
                      k->op == KC_COP_REMOVE || k->op == KC_COP_SUBSCRIBE ||
                      k->op == KC_COP_UNSUBSCRIBE;
    if (past_close_gate(k))
        return false;
    if (!c->e || phase == KC_PHASE_CLOSED) {
        k->rc = kc_fail(&k->err, KC_ERR_CLOSED, "consumer is closed");
        return true;
    }
    if (phase == KC_PHASE_CLOSING && assignment) {
        k->rc = kc_fail(&k->err, KC_ERR_CLOSED,
                        "consumer is closing: the assignment no longer changes");
        return true;
    }
    return false;
}

static void on_net(kc_loop_t *loop, void *arg)
{
    kc_ccall_t *k = arg;
    kc_consumer_t *c = k->c;
    ssize_t i;
    kc_rt_part_t *rp;
    k->rc = KC_OK;
    if (refused_by_close(c, k))
        return;
    switch (k->op) {
    case KC_COP_NEW: {
        kc_engine_conf_t ec;
        kc_engine_conf_defaults(&ec);
        const kc_conf_t *f = c->conf;
        ec.bootstrap_servers = kc_conf_str(f, KC_CONF_BOOTSTRAP_SERVERS);
        ec.client_id = kc_conf_str(f, KC_CONF_CLIENT_ID);
        ec.client_rack = kc_conf_str(f, KC_CONF_CLIENT_RACK);
        ec.fetch_max_wait_ms = (int32_t)kc_conf_int(f, KC_CONF_FETCH_MAX_WAIT_MS);
        ec.fetch_min_bytes = (int32_t)kc_conf_int(f, KC_CONF_FETCH_MIN_BYTES);
        ec.fetch_max_bytes = (int32_t)kc_conf_int(f, KC_CONF_FETCH_MAX_BYTES);
        ec.max_partition_fetch_bytes = (int32_t)kc_conf_int(f, KC_CONF_MAX_PARTITION_FETCH_BYTES);
        ec.isolation_level = strcmp(kc_conf_str(f, KC_CONF_ISOLATION_LEVEL), "read_committed") == 0;
        const char *r = kc_conf_str(f, KC_CONF_AUTO_OFFSET_RESET);
        ec.auto_offset_reset = strcmp(r, "earliest") == 0 ? KC_RESET_EARLIEST
                               : strcmp(r, "none") == 0   ? KC_RESET_NONE
                                                          : KC_RESET_LATEST;
        ec.metadata_max_age_ms = kc_conf_int(f, KC_CONF_METADATA_MAX_AGE_MS);
        ec.request_timeout_ms = (int)kc_conf_int(f, KC_CONF_REQUEST_TIMEOUT_MS);
        ec.retry_backoff_ms = kc_conf_int(f, KC_CONF_RETRY_BACKOFF_MS);
        ec.retry_backoff_max_ms = kc_conf_int(f, KC_CONF_RETRY_BACKOFF_MAX_MS);
        ec.connect_timeout_ms = (int)kc_conf_int(f, KC_CONF_SOCKET_CONNECTION_SETUP_TIMEOUT_MS);
        ec.reconnect_backoff_ms = (int)kc_conf_int(f, KC_CONF_RECONNECT_BACKOFF_MS);
        ec.reconnect_backoff_max_ms = (int)kc_conf_int(f, KC_CONF_RECONNECT_BACKOFF_MAX_MS);
        ec.keepalive = kc_conf_bool(f, KC_CONF_SOCKET_KEEPALIVE_ENABLE);
        ec.idle_timeout_ms = (int)kc_conf_int(f, KC_CONF_CONNECTIONS_MAX_IDLE_MS);
        ec.dns_canonical_bootstrap = strcmp(kc_conf_str(f, KC_CONF_CLIENT_DNS_LOOKUP),
                                            "resolve_canonical_bootstrap_servers_only") == 0;
        ec.rebootstrap =
            strcmp(kc_conf_str(f, KC_CONF_METADATA_RECOVERY_STRATEGY), "rebootstrap") == 0;
        ec.rebootstrap_trigger_ms =
            kc_conf_int(f, KC_CONF_METADATA_RECOVERY_REBOOTSTRAP_TRIGGER_MS);
        ec.security = c->sec;
        kc_engine_sink_t sink = {.records = sink_records,
                                 .error = sink_error,
                                 .may_fetch = sink_may_fetch,
                                 .opaque = c,
                                 .budget = sink_budget,
                                 .share_records = sink_share_records,
                                 .fetch_gen = sink_fetch_gen};
        if (kc_conf_bool(f, KC_CONF_ENABLE_PARTITION_EOF))
            sink.at_end = sink_at_end;
        if (kc_conf_share(f)) {
            sink.share_acked = sink_share_acked;
            c->share_ack_all = strcmp(kc_conf_str(f, KC_CONF_SHARE_ACK_EVENTS), "all") == 0;
        }
        k->rc = kc_engine_new(&c->e, loop, &ec, &sink, &k->err);
        if (k->rc == KC_OK && kc_conf_share(f))
            k->rc = kc_engine_share_enable(
                c->e, kc_conf_str(f, KC_CONF_GROUP_ID),
                (int32_t)kc_conf_int(f, KC_CONF_CALLBACK_BATCH_MAX_RECORDS),
                strcmp(kc_conf_str(f, KC_CONF_SHARE_ACQUIRE_MODE), "record_limit") == 0, &k->err);
        if (k->rc == KC_OK) {
            kc_consumer_stats_start(c, loop);
            kc_consumer_autocommit_start(c, loop);
            kc_consumer_telemetry_start(c);
        }
        break;
    }
    case KC_COP_ADD:
        if (kc_conf_share(c->conf))
            k->rc = kc_fail(&k->err, KC_ERR_STATE,
                            "assign: a share group's member is given partitions by its group "
                            "(kc_subscribe)");
        else if (kc_rt_group_subscribed(c->grp))
            k->rc = kc_fail(&k->err, KC_ERR_STATE, "assign: the consumer is subscribed to a group");
        for (size_t j = 0; j < k->n && k->rc == KC_OK; j++)
            k->rc = add_one(c, &k->tps[j], &k->err);
        post_manual_assignment(c);
        break;
    case KC_COP_ASSIGN:
        if (kc_conf_share(c->conf))
            k->rc = kc_fail(&k->err, KC_ERR_STATE,
                            "assign: a share group's member is given partitions by its group "
                            "(kc_subscribe)");
        else if (kc_rt_group_subscribed(c->grp))
            k->rc = kc_fail(&k->err, KC_ERR_STATE, "assign: the consumer is subscribed to a group");
        else
            k->rc = assign_diff(c, k);
        post_manual_assignment(c);
        break;
    case KC_COP_REMOVE:
        if (kc_rt_group_subscribed(c->grp))
            k->rc = kc_fail(&k->err, KC_ERR_STATE,
                            "kc_incremental_unassign: the consumer is subscribed to a group");
        else
            k->rc = unassign_some(c, k->tps, k->n, &k->err);
        post_manual_assignment(c);
        break;
    case KC_COP_ASSIGNMENT:
        k->rc = assignment_block(c, k);
        break;
    case KC_COP_SEEK_MANY:
        /* One command: no other call sees some of the list moved and some not. */
        for (size_t j = 0; j < k->n && k->rc == KC_OK; j++) {
            int64_t o = k->tps[j].offset;
            int kind = o >= 0                     ? KC_SEEK_OFFSET
                       : o == KC_OFFSET_BEGINNING ? KC_SEEK_BEGINNING
                                                  : KC_SEEK_END;
            k->rc =
                seek_one(c, k->tps[j].topic, k->tps[j].partition, kind, o >= 0 ? o : 0, &k->err);
        }
        break;
    case KC_COP_UNASSIGN:
        /* A group owns the assignment: manual calls would fight the coordinator's. */
        if (kc_rt_group_subscribed(c->grp)) {
            k->rc = kc_fail(&k->err, KC_ERR_STATE,
                            "assign/unassign: the consumer is subscribed to a group");
            break;
        }
        while (c->n)
            remove_at(c, c->n - 1);
        post_manual_assignment(c);
        break;
    case KC_COP_SEEK:
        k->rc = seek_one(c, k->topic, k->partition, k->kind, k->value, &k->err);
        break;
    case KC_COP_PAUSE:
    case KC_COP_RESUME:
        for (size_t j = 0; j < k->n; j++) {
            if (!(rp = part_of(c, k->tps[j].topic, k->tps[j].partition))) {
                k->rc = kc_fail(&k->err, KC_ERR_NOT_FOUND, "%s[%d] is not assigned",
                                k->tps[j].topic, k->tps[j].partition);
                continue;
            }
            if (k->op == KC_COP_PAUSE)
                kc_rt_part_pause(rp);
            else
                kc_rt_part_resume(rp);
            kc_engine_pause(c->e, k->tps[j].topic, k->tps[j].partition, k->op == KC_COP_PAUSE,
                            NULL);
        }
        break;
    case KC_COP_COMMIT:
        k->rc = commit_all(k);
        break;
    case KC_COP_COMMITTED: {
        kc_engine_offset_t *offs = calloc(k->n ? k->n : 1, sizeof *offs);
        if (!offs) {
            k->rc = kc_fail(&k->err, KC_ERR_NOMEM, "committed: out of memory");
            break;
        }
        for (size_t j = 0; j < k->n; j++)
            offs[j] = (kc_engine_offset_t){k->tps[j].topic, k->tps[j].partition, -1, -1, NULL, 0};
        k->rc =
            kc_rt_group_subscribed(c->grp)
                ? kc_rt_group_committed(c->grp, offs, k->n, k->timeout_ms, finish_later, k, &k->err)
                : kc_engine_committed(c->e, c->group, offs, k->n, k->timeout_ms, finish_later, k,
                                      &k->err);
        free(offs);
        break;
    }
    case KC_COP_CLOSE:
        /* Stop fetching every partition and start its revocation (on_revoke after its in-flight
         * callback returns); the entries stay for the final commit (kept_for_close). */
        for (size_t j = 0; j < c->n; j++) {
            kc_cpart_t *cp = &c->parts[j];
            if (cp->closing)
                continue;
            cp->closing = true;
            kc_engine_remove(c->e, cp->topic, cp->partition, NULL);
            kc_rt_part_revoke(cp->rtp, false); /* a held copy never ran: no callback at all */
            c->close_revoking++;
        }
        kc_rt_drain_completions(c->rt, on_cmpl, c);
        k->done = c->revoking == 0 && c->close_revoking == 0;
        break;
    case KC_COP_COMMITS_IDLE:
        k->done = c->async_pending == 0;
        break;
    case KC_COP_STATS:
        if (!c->e)
            k->rc = kc_fail(&k->err, KC_ERR_CLOSED, "consumer is closed");
        else if (!(k->text = kc_consumer_stats_json(c)))
            k->rc = kc_fail(&k->err, KC_ERR_NOMEM, "stats: out of memory");
        break;
    case KC_COP_POSITION:
        if ((rp = part_of(c, k->topic, k->partition)))
            k->value = kc_rt_part_position(rp);
        else
            k->rc = kc_fail(&k->err, KC_ERR_NOT_FOUND, "%s[%d] is not assigned", k->topic,
                            k->partition);
        break;
    case KC_COP_POSITIONS: {
        size_t missing = 0, first = 0;
        for (size_t j = 0; j < k->n; j++) {
            kc_topic_partition_t *tp = &k->out[j];
            int64_t v = (rp = part_of(c, tp->topic, tp->partition)) ? kc_rt_part_position(rp) : -1;
            tp->offset = v >= 0 ? v : KC_OFFSET_INVALID;
            if (!rp && missing++ == 0)
                first = j;
        }
        if (missing)
            k->rc = kc_fail(
                &k->err, KC_ERR_NOT_FOUND,
                "kc_position_list: %s[%d] is not assigned (%zu of %zu entries not assigned)",
                k->out[first].topic, (int)k->out[first].partition, missing, k->n);
        break;
    }
    case KC_COP_STORE:
        if ((i = find(c, k->topic, k->partition)) >= 0)
            kc_rt_part_store(c->parts[i].rtp, k->value);
        else if (c->grp) /* the group's partitions (group.c), revoking ones included */
            k->rc = kc_rt_group_store(c->grp, k->topic, k->partition, k->value, &k->err);
        else
            k->rc = kc_fail(&k->err, KC_ERR_NOT_FOUND, "%s[%d] is not assigned", k->topic,
                            k->partition);
        break;
    case KC_COP_SUBSCRIBE:
    case KC_COP_UNSUBSCRIBE:
    case KC_COP_SUBSCRIPTION:
    case KC_COP_GROUP_GENERATION:
    case KC_COP_GROUP_CLOSE:
        kc_rt_group_call(c, k, on_cmpl);
        break;
    case KC_COP_SHARE_RENEW:
        k->rc = kc_share_renew_start(c, k);
        break;
    case KC_COP_RT_DEAD:
        atomic_store_explicit(&c->rt_live, 0, memory_order_release);
        kc_consumer_stats_stop(c, loop);
        kc_consumer_autocommit_stop(c, loop);
        kc_share_commit_close(c);
        if (c->e) {
            kc_engine_close(c->e, k->timeout_ms);
            c->group_stats = NULL; /* the hook's opaque is the group freed here */
            kc_rt_group_free(c->grp);
            c->grp = NULL;
            kc_engine_free(c->e);
            c->e = NULL;
        }
        break;
    }
}

/* API misuse caught cheaply (include/kconsume.h, "Misuse"): a NULL handle, and a call that waits
 * for the network thread made from callback context. The latter would hang, not crash: the
 * network thread may itself be waiting for this very callback (a revoke, the close drain), and
 * a worker blocked here is one fewer to run the partitions the wait depends on. */
kc_err_t kc_consumer_guard(const kc_consumer_t *c, const char *fn, bool waits, kc_error_t *err)
{
    if (!c)
        return kc_fail(err, KC_ERR_INVALID_ARG, "%s: NULL consumer", fn);
    if (waits && kc_rt_in_worker())
        return kc_fail(err, KC_ERR_STATE,
                       "%s called from a kconsume callback: it would wait for work that waits "
                       "for this callback; call it from an app thread (in callbacks use "
                       "kc_commit_async, kc_seek, kc_pause, kc_store_offset)",
                       fn);
    return KC_OK;
}

kc_err_t kc_consumer_call(kc_consumer_t *c, kc_ccall_t *k, kc_error_t *err)
{
    if (!c)
        return kc_fail(err, KC_ERR_INVALID_ARG, "NULL consumer");
    k->c = c;
    /* Cheap early answer; the network thread's refused_by_close is the one that counts. */
    if (!past_close_gate(k) &&
        atomic_load_explicit(&c->phase, memory_order_relaxed) == KC_PHASE_CLOSED)
        return kc_fail(err, KC_ERR_CLOSED, "consumer is closed");
    kc_netthread_call(c->nt, on_net, k);
    if (k->rc != KC_OK && err)
        *err = k->err;
    return k->rc;
}

/* For calls answered later by a callback: waits for it (the engine guarantees one, by its
 * deadline or at close). */
kc_err_t kc_consumer_call_wait(kc_consumer_t *c, kc_ccall_t *k, kc_error_t *err)
{
    kc_err_t g =
        kc_consumer_guard(c, k->op == KC_COP_COMMITTED ? "kc_committed" : "kc_commit", true, err);
    if (g != KC_OK)
        return g;
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    kc_err_t rc = kc_consumer_call(c, k, err);
    if (rc == KC_OK) {
        pthread_mutex_lock(&k->mu);
        while (!k->done)
            pthread_cond_wait(&k->cv, &k->mu);
        rc = k->fin_rc;
        if (rc != KC_OK && err)
            *err = k->fin_err;
        pthread_mutex_unlock(&k->mu);
    }
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    return rc;
}

/* An optional string setting: NULL when unset (empty), as io/tls.h reads "not given". */
static const char *opt_str(const kc_conf_t *conf, kc_conf_id_t id)
{
    const char *v = kc_conf_str(conf, id);
    return v && *v ? v : NULL;
}

/* log.level (validated: one of the enum's names) as io/base/log.h's level. */
static int log_level(const char *name)
{
    if (strcmp(name, "error") == 0)
        return KC_LOG_ERROR;
    if (strcmp(name, "warn") == 0)
        return KC_LOG_WARN;
    return strcmp(name, "debug") == 0 ? KC_LOG_DEBUG : KC_LOG_INFO;
}

/* ---- the public API ------------------------------------------------------------------------ */

/* The first layout of kc_callbacks_t: what `size` 0 stands for, in this and every later
 * library, so a later library never reads members a program built against it lacks. */
#define CALLBACKS_V0_SIZE (offsetof(kc_callbacks_t, opaque) + sizeof(void *))

/* The caller's kc_callbacks_t as this library knows it (kconsume.h, `size`): the first layout
 * when size is 0, else `size` bytes of it (never more than ours); members past ours are
 * accepted only when none is set. */
static kc_err_t take_callbacks(const kc_callbacks_t *in, kc_callbacks_t *out, kc_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!in)
        return KC_OK; /* pull mode with no callbacks at all */
    size_t given = in->size ? in->size : CALLBACKS_V0_SIZE;
    if (given < CALLBACKS_V0_SIZE)
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "kc_callbacks_t.size is %zu: set it to 0 or sizeof(kc_callbacks_t) (%zu)",
                       in->size, sizeof *in);
    const unsigned char *tail = (const unsigned char *)in + sizeof *in;
    for (size_t i = 0; given > sizeof *in && i < given - sizeof *in; i++)
        if (tail[i])
            return kc_fail(err, KC_ERR_UNSUPPORTED,
                           "kc_callbacks_t sets a callback this library (kconsume %s) does not "
                           "have: it was built against a later kconsume.h",
                           kc_version());
    memcpy(out, in, given < sizeof *out ? given : sizeof *out);
    out->size = sizeof *out;
    return KC_OK;
}

KC_API kc_err_t kc_consumer_new(kc_conf_t *conf, const kc_callbacks_t *cbs, kc_consumer_t **out,
                                kc_error_t *err)
{
    if (!conf || !out)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_consumer_new: conf and out are required");
    kc_callbacks_t given;
    kc_err_t rc = take_callbacks(cbs, &given, err);
    if (rc != KC_OK)
        return rc;
    cbs = &given;
    rc = kc_conf_validate(conf, err);
    if (rc != KC_OK)
        return rc;
    if (!*kc_conf_str(conf, KC_CONF_BOOTSTRAP_SERVERS))
        return kc_fail(err, KC_ERR_CONFIG, "bootstrap.servers is required");
    /* security.protocol: the TLS context and SASL credentials every connection of this
     * consumer uses (io/conn_security.h); loaded now so bad material fails creation. */
    kc_conn_security_t *sec = NULL;
    kc_conn_security_conf_t scf = {
        .protocol = kc_conf_str(conf, KC_CONF_SECURITY_PROTOCOL),
        .tls = {.ca_location = opt_str(conf, KC_CONF_SSL_CA_LOCATION),
                .ca_pem = opt_str(conf, KC_CONF_SSL_CA_PEM),
                .crl_location = opt_str(conf, KC_CONF_SSL_CRL_LOCATION),
                .cert_location = opt_str(conf, KC_CONF_SSL_CERTIFICATE_LOCATION),
                .cert_pem = opt_str(conf, KC_CONF_SSL_CERTIFICATE_PEM),
                .key_location = opt_str(conf, KC_CONF_SSL_KEY_LOCATION),
                .key_pem = opt_str(conf, KC_CONF_SSL_KEY_PEM),
                .key_password = opt_str(conf, KC_CONF_SSL_KEY_PASSWORD),
                .keystore_location = opt_str(conf, KC_CONF_SSL_KEYSTORE_LOCATION),
                .keystore_password = opt_str(conf, KC_CONF_SSL_KEYSTORE_PASSWORD),
                .cipher_suites = opt_str(conf, KC_CONF_SSL_CIPHER_SUITES),
                .enabled_protocols = kc_conf_str(conf, KC_CONF_SSL_ENABLED_PROTOCOLS),
                .protocol = kc_conf_str(conf, KC_CONF_SSL_PROTOCOL),
                .endpoint_identification =
                    kc_conf_str(conf, KC_CONF_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM)},
        .sasl_mechanism = kc_conf_str(conf, KC_CONF_SASL_MECHANISM),
        .sasl_username = kc_conf_str(conf, KC_CONF_SASL_USERNAME),
        .sasl_password = kc_conf_str(conf, KC_CONF_SASL_PASSWORD),
        .kerberos = {.service_name = kc_conf_str(conf, KC_CONF_SASL_KERBEROS_SERVICE_NAME),
                     .principal = opt_str(conf, KC_CONF_SASL_KERBEROS_PRINCIPAL),
                     .keytab = opt_str(conf, KC_CONF_SASL_KERBEROS_KEYTAB),
                     .min_relogin_ms =
                         kc_conf_int(conf, KC_CONF_SASL_KERBEROS_MIN_TIME_BEFORE_RELOGIN)}};
    /* OAUTHBEARER: the first token now, on this thread (the token source may block), so a
     * consumer that cannot log in fails here with the reason (runtime/oauth_refresh.h). */
    kc_oauth_refresher_t *oauth = NULL;
    if ((rc = kc_oauth_refresher_new(conf, &oauth, err)) != KC_OK)
        return rc;
    scf.oauth = kc_oauth_refresher_slot(oauth);
    if ((rc = kc_conn_security_new(&scf, &sec, err)) != KC_OK) {
        kc_oauth_refresher_free(oauth);
        return rc;
    }
    kc_consumer_t *c = calloc(1, sizeof *c);
    if (!c) {
        kc_conn_security_free(sec);
        kc_oauth_refresher_free(oauth);
        return kc_fail(err, KC_ERR_NOMEM, "kc_consumer_new: out of memory");
    }
    c->sec = sec;
    c->oauth = oauth;
    c->conf = conf;
    kc_logger_init(&c->log, conf->log_cb, conf->log_opaque,
                   log_level(kc_conf_str(conf, KC_CONF_LOG_LEVEL)),
                   kc_conf_str(conf, KC_CONF_CLIENT_ID));
    if (c->oauth && (rc = kc_oauth_refresher_start(c->oauth, &c->log, err)) != KC_OK) {
        kc_conn_security_free(c->sec);
        kc_oauth_refresher_free(c->oauth);
        free(c);
        return rc;
    }
    c->cbs = *cbs;
    const char *g = kc_conf_str(conf, KC_CONF_GROUP_ID);
    c->group = *g ? strdup(g) : NULL;
    pthread_mutex_init(&c->ext_mu, NULL);
    pthread_mutex_init(&c->close_mu, NULL);
    kc_cond_init_monotonic(&c->close_cv);
    c->wake_cmd.fn = wake_run;
    c->wake_cmd.opaque = c;
    kc_loop_backend_t be;
    if ((rc = kc_loop_backend_parse(kc_conf_str(conf, KC_CONF_IO_BACKEND), &be, err)) != KC_OK ||
        (rc = kc_netthread_start(&c->nt, be, &c->log, err)) != KC_OK) {
        free(c->group);
        kc_conn_security_free(c->sec);
        kc_oauth_refresher_free(c->oauth);
        free(c);
        return rc;
    }
    kc_rt_opts_t o = {0};
    kc_rt_opts_from_conf(conf, &o);
    o.ring_slots = 256;
    o.quantum = 4;
    o.cbs = *cbs;
    if (!cbs->on_records) { /* pull mode (pull.c): the runtime's callback hands views to kc_poll */
        o.cbs.on_records = kc_pull_on_records;
        o.gate_closed = kc_pull_gate_closed;
        if ((rc = kc_pull_new(c, o.workers)) != KC_OK) {
            kc_netthread_stop(c->nt);
            free(c->group);
            kc_conn_security_free(c->sec);
            kc_oauth_refresher_free(c->oauth);
            free(c);
            return kc_fail(err, rc, "kc_consumer_new: out of memory");
        }
    }
    c->dec_conf.check_crcs = kc_conf_bool(conf, KC_CONF_CHECK_CRCS);
    c->dec_conf.decompress_max_bytes = (size_t)kc_conf_int(conf, KC_CONF_DECOMPRESS_MAX_BYTES);
    o.decoder = kc_rt_batch_decoder(&c->dec_conf);
    o.wake = wake_hook;
    o.wake_ctx = c;
    o.log = &c->log;
    if ((rc = kc_rt_new(&o, &c->rt, err)) != KC_OK) {
        kc_netthread_stop(c->nt);
        kc_pull_free(c);
        free(c->group);
        kc_conn_security_free(c->sec);
        kc_oauth_refresher_free(c->oauth);
        free(c);
        return rc;
    }
    atomic_store(&c->rt_live, 1);
    kc_ccall_t k = {.op = KC_COP_NEW};
    if ((rc = kc_consumer_call(c, &k, err)) != KC_OK) {
        kc_rt_shutdown(c->rt, false, 1000);
        kc_rt_free(c->rt);
        kc_netthread_stop(c->nt);
        kc_pull_free(c);
        free(c->group);
        kc_conn_security_free(c->sec);
        kc_oauth_refresher_free(c->oauth);
        free(c);
        return rc;
    }
    *out = c;
    return KC_OK;
}

/* Milliseconds left until deadline_ns (CLOCK_MONOTONIC), never below 0. */
static int left_ms(int64_t deadline_ns)
{
    int64_t left = (deadline_ns - kc_now_ns()) / 1000000;
    return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* The close itself, run by the first kc_close. Every step takes what is left of one deadline,
 * so the whole call is bounded by timeout_ms (plus the engine's bounded session close). The
 * order is the documented one: no new assignment or poll, stop fetching, in-flight callbacks
 * and held views finish, on_revoke (stores and async commits still allowed), the final commit,
 * fetch sessions closed and the group left, threads joined. */
static kc_err_t close_run(kc_consumer_t *c, int64_t deadline, kc_error_t *err)
{
    kc_err_t rc = KC_OK;
    atomic_store_explicit(&c->phase, KC_PHASE_CLOSING, memory_order_relaxed);
    /* pull.c: no new kc_poll; views nobody took are given back; views an app thread holds keep
     * their partition's revocation waiting until they are released. */
    kc_pull_close(c);
    rc = kc_rt_group_close_wait(c, left_ms(deadline),
                                err); /* a group member: revoke, commit, leave */
    /* Manual assignment: revoke every partition, wait for their on_revoke (REVOKE_DONE). A
     * quarter of the budget (at most 2 s) is kept for the final commit, so that one callback
     * still running at the deadline does not cost every other partition its commit (what is
     * committable never passes a callback in flight). */
    int64_t total = deadline - kc_now_ns();
    int64_t reserve = total / 4 < 2000000000LL ? total / 4 : 2000000000LL;
    int64_t revoke_deadline =
        c->group && kc_conf_bool(c->conf, KC_CONF_ENABLE_AUTO_COMMIT) && !kc_conf_share(c->conf)
            ? deadline - (reserve > 0 ? reserve : 0)
            : deadline;
    for (;;) {
        kc_ccall_t k = {.op = KC_COP_CLOSE};
        kc_consumer_call(c, &k, NULL);
        if (k.done)
            break;
        if (left_ms(revoke_deadline) == 0) {
            if (rc == KC_OK)
                rc = kc_fail(err, KC_ERR_TIMEOUT,
                             "close: callbacks or held views still running after the timeout");
            break;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    /* The final commit of a manual assignment: what every callback finished, or what was
     * stored, on_revoke included (a group member's revocation committed its own above). */
    if (c->group && kc_conf_bool(c->conf, KC_CONF_ENABLE_AUTO_COMMIT) && !kc_conf_share(c->conf)) {
        int left = left_ms(deadline);
        kc_error_t e2;
        kc_ccall_t k = {.op = KC_COP_COMMIT, .timeout_ms = left, .internal = true};
        kc_err_t crc = left > 0 ? kc_consumer_call_wait(c, &k, &e2)
                                : kc_fail(&e2, KC_ERR_TIMEOUT,
                                          "close: no time left for the "
                                          "final commit");
        if (crc != KC_OK && rc == KC_OK) {
            rc = crc;
            if (err)
                *err = e2;
        }
    }
    atomic_store_explicit(&c->phase, KC_PHASE_CLOSED, memory_order_relaxed);
    /* Async commits already sent (on_revoke's, say) get the broker's answer rather than the
     * engine close's KC_ERR_CLOSED, time permitting. No new one starts: the phase is CLOSED. */
    for (;;) {
        kc_ccall_t k = {.op = KC_COP_COMMITS_IDLE};
        kc_consumer_call(c, &k, NULL);
        if (k.done || left_ms(deadline) == 0)
            break;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    /* Fetch sessions closed with epoch -1, the engine (with the group) freed. */
    int left = left_ms(deadline);
    kc_ccall_t d = {.op = KC_COP_RT_DEAD, .timeout_ms = left < 2000 ? left : 2000};
    kc_consumer_call(c, &d, NULL);
    if (kc_rt_shutdown(c->rt, false, left_ms(deadline)) != KC_OK && rc == KC_OK)
        rc = kc_fail(err, KC_ERR_TIMEOUT, "close: callbacks still running after the timeout");
    return rc;
}

KC_API kc_err_t kc_close(kc_consumer_t *c, int timeout_ms, kc_error_t *err)
{
    if (!c)
        return KC_OK;
    kc_err_t g = kc_consumer_guard(c, "kc_close", true, err);
    if (g != KC_OK)
        return g; /* checked before anything changes: an app thread can still close it */
    if (timeout_ms < 0)
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "kc_close: timeout_ms %d < 0: the close is always bounded; give the "
                       "milliseconds it may take",
                       timeout_ms);
    int64_t deadline = kc_now_ns() + (int64_t)timeout_ms * 1000000;
    pthread_mutex_lock(&c->close_mu);
    if (c->close_state == KC_CLOSE_NONE) {
        c->close_state = KC_CLOSE_RUNNING;
        pthread_mutex_unlock(&c->close_mu);
        kc_error_t e = {0};
        kc_err_t rc = close_run(c, deadline, &e);
        if (rc != KC_OK && err)
            *err = e;
        pthread_mutex_lock(&c->close_mu);
        c->close_rc = rc;
        c->close_err = e;
        c->close_state = KC_CLOSE_DONE;
        pthread_cond_broadcast(&c->close_cv);
        pthread_mutex_unlock(&c->close_mu);
        return rc;
    }
    /* Another thread is closing: this call returns once that close is over, or at its own
     * timeout, so that a kc_destroy after any returned kc_close finds no close running
     * (kc_destroy also waits for it). */
    if (c->close_state == KC_CLOSE_DONE) { /* closed before this call: nothing to wait for */
        pthread_mutex_unlock(&c->close_mu);
        return KC_OK;
    }
    struct timespec dl = {(time_t)(deadline / 1000000000), (long)(deadline % 1000000000)};
    int to = 0;
    c->close_waiters++; /* kc_destroy waits for it to leave the mutex and condvar */
    while (c->close_state != KC_CLOSE_DONE && !to)
        to = pthread_cond_timedwait(&c->close_cv, &c->close_mu, &dl) == ETIMEDOUT;
    /* The close that ran answers for every caller waiting on it: one cut short (its own,
     * shorter timeout) is not reported as a complete close to a caller that allowed more. */
    kc_err_t rc = c->close_state == KC_CLOSE_DONE ? c->close_rc : KC_ERR_TIMEOUT;
    kc_error_t e = c->close_err;
    bool done = c->close_state == KC_CLOSE_DONE;
    if (--c->close_waiters == 0)
        pthread_cond_broadcast(&c->close_cv);
    pthread_mutex_unlock(&c->close_mu);
    if (!done)
        return kc_fail(err, KC_ERR_TIMEOUT,
                       "close: another thread's kc_close was still closing after %d ms",
                       timeout_ms);
    if (rc != KC_OK)
        kc_fail(err, rc, "close (by another thread's kc_close): %s", e.msg);
    return rc;
}

KC_API void kc_destroy(kc_consumer_t *c)
{
    if (!c)
        return;
    if (kc_rt_in_worker()) {
        /* void: nothing to return the error in. Freeing the worker that runs us would crash;
         * leaking the consumer and saying so is the lesser harm. */
        kc_log(KC_LOG_ERROR, "consumer",
               "kc_destroy called from a kconsume callback: ignored (call it from an app thread)");
        return;
    }
    kc_close(c, 0, NULL);
    /* A close another thread started (whose kc_close may not have returned) ends first. */
    pthread_mutex_lock(&c->close_mu);
    while (c->close_state != KC_CLOSE_DONE || c->close_waiters > 0)
        pthread_cond_wait(&c->close_cv, &c->close_mu);
    pthread_mutex_unlock(&c->close_mu);
    kc_pull_abandon(c); /* views still held: taken back, or joining would wait for them */
    /* Workers first (a callback kc_close left running may still post a command, e.g. its
     * kc_commit_async), then the network thread, which runs every command posted before its
     * stop (an async commit's start answers into the dispatcher's call list), then the
     * dispatcher, which hands those answers over. Freeing the dispatcher before the network
     * thread stopped left a window where such a command ran against freed memory. */
    kc_rt_shutdown(c->rt, false, -1);
    kc_netthread_stop(c->nt);
    kc_rt_free(c->rt);
    for (size_t i = 0; i < c->n; i++)
        free(c->parts[i].topic);
    free(c->parts);
    kc_pidx_free(&c->parts_at);
    free(c->revs); /* its parts were freed with the dispatcher */
    free(c->group);
    kc_consumer_ext_free(c);
    kc_pull_free(c);
    pthread_mutex_destroy(&c->close_mu);
    pthread_cond_destroy(&c->close_cv);
    kc_conf_destroy(c->conf);
    kc_conn_security_free(c->sec);     /* after the network thread: no connection uses it now */
    kc_oauth_refresher_free(c->oauth); /* the same: no connection reads its slot now */
    free(c);
}
