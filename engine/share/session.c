/* A share session with one broker (session.h has the rules). Pure. */
#include "share/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/batch.h"
#include "proto/kafka_errors.h"

int32_t kc_share_next_epoch(int32_t e)
{
    return e < 0 || e == INT32_MAX ? 1 : e + 1;
}

void kc_share_session_init(kc_share_session_t *s, int32_t broker)
{
    memset(s, 0, sizeof *s);
    s->broker = broker;
    s->epoch = KC_SHARE_EPOCH_OPEN;
}

void kc_share_session_free(kc_share_session_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        kc_share_acks_free(&s->parts[i].pending);
        kc_share_held_free(&s->parts[i].held);
    }
    free(s->parts);
    kc_arena_free(&s->req);
    memset(s, 0, sizeof *s);
}

static kc_share_spart_t *find(kc_share_session_t *s, const kc_tp_t *tp)
{
    for (size_t i = 0; i < s->n; i++)
        if (kc_tp_cmp(&s->parts[i].tp, tp) == 0)
            return &s->parts[i];
    return NULL;
}

static kc_share_spart_t *find_wire(kc_share_session_t *s, const kc_uuid_t *id, int32_t partition)
{
    kc_tp_t tp;
    memcpy(tp.topic_id, id, sizeof tp.topic_id);
    tp.partition = partition;
    return find(s, &tp);
}

kc_err_t kc_share_session_want(kc_share_session_t *s, const kc_tp_t *tp, bool on, kc_error_t *err)
{
    kc_share_spart_t *p = find(s, tp);
    if (p || !on) {
        if (p)
            p->wanted = on;
        return KC_OK;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        kc_share_spart_t *np = realloc(s->parts, cap * sizeof *np);
        if (!np)
            return kc_fail(err, KC_ERR_NOMEM, "share session: out of memory");
        s->parts = np;
        s->cap = cap;
    }
    p = &s->parts[s->n++];
    memset(p, 0, sizeof *p);
    p->tp = *tp;
    p->wanted = true;
    return KC_OK;
}

kc_err_t kc_share_session_hold(kc_share_session_t *s, const kc_tp_t *tp, int64_t first,
                               int64_t last, int16_t delivery_count, int64_t deadline,
                               kc_error_t *err)
{
    kc_share_spart_t *p = find(s, tp);
    if (!p)
        return kc_fail(err, KC_ERR_NOT_FOUND, "hold: partition %d is not fetched from broker %d",
                       (int)tp->partition, (int)s->broker);
    return kc_share_held_add(&p->held, first, last, delivery_count, deadline, err);
}

int64_t kc_share_session_held(const kc_share_session_t *s, const kc_tp_t *tp)
{
    int64_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!tp || kc_tp_cmp(&s->parts[i].tp, tp) == 0)
            n += s->parts[i].held.records;
    return n;
}

kc_err_t kc_share_session_ack(kc_share_session_t *s, const kc_tp_t *tp, int64_t first, int64_t last,
                              kc_share_ack_type_t type, kc_error_t *err)
{
    kc_share_spart_t *p = find(s, tp);
    if (!p)
        return kc_fail(err, KC_ERR_NOT_FOUND,
                       "acknowledge: partition %d is not fetched from broker %d",
                       (int)tp->partition, (int)s->broker);
    kc_err_t rc = kc_share_acks_add(&p->pending, first, last, type, err);
    if (rc == KC_OK)
        s->acks_queued++;
    return rc;
}

/* *out: the part holding first..last of the delivery with `delivery_count` at `now`, for a
 * verdict (`take`: they are held no more, whatever the answer; late ones counted) or a renewal (a
 * check only). Else KC_ERR_NOT_FOUND, KC_ERR_INVALID_ARG or KC_ERR_STATE with the reason. */
