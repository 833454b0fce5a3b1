/*
 * Broker connection: connect, handshake, framing, pipelining, timeouts, reset and reconnect.
 * Owner: the network thread (the loop's owner). Nothing here is touched by another thread.
 *
 * Framing: responses land in a 64 KiB staging buffer. A frame that is wholly
 * staged is copied once into a kc_buf_t of exactly its size; a frame that is not gets an
 * exact-size kc_buf_t, the staged prefix is copied, and the rest is received straight into it
 * with one recv_exact (MSG_WAITALL), so a many-MiB Fetch response is never reassembled.
 *
 * Pipelining: requests are encoded into `out` in submission order and get increasing
 * correlation ids; the broker answers in order per connection, so a response must match the
 * head of `inflight` — anything else is a protocol error and resets the connection.
 * Timeouts: all requests share request_timeout_ms, so the oldest request has the earliest
 * deadline and one timer on the head of the queues covers them all.
 */
#include "conn_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backoff.h"
#include "base/clock.h"
#include "base/log.h"
#include "conn_addr.h"
#include "proto/kafka_errors.h"

static void connect_next(kc_conn_t *c);
static void arm_request_timer(kc_conn_t *c);

static void q_push(req_q *q, req_t *r)
{
    r->next = NULL;
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
}

static req_t *q_pop(req_q *q)
{
    req_t *r = q->head;
    if (r) {
        q->head = r->next;
        if (!q->head)
            q->tail = NULL;
    }
    return r;
}

/* A finished request: kept for the next submit, or freed. */
static void req_put(kc_conn_t *c, req_t *r)
{
    if (c->n_spare >= REQ_SPARE) {
        free(r);
        return;
    }
    r->next = c->spare;
    c->spare = r;
    c->n_spare++;
}

static req_t *req_get(kc_conn_t *c)
{
    req_t *r = c->spare;
    if (!r)
        return calloc(1, sizeof *r);
    c->spare = r->next;
    c->n_spare--;
    memset(r, 0, sizeof *r);
    return r;
}

static void fail_req(kc_conn_t *c, req_t *r, kc_err_t code)
{
    r->spec.cb(c, code, NULL, 0, r->version, r->spec.opaque);
    req_put(c, r);
}

static void fail_queue(kc_conn_t *c, req_q *q, kc_err_t code)
{
    /* Detach first: a callback may queue a new request on this connection. */
    req_q old = *q;
    q->head = q->tail = NULL;
    req_t *r;
    while ((r = q_pop(&old)) != NULL)
        fail_req(c, r, code);
}

static void set_state(kc_conn_t *c, kc_conn_state_t st, const kc_error_t *why)
{
    c->state = st;
    if (c->o.on_state && !c->closing)
        c->o.on_state(c, st, why, c->o.state_opaque);
}

static int ops_pending(const kc_conn_t *c)
{
    return c->op_connect.pending || c->op_send.pending || c->op_recv.pending;
}

/* The socket's ops are all back: close it, then free (closing) or back off and retry. */
void kc_conn_finish_reset(kc_conn_t *c)
{
    if (ops_pending(c))
        return;
    if (c->rx_frame) {
        kc_buf_unref(c->rx_frame);
        c->rx_frame = NULL;
    }
    if (c->fd >= 0) {
        kc_loop_close(c->loop, c->fd);
        c->fd = -1;
    }
    if (c->tr) { /* only now: a send op may have pointed into its output */
        c->tvt->free(c->tr);
        c->tr = NULL;
        c->tvt = NULL;
    }
    c->secured = 0;
    if (c->closing) {
        if (c->resolving)
            kc_resolve_cancel(c->resolving);
        kc_loop_timer_stop(c->loop, &c->t_connect);
        kc_loop_timer_stop(c->loop, &c->t_backoff);
        kc_loop_timer_stop(c->loop, &c->t_request);
        kc_loop_timer_stop(c->loop, &c->t_reauth);
        kc_loop_timer_stop(c->loop, &c->t_close);
        kc_loop_timer_stop(c->loop, &c->t_idle);
        kc_loop_timer_stop(c->loop, &c->t_cred);
        kc_wbuf_free(&c->out);
        kc_wbuf_free(&c->sending);
        free(c->stage);
        free(c->cbuf);
        free(c->servers);
        free(c->client_id);
        while (c->spare) {
            req_t *r = c->spare;
            c->spare = r->next;
            free(r);
        }
        if (c->o.auth_free)
            c->o.auth_free(c->o.auth_opaque);
        free(c);
        return;
    }
    if (c->auth_failed) {
        kc_loop_timer_stop(c->loop, &c->t_connect);
        set_state(c, KC_CONN_FAILED, &c->fail_err);
        return;
    }
    if (c->idling) { /* closed for idleness: nothing failed, nothing to retry until asked */
        c->idling = 0;
        c->parked = 1;
        c->next_addr = c->naddrs; /* the next open resolves again, from the first address */
        set_state(c, KC_CONN_DOWN, NULL);
        return;
    }
    /* A broker that was up and no longer answers on any of its addresses is dead for now:
     * requests queued behind it learn that at once (KC_ERR_TRANSPORT, retriable) instead of
     * sitting out request.timeout.ms, so the caller can go to the new leader or coordinator.
     * A connection that never came up (start-up, broker still booting) keeps waiting: there
     * the request timeout is the right bound (conn.h). */
    if (c->was_ready && c->next_addr >= c->naddrs)
        fail_queue(c, &c->pending, KC_ERR_TRANSPORT);
    c->failures++;
    c->last_backoff = kc_backoff_ms(c->o.reconnect_backoff_ms, c->o.reconnect_backoff_max_ms,
                                    c->failures, kc_backoff_rand(&c->rng));
    set_state(c, KC_CONN_DOWN, NULL);
    kc_loop_timer_start(c->loop, &c->t_backoff, c->last_backoff);
    arm_request_timer(c);
}

