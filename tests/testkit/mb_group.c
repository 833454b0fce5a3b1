/*
 * kc-memory-broker: the group table and the classic group coordinator (JoinGroup, SyncGroup,
 * Heartbeat, LeaveGroup, session expiry), as state transitions with the time passed in, so the
 * unit test drives them without sockets or threads. mb_group_apis.c decodes, parks and encodes.
 *
 * The rules that matter to clients follow Kafka's GroupCoordinator: a v4+ JoinGroup without a
 * member id gets MEMBER_ID_REQUIRED and a fresh id; a round (PREPARING) ends when every known
 * member has rejoined, or at the largest rebalance timeout, when the silent ones are dropped;
 * a new member, a leader's rejoin or changed protocols open a round; Heartbeat answers
 * REBALANCE_IN_PROGRESS while a round is open, ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID otherwise.
 * Static membership (group.instance.id) is not modelled: such members are treated as dynamic.
 *
 * Owner: the connection threads and the accept thread (mbg_tick), always under mb_t.lock.
 */
#include "mb.h"
#include "proto/kafka_errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool str_eq(kc_str_t a, const char *b)
{
    return b && a.len >= 0 && (size_t)a.len == strlen(b) && memcmp(a.ptr, b, (size_t)a.len) == 0;
}

static char *str_dup(kc_str_t s)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    char *p = malloc(n + 1);
    if (p) {
        if (n)
            memcpy(p, s.ptr, n);
        p[n] = 0;
    }
    return p;
}

mbg_group_t *mbg_find(mb_t *mb, kc_str_t id, bool create)
{
    for (int i = 0; i < mb->n_groups; i++)
        if (str_eq(id, mb->groups[i]->id))
            return mb->groups[i];
    if (!create || mb->n_groups >= MBG_MAX_GROUPS)
        return NULL;
    if (mb->n_groups == mb->cap_groups) {
        int cap = mb->cap_groups ? 2 * mb->cap_groups : 16;
        mbg_group_t **n = realloc(mb->groups, (size_t)cap * sizeof *n);
        if (!n)
            return NULL;
        mb->groups = n;
        mb->cap_groups = cap;
    }
    mbg_group_t *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->id = str_dup(id);
    g->committed = malloc((size_t)mb->partitions * sizeof *g->committed);
    if (!g->id || !g->committed) {
        free(g->id);
        free(g->committed);
        free(g);
        return NULL;
    }
    for (int32_t p = 0; p < mb->partitions; p++)
        g->committed[p] = -1;
    mb->groups[mb->n_groups++] = g;
    return g;
}

mbg_member_t *mbg_member_find(const mbg_group_t *g, kc_str_t id)
{
    if (id.len <= 0)
        return NULL;
    for (int i = 0; i < g->n; i++)
        if (str_eq(id, g->m[i]->id))
            return g->m[i];
    return NULL;
}

static void free_protos(mbg_member_t *m)
{
    for (int i = 0; i < m->n_protos; i++) {
        free(m->protos[i].name);
        free(m->protos[i].meta);
    }
    free(m->protos);
    m->protos = NULL;
    m->n_protos = 0;
}

mbg_member_t *mbg_member_add(mb_t *mb, mbg_group_t *g, const char *id, int64_t now)
{
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 8;
        mbg_member_t **n = realloc(g->m, (size_t)cap * sizeof *n);
        if (!n)
            return NULL;
        g->m = n;
        g->cap = cap;
    }
    mbg_member_t *m = calloc(1, sizeof *m);
    char gen[96];
    if (!id) {
        /* Kafka: client id + "-" + a UUID. The sequence keeps ids unique without a good RNG. */
        snprintf(gen, sizeof gen, "mb-member-%llu-%08lx", (unsigned long long)++mb->member_seq,
                 (unsigned long)(random() & 0xffffffffL));
        id = gen;
    }
    if (m) {
        m->id = strdup(id);
        m->assigned = calloc((size_t)mb->partitions, 1);
        m->revoking = calloc((size_t)mb->partitions, 1);
    }
    if (!m || !m->id || !m->assigned || !m->revoking) {
        if (m) {
            free(m->id);
            free(m->assigned);
            free(m->revoking);
        }
        free(m);
        return NULL;
    }
    m->last_ms = now;
    m->join_gen = -1;
    g->m[g->n++] = m;
    return m;
}

