/*
 * -F FILE: a configuration file of key=value lines, as kcat's (librdkafka property names that
 * kconsume also accepts, e.g. sasl.mechanisms, metadata.broker.list). Pure: it splits text, the
 * caller sets each pair. Main thread only.
 *
 * Each line is trimmed of blanks at both ends; an empty line or one whose first character is '#'
 * is skipped; otherwise the key is what precedes the first '=' (blanks before '=' dropped) and the
 * value what follows it (blanks after '=' dropped; the value may itself hold '=' and be empty).
 */
#ifndef KC_CLI_CONF_FILE_H
#define KC_CLI_CONF_FILE_H

#include <stddef.h>

/* Called per pair, with NUL-terminated copies valid during the call; nonzero stops parsing. */
typedef int (*kc_cli_conf_pair_fn)(void *opaque, const char *key, const char *value, int line);

/* Splits `text` (len bytes). 0 ok; the callback's nonzero value when it stopped; -1 with why
 * ("line 3: expected key=value, got 'abc'") for a line that is no pair or longer than 4095
 * bytes, or a NUL byte. */
int kc_cli_conf_parse(const char *text, size_t len, kc_cli_conf_pair_fn fn, void *opaque, char *why,
                      size_t why_len);

/* The file read without -F, as kcat finds its own: $KCAT_CONFIG when set and not empty (it must
 * then exist), else $HOME/.config/kcat.conf when that file exists; NULL when neither. The path
 * is written to buf. It is applied before the flags (they win over it), and a key kconsume does
 * not take is skipped with a line on stderr (kcat's file may hold librdkafka's keys); -F none
 * reads no file at all. */
const char *kc_cli_default_conf_file(char *buf, size_t len);

#endif
