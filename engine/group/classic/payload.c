/*
 * The classic member's payloads: our ConsumerProtocolSubscription (with each assignor's user
 * data), the leader's decode → assign → encode, and decoding our assignment. All layouts come
 * from the generated codec (proto/consumer_protocol.gen.h, proto/sticky_assignor_user_data.gen.h);
 * the only hand-placed bytes are cooperative-sticky's user data, one int32 written with the
 * wire primitive (Java's CooperativeStickyAssignor writes a one-field struct: the generation).
 *
 * Owner: network thread (called by group/classic/member.c with the member's state).
 */
#include "group/classic/member.h"

#include <stdlib.h>
#include <string.h>

#include "group/classic/assign/assign_int.h"
#include "proto/consumer_protocol.gen.h"
#include "proto/sticky_assignor_user_data.gen.h"

#define SUB_VERSION    3 /* ConsumerProtocolSubscription: topics, user data, owned, gen, rack */
#define ASSIGN_VERSION 3 /* ConsumerProtocolAssignment: Java writes its highest */

/* Groups a set (the member's topics are interned in Java's String order, so a topic is one run
 * and the runs come in that order) into the generated (topic, partitions[]) shape. The three
 * generated structs share this layout. */
typedef struct tgroup {
    const char *topic;
    int32_t *parts;
    int32_t n;
} tgroup_t;

static tgroup_t *group_by_topic(const kc_tpset_t *s, kc_arena_t *a, int32_t *n_groups)
{
    int32_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        if (i == 0 || s->items[i].topic != s->items[i - 1].topic)
            n++;
    *n_groups = n;
    tgroup_t *g = kc_arena_calloc(a, n ? (size_t)n : 1, sizeof *g);
    int32_t *parts = kc_arena_calloc(a, s->n ? s->n : 1, sizeof *parts);
    if (!g || !parts)
        return NULL;
    int32_t k = -1;
    for (size_t i = 0; i < s->n; i++) {
        if (i == 0 || s->items[i].topic != s->items[i - 1].topic) {
            k++;
            g[k].topic = s->items[i].topic->name;
            g[k].parts = &parts[i];
        }
        g[k].parts[g[k].n++] = s->items[i].partition;
    }
    return g;
}

static kc_err_t user_data(const kc_classic_t *m, kc_assignor_t a, kc_wbuf_t *ud, bool *present,
                          kc_arena_t *ar, kc_error_t *err)
{
    *present = false;
    if (a == KC_ASSIGNOR_COOPERATIVE_STICKY) {
        kc_enc_t e = {ud, err, "CooperativeStickyUserData", 0, false};
        *present = true;
        return kc_wire_put_i32(&e, m->last_assigned_gen);
    }
    /* Eager sticky: nothing before the first assignment (Java's memberAssignment == null). */
    if (a != KC_ASSIGNOR_STICKY || m->last_assigned_gen < 0)
        return KC_OK;
    int32_t ng;
    tgroup_t *g = group_by_topic(&m->last_assigned, ar, &ng);
    kc_sticky_assignor_user_data_topic_assignment_t *ta =
        kc_arena_calloc(ar, ng ? ng : 1, sizeof *ta);
    if (!g || !ta)
        return kc_fail(err, KC_ERR_NOMEM, "sticky user data");
    /* Java groups the previous assignment by topic through a HashMap, so the topics go out in
     * its iteration order (first-seen order is ours: sorted). */
    int32_t *h = kc_arena_calloc(ar, ng ? ng : 1, sizeof *h);
    size_t *order = kc_arena_calloc(ar, ng ? ng : 1, sizeof *order);
    if (!h || !order)
        return kc_fail(err, KC_ERR_NOMEM, "sticky user data");
    for (int32_t i = 0; i < ng; i++)
        h[i] = kc_jstr_hash(g[i].topic);
    kc_jmap_order(h, (size_t)ng, kc_jmap_cap((size_t)ng), order);
    for (int32_t i = 0; i < ng; i++) {
        const tgroup_t *gi = &g[order[i]];
        ta[i].topic = kc_str(gi->topic);
        ta[i].partitions.count = gi->n;
        ta[i].partitions.items = gi->parts;
    }
    kc_sticky_assignor_user_data_t u;
    kc_sticky_assignor_user_data_init(&u);
    u.previous_assignment.count = ng;
    u.previous_assignment.items = ta;
    u.generation = m->last_assigned_gen;
    *present = true;
    return kc_sticky_assignor_user_data_encode(&u, 1, ud, err);
}