void kc_conn_reset(kc_conn_t *c, kc_err_t code, const char *why)
{
    if (c->state == KC_CONN_RESETTING || c->state == KC_CONN_DOWN || c->state == KC_CONN_FAILED)
        return;
    kc_error_t e;
    kc_fail(&e, code, "%s: %s", c->cur_addr >= 0 ? c->addrs[c->cur_addr].name : "?", why);
    /* Our own close is routine (DEBUG); a connection lost otherwise is worth a line. */
    kc_log(c->closing || c->idling ? KC_LOG_DEBUG : KC_LOG_INFO, "conn", "reset: %s", e.msg);
    c->st.resets++;
    set_state(c, KC_CONN_RESETTING, &e);
    kc_loop_timer_stop(c->loop, &c->t_connect);
    kc_loop_timer_stop(c->loop, &c->t_reauth); /* the session dies with the socket */
    kc_loop_timer_stop(c->loop, &c->t_close);
    kc_loop_timer_stop(c->loop, &c->t_idle);
    c->reauth = 0;
    if (c->resolving) { /* a lookup nobody wants any more */
        kc_resolve_cancel(c->resolving);
        c->resolving = NULL;
    }
    /* shutdown() ends pending recv/send/connect in the kernel on every kernel version; the
     * cancels are for io_uring ops still waiting in poll. Their callbacks finish the reset. */
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_RDWR);
    kc_loop_cancel(c->loop, &c->op_connect);
    kc_loop_cancel(c->loop, &c->op_send);
    kc_loop_cancel(c->loop, &c->op_recv);
    c->out.len = 0;
    c->stage_off = c->stage_len = 0;
    fail_queue(c, &c->inflight, KC_ERR_TRANSPORT);
    kc_conn_finish_reset(c);
}

/* ---- requests -------------------------------------------------------------------------------- */

static kc_err_t encode(kc_conn_t *c, req_t *r, kc_error_t *err)
{
    size_t start = c->out.len;
    static const uint8_t zero[4];
    kc_err_t rc = kc_wire_append(&c->out, zero, 4); /* size, patched below */
    if (rc == KC_OK)
        rc = kc_wire_request_header(&c->out, r->spec.api_key, r->version, r->corr, c->client_id,
                                    r->req_hdr, err);
    if (rc == KC_OK && r->spec.encode)
        rc = r->spec.encode(&c->out, r->version, r->spec.opaque);
    if (rc != KC_OK) {
        c->out.len = start;
        return kc_fail(err, rc, "encoding api %d v%d failed", r->spec.api_key, r->version);
    }
    uint32_t n = (uint32_t)(c->out.len - start - 4);
    uint8_t *p = c->out.data + start;
    p[0] = (uint8_t)(n >> 24), p[1] = (uint8_t)(n >> 16), p[2] = (uint8_t)(n >> 8),
    p[3] = (uint8_t)n;
    return KC_OK;
}