void mbg_member_remove(mbg_group_t *g, mbg_member_t *m)
{
    for (int i = 0; i < g->n; i++) {
        if (g->m[i] != m)
            continue;
        memmove(&g->m[i], &g->m[i + 1], (size_t)(g->n - i - 1) * sizeof *g->m);
        g->n--;
        break;
    }
    if (g->leader && strcmp(g->leader, m->id) == 0) {
        free(g->leader);
        g->leader = NULL;
    }
    free_protos(m);
    free(m->assignment);
    free(m->assigned);
    free(m->revoking);
    free(m->id);
    free(m);
    if (g->n == 0) {
        g->kind = MBG_NONE;
        g->state = MBG_EMPTY;
    }
}

void mbg_trace(const mb_t *mb, int64_t now, const char *fmt, ...)
{
    if (!mb->trace_groups)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%lld trace %s\n", (long long)now, line);
}

const char *mbg_parts_str(const uint8_t *map, int32_t n, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int32_t p = 0; map && p < n && len < cap; p++)
        if (map[p])
            len += (size_t)snprintf(buf + len, cap - len, len > 1 ? " %d" : "%d", (int)p);
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
    return buf;
}

void mbg_free_all(mb_t *mb)
{
    for (int i = 0; i < mb->n_groups; i++) {
        mbg_group_t *g = mb->groups[i];
        while (g->n)
            mbg_member_remove(g, g->m[g->n - 1]);
        free(g->m);
        free(g->id);
        free(g->protocol_type);
        free(g->protocol_name);
        free(g->leader);
        free(g->committed);
        free(g);
    }
    free(mb->groups);
    mb->groups = NULL;
    mb->n_groups = mb->cap_groups = 0;
}

/* ---- classic ----------------------------------------------------------------------------------
 */

static int real_members(const mbg_group_t *g)
{
    int n = 0;
    for (int i = 0; i < g->n; i++)
        n += !g->m[i]->pending;
    return n;
}

static bool supports(const mbg_member_t *m, const char *proto)
{
    for (int i = 0; i < m->n_protos; i++)
        if (strcmp(m->protos[i].name, proto) == 0)
            return true;
    return false;
}

static bool supported_by_all(const mbg_group_t *g, const char *proto, const mbg_member_t *except)
{
    for (int i = 0; i < g->n; i++)
        if (g->m[i] != except && !g->m[i]->pending && !supports(g->m[i], proto))
            return false;
    return true;
}

static bool same_protos(const mbg_member_t *m, const mbg_join_req_t *q)
{
    if (m->n_protos != q->n_protos)
        return false;
    for (int i = 0; i < q->n_protos; i++)
        if (!str_eq(q->proto_names[i], m->protos[i].name) ||
            m->protos[i].meta_len != (q->proto_metas[i].len > 0 ? q->proto_metas[i].len : 0) ||
            (m->protos[i].meta_len &&
             memcmp(m->protos[i].meta, q->proto_metas[i].ptr, (size_t)m->protos[i].meta_len)))
            return false;
    return true;
}

static bool set_protos(mbg_member_t *m, const mbg_join_req_t *q)
{
    free_protos(m);
    m->protos = calloc((size_t)q->n_protos + 1, sizeof *m->protos);
    if (!m->protos)
        return false;
    for (int i = 0; i < q->n_protos; i++) {
        mbg_proto_t *p = &m->protos[m->n_protos++];
        int32_t len = q->proto_metas[i].len > 0 ? q->proto_metas[i].len : 0;
        p->name = str_dup(q->proto_names[i]);
        p->meta = malloc((size_t)len + 1);
        if (!p->name || !p->meta)
            return false;
        if (len)
            memcpy(p->meta, q->proto_metas[i].ptr, (size_t)len);
        p->meta_len = len;
    }
    return true;
}

