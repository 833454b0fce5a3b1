/*
 * A group member for the public consumer: engine/group/'s driver with the protocol
 * group.protocol names (the table below), its hooks implemented over the dispatcher
 * (dispatch.h) and the engine, and the group's partitions.
 *
 * Why the partitions live here and not in consumer.c's manual-assignment table: a revoked
 * partition must stay alive after its REVOKE_DONE until the reconciliation's COMMIT step has
 * read its committable offset and the DROP step has taken it out of the fetch session (the
 * engine's sink still names it as `user` until then). consumer.c asks kc_rt_group_on_revoke_done
 * first and frees only what the group does not claim.
 *
 * Owner: network thread (every function; the hooks are called there by engine/group/group.c). The
 * stats event is posted from there too (kc_rt_post_event is any-thread).
 */
#include "group.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "conf.h"
#include "consumer_int.h"
#include "proto/kafka_errors.h"
#include "rebalance.h"

typedef struct gpart {
    char *topic;
    int32_t partition;
    kc_rt_part_t *rtp;
    bool revoking, revoked, dropped;
} gpart_t;

struct kc_rt_group {
    kc_engine_t *e;
    kc_rt_t *rt;
    kc_group_t *g;
    gpart_t *p;
    size_t n, cap;
    kc_pidx_t at; /* p by (topic, partition): one entry each (h_assign) */
    bool failed;
    kc_consumer_t *c;    /* the consumer this group belongs to (member id, stats hook) */
    char member_id[128]; /* the id last given to kc_consumer_set_member_id */
    const char *group;   /* group.id: the consumer's conf string, which outlives us */
    /* Self-fenced (the fence hook): every partition of the group carries the runtime's FENCED
     * bit, those assigned meanwhile too, and the application's commits are refused. */
    bool fenced;
    /* The membership as the consumer sees it: subscribed from a kc_subscribe that succeeded;
     * leaving from kc_unsubscribe or kc_close until the driver says the leave is over, which
     * ends the subscription (kc_rt_group_subscribed). Meanwhile the group owns the assignment. */
    bool subscribed, leaving;
    /* The owned (not revoking) set changed since the last KC_EVENT_ASSIGNMENT. */
    bool assignment_dirty;
    /* The last subscription that succeeded (kc_subscription), as given. */
    char **sub;
    size_t n_sub;
    bool share; /* group.type=share: kc_gshare_proto, partitions fetched with ShareFetch */
    /* The group-level rebalance callback's steps (rebalance.h); NULL without on_rebalance. */
    kc_rt_rebal_t *rb;
};

static void free_sub(kc_rt_group_t *cg)
{
    for (size_t i = 0; i < cg->n_sub; i++)
        free(cg->sub[i]);
    free(cg->sub);
    cg->sub = NULL;
    cg->n_sub = 0;
}

/* Out of memory keeps the old list: kc_subscription may then be stale, nothing else reads it. */
static void keep_sub(kc_rt_group_t *cg, const char *const *topics, size_t n)
{
    char **t = calloc(n ? n : 1, sizeof *t);
    size_t k = 0;
    while (t && k < n && (t[k] = strdup(topics[k])))
        k++;
    if (!t || k < n) {
        for (size_t i = 0; t && i < k; i++)
            free(t[i]);
        free(t);
        return;
    }
    free_sub(cg);
    cg->sub = t;
    cg->n_sub = n;
}

static void gpart_name(const void *ctx, size_t pos, const char **topic, int32_t *partition)
{
    const gpart_t *p = &((const kc_rt_group_t *)ctx)->p[pos];
    *topic = p->topic;
    *partition = p->partition;
}

static gpart_t *find(const kc_rt_group_t *cg, const char *topic, int32_t partition)
{
    ssize_t i = kc_pidx_find_name(&cg->at, gpart_name, cg, topic, partition);
    return i >= 0 ? &cg->p[i] : NULL;
}