static kc_err_t held_by(kc_share_session_t *s, const kc_tp_t *tp, int64_t first, int64_t last,
                        int16_t delivery_count, int64_t now, bool take, kc_share_spart_t **out,
                        kc_error_t *err)
{
    const char *what = take ? "verdict" : "renewal";
    kc_share_spart_t *p = find(s, tp);
    if (!p)
        return kc_fail(err, KC_ERR_NOT_FOUND, "%s: partition %d is not fetched from broker %d",
                       what, (int)tp->partition, (int)s->broker);
    if (first < 0 || last < first)
        return kc_fail(err, KC_ERR_INVALID_ARG, "%s: bad offset range %lld..%lld", what,
                       (long long)first, (long long)last);
    int16_t now_count;
    kc_share_held_verdict_t v =
        take ? kc_share_held_take(&p->held, first, last, delivery_count, now, &now_count)
             : kc_share_held_check(&p->held, first, last, delivery_count, now, &now_count);
    if (v == KC_SHARE_HELD_LIVE) {
        *out = p;
        return KC_OK;
    }
    if (take)
        s->c.ack_late += (uint64_t)(last - first + 1);
    if (v == KC_SHARE_HELD_EXPIRED)
        return kc_fail(err, KC_ERR_STATE,
                       "the acquisition lock of delivery %d ran out before the %s: the broker "
                       "hands the records out again",
                       (int)delivery_count, what);
    if (now_count)
        return kc_fail(err, KC_ERR_STATE,
                       "the records of delivery %d were handed out again (delivery %d) before "
                       "the %s",
                       (int)delivery_count, (int)now_count, what);
    return kc_fail(err, KC_ERR_STATE,
                   "the records of delivery %d are held no more before the %s (handed out again "
                   "and judged since, or lapsed)",
                   (int)delivery_count, what);
}

kc_err_t kc_share_session_verdict(kc_share_session_t *s, const kc_tp_t *tp, int64_t first,
                                  int64_t last, int16_t delivery_count, kc_share_ack_type_t type,
                                  int64_t now, kc_error_t *err)
{
    kc_share_spart_t *p;
    kc_err_t rc = held_by(s, tp, first, last, delivery_count, now, true, &p, err);
    if (rc != KC_OK)
        return rc;
    kc_share_acks_drop_renew(&p->pending, first, last, NULL); /* the verdict supersedes a renewal */
    return kc_share_session_ack(s, tp, first, last, type, err);
}

kc_err_t kc_share_session_renew(kc_share_session_t *s, const kc_tp_t *tp, int64_t first,
                                int64_t last, int16_t delivery_count, int64_t now, kc_error_t *err)
{
    kc_share_spart_t *p;
    kc_err_t rc = held_by(s, tp, first, last, delivery_count, now, false, &p, err);
    if (rc != KC_OK)
        return rc;
    kc_share_acks_drop_renew(&p->pending, first, last, NULL); /* one renewal pending at a time */
    return kc_share_session_ack(s, tp, first, last, KC_SHARE_ACK_RENEW, err);
}

bool kc_share_session_has_renewals(const kc_share_session_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (kc_share_acks_has_renew(&s->parts[i].pending))
            return true;
    return false;
}

int64_t kc_share_session_deadline(const kc_share_session_t *s, const kc_tp_t *tp, int64_t offset,
                                  int16_t delivery_count)
{
    for (size_t i = 0; i < s->n; i++)
        if (kc_tp_cmp(&s->parts[i].tp, tp) == 0)
            return kc_share_held_deadline(&s->parts[i].held, offset, delivery_count);
    return -1;
}

void kc_share_session_lapsed(kc_share_session_t *s, const kc_tp_t *tp, int64_t first, int64_t last,
                             int16_t delivery_count)
{
    kc_share_spart_t *p = find(s, tp);
    if (!p || first < 0 || last < first)
        return;
    int16_t now_count;
    (void)kc_share_held_take(&p->held, first, last, delivery_count, INT64_MAX, &now_count);
    kc_share_acks_drop_renew(&p->pending, first, last, NULL); /* the broker released them already */
    s->c.lapsed += (uint64_t)(last - first + 1);
}

uint64_t kc_share_session_ack_mark(const kc_share_session_t *s)
{
    return s->acks_queued;
}

bool kc_share_session_answered(const kc_share_session_t *s, uint64_t mark)
{
    return s->acks_answered >= mark;
}

bool kc_share_session_has_acks(const kc_share_session_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->parts[i].pending.n)
            return true;
    return false;
}

/* Acknowledgements that no ShareFetch will carry: of partitions no longer wanted. */
static bool has_loose_acks(const kc_share_session_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->parts[i].pending.n && !s->parts[i].wanted)
            return true;
    return false;
}

bool kc_share_session_has_wanted(const kc_share_session_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->parts[i].wanted)
            return true;
    return false;
}

/* Drops partitions that are neither wanted, nor in the broker's session, nor owed an answer,
 * nor holding records whose verdicts are to come. */
