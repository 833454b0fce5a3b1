/*
 * -s deserializers: a key's or value's bytes into the text the CLI prints. Pure (no library
 * calls), so the unit test drives it with byte strings.
 *
 * A spec is "json" (the bytes are JSON, printed indented by two spaces per level) or a pack
 * format as kcat's: a sequence of
 *   <  little-endian from here on     >  big-endian from here on (the default)
 *   b B  signed / unsigned 8-bit      h H  16-bit      i I  32-bit      q Q  64-bit
 *   c  one byte as a character        s  the rest of the bytes as they are
 *   $  the bytes must end here
 * each field printed in decimal (c and s as bytes), fields separated by one space. Bytes left
 * after the last field are ignored unless the spec ends with $.
 *
 * Threads: a compiled kc_cli_serdes_t is immutable after kc_cli_serdes_compile and shared
 * read-only by every worker; the output buffer belongs to the rendering thread.
 */
#ifndef KC_CLI_SERDES_H
#define KC_CLI_SERDES_H

#include <stddef.h>

#include "format.h"

typedef struct kc_cli_serdes {
    int json;     /* 1: the "json" spec */
    char ops[64]; /* the pack format's characters, NUL-terminated */
    const char *spec;
} kc_cli_serdes_t;

/* 0 ok; -1 with a one-line reason naming the bad character and its position. */
int kc_cli_serdes_compile(kc_cli_serdes_t *sd, const char *spec, char *why, size_t why_len);

/* Appends the text of `data` (len bytes) to out. 0 ok; -1 when the bytes do not fit the spec
 * (out keeps what it had and why says how: "needs 4 bytes at byte 2, 1 left"), -2 out of memory. */
int kc_cli_serdes_render(const kc_cli_serdes_t *sd, const void *data, size_t len, kc_cli_buf_t *out,
                         char *why, size_t why_len);

#endif
