/*
 * Committed offsets still to be read for assigned partitions: see group/offset_pending.h.
 *
 * Owner: the network thread; the group driver embedding the set is its only user.
 */
#include "group/offset_pending.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "offsets.h"
#include "proto/kafka_errors.h"

void kc_opend_init(kc_opend_t *p, int64_t backoff_ms, int64_t backoff_max_ms)
{
    memset(p, 0, sizeof *p);
    p->backoff_min_ms = backoff_ms > 0 ? backoff_ms : 100;
    p->backoff_max_ms = backoff_max_ms >= p->backoff_min_ms ? backoff_max_ms : p->backoff_min_ms;
    p->backoff_ms = p->backoff_min_ms;
}

void kc_opend_clear(kc_opend_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->items[i].topic);
    p->n = 0;
    kc_pidx_free(&p->idx);
}

void kc_opend_free(kc_opend_t *p)
{
    kc_opend_clear(p);
    free(p->items);
    p->items = NULL;
    p->cap = 0;
}

static void name_of(const void *ctx, size_t pos, const char **topic, int32_t *partition)
{
    const kc_opend_t *p = ctx;
    *topic = p->items[pos].topic;
    *partition = p->items[pos].partition;
}

static kc_opend_ent_t *find(kc_opend_t *p, const char *topic, int32_t partition)
{
    ssize_t i = kc_pidx_find_name(&p->idx, name_of, p, topic, partition);
    return i < 0 ? NULL : &p->items[i];
}

static uint64_t hash_of(const kc_opend_ent_t *x)
{
    return kc_pidx_hash_name(x->topic, x->partition);
}

/* Swap-remove: the last entry takes x's place, in the index too. */
static void drop(kc_opend_t *p, kc_opend_ent_t *x)
{
    size_t i = (size_t)(x - p->items), last = p->n - 1;
    kc_pidx_remove(&p->idx, hash_of(x), i);
    free(x->topic);
    if (i != last) {
        kc_pidx_move(&p->idx, hash_of(&p->items[last]), last, i);
        *x = p->items[last];
    }
    p->n--;
}

void kc_opend_remove(kc_opend_t *p, const char *topic, int32_t partition)
{
    kc_opend_ent_t *x = find(p, topic, partition);
    if (x)
        drop(p, x);
}

/* Keeps (topic, partition) to be asked again; false when out of memory. */
static bool keep(kc_opend_t *p, const char *topic, int32_t partition)
{
    kc_opend_ent_t *x = find(p, topic, partition);
    if (x) { /* assigned afresh while an older ask is in flight: that answer is not for it */
        x->asked = false;
        return true;
    }
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 8;
        kc_opend_ent_t *it = realloc(p->items, cap * sizeof *it);
        if (!it)
            return false;
        p->items = it;
        p->cap = cap;
    }
    kc_error_t e;
    if (kc_pidx_reserve(&p->idx, p->n + 1, &e) != KC_OK)
        return false;
    char *t = strdup(topic);
    if (!t)
        return false;
    p->items[p->n] = (kc_opend_ent_t){t, partition, false, false};
    kc_pidx_insert(&p->idx, hash_of(&p->items[p->n]), p->n);
    p->n++;
    return true;
}

size_t kc_opend_take_due(kc_opend_t *p, int64_t now, kc_engine_offset_t **out)
{
    *out = NULL;
    if (p->inflight || !p->n || now < p->next_at)
        return 0;
    kc_engine_offset_t *offs = calloc(p->n, sizeof *offs);
    if (!offs)
        return 0;
    for (size_t i = 0; i < p->n; i++) {
        p->items[i].asked = true;
        offs[i] = (kc_engine_offset_t){p->items[i].topic, p->items[i].partition, -1, -1, NULL, 0};
    }
    p->inflight = true;
    p->retries++;
    *out = offs;
    return p->n;
}

static void backoff(kc_opend_t *p, int64_t now)
{
    p->next_at = now + p->backoff_ms;
    p->backoff_ms = p->backoff_ms * 2 > p->backoff_max_ms ? p->backoff_max_ms : p->backoff_ms * 2;
}

void kc_opend_send_failed(kc_opend_t *p, int64_t now)
{
    p->inflight = false;
    for (size_t i = 0; i < p->n; i++)
        p->items[i].asked = false;
    backoff(p, now);
}

