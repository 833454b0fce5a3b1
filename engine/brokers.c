/*
 * The broker table: one entry per broker id named by metadata, each with its own data
 * connection (io/conn), started on first use and kept for the engine's life. A broker whose
 * address changes gets a new connection (the old one closes); the entry itself is never freed
 * before the engine, because response callbacks carry a pointer to it.
 *
 * Owner: network thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "engine_int.h"

kc_eng_broker_t *kc_eng_broker_get(kc_engine_t *e, int32_t id)
{
    for (size_t i = 0; i < e->n_brokers; i++)
        if (e->brokers[i]->id == id)
            return e->brokers[i];
    return NULL;
}

/* A connection that failed for good (TLS refused, SASL login refused: kc_conn does not retry
 * those, as retrying a wrong password only locks accounts) is the caller's to hear about: a
 * consumer with bad credentials would otherwise just never receive anything. */
static void conn_state(kc_conn_t *conn, kc_conn_state_t st, const kc_error_t *why, void *opaque)
{
    (void)conn;
    kc_engine_t *e = opaque;
    if (st == KC_CONN_FAILED && why && e->sink.error)
        e->sink.error(e->sink.opaque, NULL, NULL, -1, why);
}

static void conn_idle_closed(kc_conn_t *conn, void *opaque)
{
    (void)conn;
    kc_engine_t *e = opaque;
    e->stats.idle_closes++;
}

kc_conn_t *kc_eng_conn_open(kc_engine_t *e, const char *servers)
{
    kc_conn_opts_t o = {0};
    o.on_state = conn_state;
    o.state_opaque = e;
    o.servers = servers;
    o.client_id = e->client_id;
    o.connect_timeout_ms = e->conf.connect_timeout_ms;
    o.request_timeout_ms = e->conf.request_timeout_ms;
    o.reconnect_backoff_ms = e->conf.reconnect_backoff_ms;
    o.reconnect_backoff_max_ms = e->conf.reconnect_backoff_max_ms;
    o.keepalive = e->conf.keepalive;
    o.idle_timeout_ms = e->conf.idle_timeout_ms;
    o.on_idle_close = conn_idle_closed;
    /* Canonical names are for bootstrap.servers only: brokers are named by the cluster. */
    o.canonical_names = e->conf.dns_canonical_bootstrap && servers == e->bootstrap;
    kc_conn_t *c = NULL;
    kc_error_t err;
    if (kc_conn_security_apply(e->conf.security, &o, &err) != KC_OK) {
        kc_log(KC_LOG_ERROR, "engine", "connection to %s: %s", servers, err.msg);
        return NULL;
    }
    if (kc_conn_new(&c, e->loop, &o, &err) != KC_OK) {
        kc_conn_security_discard(&o);
        kc_log(KC_LOG_ERROR, "engine", "connection to %s: %s", servers, err.msg);
        return NULL;
    }
    kc_conn_start(c);
    return c;
}

/* Closes the broker's data connection. Its connects and reauths stay in the broker's totals (the
 * stats and the telemetry counters only grow), which count the connections it had before the
 * one it has now. */
static void broker_drop_conn(kc_eng_broker_t *b)
{
    if (!b->conn)
        return;
    kc_conn_t *c = b->conn;
    kc_conn_stats_t cs;
    kc_conn_get_stats(c, &cs);
    b->st.connects += cs.connects;
    b->st.reauths += cs.reauths;
    b->conn = NULL;
    kc_conn_close(c);
}

