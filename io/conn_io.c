/*
 * A connection's bytes: sending, response framing, and the transport (TLS) hook.
 * Owner: the network thread (the connection's loop's owner).
 *
 * Plaintext: responses are received into the 64 KiB staging buffer; a frame that is wholly
 * staged is copied once into a kc_buf_t of exactly its size; a frame that is not gets its
 * exact-size buffer, the staged prefix is copied, and the rest arrives straight into it with one
 * recv_exact (MSG_WAITALL), so a many-MiB Fetch response is never reassembled.
 * With a transport, ciphertext goes into `cbuf` and is fed to it; plaintext is read out of it
 * into staging, and a large frame's remainder is read straight into its exact-size buffer, so
 * the only extra copy is the decryption itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn_internal.h"

static uint32_t rd_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int live(const kc_conn_t *c)
{
    return c->fd >= 0 && c->state != KC_CONN_RESETTING && c->state != KC_CONN_DOWN &&
           c->state != KC_CONN_FAILED;
}

/* ---- sending --------------------------------------------------------------------------------- */

/* Starts one send of whatever is ready, if none is running. */
static void tx_pump(kc_conn_t *c)
{
    if (c->op_send.pending || !live(c))
        return;
    if (c->tvt) {
        const uint8_t *p;
        size_t n = c->tvt->out_peek(c->tr, &p);
        if (n)
            kc_loop_send(c->loop, &c->op_send, c->fd, p, n);
        return;
    }
    if (c->out.len == 0)
        return;
    kc_wbuf_t t = c->sending;
    c->sending = c->out; /* everything encoded since the last send goes in one op */
    c->out = t;
    c->out.len = 0;
    kc_loop_send(c->loop, &c->op_send, c->fd, c->sending.data, c->sending.len);
}

void kc_conn_io_flush(kc_conn_t *c)
{
    if (!live(c) || c->state < KC_CONN_HANDSHAKE)
        return; /* requests wait in `out` until the transport is secured */
    if (c->tvt && c->out.len) {
        kc_error_t e;
        if (c->tvt->write(c->tr, c->out.data, c->out.len, &e) != KC_OK) {
            kc_conn_reset(c, e.code, e.msg);
            return;
        }
        c->out.len = 0;
    }
    tx_pump(c);
}

void kc_conn_io_on_send(kc_loop_t *loop, kc_loop_op_t *op, int res)
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
    c->st.bytes_out += (uint64_t)res;
    if (c->tvt)
        c->tvt->out_consume(c->tr, (size_t)res);
    else
        c->sending.len = 0;
    if (c->goodbye) {
        const uint8_t *p;
        if (c->tvt->out_peek(c->tr, &p) == 0) { /* close_notify is out: now shut down */
            kc_conn_reset(c, KC_ERR_CLOSED, "closed");
            return;
        }
        tx_pump(c);
        return;
    }
    if (c->state == KC_CONN_SECURING)
        tx_pump(c); /* handshake records */
    else
        kc_conn_io_flush(c);
}

/* kc_conn_close() on a secured transport: queue the goodbye (TLS close_notify) behind whatever
 * the transport still holds and send it through the loop like any other bytes (a send op may be
 * running; its completion carries on). Returns 1 when the caller should wait for on_send (or its
 * bound, t_close) to reset; 0 when there is nothing to say goodbye on. */
int kc_conn_io_goodbye(kc_conn_t *c)
{
    if (!c->tvt || !c->tvt->shutdown || !c->secured || !live(c))
        return 0;
    kc_error_t e;
    c->out.len = 0; /* requests encoded but not handed to the transport were failed already */
    if (c->tvt->shutdown(c->tr, &e) != KC_OK)
        return 0;
    c->goodbye = 1;
    const uint8_t *p;
    if (!c->op_send.pending && c->tvt->out_peek(c->tr, &p) == 0)
        return 0; /* nothing to send after all */
    tx_pump(c);
    return 1;
}

/* ---- framing --------------------------------------------------------------------------------- */

/* Delivers every complete staged frame. Returns -1 if the connection was reset, 1 if a partial
 * frame now waits in rx_frame, 0 if staging needs more bytes. */
static int parse_stage(kc_conn_t *c)
{
    for (;;) {
        size_t avail = c->stage_len - c->stage_off;
        if (avail < 4)
            break;
        uint32_t n = rd_be32(c->stage + c->stage_off);
        if (n < 4 || n > c->o.max_frame) {
            kc_conn_reset(c, KC_ERR_MALFORMED, "response size out of bounds");
            return -1;
        }
        kc_buf_t *f = kc_buf_new(n);
        if (!f) {
            kc_conn_reset(c, KC_ERR_NOMEM, "no memory for a response frame");
            return -1;
        }
        if (avail - 4 >= n) {
            memcpy(f->data, c->stage + c->stage_off + 4, n);
            f->len = n;
            c->stage_off += 4 + (size_t)n;
            c->st.frames_staged++;
            if (!kc_conn_deliver(c, f))
                return -1;
            continue;
        }
        size_t have = avail - 4;
        memcpy(f->data, c->stage + c->stage_off + 4, have);
        f->len = have;
        c->stage_off = c->stage_len = 0;
        c->rx_frame = f;
        c->st.frames_direct++;
        return 1;
    }
    /* Keep the partial size prefix at the front so the next read has the most room. */
    size_t avail = c->stage_len - c->stage_off;
    memmove(c->stage, c->stage + c->stage_off, avail);
    c->stage_off = 0;
    c->stage_len = avail;
    return 0;
}

