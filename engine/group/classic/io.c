/*
 * group.protocol=classic, the driver's network side: Metadata for the subscription's partition
 * counts, FindCoordinator and our own coordinator connection, and the group requests on it
 * (encoded at once, at the version negotiated there). See proto_int.h.
 *
 * Owner: network thread. Callbacks check kc_classic_io_gone (engine closed, or the driver freed
 * after closing our connection) before touching anything else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "group/classic/proto_int.h"
#include "engine_int.h"
#include "proto/describe_groups.gen.h"
#include "proto/find_coordinator.gen.h"
#include "proto/kafka_errors.h"
#include "proto/metadata.gen.h"
#include "versions.h"

/* ---- metadata: partition counts of the subscription ----------------------------------------- */

/* A topic of the leader's snapshot (every member's subscription) that we do not subscribe to. */
static bool other_topic(const kc_classic_io_t *g, const char *t)
{
    for (size_t i = 0; i < g->n_topics; i++)
        if (strcmp(g->topics[i], t) == 0)
            return false;
    return true;
}

static kc_err_t md_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    kc_classic_io_t *g = opaque;
    kc_metadata_request_t m;
    kc_metadata_request_init(&m);
    m.allow_auto_topic_creation = false;
    if (g->has_re) { /* a pattern: every topic (null), the counts of ours and others' with them */
        m.topics.count = -1;
        kc_error_t err;
        return kc_metadata_request_encode(&m, version, out, &err);
    }
    size_t n = g->n_topics + (g->m.is_leader ? g->m.n_snap : 0), k = 0;
    kc_metadata_request_topic_t *ts = calloc(n ? n : 1, sizeof *ts);
    if (!ts)
        return KC_ERR_NOMEM;
    for (size_t i = 0; i < g->n_topics; i++)
        ts[k++].name = kc_str(g->topics[i]);
    for (size_t i = 0; g->m.is_leader && i < g->m.n_snap; i++)
        if (other_topic(g, g->m.snap_topics[i]))
            ts[k++].name = kc_str(g->m.snap_topics[i]);
    m.topics.count = (int32_t)k;
    m.topics.items = ts;
    kc_error_t err;
    kc_err_t rc = kc_metadata_request_encode(&m, version, out, &err);
    free(ts);
    return rc;
}

/* A request the cluster cannot take at any version we speak: the member can never work, so
 * the group hears it as fatal at once, with the API and both ranges (kc_conn_refusal). */
static void refused(kc_classic_io_t *g, const kc_error_t *why)
{
    kc_error_t e;
    kc_fail(&e, KC_ERR_UNSUPPORTED, "group %s: %s", g->conf->group_id, why->msg);
    kc_group_report(g->grp, &e, true);
}

/* The group API of each out kind, and FindCoordinator for KC_CLASSIC_REDISCOVER. */
static const int16_t kind_key[] = {[KC_CLASSIC_SEND_JOIN] = KC_JOIN_GROUP_REQUEST_API_KEY,
                                   [KC_CLASSIC_SEND_SYNC] = KC_SYNC_GROUP_REQUEST_API_KEY,
                                   [KC_CLASSIC_SEND_HEARTBEAT] = KC_HEARTBEAT_REQUEST_API_KEY,
                                   [KC_CLASSIC_SEND_LEAVE] = KC_LEAVE_GROUP_REQUEST_API_KEY,
                                   [KC_CLASSIC_DESCRIBE] = KC_DESCRIBE_GROUPS_REQUEST_API_KEY,
                                   [KC_CLASSIC_REDISCOVER] = KC_FIND_COORDINATOR_REQUEST_API_KEY};

/* An answer of `kind`'s API that does not decode, for the version the coordinator offered: the
 * member keeps retrying at its usual pace (the request failed), but the application hears once
 * per API what is wrong, not silence. `why` is the connection's reason (header) or NULL with the
 * decoder's error in `decode_err` (body). */
