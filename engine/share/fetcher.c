/*
 * Share fetching on the wire (KIP-932): the engine's share partitions (kc_engine_share_add) are
 * fetched with ShareFetch from their leaders, one share session per broker (share/session.h,
 * the pure half), instead of Fetch. Partitions stay in the engine's partition table (metadata
 * gives them their leader and topic id) but the Fetch plan never sees them (kc_eng_drive keeps
 * them paused there).
 *
 * Delivery: each acquired range of an answer is cut along the record batches it covers
 * (share/pieces.h); every (batch, range) piece goes to the sink's share_records as a slice of the
 * response frame (no copy) with the range's delivery count, so a piece holds records of one
 * delivery count only. Acquired offsets that no batch carries, and control batches, are
 * acknowledged as GAP here; a piece the sink refuses (a full ring, a revoked partition) is RELEASEd
 * at once, so the broker hands it out again instead of waiting for the lock to run out.
 *
 * Acknowledgements (kc_engine_share_ack) go into the session the records came from (each
 * session counts the records it delivered until their verdicts come: share/session.h, "Verdicts
 * after a partition leaves") and leave with its next ShareFetch; those of a partition no longer
 * fetched, and those of a session with nothing to fetch, leave in a ShareAcknowledge.
 * kc_engine_close sends ShareAcknowledge at epoch -1 to every open session, carrying what is still
 * pending, and waits for the answers.
 *
 * Owner: network thread (everything here, like the rest of the engine).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "batch/batch.h"
#include "engine_int.h"
#include "proto/kafka_errors.h"
#include "share/pieces.h"
#include "share/session.h"

/* One broker's share session and the request in flight. Owner: network thread. */
typedef struct kc_eng_ssess {
    kc_engine_t *e;
    kc_share_session_t s;
    bool ack_req;        /* the request in flight is a ShareAcknowledge */
    int32_t asked;       /* records the ShareFetch in flight may acquire (record_limit) */
    int64_t retry_at_ms; /* after a failed request: no new one before */
    kc_share_fetch_request_t fq;
    kc_share_acknowledge_request_t aq;
    kc_buf_t *frame; /* the answer being applied (share_records slices it) */
    kc_arena_t ans;  /* its decoded arrays: reset after each answer, its first chunk kept */
} kc_eng_ssess_t;

/* A commit of acknowledgements (kc_engine_share_commit) waiting for the broker's answers: the
 * sessions that had acknowledgements queued when it started, each with its mark
 * (share/session.h). Owner: network thread. */
typedef struct kc_eng_scommit {
    struct kc_eng_scommit *next;
    int64_t deadline;
    kc_engine_offsets_cb cb;
    void *opaque;
    kc_eng_ssess_t **wait;
    uint64_t *mark;
    size_t n_wait;
    kc_engine_offset_t *res; /* topics owned */
    size_t n_res, cap_res;
    bool lost;             /* some acknowledgement got no usable answer */
    bool refused;          /* the broker refused some */
    kc_error_t first_fail; /* the first refusal or loss, for the message */
    bool failed;
} kc_eng_scommit_t;

/* A partition's verdicts refused before they could be sent (kc_eng_share.refusals). */
typedef struct kc_eng_srefusal {
    char *topic;
    int32_t partition;
    int64_t last;                             /* the highest offset refused */
    char why[sizeof(((kc_error_t *)0)->msg)]; /* the first refusal's reason */
} kc_eng_srefusal_t;

struct kc_eng_share {
    char *group_id;
    char *member_id; /* NULL until the group has one: nothing is fetched before */
    int32_t max_records;
    bool record_limit; /* share.acquire.mode=record_limit: max_records bounds what is held */
    kc_eng_ssess_t **s;
    size_t n, cap;
    kc_eng_scommit_t *commits; /* in start order */
    /* Verdicts refused here since the last commit started (kc_engine_share_ack: late, or no
     * session to take them), one entry per partition: the next commit reports them. */
    kc_eng_srefusal_t *refusals;
    size_t n_refusals, cap_refusals;
    kc_engine_share_stats_t st;
};

kc_err_t kc_engine_share_enable(kc_engine_t *e, const char *group_id, int32_t max_records,
                                bool record_limit, kc_error_t *err)
{
    if (e->share)
        return KC_OK;
    struct kc_eng_share *sh = calloc(1, sizeof *sh);
    if (!sh || !(sh->group_id = strdup(group_id))) {
        free(sh);
        return kc_fail(err, KC_ERR_NOMEM, "share: out of memory");
    }
    sh->max_records = max_records > 0 ? max_records : 500;
    sh->record_limit = record_limit;
    e->share = sh;
    return KC_OK;
}

void kc_engine_share_member(kc_engine_t *e, const char *member_id)
{
    if (!e->share)
        return;
    if (e->share->member_id && member_id && strcmp(e->share->member_id, member_id) == 0)
        return;
    free(e->share->member_id);
    e->share->member_id = member_id && *member_id ? strdup(member_id) : NULL;
    kc_eng_drive(e);
}

kc_err_t kc_engine_share_add(kc_engine_t *e, const char *topic, int32_t partition, void *user,
                             kc_error_t *err)
{
    if (!e->share)
        return kc_fail(err, KC_ERR_STATE, "share: the engine has no share group");
    kc_err_t rc = kc_engine_add(e, topic, partition, 0, user, err);
    if (rc != KC_OK)
        return rc;
    ssize_t i = kc_eng_find_part(e, topic, partition);
    e->info[i].share = 1;
    e->parts[i].paused = 1;
    e->info[i].share_st = calloc(1, sizeof *e->info[i].share_st); /* NULL: not counted */
    kc_eng_drive(e);
    return KC_OK;
}

