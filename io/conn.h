/*
 * A broker connection. Owner: the network thread that owns its loop; every function here runs
 * there, and every callback is called there.
 *
 * Lifecycle: kc_conn_new() then kc_conn_start(): resolve `servers` (each "host:port", IPv4/IPv6,
 * "[v6]:port") on the loop's resolver thread (io/resolver.h; the answer comes back through the
 * loop's command queue, a close cancels it), connect (connect_timeout_ms), ApiVersions handshake,
 * the optional auth hook, READY. Any failure resets: in-flight requests fail with KC_ERR_TRANSPORT
 * (retriable; the caller decides), the socket closes once the loop has returned every op, and the
 * next address is tried after kc_backoff_ms(reconnect.backoff.ms, reconnect.backoff.max.ms).
 * The addresses are every address of every host in `servers`, in order (Java's
 * client.dns.lookup=use_all_dns_ips): a host whose first address refuses is reached on its
 * next one; after the last, the next attempt resolves `servers` again.
 * Requests sent while not READY wait for READY or their request timeout, whichever comes first;
 * but once the connection has been READY, a pass over its addresses that fails (the broker
 * died) fails the waiting requests at once with KC_ERR_TRANSPORT. Nothing waits forever.
 *
 * Transport hook (TLS): with opts.transport_new NULL, bytes go straight between the socket and
 * the frame buffers. Otherwise, after each TCP connect, transport_new() makes a transport (the
 * TLS module over memory BIOs fits kc_conn_transport_vt one to one): ciphertext is received into
 * a 64 KiB buffer and fed to it, plaintext is read from it into the staging buffer and straight
 * into exact-size frame buffers, and requests are written through it. Its handshake runs before
 * ApiVersions, under connect_timeout_ms; a handshake failure is final like an auth failure.
 */
#ifndef KC_IO_CONN_H
#define KC_IO_CONN_H

#include "base/buf.h"
#include "base/err.h"
#include "conn_wire.h"
#include "loop.h"

typedef struct kc_conn kc_conn_t;

typedef enum kc_conn_state {
    KC_CONN_DOWN = 0, /* not started, or waiting out a backoff */
    KC_CONN_CONNECTING,
    KC_CONN_SECURING,  /* transport (TLS) handshake */
    KC_CONN_HANDSHAKE, /* ApiVersions in flight */
    KC_CONN_AUTH,      /* the auth hook is running (SASL) */
    KC_CONN_READY,
    KC_CONN_RESETTING, /* waiting for the loop to return the socket's ops */
    KC_CONN_FAILED,    /* TLS or auth failed: no reconnects until kc_conn_start() */
} kc_conn_state_t;

/* The response callback. On KC_OK, `frame` is the whole response (header included) with one
 * reference that the callback now owns (kc_buf_unref it, or keep slices); the body starts at
 * frame->data + body_off. On error frame is NULL. Called exactly once per accepted request. */
typedef void (*kc_conn_resp_cb)(kc_conn_t *conn, kc_err_t err, kc_buf_t *frame, size_t body_off,
                                int16_t version, void *opaque);
/* Appends the request body for `version` to `out`. */
typedef kc_err_t (*kc_conn_encode_fn)(kc_wbuf_t *out, int16_t version, void *opaque);

typedef struct kc_conn_req_spec {
    int16_t api_key;
    int16_t min_version, max_version; /* what we can speak; intersected with the broker's range */
    kc_conn_encode_fn encode;
    kc_conn_resp_cb cb;
    void *opaque;
} kc_conn_req_spec_t;

/* A byte transport between the connection and the socket (TLS). Every call on the network
 * thread. Results: KC_OK, KC_ERR_AGAIN (needs more input from the peer), KC_ERR_CLOSED (read:
 * the peer closed the session), anything else is final for this connection. */