/* Picks the version, encodes, and puts the request in flight. */
static kc_err_t dispatch(kc_conn_t *c, req_t *r, kc_error_t *err)
{
    int v =
        r->spec.api_key == KC_API_VERSIONS
            ? c->av_version
            : kc_conn_pick_version(c, r->spec.api_key, r->spec.min_version, r->spec.max_version);
    if (v < 0) {
        kc_wire_version_refusal(&c->refusal, c->addrs[c->cur_addr].name, &c->ranges,
                                r->spec.api_key, r->spec.min_version, r->spec.max_version);
        kc_log(KC_LOG_DEBUG, "conn", "%s", c->refusal.msg);
        return kc_fail(err, KC_ERR_UNSUPPORTED, "%s", c->refusal.msg);
    }
    r->version = (int16_t)v;
    if (kc_wire_header_versions(r->spec.api_key, r->version, &r->req_hdr, &r->resp_hdr) != KC_OK)
        return kc_fail(err, KC_ERR_UNSUPPORTED, "api %d: header version unknown", r->spec.api_key);
    r->corr = c->next_corr++;
    if (c->next_corr < 0)
        c->next_corr = 0;
    kc_err_t rc = encode(c, r, err);
    if (rc != KC_OK)
        return rc;
    q_push(&c->inflight, r);
    c->st.requests++;
    c->last_active_ns = kc_now_ns();
    kc_conn_io_flush(c);
    return KC_OK;
}

static kc_err_t submit(kc_conn_t *c, const kc_conn_req_spec_t *spec, int internal, kc_error_t *err)
{
    if (c->closing)
        return kc_fail(err, KC_ERR_CLOSED, "connection is closing");
    if (!spec->cb)
        return kc_fail(err, KC_ERR_INVALID_ARG, "request without a callback");
    if (c->state == KC_CONN_FAILED && c->auth_gen_set && c->o.auth_generation &&
        c->o.auth_generation(c->o.auth_opaque) != c->auth_gen) {
        kc_log(KC_LOG_INFO, "conn",
               "%s: new credentials since the refused authentication; "
               "connecting again",
               c->servers);
        kc_conn_start(c);
    }
    if (c->state == KC_CONN_FAILED)
        return kc_fail(err, c->fail_err.code, "%s", c->fail_err.msg);
    req_t *r = req_get(c);
    if (!r)
        return kc_fail(err, KC_ERR_NOMEM, "request: out of memory");
    r->spec = *spec;
    r->deadline_ns = kc_now_ns() + (int64_t)c->o.request_timeout_ms * 1000000LL;
    /* During a re-authentication only the exchange itself may go on the wire (conn.h,
     * kc_conn_schedule_reauth). */
    if (internal || (c->state == KC_CONN_READY && !c->reauth)) {
        kc_err_t rc = dispatch(c, r, err);
        if (rc != KC_OK) {
            req_put(c, r);
            return rc;
        }
    } else {
        q_push(&c->pending, r);
        if (c->parked && c->state == KC_CONN_DOWN) { /* closed for idleness: open it again */
            c->parked = 0;
            connect_next(c);
        }
    }
    arm_request_timer(c);
    return KC_OK;
}

kc_err_t kc_conn_send(kc_conn_t *c, const kc_conn_req_spec_t *spec, kc_error_t *err)
{
    return submit(c, spec, 0, err);
}

kc_err_t kc_conn_send_internal(kc_conn_t *c, const kc_conn_req_spec_t *spec, kc_error_t *err)
{
    return submit(c, spec, 1, err);
}

static void arm_request_timer(kc_conn_t *c)
{
    int64_t d = INT64_MAX;
    if (c->inflight.head)
        d = c->inflight.head->deadline_ns;
    if (c->pending.head && c->pending.head->deadline_ns < d)
        d = c->pending.head->deadline_ns;
    if (d == INT64_MAX) {
        kc_loop_timer_stop(c->loop, &c->t_request);
        return;
    }
    int64_t ms = (d - kc_now_ns() + 999999) / 1000000;
    kc_loop_timer_start(c->loop, &c->t_request, ms < 0 ? 0 : ms);
}