static kc_eng_ssess_t *sess_get(kc_engine_t *e, int32_t broker, bool make)
{
    struct kc_eng_share *sh = e->share;
    for (size_t i = 0; i < sh->n; i++)
        if (sh->s[i]->s.broker == broker)
            return sh->s[i];
    if (!make)
        return NULL;
    if (sh->n == sh->cap) {
        size_t cap = sh->cap ? sh->cap * 2 : 4;
        kc_eng_ssess_t **ns = realloc(sh->s, cap * sizeof *ns);
        if (!ns)
            return NULL;
        sh->s = ns;
        sh->cap = cap;
    }
    kc_eng_ssess_t *ss = calloc(1, sizeof *ss);
    if (!ss)
        return NULL;
    ss->e = e;
    kc_share_session_init(&ss->s, broker);
    sh->s[sh->n++] = ss;
    return ss;
}

/* The session a verdict on tp's records goes to: the one holding `offset` of the delivery with
 * `delivery_count` (records are acquired from the leader, which alone can take their verdicts:
 * after a leader move the old leader's session is the one still holding them, and with records
 * held in two sessions at once the delivery tells which), else one holding records of tp, else
 * the one fetching it, else one that still has it, else NULL. */
static kc_eng_ssess_t *sess_of(kc_engine_t *e, const kc_tp_t *tp, int64_t offset,
                               int16_t delivery_count)
{
    kc_eng_ssess_t *holding = NULL, *wanted = NULL, *any = NULL;
    for (size_t i = 0; i < e->share->n; i++) {
        kc_share_session_t *s = &e->share->s[i]->s;
        for (size_t k = 0; k < s->n; k++) {
            const kc_share_spart_t *p = &s->parts[k];
            if (kc_tp_cmp(&p->tp, tp) != 0)
                continue;
            if (kc_share_held_has(&p->held, offset, delivery_count))
                return e->share->s[i];
            if (p->held.n && !holding)
                holding = e->share->s[i];
            if (p->wanted)
                wanted = e->share->s[i];
            any = e->share->s[i];
        }
    }
    return holding ? holding : wanted ? wanted : any;
}

void kc_eng_share_forget(kc_engine_t *e, const kc_tp_t *tp)
{
    if (!e->share)
        return;
    for (size_t i = 0; i < e->share->n; i++)
        (void)kc_share_session_want(&e->share->s[i]->s, tp, false, NULL);
}

static void refusal_note(struct kc_eng_share *sh, const char *topic, int32_t partition,
                         int64_t last, const char *why);

/* The share partition topic[partition] (*i) and the session its delivery's `offset` goes to
 * (sess_of), for a `what` ("acknowledge", "renew"); KC_ERR_NOT_FOUND without either. */
static kc_err_t sess_for(kc_engine_t *e, const char *what, const char *topic, int32_t partition,
                         int64_t offset, int16_t delivery_count, ssize_t *i, kc_eng_ssess_t **ss,
                         kc_error_t *err)
{
    *i = kc_eng_find_part(e, topic, partition);
    if (*i < 0 || !e->info[*i].have_id)
        return kc_fail(err, KC_ERR_NOT_FOUND, "%s: %s[%d] is not fetched", what, topic, partition);
    *ss = sess_of(e, &e->parts[*i].tp, offset, delivery_count);
    if (!*ss)
        return kc_fail(err, KC_ERR_NOT_FOUND, "%s: %s[%d] has no share session", what, topic,
                       partition);
    return KC_OK;
}

static kc_err_t verdict(kc_engine_t *e, const char *topic, int32_t partition, int64_t first,
                        int64_t last, int16_t delivery_count, int type, kc_error_t *err)
{
    ssize_t i;
    kc_eng_ssess_t *ss;
    if (sess_for(e, "acknowledge", topic, partition, first, delivery_count, &i, &ss, err) != KC_OK)
        return KC_ERR_NOT_FOUND;
    uint64_t late = ss->s.c.ack_late;
    kc_err_t rc = kc_share_session_verdict(&ss->s, &e->parts[i].tp, first, last, delivery_count,
                                           (kc_share_ack_type_t)type, kc_now_ms(), err);
    if (e->info[i].share_st)
        e->info[i].share_st->ack_late += ss->s.c.ack_late - late;
    if (rc != KC_OK)
        return rc;
    e->share->st.acks_queued += (uint64_t)(last - first + 1);
    kc_eng_drive(e);
    return KC_OK;
}

kc_err_t kc_engine_share_ack(kc_engine_t *e, const char *topic, int32_t partition, int64_t first,
                             int64_t last, int16_t delivery_count, int type, kc_error_t *err)
{
    if (!e->share)
        return kc_fail(err, KC_ERR_STATE, "share: the engine has no share group");
    kc_error_t why;
    kc_err_t rc = verdict(e, topic, partition, first, last, delivery_count, type, &why);
    if (rc != KC_OK) {
        refusal_note(e->share, topic, partition, last, why.msg);
        if (err)
            *err = why;
        if (e->share->record_limit) /* held no more: room to fetch again */
            kc_eng_drive(e);
    }
    return rc;
}

void kc_engine_share_lapsed(kc_engine_t *e, const char *topic, int32_t partition, int64_t first,
                            int64_t last, int16_t delivery_count)
{
    if (!e->share)
        return;
    ssize_t i = kc_eng_find_part(e, topic, partition);
    if (i < 0 || !e->info[i].have_id)
        return;
    kc_eng_ssess_t *ss = sess_of(e, &e->parts[i].tp, first, delivery_count);
    if (!ss)
        return;
    uint64_t lapsed = ss->s.c.lapsed;
    kc_share_session_lapsed(&ss->s, &e->parts[i].tp, first, last, delivery_count);
    if (e->info[i].share_st)
        e->info[i].share_st->lapsed += ss->s.c.lapsed - lapsed;
    if (e->share->record_limit) /* held no more: room to fetch again */
        kc_eng_drive(e);
}

