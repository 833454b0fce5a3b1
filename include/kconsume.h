/*
 * kconsume — a Kafka consumer runtime for Linux.
 *
 * This is the whole public API. Everything here is prefixed kc_ / KC_; nothing else is exported
 * from the shared library (it is built with -fvisibility=hidden and only KC_API symbols escape).
 *
 * Threads, in one paragraph: kconsume runs one network thread (all sockets, the engine, group
 * membership) and N worker threads (decode and your callbacks). Each function below says which
 * threads may call it. Each pointer argument says who owns it and for how long.
 *
 * Errors are values: every fallible call returns a kc_err_t; KC_OK is 0 and every error is
 * negative. Where a call can say more than the code, it takes a kc_error_t * that it fills with
 * a message (and the Kafka error code when a broker said no). The pointer may be NULL.
 */
#ifndef KCONSUME_H
#define KCONSUME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KC_BUILDING_LIBRARY)
#define KC_API __attribute__((visibility("default")))
#else
#define KC_API
#endif

#define KC_VERSION_MAJOR 0
#define KC_VERSION_MINOR 1
#define KC_VERSION_PATCH 0

/* Library version as "MAJOR.MINOR.PATCH". Any thread. Static storage. */
KC_API const char *kc_version(void);

/*
 * Error codes. One table (name, value, text) drives the enum, kc_err_name() and kc_err_str(), so
 * a code exists in exactly one place. Values are stable: add at the end, never renumber.
 */
#define KC_ERROR_TABLE(X)                                                                          \
    X(KC_OK, 0, "success")                                                                         \
    X(KC_ERR_INVALID_ARG, -1, "invalid argument")                                                  \
    X(KC_ERR_NOMEM, -2, "out of memory")                                                           \
    X(KC_ERR_MALFORMED, -3, "malformed data received from the network")                            \
    X(KC_ERR_CRC, -4, "record batch CRC mismatch")                                                 \
    X(KC_ERR_UNSUPPORTED, -5, "unsupported feature, format or version")                            \
    X(KC_ERR_TIMEOUT, -6, "timed out")                                                             \
    X(KC_ERR_TRANSPORT, -7, "connection failed or closed")                                         \
    X(KC_ERR_TLS, -8, "TLS handshake or verification failed")                                      \
    X(KC_ERR_AUTH, -9, "authentication failed")                                                    \
    X(KC_ERR_BROKER, -10, "the broker answered with an error code")                                \
    X(KC_ERR_CONFIG, -11, "invalid configuration")                                                 \
    X(KC_ERR_STATE, -12, "operation not valid in the current state")                               \
    X(KC_ERR_CLOSED, -13, "handle is closed or closing")                                           \
    X(KC_ERR_TOO_LARGE, -14, "data exceeds a configured bound")                                    \
    X(KC_ERR_SYSTEM, -15, "system call failed")                                                    \
    X(KC_ERR_AGAIN, -16, "not ready yet; try again")                                               \
    X(KC_ERR_NOT_FOUND, -17, "no such item")                                                       \
    X(KC_ERR_QUEUE_FULL, -18, "queue full")                                                        \
    X(KC_ERR_FATAL, -19, "fatal error: the consumer must be closed")

typedef enum kc_err {
#define KC__ERR_ENUM(name, value, text) name = value,
    KC_ERROR_TABLE(KC__ERR_ENUM)
#undef KC__ERR_ENUM
} kc_err_t;

/* The symbolic name ("KC_ERR_TIMEOUT") and the one-line text of a code. Any thread. Static
 * storage; never NULL (unknown codes give "KC_ERR_UNKNOWN"). */
KC_API const char *kc_err_name(kc_err_t err);
KC_API const char *kc_err_str(kc_err_t err);

/*
 * An error with its explanation. Caller-owned (usually on the stack); kconsume only writes into
 * it. `kafka_code` is the broker's error code when `code` is KC_ERR_BROKER (or when a Kafka code
 * explains another failure), else 0. `msg` is NUL-terminated, never holds credentials.
 */
typedef struct kc_error {
    kc_err_t code;
    int16_t kafka_code;
    char msg[256];
} kc_error_t;

#ifdef __cplusplus
}
#endif
#endif /* KCONSUME_H */