static void forget(kc_rt_group_t *cg, gpart_t *gp)
{
    size_t i = (size_t)(gp - cg->p), last = cg->n - 1;
    kc_pidx_remove(&cg->at, kc_pidx_hash_name(gp->topic, gp->partition), i);
    if (i != last)
        kc_pidx_move(&cg->at, kc_pidx_hash_name(cg->p[last].topic, cg->p[last].partition), last, i);
    free(gp->topic);
    *gp = cg->p[last];
    cg->n--;
}

static int h_revoke(void *o, const char *topic, int32_t partition, bool lost)
{
    kc_rt_group_t *cg = o;
    gpart_t *gp = find(cg, topic, partition);
    if (!gp || gp->revoked)
        return 0;
    if (!gp->revoking) {
        gp->revoking = true;
        cg->assignment_dirty = true;
        /* Stop fetching too: the ring refuses its batches from now on. */
        kc_engine_pause(cg->e, topic, partition, 1, NULL);
        /* With on_rebalance the partition parks before its on_revoke (rebalance.h); out of
         * memory, it is revoked without waiting for the group callback. */
        if (cg->rb && kc_rt_rebal_add(cg->rb, lost ? KC_REBALANCE_LOST : KC_REBALANCE_REVOKE,
                                      gp->rtp) != KC_OK)
            kc_log(KC_LOG_ERROR, "group", "%s[%d]: left out of on_rebalance: out of memory", topic,
                   (int)partition);
        kc_rt_part_revoke(gp->rtp, lost);
    }
    return 1; /* its REVOKE_DONE is still to come */
}

static int64_t h_committable(void *o, const char *topic, int32_t partition)
{
    kc_rt_group_t *cg = o;
    gpart_t *gp = find(cg, topic, partition);
    return gp ? kc_rt_part_committable(gp->rtp) : -1;
}

static void h_drop(void *o, const char *topic, int32_t partition)
{
    kc_rt_group_t *cg = o;
    gpart_t *gp = find(cg, topic, partition);
    if (!gp)
        return;
    kc_engine_remove(cg->e, topic, partition, NULL);
    if (gp->revoked) {
        kc_rt_part_free(gp->rtp);
        forget(cg, gp);
    } else {
        gp->dropped = true; /* freed when its REVOKE_DONE arrives */
    }
}

static kc_err_t h_assign(void *o, const char *topic, int32_t partition, int64_t start,
                         kc_error_t *err)
{
    kc_rt_group_t *cg = o;
    gpart_t *old = find(cg, topic, partition);
    if (old && !old->revoking)
        return KC_OK;
    if (old) /* the previous incarnation is still finishing its revoke: it keeps its slot */
        return kc_fail(err, KC_ERR_STATE, "%s[%d] assigned again before its revoke finished", topic,
                       partition);
    if (cg->n == cg->cap) {
        size_t cap = cg->cap ? cg->cap * 2 : 16;
        gpart_t *np = realloc(cg->p, cap * sizeof *np);
        if (!np)
            return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
        cg->p = np;
        cg->cap = cap;
    }
    if (kc_pidx_reserve(&cg->at, cg->n + 1, err) != KC_OK) /* inserting then cannot fail */
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    /* A manual copy still revoking (kc_unassign, then kc_subscribe): this one is fetched from
     * now on but runs only after that copy's REVOKE_DONE (consumer.c unholds it). */
    bool held = cg->c && kc_consumer_copy_revoking(cg->c, topic, partition);
    char *t = strdup(topic); /* first: a part added to the runtime is not taken back */
    /* With on_rebalance it parks after its on_assign until the group callback ran. */
    kc_rt_part_t *rtp = t ? kc_rt_part_add_held(cg->rt, topic, partition, start >= 0 ? start : 0,
                                                held, cg->rb != NULL)
                          : NULL;
    if (!rtp) {
        free(t);
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    }
    if (cg->fenced) /* before anything of it can run */
        (void)kc_rt_part_fence(rtp);
    kc_pidx_insert(&cg->at, kc_pidx_hash_name(t, partition), cg->n);
    gpart_t *gp = &cg->p[cg->n++];
    *gp = (gpart_t){t, partition, rtp, false, false, false};
    /* A share partition's records come from ShareFetch (no position of ours: start is -1) */
    kc_err_t rc = cg->share ? kc_engine_share_add(cg->e, topic, partition, rtp, err)
                            : kc_engine_add(cg->e, topic, partition, start, rtp, err);
    if (rc == KC_OK && cg->rb && kc_rt_rebal_add(cg->rb, KC_REBALANCE_ASSIGN, rtp) != KC_OK) {
        kc_log(KC_LOG_ERROR, "group", "%s[%d]: left out of on_rebalance: out of memory", topic,
               (int)partition);
        kc_rt_part_unpark(rtp);
    }
    if (rc != KC_OK) {
        gp->revoking = gp->dropped = true; /* freed at its REVOKE_DONE */
        kc_rt_part_unpark(rtp);
        kc_rt_part_revoke(rtp, false);
        return rc;
    }
    cg->assignment_dirty = true;
    if (start >= 0) {
        /* start >= 0 is the group's committed offset (OffsetFetch): kc_position and the stats
         * report it before the first delivery, and the stats' "committed" starts there. */
        kc_rt_part_set_start(rtp, start);
        kc_engine_set_committed(cg->e, topic, partition, start);
    }
    return rc;
}

