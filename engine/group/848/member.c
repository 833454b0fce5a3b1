/*
 * KIP-848 member state machine (rules and why: group/848/member.h). Pure: the engine feeds it
 * responses and completions and carries out its actions.
 * Owner: network thread — a kc_g848_t is touched only there.
 */
#include "group/848/member_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "proto/kafka_errors.h"
#include <stdio.h>
#include <time.h>

const char *kc_g848_state_name(kc_g848_state_t s)
{
    static const char *const names[] = {
        "UNSUBSCRIBED", "JOINING",         "STABLE",  "RECONCILING", "ACKNOWLEDGING",
        "FENCED",       "PREPARE_LEAVING", "LEAVING", "STALE",       "FATAL"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "?";
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Kafka's Uuid text form: 16 random bytes, base64url without padding (22 characters). */
static void random_member_id(char out[64])
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint8_t b[18] = {0};
    if (getrandom(b, 16, 0) != 16) {
        /* No entropy source: a time/address mix still distinguishes processes. */
        uint64_t x = (uint64_t)(uintptr_t)out ^ (uint64_t)clock();
        for (int i = 0; i < 16; i++, x = x * 6364136223846793005ULL + 1442695040888963407ULL)
            b[i] = (uint8_t)(x >> 56);
    }
    int n = 0;
    for (int i = 0; i < 16; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8 | b[i + 2];
        out[n++] = b64[v >> 18 & 63];
        out[n++] = b64[v >> 12 & 63];
        if (i + 1 < 16)
            out[n++] = b64[v >> 6 & 63];
        if (i + 2 < 16)
            out[n++] = b64[v & 63];
    }
    out[n] = 0;
}

kc_err_t kc_g848_init(kc_g848_t *gc, const kc_g848_config_t *cfg, kc_error_t *err)
{
    memset(gc, 0, sizeof *gc);
    if (!cfg->group_id || !*cfg->group_id || !cfg->lookup)
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "group consumer: group id and topic lookup are required");
    if (cfg->group_instance_id && !*cfg->group_instance_id)
        return kc_fail(err, KC_ERR_CONFIG, "group.instance.id must not be empty");
    gc->cfg = *cfg;
    gc->group_id = strdup(cfg->group_id);
    gc->instance_id = dup_or_null(cfg->group_instance_id);
    gc->rack_id = dup_or_null(cfg->rack_id);
    gc->assignor = dup_or_null(cfg->server_assignor);
    if (!gc->group_id || (cfg->group_instance_id && !gc->instance_id) ||
        (cfg->rack_id && !gc->rack_id) || (cfg->server_assignor && !gc->assignor)) {
        kc_g848_free(gc);
        return kc_fail(err, KC_ERR_NOMEM, "group consumer: out of memory");
    }
    if (cfg->member_id)
        snprintf(gc->member_id, sizeof gc->member_id, "%s", cfg->member_id);
    else
        random_member_id(gc->member_id);
    gc->interval_ms = 5000; /* until the broker says otherwise */
    gc->state = KC_G848_UNSUBSCRIBED;
    kc_gtopics_init_by_id(&gc->interned);
    kc_reconcile_init(&gc->rc, cfg->commit_on_revoke, cfg->commit_timeout_ms);
    return KC_OK;
}

static void free_subscription(kc_g848_t *gc)
{
    for (int32_t i = 0; i < gc->n_topics; i++)
        free(gc->topics[i]);
    free(gc->topics);
    free(gc->regex);
    gc->topics = NULL;
    gc->regex = NULL;
    gc->n_topics = 0;
}

void kc_g848_free(kc_g848_t *gc)
{
    free_subscription(gc);
    free(gc->group_id);
    free(gc->instance_id);
    free(gc->rack_id);
    free(gc->assignor);
    free(gc->req_topics);
    free(gc->req_tps);
    free(gc->req_parts);
    kc_tpset_free(&gc->sent_owned);
    kc_tpset_free(&gc->target_raw);
    kc_tpset_free(&gc->resolved);
    kc_reconcile_free(&gc->rc);
    kc_gtopics_free(&gc->interned); /* after every set that points into it */
    memset(gc, 0, sizeof *gc);
}

void kc_g848_m_report(kc_g848_t *gc, bool fatal, int16_t kafka_code, const char *fmt,
                      const char *detail)
{
    gc->have_error = true;
    gc->error_action.kind = KC_G848_ACT_ERROR;
    gc->error_action.fatal = fatal;
    kc_fail_kafka(&gc->error_action.error, kafka_code, fmt, gc->group_id,
                  kc_kafka_err_name(kafka_code), detail ? detail : "");
    if (!kafka_code) /* a local condition (timeout, memory): not a broker answer */
        gc->error_action.error.code = KC_ERR_TIMEOUT;
    gc->last_error = gc->error_action.error;
}