static void compact(kc_share_session_t *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        kc_share_spart_t *p = &s->parts[i];
        if (!p->wanted && !p->known && !p->pending.n && !p->n_sent && !p->in_request &&
            !p->held.n) {
            kc_share_acks_free(&p->pending);
            kc_share_held_free(&p->held);
            continue;
        }
        s->parts[k++] = *p;
    }
    s->n = k;
}

/* The request's topics: the parts marked in_request, grouped by topic id in first-seen order.
 * make(topic index, part) fills one partition entry. */
typedef struct topics {
    kc_uuid_t *ids;
    int32_t *counts;
    int32_t n;
} topics_t;

static kc_err_t group_topics(kc_share_session_t *s, topics_t *t, kc_error_t *err)
{
    t->ids = kc_arena_calloc(&s->req, s->n ? s->n : 1, sizeof *t->ids);
    t->counts = kc_arena_calloc(&s->req, s->n ? s->n : 1, sizeof *t->counts);
    t->n = 0;
    if (!t->ids || !t->counts)
        return kc_fail(err, KC_ERR_NOMEM, "share session: out of memory");
    for (size_t i = 0; i < s->n; i++) {
        if (!s->parts[i].in_request)
            continue;
        int32_t k = 0;
        while (k < t->n && memcmp(&t->ids[k], s->parts[i].tp.topic_id, 16) != 0)
            k++;
        if (k == t->n)
            memcpy(&t->ids[t->n++], s->parts[i].tp.topic_id, 16);
        t->counts[k]++;
    }
    return KC_OK;
}

/* Takes each in_request part's pending acknowledgements as its sent batches. */
static kc_err_t take_acks(kc_share_session_t *s, kc_error_t *err)
{
    for (size_t i = 0; i < s->n; i++) {
        kc_share_spart_t *p = &s->parts[i];
        p->sent = NULL;
        p->n_sent = 0;
        if (p->in_request && p->pending.n &&
            kc_share_acks_take(&p->pending, &s->req, &p->sent, &p->n_sent, err) != KC_OK)
            return KC_ERR_NOMEM;
    }
    return KC_OK;
}

