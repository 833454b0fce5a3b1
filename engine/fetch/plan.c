/*
 * The fetch plan: partitions grouped by fetch target into per-broker fetchers; see fetch/plan.h.
 *
 * Owner: network thread. Pure: no I/O, time passed in.
 */
#include "fetch/plan.h"

#include <stdlib.h>
#include <string.h>

void kc_fetch_plan_init(kc_fetch_plan_t *plan, const kc_fetch_plan_conf_t *conf)
{
    memset(plan, 0, sizeof *plan);
    plan->conf = *conf;
}

static void fetcher_free(kc_fetcher_t *f)
{
    kc_session_free(&f->session);
    free(f->wanted);
    free(f);
}

void kc_fetch_plan_free(kc_fetch_plan_t *plan)
{
    for (size_t i = 0; i < plan->n; i++)
        fetcher_free(plan->f[i]);
    free(plan->f);
    memset(plan, 0, sizeof *plan);
}

kc_fetcher_t *kc_fetch_plan_find(kc_fetch_plan_t *plan, int32_t broker_id)
{
    /* Linear: a consumer talks to a handful of brokers. */
    for (size_t i = 0; i < plan->n; i++)
        if (plan->f[i]->broker_id == broker_id)
            return plan->f[i];
    return NULL;
}

static kc_fetcher_t *fetcher_get(kc_fetch_plan_t *plan, int32_t broker_id, kc_error_t *err)
{
    kc_fetcher_t *f = kc_fetch_plan_find(plan, broker_id);
    if (f)
        return f;
    if (plan->n == plan->cap) {
        size_t cap = plan->cap ? plan->cap * 2 : 8;
        kc_fetcher_t **v = realloc(plan->f, cap * sizeof *v);
        if (!v) {
            kc_fail(err, KC_ERR_NOMEM, "fetch plan: %zu brokers", cap);
            return NULL;
        }
        plan->f = v;
        plan->cap = cap;
    }
    f = calloc(1, sizeof *f);
    if (!f) {
        kc_fail(err, KC_ERR_NOMEM, "fetch plan: fetcher for broker %d", (int)broker_id);
        return NULL;
    }
    f->broker_id = broker_id;
    f->unsettled = plan->unsettled_new_all;
    f->gen = plan->gen;
    for (size_t i = 0; i < plan->n_unsettled_new; i++)
        if (plan->unsettled_new[i] == broker_id)
            f->unsettled = 1;
    kc_session_init(&f->session, broker_id, plan->conf.sessionless_backoff_ms);
    plan->f[plan->n++] = f;
    plan->stats.fetchers_created++;
    return f;
}

static kc_err_t wanted_push(kc_fetcher_t *f, const kc_partition_t *p, kc_error_t *err)
{
    if (f->n_wanted == f->cap_wanted) {
        size_t cap = f->cap_wanted ? f->cap_wanted * 2 : 16;
        kc_session_part_t *v = realloc(f->wanted, cap * sizeof *v);
        if (!v)
            return kc_fail(err, KC_ERR_NOMEM, "fetch plan: %zu partitions", cap);
        f->wanted = v;
        f->cap_wanted = cap;
    }
    kc_session_part_t *w = &f->wanted[f->n_wanted++];
    memset(w, 0, sizeof *w);
    w->tp = p->tp;
    w->fetch_offset = p->position;
    w->log_start_offset = -1; /* a follower's field; consumers send -1 (as Java does) */
    w->leader_epoch = p->leader_epoch;
    w->max_bytes = p->max_bytes;
    return KC_OK;
}

bool kc_fetch_plan_busy(const kc_fetch_plan_t *plan, int32_t broker_id)
{
    if (broker_id == KC_NO_BROKER)
        return false;
    for (size_t i = 0; i < plan->n; i++)
        if (plan->f[i]->broker_id == broker_id)
            return plan->f[i]->in_flight != 0;
    return false;
}