kc_err_t kc_classic_encode_subscription(const kc_classic_t *m, kc_assignor_t a, kc_wbuf_t *w,
                                        kc_error_t *err)
{
    kc_arena_t ar = {0};
    kc_wbuf_t ud = {0};
    kc_err_t rc = KC_ERR_NOMEM;
    kc_consumer_protocol_subscription_t s;
    kc_consumer_protocol_subscription_init(&s);
    kc_str_t *topics = kc_arena_calloc(&ar, m->n_topics ? m->n_topics : 1, sizeof *topics);
    int32_t ng;
    tgroup_t *g = group_by_topic(&m->rc.owned, &ar, &ng);
    kc_consumer_protocol_subscription_topic_partition_t *op =
        kc_arena_calloc(&ar, ng ? ng : 1, sizeof *op);
    if (!topics || !g || !op) {
        kc_fail(err, rc, "subscription");
        goto out;
    }
    for (size_t i = 0; i < m->n_topics; i++) /* m->topics is kept in Java String order */
        topics[i] = kc_str(m->topics[i]);
    s.topics.count = (int32_t)m->n_topics;
    s.topics.items = topics;
    for (int32_t i = 0; i < ng; i++) {
        op[i].topic = kc_str(g[i].topic);
        op[i].partitions.count = g[i].n;
        op[i].partitions.items = g[i].parts;
    }
    s.owned_partitions.count = ng;
    s.owned_partitions.items = op;
    s.generation_id = m->generation;
    s.rack_id = m->cfg.rack ? kc_str(m->cfg.rack) : KC_STR_NULL;
    bool present;
    if ((rc = user_data(m, a, &ud, &present, &ar, err)))
        goto out;
    s.user_data = present ? (kc_bytes_t){ud.data, (int32_t)ud.len} : KC_BYTES_NULL;
    if (present && !ud.data)
        s.user_data = (kc_bytes_t){(const uint8_t *)"", 0};
    rc = kc_consumer_protocol_subscription_encode_versioned(&s, SUB_VERSION, w, err);
out:
    kc_wbuf_free(&ud);
    kc_arena_free(&ar);
    return rc;
}

static const char *dup_str(kc_arena_t *a, kc_str_t s)
{
    if (s.len < 0)
        return NULL;
    char *d = kc_arena_calloc(a, (size_t)s.len + 1, 1);
    if (d && s.len)
        memcpy(d, s.ptr, (size_t)s.len);
    return d;
}

static int32_t be32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

/* The assignor's view of one member's user data (see assign.h for Java's fallbacks). */
static kc_err_t member_user_data(kc_assign_member_t *mb, kc_assignor_t a, kc_bytes_t ud,
                                 kc_arena_t *ar)
{
    mb->has_user_data = ud.len > 0;
    if (!mb->has_user_data)
        return KC_OK;
    if (a == KC_ASSIGNOR_COOPERATIVE_STICKY) {
        mb->prev_has_generation = ud.len >= 4;
        mb->prev_generation = ud.len >= 4 ? be32(ud.ptr) : -1;
        return KC_OK;
    }
    if (a != KC_ASSIGNOR_STICKY)
        return KC_OK;
    kc_sticky_assignor_user_data_t u;
    kc_error_t ignore;
    bool ok = false;
    for (int16_t v = 1; v >= 0 && !ok; v--) {
        kc_rbuf_t r = kc_rbuf(ud.ptr, (size_t)ud.len);
        ok = kc_sticky_assignor_user_data_decode(&u, v, &r, ar, &ignore) == KC_OK;
        mb->prev_has_generation = v == 1;
    }
    if (!ok) { /* neither V1 nor V0: Java keeps an empty history with generation -1 */
        mb->prev_has_generation = true;
        mb->prev_generation = -1;
        return KC_OK;
    }
    mb->prev_generation = mb->prev_has_generation ? u.generation : -1;
    size_t n = 0;
    for (int32_t i = 0; i < u.previous_assignment.count; i++)
        n += (size_t)u.previous_assignment.items[i].partitions.count;
    kc_assign_tp_t *tps = kc_arena_calloc(ar, n ? n : 1, sizeof *tps);
    if (!tps)
        return KC_ERR_NOMEM;
    size_t k = 0;
    for (int32_t i = 0; i < u.previous_assignment.count; i++) {
        const char *t = dup_str(ar, u.previous_assignment.items[i].topic);
        if (!t)
            return KC_ERR_NOMEM;
        for (int32_t j = 0; j < u.previous_assignment.items[i].partitions.count; j++)
            tps[k++] = (kc_assign_tp_t){t, u.previous_assignment.items[i].partitions.items[j]};
    }
    mb->prev = tps;
    mb->n_prev = k;
    return KC_OK;
}