kc_err_t kc_share_session_fetch(kc_share_session_t *s, const kc_share_fetch_params_t *p,
                                kc_share_fetch_request_t *req, kc_error_t *err)
{
    if (s->inflight || s->closed)
        return kc_fail(err, KC_ERR_AGAIN, "share session: a request is in flight");
    bool open = s->epoch == KC_SHARE_EPOCH_OPEN;
    if (!open && (has_loose_acks(s) || kc_share_session_has_renewals(s)))
        return kc_fail(err, KC_ERR_AGAIN, "share session: acknowledgements go first");
    kc_arena_reset(&s->req);
    size_t named = 0, forget = 0;
    for (size_t i = 0; i < s->n; i++) {
        kc_share_spart_t *x = &s->parts[i];
        if (open)
            x->known = false;
        /* At epoch 0 acknowledgements are refused: they wait for the next request. Only
         * wanted partitions are named (see "Verdicts after a partition leaves"). */
        x->in_request = x->wanted && (open || !x->known || x->pending.n > 0);
        named += x->in_request;
        forget += !open && x->known && !x->wanted && !x->in_request;
    }
    if (!s->n || (open && !named) ||
        (!open && !named && !forget && !kc_share_session_has_wanted(s)))
        return kc_fail(err, KC_ERR_AGAIN, "share session: nothing to fetch");
    topics_t t;
    if (group_topics(s, &t, err) != KC_OK || (!open && take_acks(s, err) != KC_OK))
        return KC_ERR_NOMEM;
    kc_share_fetch_request_init(req);
    req->group_id = kc_str(p->group_id);
    req->member_id = kc_str(p->member_id);
    req->share_session_epoch = s->epoch;
    req->max_wait_ms = p->max_wait_ms;
    req->min_bytes = p->min_bytes;
    req->max_bytes = p->max_bytes;
    req->max_records = p->max_records;
    req->batch_size = p->batch_size;
    req->share_acquire_mode = p->acquire_mode;
    kc_share_fetch_request_fetch_topic_t *ft =
        kc_arena_calloc(&s->req, (size_t)t.n + 1, sizeof *ft);
    kc_share_fetch_request_forgotten_topic_t *fg = kc_arena_calloc(&s->req, forget + 1, sizeof *fg);
    if (!ft || !fg)
        return kc_fail(err, KC_ERR_NOMEM, "share session: out of memory");
    for (int32_t k = 0; k < t.n; k++) {
        ft[k].topic_id = t.ids[k];
        ft[k].partitions.items =
            kc_arena_calloc(&s->req, (size_t)t.counts[k], sizeof *ft[k].partitions.items);
        if (!ft[k].partitions.items)
            return kc_fail(err, KC_ERR_NOMEM, "share session: out of memory");
    }
    int32_t nf = 0;
    for (size_t i = 0; i < s->n; i++) {
        kc_share_spart_t *x = &s->parts[i];
        if (x->in_request) {
            int32_t k = 0;
            while (memcmp(&t.ids[k], x->tp.topic_id, 16) != 0)
                k++;
            kc_share_fetch_request_fetch_partition_t *fp =
                &ft[k].partitions.items[ft[k].partitions.count++];
            fp->partition_index = x->tp.partition;
            fp->acknowledgement_batches.count = x->n_sent;
            fp->acknowledgement_batches.items =
                x->n_sent ? kc_arena_calloc(&s->req, (size_t)x->n_sent,
                                            sizeof *fp->acknowledgement_batches.items)
                          : NULL;
            if (x->n_sent && !fp->acknowledgement_batches.items)
                return kc_fail(err, KC_ERR_NOMEM, "share session: out of memory");
            for (int32_t j = 0; j < x->n_sent; j++) {
                kc_share_fetch_request_acknowledgement_batch_t *b =
                    &fp->acknowledgement_batches.items[j];
                b->first_offset = x->sent[j].first;
                b->last_offset = x->sent[j].last;
                b->acknowledge_types.count = x->sent[j].n_types;
                b->acknowledge_types.items = x->sent[j].types;
            }
        } else if (!open && x->known && !x->wanted) {
            /* one forgotten entry per partition: simple, and the broker merges them */
            x->forgetting = true;
            memcpy(&fg[nf].topic_id, x->tp.topic_id, 16);
            fg[nf].partitions.count = 1;
            fg[nf].partitions.items = &x->tp.partition;
            nf++;
        }
    }
    req->topics.count = t.n;
    req->topics.items = ft;
    req->forgotten_topics_data.count = nf;
    req->forgotten_topics_data.items = fg;
    /* every pending acknowledgement rides along (loose ones went first), none at epoch 0 */
    s->acks_inflight = open ? s->acks_answered : s->acks_queued;
    s->inflight = true;
    s->inflight_close = false;
    s->inflight_epoch = s->epoch;
    s->c.requests++;
    return KC_OK;
}

kc_err_t kc_share_session_acknowledge(kc_share_session_t *s, const char *group_id,
                                      const char *member_id, bool close,
                                      kc_share_acknowledge_request_t *req, kc_error_t *err)
{
    if (s->inflight || s->closed)
        return kc_fail(err, KC_ERR_AGAIN, "share session: a request is in flight");
    if (s->epoch == KC_SHARE_EPOCH_OPEN)
        /* no session: acknowledgements need one, and there is nothing to close */
        return kc_fail(err, KC_ERR_AGAIN, "share session: not open");
    if (close) /* the close releases what is held: renewing it now would be pointless */
        for (size_t i = 0; i < s->n; i++)
            kc_share_acks_drop_renew(&s->parts[i].pending, 0, INT64_MAX - 1, NULL);
    bool any = kc_share_session_has_acks(s);
    if (!any && !close)
        return kc_fail(err, KC_ERR_AGAIN, "share session: nothing to acknowledge");
    kc_arena_reset(&s->req);
    for (size_t i = 0; i < s->n; i++)
        s->parts[i].in_request = s->parts[i].pending.n > 0;
    bool renew = kc_share_session_has_renewals(s); /* every pending one leaves now */
    topics_t t;
    if (group_topics(s, &t, err) != KC_OK || take_acks(s, err) != KC_OK)
        return KC_ERR_NOMEM;
    kc_share_acknowledge_request_init(req);
    req->is_renew_ack = renew;
    req->group_id = kc_str(group_id);
    req->member_id = kc_str(member_id);
    req->share_session_epoch = close ? KC_SHARE_EPOCH_CLOSE : s->epoch;
    kc_share_acknowledge_request_acknowledge_topic_t *at =
        kc_arena_calloc(&s->req, (size_t)t.n + 1, sizeof *at);
    if (!at)
        return kc_fail(err, KC_ERR_NOMEM, "share session: out of memory");
    for (int32_t k = 0; k < t.n; k++) {
        at[k].topic_id = t.ids[k];
        at[k].partitions.items =
            kc_arena_calloc(&s->req, (size_t)t.counts[k], sizeof *at[k].partitions.items);
        if (!at[k].partitions.items)
            return kc_fail(err, KC_ERR_NOMEM, "share session: out of memory");
    }
    for (size_t i = 0; i < s->n; i++) {
        kc_share_spart_t *x = &s->parts[i];
        if (!x->in_request)
            continue;
        int32_t k = 0;
        while (memcmp(&t.ids[k], x->tp.topic_id, 16) != 0)
            k++;
        kc_share_acknowledge_request_acknowledge_partition_t *ap =
            &at[k].partitions.items[at[k].partitions.count++];
        ap->partition_index = x->tp.partition;
        ap->acknowledgement_batches.count = x->n_sent;
        ap->acknowledgement_batches.items =
            kc_arena_calloc(&s->req, (size_t)x->n_sent, sizeof *ap->acknowledgement_batches.items);
        if (!ap->acknowledgement_batches.items)
            return kc_fail(err, KC_ERR_NOMEM, "share session: out of memory");
        for (int32_t j = 0; j < x->n_sent; j++) {
            ap->acknowledgement_batches.items[j].first_offset = x->sent[j].first;
            ap->acknowledgement_batches.items[j].last_offset = x->sent[j].last;
            ap->acknowledgement_batches.items[j].acknowledge_types.count = x->sent[j].n_types;
            ap->acknowledgement_batches.items[j].acknowledge_types.items = x->sent[j].types;
        }
    }
    req->topics.count = t.n;
    req->topics.items = at;
    s->acks_inflight = s->acks_queued;
    s->inflight = true;
    s->inflight_close = close;
    s->inflight_epoch = req->share_session_epoch;
    s->c.requests++;
    return KC_OK;
}