int64_t kc_engine_share_deadline(const kc_engine_t *e, const char *topic, int32_t partition,
                                 int64_t offset, int16_t delivery_count)
{
    ssize_t i = e->share ? kc_eng_find_part(e, topic, partition) : -1;
    if (i < 0 || !e->info[i].have_id)
        return -1;
    for (size_t k = 0; k < e->share->n; k++) {
        int64_t d =
            kc_share_session_deadline(&e->share->s[k]->s, &e->parts[i].tp, offset, delivery_count);
        if (d >= 0)
            return d;
    }
    return -1;
}

/* ---- commits of acknowledgements ------------------------------------------------------------ */

static bool commit_waits_on(const kc_eng_scommit_t *k, const kc_eng_ssess_t *ss)
{
    for (size_t i = 0; i < k->n_wait; i++)
        if (k->wait[i] == ss && !kc_share_session_answered(&ss->s, k->mark[i]))
            return true;
    return false;
}

/* Some commit waits for this session's acknowledgements: they leave in a ShareAcknowledge now
 * rather than with a ShareFetch that may wait fetch.max.wait.ms for records. */
static bool commit_pending_on(const kc_engine_t *e, const kc_eng_ssess_t *ss)
{
    for (const kc_eng_scommit_t *k = e->share->commits; k; k = k->next)
        if (commit_waits_on(k, ss))
            return true;
    return false;
}

static bool commit_has(const kc_eng_scommit_t *k, const kc_eng_ssess_t *ss)
{
    for (size_t i = 0; i < k->n_wait; i++)
        if (k->wait[i] == ss)
            return true;
    return false;
}

/* What became of topic[partition]'s acknowledgements up to offset `last`, in commit k's results:
 * code 0 applied, > 0 the broker's refusal, KC_SHARE_ACK_UNSENT not sent (`why`), else no usable
 * answer. */
static void commit_note(kc_eng_scommit_t *k, const char *topic, int32_t partition, int64_t last,
                        int16_t code, const char *why)
{
    kc_engine_offset_t *r = NULL;
    for (size_t i = 0; i < k->n_res && !r; i++)
        if (k->res[i].partition == partition && strcmp(k->res[i].topic, topic) == 0)
            r = &k->res[i];
    if (!r) {
        if (k->n_res == k->cap_res) {
            size_t cap = k->cap_res ? k->cap_res * 2 : 8;
            kc_engine_offset_t *nr = realloc(k->res, cap * sizeof *nr);
            if (!nr) {
                k->lost = true; /* cannot say what became of it */
                return;
            }
            k->res = nr;
            k->cap_res = cap;
        }
        char *name = strdup(topic);
        if (!name) {
            k->lost = true;
            return;
        }
        r = &k->res[k->n_res++];
        *r = (kc_engine_offset_t){name, partition, -1, -1, NULL, 0};
    }
    if (last + 1 > r->offset)
        r->offset = last + 1;
    if (code < 0 && code != KC_SHARE_ACK_UNSENT)
        k->lost = true;
    k->refused = k->refused || code > 0;
    /* the first failure stands, but a broker's code is worth more than "not sent" */
    if (code == 0 || (r->error && !(code > 0 && r->error == KC_ENGINE_SHARE_UNSENT)))
        return;
    r->error = code > 0 ? code : code == KC_SHARE_ACK_UNSENT ? KC_ENGINE_SHARE_UNSENT : -1;
    if (k->failed)
        return;
    k->failed = true;
    if (code == KC_SHARE_ACK_UNSENT)
        kc_fail(&k->first_fail, KC_ERR_STATE,
                "share commit: acknowledgements of %s[%d] not sent: %s", topic, (int)partition,
                why ? why : "");
    else if (code > 0)
        kc_fail_kafka(&k->first_fail, code,
                      "share commit: the broker refused acknowledgements of %s[%d]%s%s", topic,
                      (int)partition, why && *why ? ": " : "", why ? why : "");
    else
        kc_fail(&k->first_fail, KC_ERR_TRANSPORT,
                "share commit: acknowledgements of %s[%d] got no answer%s%s (their records are "
                "handed out again once their locks run out)",
                topic, (int)partition, why && *why ? ": " : "", why ? why : "");
}

/* An answer on tp's acknowledgements (up to offset `last`) for each commit that waits on ss
 * (the session counts them answered already: the marks move before the answer is reported). */
static void commits_note(kc_engine_t *e, kc_eng_ssess_t *ss, const kc_tp_t *tp, int64_t last,
                         int16_t code, const char *why)
{
    const char *topic = NULL;
    for (kc_eng_scommit_t *k = e->share->commits; k; k = k->next) {
        if (!commit_has(k, ss))
            continue;
        if (!topic) {
            topic = e->names.name_of(e->names.opaque, tp->topic_id);
            topic = topic ? topic : "";
        }
        commit_note(k, topic, tp->partition, last, code, why);
    }
}

/* A verdict on topic[partition] up to `last` refused before it could be sent: kept for the next
 * commit's results (one entry per partition; out of memory: only the event reports it). */
static void refusal_note(struct kc_eng_share *sh, const char *topic, int32_t partition,
                         int64_t last, const char *why)
{
    for (size_t i = 0; i < sh->n_refusals; i++) {
        kc_eng_srefusal_t *r = &sh->refusals[i];
        if (r->partition == partition && strcmp(r->topic, topic) == 0) {
            if (last > r->last)
                r->last = last;
            return;
        }
    }
    if (sh->n_refusals == sh->cap_refusals) {
        size_t cap = sh->cap_refusals ? sh->cap_refusals * 2 : 4;
        kc_eng_srefusal_t *nr = realloc(sh->refusals, cap * sizeof *nr);
        if (!nr)
            return;
        sh->refusals = nr;
        sh->cap_refusals = cap;
    }
    kc_eng_srefusal_t *r = &sh->refusals[sh->n_refusals];
    if (!(r->topic = strdup(topic)))
        return;
    r->partition = partition;
    r->last = last;
    snprintf(r->why, sizeof r->why, "%s", why);
    sh->n_refusals++;
}

