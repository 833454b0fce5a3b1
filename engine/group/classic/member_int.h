/*
 * Internals shared by group/classic/member.c, group/classic/answers.c and group/classic/outputs.c.
 * Owner: network thread.
 */
#ifndef KC_ENGINE_GROUP_CLASSIC_MEMBER_INT_H
#define KC_ENGINE_GROUP_CLASSIC_MEMBER_INT_H

#include "group/classic/member.h"
#include "proto/kafka_errors.h"

enum {
    K_COORDINATOR_LOAD_IN_PROGRESS = 14,
    K_COORDINATOR_NOT_AVAILABLE = 15,
    K_NOT_COORDINATOR = 16,
    K_ILLEGAL_GENERATION = 22,
    K_INCONSISTENT_GROUP_PROTOCOL = 23,
    K_UNKNOWN_MEMBER_ID = 25,
    K_INVALID_SESSION_TIMEOUT = 26,
    K_REBALANCE_IN_PROGRESS = 27,
    K_GROUP_AUTHORIZATION_FAILED = 30,
    K_UNSUPPORTED_VERSION = 35,
    K_MEMBER_ID_REQUIRED = 79,
    K_FENCED_INSTANCE_ID = 82,
    K_GROUP_MAX_SIZE_REACHED = 81,
    K_UNRELEASED_INSTANCE_ID = 111,
};

bool kc_classic_is_coord_error(int16_t c);
void kc_classic_set_str(char **dst, const char *p, int32_t len);
bool kc_classic_str_eq(kc_str_t s, const char *c);
bool kc_classic_subscribed(const kc_classic_t *m, const char *topic);
void kc_classic_free_sync(kc_classic_t *m);
/* Records the first fatal cause: fmt gets (group id, Kafka error name or "", detail or ""). */
void kc_classic_fatal(kc_classic_t *m, int16_t code, const char *fmt, const char *detail);
void kc_classic_rejoin(kc_classic_t *m);
void kc_classic_reset_generation(kc_classic_t *m, bool reset_member_id);
void kc_classic_pend_start(kc_classic_t *m, const kc_ctps_t *revoke, const kc_ctps_t *assign,
                           bool lost);
void kc_classic_join_prepare(kc_classic_t *m);
/* Coordinator and membership errors, the same in every response; true when handled. */
bool kc_classic_common_error(kc_classic_t *m, int16_t code, int64_t now_ms);

#endif