static void report_sent(kc_share_session_t *s, kc_share_spart_t *p, int16_t code, const char *why,
                        const kc_share_handler_t *h);

bool kc_share_session_strand(kc_share_session_t *s, const char *why, const kc_share_handler_t *h)
{
    if (s->inflight || s->closed || s->epoch != KC_SHARE_EPOCH_OPEN ||
        kc_share_session_has_wanted(s) || !kc_share_session_has_acks(s))
        return false;
    kc_arena_reset(&s->req);
    for (size_t i = 0; i < s->n; i++)
        s->parts[i].in_request = s->parts[i].pending.n > 0;
    kc_error_t err;
    if (take_acks(s, &err) != KC_OK)
        return false;
    for (size_t i = 0; i < s->n; i++) {
        report_sent(s, &s->parts[i], -1, why, h);
        s->parts[i].in_request = false;
    }
    s->acks_answered = s->acks_queued;
    compact(s);
    return true;
}

static void count_acked(kc_share_session_t *s, const kc_share_spart_t *p, int16_t code)
{
    int64_t n[KC_SHARE_ACK_TYPES] = {0};
    kc_share_ack_batches_count(p->sent, p->n_sent, n);
    for (int t = 0; t < KC_SHARE_ACK_TYPES; t++) {
        if (code == 0)
            *(t == KC_SHARE_ACK_RENEW ? &s->c.renewed : &s->c.acked[t]) += (uint64_t)n[t];
        else if (code > 0)
            s->c.ack_errors += (uint64_t)n[t];
        else
            s->c.ack_lost += (uint64_t)n[t];
    }
}

/* Reports the batches of `p` sent with the request just answered (code -1: no usable answer). */
static void report_sent(kc_share_session_t *s, kc_share_spart_t *p, int16_t code, const char *why,
                        const kc_share_handler_t *h)
{
    if (!p->n_sent)
        return;
    count_acked(s, p, code);
    if (h->acked)
        h->acked(h->opaque, &p->tp, p->sent, p->n_sent, code, why);
    p->sent = NULL;
    p->n_sent = 0;
}

/* The session is gone (or was never made): what was sent is reported with `why`, the next
 * request opens a new one. */
/* Renewals not sent yet of `p`, dropped and reported lost (`why`): a new session must be opened
 * with a ShareFetch before anything can be acknowledged, and its caller may retry sooner than
 * that (or the member may fetch nothing until verdicts come, share.acquire.mode=record_limit). */
