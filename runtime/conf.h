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
    kc_log_cb_t log_cb;        /* kc_conf_set_log_cb; NULL: stderr */
    void *log_opaque;
    kc_oauthbearer_token_cb_t oauth_cb; /* kc_conf_set_oauthbearer_token_cb; NULL: none */
    void *oauth_opaque;
};

/* Typed reads of the effective value (set or default). Values were validated at set time, so
 * these cannot fail; an unset STR/LIST with an empty default reads "". */
int64_t kc_conf_int(const kc_conf_t *c, kc_conf_id_t id);
bool kc_conf_bool(const kc_conf_t *c, kc_conf_id_t id);
const char *kc_conf_str(const kc_conf_t *c, kc_conf_id_t id);
/* A STR key with the FRACTION flag, as a number (0 <= x < 1). */
double kc_conf_fraction(const kc_conf_t *c, kc_conf_id_t id);
bool kc_conf_is_set(const kc_conf_t *c, kc_conf_id_t id);
const char *kc_conf_name(kc_conf_id_t id);

/* The group protocol the configuration decides. group.protocol=classic|consumer decide
 * themselves. Under auto (the default) a setting only one protocol has decides for it: classic's
 * partition.assignment.strategy, session.timeout.ms, heartbeat.interval.ms, rebalance.timeout.ms;
 * KIP-848's group.remote.assignor, group.consumer.session.timeout.ms. *key (may be NULL) names
 * the setting that decided, NULL when group.protocol named the protocol or nothing decided
 * (KC_GROUP_PROTO_AUTO: the group driver asks the coordinator at subscribe). Both kinds set
 * under auto is KC_GROUP_PROTO_CONFLICT, which kc_conf_validate refuses. Pure. */
typedef enum {
    KC_GROUP_PROTO_AUTO = 0,
    KC_GROUP_PROTO_CLASSIC,
    KC_GROUP_PROTO_CONSUMER,
    KC_GROUP_PROTO_CONFLICT,
} kc_group_proto_choice_t;
kc_group_proto_choice_t kc_conf_group_protocol(const kc_conf_t *c, const char **key);
/* group.type=share: a share group's member (KIP-932), whatever group.protocol says. Pure. */
bool kc_conf_share(const kc_conf_t *c);

/* The table's facts about one key (tests audit every key through this; tools may print it). */
typedef enum {
    KC_CONF_T_INT,
    KC_CONF_T_BOOL,
    KC_CONF_T_STR,
    KC_CONF_T_ENUM,
    KC_CONF_T_LIST
} kc_conf_type_t;
typedef struct kc_conf_key_info {
    const char *name, *def, *allowed; /* allowed: '|'-separated words or NULL */
    kc_conf_type_t type;
    int64_t min, max; /* INT only */
    bool secret;      /* never printed or echoed */
    bool empty_ok;    /* ENUM: "" is also accepted (Java's "switched off") */
} kc_conf_key_info_t;
void kc_conf_key_info(kc_conf_id_t id, kc_conf_key_info_t *out);

/* Levenshtein distance, bounded inputs (keys and enum values; longer strings are clipped). */
int kc_conf_edit_distance(const char *a, const char *b);

#endif