static void bad_answer(kc_classic_io_t *g, kc_conn_t *conn, int kind, int16_t version,
                       const kc_error_t *why, const kc_error_t *decode_err)
{
    if (g->bad_said & (1u << kind))
        return;
    g->bad_said |= (uint8_t)(1u << kind);
    kc_error_t w, e;
    if (!why) {
        kc_wire_bad_answer(&w, kc_conn_peer(conn), kind_key[kind], version, decode_err->msg);
        why = &w;
    }
    kc_fail(&e, why->code, "group %s: %s", g->conf->group_id, why->msg);
    kc_group_report(g->grp, &e, false);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A pattern subscription: the non-internal topics of this all-topics answer that match, sorted;
 * when they differ from the list, they become it. A match that empties (every matching topic
 * deleted) empties the list too, as Java's classic consumer does: the member rejoins subscribed
 * to nothing and gives up what it held. Out of memory: tried again at the next answer. */
static void rematch(kc_classic_io_t *g, const kc_metadata_response_t *m)
{
    char **names = calloc(m->topics.count > 0 ? (size_t)m->topics.count : 1, sizeof *names);
    size_t n = 0;
    for (int32_t i = 0; names && i < m->topics.count; i++) {
        const kc_metadata_response_topic_t *t = &m->topics.items[i];
        if (t->error_code || t->is_internal || t->name.len <= 0)
            continue;
        char *s = strndup(t->name.ptr, (size_t)t->name.len);
        if (s && regexec(&g->re, s, 0, NULL, 0) == 0)
            names[n++] = s;
        else
            free(s);
    }
    if (names && n)
        qsort(names, n, sizeof *names, by_name);
    bool same = names && n == g->n_topics;
    for (size_t i = 0; same && i < n; i++)
        same = strcmp(names[i], g->topics[i]) == 0;
    kc_error_t err;
    if (names && !same && kc_classic_io_set_topics(g, (const char *const *)names, n, &err))
        kc_group_report(g->grp, &err, false);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static void md_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    kc_classic_io_t *g = opaque;
    if (kc_classic_io_gone(g)) {
        kc_buf_unref(frame);
        return;
    }
    g->md_inflight = false;
    if (rc == KC_ERR_UNSUPPORTED)
        refused(g, kc_conn_refusal(conn));
    bool changed = false, known = true;
    if (rc == KC_OK) {
        kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
        kc_arena_t a = {0};
        kc_error_t e;
        kc_metadata_response_t m;
        if (kc_metadata_response_decode(&m, version, &r, &a, &e) != KC_OK) {
            rc = KC_ERR_MALFORMED;
        } else if (kc_eng_metadata_refused(g->e, m.error_code)) {
            rc = KC_ERR_BROKER; /* nothing in it: neither counts nor racks nor a match */
        } else {
            for (int32_t i = 0; i < m.topics.count; i++) {
                const kc_metadata_response_topic_t *t = &m.topics.items[i];
                for (size_t j = 0; g->m.is_leader && j < g->m.n_snap; j++) {
                    const char *o = g->m.snap_topics[j];
                    if ((size_t)t->name.len == strlen(o) &&
                        memcmp(t->name.ptr, o, (size_t)t->name.len) == 0 && other_topic(g, o) &&
                        t->error_code == 0 && t->partitions.count > 0)
                        changed |= kc_classic_io_set_other(g, o, t->partitions.count);
                }
                for (size_t j = 0; j < g->n_topics; j++) {
                    if ((size_t)t->name.len != strlen(g->topics[j]) ||
                        memcmp(t->name.ptr, g->topics[j], (size_t)t->name.len) != 0)
                        continue;
                    int32_t n = t->error_code == 0 ? t->partitions.count : 0;
                    if (n > 0 && g->counts[j] > 0 && n != g->counts[j])
                        changed = true;
                    if (n > 0)
                        g->counts[j] = n;
                }
            }
            kc_classic_io_racks_update(g, &m);
            if (g->has_re)
                rematch(g, &m);
        }
        kc_arena_free(&a);
        kc_buf_unref(frame);
    }
    for (size_t j = 0; j < g->n_topics; j++)
        known = known && g->counts[j] > 0;
    if (g->md_sent_gen == g->md_gen)
        g->md_known = g->md_known || known || rc == KC_OK;
    else
        g->next_md_ms = 0; /* asked for a list since replaced: ask for this one now */
    if (changed)
        kc_classic_metadata_changed(&g->m, kc_now_ms());
    kc_group_drive(g->grp);
}

void kc_classic_io_md_maybe_send(kc_classic_io_t *g, int64_t now)
{
    if (g->md_inflight || now < g->next_md_ms || (!g->n_topics && !g->has_re))
        return;
    kc_conn_t *c = kc_eng_any_conn(g->e);
    if (!c)
        return;
    g->next_md_ms = now + MD_REFRESH_MS;
    g->md_sent_gen = g->md_gen;
    kc_conn_req_spec_t s = {KC_METADATA_REQUEST_API_KEY,
                            KC_ENG_METADATA_MIN,
                            KC_ENG_METADATA_MAX,
                            md_encode,
                            md_done,
                            g};
    kc_error_t e;
    kc_err_t rc = kc_conn_send(c, &s, &e);
    g->md_inflight = rc == KC_OK;
    if (rc == KC_ERR_UNSUPPORTED)
        refused(g, &e);
}

/* ---- coordinator: FindCoordinator, then our own connection ---------------------------------- */

static void conn_state(kc_conn_t *conn, kc_conn_state_t st, const kc_error_t *why, void *opaque)
{
    (void)why;
    kc_classic_io_t *g = opaque;
    if (kc_classic_io_gone(g) || conn != g->conn)
        return;
    if (st == KC_CONN_READY && g->want_known) {
        g->want_known = false;
        kc_classic_coordinator_known(&g->m, kc_now_ms());
    } else if (st == KC_CONN_DOWN && !g->req_kind && !g->want_known) {
        kc_classic_coordinator_lost(&g->m, kc_now_ms());
    }
    kc_group_drive(g->grp);
}

static void use_coordinator(kc_classic_io_t *g, const char *addr, int32_t node)
{
    g->coord_node = node;
    if (g->conn && strcmp(addr, g->coord_addr) == 0 && kc_conn_state(g->conn) == KC_CONN_READY) {
        kc_classic_coordinator_known(&g->m, kc_now_ms());
        return;
    }
    if (g->conn)
        kc_conn_close(g->conn); /* a request in flight there fails: request_failed */
    g->conn = NULL;
    snprintf(g->coord_addr, sizeof g->coord_addr, "%s", addr);
    kc_conn_opts_t o = {0};
    o.servers = addr;
    o.client_id = g->e->client_id;
    o.connect_timeout_ms = g->e->conf.connect_timeout_ms;
    /* A JoinGroup is answered when the rebalance completes (up to the rebalance timeout). */
    o.request_timeout_ms = g->conf->classic_rebalance_timeout_ms + 5000;
    o.reconnect_backoff_ms = g->e->conf.reconnect_backoff_ms;
    o.reconnect_backoff_max_ms = g->e->conf.reconnect_backoff_max_ms;
    /* No idle close here: the member's heartbeats keep this connection busy, and a close would
     * read as the coordinator lost (conn_state). */
    o.keepalive = g->e->conf.keepalive;
    o.on_state = conn_state;
    o.state_opaque = g;
    kc_error_t err;
    if (kc_conn_security_apply(g->e->conf.security, &o, &err) != KC_OK ||
        kc_conn_new(&g->conn, g->e->loop, &o, &err) != KC_OK) {
        kc_conn_security_discard(&o);
        g->conn = NULL;
        g->find_retry_ms = kc_now_ms() + 500;
        return;
    }
    g->want_known = true;
    kc_conn_start(g->conn);
}

static kc_err_t fc_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    return kc_eng_fc_encode(out, version, ((kc_classic_io_t *)opaque)->conf->group_id);
}