static void drop_renewals(kc_share_session_t *s, kc_share_spart_t *p, const char *why,
                          const kc_share_handler_t *h)
{
    if (!kc_share_acks_has_renew(&p->pending))
        return;
    kc_share_acks_t gone = {0};
    kc_error_t e;
    kc_share_acks_drop_renew(&p->pending, 0, INT64_MAX - 1, &gone);
    kc_share_ack_batch_t *b;
    int32_t nb;
    if (gone.n && kc_share_acks_take(&gone, &s->req, &b, &nb, &e) == KC_OK && nb) {
        int64_t c[KC_SHARE_ACK_TYPES] = {0};
        kc_share_ack_batches_count(b, nb, c);
        s->c.ack_lost += (uint64_t)c[KC_SHARE_ACK_RENEW];
        if (h->acked)
            h->acked(h->opaque, &p->tp, b, nb, -1, why);
    }
    kc_share_acks_free(&gone);
}

static void reset(kc_share_session_t *s, int16_t code, const kc_error_t *why,
                  const kc_share_handler_t *h)
{
    for (size_t i = 0; i < s->n; i++) {
        report_sent(s, &s->parts[i], code, why->msg, h);
        drop_renewals(s, &s->parts[i], why->msg, h);
        s->parts[i].known = false;
        s->parts[i].in_request = false;
        s->parts[i].forgetting = false;
    }
    if (!kc_share_session_has_acks(s)) /* everything queued was answered, failed or dropped */
        s->acks_answered = s->acks_queued;
    s->epoch = KC_SHARE_EPOCH_OPEN;
    s->c.resets++;
    if (h->error)
        h->error(h->opaque, NULL, why);
    compact(s);
}

void kc_share_session_failed(kc_share_session_t *s, const kc_error_t *why,
                             const kc_share_handler_t *h)
{
    s->inflight = false;
    s->acks_answered = s->acks_inflight;
    if (s->inflight_close)
        s->closed = true; /* a close is not tried twice: the broker ends the session anyway */
    reset(s, -1, why, h);
}

/* The first and last offsets the answer's record batches span (first > last: none). */
static void records_span(kc_bytes_t rec, int64_t *first, int64_t *last)
{
    *first = 0;
    *last = -1;
    if (rec.len <= 0)
        return;
    kc_batch_splitter_t sp;
    kc_batch_splitter_init_bytes(&sp, rec.ptr, (size_t)rec.len, NULL, 0, false);
    kc_batch_t b;
    kc_error_t e;
    bool any = false;
    for (;;) {
        kc_err_t rc = kc_batch_next(&sp, &b, &e);
        if (rc == KC_ERR_NOT_FOUND || (rc != KC_OK && (!b.header_ok || sp.stopped)))
            break;
        if (!b.header_ok)
            continue;
        if (!any || b.h.base_offset < *first)
            *first = b.h.base_offset;
        if (!any || kc_batch_last_offset(&b) > *last)
            *last = kc_batch_last_offset(&b);
        any = true;
    }
    if (!any) {
        *first = 0;
        *last = -1;
    }
}

static void str_msg(char *buf, size_t len, kc_str_t s)
{
    snprintf(buf, len, "%.*s", s.len > 0 ? (int)s.len : 0, s.len > 0 ? s.ptr : "");
}

/* After an answer without a top-level error: the session holds every partition the request
 * named (the broker adds each one to the session and fetches it: also one named only for its
 * acknowledgements, or one no longer wanted since the request left, which the next request
 * then forgets), and what it did not forget. */
static void answered(kc_share_session_t *s)
{
    if (s->inflight_epoch == KC_SHARE_EPOCH_OPEN)
        s->c.opened++;
    for (size_t i = 0; i < s->n; i++) {
        kc_share_spart_t *p = &s->parts[i];
        if (p->in_request)
            p->known = true;
        else if (p->forgetting)
            p->known = false; /* forgotten (not one unwanted only since the request left) */
        p->forgetting = false;
    }
    s->epoch = kc_share_next_epoch(s->inflight_epoch);
}

/* Unsent acknowledgements of offsets an answer acquires again are an older delivery's whose lock
 * ran out at the broker (it hands out only available records) before the verdict left, which
 * the verdict's deadline check (held.h) cannot see when the lock started well before the answer
 * that carried it arrived. Dropped and reported (KC_SHARE_ACK_UNSENT). */
