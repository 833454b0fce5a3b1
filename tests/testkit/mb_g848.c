/*
 * kc-memory-broker: KIP-848 consumer groups (ConsumerGroupHeartbeat) as state transitions with
 * the time passed in; mb_group_apis.c decodes and encodes.
 *
 * The broker computes the target assignment of each group epoch: the topic's partitions spread
 * round-robin over the members that subscribe to it, in join order (uniform whatever the
 * assignor name). A member moves towards it as Kafka's reconciliation does:
 *  - partitions it owns but must give up are revoked first: it keeps its epoch and is told its
 *    assignment without them, until a heartbeat whose owned partitions no longer list them;
 *  - then it takes the group epoch, and gets each newly assigned partition only once no other
 *    member owns it or is still revoking it (the rest follow on later heartbeats);
 * so a partition never has two owners. A member epoch one behind is accepted when its owned
 * partitions are a subset of its assignment (the response with the new epoch may have been
 * lost), anything else is FENCED_MEMBER_EPOCH. Members silent for MBG_848_SESSION_MS, or
 * revoking for longer than their rebalance timeout, are removed.
 *
 * Owner: the connection threads and the accept thread (mbg848_tick), always under mb_t.lock.
 */
#include "mb.h"
#include "proto/kafka_errors.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

void mbg848_bump(mbg_group_t *g)
{
    g->generation++;
}

static bool str_is(kc_str_t a, const char *b)
{
    return a.len >= 0 && (size_t)a.len == strlen(b) && memcmp(a.ptr, b, (size_t)a.len) == 0;
}

/* Does the subscription name our topic (or its regex match the whole name, as Kafka's)? */
static bool subscribes(const mb_t *mb, const kc_consumer_group_heartbeat_request_t *q)
{
    for (int32_t i = 0; i < q->subscribed_topic_names.count; i++)
        if (str_is(q->subscribed_topic_names.items[i], mb->topic))
            return true;
    if (q->subscribed_topic_regex.len <= 0)
        return false;
    size_t n = (size_t)q->subscribed_topic_regex.len;
    char *pat = malloc(n + 5);
    if (!pat)
        return false;
    memcpy(pat, "^(", 2);
    memcpy(pat + 2, q->subscribed_topic_regex.ptr, n);
    memcpy(pat + 2 + n, ")$", 3);
    regex_t re;
    bool match = false;
    if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) == 0) {
        match = regexec(&re, mb->topic, 0, NULL, 0) == 0;
        regfree(&re);
    }
    free(pat);
    return match;
}

/* The owner of p in the current epoch's target: subscribers in join order, round robin. */
static const mbg_member_t *target_owner(const mbg_group_t *g, int32_t p)
{
    int subs = 0;
    for (int i = 0; i < g->n; i++)
        subs += g->m[i]->subscribed;
    if (subs == 0)
        return NULL;
    int k = (int)(p % subs);
    for (int i = 0; i < g->n; i++)
        if (g->m[i]->subscribed && k-- == 0)
            return g->m[i];
    return NULL;
}

static bool held_elsewhere(const mbg_group_t *g, const mbg_member_t *m, int32_t p)
{
    for (int i = 0; i < g->n; i++)
        if (g->m[i] != m && (g->m[i]->assigned[p] || g->m[i]->revoking[p]))
            return true;
    return false;
}

/* Moves m one step towards the target (owned: the partitions its request says it owns, NULL
 * when the request did not say). */
static void reconcile(const mb_t *mb, mbg_group_t *g, mbg_member_t *m, const uint8_t *owned,
                      int64_t now)
{
    if (m->n_revoking) {
        if (!owned)
            return;
        for (int32_t p = 0; p < mb->partitions; p++)
            if (m->revoking[p] && owned[p])
                return; /* still holds one it was told to give up */
        memset(m->revoking, 0, (size_t)mb->partitions);
        m->n_revoking = 0;
    }
    if (m->epoch != g->generation) {
        int32_t revoke = 0;
        for (int32_t p = 0; p < mb->partitions; p++)
            if (m->assigned[p] && target_owner(g, p) != m) {
                m->assigned[p] = 0;
                m->revoking[p] = 1;
                revoke++;
            }
        if (revoke) {
            m->n_revoking = revoke;
            m->revoke_since_ms = now;
            return; /* the epoch moves once the revocation is acknowledged */
        }
        m->prev_epoch = m->epoch;
        m->epoch = g->generation;
    }
    for (int32_t p = 0; p < mb->partitions; p++)
        if (!m->assigned[p] && target_owner(g, p) == m && !held_elsewhere(g, m, p))
            m->assigned[p] = 1;
}

/* The request's owned partitions of our topic as a per-partition map (NULL: not sent). */
static uint8_t *owned_map(const mb_t *mb, const kc_consumer_group_heartbeat_request_t *q)
{
    if (q->topic_partitions.count < 0)
        return NULL;
    uint8_t *o = calloc((size_t)mb->partitions, 1);
    if (!o)
        return NULL;
    for (int32_t i = 0; i < q->topic_partitions.count; i++) {
        const kc_consumer_group_heartbeat_request_topic_partitions_t *t =
            &q->topic_partitions.items[i];
        if (memcmp(t->topic_id.b, mb->topic_id.b, 16) != 0)
            continue;
        for (int32_t j = 0; j < t->partitions.count; j++) {
            int32_t p = t->partitions.items[j];
            if (p >= 0 && p < mb->partitions)
                o[p] = 1;
        }
    }
    return o;
}

