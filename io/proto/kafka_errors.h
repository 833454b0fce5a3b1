/* Kafka's broker error codes, generated from the kafka-clients Errors enum: the KC_KAFKA_<NAME>
 * constants (kafka_errors.gen.h) and the name/retriable table (kafka_errors.gen.c). A code is
 * never typed as a number: compare with the constant. Any thread: read-only tables. */
#ifndef KC_PROTO_KAFKA_ERRORS_H
#define KC_PROTO_KAFKA_ERRORS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/kafka_errors.gen.h"

typedef struct kc_kafka_error_info {
    int16_t code;
    const char *name;    /* "NOT_COORDINATOR" */
    int retriable;       /* the Java client's RetriableException classification */
    const char *message; /* Kafka's default message */
} kc_kafka_error_info_t;

/* Generated: the entry for `code`, or NULL for a code this Kafka version does not know. */
const kc_kafka_error_info_t *kc_kafka_err_info(int16_t code);

static inline const char *kc_kafka_err_name(int16_t code)
{
    const kc_kafka_error_info_t *e = kc_kafka_err_info(code);
    return e ? e->name : "UNKNOWN_KAFKA_ERROR";
}

static inline int kc_kafka_err_retriable(int16_t code)
{
    const kc_kafka_error_info_t *e = kc_kafka_err_info(code);
    return e ? e->retriable : 0;
}

#endif