static void drop_superseded(kc_share_session_t *s, kc_share_spart_t *p, const kc_share_range_t *r,
                            size_t n, kc_arena_t *a, const kc_share_handler_t *h)
{
    if (!p->pending.n)
        return;
    kc_share_acks_t gone = {0};
    kc_error_t e;
    for (size_t k = 0; k < n; k++)
        if (kc_share_acks_drop(&p->pending, r[k].first, r[k].last, &gone, &e) != KC_OK)
            break;
    kc_share_ack_batch_t *b;
    int32_t nb;
    if (gone.n && kc_share_acks_take(&gone, a, &b, &nb, &e) == KC_OK && nb) {
        int64_t c[KC_SHARE_ACK_TYPES] = {0};
        kc_share_ack_batches_count(b, nb, c);
        s->c.ack_late += (uint64_t)(c[0] + c[1] + c[2] + c[3]); /* renewals were no verdicts */
        if (h->acked)
            h->acked(h->opaque, &p->tp, b, nb, KC_SHARE_ACK_UNSENT,
                     "the broker handed the records out again before the acknowledgement left");
    }
    kc_share_acks_free(&gone);
}

void kc_share_session_fetch_answer(kc_share_session_t *s, const kc_share_fetch_response_t *m,
                                   kc_arena_t *a, const kc_share_handler_t *h)
{
    s->inflight = false;
    s->acks_answered = s->acks_inflight;
    if (m->error_code) {
        kc_error_t why;
        char msg[200];
        str_msg(msg, sizeof msg, m->error_message);
        kc_fail_kafka(&why, m->error_code, "ShareFetch from broker %d at session epoch %d%s%s",
                      (int)s->broker, (int)s->inflight_epoch, msg[0] ? ": " : "", msg);
        reset(s, m->error_code, &why, h);
        return;
    }
    answered(s);
    if (m->acquisition_lock_timeout_ms > 0)
        s->lock_ms = m->acquisition_lock_timeout_ms;
    for (int32_t i = 0; i < m->responses.count; i++) {
        const kc_share_fetch_response_share_fetchable_topic_response_t *t = &m->responses.items[i];
        for (int32_t j = 0; j < t->partitions.count; j++) {
            const kc_share_fetch_response_partition_data_t *d = &t->partitions.items[j];
            kc_share_spart_t *p = find_wire(s, &t->topic_id, d->partition_index);
            if (!p || (!p->known && !p->n_sent)) {
                kc_error_t e;
                kc_tp_t tp;
                memcpy(tp.topic_id, &t->topic_id, 16);
                tp.partition = d->partition_index;
                kc_fail(&e, KC_ERR_MALFORMED,
                        "ShareFetch from broker %d names partition %d of a topic it was not "
                        "asked for; ignored",
                        (int)s->broker, (int)d->partition_index);
                s->c.bad_answers++;
                if (h->error)
                    h->error(h->opaque, &tp, &e);
                continue;
            }
            char msg[200];
            str_msg(msg, sizeof msg, d->acknowledge_error_message);
            report_sent(s, p, d->acknowledge_error_code, msg, h);
            if (d->error_code) {
                kc_error_t e;
                str_msg(msg, sizeof msg, d->error_message);
                kc_fail_kafka(&e, d->error_code, "ShareFetch partition %d from broker %d%s%s",
                              (int)d->partition_index, (int)s->broker, msg[0] ? ": " : "", msg);
                if (h->error)
                    h->error(h->opaque, &p->tp, &e);
                continue;
            }
            size_t n = d->acquired_records.count > 0 ? (size_t)d->acquired_records.count : 0;
            if (!n)
                continue;
            kc_share_range_t *r = kc_arena_calloc(a, n, sizeof *r);
            kc_error_t e;
            if (!r) {
                kc_fail(&e, KC_ERR_NOMEM, "ShareFetch: out of memory");
                if (h->error)
                    h->error(h->opaque, &p->tp, &e);
                continue;
            }
            for (size_t k = 0; k < n; k++)
                r[k] = (kc_share_range_t){d->acquired_records.items[k].first_offset,
                                          d->acquired_records.items[k].last_offset,
                                          d->acquired_records.items[k].delivery_count};
            int64_t first, last;
            records_span(d->records, &first, &last);
            if (kc_share_acquired_check(r, n, first, last, "share-partition", d->partition_index,
                                        &e) != KC_OK) {
                s->c.bad_answers++;
                if (h->error)
                    h->error(h->opaque, &p->tp, &e);
                continue;
            }
            s->c.acquired += (uint64_t)kc_share_acquired_span(r, n);
            drop_superseded(s, p, r, n, a, h);
            if (h->records)
                h->records(h->opaque, &p->tp, d->records, r, n, m->acquisition_lock_timeout_ms);
        }
    }
    /* Acknowledgements the answer said nothing of: not known to be applied. */
    kc_error_t none;
    kc_fail(&none, KC_ERR_MALFORMED,
            "ShareFetch from broker %d: no answer for the "
            "acknowledgements",
            (int)s->broker);
    for (size_t i = 0; i < s->n; i++) {
        report_sent(s, &s->parts[i], -1, none.msg, h);
        s->parts[i].in_request = false;
    }
    compact(s);
}