static void post_error(kc_rt_group_t *cg, const kc_error_t *e, bool fatal)
{
    kc_error_t copy = *e;
    if (fatal) {
        cg->failed = true;
        copy.code = KC_ERR_FATAL;
    }
    kc_event_t ev = {.type = KC_EVENT_ERROR, .error = &copy};
    (void)kc_rt_post_event(cg->rt, &ev);
}

static void h_error(void *o, const kc_error_t *e, bool fatal)
{
    post_error(o, e, fatal);
}

/* The self-fence (engine/group/group.h): all the group's partitions, revoking ones included (their
 * on_revoke/on_lost is not gated by it, only record callbacks are). */
static void h_fence(void *o, bool on, const kc_error_t *why)
{
    kc_rt_group_t *cg = o;
    if (cg->fenced == on)
        return;
    cg->fenced = on;
    for (size_t i = 0; i < cg->n; i++) {
        if (on)
            (void)kc_rt_part_fence(cg->p[i].rtp);
        else
            kc_rt_part_unfence(cg->p[i].rtp);
    }
    if (on && why)
        post_error(cg, why, false);
}

/* Called at every group drive (at least every 100 ms): the watchdog, and keeping the consumer's
 * member id (kc_member_id, the CLI's %M) in step with the coordinator's. The stats JSON is not
 * posted from here: stats_json.c builds one object per interval and asks this module for its
 * "group" part through the consumer's group_stats hook (kc_rt_group_stats_hook). */
static unsigned h_poll_over(void *o)
{
    kc_rt_group_t *cg = o;
    const char *id = kc_group_member_id(cg->g);
    if (cg->c && id && strncmp(id, cg->member_id, sizeof cg->member_id) != 0) {
        snprintf(cg->member_id, sizeof cg->member_id, "%s", id);
        kc_consumer_set_member_id(cg->c, id);
    }
    if (cg->share) /* ShareFetch names the member: nothing is fetched before it has an id */
        kc_engine_share_member(cg->e, id);
    return kc_rt_watchdog_check(cg->rt, kc_now_ns());
}

/* A drive pass ended: the assignment it changed goes to on_event once, whole (the owned
 * partitions, those being revoked excluded, as kc_rt_group_find sees them). Posted from the
 * network thread in the order of the changes; on_event runs on a worker. */