static kc_err_t decode_member(kc_assign_member_t *mb, kc_assignor_t a,
                              const kc_join_group_response_member_t *jm, kc_arena_t *ar,
                              kc_error_t *err)
{
    kc_consumer_protocol_subscription_t s;
    int16_t v;
    kc_rbuf_t r = kc_rbuf(jm->metadata.ptr, jm->metadata.len > 0 ? (size_t)jm->metadata.len : 0);
    kc_err_t rc = kc_consumer_protocol_subscription_decode_versioned(&s, &v, &r, ar, err);
    if (rc)
        return kc_fail(err, rc, "member %.*s: subscription: %s", (int)jm->member_id.len,
                       jm->member_id.ptr, err->msg);
    mb->member_id = dup_str(ar, jm->member_id);
    mb->instance_id = jm->group_instance_id.len > 0 ? dup_str(ar, jm->group_instance_id) : NULL;
    mb->rack = s.rack_id.len > 0 ? dup_str(ar, s.rack_id) : NULL;
    int32_t nt = s.topics.count > 0 ? s.topics.count : 0;
    const char **topics = kc_arena_calloc(ar, nt ? (size_t)nt : 1, sizeof *topics);
    size_t n_owned = 0;
    for (int32_t i = 0; i < s.owned_partitions.count; i++)
        n_owned += (size_t)s.owned_partitions.items[i].partitions.count;
    kc_assign_tp_t *owned = kc_arena_calloc(ar, n_owned ? n_owned : 1, sizeof *owned);
    if (!mb->member_id || !topics || !owned)
        return kc_fail(err, KC_ERR_NOMEM, "leader: member table");
    for (int32_t i = 0; i < nt; i++)
        if (!(topics[i] = dup_str(ar, s.topics.items[i])))
            return kc_fail(err, KC_ERR_NOMEM, "leader: topics");
    size_t k = 0;
    for (int32_t i = 0; i < s.owned_partitions.count; i++) {
        const char *t = dup_str(ar, s.owned_partitions.items[i].topic);
        if (!t)
            return kc_fail(err, KC_ERR_NOMEM, "leader: owned");
        for (int32_t j = 0; j < s.owned_partitions.items[i].partitions.count; j++)
            owned[k++] = (kc_assign_tp_t){t, s.owned_partitions.items[i].partitions.items[j]};
    }
    mb->topics = topics;
    mb->n_topics = (size_t)nt;
    mb->owned = owned;
    mb->n_owned = k;
    mb->generation = v >= 2 ? s.generation_id : -1;
    if (member_user_data(mb, a, s.user_data, ar))
        return kc_fail(err, KC_ERR_NOMEM, "leader: user data");
    return KC_OK;
}

void kc_classic_snapshot_free(kc_classic_t *m)
{
    for (size_t i = 0; i < m->n_snap; i++)
        free(m->snap_topics[i]);
    free(m->snap_topics);
    free(m->snap_counts);
    m->snap_topics = NULL;
    m->snap_counts = NULL;
    m->n_snap = 0;
}