/* The broker renewed what p's batches sent renewals of: their lock starts again now. */
static void renewed(kc_share_spart_t *p, int64_t now, int32_t lock_ms)
{
    int64_t deadline = lock_ms > 0 ? now + lock_ms : KC_SHARE_NO_DEADLINE;
    for (int32_t j = 0; j < p->n_sent; j++) {
        const kc_share_ack_batch_t *b = &p->sent[j];
        if (b->n_types == 1) {
            if (b->types[0] == KC_SHARE_ACK_RENEW)
                kc_share_held_renew(&p->held, b->first, b->last, deadline);
            continue;
        }
        /* one type per offset: each run of renewals at once, never a hold per offset */
        for (int32_t k = 0; k < b->n_types;) {
            if (b->types[k] != KC_SHARE_ACK_RENEW) {
                k++;
                continue;
            }
            int32_t end = k;
            while (end + 1 < b->n_types && b->types[end + 1] == KC_SHARE_ACK_RENEW)
                end++;
            kc_share_held_renew(&p->held, b->first + k, b->first + end, deadline);
            k = end + 1;
        }
    }
}

void kc_share_session_ack_answer(kc_share_session_t *s, const kc_share_acknowledge_response_t *m,
                                 int64_t now, const kc_share_handler_t *h)
{
    s->inflight = false;
    s->acks_answered = s->acks_inflight;
    bool close = s->inflight_close;
    if (m->error_code) {
        kc_error_t why;
        char msg[200];
        str_msg(msg, sizeof msg, m->error_message);
        kc_fail_kafka(&why, m->error_code, "ShareAcknowledge to broker %d at session epoch %d%s%s",
                      (int)s->broker, (int)s->inflight_epoch, msg[0] ? ": " : "", msg);
        if (close)
            s->closed = true;
        reset(s, m->error_code, &why, h);
        return;
    }
    for (int32_t i = 0; i < m->responses.count; i++) {
        const kc_share_acknowledge_response_share_acknowledge_topic_response_t *t =
            &m->responses.items[i];
        for (int32_t j = 0; j < t->partitions.count; j++) {
            const kc_share_acknowledge_response_partition_data_t *d = &t->partitions.items[j];
            kc_share_spart_t *p = find_wire(s, &t->topic_id, d->partition_index);
            if (!p || !p->n_sent) {
                kc_error_t e;
                kc_tp_t tp;
                memcpy(tp.topic_id, &t->topic_id, 16);
                tp.partition = d->partition_index;
                kc_fail(&e, KC_ERR_MALFORMED,
                        "ShareAcknowledge to broker %d answers for partition %d, which it "
                        "acknowledged nothing of; ignored",
                        (int)s->broker, (int)d->partition_index);
                s->c.bad_answers++;
                if (h->error)
                    h->error(h->opaque, &tp, &e);
                continue;
            }
            char msg[200];
            str_msg(msg, sizeof msg, d->error_message);
            if (d->error_code == 0)
                renewed(p, now,
                        m->acquisition_lock_timeout_ms > 0 ? m->acquisition_lock_timeout_ms
                                                           : s->lock_ms);
            report_sent(s, p, d->error_code, msg, h);
        }
    }
    kc_error_t none;
    kc_fail(&none, KC_ERR_MALFORMED,
            "ShareAcknowledge to broker %d: no answer for the acknowledgements", (int)s->broker);
    for (size_t i = 0; i < s->n; i++) {
        report_sent(s, &s->parts[i], -1, none.msg, h);
        s->parts[i].in_request = false;
    }
    if (close) {
        s->closed = true;
        s->epoch = KC_SHARE_EPOCH_OPEN;
        for (size_t i = 0; i < s->n; i++)
            s->parts[i].known = false;
    } else {
        s->epoch = kc_share_next_epoch(s->inflight_epoch);
    }
    compact(s);
}
