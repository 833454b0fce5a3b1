/*
 * Internals shared by group/classic/member.c, group/classic/answers.c and group/classic/outputs.c.
 * Owner: network thread.
 */
#ifndef KC_ENGINE_GROUP_CLASSIC_MEMBER_INT_H
#define KC_ENGINE_GROUP_CLASSIC_MEMBER_INT_H

#include "group/classic/member.h"
#include "proto/kafka_errors.h"

bool kc_classic_is_coord_error(int16_t c);
void kc_classic_set_str(char **dst, const char *p, int32_t len);
bool kc_classic_str_eq(kc_str_t s, const char *c);
bool kc_classic_subscribed(const kc_classic_t *m, const char *topic);
void kc_classic_free_sync(kc_classic_t *m);
/* Records the first fatal cause: fmt gets (group id, Kafka error name or "", detail or ""). */
void kc_classic_fatal(kc_classic_t *m, int16_t code, const char *fmt, const char *detail);
void kc_classic_rejoin(kc_classic_t *m);
void kc_classic_reset_generation(kc_classic_t *m, bool reset_member_id);
/* Starts a reconciliation towards `target` (the application keeps what both hold), or one that
 * loses everything held; out of memory, the error is surfaced (KC_CLASSIC_ERROR) and false
 * returned (reconcile_to), the member carrying on. */
bool kc_classic_reconcile_to(kc_classic_t *m, const kc_tpset_t *target);
void kc_classic_lose_all(kc_classic_t *m);
void kc_classic_join_prepare(kc_classic_t *m);
/* Coordinator and membership errors, the same in every response; true when handled. */
bool kc_classic_common_error(kc_classic_t *m, int16_t code, int64_t now_ms);

#endif
