/*
 * The other clients' names for kconsume's configuration keys, and their keys kconsume does not
 * take (conf_peers.c). Read-only static data; any thread.
 */
#ifndef KC_RUNTIME_CONF_PEERS_H
#define KC_RUNTIME_CONF_PEERS_H

#include <stddef.h>

typedef struct kc_conf_peer {
    const char *name;    /* kconsume's key (conf_keys.h) */
    const char *java;    /* the Java client's key of the same meaning, NULL: none */
    const char *rdkafka; /* librdkafka's, NULL: none */
    const char *note;    /* where the meaning differs, or NULL */
} kc_conf_peer_t;

typedef struct kc_conf_foreign {
    const char *client;  /* "Java" or "librdkafka" */
    const char *keys;    /* their key(s) */
    const char *instead; /* what a kconsume user does instead */
} kc_conf_foreign_t;

/* The row of kconsume key `name`, or NULL when the table lacks it (a test failure). */
const kc_conf_peer_t *kc_conf_peer(const char *name);
/* The other clients' keys kconsume does not take; *n of them. */
const kc_conf_foreign_t *kc_conf_foreign(size_t *n);

#endif