/* Union of the members' topics with their partition counts; also kept as the leader's snapshot. */
static kc_err_t topic_table(kc_classic_t *m, const kc_assign_member_t *mb, size_t n,
                            kc_assign_topic_t **out, size_t *n_out, kc_arena_t *ar)
{
    size_t cap = 0;
    for (size_t i = 0; i < n; i++)
        cap += mb[i].n_topics;
    kc_assign_topic_t *t = kc_arena_calloc(ar, cap ? cap : 1, sizeof *t);
    if (!t)
        return KC_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < mb[i].n_topics; j++) {
            size_t q = 0;
            while (q < k && strcmp(t[q].name, mb[i].topics[j]) != 0)
                q++;
            if (q == k)
                t[k++] = (kc_assign_topic_t){mb[i].topics[j], 0, NULL, NULL};
        }
    kc_classic_snapshot_free(m);
    m->snap_topics = calloc(k ? k : 1, sizeof *m->snap_topics);
    m->snap_counts = calloc(k ? k : 1, sizeof *m->snap_counts);
    if (!m->snap_topics || !m->snap_counts)
        return KC_ERR_NOMEM;
    for (size_t q = 0; q < k; q++) {
        t[q].n_partitions = m->partitions(m->partitions_ctx, t[q].name);
        if (t[q].n_partitions < 0)
            t[q].n_partitions = 0;
        if (!(m->snap_topics[q] = strdup(t[q].name)))
            return KC_ERR_NOMEM;
        m->snap_counts[q] = t[q].n_partitions;
        m->n_snap = q + 1;
        /* KIP-881: Java's leader hands its assignors every partition's replica racks from its
         * metadata; they decide whether the members' racks make it rack-aware. */
        const char *const *const *rr;
        const size_t *nr;
        if (t[q].n_partitions > 0 && m->racks &&
            m->racks(m->partitions_ctx, t[q].name, t[q].n_partitions, &rr, &nr)) {
            t[q].replica_racks = rr;
            t[q].n_replica_racks = nr;
        }
    }
    *out = t;
    *n_out = k;
    return KC_OK;
}

/* One member's assignment, its topics interned in the leader's table (which puts them in Java's
 * String order, as Java's leader encodes them). */
static kc_err_t encode_assignment(kc_gtopics_t *names, const kc_assign_member_result_t *res,
                                  kc_wbuf_t *w, kc_error_t *err)
{
    kc_arena_t ar = {0};
    kc_tpset_t set = {0};
    kc_err_t rc = KC_OK;
    for (size_t i = 0; i < res->n && !rc; i++) {
        const kc_gtopic_t *t = kc_gtopics_name(names, res->tps[i].topic, -1);
        rc = t ? kc_tpset_add(&set, t, res->tps[i].partition) : KC_ERR_NOMEM;
    }
    int32_t ng = 0;
    tgroup_t *g = rc ? NULL : group_by_topic(&set, &ar, &ng);
    kc_consumer_protocol_assignment_topic_partition_t *tp =
        g ? kc_arena_calloc(&ar, ng ? ng : 1, sizeof *tp) : NULL;
    if (!tp) {
        rc = kc_fail(err, KC_ERR_NOMEM, "assignment");
        goto out;
    }
    for (int32_t i = 0; i < ng; i++) {
        tp[i].topic = kc_str(g[i].topic);
        tp[i].partitions.count = g[i].n;
        tp[i].partitions.items = g[i].parts;
    }
    kc_consumer_protocol_assignment_t as;
    kc_consumer_protocol_assignment_init(&as);
    as.assigned_partitions.count = ng;
    as.assigned_partitions.items = tp;
    as.user_data = KC_BYTES_NULL;
    rc = kc_consumer_protocol_assignment_encode_versioned(&as, ASSIGN_VERSION, w, err);
out:
    kc_tpset_free(&set);
    kc_arena_free(&ar);
    return rc;
}