/* Hands the refusals kept so far to commit k (NULL: drops them). */
static void refusals_take(struct kc_eng_share *sh, kc_eng_scommit_t *k)
{
    for (size_t i = 0; i < sh->n_refusals; i++) {
        kc_eng_srefusal_t *r = &sh->refusals[i];
        if (k)
            commit_note(k, r->topic, r->partition, r->last, KC_SHARE_ACK_UNSENT, r->why);
        free(r->topic);
    }
    sh->n_refusals = 0;
}

static void commit_free(kc_eng_scommit_t *k)
{
    for (size_t i = 0; i < k->n_res; i++)
        free((char *)k->res[i].topic);
    free(k->res);
    free(k->wait);
    free(k->mark);
    free(k);
}

static void commit_finish(kc_eng_scommit_t *k, kc_err_t rc, const kc_error_t *err)
{
    kc_error_t why;
    if (rc == KC_OK && k->failed) {
        /* lost before refused before not sent: the call's result is the worst of its partitions'
         * (each result says its own) */
        why = k->first_fail;
        rc = k->lost ? KC_ERR_TRANSPORT : k->refused ? KC_ERR_BROKER : KC_ERR_STATE;
        if (k->lost && why.code != KC_ERR_TRANSPORT)
            kc_fail(&why, KC_ERR_TRANSPORT, "share commit: some acknowledgements got no answer");
        for (size_t i = 0; rc == KC_ERR_BROKER && why.code != rc && i < k->n_res; i++)
            if (k->res[i].error > 0)
                kc_fail_kafka(&why, k->res[i].error,
                              "share commit: the broker refused acknowledgements of %s[%d], and "
                              "some were not sent",
                              k->res[i].topic, (int)k->res[i].partition);
        err = &why;
    } else if (rc == KC_OK && k->lost) {
        rc = kc_fail(&why, KC_ERR_TRANSPORT, "share commit: out of memory for the results");
        err = &why;
    }
    k->cb(k->opaque, rc, rc == KC_OK ? NULL : err, k->res, k->n_res);
    commit_free(k);
}

/* Ends the commits whose sessions all answered, or whose deadline passed (`now` < 0: none
 * are timed out). Sets *wake to the earliest deadline left. */
static void commits_check(kc_engine_t *e, int64_t now, int64_t *wake)
{
    kc_eng_scommit_t **pp = &e->share->commits;
    while (*pp) {
        kc_eng_scommit_t *k = *pp;
        bool done = true;
        for (size_t i = 0; i < k->n_wait && done; i++)
            done = kc_share_session_answered(&k->wait[i]->s, k->mark[i]);
        if (!done && (now < 0 || now < k->deadline)) {
            if (wake && k->deadline < *wake)
                *wake = k->deadline;
            pp = &k->next;
            continue;
        }
        *pp = k->next;
        kc_error_t err;
        if (done)
            commit_finish(k, KC_OK, NULL);
        else
            commit_finish(k,
                          kc_fail(&err, KC_ERR_TIMEOUT,
                                  "share commit: the broker did not answer every acknowledgement "
                                  "in time"),
                          &err);
    }
}

/* A commit of what is queued in the sessions (`only`: in that one alone). */
static kc_err_t commit_start(kc_engine_t *e, kc_eng_ssess_t *only, int timeout_ms, bool refusals,
                             kc_engine_offsets_cb cb, void *opaque, bool *none, kc_error_t *err)
{
    *none = false;
    struct kc_eng_share *sh = e->share;
    kc_eng_scommit_t *k = calloc(1, sizeof *k);
    if (k) {
        k->wait = calloc(sh->n ? sh->n : 1, sizeof *k->wait);
        k->mark = calloc(sh->n ? sh->n : 1, sizeof *k->mark);
    }
    if (!k || !k->wait || !k->mark) {
        if (k)
            commit_free(k);
        return kc_fail(err, KC_ERR_NOMEM, "share commit: out of memory");
    }
    for (size_t i = 0; i < sh->n; i++) {
        uint64_t mark = kc_share_session_ack_mark(&sh->s[i]->s);
        if ((only && sh->s[i] != only) || kc_share_session_answered(&sh->s[i]->s, mark))
            continue;
        k->wait[k->n_wait] = sh->s[i];
        k->mark[k->n_wait++] = mark;
    }
    k->deadline = kc_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    k->cb = cb;
    k->opaque = opaque;
    if (refusals) /* the verdicts it covers that were refused before they could leave */
        refusals_take(sh, k);
    if (!k->n_wait) {
        if (k->n_res || k->lost)
            commit_finish(k, KC_OK, NULL); /* only refusals to report: answered now */
        else {
            commit_free(k);
            *none = true;
        }
        return KC_OK;
    }
    kc_eng_scommit_t **pp = &sh->commits;
    while (*pp)
        pp = &(*pp)->next;
    *pp = k;
    kc_eng_drive(e);
    return KC_OK;
}

kc_err_t kc_engine_share_commit(kc_engine_t *e, int timeout_ms, bool refusals,
                                kc_engine_offsets_cb cb, void *opaque, bool *none, kc_error_t *err)
{
    *none = false;
    if (!e->share)
        return kc_fail(err, KC_ERR_STATE, "share commit: the engine has no share group");
    if (e->closing)
        return kc_fail(err, KC_ERR_CLOSED, "share commit: the consumer is closing");
    return commit_start(e, NULL, timeout_ms, refusals, cb, opaque, none, err);
}