static void h_settled(void *o)
{
    kc_rt_group_t *cg = o;
    if (cg->rb) /* the pass's sets become on_rebalance steps, kc_close's revocation's too */
        kc_rt_rebal_flush(cg->rb);
    if (!cg->assignment_dirty || kc_group_closing(cg->g)) /* kc_close's revocation: none */
        return;
    size_t n;
    kc_topic_partition_t *tps = kc_rt_group_assignment(cg, &n);
    if (!tps)
        return; /* out of memory: posted at the next pass that finds memory */
    if (kc_rt_post_assignment(cg->rt, tps, n) == KC_OK)
        cg->assignment_dirty = false;
    free(tps);
}

kc_topic_partition_t *kc_rt_group_assignment(const kc_rt_group_t *cg, size_t *n)
{
    kc_topic_partition_t *tps = calloc(cg->n ? cg->n : 1, sizeof *tps);
    *n = 0;
    for (size_t i = 0; tps && i < cg->n; i++)
        if (!cg->p[i].revoking)
            tps[(*n)++] = (kc_topic_partition_t){cg->p[i].topic, cg->p[i].partition, 0};
    return tps;
}

const char *const *kc_rt_group_subscription(kc_rt_group_t *cg, size_t *n)
{
    if (!kc_rt_group_subscribed(cg)) {
        *n = 0;
        return NULL;
    }
    *n = cg->n_sub;
    return (const char *const *)cg->sub;
}

/* consumer_int.h's group_stats hook: the "group" object of the stats JSON. */
static void cg_stats_hook(void *opaque, kc_json_t *w)
{
    kc_rt_group_stats_json(opaque, w);
}

/* The group protocols, by kc_conf_group_protocol's choice (AUTO: the driver chooses). */
static const kc_group_proto_t *const protocols[] = {
    [KC_GROUP_PROTO_AUTO] = NULL,
    [KC_GROUP_PROTO_CLASSIC] = &kc_classic_proto,
    [KC_GROUP_PROTO_CONSUMER] = &kc_g848_proto,
    [KC_GROUP_PROTO_CONFLICT] = NULL, /* refused by kc_conf_validate */
};

const kc_group_proto_t *kc_rt_group_protocol(const kc_conf_t *conf)
{
    return kc_conf_share(conf) ? &kc_gshare_proto : protocols[kc_conf_group_protocol(conf, NULL)];
}

kc_err_t kc_rt_group_new(kc_rt_group_t **out, kc_engine_t *e, kc_rt_t *rt, const kc_conf_t *conf,
                         kc_error_t *err)
{
    const char *key = NULL;
    kc_group_proto_choice_t choice = kc_conf_group_protocol(conf, &key);
    if (choice == KC_GROUP_PROTO_CONFLICT)
        return kc_fail(err, KC_ERR_CONFIG, "group.protocol=auto: %s and a KIP-848 setting are set",
                       key);
    char why[160] = "";
    if (key) /* under auto, a protocol's own setting decided */
        snprintf(why, sizeof why, "%s is set", key);
    kc_rt_group_t *cg = calloc(1, sizeof *cg);
    if (!cg)
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    cg->e = e;
    cg->rt = rt;
    cg->group = kc_conf_str(conf, KC_CONF_GROUP_ID);
    kc_group_conf_t gc;
    kc_rt_group_conf(conf, &gc);
    kc_group_hooks_t h = {h_revoke, h_committable, h_drop,   h_assign, h_poll_over, h_error,
                          cg,       h_fence,       h_settled};
    cg->share = kc_conf_share(conf);
    if (kc_rt_callbacks(rt)->on_rebalance && !(cg->rb = kc_rt_rebal_new(rt))) {
        free(cg);
        return kc_fail(err, KC_ERR_NOMEM, "group: out of memory");
    }
    kc_err_t rc = kc_group_new(&cg->g, e, cg->share ? &kc_gshare_proto : protocols[choice],
                               key ? why : NULL, &gc, &h, err);
    if (rc != KC_OK) {
        kc_rt_rebal_free(cg->rb);
        free(cg);
        return rc;
    }
    *out = cg;
    return KC_OK;
}