void kc_fetch_plan_begin(kc_fetch_plan_t *plan)
{
    plan->n_unsettled_new = 0;
    plan->unsettled_new_all = 0;
    for (size_t i = 0; i < plan->n; i++)
        if (!plan->f[i]->in_flight) {
            plan->f[i]->n_wanted = 0;
            plan->f[i]->unsettled = 0;
            plan->f[i]->same = 0;
            plan->f[i]->gen = plan->gen;
        }
}

bool kc_fetch_plan_settled(const kc_fetch_plan_t *plan, int32_t broker_id)
{
    for (size_t i = 0; i < plan->n; i++)
        if (plan->f[i]->broker_id == broker_id)
            return !plan->f[i]->in_flight && !plan->f[i]->unsettled &&
                   plan->f[i]->gen == plan->gen && plan->f[i]->n_wanted > 0;
    return false;
}

void kc_fetch_plan_changed(kc_fetch_plan_t *plan)
{
    plan->gen++;
}

static void unsettle(kc_fetch_plan_t *plan, int32_t broker_id)
{
    if (broker_id == KC_NO_BROKER)
        return;
    kc_fetcher_t *f = kc_fetch_plan_find(plan, broker_id);
    if (f)
        f->unsettled = 1;
    else if (plan->n_unsettled_new < sizeof plan->unsettled_new / sizeof plan->unsettled_new[0])
        plan->unsettled_new[plan->n_unsettled_new++] = broker_id;
    else
        plan->unsettled_new_all = 1;
}

bool kc_fetch_plan_passes_over(kc_fetch_plan_t *plan, kc_partition_t *p, int64_t now_ms)
{
    /* The target is the route or none: a busy route keeps the partition where it is. A read
     * replica's lapse moves it to its leader here; if the leader is busy, the set it has out
     * lacks the partition, and must not be repeated (kc_fetch_plan_settled). */
    int32_t replica = p->preferred_replica;
    int32_t route = kc_partition_route(p, &plan->conf.part, now_ms);
    bool busy = kc_fetch_plan_busy(plan, route);
    if (busy && replica != KC_NO_BROKER && route != replica)
        unsettle(plan, route);
    return busy;
}

kc_err_t kc_fetch_plan_add(kc_fetch_plan_t *plan, kc_partition_t *p, int64_t now_ms,
                           kc_error_t *err)
{
    int32_t target = kc_partition_fetch_target(p, &plan->conf.part, now_ms);
    if (target == KC_NO_BROKER) {
        /* A pause (the application's, the runtime's) ends with an event that brings a pass;
         * anything else that leaves the partition out may end with time alone. */
        if (!p->paused)
            unsettle(plan, kc_partition_route(p, &plan->conf.part, now_ms));
        return KC_OK;
    }
    kc_fetcher_t *f = fetcher_get(plan, target, err);
    if (!f)
        return KC_ERR_NOMEM;
    if (p->preferred_replica != KC_NO_BROKER)
        f->unsettled = 1;
    return wanted_push(f, p, err);
}

kc_err_t kc_fetch_plan_compute(kc_fetch_plan_t *plan, kc_partition_t *parts, size_t n_parts,
                               int64_t now_ms, kc_error_t *err)
{
    kc_fetch_plan_begin(plan);
    for (size_t i = 0; i < n_parts; i++) {
        if (kc_fetch_plan_passes_over(plan, &parts[i], now_ms))
            continue;
        kc_err_t rc = kc_fetch_plan_add(plan, &parts[i], now_ms, err);
        if (rc)
            return rc;
    }
    return KC_OK;
}

static void drop_at(kc_fetch_plan_t *plan, size_t i)
{
    fetcher_free(plan->f[i]);
    plan->f[i] = plan->f[--plan->n];
    plan->stats.fetchers_dropped++;
}

