/* Error values and their messages. Any thread: no shared state. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto/kafka_errors.h"

const char *kc_version(void)
{
    return "0.1.0";
}

const char *kc_err_name(kc_err_t err)
{
    switch (err) {
#define KC__ERR_NAME(name, value, text)                                                            \
    case name:                                                                                     \
        return #name;
        KC_ERROR_TABLE(KC__ERR_NAME)
#undef KC__ERR_NAME
    }
    return "KC_ERR_UNKNOWN";
}

const char *kc_kafka_error_name(int16_t code)
{
    return kc_kafka_err_name(code);
}

const char *kc_err_str(kc_err_t err)
{
    switch (err) {
#define KC__ERR_TEXT(name, value, text)                                                            \
    case name:                                                                                     \
        return text;
        KC_ERROR_TABLE(KC__ERR_TEXT)
#undef KC__ERR_TEXT
    }
    return "unknown error";
}

static void set_msg(kc_error_t *err, const char *prefix, const char *fmt, va_list ap)
{
    size_t off = 0;
    if (prefix) {
        int n = snprintf(err->msg, sizeof err->msg, "%s: ", prefix);
        off = n < 0 ? 0 : (size_t)n < sizeof err->msg ? (size_t)n : sizeof err->msg - 1;
    }
    vsnprintf(err->msg + off, sizeof err->msg - off, fmt, ap);
}

kc_err_t kc_fail(kc_error_t *err, kc_err_t code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        err->kafka_code = 0;
        va_start(ap, fmt);
        set_msg(err, NULL, fmt, ap);
        va_end(ap);
    }
    return code;
}

kc_err_t kc_fail_kafka(kc_error_t *err, int16_t kafka_code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = KC_ERR_BROKER;
        err->kafka_code = kafka_code;
        va_start(ap, fmt);
        set_msg(err, kc_kafka_err_name(kafka_code), fmt, ap);
        va_end(ap);
    }
    return KC_ERR_BROKER;
}

void kc_error_clear(kc_error_t *err)
{
    if (err) {
        err->code = KC_OK;
        err->kafka_code = 0;
        err->msg[0] = '\0';
    }
}
