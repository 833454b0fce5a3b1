/*
 * A set of (topic name, partition) for the classic group member: the classic protocol names
 * topics, not topic ids, in every payload (subscription, assignment, user data), so ownership is
 * kept by name. Sorted by Java's String order then partition, unique: the subscription's owned
 * partitions are encoded in this order, as Java's ConsumerProtocol sorts them.
 *
 * Topic names are copied (owned by the set). Owner: whoever holds the set; for the classic
 * member that is the network thread.
 */
#ifndef KC_ENGINE_GROUP_CLASSIC_TPS_H
#define KC_ENGINE_GROUP_CLASSIC_TPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct kc_ctp {
    char *topic;
    int32_t partition;
} kc_ctp_t;

typedef struct kc_ctps {
    kc_ctp_t *items;
    size_t n, cap;
} kc_ctps_t;

void kc_ctps_free(kc_ctps_t *s);
void kc_ctps_clear(kc_ctps_t *s);
/* topic is `len` bytes (not NUL-terminated needed); len < 0 means NUL-terminated. */
kc_err_t kc_ctps_add(kc_ctps_t *s, const char *topic, int32_t len, int32_t partition);
bool kc_ctps_contains(const kc_ctps_t *s, const char *topic, int32_t partition);
bool kc_ctps_equal(const kc_ctps_t *a, const kc_ctps_t *b);
kc_err_t kc_ctps_copy(kc_ctps_t *dst, const kc_ctps_t *src);
/* dst = a \ b; dst must be neither. */
kc_err_t kc_ctps_diff(kc_ctps_t *dst, const kc_ctps_t *a, const kc_ctps_t *b);
/* s = s \ b, in place. */
void kc_ctps_remove_all(kc_ctps_t *s, const kc_ctps_t *b);
/* s = s ∪ b. */
kc_err_t kc_ctps_add_all(kc_ctps_t *s, const kc_ctps_t *b);

#endif