static void on_request_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    kc_conn_t *c = t->opaque;
    int64_t now = kc_now_ns();
    /* Unsent requests time out alone; no connection is involved. */
    while (c->pending.head && c->pending.head->deadline_ns <= now)
        fail_req(c, q_pop(&c->pending), KC_ERR_TIMEOUT);
    if (c->inflight.head && c->inflight.head->deadline_ns <= now) {
        /* The broker owes us this answer; the socket can no longer be trusted to deliver the
         * rest in order, so the request fails with TIMEOUT and the connection resets. */
        fail_req(c, q_pop(&c->inflight), KC_ERR_TIMEOUT);
        kc_conn_reset(c, KC_ERR_TIMEOUT, "request timed out");
    }
    arm_request_timer(c);
}

/* ---- responses ------------------------------------------------------------------------------- */

/* The frame in place of the oldest request's answer is not its answer (`why`): Kafka answers
 * in order, so that request fails with the reason (KC_ERR_MALFORMED, kc_conn_refusal naming the
 * API, version and broker: the broker offered the version, the application must hear which API
 * it cannot serve), and the others in flight with the reset, as the stream can no longer be
 * matched to requests. */
static void bad_answer(kc_conn_t *c, const char *why)
{
    req_t *r = q_pop(&c->inflight);
    kc_wire_bad_answer(&c->refusal, c->addrs[c->cur_addr].name, r->spec.api_key, r->version, why);
    fail_req(c, r, KC_ERR_MALFORMED);
    kc_conn_reset(c, KC_ERR_MALFORMED, why);
}

/* One complete response frame: match it to the oldest request and hand it over. Returns 0 when
 * the connection was reset (by a mismatch or by the callback), so the caller stops parsing. */
int kc_conn_deliver(kc_conn_t *c, kc_buf_t *frame)
{
    req_t *r = c->inflight.head;
    int32_t corr;
    size_t body_off;
    kc_error_t e;
    if (c->goodbye) { /* closing: every request has been failed; late answers are dropped */
        kc_buf_unref(frame);
        return 1;
    }
    if (!r) {
        kc_buf_unref(frame);
        kc_conn_reset(c, KC_ERR_MALFORMED, "response with no request in flight");
        return 0;
    }
    if (kc_wire_response_header(frame->data, frame->len, r->resp_hdr, &corr, &body_off, &e) !=
        KC_OK) {
        kc_buf_unref(frame);
        bad_answer(c, e.msg);
        return 0;
    }
    if (corr != r->corr) {
        kc_buf_unref(frame);
        kc_fail(&e, KC_ERR_MALFORMED, "correlation id %d where %d was due", (int)corr,
                (int)r->corr);
        bad_answer(c, e.msg);
        return 0;
    }
    q_pop(&c->inflight);
    c->st.responses++;
    c->last_active_ns = kc_now_ns();
    uint64_t resets = c->st.resets;
    r->spec.cb(c, KC_OK, frame, body_off, r->version, r->spec.opaque);
    req_put(c, r);
    arm_request_timer(c);
    return c->st.resets == resets; /* a state change (HANDSHAKE -> READY) is no reason to stop */
}

/* ---- handshake ------------------------------------------------------------------------------- */

/* Puts every request that waited (for READY, or for a re-authentication) on the wire. */
static void drain_pending(kc_conn_t *c)
{
    req_q p = c->pending;
    c->pending.head = c->pending.tail = NULL;
    req_t *r;
    while ((r = q_pop(&p)) != NULL) {
        kc_error_t e;
        if (c->state != KC_CONN_READY) { /* reset meanwhile: keep the rest for the next one */
            q_push(&c->pending, r);
            continue;
        }
        if (dispatch(c, r, &e) != KC_OK)
            fail_req(c, r, e.code);
    }
    arm_request_timer(c);
}

/* connections.max.idle.ms: checked when the idle time could have run out; a connection that
 * was busy meanwhile is looked at again when its own idle time would end. */
static void on_idle_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    kc_conn_t *c = t->opaque;
    if (c->state != KC_CONN_READY || c->closing)
        return;
    int64_t idle_ns = (int64_t)c->o.idle_timeout_ms * 1000000LL;
    int64_t quiet = kc_now_ns() - c->last_active_ns;
    if (c->inflight.head || c->pending.head || c->reauth || quiet < idle_ns) {
        int64_t left_ms = c->inflight.head || c->pending.head || c->reauth
                              ? c->o.idle_timeout_ms
                              : (idle_ns - quiet) / 1000000LL + 1;
        kc_loop_timer_start(c->loop, &c->t_idle, left_ms);
        return;
    }
    char why[96];
    snprintf(why, sizeof why, "idle for %lld ms (connections.max.idle.ms)",
             (long long)(quiet / 1000000LL));
    c->st.idle_closes++;
    if (c->o.on_idle_close)
        c->o.on_idle_close(c, c->o.state_opaque);
    c->idling = 1;
    kc_conn_reset(c, KC_ERR_CLOSED, why);
}