kc_err_t kc_classic_leader_assign(kc_classic_t *m, kc_assignor_t a,
                                  const kc_join_group_response_t *r,
                                  kc_sync_group_request_assignment_t **items_out,
                                  kc_wbuf_t **bufs_out, size_t *n_out, kc_error_t *err)
{
    size_t n = r->members.count > 0 ? (size_t)r->members.count : 0;
    kc_arena_t ar = {0};
    kc_assign_result_t res = {0};
    kc_sync_group_request_assignment_t *items = calloc(n ? n : 1, sizeof *items);
    kc_wbuf_t *bufs = calloc(n ? n : 1, sizeof *bufs);
    kc_assign_member_t *mb = kc_arena_calloc(&ar, n ? n : 1, sizeof *mb);
    kc_err_t rc = KC_OK;
    if (!items || !bufs || !mb) {
        rc = kc_fail(err, KC_ERR_NOMEM, "leader assignment");
        goto fail;
    }
    /* JoinGroup-response order is the order the assignors expect (see assign.h). */
    for (size_t i = 0; i < n; i++)
        if ((rc = decode_member(&mb[i], a, &r->members.items[i], &ar, err)))
            goto fail;
    kc_assign_topic_t *topics;
    size_t nt;
    if ((rc = topic_table(m, mb, n, &topics, &nt, &ar))) {
        kc_fail(err, rc, "leader: topic table");
        goto fail;
    }
    kc_assign_input_t in = {mb, n, topics, nt};
    if ((rc = kc_assign_run(a, &in, &res, err)))
        goto fail;
    for (size_t i = 0; i < n; i++) {
        if ((rc = encode_assignment(&m->interned, &res.members[i], &bufs[i], err)))
            goto fail;
        /* The member id rides in the same buffer after the assignment, so the request's views
         * outlive the JoinGroup response they were copied from. */
        size_t alen = bufs[i].len;
        kc_str_t id = r->members.items[i].member_id;
        size_t idlen = id.len > 0 ? (size_t)id.len : 0;
        if ((rc = kc_wbuf_reserve(&bufs[i], idlen + 1))) {
            kc_fail(err, rc, "leader: member id");
            goto fail;
        }
        if (idlen)
            memcpy(bufs[i].data + alen, id.ptr, idlen);
        bufs[i].len = alen + idlen;
        items[i].assignment = (kc_bytes_t){bufs[i].data, (int32_t)alen};
        items[i].member_id = (kc_str_t){(const char *)bufs[i].data + alen, (int32_t)idlen};
    }
    kc_assign_result_free(&res);
    kc_arena_free(&ar);
    *items_out = items;
    *bufs_out = bufs;
    *n_out = n;
    return KC_OK;
fail:
    kc_assign_result_free(&res);
    kc_arena_free(&ar);
    for (size_t i = 0; bufs && i < n; i++)
        kc_wbuf_free(&bufs[i]);
    free(bufs);
    free(items);
    return rc;
}

kc_err_t kc_classic_decode_assignment(kc_gtopics_t *names, kc_bytes_t b, kc_tpset_t *out,
                                      kc_error_t *err)
{
    kc_tpset_clear(out);
    if (b.len <= 0) /* the broker's empty answer (e.g. mid-conversion): nothing assigned */
        return KC_OK;
    kc_arena_t ar = {0};
    kc_consumer_protocol_assignment_t as;
    int16_t v;
    kc_rbuf_t r = kc_rbuf(b.ptr, (size_t)b.len);
    kc_err_t rc = kc_consumer_protocol_assignment_decode_versioned(&as, &v, &r, &ar, err);
    for (int32_t i = 0; !rc && i < as.assigned_partitions.count; i++) {
        const kc_consumer_protocol_assignment_topic_partition_t *t =
            &as.assigned_partitions.items[i];
        if (t->partitions.count <= 0)
            continue;
        if (t->topic.len < 0) { /* counted, never NUL-terminated: a null name is no name */
            rc = kc_fail(err, KC_ERR_MALFORMED, "assignment: a null topic name");
            break;
        }
        const kc_gtopic_t *topic = kc_gtopics_name(names, t->topic.ptr, t->topic.len);
        if (!topic)
            rc = kc_fail(err, KC_ERR_NOMEM, "assignment");
        for (int32_t j = 0; !rc && j < t->partitions.count; j++)
            if ((rc = kc_tpset_add(out, topic, t->partitions.items[j])))
                kc_fail(err, rc, "assignment");
    }
    kc_arena_free(&ar);
    return rc;
}