/* The broker's view may differ from what we think we sent: the next request carries all. */
void kc_g848_m_forget_sent(kc_g848_t *gc)
{
    gc->sent_valid = false;
    gc->sent_owned_valid = false;
}

bool kc_g848_m_reconcile_quiet(const kc_g848_t *gc)
{
    return kc_reconcile_idle(&gc->rc) && gc->rc.held.n == 0;
}

void kc_g848_m_start_join(kc_g848_t *gc)
{
    gc->state = KC_G848_JOINING;
    gc->epoch = 0;
    gc->hb_now = true;
    kc_g848_m_forget_sent(gc);
    kc_tpset_clear(&gc->target_raw);
}

/* Derive the state from the reconciliation and the pending leave/fence/stale conditions. */
void kc_g848_m_update_state(kc_g848_t *gc)
{
    switch (gc->state) {
    case KC_G848_FENCED:
        if (kc_g848_m_reconcile_quiet(gc)) {
            if (gc->close_requested) {
                gc->state = KC_G848_UNSUBSCRIBED; /* the broker no longer knows us: no leave */
                gc->close_requested = false;      /* left: a subscribe may join again */
            } else
                kc_g848_m_start_join(gc);
        }
        break;
    case KC_G848_PREPARE_LEAVING:
        if (kc_g848_m_reconcile_quiet(gc)) {
            if (!gc->join_sent && !gc->inflight) {
                gc->state = KC_G848_UNSUBSCRIBED; /* the broker never heard of us */
                gc->close_requested = false;
                break;
            }
            if (gc->commits_out) /* kc_g848_commits_in_flight: answered first */
                break;
            gc->state = KC_G848_LEAVING;
            gc->hb_now = true;
        }
        break;
    case KC_G848_STALE:
        if (gc->poll_resumed && kc_g848_m_reconcile_quiet(gc)) {
            gc->poll_expired = gc->poll_resumed = false;
            kc_g848_m_start_join(gc);
        }
        break;
    case KC_G848_JOINING:
        if (gc->epoch <= 0)
            break; /* no answer to the join yet */
        /* fallthrough */
    case KC_G848_STABLE:
    case KC_G848_RECONCILING:
    case KC_G848_ACKNOWLEDGING:
        if (!kc_reconcile_idle(&gc->rc)) {
            gc->state = KC_G848_RECONCILING;
        } else if (gc->rc.ack_pending) {
            gc->state = KC_G848_ACKNOWLEDGING;
            gc->hb_now = true; /* the ack goes out at once, not at the next interval */
        } else {
            gc->state = KC_G848_STABLE;
        }
        break;
    default:
        break;
    }
}

/* target_raw → the partitions we can name (plus those we already hold) → reconciliation. */
void kc_g848_m_resolve_target(kc_g848_t *gc, bool request_metadata)
{
    kc_tpset_clear(&gc->resolved);
    bool unknown = false;
    for (size_t i = 0; i < gc->target_raw.n; i++) {
        const kc_gtp_t *tp = &gc->target_raw.items[i];
        if (gc->cfg.lookup(gc->cfg.lookup_ctx, tp->topic->id) ||
            kc_tpset_contains(&gc->rc.held, tp->topic, tp->partition)) {
            if (kc_tpset_add(&gc->resolved, tp->topic, tp->partition))
                return; /* out of memory: the next response or metadata update retries */
        } else {
            unknown = true;
        }
    }
    if (unknown && request_metadata)
        gc->metadata_wanted = true;
    kc_error_t e;
    if (kc_reconcile_set_target(&gc->rc, &gc->resolved, &e))
        gc->last_error = e;
}