static void prepare_rebalance(mbg_group_t *g, int64_t now)
{
    if (g->state == MBG_PREPARING)
        return;
    g->initial_round = g->state == MBG_EMPTY;
    g->state = MBG_PREPARING;
    g->round_start_ms = now;
    for (int i = 0; i < g->n; i++)
        g->m[i]->joined = false;
}

static int32_t round_timeout(const mbg_group_t *g)
{
    int32_t t = 0;
    for (int i = 0; i < g->n; i++)
        if (!g->m[i]->pending && g->m[i]->rebalance_ms > t)
            t = g->m[i]->rebalance_ms;
    return t;
}

void mbg_try_complete(mb_t *mb, mbg_group_t *g, int64_t now)
{
    if (g->state != MBG_PREPARING)
        return;
    bool all = true, any = false;
    for (int i = 0; i < g->n; i++) {
        if (g->m[i]->pending)
            continue;
        all &= g->m[i]->joined;
        any |= g->m[i]->joined;
    }
    bool timed_out = now - g->round_start_ms >= round_timeout(g);
    /* group.initial.rebalance.delay.ms: a round opened by an empty group waits a little, so
     * members starting together land in one generation. */
    bool delaying = g->initial_round && now - g->round_start_ms < mb->group_initial_delay_ms;
    if ((!all || delaying) && !timed_out)
        return;
    /* Who did not rejoin in time is out (Kafka: removed at the rebalance timeout). */
    for (int i = g->n - 1; i >= 0; i--)
        if (!g->m[i]->pending && !g->m[i]->joined)
            mbg_member_remove(g, g->m[i]);
    g->generation++;
    free(g->protocol_name);
    g->protocol_name = NULL;
    if (!any || real_members(g) == 0) {
        g->state = MBG_EMPTY;
        return;
    }
    /* The leader stays if it rejoined; otherwise the first member that did. */
    mbg_member_t *lead = NULL;
    for (int i = 0; i < g->n && !lead; i++)
        if (!g->m[i]->pending && g->leader && strcmp(g->m[i]->id, g->leader) == 0)
            lead = g->m[i];
    for (int i = 0; i < g->n && !lead; i++)
        if (!g->m[i]->pending)
            lead = g->m[i];
    free(g->leader);
    g->leader = strdup(lead->id);
    /* The first protocol (in the leader's order of preference) that every member supports;
     * mbg_join refused members sharing none, so one exists. */
    for (int i = 0; i < lead->n_protos && !g->protocol_name; i++)
        if (supported_by_all(g, lead->protos[i].name, NULL))
            g->protocol_name = strdup(lead->protos[i].name);
    for (int i = 0; i < g->n; i++) {
        mbg_member_t *m = g->m[i];
        if (m->pending)
            continue;
        m->joined = false;
        m->join_gen = g->generation;
        m->last_ms = now; /* its session restarts with the join response */
        free(m->assignment);
        m->assignment = NULL;
        m->assignment_len = 0;
    }
    g->state = MBG_COMPLETING;
}

kc_bytes_t mbg_member_meta(const mbg_group_t *g, const mbg_member_t *m)
{
    for (int i = 0; g->protocol_name && i < m->n_protos; i++)
        if (strcmp(m->protos[i].name, g->protocol_name) == 0)
            return (kc_bytes_t){m->protos[i].meta, m->protos[i].meta_len};
    return (kc_bytes_t){NULL, 0};
}