kc_err_t kc_engine_share_renew(kc_engine_t *e, const char *topic, int32_t partition, int64_t first,
                               int64_t last, int16_t delivery_count, int timeout_ms,
                               kc_engine_offsets_cb cb, void *opaque, kc_error_t *err)
{
    if (!e->share)
        return kc_fail(err, KC_ERR_STATE, "share: the engine has no share group");
    if (e->closing)
        return kc_fail(err, KC_ERR_CLOSED, "renew: the consumer is closing");
    ssize_t i;
    kc_eng_ssess_t *ss;
    if (sess_for(e, "renew", topic, partition, first, delivery_count, &i, &ss, err) != KC_OK)
        return KC_ERR_NOT_FOUND;
    /* A session being opened again (after a reset) takes no acknowledgement before its first
     * ShareFetch is answered, which may not come soon: say so now, the caller may retry. */
    if (ss->s.epoch == KC_SHARE_EPOCH_OPEN)
        return kc_fail(err, KC_ERR_TRANSPORT,
                       "renew: %s[%d]: the share session with broker %d is being opened again; "
                       "retry",
                       topic, partition, (int)ss->s.broker);
    /* Only the broker holding the records can renew them, and only at ShareAcknowledge v2: ask
     * its connection now rather than queue a renewal that would fail the whole request later. */
    kc_conn_t *c = kc_eng_broker_conn(e, ss->s.broker);
    if (!c || kc_conn_state(c) != KC_CONN_READY)
        return kc_fail(err, KC_ERR_TRANSPORT,
                       "renew: %s[%d]: not connected to broker %d, which holds the records", topic,
                       partition, (int)ss->s.broker);
    if (kc_conn_pick_version(c, KC_SHARE_ACKNOWLEDGE_REQUEST_API_KEY, 2, 2) < 0)
        return kc_fail(err, KC_ERR_UNSUPPORTED,
                       "renew: broker %d has no ShareAcknowledge v2 (lock renewal, KIP-1222, "
                       "Kafka 4.2+)",
                       (int)ss->s.broker);
    kc_err_t rc = kc_share_session_renew(&ss->s, &e->parts[i].tp, first, last, delivery_count,
                                         kc_now_ms(), err);
    if (rc != KC_OK)
        return rc;
    /* Answered by this session's answer alone: another broker's long poll is not its business. */
    bool none = false;
    rc = commit_start(e, ss, timeout_ms, false, cb, opaque, &none, err);
    if (rc == KC_OK && none) /* cannot be: the renewal is queued */
        rc = kc_fail(err, KC_ERR_STATE, "renew: nothing was queued");
    return rc;
}

/* ---- answers ------------------------------------------------------------------------------ */

static void ack_range(kc_eng_ssess_t *ss, const kc_tp_t *tp, int64_t first, int64_t last,
                      kc_share_ack_type_t type)
{
    kc_error_t err;
    if (kc_share_session_ack(&ss->s, tp, first, last, type, &err) != KC_OK)
        kc_log(KC_LOG_WARN, "share", "partition %d offsets %" PRId64 "..%" PRId64 ": %s",
               (int)tp->partition, first, last, err.msg);
}

/* pieces.h's outputs for one partition of the answer being applied. */
typedef struct cut {
    kc_eng_ssess_t *ss;
    const kc_tp_t *tp;
    kc_eng_pinfo_t *in;
    int64_t deadline; /* the pieces' acquisition lock has surely run out by then (share/held.h) */
} cut_t;

static bool cut_piece(void *o, const uint8_t *batch, size_t size, int64_t first, int64_t last,
                      int16_t delivery_count)
{
    cut_t *c = o;
    kc_engine_t *e = c->ss->e;
    kc_slice_t s = kc_slice_make(c->ss->frame, batch, size);
    if (!e->sink.share_records ||
        e->sink.share_records(e->sink.opaque, c->in->user, c->in->topic, c->in->partition,
                              c->ss->s.broker, &s, first, last + 1, delivery_count,
                              c->deadline == KC_SHARE_NO_DEADLINE ? 0 : c->deadline) != KC_OK) {
        kc_slice_release(&s);
        e->share->st.refused += (uint64_t)(last - first + 1);
        if (c->in->share_st)
            c->in->share_st->refused += (uint64_t)(last - first + 1);
        return false;
    }
    e->share->st.delivered += (uint64_t)(last - first + 1);
    if (c->in->share_st)
        c->in->share_st->delivered += (uint64_t)(last - first + 1);
    kc_error_t err;
    if (kc_share_session_hold(&c->ss->s, c->tp, first, last, delivery_count, c->deadline, &err) !=
        KC_OK) /* the verdict will find nothing held and be reported unsent */
        kc_log(KC_LOG_WARN, "share", "%s[%d] offsets %" PRId64 "..%" PRId64 ": %s", c->in->topic,
               (int)c->in->partition, first, last, err.msg);
    return true;
}

static void cut_ack(void *o, int64_t first, int64_t last, kc_share_ack_type_t type)
{
    cut_t *c = o;
    ack_range(c->ss, c->tp, first, last, type);
}

static void on_records(void *o, const kc_tp_t *tp, kc_bytes_t rec, const kc_share_range_t *r,
                       size_t n, int32_t lock_ms)
{
    kc_eng_ssess_t *ss = o;
    kc_engine_t *e = ss->e;
    ssize_t i = kc_eng_find_tp(e, tp);
    if (i < 0 || !e->info[i].share || e->closing) {
        /* removed meanwhile, or closing: nothing of it is delivered */
        for (size_t k = 0; k < n; k++)
            ack_range(ss, tp, r[k].first, r[k].last, KC_SHARE_ACK_RELEASE);
        return;
    }
    if (e->info[i].share_st)
        e->info[i].share_st->acquired += (uint64_t)kc_share_acquired_span(r, n);
    /* The lock began before the broker answered: by now plus its length it has surely run out. */
    cut_t c = {ss, tp, &e->info[i], lock_ms > 0 ? kc_now_ms() + lock_ms : KC_SHARE_NO_DEADLINE};
    kc_share_pieces_out_t out = {cut_piece, cut_ack, &c};
    kc_share_pieces(rec, r, n, &out);
}