kc_err_t kc_rt_group_subscribe(kc_rt_group_t *cg, const char *const *topics, size_t n,
                               kc_error_t *err)
{
    /* One entry starting with '^' is a regular expression (the convention other Kafka clients
     * use): KIP-848 sends it for the broker to evaluate (subscribed_topic_regex, RE2/J syntax);
     * the classic member matches it against all topics' metadata itself (POSIX extended). */
    if (n == 1 && topics[0][0] == '^')
        return kc_group_subscribe(cg->g, NULL, 0, topics[0], err);
    return kc_group_subscribe(cg->g, topics, n, NULL, err);
}

bool kc_rt_group_may_auto_commit(const kc_rt_group_t *cg)
{
    return !cg->fenced && kc_group_may_auto_commit(cg->g);
}

void kc_rt_group_on_parked(kc_rt_group_t *cg, kc_rt_part_t *p)
{
    if (cg->rb)
        kc_rt_rebal_parked(cg->rb, p);
}

void kc_rt_group_on_rebalanced(kc_rt_group_t *cg, int64_t token)
{
    if (cg->rb)
        kc_rt_rebal_done(cg->rb, token);
}

bool kc_rt_group_on_revoke_done(kc_rt_group_t *cg, kc_rt_part_t *p)
{
    gpart_t *gp = find(cg, p->pub.topic, p->pub.partition);
    if (!gp || gp->rtp != p) /* a manual copy of the same name, or none */
        return false;
    gp->revoked = true;
    if (gp->dropped) {
        kc_rt_part_free(p);
        forget(cg, gp);
        return true;
    }
    kc_group_revoked(cg->g);
    return true;
}

void kc_rt_group_close(kc_rt_group_t *cg)
{
    cg->leaving = true;
    kc_group_close(cg->g);
}

bool kc_rt_group_subscribed(kc_rt_group_t *cg)
{
    if (!cg)
        return false;
    if (cg->leaving && kc_group_closed(cg->g))
        cg->subscribed = cg->leaving = false;
    return cg->subscribed || cg->leaving;
}

bool kc_rt_group_closed(const kc_rt_group_t *cg)
{
    return kc_group_closed(cg->g);
}

void kc_rt_group_free(kc_rt_group_t *cg)
{
    if (!cg)
        return;
    kc_group_free(cg->g);
    kc_rt_rebal_free(cg->rb);
    free_sub(cg);
    for (size_t i = 0; i < cg->n; i++)
        free(cg->p[i].topic); /* the runtime frees the partitions themselves (kc_rt_free) */
    free(cg->p);
    kc_pidx_free(&cg->at);
    free(cg);
}

void kc_rt_group_stats_json(const kc_rt_group_t *cg, kc_json_t *w)
{
    kc_group_stats_json(cg->g, w);
}

bool kc_rt_group_part_at(const kc_rt_group_t *cg, size_t i, const char **topic, int32_t *partition,
                         kc_rt_part_t **rtp)
{
    /* revoking entries are skipped but still take an index: callers walk i = 0.. until false */
    if (!cg || i >= cg->n)
        return false;
    const gpart_t *gp = &cg->p[i];
    *topic = gp->topic;
    *partition = gp->partition;
    *rtp = gp->revoking ? NULL : gp->rtp;
    return true;
}

kc_rt_part_t *kc_rt_group_find(const kc_rt_group_t *cg, const char *topic, int32_t partition)
{
    const gpart_t *gp = cg ? find(cg, topic, partition) : NULL;
    return gp && !gp->revoking ? gp->rtp : NULL;
}

kc_err_t kc_rt_group_store(kc_rt_group_t *cg, const char *topic, int32_t partition, int64_t offset,
                           kc_error_t *err)
{
    gpart_t *gp = find(cg, topic, partition);
    if (!gp)
        return kc_fail(err, KC_ERR_NOT_FOUND, "store_offset: %s[%d] is not assigned to this member",
                       topic, partition);
    /* Until its on_revoke returned (REVOKE_DONE, handled on this thread), a revoking partition's
     * committable offset is still to be read by the revocation's commit, so a store from
     * on_records/on_revoke lands in it. After that the commit may be on its way: refused. */
    if (gp->revoked || gp->dropped)
        return kc_fail(err, KC_ERR_STATE,
                       "store_offset: %s[%d] was revoked from this member (its offset is "
                       "committed by the revocation)",
                       topic, partition);
    kc_rt_part_store(gp->rtp, offset);
    return KC_OK;
}