int16_t mbg_join(mb_t *mb, mbg_group_t *g, const mbg_join_req_t *q, int64_t now, mbg_member_t **out)
{
    *out = NULL;
    if (!g->id[0])
        return KC_KAFKA_INVALID_GROUP_ID;
    if (q->session_ms < MBG_MIN_SESSION_MS || q->session_ms > MBG_MAX_SESSION_MS)
        return KC_KAFKA_INVALID_SESSION_TIMEOUT;
    if (g->kind == MBG_CONSUMER)
        return KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL; /* no classic/consumer mixing here */
    if (q->n_protos <= 0 || q->protocol_type.len <= 0)
        return KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL;
    mbg_member_t *m = mbg_member_find(g, q->member_id);
    if (q->member_id.len > 0 && !m)
        return KC_KAFKA_UNKNOWN_MEMBER_ID;
    /* Protocol checks against the others: same type, at least one protocol in common. */
    if (real_members(g) > (m && !m->pending ? 1 : 0)) {
        if (!str_eq(q->protocol_type, g->protocol_type))
            return KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL;
        bool common = false;
        for (int i = 0; i < q->n_protos && !common; i++) {
            char *name = str_dup(q->proto_names[i]);
            common = name && supported_by_all(g, name, m);
            free(name);
        }
        if (!common)
            return KC_KAFKA_INCONSISTENT_GROUP_PROTOCOL;
    }
    if (!m) {
        m = mbg_member_add(mb, g, NULL, now);
        if (!m)
            return KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
        if (q->version >= 4) {
            /* KIP-394: the id first, then a join with it; the pending member expires after
             * a session timeout if it never comes back. */
            m->pending = true;
            m->session_ms = q->session_ms;
            *out = m;
            return KC_KAFKA_MEMBER_ID_REQUIRED;
        }
    }
    bool was_pending = m->pending;
    bool changed = was_pending || !same_protos(m, q);
    m->pending = false;
    m->session_ms = q->session_ms;
    m->rebalance_ms = q->rebalance_ms > 0 ? q->rebalance_ms : q->session_ms;
    m->last_ms = now;
    if (changed && !set_protos(m, q)) {
        mbg_member_remove(g, m);
        return KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
    }
    if (g->kind == MBG_NONE || real_members(g) == 1) {
        g->kind = MBG_CLASSIC;
        free(g->protocol_type);
        g->protocol_type = str_dup(q->protocol_type);
    }
    *out = m;
    bool is_leader = g->leader && strcmp(g->leader, m->id) == 0;
    switch (g->state) {
    case MBG_COMPLETING:
    case MBG_STABLE:
        /* A follower rejoining with what it had gets the current generation back (Kafka does
         * the same); a leader's rejoin or new metadata needs a new round. */
        if (!changed && m->join_gen == g->generation && (g->state == MBG_COMPLETING || !is_leader))
            return 0;
        prepare_rebalance(g, now);
        break;
    case MBG_EMPTY:
        prepare_rebalance(g, now);
        break;
    case MBG_PREPARING:
        break;
    }
    m->joined = true;
    m->join_gen = -1;
    mbg_try_complete(mb, g, now);
    return 0;
}

int16_t mbg_sync(mbg_group_t *g, kc_str_t member_id, int32_t generation, const mbg_assignment_t *as,
                 int n, int64_t now, bool *wait)
{
    *wait = false;
    mbg_member_t *m = mbg_member_find(g, member_id);
    if (!m || m->pending)
        return KC_KAFKA_UNKNOWN_MEMBER_ID;
    if (generation != g->generation)
        return KC_KAFKA_ILLEGAL_GENERATION;
    m->last_ms = now;
    switch (g->state) {
    case MBG_EMPTY:
        return KC_KAFKA_UNKNOWN_MEMBER_ID;
    case MBG_PREPARING:
        return KC_KAFKA_REBALANCE_IN_PROGRESS;
    case MBG_STABLE:
        return 0;
    case MBG_COMPLETING:
        break;
    }
    if (!g->leader || strcmp(g->leader, m->id) != 0) {
        *wait = true; /* the leader's SyncGroup carries our assignment */
        return 0;
    }
    for (int i = 0; i < g->n; i++) {
        free(g->m[i]->assignment);
        g->m[i]->assignment = NULL;
        g->m[i]->assignment_len = 0;
    }
    for (int i = 0; i < n; i++) {
        mbg_member_t *t = mbg_member_find(g, as[i].member_id);
        int32_t len = as[i].assignment.len > 0 ? as[i].assignment.len : 0;
        if (!t || t->pending)
            continue; /* Kafka ignores assignments for members not in the generation */
        free(t->assignment);
        t->assignment = malloc((size_t)len + 1);
        if (!t->assignment)
            return KC_KAFKA_COORDINATOR_NOT_AVAILABLE;
        if (len)
            memcpy(t->assignment, as[i].assignment.ptr, (size_t)len);
        t->assignment_len = len;
    }
    g->state = MBG_STABLE;
    for (int i = 0; i < g->n; i++)
        g->m[i]->last_ms = now;
    return 0;
}