void kc_opend_send_due(kc_opend_t *p, int64_t now, kc_engine_t *e, const char *group,
                       int timeout_ms, kc_engine_offsets_cb cb, void *(*op_new)(void *drv),
                       void (*op_drop)(void *ctx), void *drv)
{
    kc_engine_offset_t *offs;
    size_t m = kc_opend_take_due(p, now, &offs);
    if (!m)
        return;
    void *op = op_new(drv);
    kc_error_t err;
    if (!op || kc_engine_committed(e, group, offs, m, timeout_ms, cb, op, &err) != KC_OK) {
        if (op)
            op_drop(op);
        kc_opend_send_failed(p, now);
    }
    free(offs);
}

bool kc_opend_retriable(kc_err_t rc, int16_t code)
{
    if (rc == KC_OK)
        return false;
    if (rc != KC_ERR_BROKER) /* deadline, transport, memory: nothing was refused */
        return true;
    if (code < 0) /* the answer did not name the partition */
        return true;
    kc_offsets_verdict_t v = kc_offsets_classify(code);
    return v != KC_OFFSETS_OK && v != KC_OFFSETS_FAIL;
}

void kc_opend_apply(kc_opend_t *p, bool retry, kc_err_t rc, const kc_engine_offset_t *res, size_t n,
                    const kc_group_hooks_t *h, const char *group, int64_t now)
{
    if (retry)
        p->inflight = false;
    size_t kept = 0, refused = 0;
    bool fresh_refusal = false;
    int16_t first = 0;
    const char *why = NULL;
    char names[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = res[i].topic;
        int32_t part = res[i].partition;
        kc_opend_ent_t *x = find(p, t, part);
        if (retry && (!x || !x->asked))
            continue; /* revoked, or assigned afresh, while this answer was on its way */
        int16_t code = rc == KC_OK ? 0 : res[i].error;
        bool ok = rc == KC_OK || (rc == KC_ERR_BROKER && code == 0);
        if (!ok) {
            /* Kept either way (see the header): a refusal is asked again too, only reported. */
            bool hard = !kc_opend_retriable(rc, code);
            if (!x && keep(p, t, part))
                x = find(p, t, part);
            if (!x) {
                kc_error_t e;
                kc_fail(&e, KC_ERR_NOMEM, "group %s: %s[%d] not started: out of memory", group, t,
                        (int)part);
                h->error(h->opaque, &e, false);
                continue;
            }
            x->asked = false;
            if (!hard) { /* `refused` stays: a timeout says nothing new about the refusal */
                if (!why)
                    why = rc == KC_ERR_BROKER ? (code < 0 ? "unanswered" : kc_kafka_err_name(code))
                                              : kc_err_name(rc);
                kept++;
                continue;
            }
            fresh_refusal |= !x->refused;
            x->refused = true;
            if (!first)
                first = code;
            refused++;
            int w = snprintf(names + len, sizeof names - len, " %s[%d] %s", t, (int)part,
                             kc_kafka_err_name(code));
            len = w < 0 || (size_t)w >= sizeof names - len ? sizeof names - 1 : len + (size_t)w;
            continue;
        }
        if (x)
            drop(p, x);
        /* Only "no committed offset" (-1 with no error) applies auto.offset.reset. */
        int64_t start = res[i].offset >= 0 ? res[i].offset : KC_ENGINE_START_RESET;
        if (start >= 0)
            kc_log(KC_LOG_DEBUG, "group", "group %s: %s[%d] starts at %lld (committed)", group, t,
                   (int)part, (long long)start);
        else
            kc_log(KC_LOG_DEBUG, "group",
                   "group %s: %s[%d] has no committed offset: auto.offset.reset decides its start",
                   group, t, (int)part);
        kc_error_t e;
        if (h->assign(h->opaque, t, part, start, &e) != KC_OK)
            h->error(h->opaque, &e, false);
    }
    if (refused &&
        (fresh_refusal || !p->reported_at || now - p->reported_at >= KC_OPEND_REPORT_MS)) {
        p->reported_at = now > 0 ? now : 1;
        kc_error_t e;
        kc_fail_kafka(&e, first,
                      "group %s: committed offset unreadable for%s: these stay assigned but are "
                      "NOT consumed (auto.offset.reset could skip or re-read); asked again every "
                      "%lld ms at most, consumption starts once it is readable (fix the cause, "
                      "e.g. ACLs)",
                      group, names, (long long)p->backoff_max_ms);
        h->error(h->opaque, &e, false);
    }
    if (kept || refused) {
        if (kept)
            kc_log(KC_LOG_WARN, "group",
                   "group %s: committed offset of %zu partition(s) not readable yet (%s): asked "
                   "again in %lld ms, they are not consumed until then",
                   group, kept, why, (long long)p->backoff_ms);
        backoff(p, now);
    } else if (retry && !p->n) {
        p->backoff_ms = p->backoff_min_ms;
    }
}
