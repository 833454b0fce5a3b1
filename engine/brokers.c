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
    kc_log(KC_LOG_INFO, "engine", "broker %d moved %s -> %s", id, b->addr, addr);
    snprintf(b->addr, sizeof b->addr, "%s", addr);
    if (b->conn) {
        kc_conn_t *old = b->conn;
        b->conn = NULL;
        kc_conn_close(old);
    }
    return 1;
}

kc_conn_t *kc_eng_broker_conn(kc_engine_t *e, int32_t id)
{
    kc_eng_broker_t *b = kc_eng_broker_get(e, id);
    if (!b || e->closed)
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

kc_conn_t *kc_eng_any_conn(kc_engine_t *e)
{
    for (size_t i = 0; i < e->n_brokers; i++) {
        kc_conn_t *c = e->brokers[i]->conn;
        if (c && kc_conn_state(c) == KC_CONN_READY)
            return c;
    }
    if (!e->bootstrap_conn)
        e->bootstrap_conn = kc_eng_conn_open(e, e->bootstrap);
    return e->bootstrap_conn;
}

void kc_eng_brokers_free(kc_engine_t *e)
{
    if (e->bootstrap_conn) {
        kc_conn_t *c = e->bootstrap_conn;
        e->bootstrap_conn = NULL;
        kc_conn_close(c);
    }
    for (size_t i = 0; i < e->n_brokers; i++) {
        kc_eng_broker_t *b = e->brokers[i];
        if (b->conn) {
            kc_conn_t *c = b->conn;
            b->conn = NULL;
            kc_conn_close(c);
        }
    }
    for (size_t i = 0; i < e->n_brokers; i++) {
        kc_arena_free(&e->brokers[i]->fetch_arena);
        free(e->brokers[i]);
    }
    free(e->brokers);
    e->brokers = NULL;
    e->n_brokers = e->cap_brokers = 0;
}