static void fc_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off, int16_t version,
                    void *opaque)
{
    kc_classic_io_t *g = opaque;
    if (kc_classic_io_gone(g)) {
        kc_buf_unref(frame);
        return;
    }
    g->finding = false;
    if (rc == KC_ERR_UNSUPPORTED) {
        refused(g, kc_conn_refusal(conn));
        return;
    }
    if (rc == KC_ERR_MALFORMED)
        bad_answer(g, conn, KC_CLASSIC_REDISCOVER, version, kc_conn_refusal(conn), NULL);
    bool ok = false;
    if (rc == KC_OK) {
        char addr[300];
        int32_t node = -1;
        int code = kc_eng_fc_decode(frame, body_off, version, addr, sizeof addr, &node);
        if (code == 0) {
            use_coordinator(g, addr, node);
            ok = true;
        } else if (code == KC_ENG_FC_UNDECODABLE) {
            kc_error_t d;
            kc_fail(&d, KC_ERR_MALFORMED, "no FindCoordinator response in it");
            bad_answer(g, conn, KC_CLASSIC_REDISCOVER, version, NULL, &d);
        }
        kc_buf_unref(frame);
    }
    if (!ok) /* a fresh cluster answers NOT_COORDINATOR until __consumer_offsets exists */
        g->find_retry_ms = kc_now_ms() + 200;
    kc_group_drive(g->grp);
}