static bool owned_subset(const mb_t *mb, const mbg_member_t *m, const uint8_t *owned)
{
    if (!owned)
        return false;
    for (int32_t p = 0; p < mb->partitions; p++)
        if (owned[p] && !m->assigned[p])
            return false;
    return true;
}

int16_t mbg848_heartbeat(mb_t *mb, mbg_group_t *g, const kc_consumer_group_heartbeat_request_t *q,
                         int64_t now, mbg_member_t **out, bool *send_assignment)
{
    *out = NULL;
    *send_assignment = false;
    int32_t epoch = q->member_epoch;
    if (!g->id[0])
        return KC_KAFKA_INVALID_REQUEST;
    if (g->kind == MBG_CLASSIC)
        return KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL; /* no classic/consumer mixing here */
    if (q->server_assignor.len >= 0 && !str_is(q->server_assignor, "uniform") &&
        !str_is(q->server_assignor, "range"))
        return KC_KAFKA_UNSUPPORTED_ASSIGNOR;
    mbg_member_t *m = mbg_member_find(g, q->member_id);
    if (epoch == -1 || epoch == -2) {
        if (!m)
            return KC_KAFKA_UNKNOWN_MEMBER_ID;
        mbg_trace(mb, now, "848 group=%s member=%s left (epoch %d)", g->id, m->id, (int)epoch);
        mbg_member_remove(g, m); /* its partitions are free at once */
        mbg848_bump(g);
        return 0;
    }
    uint8_t *owned = owned_map(mb, q);
    if (q->topic_partitions.count >= 0 && !owned)
        return KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
    int16_t rc = 0;
    if (epoch == 0) {
        /* A join (or a rejoin, which starts over) is a full request. */
        if (q->rebalance_timeout_ms < 0 ||
            (q->subscribed_topic_names.count < 0 && q->subscribed_topic_regex.len < 0) || !owned) {
            rc = KC_KAFKA_INVALID_REQUEST;
            goto out;
        }
        if (m)
            mbg_member_remove(g, m);
        char *id = NULL;
        if (q->member_id.len > 0 && !(id = strndup(q->member_id.ptr, (size_t)q->member_id.len))) {
            rc = KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
            goto out;
        }
        m = mbg_member_add(mb, g, id, now);
        free(id);
        if (!m) {
            rc = KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
            goto out;
        }
        g->kind = MBG_CONSUMER;
        g->state = MBG_STABLE;
        m->session_ms = MBG_848_SESSION_MS;
        m->rebalance_ms = q->rebalance_timeout_ms;
        m->subscribed = subscribes(mb, q);
        mbg848_bump(g);
    } else {
        if (!m) {
            rc = KC_KAFKA_UNKNOWN_MEMBER_ID;
            goto out;
        }
        if (epoch > m->epoch ||
            (epoch < m->epoch && (epoch != m->prev_epoch || !owned_subset(mb, m, owned)))) {
            rc = KC_KAFKA_FENCED_MEMBER_EPOCH;
            goto out;
        }
        if (q->subscribed_topic_names.count >= 0 || q->subscribed_topic_regex.len >= 0) {
            bool s = subscribes(mb, q);
            if (s != m->subscribed) {
                m->subscribed = s;
                mbg848_bump(g);
            }
        }
        if (q->rebalance_timeout_ms > 0)
            m->rebalance_ms = q->rebalance_timeout_ms;
    }
    m->last_ms = now;
    uint8_t *before = malloc((size_t)mb->partitions);
    if (!before) {
        rc = KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
        goto out;
    }
    memcpy(before, m->assigned, (size_t)mb->partitions);
    int32_t revoking_before = m->n_revoking;
    reconcile(mb, g, m, owned, now);
    bool changed = memcmp(before, m->assigned, (size_t)mb->partitions) != 0;
    free(before);
    if (changed || epoch == 0 || revoking_before != m->n_revoking) {
        char a[256], r[256], o[256];
        mbg_trace(
            mb, now,
            "848 group=%s member=%s sent epoch=%d owned=%s -> epoch=%d assigned=%s revoking=%s",
            g->id, m->id, (int)epoch, mbg_parts_str(owned, mb->partitions, o, sizeof o),
            (int)m->epoch, mbg_parts_str(m->assigned, mb->partitions, a, sizeof a),
            mbg_parts_str(m->revoking, mb->partitions, r, sizeof r));
    }
    /* Kafka sends the assignment on a join, on a full request (a client recovering from an
     * error sends one) and whenever it changed. */
    bool full = q->rebalance_timeout_ms != -1 &&
                (q->subscribed_topic_names.count >= 0 || q->subscribed_topic_regex.len >= 0) &&
                owned;
    *send_assignment = epoch == 0 || full || changed;
    *out = m;
out:
    free(owned);
    return rc;
}

void mbg848_tick(mb_t *mb, mbg_group_t *g, int64_t now)
{
    for (int i = g->n - 1; i >= 0; i--) {
        mbg_member_t *m = g->m[i];
        bool silent = now - m->last_ms > m->session_ms;
        bool stuck = m->n_revoking && now - m->revoke_since_ms > m->rebalance_ms;
        if (silent || stuck) {
            mbg_trace(mb, now, "848 group=%s member=%s removed: %s", g->id, m->id,
                      silent ? "silent past its session" : "revoking past its rebalance timeout");
            mbg_member_remove(g, m);
            mbg848_bump(g);
        }
    }
}
