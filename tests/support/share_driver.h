/* Test-side share-group member against a real broker (share_driver.c): engine/group's KIP-848
 * member over the share wire (ShareGroupHeartbeat) and engine/share's session (ShareFetch,
 * ShareAcknowledge) over blocking sockets, records decoded with io/batch, each acquired record
 * handed to a verdict function and acknowledged on the next ShareFetch (ShareAcknowledge at
 * close). Single broker: the coordinator is the leader of every partition. Failures fail the
 * running cmocka test. Owner: the test's thread. */
#ifndef KC_TEST_SHARE_DRIVER_H
#define KC_TEST_SHARE_DRIVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "batch/compress/compress.h"
#include "group/848/member.h"
#include "share/session.h"

/* The topic the members subscribe to (kc_sd_topic_create) and its id. */
extern char kc_sd_topic[64];
extern uint8_t kc_sd_topic_id[16];

struct kc_sd_member;
/* The verdict on one acquired record: `index` is its value read as a number (the testkit's keyed
 * produce writes the record index), `count` its delivery count. */
typedef kc_share_ack_type_t (*kc_sd_verdict_fn)(void *ctx, struct kc_sd_member *m, int64_t index,
                                                int16_t count);

typedef struct kc_sd_member {
    int id;
    kc_g848_t gc;
    int hb_fd, fetch_fd;
    kc_share_session_t ss;
    kc_decode_ctx_t dctx;
    kc_sd_verdict_fn verdict;
    void *ctx;
    int owned; /* partitions assigned now */
    bool ever_assigned;
    uint64_t delivered;
    uint64_t acked_ok, ack_failed, errors;
    kc_error_t last_error;
    const char *group;
} kc_sd_member_t;

/* A consumer of the public API in share group `group` on the suite's share cluster
 * (fetch.max.wait.ms 200, plus `more`: kc_test_conf_set_all's "key=value;...", NULL none),
 * subscribed to kc_sd_topic. Fails the test on error. */
struct kc_consumer *kc_sd_consumer(const char *group, const char *more,
                                   const struct kc_callbacks *cbs);

/* `$KC_TESTKIT ARGS --dir $KC_SHARE_CLUSTER_DIR`; fails the test if it fails. */
void kc_sd_testkit(const char *args);
/* Creates kc_sd_topic (name from `prefix` and the pid) with `partitions` and makes `group` start
 * at the earliest offset. */
void kc_sd_setup(const char *prefix, int partitions, const char *group);
/* Sets `setting` ("key=value") on share group `group` (kafka-configs --entity-type groups): e.g.
 * share.record.lock.duration.ms, for tests that wait for a lock to run out. */
void kc_sd_group_config(const char *group, const char *setting);
/* Writes `records` keyed records to kc_sd_topic (kc_sd_produce_start) and waits until they are. */
void kc_sd_produce(int records);
/* The same, lingering 1 s so that a few records go in one producer batch (one per partition). */
void kc_sd_produce_one_batch(int records);
/* Writes `records` keyed records to kc_sd_topic in a child process (values: the record index,
 * zero-padded), so members keep heartbeating meanwhile; kc_sd_produce_done says when it is over
 * (and fails the test if the producer failed). */
pid_t kc_sd_produce_start(int records);
bool kc_sd_produce_done(pid_t pid);
/* `$KC_TESTKIT ARGS --dir $KC_SHARE_CLUSTER_DIR > out` in a child process; kc_sd_child_done
 * (non-blocking) says when it exited and with which status (in *status). */
pid_t kc_sd_testkit_start(const char *args, const char *out);
bool kc_sd_child_done(pid_t pid, int *status);
/* ShareGroupDescribe of `group` through member m's coordinator connection: its member count
 * (-1 when the group is not known yet). */
int kc_sd_describe_members(kc_sd_member_t *m, const char *group);
void kc_sd_start(kc_sd_member_t *m, int id, const char *group, kc_sd_verdict_fn verdict, void *ctx);
/* One round: actions, a heartbeat when due, one ShareFetch (or ShareAcknowledge). */
void kc_sd_step(kc_sd_member_t *m);
/* Leaves (epoch -1) and closes the share session with a ShareAcknowledge at epoch -1 carrying
 * whatever is pending; frees everything. */
void kc_sd_close(kc_sd_member_t *m);
int64_t kc_sd_now_ms(void);

#endif