static void become_ready(kc_conn_t *c)
{
    c->failures = 0;
    c->was_ready = 1;
    c->last_active_ns = kc_now_ns();
    set_state(c, KC_CONN_READY, NULL);
    if (c->o.idle_timeout_ms > 0)
        kc_loop_timer_start(c->loop, &c->t_idle, c->o.idle_timeout_ms);
    drain_pending(c);
}

void kc_conn_fail_final(kc_conn_t *c, const kc_error_t *why)
{
    /* The caller's message names what failed; we add which broker (io/tls.h leaves that to us). */
    const char *name = c->cur_addr >= 0 ? c->addrs[c->cur_addr].name : "?";
    kc_err_t code = why->code != KC_OK ? why->code : KC_ERR_AUTH;
    if (why->msg[0] && strstr(why->msg, name))
        kc_fail(&c->fail_err, code, "%s", why->msg);
    else
        kc_fail(&c->fail_err, code, "%s: %s", name, why->msg);
    c->fail_err.kafka_code = why->kafka_code;
    c->auth_failed = 1;
    kc_log(KC_LOG_ERROR, "conn", "%s", c->fail_err.msg);
    why = &c->fail_err;
    fail_queue(c, &c->pending, why->code);
    kc_conn_reset(c, why->code, why->msg);
}

/* How often a connection FAILED by an authentication refusal looks whether the credentials
 * changed (opts.auth_generation): a refreshed token should be used within a second, and the
 * check is one counter read under the token slot's mutex. */
#define KC_CONN_CRED_CHECK_MS 1000

/* A connection refused under credentials that since changed starts over: on a timer, because
 * its users may not ask it again by themselves (a fetcher does not send to a failed broker). */
static void on_cred_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    kc_conn_t *c = t->opaque;
    if (c->closing || !c->auth_gen_set)
        return;
    if (c->state == KC_CONN_FAILED && c->o.auth_generation(c->o.auth_opaque) != c->auth_gen) {
        kc_log(KC_LOG_INFO, "conn",
               "%s: new credentials since the refused authentication; connecting again",
               c->servers);
        kc_conn_start(c);
        return;
    }
    kc_loop_timer_start(loop, t, KC_CONN_CRED_CHECK_MS); /* still refused, or still resetting */
}

/* An authentication refusal: remembers under which credentials (opts.auth_generation) and
 * watches them. */
static void auth_refused(kc_conn_t *c, const kc_error_t *result)
{
    if (c->o.auth_generation) {
        c->auth_gen = c->o.auth_generation(c->o.auth_opaque);
        c->auth_gen_set = true;
        kc_loop_timer_start(c->loop, &c->t_cred, KC_CONN_CRED_CHECK_MS);
    }
    kc_conn_fail_final(c, result);
}

void kc_conn_auth_done(kc_conn_t *c, const kc_error_t *result)
{
    if (c->reauth && c->state == KC_CONN_READY) {
        c->reauth = 0;
        if (result && result->code != KC_OK) {
            auth_refused(c, result);
            return;
        }
        c->st.reauths++;
        kc_log(KC_LOG_DEBUG, "conn", "%s: re-authenticated", kc_conn_peer(c));
        drain_pending(c);
        return;
    }
    if (c->state != KC_CONN_AUTH)
        return;
    if (result && result->code != KC_OK) {
        /* Auth failures are not retried by looping: the pending requests learn why now. */
        auth_refused(c, result);
        return;
    }
    become_ready(c);
}

void kc_conn_schedule_reauth(kc_conn_t *c, int64_t delay_ms)
{
    if (c->closing || (c->state != KC_CONN_AUTH && c->state != KC_CONN_READY))
        return;
    kc_loop_timer_start(c->loop, &c->t_reauth, delay_ms < 1000 ? 1000 : delay_ms);
}

int kc_conn_reauthenticating(const kc_conn_t *c)
{
    return c->reauth;
}

static void on_reauth_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    kc_conn_t *c = t->opaque;
    if (c->closing || c->state != KC_CONN_READY || c->reauth || !c->o.authenticate)
        return;
    c->reauth = 1;
    c->o.authenticate(c, c->o.auth_opaque);
}