int kc_eng_broker_update(kc_engine_t *e, int32_t id, const char *host, int32_t port)
{
    char addr[sizeof e->brokers[0]->addr];
    if (strchr(host, ':'))
        snprintf(addr, sizeof addr, "[%s]:%d", host, port);
    else
        snprintf(addr, sizeof addr, "%s:%d", host, port);
    kc_eng_broker_t *b = kc_eng_broker_get(e, id);
    if (!b) {
        if (e->n_brokers == e->cap_brokers) {
            size_t cap = e->cap_brokers ? e->cap_brokers * 2 : 8;
            kc_eng_broker_t **nb = realloc(e->brokers, cap * sizeof *nb);
            if (!nb)
                return 0;
            e->brokers = nb;
            e->cap_brokers = cap;
        }
        b = calloc(1, sizeof *b);
        if (!b)
            return 0;
        b->e = e;
        b->id = id;
        b->st.broker_id = id;
        snprintf(b->addr, sizeof b->addr, "%s", addr);
        e->brokers[e->n_brokers++] = b;
        b->in_metadata = 1;
        return 0;
    }
    b->in_metadata = 1;
    if (strcmp(b->addr, addr) == 0)
        return 0;
    /* A broker that moved: requests on the old connection fail (KC_ERR_CLOSED) and are
     * retried by their owners on the new one. */
    if (b->addr[0])
        kc_log(KC_LOG_INFO, "engine", "broker %d moved %s -> %s", id, b->addr, addr);
    else /* forgotten by a rebootstrap */
        kc_log(KC_LOG_INFO, "engine", "broker %d at %s", id, addr);
    snprintf(b->addr, sizeof b->addr, "%s", addr);
    broker_drop_conn(b);
    return 1;
}

kc_conn_t *kc_eng_broker_conn(kc_engine_t *e, int32_t id)
{
    kc_eng_broker_t *b = kc_eng_broker_get(e, id);
    if (!b || e->closed || !b->addr[0]) /* no address: forgotten by a rebootstrap */
        return NULL;
    if (!b->conn)
        b->conn = kc_eng_conn_open(e, b->addr);
    return b->conn;
}

const char *kc_engine_conn_state_name(int have_conn, kc_conn_state_t st, int failures)
{
    if (!have_conn)
        return "idle";
    switch (st) {
    case KC_CONN_DOWN:
        return failures > 0 ? "backoff" : "down";
    case KC_CONN_CONNECTING:
        return "connecting";
    case KC_CONN_SECURING:
        return "tls";
    case KC_CONN_HANDSHAKE:
        return "apiversions";
    case KC_CONN_AUTH:
        return "auth";
    case KC_CONN_READY:
        return "up";
    case KC_CONN_RESETTING:
        return "down";
    case KC_CONN_FAILED:
        return "failed";
    }
    return "down";
}

/* Forgets every named broker (its address and connection; the entry stays, response callbacks
 * point at it) and the bootstrap connection, so that the next metadata question resolves
 * bootstrap.servers again and asks there. Runs from t_rebootstrap: closing a connection from
 * inside one of its own callbacks is not allowed (io/conn.h). */
static void on_rebootstrap(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    kc_engine_t *e = t->opaque;
    if (e->closing)
        return;
    kc_log(KC_LOG_WARN, "engine", "rebootstrap: %s; forgetting %zu broker(s), back to %s",
           e->rebootstrap_why, e->n_brokers, e->bootstrap);
    /* Closing fails the requests on those connections, and their callbacks drive the engine:
     * every address is gone before the first close, and no connection is handed out until the
     * last (rebootstrapping), so nothing is sent on a connection about to close. */
    e->rebootstrapping = 1;
    for (size_t i = 0; i < e->n_brokers; i++) {
        e->brokers[i]->addr[0] = '\0';
        e->brokers[i]->in_metadata = 0;
    }
    for (size_t i = 0; i < e->n_brokers; i++) {
        broker_drop_conn(e->brokers[i]);
    }
    if (e->bootstrap_conn) {
        kc_conn_t *c = e->bootstrap_conn;
        e->bootstrap_conn = NULL;
        kc_conn_close(c);
    }
    e->rebootstrapping = 0;
    kc_mdr_rebootstrapped(&e->mdr);
    e->stats.rebootstraps++;
    e->md_wanted = 1;
    e->md_retry_ms = 0;
    kc_eng_drive(e);
}

void kc_eng_brokers_init(kc_engine_t *e)
{
    e->t_rebootstrap = (kc_loop_timer_t){.cb = on_rebootstrap, .opaque = e};
}