typedef struct kc_conn_transport_vt {
    kc_err_t (*handshake)(void *t, kc_error_t *err);
    kc_err_t (*write)(void *t, const void *data, size_t len, kc_error_t *err); /* copies */
    /* Bytes waiting to go to the socket; *data stays valid until consumed, even across writes. */
    size_t (*out_peek)(void *t, const uint8_t **data);
    void (*out_consume)(void *t, size_t n);
    kc_err_t (*feed)(void *t, const uint8_t *data, size_t len, kc_error_t *err); /* copies */
    kc_err_t (*read)(void *t, void *buf, size_t cap, size_t *n, kc_error_t *err);
    void (*free)(void *t);
    /* Optional (NULL: none): queue the goodbye (TLS close_notify) into the output. Called once,
     * by kc_conn_close() on a secured connection; nothing is written after it. */
    kc_err_t (*shutdown)(void *t, kc_error_t *err);
} kc_conn_transport_vt;

typedef kc_err_t (*kc_conn_transport_new_fn)(void *opaque, const char *host,
                                             const kc_conn_transport_vt **vt, void **t,
                                             kc_error_t *err);

typedef struct kc_conn_opts {
    const char *servers; /* "host:port[,host:port...]" */
    const char *client_id;
    int connect_timeout_ms;       /* socket.connection.setup.timeout.ms, default 10000 */
    int request_timeout_ms;       /* request.timeout.ms, default 30000 */
    int reconnect_backoff_ms;     /* default 50 */
    int reconnect_backoff_max_ms; /* default 1000 */
    size_t max_frame;             /* receive.message.max.bytes + slack, default 100 MiB */
    int keepalive;                /* socket.keepalive.enable: SO_KEEPALIVE on each socket */
    /* client.dns.lookup=resolve_canonical_bootstrap_servers_only, set on bootstrap connections
     * only: `servers` are replaced by their canonical names at each resolution
     * (KC_ADDR_CANONICAL, io/conn_addr.h). Every address of a name is tried in turn either way. */
    int canonical_names;
    /* connections.max.idle.ms: a READY connection with nothing in flight or queued and no
     * request sent or answer received for this long is closed (DOWN, no failure counted, no
     * backoff) and opened again by the next kc_conn_send. 0 = never. */
    int idle_timeout_ms;
    /* Called on each such close (stats). Optional; gets state_opaque. */
    void (*on_idle_close)(kc_conn_t *conn, void *opaque);
    /* Auth step (SASL), run after ApiVersions: may send with kc_conn_send_internal(), must end
     * with kc_conn_auth_done(). NULL = none. */
    void (*authenticate)(kc_conn_t *conn, void *opaque);
    void *auth_opaque;
    /* Frees auth_opaque when the connection is freed (it holds per-connection exchange state,
     * e.g. kc_conn_sasl_t). NULL: the caller owns it and frees it after the connection. */
    void (*auth_free)(void *opaque);
    /* Optional: a number that changes when the credentials the hook presents change (a new
     * OAUTHBEARER token). A connection whose authentication failed starts over once this
     * differs from its value at the failure, seen within a second (a timer) or at the next
     * kc_conn_send: a token refreshed after the broker refused an expired one is worth one more
     * try, while a password that was refused (no such hook) is never tried again. Network
     * thread. */
    uint64_t (*auth_generation)(void *opaque);
    /* Transport per TCP connection (TLS); NULL = plaintext. `host` is the configured host name
     * or IP literal (for SNI and certificate checks). */
    kc_conn_transport_new_fn transport_new;
    void *transport_opaque;
    /* State changes (READY, DOWN with the reason). Optional. */
    void (*on_state)(kc_conn_t *conn, kc_conn_state_t st, const kc_error_t *why, void *opaque);
    void *state_opaque;
} kc_conn_opts_t;

typedef struct kc_conn_stats {
    uint64_t connects, resets, requests, responses, bytes_in, bytes_out, frames_staged,
        frames_direct, reauths, idle_closes;
} kc_conn_stats_t;

#define KC_CONN_GOODBYE_MS 200