size_t kc_fetch_plan_ready(kc_fetch_plan_t *plan, int64_t now_ms, kc_fetch_send_t *out, size_t max,
                           int64_t *next_wake_ms)
{
    size_t k = 0;
    int64_t wake = INT64_MAX;
    for (size_t i = 0; i < plan->n && k < max;) {
        kc_fetcher_t *f = plan->f[i];
        if (f->in_flight) {
            i++;
            continue;
        }
        int64_t hold =
            f->throttle_until_ms > f->backoff_until_ms ? f->throttle_until_ms : f->backoff_until_ms;
        if (now_ms < hold) {
            if (hold < wake)
                wake = hold;
            i++;
            continue;
        }
        kc_error_t e;
        kc_err_t rc = KC_ERR_STATE;
        if (f->same)
            rc = kc_session_build_same(&f->session, &out[k].req, &e);
        if (rc != KC_OK)
            rc = kc_session_build(&f->session, f->wanted, f->n_wanted, now_ms, &out[k].req, &e);
        if (rc == KC_ERR_AGAIN) {
            drop_at(plan, i); /* nothing wanted, nothing left to forget */
            continue;
        }
        if (rc == KC_OK) {
            f->in_flight = 1;
            out[k++].fetcher = f;
        }
        /* Any other error (no memory) leaves the fetcher to try on the next call. */
        i++;
    }
    if (next_wake_ms)
        *next_wake_ms = wake;
    return k;
}

static int64_t broker_backoff(const kc_fetch_plan_conf_t *conf, int32_t failures)
{
    int64_t b = conf->part.backoff_ms > 0 ? conf->part.backoff_ms : 1;
    for (int32_t i = 1; i < failures && b < conf->part.backoff_max_ms; i++)
        b *= 2;
    return conf->part.backoff_max_ms > 0 && b > conf->part.backoff_max_ms
               ? conf->part.backoff_max_ms
               : b;
}

kc_session_outcome_t kc_fetch_plan_on_response(kc_fetch_plan_t *plan, int32_t broker_id,
                                               const kc_session_resp_t *resp, int32_t throttle_ms,
                                               int64_t now_ms)
{
    kc_fetcher_t *f = kc_fetch_plan_find(plan, broker_id);
    if (!f || !f->in_flight)
        return KC_SESSION_FAILED;
    f->in_flight = 0;
    if (throttle_ms > 0)
        f->throttle_until_ms = now_ms + throttle_ms;
    kc_session_outcome_t o = kc_session_on_response(&f->session, resp, now_ms);
    f->same = o == KC_SESSION_OK; /* `wanted` is untouched while a request is in flight */
    if (o == KC_SESSION_FAILED) {
        f->failures++;
        f->backoff_until_ms = now_ms + broker_backoff(&plan->conf, f->failures);
    } else {
        f->failures = 0;
    }
    return o;
}

void kc_fetch_plan_on_failure(kc_fetch_plan_t *plan, int32_t broker_id, int64_t now_ms)
{
    kc_fetcher_t *f = kc_fetch_plan_find(plan, broker_id);
    if (!f || !f->in_flight)
        return;
    f->in_flight = 0;
    f->same = 0;
    kc_session_on_failure(&f->session);
    f->failures++;
    f->backoff_until_ms = now_ms + broker_backoff(&plan->conf, f->failures);
}

size_t kc_fetch_plan_close(kc_fetch_plan_t *plan, kc_fetch_send_t *out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < plan->n && k < max; i++) {
        kc_fetcher_t *f = plan->f[i];
        if (f->in_flight)
            continue;
        if (kc_session_close(&f->session, &out[k].req, NULL) == KC_OK) {
            f->in_flight = 1;
            out[k++].fetcher = f;
        }
    }
    return k;
}

int kc_fetch_plan_accepts(kc_partition_t *p, int32_t broker_id, int64_t requested_offset,
                          const kc_fetch_plan_conf_t *conf, int64_t now_ms)
{
    return kc_partition_fetch_target(p, &conf->part, now_ms) == broker_id &&
           p->position == requested_offset;
}