void kc_classic_io_find_maybe_send(kc_classic_io_t *g, int64_t now)
{
    /* The machine paces lookups after repeated losses (member.h, lost_streak); this call also
     * runs from the drive while the coordinator is unknown, so it keeps that pace too. */
    if (g->finding || now < g->find_retry_ms ||
        (g->m.rediscover_due && now < g->m.rediscover_at_ms))
        return;
    kc_conn_t *c = kc_eng_any_conn(g->e);
    if (!c)
        return;
    kc_conn_req_spec_t s = {KC_FIND_COORDINATOR_REQUEST_API_KEY,
                            KC_ENG_FIND_COORDINATOR_MIN,
                            KC_ENG_FIND_COORDINATOR_MAX,
                            fc_encode,
                            fc_done,
                            g};
    kc_error_t e;
    kc_err_t rc = kc_conn_send(c, &s, &e);
    g->finding = rc == KC_OK;
    if (rc == KC_ERR_UNSUPPORTED)
        refused(g, &e);
    else if (!g->finding)
        g->find_retry_ms = now + 200;
}

/* ---- group requests on our connection ------------------------------------------------------- */

static kc_err_t req_encode(kc_wbuf_t *out, int16_t version, void *opaque)
{
    (void)version;
    kc_classic_io_t *g = opaque;
    kc_err_t rc = kc_wbuf_reserve(out, g->req.len);
    if (rc != KC_OK)
        return rc;
    memcpy(out->data + out->len, g->req.data, g->req.len);
    out->len += g->req.len;
    return KC_OK;
}

/* INCONSISTENT_GROUP_PROTOCOL's text: the protocol the group runs (DescribeGroups names only the
 * one chosen for the current generation; a group between generations has none yet). */
static void describe_done(kc_classic_io_t *g, const kc_describe_groups_response_t *m)
{
    if (m->groups.count < 1 || m->groups.items[0].error_code != 0) {
        kc_classic_describe_result(&g->m, NULL, NULL);
        return;
    }
    const kc_describe_groups_response_described_group_t *d = &m->groups.items[0];
    char type[128], proto[200];
    snprintf(type, sizeof type, "%.*s", d->protocol_type.len > 0 ? (int)d->protocol_type.len : 0,
             d->protocol_type.ptr ? (const char *)d->protocol_type.ptr : "");
    if (d->protocol_data.len > 0)
        snprintf(proto, sizeof proto, "%.*s", (int)d->protocol_data.len,
                 (const char *)d->protocol_data.ptr);
    else
        snprintf(proto, sizeof proto, "none chosen yet, group state %.*s, %d member(s)",
                 d->group_state.len > 0 ? (int)d->group_state.len : 0,
                 d->group_state.ptr ? (const char *)d->group_state.ptr : "", (int)d->members.count);
    kc_classic_describe_result(&g->m, type, proto);
}