static void start_recv(kc_conn_t *c)
{
    if (c->tvt)
        kc_loop_recv(c->loop, &c->op_recv, c->fd, c->cbuf, STAGE_CAP);
    else
        kc_loop_recv(c->loop, &c->op_recv, c->fd, c->stage + c->stage_len,
                     STAGE_CAP - c->stage_len);
}

/* Plaintext: after staging grew or a frame completed, parse and start the next receive. */
static void plain_next(kc_conn_t *c)
{
    int r = parse_stage(c);
    if (r < 0)
        return;
    if (r == 1) {
        kc_buf_t *f = c->rx_frame;
        kc_loop_recv_exact(c->loop, &c->op_recv, c->fd, f->data + f->len, f->cap - f->len);
        return;
    }
    start_recv(c);
}

/* Transport: reads all available plaintext into staging / the pending frame, delivering frames
 * as they complete; then flushes (TLS may answer while reading) and receives more ciphertext. */
static void transport_pump(kc_conn_t *c)
{
    for (;;) {
        kc_error_t e;
        size_t n = 0;
        kc_err_t rc;
        if (c->rx_frame) {
            kc_buf_t *f = c->rx_frame;
            rc = c->tvt->read(c->tr, f->data + f->len, f->cap - f->len, &n, &e);
            if (rc == KC_OK) {
                f->len += n;
                if (f->len == f->cap) {
                    c->rx_frame = NULL;
                    if (!kc_conn_deliver(c, f))
                        return;
                }
                continue;
            }
        } else {
            rc = c->tvt->read(c->tr, c->stage + c->stage_len, STAGE_CAP - c->stage_len, &n, &e);
            if (rc == KC_OK) {
                c->stage_len += n;
                if (parse_stage(c) < 0)
                    return;
                continue;
            }
        }
        if (rc == KC_ERR_AGAIN)
            break;
        /* A TLS failure before the broker's first answer is its refusal of the handshake: with
         * TLS 1.3 the alert for a missing or rejected client certificate arrives only after our
         * side of the handshake completed. Final, like a failed handshake: reconnecting would
         * be refused the same way. */
        if (rc == KC_ERR_TLS && (c->state == KC_CONN_HANDSHAKE || c->state == KC_CONN_AUTH)) {
            kc_conn_fail_final(c, &e);
            return;
        }
        kc_conn_reset(c, rc == KC_ERR_CLOSED ? KC_ERR_TRANSPORT : rc,
                      rc == KC_ERR_CLOSED ? "broker closed the TLS session" : e.msg);
        return;
    }
    kc_conn_io_flush(c);
    start_recv(c);
}

/* Transport handshake step: after start and after each ciphertext arrival while SECURING. */
static void secure_step(kc_conn_t *c)
{
    kc_error_t e = {0};
    kc_err_t rc = c->tvt->handshake(c->tr, &e);
    tx_pump(c);
    if (rc == KC_ERR_AGAIN) {
        start_recv(c);
        return;
    }
    if (rc != KC_OK) {
        kc_conn_fail_final(c, &e);
        return;
    }
    kc_conn_secured(c); /* sends ApiVersions (through kc_conn_io_flush) */
    if (live(c))
        transport_pump(c); /* plaintext may already be buffered; also starts the next recv */
}

void kc_conn_io_start(kc_conn_t *c)
{
    if (c->tvt)
        secure_step(c);
    else
        start_recv(c);
}

void kc_conn_io_on_recv(kc_loop_t *loop, kc_loop_op_t *op, int res)
{
    (void)loop;
    kc_conn_t *c = op->opaque;
    if (c->state == KC_CONN_RESETTING) {
        kc_conn_finish_reset(c);
        return;
    }
    if (res <= 0) {
        kc_conn_reset(c, KC_ERR_TRANSPORT,
                      res == 0 ? "connection closed by broker" : strerror(-res));
        return;
    }
    c->st.bytes_in += (uint64_t)res;
    if (c->tvt) {
        kc_error_t e;
        if (c->tvt->feed(c->tr, c->cbuf, (size_t)res, &e) != KC_OK) {
            kc_conn_reset(c, e.code, e.msg);
            return;
        }
        if (c->state == KC_CONN_SECURING)
            secure_step(c);
        else
            transport_pump(c);
        return;
    }
    if (c->rx_frame) { /* the rest of a frame, received in place */
        kc_buf_t *f = c->rx_frame;
        c->rx_frame = NULL;
        f->len = f->cap;
        if (!kc_conn_deliver(c, f))
            return;
    } else {
        c->stage_len += (size_t)res;
    }
    plain_next(c);
}