_Static_assert(KC_SHARE_ACK_UNSENT == KC_ENGINE_SHARE_UNSENT,
               "one code for unsent acknowledgements");

static void on_acked(void *o, const kc_tp_t *tp, const kc_share_ack_batch_t *b, int32_t n,
                     int16_t code, const char *why)
{
    kc_eng_ssess_t *ss = o;
    kc_engine_t *e = ss->e;
    if (n <= 0)
        return;
    commits_note(e, ss, tp, b[n - 1].last, code, why);
    ssize_t i = kc_eng_find_tp(e, tp);
    kc_engine_share_part_stats_t *st = i >= 0 ? e->info[i].share_st : NULL;
    if (st) {
        int64_t by[KC_SHARE_ACK_TYPES] = {0};
        kc_share_ack_batches_count(b, n, by);
        for (int t = 0; t < KC_SHARE_ACK_TYPES; t++)
            if (t != KC_SHARE_ACK_RENEW || code != KC_SHARE_ACK_UNSENT) /* no verdict, not late */
                *(code == 0 && t == KC_SHARE_ACK_RENEW ? &st->renewed
                  : code == 0                          ? &st->acked[t]
                  : code > 0                           ? &st->ack_errors
                  : code == KC_SHARE_ACK_UNSENT        ? &st->ack_late
                                                       : &st->ack_lost) += (uint64_t)by[t];
    }
    if (e->sink.share_acked) {
        /* One report per contiguous run of batches: a member's acquired ranges need not be
         * adjacent (others hold the offsets between), and a report names only offsets it sent. */
        const char *topic = e->names.name_of(e->names.opaque, tp->topic_id);
        for (int32_t k = 0, run = 0; k < n; k++) {
            if (k + 1 < n && b[k + 1].first == b[k].last + 1)
                continue;
            int64_t rc[KC_SHARE_ACK_TYPES] = {0};
            kc_share_ack_batches_count(b + run, k - run + 1, rc);
            /* renewals alone are answered to their caller (kc_engine_share_deadline) */
            if (rc[0] + rc[1] + rc[2] + rc[3] > 0 || code != 0)
                e->sink.share_acked(e->sink.opaque, topic ? topic : "", tp->partition, b[run].first,
                                    b[k].last, rc[1] + rc[2] + rc[3], code, why);
            run = k + 1;
        }
    }
    if (code == 0)
        return;
    int64_t c[KC_SHARE_ACK_TYPES] = {0};
    kc_share_ack_batches_count(b, n, c);
    e->share->st.ack_failed += (uint64_t)(c[0] + c[1] + c[2] + c[3] + c[4]);
    kc_log(KC_LOG_WARN, "share",
           "broker %d partition %d: acknowledgement of offsets %" PRId64 "..%" PRId64
           " refused (%s)%s%s",
           (int)ss->s.broker, (int)tp->partition, b[0].first, b[n - 1].last,
           code > 0                      ? kc_kafka_err_name(code)
           : code == KC_SHARE_ACK_UNSENT ? "not sent"
                                         : "no answer",
           why && *why ? ": " : "", why ? why : "");
}

static void on_error(void *o, const kc_tp_t *tp, const kc_error_t *err)
{
    kc_eng_ssess_t *ss = o;
    kc_log(KC_LOG_WARN, "share", "broker %d%s: %s", (int)ss->s.broker, tp ? " partition" : "",
           err->msg);
    if (tp)
        ss->e->md_wanted = 1; /* NOT_LEADER and the like: the leader may have moved */
}

static kc_share_handler_t handler(kc_eng_ssess_t *ss)
{
    return (kc_share_handler_t){on_records, on_acked, on_error, ss};
}

static kc_err_t fetch_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    kc_eng_ssess_t *ss = opaque;
    kc_error_t err;
    kc_err_t rc = ss->ack_req ? kc_share_acknowledge_request_encode(&ss->aq, version, out, &err)
                              : kc_share_fetch_request_encode(&ss->fq, version, out, &err);
    if (rc != KC_OK)
        kc_log(KC_LOG_ERROR, "share", "broker %d: encode: %s", (int)ss->s.broker, err.msg);
    return rc;
}

static void sess_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off,
                      int16_t version, void *opaque)
{
    kc_eng_ssess_t *ss = opaque;
    kc_engine_t *e = ss->e;
    kc_share_handler_t h = handler(ss);
    kc_error_t err;
    const char *api = ss->ack_req ? "ShareAcknowledge" : "ShareFetch";
    ss->asked = 0; /* what it acquired is held now (cut_piece), or acknowledged */
    if (rc != KC_OK) {
        kc_eng_conn_failed(
            e, ss->ack_req ? KC_SHARE_ACKNOWLEDGE_REQUEST_API_KEY : KC_SHARE_FETCH_REQUEST_API_KEY,
            conn, rc);
        kc_fail(&err, rc, "%s to broker %d got no answer", api, (int)ss->s.broker);
        kc_share_session_failed(&ss->s, &err, &h);
        ss->retry_at_ms = kc_now_ms() + e->conf.retry_backoff_ms;
        e->md_wanted = 1;
        commits_check(e, -1, NULL);
        kc_eng_drive(e);
        return;
    }
    kc_arena_t *a = &ss->ans;
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    ss->frame = frame;
    if (ss->ack_req) {
        kc_share_acknowledge_response_t m;
        if (kc_share_acknowledge_response_decode(&m, version, &r, a, &err) == KC_OK)
            kc_share_session_ack_answer(&ss->s, &m, kc_now_ms(), &h);
        else
            kc_share_session_failed(&ss->s, &err, &h);
    } else {
        kc_share_fetch_response_t m;
        if (kc_share_fetch_response_decode(&m, version, &r, a, &err) == KC_OK)
            kc_share_session_fetch_answer(&ss->s, &m, a, &h);
        else
            kc_share_session_failed(&ss->s, &err, &h);
        e->share->st.fetches++;
    }
    ss->frame = NULL;
    kc_arena_reset(a);
    kc_buf_unref(frame);
    if (ss->s.epoch == KC_SHARE_EPOCH_OPEN && !ss->s.closed)
        ss->retry_at_ms = kc_now_ms() + e->conf.retry_backoff_ms; /* reset: not in a hot loop */
    commits_check(e, -1, NULL);
    kc_eng_drive(e);
}