/* ---- the application's commits (network thread) --------------------------------------------- */

/* The committable offsets of every held (not revoking) partition, calloc'd; *n their count. */
static kc_engine_offset_t *held_offsets(const kc_rt_group_t *cg, size_t *n)
{
    kc_engine_offset_t *held = calloc(cg->n ? cg->n : 1, sizeof *held);
    *n = 0;
    for (size_t i = 0; held && i < cg->n; i++) {
        /* A revoking partition's offset is the reconciliation's to commit (at its COMMIT step,
         * in order with the acknowledgement); committing it here could race it. */
        int64_t o = cg->p[i].revoking ? -1 : kc_rt_part_committable(cg->p[i].rtp);
        if (o >= 0)
            held[(*n)++] = (kc_engine_offset_t){cg->p[i].topic, cg->p[i].partition, o, -1, NULL, 0};
    }
    return held;
}

static kc_err_t refuse_fenced(const kc_rt_group_t *cg, kc_error_t *err)
{
    return kc_fail(err, KC_ERR_STATE,
                   "commit: group %s: this member is self-fenced (its coordinator has not "
                   "answered a heartbeat for most of the session timeout, so its partitions "
                   "may be moving to another member); nothing is committed until the "
                   "coordinator answers",
                   cg->group);
}

kc_err_t kc_rt_group_commit(kc_rt_group_t *cg, const kc_engine_offset_t *offs, size_t n,
                            int timeout_ms, kc_engine_offsets_cb cb, void *opaque, bool *none,
                            kc_error_t *err)
{
    *none = false;
    if (cg->fenced)
        return refuse_fenced(cg, err);
    kc_engine_offset_t *held = NULL;
    if (!offs && !(offs = held = held_offsets(cg, &n)))
        return kc_fail(err, KC_ERR_NOMEM, "commit: out of memory");
    kc_err_t rc = KC_OK;
    if (n == 0)
        *none = true;
    else
        rc = kc_group_commit(cg->g, NULL, offs, n, timeout_ms, cb, opaque, err);
    free(held);
    return rc;
}

kc_err_t kc_rt_group_auto_commit(kc_rt_group_t *cg, int timeout_ms, kc_engine_offsets_cb cb,
                                 void *opaque, bool *none, kc_error_t *err)
{
    *none = false;
    if (cg->fenced)
        return refuse_fenced(cg, err);
    kc_commit_identity_t who;
    kc_err_t rc = kc_group_commit_identity(cg->g, &who, err);
    if (rc != KC_OK)
        return rc;
    size_t n;
    kc_engine_offset_t *held = held_offsets(cg, &n);
    if (!held)
        return kc_fail(err, KC_ERR_NOMEM, "commit: out of memory");
    if (n == 0)
        *none = true;
    else
        rc = kc_group_commit(cg->g, &who, held, n, timeout_ms, cb, opaque, err);
    free(held);
    return rc;
}

void kc_rt_group_count_commit(kc_rt_group_t *cg, int16_t code)
{
    kc_group_count_commit(cg->g, code);
}

kc_err_t kc_rt_group_committed(kc_rt_group_t *cg, const kc_engine_offset_t *offs, size_t n,
                               int timeout_ms, kc_engine_offsets_cb cb, void *opaque,
                               kc_error_t *err)
{
    return kc_engine_committed_member(cg->e, cg->group, kc_group_fetch_identity, cg->g, offs, n,
                                      timeout_ms, cb, opaque, err);
}

