/*
 * The group-level rebalance callback's steps (rebalance.h). Owner: network thread.
 */
#include "rebalance.h"

#include <stdlib.h>

#include "base/log.h"

typedef struct item {
    kc_rt_part_t *p;
    bool parked; /* counted as parked for this step */
} item_t;

typedef struct step {
    struct step *next;
    kc_rebalance_t kind;
    item_t *items;
    size_t n;
    size_t waiting; /* items not parked yet */
    bool posted;    /* its callback was posted; REBALANCED with `token` ends it */
    int64_t token;
} step_t;

struct kc_rt_rebal {
    kc_rt_t *rt;
    step_t *head, *tail; /* in the order they were made */
    /* What the current drive pass collected since the last kind change: a pass that assigns
     * a partition and then revokes it makes an ASSIGN step, then a REVOKE step, in that order. */
    kc_rebalance_t col_kind;
    item_t *col;
    size_t ncol, capcol;
    int64_t next_token;
};

kc_rt_rebal_t *kc_rt_rebal_new(kc_rt_t *rt)
{
    kc_rt_rebal_t *r = calloc(1, sizeof *r);
    if (r)
        r->rt = rt;
    return r;
}

static void step_free(step_t *s)
{
    free(s->items);
    free(s);
}

void kc_rt_rebal_free(kc_rt_rebal_t *r)
{
    if (!r)
        return;
    while (r->head) {
        step_t *s = r->head;
        r->head = s->next;
        step_free(s);
    }
    free(r->col);
    free(r);
}

/* The collection becomes a step at the tail. Out of memory: it stays collected, and the next
 * cut or flush tries again. */
static void cut(kc_rt_rebal_t *r)
{
    if (r->ncol == 0)
        return;
    step_t *s = calloc(1, sizeof *s);
    if (!s) {
        kc_log(KC_LOG_ERROR, "group", "on_rebalance step delayed: out of memory");
        return;
    }
    s->kind = r->col_kind;
    s->items = r->col;
    s->n = r->ncol;
    s->token = ++r->next_token;
    /* its PARKED (every lane's) was drained and it was not unparked since (dispatch.h) */
    for (size_t i = 0; i < s->n; i++) {
        s->items[i].parked = kc_rt_part_parked(s->items[i].p);
        if (!s->items[i].parked)
            s->waiting++;
    }
    r->col = NULL;
    r->ncol = r->capcol = 0;
    if (r->tail)
        r->tail->next = s;
    else
        r->head = s;
    r->tail = s;
}

kc_err_t kc_rt_rebal_add(kc_rt_rebal_t *r, kc_rebalance_t kind, kc_rt_part_t *p)
{
    if (r->ncol && kind != r->col_kind)
        cut(r);
    if (r->ncol && kind != r->col_kind)
        return KC_ERR_NOMEM; /* the cut failed: this one cannot join the other kind's step */
    if (r->ncol == r->capcol) {
        size_t cap = r->capcol ? r->capcol * 2 : 16;
        item_t *v = realloc(r->col, cap * sizeof *v);
        if (!v)
            return KC_ERR_NOMEM;
        r->col = v;
        r->capcol = cap;
    }
    r->col_kind = kind;
    r->col[r->ncol++] = (item_t){p, false};
    if (kind != KC_REBALANCE_ASSIGN)
        kc_rt_part_park(p);
    return KC_OK;
}

static bool named_by_pending(const kc_rt_rebal_t *r, const kc_rt_part_t *p)
{
    for (const step_t *s = r->head; s; s = s->next)
        for (size_t i = 0; i < s->n; i++)
            if (s->items[i].p == p)
                return true;
    return false;
}

/* Ends step s (its callback ran, or could not be posted): unparks what no pending step names. */
static void finish(kc_rt_rebal_t *r, step_t *s)
{
    step_t **pp = &r->head, *prev = NULL;
    while (*pp != s) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    *pp = s->next;
    if (r->tail == s)
        r->tail = prev;
    for (size_t i = 0; i < s->n; i++) {
        kc_rt_part_t *p = s->items[i].p;
        if (!named_by_pending(r, p))
            kc_rt_part_unpark(p);
    }
    step_free(s);
}

/* Posts every step at the head whose partitions all parked, in order: a step never overtakes an
 * earlier one, so the application sees the sets in the order the group decided them. */
static void advance(kc_rt_rebal_t *r)
{
    step_t *s = r->head;
    while (s) {
        step_t *next = s->next;
        if (s->posted) {
            s = next;
            continue;
        }
        if (s->waiting > 0)
            return;
        kc_topic_partition_t *tps = calloc(s->n ? s->n : 1, sizeof *tps);
        for (size_t i = 0; tps && i < s->n; i++)
            tps[i] =
                (kc_topic_partition_t){s->items[i].p->pub.topic, s->items[i].p->pub.partition, -1};
        s->posted = true;
        kc_err_t rc =
            tps ? kc_rt_post_rebalance(r->rt, s->kind, tps, s->n, s->token) : KC_ERR_NOMEM;
        free(tps);
        if (rc != KC_OK) {
            /* Out of memory: the partitions go on without the group callback rather than stay
             * parked for ever (the per-partition callbacks still run). */
            kc_log(KC_LOG_ERROR, "group",
                   "on_rebalance for %zu partition(s) skipped: out of memory", s->n);
            finish(r, s);
        }
        s = next;
    }
}

void kc_rt_rebal_flush(kc_rt_rebal_t *r)
{
    cut(r);
    advance(r);
}

void kc_rt_rebal_parked(kc_rt_rebal_t *r, kc_rt_part_t *p)
{
    for (step_t *s = r->head; s; s = s->next) {
        if (s->posted)
            continue;
        for (size_t i = 0; i < s->n; i++)
            if (s->items[i].p == p && !s->items[i].parked) {
                s->items[i].parked = true;
                s->waiting--;
            }
    }
    advance(r);
}

void kc_rt_rebal_done(kc_rt_rebal_t *r, int64_t token)
{
    for (step_t *s = r->head; s; s = s->next)
        if (s->posted && s->token == token) {
            finish(r, s);
            break;
        }
    advance(r);
}

size_t kc_rt_rebal_pending(const kc_rt_rebal_t *r)
{
    size_t n = 0;
    for (const step_t *s = r ? r->head : NULL; s; s = s->next)
        n++;
    return n;
}