kc_err_t kc_g848_subscribe(kc_g848_t *gc, const char *const *topics, int32_t n, const char *regex,
                           int64_t now_ms, kc_error_t *err)
{
    (void)now_ms;
    if (gc->state == KC_G848_FATAL)
        return kc_fail(err, KC_ERR_FATAL, "group %s: %s", gc->group_id, gc->last_error.msg);
    if (gc->state == KC_G848_PREPARE_LEAVING || gc->state == KC_G848_LEAVING || gc->close_requested)
        return kc_fail(err, KC_ERR_STATE, "group %s: leaving; subscribe after it has left",
                       gc->group_id);
    if ((regex && n > 0) || (!regex && n <= 0) || (regex && !*regex))
        return kc_fail(err, KC_ERR_INVALID_ARG,
                       "subscribe: give topic names or one regex, not both");
    free_subscription(gc);
    if (regex) {
        if (!(gc->regex = strdup(regex)))
            return kc_fail(err, KC_ERR_NOMEM, "subscribe: out of memory");
    } else {
        if (!(gc->topics = calloc((size_t)n, sizeof *gc->topics)))
            return kc_fail(err, KC_ERR_NOMEM, "subscribe: out of memory");
        for (int32_t i = 0; i < n; i++) {
            int32_t j = gc->n_topics;
            bool dup = false;
            for (int32_t k = 0; k < gc->n_topics; k++)
                dup |= strcmp(gc->topics[k], topics[i]) == 0;
            if (dup)
                continue;
            /* insertion sort: the request lists names in a stable order (Java: a TreeSet) */
            while (j > 0 && strcmp(gc->topics[j - 1], topics[i]) > 0) {
                gc->topics[j] = gc->topics[j - 1];
                j--;
            }
            if (!(gc->topics[j] = strdup(topics[i]))) {
                gc->n_topics = j; /* free what is consistent */
                return kc_fail(err, KC_ERR_NOMEM, "subscribe: out of memory");
            }
            gc->n_topics++;
        }
    }
    gc->sub_gen++;
    if (gc->state == KC_G848_UNSUBSCRIBED)
        kc_g848_m_start_join(gc);
    else if (gc->state != KC_G848_STALE && gc->state != KC_G848_FENCED)
        gc->hb_now = true; /* tell the broker promptly; only the subscription is new */
    return KC_OK;
}

static void begin_leave(kc_g848_t *gc, int64_t now_ms)
{
    (void)now_ms;
    gc->close_requested = true;
    switch (gc->state) {
    case KC_G848_UNSUBSCRIBED:
    case KC_G848_FATAL:
    case KC_G848_PREPARE_LEAVING:
    case KC_G848_LEAVING:
    case KC_G848_FENCED: /* finishes losing, then UNSUBSCRIBED (update_state) */
        return;
    case KC_G848_STALE:
        /* Already left; what remains is on_lost finishing. */
        gc->state = KC_G848_FENCED;
        kc_g848_m_update_state(gc);
        return;
    default:
        break;
    }
    gc->leave_epoch = gc->instance_id ? KC_G848_EPOCH_LEAVE_STATIC : KC_G848_EPOCH_LEAVE;
    gc->state = KC_G848_PREPARE_LEAVING;
    /* Revoke everything (on_revoke → commit → drop) ahead of the leave; queued behind a running
     * reconciliation, whose unassigned part is trimmed away (group/reconcile.h). */
    kc_tpset_t empty = {0};
    kc_error_t e;
    if (kc_reconcile_set_target(&gc->rc, &empty, &e))
        gc->last_error = e;
    kc_g848_m_update_state(gc);
}

void kc_g848_close(kc_g848_t *gc, int64_t now_ms)
{
    begin_leave(gc, now_ms);
}

/* The same leave as close (Java's unsubscribe leaves with the epoch close uses, -2 for a static
 * member): what differs is only the caller's, which may subscribe again once UNSUBSCRIBED. */
void kc_g848_unsubscribe(kc_g848_t *gc, int64_t now_ms)
{
    begin_leave(gc, now_ms);
}

void kc_g848_commits_in_flight(kc_g848_t *gc, bool in_flight, int64_t now_ms)
{
    (void)now_ms;
    gc->commits_out = in_flight;
    kc_g848_m_update_state(gc);
}

void kc_g848_poll_expired(kc_g848_t *gc, int64_t now_ms)
{
    (void)now_ms;
    if (gc->state != KC_G848_JOINING && gc->state != KC_G848_STABLE &&
        gc->state != KC_G848_RECONCILING && gc->state != KC_G848_ACKNOWLEDGING)
        return;
    gc->poll_expired = true;
    gc->poll_resumed = false;
    /* -1 for static members too: the partitions must go to someone making progress. The
     * overrunning callback itself cannot be stopped; on_lost runs for it after it returns. */
    gc->leave_epoch = KC_G848_EPOCH_LEAVE;
    gc->state = KC_G848_LEAVING;
    gc->hb_now = true;
    kc_tpset_clear(&gc->target_raw);
    kc_error_t e;
    if (kc_reconcile_lose_all(&gc->rc, &e))
        gc->last_error = e;
}

void kc_g848_poll_resumed(kc_g848_t *gc, int64_t now_ms)
{
    (void)now_ms;
    if (!gc->poll_expired)
        return;
    gc->poll_resumed = true;
    kc_g848_m_update_state(gc);
}