void kc_rt_group_commit_result(kc_rt_group_t *cg, kc_err_t rc, kc_error_t *err,
                               const kc_engine_offset_t *res, size_t n)
{
    int16_t code = rc == KC_OK ? 0 : kc_engine_commit_code(rc, err, res, n);
    kc_group_app_commit_result(cg->g, code);
    if (rc == KC_OK || !err)
        return;
    const char *why = NULL;
    switch (code) {
    case KC_KAFKA_REBALANCE_IN_PROGRESS:
        why = "the group is rebalancing: commit again after on_assign (revoked partitions are "
              "committed at revocation)";
        break;
    case KC_KAFKA_ILLEGAL_GENERATION:
    case KC_KAFKA_UNKNOWN_MEMBER_ID:
        why = "this member's generation is over; it rejoins, and its partitions may have moved";
        break;
    case KC_KAFKA_FENCED_INSTANCE_ID:
        why = "another instance with this group.instance.id took the member's place";
        break;
    case KC_KAFKA_FENCED_MEMBER_EPOCH:
        why = "the member was fenced; it rejoins and its partitions are lost";
        break;
    }
    if (why) {
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof err->msg - len, " (%s)", why);
    }
}

/* ---- consumer.c's hooks --------------------------------------------------------------------- */

void kc_rt_group_call(kc_consumer_t *c, struct kc_ccall *k,
                      void (*drain)(void *ctx, const kc_rt_cmpl_t *m))
{
    if (k->op == KC_COP_SUBSCRIBE) {
        if (c->n)
            k->rc = kc_fail(&k->err, KC_ERR_STATE, "subscribe: manual assignment is in use");
        else if (!c->grp) {
            k->rc = kc_rt_group_new(&c->grp, c->e, c->rt, c->conf, &k->err);
            if (k->rc == KC_OK) {
                c->grp->c = c;
                c->group_stats = cg_stats_hook;
                c->group_stats_opaque = c->grp;
            }
        }
        /* A second subscribe replaces the first (the protocol rebalances); one while a leave is
         * still running is refused by the protocol. */
        if (k->rc == KC_OK)
            k->rc = kc_rt_group_subscribe(c->grp, (const char *const *)(const void *)k->out, k->n,
                                          &k->err);
        if (k->rc == KC_OK) { /* the protocol refuses while a leave runs: any is over */
            c->grp->subscribed = true;
            c->grp->leaving = false;
            keep_sub(c->grp, (const char *const *)(const void *)k->out, k->n);
        }
        return;
    }
    if (k->op == KC_COP_UNSUBSCRIBE) {
        /* Start the leave once; each call drains completions (REVOKE_DONE) and says whether it
         * is over. Not subscribed (never, or left already): nothing to do. */
        if (c->grp && c->grp->subscribed && !c->grp->leaving) {
            c->grp->leaving = true;
            kc_group_unsubscribe(c->grp->g);
        }
        if (c->grp && c->grp->leaving && k->leave_now)
            kc_group_leave_now(c->grp->g);
        if (c->grp)
            kc_rt_drain_completions(c->rt, drain, c);
        k->done = !kc_rt_group_subscribed(c->grp);
        return;
    }
    if (k->op == KC_COP_SUBSCRIPTION) {
        size_t n;
        const char *const *list = kc_rt_group_subscription(c->grp, &n);
        k->result = n ? kc_consumer_str_block(list, n) : NULL;
        k->value = (int64_t)n;
        if (n && !k->result)
            k->rc = kc_fail(&k->err, KC_ERR_NOMEM, "kc_subscription: out of memory");
        return;
    }
    if (k->op == KC_COP_GROUP_GENERATION) {
        /* Both read at once, on the thread that changes them: a pair that belongs together. */
        int32_t epoch = kc_rt_group_subscribed(c->grp) ? kc_group_epoch(c->grp->g) : -1;
        const char *id = epoch > 0 ? kc_group_member_id(c->grp->g) : "";
        k->value = epoch > 0 ? epoch : -1;
        size_t n = strlen(id);
        k->buf[0] = '\0';
        if (n >= k->buf_len)
            k->rc = kc_fail(&k->err, KC_ERR_TOO_LARGE,
                            "kc_group_generation: the member id needs "
                            "%zu bytes, the buffer has %zu",
                            n + 1, k->buf_len);
        else
            memcpy(k->buf, id, n + 1);
        return;
    }
    /* KC_COP_GROUP_CLOSE: start the leave once; each call drains completions (REVOKE_DONE) and
     * says whether the member has left. */
    if (c->grp) {
        kc_rt_group_close(c->grp);
        if (k->leave_now)
            kc_group_leave_now(c->grp->g);
        kc_rt_drain_completions(c->rt, drain, c);
    }
    k->done = !c->grp || kc_rt_group_closed(c->grp);
}

