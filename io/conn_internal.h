/*
 * Internals shared by conn.c (lifecycle, requests, handshake) and conn_io.c (bytes: sending,
 * framing, the transport hook). Owner of everything here: the network thread.
 */
#ifndef KC_IO_CONN_INTERNAL_H
#define KC_IO_CONN_INTERNAL_H

#include "conn.h"
#include "conn_addr.h"
#include "resolver.h"

#define STAGE_CAP (64 * 1024)
#define REQ_SPARE 4
#define MAX_ADDRS 32

typedef struct req {
    struct req *next;
    kc_conn_req_spec_t spec;
    int16_t version;
    int32_t corr;
    int req_hdr, resp_hdr;
    int64_t deadline_ns;
} req_t;

typedef struct req_q {
    req_t *head, *tail;
} req_q;

struct kc_conn {
    kc_loop_t *loop;
    kc_conn_opts_t o;
    char *servers, *client_id;
    kc_conn_state_t state;
    int closing;
    int auth_failed;        /* the reset in progress ends in FAILED, not in a backoff */
    int reauth;             /* KIP-368 re-authentication running on this READY connection */
    int idling;             /* the reset in progress is an idle close: it ends DOWN, parked */
    int parked;             /* DOWN after an idle close: the next request opens it again */
    int64_t last_active_ns; /* last request dispatched or answer delivered */
    kc_error_t fail_err;    /* why we are FAILED */
    bool auth_gen_set;      /* FAILED by an authentication refusal under credentials auth_gen */
    uint64_t auth_gen;
    int fd;
    kc_addr_t addrs[MAX_ADDRS];
    int naddrs, next_addr, cur_addr;
    kc_resolve_job_t *resolving; /* a lookup of `servers` on the loop's resolver thread */
    int failures;
    int was_ready; /* READY at least once: the broker existed, so a failed pass means it died */
    int64_t last_backoff;
    uint64_t rng;
    int16_t av_version; /* ApiVersions version being tried */
    kc_api_ranges_t ranges;
    kc_error_t refusal; /* why the last request this connection failed itself failed */
    int32_t next_corr;
    req_q pending;  /* accepted while not READY: not yet encoded */
    req_q inflight; /* encoded (in `out`, `sending`, or on the wire), awaiting answers */
    /* Finished requests kept for the next ones (req_put / submit), at most REQ_SPARE: a steady
     * fetch loop sends one request per answer, so it needs no allocation per request. */
    req_t *spare;
    int n_spare;
    kc_wbuf_t out, sending;
    uint8_t *stage;
    size_t stage_off, stage_len;
    kc_buf_t *rx_frame; /* frame being completed (recv_exact, or transport reads) */
    /* Transport (TLS): NULL vt = plaintext, bytes go straight between socket and buffers. */
    const kc_conn_transport_vt *tvt;
    void *tr;
    int secured;   /* transport handshake done */
    int goodbye;   /* closing: the transport's close_notify is being sent (t_close bounds it) */
    uint8_t *cbuf; /* transport mode: ciphertext receive buffer (STAGE_CAP) */
    kc_loop_op_t op_connect, op_send, op_recv;
    kc_loop_timer_t t_connect, t_backoff, t_request, t_reauth, t_close, t_idle;
    kc_loop_timer_t t_cred; /* FAILED by an authentication refusal: have the credentials changed? */
    kc_conn_stats_t st;
};

/* conn.c */
int kc_conn_deliver(kc_conn_t *c, kc_buf_t *frame); /* 0: the connection was reset */
void kc_conn_finish_reset(kc_conn_t *c);
void kc_conn_secured(kc_conn_t *c); /* transport handshake done: ApiVersions */
void kc_conn_fail_final(kc_conn_t *c, const kc_error_t *why); /* TLS/auth: no reconnect */

/* conn_io.c */
void kc_conn_io_start(kc_conn_t *c); /* after connect: transport handshake or first recv */
void kc_conn_io_flush(kc_conn_t *c);
int kc_conn_io_goodbye(kc_conn_t *c); /* 1: close_notify is on its way, the reset follows */
void kc_conn_io_on_send(kc_loop_t *loop, kc_loop_op_t *op, int res);
void kc_conn_io_on_recv(kc_loop_t *loop, kc_loop_op_t *op, int res);

#endif