static void req_done(kc_conn_t *conn, kc_err_t rc, kc_buf_t *frame, size_t body_off,
                     int16_t version, void *opaque)
{
    kc_classic_io_t *g = opaque;
    if (g->dead) {
        kc_buf_unref(frame);
        return;
    }
    int kind = g->req_kind;
    int64_t sent = g->req_sent_ms;
    g->req_kind = 0;
    int64_t now = kc_now_ms();
    /* The machine moves last_heartbeat_ok_ms when an answer kept the session (its own rule for
     * that): then the coordinator restarted it no earlier than `sent`. */
    int64_t ok_before = g->m.last_heartbeat_ok_ms;
    if (rc != KC_OK) {
        if (rc == KC_ERR_MALFORMED)
            bad_answer(g, conn, kind, version, kc_conn_refusal(conn), NULL);
        if (kind == KC_CLASSIC_SEND_HEARTBEAT)
            kc_group_counters(g->grp)->hb_errors++;
        if (kind == KC_CLASSIC_DESCRIBE) /* the error goes out without the group's side */
            kc_classic_describe_result(&g->m, NULL, NULL);
        kc_classic_request_failed(&g->m, now);
        kc_group_drive(g->grp);
        return;
    }
    kc_rbuf_t r = kc_rbuf(frame->data + body_off, frame->len - body_off);
    kc_arena_t a = {0};
    kc_error_t e;
    kc_err_t drc = KC_OK;
    switch (kind) {
    case KC_CLASSIC_SEND_JOIN: {
        kc_join_group_response_t m;
        if ((drc = kc_join_group_response_decode(&m, version, &r, &a, &e)) == KC_OK)
            kc_classic_join_response(&g->m, &m, now);
        break;
    }
    case KC_CLASSIC_SEND_SYNC: {
        kc_sync_group_response_t m;
        if ((drc = kc_sync_group_response_decode(&m, version, &r, &a, &e)) == KC_OK)
            kc_classic_sync_response(&g->m, &m, now);
        break;
    }
    case KC_CLASSIC_SEND_HEARTBEAT: {
        kc_heartbeat_response_t m;
        if ((drc = kc_heartbeat_response_decode(&m, version, &r, &a, &e)) == KC_OK) {
            kc_group_counters(g->grp)->heartbeats++;
            kc_group_counters(g->grp)->hb_errors += m.error_code != 0;
            kc_classic_heartbeat_response(&g->m, m.error_code, now);
        }
        break;
    }
    case KC_CLASSIC_SEND_LEAVE: {
        kc_leave_group_response_t m;
        if ((drc = kc_leave_group_response_decode(&m, version, &r, &a, &e)) == KC_OK)
            kc_classic_leave_response(&g->m, m.error_code, now);
        break;
    }
    case KC_CLASSIC_DESCRIBE: {
        kc_describe_groups_response_t m;
        if ((drc = kc_describe_groups_response_decode(&m, version, &r, &a, &e)) == KC_OK)
            describe_done(g, &m);
        break;
    }
    default:
        break;
    }
    if (drc == KC_OK && (kind == KC_CLASSIC_SEND_HEARTBEAT || kind == KC_CLASSIC_SEND_SYNC) &&
        g->m.last_heartbeat_ok_ms != ok_before)
        kc_group_session_answered(g->grp, sent);
    if (drc != KC_OK && kind >= KC_CLASSIC_SEND_JOIN && kind <= KC_CLASSIC_DESCRIBE)
        bad_answer(g, conn, kind, version, NULL, &e);
    if (drc != KC_OK && kind == KC_CLASSIC_DESCRIBE)
        kc_classic_describe_result(&g->m, NULL, NULL);
    else if (drc != KC_OK)
        kc_classic_request_failed(&g->m, now);
    kc_arena_free(&a);
    kc_buf_unref(frame);
    kc_group_drive(g->grp);
}