/* Repeats `op` (KC_COP_GROUP_CLOSE, KC_COP_UNSUBSCRIBE) on the network thread until it says
 * done, or timeout_ms passed. */
static kc_err_t group_wait(kc_consumer_t *c, int op, int timeout_ms, const char *what,
                           kc_error_t *err)
{
    /* Commits sent under the member's identity hold its leave (engine/group/group.h,
     * kc_group_commit) until a quarter of the budget (at most 1 s) is left; then the leave goes
     * regardless (kc_group_leave_now), with time left for its answer. */
    int64_t start = kc_now_ms();
    int64_t reserve = timeout_ms / 4 < 1000 ? timeout_ms / 4 : 1000;
    for (;;) {
        int64_t waited = kc_now_ms() - start;
        kc_ccall_t k = {.op = op, .leave_now = waited >= timeout_ms - reserve};
        kc_err_t rc = kc_consumer_call(c, &k, err);
        if (rc != KC_OK)
            return rc;
        if (k.done)
            return KC_OK;
        if (waited >= timeout_ms)
            return kc_fail(err, KC_ERR_TIMEOUT, "%s: the group did not finish leaving in %d ms",
                           what, timeout_ms);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

kc_err_t kc_rt_group_close_wait(kc_consumer_t *c, int timeout_ms, kc_error_t *err)
{
    return group_wait(c, KC_COP_GROUP_CLOSE, timeout_ms, "close", err);
}

KC_API kc_err_t kc_group_generation(kc_consumer_t *c, int32_t *generation, char *member_id,
                                    size_t len, kc_error_t *err)
{
    if (!c || !generation || !member_id || !len)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_group_generation: bad arguments");
    kc_ccall_t k = {.op = KC_COP_GROUP_GENERATION, .buf = member_id, .buf_len = len};
    kc_err_t rc = kc_consumer_call(c, &k, err);
    *generation = rc == KC_OK ? (int32_t)k.value : -1;
    return rc;
}

KC_API kc_err_t kc_unsubscribe(kc_consumer_t *c, int timeout_ms, kc_error_t *err)
{
    kc_err_t g = kc_consumer_guard(c, "kc_unsubscribe", true, err);
    if (g != KC_OK)
        return g;
    if (timeout_ms < 0)
        return kc_fail(err, KC_ERR_INVALID_ARG, "kc_unsubscribe: timeout_ms %d < 0", timeout_ms);
    return group_wait(c, KC_COP_UNSUBSCRIBE, timeout_ms, "kc_unsubscribe", err);
}

KC_API kc_err_t kc_subscribe(kc_consumer_t *c, const char *const *topics, size_t n, kc_error_t *err)
{
    if (!c || !topics || !n)
        return kc_fail(err, KC_ERR_INVALID_ARG, "subscribe: topics are required");
    for (size_t i = 0; i < n; i++)
        if (!topics[i] || !*topics[i])
            return kc_fail(err, KC_ERR_INVALID_ARG, "subscribe: empty topic name");
    kc_ccall_t k = {
        .op = KC_COP_SUBSCRIBE, .out = (kc_topic_partition_t *)(uintptr_t)topics, .n = n};
    return kc_consumer_call(c, &k, err);
}