static kc_err_t encode_apiversions(kc_wbuf_t *out, int16_t version, void *opaque)
{
    (void)opaque;
    return kc_wire_apiversions_request(out, version, NULL);
}

static void send_apiversions(kc_conn_t *c);

static void on_apiversions(kc_conn_t *c, kc_err_t err, kc_buf_t *frame, size_t off, int16_t v,
                           void *opaque)
{
    (void)opaque;
    if (err != KC_OK)
        return; /* the reset that failed it handles the connection */
    kc_error_t e;
    kc_err_t rc =
        kc_wire_apiversions_response(frame->data + off, frame->len - off, v, &c->ranges, &e);
    kc_buf_unref(frame);
    if (rc == KC_ERR_BROKER && e.kafka_code == KC_KAFKA_UNSUPPORTED_VERSION && c->av_version > 0) {
        /* The broker is older than our ApiVersions; ask again in the newest it listed. */
        int16_t mx = c->ranges.max[KC_API_VERSIONS];
        c->av_version = mx >= 0 && mx < c->av_version ? mx : 0;
        send_apiversions(c);
        return;
    }
    if (rc != KC_OK) {
        kc_conn_reset(c, rc, e.msg);
        return;
    }
    if (c->o.authenticate) {
        set_state(c, KC_CONN_AUTH, NULL);
        c->o.authenticate(c, c->o.auth_opaque);
        return;
    }
    become_ready(c);
}

static void send_apiversions(kc_conn_t *c)
{
    kc_conn_req_spec_t s = {
        .api_key = KC_API_VERSIONS, .encode = encode_apiversions, .cb = on_apiversions};
    kc_error_t e;
    if (kc_conn_send_internal(c, &s, &e) != KC_OK)
        kc_conn_reset(c, e.code, e.msg);
}

/* ---- connecting ------------------------------------------------------------------------------ */

static void on_connect(kc_loop_t *loop, kc_loop_op_t *op, int res)
{
    (void)loop;
    kc_conn_t *c = op->opaque;
    if (c->state == KC_CONN_RESETTING) {
        kc_conn_finish_reset(c);
        return;
    }
    if (res < 0) {
        kc_conn_reset(c, KC_ERR_TRANSPORT, strerror(-res));
        return;
    }
    c->st.connects++;
    c->stage_off = c->stage_len = 0;
    if (c->o.transport_new) {
        kc_error_t e = {0};
        if (!c->cbuf && !(c->cbuf = malloc(STAGE_CAP))) {
            kc_conn_reset(c, KC_ERR_NOMEM, "no memory for the transport buffer");
            return;
        }
        kc_err_t rc = c->o.transport_new(c->o.transport_opaque, c->addrs[c->cur_addr].host, &c->tvt,
                                         &c->tr, &e);
        if (rc != KC_OK) {
            kc_conn_fail_final(c, &e);
            return;
        }
        set_state(c, KC_CONN_SECURING, NULL);
        kc_conn_io_start(c); /* the handshake; kc_conn_secured() follows when it is done */
        return;
    }
    kc_conn_io_start(c);
    kc_conn_secured(c);
}

void kc_conn_secured(kc_conn_t *c)
{
    /* socket.connection.setup.timeout.ms covers TCP and TLS; from here request timeouts rule. */
    kc_loop_timer_stop(c->loop, &c->t_connect);
    c->secured = 1;
    set_state(c, KC_CONN_HANDSHAKE, NULL);
    const kc_proto_api_t *av = kc_proto_api_find(KC_API_VERSIONS);
    c->av_version = av ? av->max_stable : 3; /* newest we speak; a broker that doesn't says so */
    send_apiversions(c);
}

static void on_connect_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    kc_conn_reset(t->opaque, KC_ERR_TIMEOUT, "connect timed out");
}

/* The resolver thread answered (on the network thread, through the loop's command queue). */
static void on_resolved(kc_err_t rc, const kc_addr_t *addrs, int n, const kc_error_t *err,
                        void *opaque)
{
    kc_conn_t *c = opaque;
    c->resolving = NULL;
    if (rc != KC_OK) {
        kc_log(KC_LOG_WARN, "conn", "%s", err->msg);
        c->naddrs = 0;
        c->cur_addr = -1;
        c->state = KC_CONN_RESETTING; /* -> DOWN and a backoff, like a failed connect */
        kc_conn_finish_reset(c);
        return;
    }
    c->naddrs = n > MAX_ADDRS ? MAX_ADDRS : n;
    memcpy(c->addrs, addrs, (size_t)c->naddrs * sizeof *addrs);
    if (c->o.canonical_names) /* what the configured hosts became: the names TLS and SASL use */
        for (int i = 0; i < c->naddrs; i++)
            if (i == 0 || strcmp(c->addrs[i].name, c->addrs[i - 1].name) != 0)
                kc_log(KC_LOG_INFO, "conn", "%s: canonical bootstrap address %s", c->servers,
                       c->addrs[i].name);
    c->next_addr = 0;
    connect_next(c);
}

