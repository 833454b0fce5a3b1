/*
 * Shared socket and frame I/O for the testkit servers (kc-memory-broker, kc-fault-proxy).
 * Plain blocking sockets: these are test tools, not the product's network thread.
 *
 * Threads: no shared state; a kt_frame_t belongs to the thread reading into it.
 */
#ifndef KC_TESTKIT_FRAME_H
#define KC_TESTKIT_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

/* Largest frame either tool accepts from the network. Kafka's socket.request.max.bytes default is
 * 100 MiB; a length above this is treated as garbage and the connection is dropped rather than
 * allocating what a hostile peer claims. */
#define KT_MAX_FRAME (100u * 1024 * 1024)

/* One received frame (without its int32 length); buf is reused across frames. */
typedef struct kt_frame {
    uint8_t *buf;
    size_t cap;
    uint32_t len;
} kt_frame_t;

/* Listens on 127.0.0.1:port (0 = ephemeral); *bound gets the port. -1 on failure. */
int kt_listen(int port, int *bound);
/* Blocking TCP connect to host:port; -1 on failure. */
int kt_connect(const char *host, int port);
/* Splits "host:port" into host (NUL-terminated, hostcap bytes) and port; false when malformed. */
bool kt_split_hostport(const char *s, char *host, size_t hostcap, int *port);

/* Reads one length-prefixed frame. 0 ok, -1 on EOF, error, or a length above max. */
int kt_read_frame(int fd, kt_frame_t *f, uint32_t max);
/* Reads exactly n bytes; -1 on EOF or error. */
int kt_read_full(int fd, void *p, size_t n);
/* Writes all n bytes (retrying short writes, no SIGPIPE); -1 on error. */
int kt_write_all(int fd, const void *p, size_t n);
void kt_frame_free(kt_frame_t *f);

/* The api key and version of a request frame, read from its first four bytes without decoding
 * the header; false when the frame is shorter. */
bool kt_peek_api(const kt_frame_t *f, int16_t *key, int16_t *version);

/* Decodes the request header of frame f (the generated RequestHeader decoder, at the header
 * version the API's flexibleVersions dictate) and leaves r at the body. */
kc_err_t kt_read_request_header(const kt_frame_t *f, kc_rbuf_t *r, kc_request_header_t *h,
                                kc_arena_t *a, kc_error_t *err);

/* Starts a response frame in w (reserves the size, writes the response header for (key,
 * version)); kt_response_end() fills in the size. */
kc_err_t kt_response_begin(kc_wbuf_t *w, int16_t key, int16_t version, int32_t correlation_id,
                           kc_error_t *err);
void kt_response_end(kc_wbuf_t *w, size_t start);

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t kt_now_ms(void);

#endif