void kc_eng_rebootstrap_required(kc_engine_t *e)
{
    if (kc_mdr_on_required(&e->mdr))
        return; /* kc_eng_any_conn starts it */
    kc_log(KC_LOG_WARN, "engine",
           "a broker answered REBOOTSTRAP_REQUIRED; metadata.recovery.strategy=none keeps "
           "asking the brokers it knows");
}

kc_conn_t *kc_eng_any_conn(kc_engine_t *e)
{
    if (e->rebootstrapping)
        return NULL;
    kc_conn_t *ready = NULL;
    for (size_t i = 0; i < e->n_brokers && !ready; i++) {
        kc_conn_t *c = e->brokers[i]->conn;
        if (c && e->brokers[i]->addr[0] && kc_conn_state(c) == KC_CONN_READY)
            ready = c;
    }
    int64_t now = kc_now_ms();
    switch (kc_mdr_choose(&e->mdr, ready != NULL, now)) {
    case KC_MDR_USE_BOOTSTRAP:
        if (!e->bootstrap_conn)
            e->bootstrap_conn = kc_eng_conn_open(e, e->bootstrap);
        return e->bootstrap_conn;
    case KC_MDR_REBOOTSTRAP:
        if (!kc_loop_timer_armed(&e->t_rebootstrap)) {
            e->rebootstrap_why = e->mdr.required ? "a broker answered REBOOTSTRAP_REQUIRED"
                                                 : "no known broker reachable for "
                                                   "metadata.recovery.rebootstrap.trigger.ms";
            kc_loop_timer_start(e->loop, &e->t_rebootstrap, 0);
        }
        return NULL;
    case KC_MDR_USE_BROKERS:
        break;
    }
    if (ready)
        return ready;
    if (kc_mdr_stranded(&e->mdr, now)) {
        kc_error_t why;
        kc_fail(&why, KC_ERR_TRANSPORT,
                "no broker of the last metadata reachable for %lld ms; "
                "metadata.recovery.strategy=none does not go back to bootstrap.servers (%s)",
                (long long)e->mdr.trigger_ms, e->bootstrap);
        kc_log(KC_LOG_WARN, "engine", "%s", why.msg);
        if (e->sink.error)
            e->sink.error(e->sink.opaque, NULL, NULL, -1, &why);
    }
    /* None READY: the named brokers in turn, so a dead one does not hold every question. */
    for (size_t k = 0; k < e->n_brokers; k++) {
        kc_eng_broker_t *b = e->brokers[e->md_rr++ % e->n_brokers];
        if (b->in_metadata && b->addr[0])
            return kc_eng_broker_conn(e, b->id);
    }
    return NULL;
}

kc_conn_t *kc_eng_ready_conn(kc_engine_t *e)
{
    for (size_t i = 0; i < e->n_brokers; i++) {
        kc_conn_t *c = e->brokers[i]->conn;
        if (c && e->brokers[i]->in_metadata && kc_conn_state(c) == KC_CONN_READY)
            return c;
    }
    if (e->bootstrap_conn && kc_conn_state(e->bootstrap_conn) == KC_CONN_READY)
        return e->bootstrap_conn;
    return NULL;
}

void kc_eng_brokers_free(kc_engine_t *e)
{
    kc_loop_timer_stop(e->loop, &e->t_rebootstrap);
    if (e->bootstrap_conn) {
        kc_conn_t *c = e->bootstrap_conn;
        e->bootstrap_conn = NULL;
        kc_conn_close(c);
    }
    for (size_t i = 0; i < e->n_brokers; i++) {
        broker_drop_conn(e->brokers[i]);
    }
    for (size_t i = 0; i < e->n_brokers; i++) {
        kc_arena_free(&e->brokers[i]->fetch_arena);
        free(e->brokers[i]);
    }
    free(e->brokers);
    e->brokers = NULL;
    e->n_brokers = e->cap_brokers = 0;
}