static void connect_next(kc_conn_t *c)
{
    kc_error_t e;
    c->parked = 0;
    if (c->next_addr >= c->naddrs) {
        /* Re-resolve on every pass over the list (broker addresses may move), on the loop's
         * resolver thread: getaddrinfo may block for seconds (io/resolver.h). */
        set_state(c, KC_CONN_CONNECTING, NULL);
        if (kc_resolve_start(c->loop, c->servers, c->o.canonical_names ? KC_ADDR_CANONICAL : 0,
                             on_resolved, c, &c->resolving, &e) != KC_OK) {
            kc_log(KC_LOG_WARN, "conn", "%s", e.msg);
            c->cur_addr = -1;
            c->state = KC_CONN_RESETTING;
            kc_conn_finish_reset(c);
        }
        return;
    }
    c->cur_addr = c->next_addr++;
    kc_addr_t *a = &c->addrs[c->cur_addr];
    int fd = kc_loop_socket(c->loop, a->sa.ss_family);
    set_state(c, KC_CONN_CONNECTING, NULL);
    if (fd < 0) {
        kc_conn_reset(c, KC_ERR_SYSTEM, strerror(-fd));
        return;
    }
    c->fd = fd;
    if (c->o.keepalive) { /* a dead peer behind a silent network is found even when idle */
        int one = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) != 0)
            kc_log(KC_LOG_WARN, "conn", "SO_KEEPALIVE: %s", strerror(errno));
    }
    kc_loop_timer_start(c->loop, &c->t_connect, c->o.connect_timeout_ms);
    kc_loop_connect(c->loop, &c->op_connect, fd, (struct sockaddr *)&a->sa, a->len);
}

static void on_backoff_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    connect_next(t->opaque);
}

static void on_close_timer(kc_loop_t *loop, kc_loop_timer_t *t)
{
    (void)loop;
    kc_conn_reset(t->opaque, KC_ERR_CLOSED, "closed (close_notify not sent in time)");
}

/* ---- lifecycle ------------------------------------------------------------------------------- */

kc_err_t kc_conn_new(kc_conn_t **out, kc_loop_t *loop, const kc_conn_opts_t *opts, kc_error_t *err)
{
    kc_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return kc_fail(err, KC_ERR_NOMEM, "conn: out of memory");
    c->o = *opts;
    c->loop = loop;
    c->fd = -1;
    c->cur_addr = -1;
    c->servers = strdup(opts->servers ? opts->servers : "");
    c->client_id = opts->client_id ? strdup(opts->client_id) : NULL;
    c->stage = malloc(STAGE_CAP);
    if (!c->servers || !c->stage || (opts->client_id && !c->client_id)) {
        free(c->servers);
        free(c->client_id);
        free(c->stage);
        free(c);
        return kc_fail(err, KC_ERR_NOMEM, "conn: out of memory");
    }
    if (c->o.connect_timeout_ms <= 0)
        c->o.connect_timeout_ms = 10000;
    if (c->o.request_timeout_ms <= 0)
        c->o.request_timeout_ms = 30000;
    if (c->o.reconnect_backoff_ms <= 0)
        c->o.reconnect_backoff_ms = 50;
    if (c->o.reconnect_backoff_max_ms < c->o.reconnect_backoff_ms)
        c->o.reconnect_backoff_max_ms =
            c->o.reconnect_backoff_ms > 1000 ? c->o.reconnect_backoff_ms : 1000;
    if (c->o.max_frame == 0)
        c->o.max_frame = 100u << 20;
    c->rng = (uint64_t)kc_now_ns() ^ (uint64_t)(uintptr_t)c;
    for (int i = 0; i < KC_API_KEY_MAX; i++)
        c->ranges.min[i] = c->ranges.max[i] = -1;
    kc_loop_op_t *ops[] = {&c->op_connect, &c->op_send, &c->op_recv};
    kc_loop_op_cb cbs[] = {on_connect, kc_conn_io_on_send, kc_conn_io_on_recv};
    for (int i = 0; i < 3; i++) {
        ops[i]->cb = cbs[i];
        ops[i]->opaque = c;
    }
    c->t_connect = (kc_loop_timer_t){.cb = on_connect_timer, .opaque = c};
    c->t_backoff = (kc_loop_timer_t){.cb = on_backoff_timer, .opaque = c};
    c->t_request = (kc_loop_timer_t){.cb = on_request_timer, .opaque = c};
    c->t_reauth = (kc_loop_timer_t){.cb = on_reauth_timer, .opaque = c};
    c->t_close = (kc_loop_timer_t){.cb = on_close_timer, .opaque = c};
    c->t_idle = (kc_loop_timer_t){.cb = on_idle_timer, .opaque = c};
    c->t_cred = (kc_loop_timer_t){.cb = on_cred_timer, .opaque = c};
    *out = c;
    return KC_OK;
}