kc_err_t kc_conn_new(kc_conn_t **out, kc_loop_t *loop, const kc_conn_opts_t *opts, kc_error_t *err);
void kc_conn_start(kc_conn_t *conn);
/* Fails every request with KC_ERR_CLOSED and frees the connection once the loop has returned its
 * ops (keep running the loop). With a secured transport (TLS) it first sends the transport's
 * goodbye (close_notify), best effort: at most KC_CONN_GOODBYE_MS, then the socket is shut down
 * either way. Do not call from inside this connection's callbacks. */
void kc_conn_close(kc_conn_t *conn);

/* Queues a request. KC_OK: spec->cb will be called exactly once. Otherwise no callback. */
kc_err_t kc_conn_send(kc_conn_t *conn, const kc_conn_req_spec_t *spec, kc_error_t *err);
/* For the auth hook: sends even though the connection is not READY. An auth failure passed to
 * kc_conn_auth_done() is final: queued requests fail with it, the connection goes to
 * KC_CONN_FAILED and does not reconnect (retrying a wrong password only locks accounts), and
 * kc_conn_send() returns it until kc_conn_start() is called again, or until the credentials
 * changed (opts.auth_generation). */
kc_err_t kc_conn_send_internal(kc_conn_t *conn, const kc_conn_req_spec_t *spec, kc_error_t *err);
void kc_conn_auth_done(kc_conn_t *conn, const kc_error_t *result);
/* KIP-368, for the auth hook: run the hook again on this live connection in `delay_ms` (at least
 * 1000: brokers refuse a re-authentication sooner than 1 s after the previous one). While the
 * hook runs again the connection stays READY and requests already in flight keep going, but
 * new kc_conn_send() requests wait in the pending queue until kc_conn_auth_done(): a broker
 * reads everything after a SaslHandshake as part of the exchange, so nothing else may be
 * interleaved. Success counts in stats.reauths; failure is final like a first auth failure.
 * The timer dies with the socket (any reset); a new connection authenticates from scratch. */
void kc_conn_schedule_reauth(kc_conn_t *conn, int64_t delay_ms);
/* True while a re-authentication exchange runs (the hook is called again for it). */
int kc_conn_reauthenticating(const kc_conn_t *conn);
/* Forces a reset (as on a protocol error). */
void kc_conn_reset(kc_conn_t *conn, kc_err_t code, const char *why);

kc_conn_state_t kc_conn_state(const kc_conn_t *conn);
/* Why the connection itself failed the last request it failed: KC_ERR_UNSUPPORTED, no version
 * both sides speak (kc_conn_send() returns the same text in its error), or KC_ERR_MALFORMED, its
 * answer's header did not decode (kc_wire_bad_answer: the API, version and broker). A callback
 * gets only the code, so it reads the reason here (it is current there: nothing else is sent or
 * failed between the failure and the callback). */
const kc_error_t *kc_conn_refusal(const kc_conn_t *conn);
/* Highest version both sides speak within [min,max], or -1. Needs a completed handshake. */
int kc_conn_pick_version(const kc_conn_t *conn, int16_t api_key, int16_t min, int16_t max);
const kc_api_ranges_t *kc_conn_api_ranges(const kc_conn_t *conn);
void kc_conn_get_stats(const kc_conn_t *conn, kc_conn_stats_t *out);
/* The address in use ("host:port"), or "" when not connected. */
const char *kc_conn_peer(const kc_conn_t *conn);
/* The host of the address in use as configured (a name, not what it resolved to: Kerberos
 * service names and TLS server names are built from it), or "" when not connected. */
const char *kc_conn_host(const kc_conn_t *conn);
/* The loop the connection lives on (for an auth hook that hands work to its offload thread). */
kc_loop_t *kc_conn_loop(const kc_conn_t *conn);
int kc_conn_failures(const kc_conn_t *conn);
/* The delay (ms) chosen for the current backoff, for tests. */
int64_t kc_conn_last_backoff_ms(const kc_conn_t *conn);

#endif
