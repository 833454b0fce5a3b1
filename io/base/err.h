/*
 * Internal error helpers. Every fallible internal function returns kc_err_t and, when given a
 * kc_error_t *, explains itself there. kc_fail() does both in one line:
 *
 *     return kc_fail(err, KC_ERR_MALFORMED, "Fetch v%d: partitions[%d] runs past the frame", v, i);
 *
 * Any thread; no allocation; the message is truncated to fit kc_error_t.msg.
 */
#ifndef KC_BASE_ERR_H
#define KC_BASE_ERR_H

#include "kconsume.h"

#if defined(__GNUC__)
#define KC_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define KC_PRINTF(fmt_idx, arg_idx)
#endif

/* Sets *err (if not NULL) to `code` with a formatted message and returns `code`. */
kc_err_t kc_fail(kc_error_t *err, kc_err_t code, const char *fmt, ...) KC_PRINTF(3, 4);

/* Same, for a Kafka error code returned by a broker: code KC_ERR_BROKER, kafka_code set, and the
 * message prefixed with the Kafka error's name (from the generated error table). */
kc_err_t kc_fail_kafka(kc_error_t *err, int16_t kafka_code, const char *fmt, ...) KC_PRINTF(3, 4);

/* Clears *err to KC_OK with an empty message. NULL is fine. */
void kc_error_clear(kc_error_t *err);

#endif