void kc_conn_start(kc_conn_t *c)
{
    if (c->state == KC_CONN_FAILED) {
        c->state = KC_CONN_DOWN;
        c->auth_failed = 0;
        c->auth_gen_set = false;
        kc_loop_timer_stop(c->loop, &c->t_cred);
        c->failures = 0;
    }
    if (c->state == KC_CONN_DOWN && !kc_loop_timer_armed(&c->t_backoff))
        connect_next(c);
}

void kc_conn_close(kc_conn_t *c)
{
    if (c->closing)
        return;
    kc_loop_timer_stop(c->loop, &c->t_backoff);
    kc_loop_timer_stop(c->loop, &c->t_request);
    kc_loop_timer_stop(c->loop, &c->t_connect);
    kc_loop_timer_stop(c->loop, &c->t_reauth);
    kc_loop_timer_stop(c->loop, &c->t_idle);
    kc_loop_timer_stop(c->loop, &c->t_cred);
    fail_queue(c, &c->pending, KC_ERR_CLOSED);
    fail_queue(c, &c->inflight, KC_ERR_CLOSED);
    c->closing = 1;
    if (c->state == KC_CONN_DOWN || c->state == KC_CONN_RESETTING || c->state == KC_CONN_FAILED) {
        c->state = KC_CONN_RESETTING;
        kc_conn_finish_reset(c);
        return;
    }
    /* TLS: say goodbye first (a broker logs an abrupt close as an error; close_notify also
     * tells it no truncation happened), bounded by t_close. Either way the reset below shuts
     * the socket down on both backends and the fd is closed once every op has come back. */
    if (kc_conn_io_goodbye(c)) {
        kc_loop_timer_start(c->loop, &c->t_close, KC_CONN_GOODBYE_MS);
        return;
    }
    kc_conn_reset(c, KC_ERR_CLOSED, "closed");
}

kc_conn_state_t kc_conn_state(const kc_conn_t *c)
{
    return c->state;
}
const kc_api_ranges_t *kc_conn_api_ranges(const kc_conn_t *c)
{
    return &c->ranges;
}
int kc_conn_failures(const kc_conn_t *c)
{
    return c->failures;
}
int64_t kc_conn_last_backoff_ms(const kc_conn_t *c)
{
    return c->last_backoff;
}
void kc_conn_get_stats(const kc_conn_t *c, kc_conn_stats_t *out)
{
    *out = c->st;
}

const char *kc_conn_peer(const kc_conn_t *c)
{
    return c->cur_addr >= 0 && c->fd >= 0 ? c->addrs[c->cur_addr].name : "";
}

const char *kc_conn_host(const kc_conn_t *c)
{
    return c->cur_addr >= 0 && c->fd >= 0 ? c->addrs[c->cur_addr].host : "";
}

kc_loop_t *kc_conn_loop(const kc_conn_t *c)
{
    return c->loop;
}

const kc_error_t *kc_conn_refusal(const kc_conn_t *c)
{
    return &c->refusal;
}

int kc_conn_pick_version(const kc_conn_t *c, int16_t api_key, int16_t min, int16_t max)
{
    if (api_key < 0 || api_key >= KC_API_KEY_MAX || c->ranges.min[api_key] < 0)
        return -1;
    int lo = min > c->ranges.min[api_key] ? min : c->ranges.min[api_key];
    int hi = max < c->ranges.max[api_key] ? max : c->ranges.max[api_key];
    return lo <= hi ? hi : -1;
}
