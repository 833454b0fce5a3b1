/*
 * The CLI's output format (-f): compiled once from a kcat-like string, rendered per record into a
 * caller-owned growable buffer. Pure: it sees records through kc_cli_rec_t, not the library, so
 * the unit test drives it with fake records.
 *
 * Threads: a compiled kc_cli_fmt_t is immutable after kc_cli_fmt_compile and shared read-only by
 * every worker; each kc_cli_buf_t belongs to one thread (one per worker in the CLI).
 */
#ifndef KC_CLI_FORMAT_H
#define KC_CLI_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* What one conversion prints. */
typedef enum kc_cli_op {
    KC_CLI_LIT = 0,   /* literal text (escapes already resolved) */
    KC_CLI_TOPIC,     /* %t */
    KC_CLI_PARTITION, /* %p */
    KC_CLI_OFFSET,    /* %o */
    KC_CLI_KEY,       /* %k: raw bytes, nothing for a null key */
    KC_CLI_VALUE,     /* %s: raw bytes, nothing for a null value */
    KC_CLI_HEADERS,   /* %h: name=value,name=value (a null value prints the name alone) */
    KC_CLI_TIMESTAMP, /* %T: ms since the epoch */
    KC_CLI_KEY_LEN,   /* %K: bytes, -1 for null */
    KC_CLI_VALUE_LEN, /* %S: bytes, -1 for null */
    KC_CLI_WORKER,    /* %w */
    KC_CLI_MEMBER,    /* %M */
    KC_CLI_CB_NS,     /* %n: CLOCK_MONOTONIC ns when the delivering callback started */
    KC_CLI_JSON,      /* %J: the record as kcat -J's JSON object (see kc_cli_fmt_render) */
    KC_CLI_DELIVERY,  /* %D: the share-group delivery count (-1 outside share groups) */
    KC_CLI_OP_COUNT
} kc_cli_op_t;

typedef struct kc_cli_piece {
    kc_cli_op_t op;
    size_t lit_off, lit_len; /* KC_CLI_LIT: a slice of kc_cli_fmt_t.lit */
} kc_cli_piece_t;

typedef struct kc_cli_fmt {
    kc_cli_piece_t *pieces;
    size_t n;
    char *lit;     /* all literal text, escapes resolved */
    unsigned uses; /* bit (1u << op) for each op present */
} kc_cli_fmt_t;

/* Header iteration as kc_record_header_next does it: 0 next header, 1 no more, -1 malformed. */
typedef int (*kc_cli_hdr_next_fn)(const void *src, size_t *cursor, const char **name,
                                  size_t *name_len, const void **value, size_t *value_len);

/* One record as the formatter sees it. key/value NULL means null (length ignored). */
typedef struct kc_cli_rec {
    const char *topic;
    int32_t partition;
    int64_t offset;
    int64_t timestamp;
    const void *key;
    size_t key_len;
    const void *value;
    size_t value_len;
    const void *hdr_src; /* passed to hdr_next; hdr_next NULL means "no headers" */
    kc_cli_hdr_next_fn hdr_next;
    int ts_type;    /* 0 CreateTime, 1 LogAppendTime (-1: unknown) */
    int32_t broker; /* the broker whose Fetch answer carried it */
    int worker;
    const char *member; /* NUL-terminated, never NULL */
    int delivery_count; /* share groups: kc_records_delivery_count, else -1 */
    uint64_t cb_start_ns;
} kc_cli_rec_t;

/* Compiles `spec`. On error returns -1 and writes a one-line reason (naming the bad conversion
 * or escape and its position) into why. The result is freed with kc_cli_fmt_free. */
int kc_cli_fmt_compile(kc_cli_fmt_t *f, const char *spec, char *why, size_t why_len);
void kc_cli_fmt_free(kc_cli_fmt_t *f);
static inline int kc_cli_fmt_uses(const kc_cli_fmt_t *f, kc_cli_op_t op)
{
    return (f->uses >> op) & 1u;
}

/* A growable byte buffer; reused across batches so it allocates only when it grows. */
typedef struct kc_cli_buf {
    char *p;
    size_t len, cap;
} kc_cli_buf_t;

int kc_cli_buf_put(kc_cli_buf_t *b, const void *data, size_t n); /* 0 ok, -1 out of memory */
void kc_cli_buf_free(kc_cli_buf_t *b);

/* Appends `data` as a JSON string, null for NULL, escaped as %J's strings are (below). 0 ok, -1
 * out of memory. */
int kc_cli_json_str(kc_cli_buf_t *b, const void *data, size_t len);

/* The format -J stands for: kcat's JSON envelope, one object per line. */
#define KC_CLI_JSON_FORMAT "%J\\n"

/* Appends one rendered record to b. 0 ok, -1 out of memory (b keeps what it had).
 * %J writes kcat -J's object with its field names, order and value types: topic, partition,
 * offset, tstype ("create", "logappend", "unknown"), ts, broker, headers (only when the record
 * has some: [name, value, ...], a null value as null), key and payload (null for null); strings
 * escape '"', '\' and control characters (\t \n \r \b \f, else \u00XX, upper-case hex) and pass
 * every other byte through as it is, as kcat does. Header bytes that do not parse end the
 * headers array early and add "headers_malformed":true. */
int kc_cli_fmt_render(const kc_cli_fmt_t *f, const kc_cli_rec_t *r, kc_cli_buf_t *b);

#endif
