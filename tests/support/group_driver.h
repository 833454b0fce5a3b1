/* KIP-848 tests' broker helpers (group_driver.c): the topic under test, FindCoordinator,
 * ConsumerGroupDescribe, Metadata, and the pure member over a blocking socket. Failures fail the
 * running cmocka test. Owner: the test's thread. */
#ifndef KC_TEST_GROUP_DRIVER_H
#define KC_TEST_GROUP_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "group/848/member.h"

#define KC_GD_HB_V 1 /* ConsumerGroupHeartbeat version: v1, client-generated member ids */

/* The subscribed 3-partition topic, created by kc_gd_create_topic (a cmocka group setup). */
extern char kc_gd_topic[64];
extern uint8_t kc_gd_topic_id[16];

int64_t kc_gd_now_ms(void);
/* Topic id → name for the pure member: kc_gd_topic's only. */
const char *kc_gd_lookup(void *ctx, const uint8_t id[16]);
void kc_gd_metadata_topic(int fd, const char *name, uint8_t id_out[16], int32_t partitions);
/* FindCoordinator until known; a connection to the coordinator. */
int kc_gd_coordinator(const char *bootstrap, const char *group);
/* ConsumerGroupDescribe: member count; the first member's epoch and assigned partition count. */
int kc_gd_describe(int fd, const char *group, const char *member_id, int32_t *epoch,
                   int *n_assigned);
/* One heartbeat round trip if due: the response's error code, -1 if none was due. */
int kc_gd_heartbeat(int fd, kc_g848_t *gc, int *owned_sent);

/* The pure member over its own blocking socket, for tests of what the member itself sends and
 * how the broker answers it (a driver never sends a wrong epoch): every action is completed at
 * once, as a runtime with instant callbacks would. Members that need the driver's behaviour run
 * on the library's driver instead (group_harness.h). */
typedef struct kc_gd_member {
    kc_g848_t gc;
    int fd;
} kc_gd_member_t;

void kc_gd_member_start(kc_gd_member_t *m, const char *bootstrap, const char *group,
                        const char *instance);
/* Rounds of due actions and heartbeats until done(m) or `ms` pass. */
void kc_gd_run_until(kc_gd_member_t *m, const char *bootstrap, const char *group,
                     bool (*done)(const kc_gd_member_t *), int64_t ms);
/* Stable, nothing being reconciled, all 3 partitions owned. */
bool kc_gd_owns_all(const kc_gd_member_t *m);
int kc_gd_create_topic(void **state);

#endif
