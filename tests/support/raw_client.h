/*
 * A tiny blocking Kafka client over the generated codec, for kafka-labelled C tests that need to
 * see exact responses (through the fault proxy, from the memory broker). Fails the running
 * cmocka test on local errors; returns the codec's verdict on what the server sent. Its socket
 * and frame calls are also broker_blocking.c's.
 *
 * Owner: the test thread using the kc_rc_t.
 */
#ifndef KC_TEST_RAW_CLIENT_H
#define KC_TEST_RAW_CLIENT_H

#include "proto/proto.h"

typedef struct kc_rc {
    int fd;
    int32_t corr;
    kc_proto_versions_t v; /* negotiated by kc_rc_open() */
    uint8_t *frame;        /* the last response frame; decoded views point into it */
    kc_arena_t arena;
} kc_rc_t;

/* Connects to the first host:port of a bootstrap list (any address family); reads and writes
 * time out after timeout_ms. -1 on failure. */
int kc_rc_connect(const char *bootstrap, int timeout_ms);
/* Writes all n bytes: 0, or -1 (error, timeout). */
int kc_rc_write_all(int fd, const void *p, size_t n);
/* Reads one size-prefixed frame (at most 64 MiB) into a malloc'd buffer (the caller frees it),
 * its length in *len; NULL on EOF, timeout, error or a size past the limit. */
uint8_t *kc_rc_read_frame(int fd, uint32_t *len);
/* Connects and negotiates versions with ApiVersions v3. */
void kc_rc_open(kc_rc_t *c, const char *bootstrap);
void kc_rc_close(kc_rc_t *c);
/* Sends body as request (key, v) with the next correlation id. */
void kc_rc_send(kc_rc_t *c, int16_t key, int16_t v, const void *body);
/* Reads the next response and decodes it into body: KC_OK, KC_ERR_TRANSPORT (EOF, timeout,
 * short frame), KC_ERR_MALFORMED (wrong correlation id) or the decoder's error. */
kc_err_t kc_rc_recv(kc_rc_t *c, int16_t key, int16_t v, void *body);

#endif
