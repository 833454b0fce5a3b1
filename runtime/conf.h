/*
 * Configuration, internal side. A kc_conf_t is a plain value owned by one thread at a time (the
 * app thread building it, then the consumer, which only reads it after creation).
 */
#ifndef KC_RUNTIME_CONF_H
#define KC_RUNTIME_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include "kconsume.h"
#include "conf_keys.h"

struct kc_conf {
    char *val[KC_CONF__COUNT]; /* NULL = unset (the table's default applies); owned */
};

/* Typed reads of the effective value (set or default). Values were validated at set time, so
 * these cannot fail; an unset STR/LIST with an empty default reads "". */
int64_t kc_conf_int(const kc_conf_t *c, kc_conf_id_t id);
bool kc_conf_bool(const kc_conf_t *c, kc_conf_id_t id);
const char *kc_conf_str(const kc_conf_t *c, kc_conf_id_t id);
bool kc_conf_is_set(const kc_conf_t *c, kc_conf_id_t id);
const char *kc_conf_name(kc_conf_id_t id);

/* Levenshtein distance, bounded inputs (keys and enum values; longer strings are clipped). */
int kc_conf_edit_distance(const char *a, const char *b);

#endif