void kc_classic_io_send_group(kc_classic_io_t *g, const kc_classic_out_t *o, int64_t now)
{
    const int16_t *key = kind_key;
    static const int16_t lo[] = {[KC_CLASSIC_SEND_JOIN] = 2,
                                 [KC_CLASSIC_SEND_SYNC] = 0,
                                 [KC_CLASSIC_SEND_HEARTBEAT] = 0,
                                 [KC_CLASSIC_SEND_LEAVE] = 0,
                                 [KC_CLASSIC_DESCRIBE] = 0};
    static const int16_t hi[] = {[KC_CLASSIC_SEND_JOIN] = 9,
                                 [KC_CLASSIC_SEND_SYNC] = 5,
                                 [KC_CLASSIC_SEND_HEARTBEAT] = 4,
                                 [KC_CLASSIC_SEND_LEAVE] = 5,
                                 [KC_CLASSIC_DESCRIBE] = 6};
    int k = o->kind;
    bool describe = k == KC_CLASSIC_DESCRIBE;
    if (!g->conn || kc_conn_state(g->conn) != KC_CONN_READY || (describe && g->req_kind)) {
        if (describe) /* a fatal error is never held back for its text */
            kc_classic_describe_result(&g->m, NULL, NULL);
        else
            kc_classic_coordinator_lost(&g->m, now);
        return;
    }
    int v = kc_conn_pick_version(g->conn, key[k], lo[k], hi[k]);
    kc_error_t e;
    if (describe && v < 0) {
        kc_classic_describe_result(&g->m, NULL, NULL);
        return;
    }
    if (v < 0) {
        kc_wire_version_refusal(&e, kc_conn_peer(g->conn), kc_conn_api_ranges(g->conn), key[k],
                                lo[k], hi[k]);
        refused(g, &e);
        return;
    }
    if (k == KC_CLASSIC_SEND_JOIN && g->conf->group_instance_id && v < 5) {
        kc_fail(&e, KC_ERR_UNSUPPORTED,
                "group %s: the coordinator speaks JoinGroup v%d at most, before static "
                "membership (v5): group.instance.id cannot be used with it",
                g->conf->group_id, v);
        kc_group_report(g->grp, &e, true);
        return;
    }
    g->req.len = 0;
    kc_err_t rc;
    switch (k) {
    case KC_CLASSIC_SEND_JOIN:
        rc = kc_join_group_request_encode(&o->req.join, (int16_t)v, &g->req, &e);
        break;
    case KC_CLASSIC_SEND_SYNC:
        rc = kc_sync_group_request_encode(&o->req.sync, (int16_t)v, &g->req, &e);
        break;
    case KC_CLASSIC_SEND_HEARTBEAT:
        rc = kc_heartbeat_request_encode(&o->req.heartbeat, (int16_t)v, &g->req, &e);
        break;
    case KC_CLASSIC_DESCRIBE: {
        kc_describe_groups_request_t d;
        kc_describe_groups_request_init(&d);
        kc_str_t id = kc_str(g->conf->group_id);
        d.groups.count = 1;
        d.groups.items = &id;
        rc = kc_describe_groups_request_encode(&d, (int16_t)v, &g->req, &e);
        break;
    }
    default:
        rc = kc_leave_group_request_encode(&o->req.leave, (int16_t)v, &g->req, &e);
        break;
    }
    kc_conn_req_spec_t s = {key[k], (int16_t)v, (int16_t)v, req_encode, req_done, g};
    if (rc == KC_OK)
        rc = kc_conn_send(g->conn, &s, &e);
    if (rc != KC_OK) {
        if (describe)
            kc_classic_describe_result(&g->m, NULL, NULL);
        else
            kc_classic_request_failed(&g->m, now);
        return;
    }
    g->req_kind = k;
    g->req_sent_ms = now;
}