int16_t mbg_heartbeat(mbg_group_t *g, kc_str_t member_id, int32_t generation, int64_t now)
{
    mbg_member_t *m = mbg_member_find(g, member_id);
    if (!m || m->pending || g->kind != MBG_CLASSIC || g->state == MBG_EMPTY)
        return KC_KAFKA_UNKNOWN_MEMBER_ID;
    if (generation != g->generation)
        return KC_KAFKA_ILLEGAL_GENERATION;
    m->last_ms = now;
    return g->state == MBG_PREPARING ? KC_KAFKA_REBALANCE_IN_PROGRESS : 0;
}

int16_t mbg_leave(mb_t *mb, mbg_group_t *g, kc_str_t member_id, int64_t now)
{
    mbg_member_t *m = mbg_member_find(g, member_id);
    if (!m || g->kind != MBG_CLASSIC)
        return KC_KAFKA_UNKNOWN_MEMBER_ID;
    bool pending = m->pending;
    mbg_member_remove(g, m);
    if (pending)
        return 0;
    if (g->state == MBG_STABLE || g->state == MBG_COMPLETING)
        prepare_rebalance(g, now);
    mbg_try_complete(mb, g, now);
    return 0;
}

int16_t mbg_commit_check(const mbg_group_t *g, kc_str_t member_id, int32_t gen_or_epoch)
{
    if (member_id.len <= 0 && gen_or_epoch < 0)
        return 0; /* a commit outside any membership (assign mode with a group.id) */
    mbg_member_t *m = mbg_member_find(g, member_id);
    if (!m || m->pending)
        return KC_KAFKA_UNKNOWN_MEMBER_ID;
    if (g->kind == MBG_CONSUMER)
        return gen_or_epoch == m->epoch ? 0 : KC_KAFKA_STALE_MEMBER_EPOCH;
    if (gen_or_epoch != g->generation)
        return KC_KAFKA_ILLEGAL_GENERATION;
    /* Kafka accepts commits while a round is open (members commit before they rejoin: that is
     * what keeps a handed-over partition from being read twice) and refuses them between the
     * join and the sync, when the member's generation is already the next one's. */
    return g->state == MBG_COMPLETING ? KC_KAFKA_REBALANCE_IN_PROGRESS : 0;
}

void mbg_tick(mb_t *mb, int64_t now)
{
    for (int gi = 0; gi < mb->n_groups; gi++) {
        mbg_group_t *g = mb->groups[gi];
        if (g->kind == MBG_CONSUMER) {
            mbg848_tick(mb, g, now);
            continue;
        }
        bool lost = false;
        for (int i = g->n - 1; i >= 0; i--) {
            mbg_member_t *m = g->m[i];
            /* A parked member is alive (its connection waits on us); in an open round a
             * member that rejoined waits for the others, not for its session. */
            if (m->waiting > 0 || (g->state == MBG_PREPARING && m->joined))
                continue;
            if (now - m->last_ms > m->session_ms) {
                lost |= !m->pending;
                mbg_member_remove(g, m);
            }
        }
        if (lost && (g->state == MBG_STABLE || g->state == MBG_COMPLETING))
            prepare_rebalance(g, now);
        mbg_try_complete(mb, g, now);
    }
}
