/*
 * The topics a group member's partition sets name, interned: one entry per topic, carrying its
 * id and its name as far as each is known, so that a partition set (group/tpset.h) holds a
 * pointer and an integer per partition instead of a 16-byte id or a copied name.
 *
 * A table is keyed one way, chosen by the member that owns it, because each protocol learns its
 * topics one way: KIP-848's heartbeat names them by id (names come later, from Metadata), the
 * classic protocol's payloads by name (ids never matter to it). The key also fixes the order:
 * ids as memcmp orders them, names in the comparator the owner gives (the classic member gives
 * Java's String order, which its payloads are encoded in). Each entry's `rank` is its place in
 * that order, renumbered as topics arrive without ever changing two entries' relative order, so
 * sets sorted by rank stay sorted and compare integers, not keys.
 *
 * Entries never move or go away while the table lives (their memory is stable), so every set
 * that points into a table must be freed before it. A table grows with the topics the member
 * ever saw (its subscription, its assignments, and for KIP-848 every topic a Metadata answer
 * named); inserting one renumbers the ranks after it, which is linear in the table's size (an
 * answer's names go in at once: kc_gtopics_set_names).
 *
 * Owner: the member that holds the table; in engine/ the network thread. Not thread-safe.
 */
#ifndef KC_ENGINE_GROUP_TOPICS_H
#define KC_ENGINE_GROUP_TOPICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One topic. `rank` and the key are the table's; `name` of an id-keyed table may be filled in
 * later (kc_gtopics_set_names). */
typedef struct kc_gtopic {
    size_t rank;    /* place in the table's order */
    uint8_t id[16]; /* id-keyed: the key; name-keyed: zero */
    char *name;     /* name-keyed: the key; id-keyed: NULL until named */
} kc_gtopic_t;

typedef int (*kc_gtopics_name_cmp)(const char *a, const char *b);

typedef struct kc_gtopics {
    kc_gtopics_name_cmp by_name; /* NULL: keyed by id */
    kc_gtopic_t **items;         /* sorted by the key; items[i]->rank == i */
    size_t n, cap;
} kc_gtopics_t;

/* An empty table keyed by id, or by name in `cmp`'s order. */
void kc_gtopics_init_by_id(kc_gtopics_t *t);
void kc_gtopics_init_by_name(kc_gtopics_t *t, kc_gtopics_name_cmp cmp);
void kc_gtopics_free(kc_gtopics_t *t);

/* The entry for a key, added when absent; NULL only when out of memory (or the table is keyed
 * the other way). `len` < 0: `name` is NUL-terminated. */
const kc_gtopic_t *kc_gtopics_id(kc_gtopics_t *t, const uint8_t id[16]);
const kc_gtopic_t *kc_gtopics_name(kc_gtopics_t *t, const char *name, int32_t len);
/* The entry for a key, NULL when absent. */
const kc_gtopic_t *kc_gtopics_find_id(const kc_gtopics_t *t, const uint8_t id[16]);
const kc_gtopic_t *kc_gtopics_find_name(const kc_gtopics_t *t, const char *name);
/* An id-keyed table learns topics' names (a Metadata answer's): each entry is added when
 * absent, its name set when it has none (the first name stays). The absent ones are appended
 * and the table sorted once, where adding them one by one would renumber the ranks after each
 * (quadratic: a cluster's 50,000 topics in a first answer). false when out of memory (what
 * could be added is) or the table is keyed by name. */
typedef struct kc_gtopic_name {
    const uint8_t *id; /* 16 bytes */
    const char *name;
    size_t len;
} kc_gtopic_name_t;
bool kc_gtopics_set_names(kc_gtopics_t *t, const kc_gtopic_name_t *names, size_t n);

#endif