/* How many records a ShareFetch may ask for now: max_records; with record_limit, what is left of
 * it after the records held awaiting verdicts and those other sessions' fetches in flight may
 * acquire (0: fetch nothing until verdicts come). */
static int32_t fetch_allowance(const struct kc_eng_share *sh)
{
    if (!sh->record_limit)
        return sh->max_records;
    int64_t taken = 0;
    for (size_t k = 0; k < sh->n; k++)
        taken += sh->s[k]->asked + kc_share_session_held(&sh->s[k]->s, NULL);
    return taken < sh->max_records ? (int32_t)(sh->max_records - taken) : 0;
}

/* Sends the session's next request (ShareFetch, else ShareAcknowledge; `close`: the closing
 * ShareAcknowledge). */
static void sess_send(kc_engine_t *e, kc_eng_ssess_t *ss, bool close, int64_t now)
{
    struct kc_eng_share *sh = e->share;
    if (ss->s.inflight || ss->s.closed || !sh->member_id || now < ss->retry_at_ms)
        return;
    kc_conn_t *c = kc_eng_broker_conn(e, ss->s.broker);
    if (!c)
        return;
    kc_error_t err;
    int32_t max_bytes = e->fset.max_bytes;
    if (e->sink.budget) {
        int64_t left = e->sink.budget(e->sink.opaque);
        if (left < max_bytes)
            max_bytes = left > 0 ? (int32_t)left : 1;
    }
    int32_t allow = fetch_allowance(sh);
    kc_share_fetch_params_t p = {sh->group_id,
                                 sh->member_id,
                                 e->fset.max_wait_ms,
                                 e->fset.min_bytes,
                                 max_bytes,
                                 allow,
                                 allow,
                                 sh->record_limit ? KC_SHARE_ACQUIRE_RECORD_LIMIT
                                                  : KC_SHARE_ACQUIRE_BATCHES};
    /* A commit waits, or a renewal is pending (a ShareFetch cannot carry one and fetch). */
    if (!close && (commit_pending_on(e, ss) || kc_share_session_has_renewals(&ss->s)) &&
        kc_share_session_has_acks(&ss->s) &&
        kc_share_session_acknowledge(&ss->s, sh->group_id, sh->member_id, false, &ss->aq, &err) ==
            KC_OK)
        ss->ack_req = true;
    else if (!close && allow > 0 && kc_share_session_fetch(&ss->s, &p, &ss->fq, &err) == KC_OK)
        ss->ack_req = false;
    else if (kc_share_session_acknowledge(&ss->s, sh->group_id, sh->member_id, close, &ss->aq,
                                          &err) == KC_OK)
        ss->ack_req = true;
    else {
        kc_share_handler_t h = handler(ss);
        if (kc_share_session_strand(&ss->s,
                                    "not sent: the share session was reset and nothing is "
                                    "fetched from this broker to open it again",
                                    &h))
            commits_check(e, -1, NULL);
        return;
    }
    /* record_limit needs ShareAcquireMode (ShareFetch v2): a broker without it would acquire
     * whole batches, more than the member may hold, so it is refused instead (an error event). */
    kc_conn_req_spec_t spec = {
        ss->ack_req ? KC_SHARE_ACKNOWLEDGE_REQUEST_API_KEY : KC_SHARE_FETCH_REQUEST_API_KEY,
        (!ss->ack_req && sh->record_limit) || (ss->ack_req && ss->aq.is_renew_ack) ? 2 : 1,
        ss->ack_req ? KC_SHARE_ACKNOWLEDGE_REQUEST_MAX_VERSION : KC_SHARE_FETCH_REQUEST_MAX_VERSION,
        fetch_encode,
        sess_done,
        ss};
    ss->asked = ss->ack_req ? 0 : allow;
    kc_err_t rc = kc_conn_send(c, &spec, &err);
    if (rc == KC_ERR_UNSUPPORTED && spec.min_version == 2 && !ss->ack_req) {
        kc_error_t why;
        kc_fail(&why, rc, "share.acquire.mode=record_limit needs ShareFetch v2 (Kafka 4.2+): %s",
                err.msg);
        kc_eng_api_unusable(e, KC_SHARE_FETCH_REQUEST_API_KEY, &why);
    } else if (rc != KC_OK) {
        kc_eng_conn_failed(e, spec.api_key, c, rc);
    }
    if (rc != KC_OK) {
        ss->asked = 0;
        kc_log(KC_LOG_WARN, "share", "broker %d: %s", (int)ss->s.broker, err.msg);
        kc_share_handler_t h = handler(ss);
        kc_share_session_failed(&ss->s, &err, &h);
        ss->retry_at_ms = now + e->conf.retry_backoff_ms;
        commits_check(e, -1, NULL);
    }
}

