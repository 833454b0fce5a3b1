/* Test-side driver for the KIP-848 member against a real broker (group_driver.c). Failures fail
 * the running cmocka test. Owner: the test's thread. */
#ifndef KC_TEST_GROUP_DRIVER_H
#define KC_TEST_GROUP_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "group/848/member.h"

#define KC_GD_HB_V 1 /* ConsumerGroupHeartbeat version: v1, client-generated member ids */

/* The subscribed 3-partition topic (created by kc_gd_create_topic, a cmocka group setup) and the
 * regex test's late topic, which kc_gd_lookup knows only once a METADATA action fetched it. */
extern char kc_gd_topic[64];
extern uint8_t kc_gd_topic_id[16];
extern char kc_gd_topic2[64];
extern uint8_t kc_gd_topic2_id[16];
extern bool kc_gd_topic2_known;

int64_t kc_gd_now_ms(void);
const char *kc_gd_lookup(void *ctx, const uint8_t id[16]);
void kc_gd_metadata_topic(int fd, const char *name, uint8_t id_out[16], int32_t partitions);
/* FindCoordinator until known; a connection to the coordinator. */
int kc_gd_coordinator(const char *bootstrap, const char *group);
/* ConsumerGroupDescribe: member count; the first member's epoch and assigned partition count. */
int kc_gd_describe(int fd, const char *group, const char *member_id, int32_t *epoch,
                   int *n_assigned);
/* One heartbeat round trip if due: the response's error code, -1 if none was due. */
int kc_gd_heartbeat(int fd, kc_g848_t *gc, int *owned_sent);

/* A member driven by kc_gd_member_step: revokes complete `revoke_delay` ms after they are asked
 * for (a slow on_revoke), everything else at once. */
typedef struct kc_gd_member {
    kc_g848_t gc;
    int fd;
    bool revoke_pending;
    uint64_t revoke_seq;
    int64_t revoke_at;
    int revokes;
    bool expect_error, error_fatal;
    int metadata_asks;
    kc_error_t error;
} kc_gd_member_t;

void kc_gd_member_start_regex(kc_gd_member_t *m, const char *bootstrap, const char *group,
                              const char *instance, const char *regex);
void kc_gd_member_start(kc_gd_member_t *m, const char *bootstrap, const char *group,
                        const char *instance);
/* One round: carry out due actions (asserting no partition arrives that `other` still holds),
 * then heartbeat if due. */
void kc_gd_member_step(kc_gd_member_t *m, kc_gd_member_t *other, const char *bootstrap,
                       const char *group, int64_t revoke_delay);
void kc_gd_run_until(kc_gd_member_t *m, kc_gd_member_t *other, const char *bootstrap,
                     const char *group, bool (*done)(const kc_gd_member_t *), int64_t ms);
bool kc_gd_settled(const kc_gd_member_t *m);
bool kc_gd_owns_all(const kc_gd_member_t *m);
bool kc_gd_owns_five(const kc_gd_member_t *m);
bool kc_gd_gone(const kc_gd_member_t *m);
bool kc_gd_failed(const kc_gd_member_t *m);
bool kc_gd_stale(const kc_gd_member_t *m);
int kc_gd_create_topic(void **state);

#endif
