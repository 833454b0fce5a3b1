/* Blocking request/response over a plain socket, for kafka tests that drive a pure engine state
 * machine without the network thread (see broker_blocking.c). Failures fail the cmocka test. */
#ifndef KC_TEST_BROKER_BLOCKING_H
#define KC_TEST_BROKER_BLOCKING_H

#include <stdint.h>

#include "proto/wire.h"

typedef kc_err_t (*kc_tb_encode_fn)(const void *m, int16_t v, kc_wbuf_t *w, kc_error_t *e);

/* Connects to the first host:port of a bootstrap list (15 s send/receive timeouts); -1 on failure.
 */
int kc_tb_connect(const char *bootstrap);

/* Sends one request and reads its response: *frame (malloc'd, caller frees) holds it and r is
 * left at the body, after the response header (whose correlation id is checked). */
void kc_tb_exchange(int fd, int16_t key, int16_t v, const void *msg, kc_tb_encode_fn enc,
                    uint8_t **frame, kc_rbuf_t *r);

#endif