void kc_eng_share_drive(kc_engine_t *e, int64_t now, int64_t *wake)
{
    struct kc_eng_share *sh = e->share;
    if (!sh)
        return;
    kc_error_t err;
    for (size_t i = 0; i < e->n_parts; i++) {
        kc_eng_pinfo_t *in = &e->info[i];
        kc_partition_t *p = &e->parts[i];
        if (!in->share || !in->have_id)
            continue;
        int may = !e->sink.may_fetch || e->sink.may_fetch(e->sink.opaque, in->user);
        bool on = !in->user_paused && may && p->leader_id >= 0;
        for (size_t k = 0; k < sh->n; k++)
            if (sh->s[k]->s.broker != p->leader_id)
                (void)kc_share_session_want(&sh->s[k]->s, &p->tp, false, &err);
        kc_eng_ssess_t *ss = p->leader_id >= 0 ? sess_get(e, p->leader_id, on) : NULL;
        if (ss && kc_share_session_want(&ss->s, &p->tp, on, &err) != KC_OK)
            kc_log(KC_LOG_WARN, "share", "%s[%d]: %s", in->topic, in->partition, err.msg);
    }
    for (size_t k = 0; k < sh->n; k++) {
        kc_eng_ssess_t *ss = sh->s[k];
        sess_send(e, ss, false, now);
        if (!ss->s.inflight && ss->retry_at_ms > now && ss->retry_at_ms < *wake)
            *wake = ss->retry_at_ms;
    }
    commits_check(e, now, wake);
}

static bool sessions_in_flight(kc_engine_t *e)
{
    for (size_t k = 0; k < e->share->n; k++)
        if (e->share->s[k]->s.inflight)
            return true;
    return false;
}

void kc_eng_share_close(kc_engine_t *e, int64_t deadline)
{
    struct kc_eng_share *sh = e->share;
    if (!sh)
        return;
    for (int round = 0; round < 2; round++) {
        /* round 0 waits out the requests in flight; round 1 closes every open session */
        kc_eng_run_while(e, deadline, sessions_in_flight);
        if (round == 0)
            for (size_t k = 0; k < sh->n; k++) {
                sh->s[k]->retry_at_ms = 0;
                sess_send(e, sh->s[k], true, kc_now_ms());
            }
    }
    /* the closing ShareAcknowledge answered the commits it could; the rest end here */
    commits_check(e, -1, NULL);
    while (sh->commits) {
        kc_eng_scommit_t *k = sh->commits;
        sh->commits = k->next;
        kc_error_t err;
        commit_finish(k, kc_fail(&err, KC_ERR_CLOSED, "share commit: the consumer closed"), &err);
    }
}

void kc_eng_share_free(kc_engine_t *e)
{
    struct kc_eng_share *sh = e->share;
    if (!sh)
        return;
    while (sh->commits) { /* freed without a close: every commit still gets its answer */
        kc_eng_scommit_t *k = sh->commits;
        sh->commits = k->next;
        kc_error_t err;
        commit_finish(k, kc_fail(&err, KC_ERR_CLOSED, "share commit: the consumer closed"), &err);
    }
    for (size_t k = 0; k < sh->n; k++) {
        kc_share_session_free(&sh->s[k]->s);
        kc_arena_free(&sh->s[k]->ans);
        free(sh->s[k]);
    }
    refusals_take(sh, NULL);
    free(sh->refusals);
    free(sh->s);
    free(sh->group_id);
    free(sh->member_id);
    free(sh);
    e->share = NULL;
}

void kc_engine_share_stats(const kc_engine_t *e, kc_engine_share_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (!e->share)
        return;
    *out = e->share->st;
    for (size_t k = 0; k < e->share->n; k++) {
        const kc_share_session_counters_t *c = &e->share->s[k]->s.c;
        out->acked[0] += c->acked[0];
        out->acked[1] += c->acked[1];
        out->acked[2] += c->acked[2];
        out->acked[3] += c->acked[3];
        out->ack_errors += c->ack_errors;
        out->ack_lost += c->ack_lost;
        out->ack_late += c->ack_late;
        out->lapsed += c->lapsed;
        out->renewed += c->renewed;
    }
}

kc_err_t kc_engine_share_part_stats(const kc_engine_t *e, const char *topic, int32_t partition,
                                    kc_engine_share_part_stats_t *out)
{
    memset(out, 0, sizeof *out);
    ssize_t i = e->share ? kc_eng_find_part(e, topic, partition) : -1;
    if (i < 0 || !e->info[i].share)
        return KC_ERR_NOT_FOUND;
    if (e->info[i].share_st)
        *out = *e->info[i].share_st;
    out->held = 0;
    if (e->info[i].have_id)
        for (size_t k = 0; k < e->share->n; k++)
            out->held += kc_share_session_held(&e->share->s[k]->s, &e->parts[i].tp);
    return KC_OK;
}

size_t kc_engine_share_session_stats(const kc_engine_t *e, kc_engine_share_session_stats_t *out,
                                     size_t cap)
{
    if (!e->share)
        return 0;
    for (size_t k = 0; k < e->share->n && k < cap; k++) {
        const kc_share_session_t *s = &e->share->s[k]->s;
        kc_engine_share_session_stats_t *o = &out[k];
        memset(o, 0, sizeof *o);
        o->broker = s->broker;
        o->epoch = s->epoch;
        o->requests = s->c.requests;
        o->resets = s->c.resets;
        o->opened = s->c.opened;
        o->acquired = s->c.acquired;
        memcpy(o->acked, s->c.acked, sizeof o->acked);
        o->ack_errors = s->c.ack_errors;
        o->ack_lost = s->c.ack_lost;
        o->ack_late = s->c.ack_late;
        o->lapsed = s->c.lapsed;
        o->renewed = s->c.renewed;
        o->bad_answers = s->c.bad_answers;
        o->partitions = s->n;
        o->held = kc_share_session_held(s, NULL);
    }
    return e->share->n;
}
