/*
 * The chaos suites' common harness (tests/kafka/test_chaos_*.c): a fresh topic, records produced
 * by Kafka's Java producer (in the foreground or in the background, "under load"), consumers
 * (kconsume members, manual assignment or a group) whose callbacks account for every delivered
 * (partition, offset), and the verdict:
 *
 *   - every record in the log (offsets [0, end) of every partition) delivered at least once;
 *   - a duplicate only inside the documented window: a record delivered twice by the same member
 *     within one assignment of its partition is a violation. At-least-once redelivery happens
 *     only across members or assignments: when a partition changes hands the new owner starts
 *     at the last committed offset, and a member cut off from its coordinator keeps delivering
 *     its old partitions until it learns it was fenced (KIP-848: its commits are then refused
 *     by member epoch). With manual assignment that means no duplicate at all;
 *   - no partition stalls longer than the bound the test gives (the session timeout): a sampler
 *     thread tracks, per partition, how long records were waiting (end offset > contiguous
 *     delivered frontier) without the frontier moving;
 *   - no error event except the codes the test allows (KC_ERR_CRC for a corrupt batch...).
 *
 * kc_chaos_finish prints "chaos: FAULT produced=N consumed=N dup=N lost=N ..." and asserts.
 * Scale: KC_CHAOS_SCALE=short (default, label kafka), long (label chaos), soak (label soak).
 *
 * Owner: the test's main thread, except the per-record tables (atomics, written by the members'
 * workers) and the sampler's stall figures (atomics, written by the sampler thread).
 */
#ifndef KC_TEST_CHAOS_H
#define KC_TEST_CHAOS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kconsume.h"

typedef struct kc_chaos kc_chaos_t;
typedef struct kc_chaos_member kc_chaos_member_t;

typedef enum { KC_CHAOS_SHORT = 0, KC_CHAOS_LONG = 1, KC_CHAOS_SOAK = 2 } kc_chaos_scale_t;
kc_chaos_scale_t kc_chaos_scale(void);
int64_t kc_chaos_now_ms(void);
/* KC_CHAOS_ONLY=pattern runs only the matching tests of a suite (cmocka's filter). */
void kc_chaos_filter(void);

/* Creates topic "kc-chaos-FAULT-<pid>" with `partitions` and `replication`; `cap` bounds the
 * records per partition the tables hold. Starts the sampler. */
kc_chaos_t *kc_chaos_new(const char *fault, int partitions, int replication, long cap);
const char *kc_chaos_topic(const kc_chaos_t *ch);
/* Errors the contract lets reach on_event in this fault (others are violations). */
void kc_chaos_allow_error(kc_chaos_t *ch, kc_err_t code);
/* Fail the suite when record callbacks of one partition ever run on two members at once (the
 * self-fence's promise: a cut-off member stops before its partitions move). Printed always. */
void kc_chaos_require_exclusive(kc_chaos_t *ch);
/* Self-fence reports are expected (a member is cut off); by default one fails the suite. */
void kc_chaos_allow_self_fence(kc_chaos_t *ch);

/* Produces n records of 100 bytes with acks=all: rate 0 = as fast as possible, else records/s.
 * _bg returns the producer's pid at once; kc_chaos_produce_wait reaps it (its exit status). */
void kc_chaos_produce(kc_chaos_t *ch, long n);
pid_t kc_chaos_produce_bg(kc_chaos_t *ch, long n, int rate);
int kc_chaos_produce_wait(pid_t pid);

/* A consumer. group NULL: kc_assign of every partition from the beginning. conf: "k=v;k=v"
 * overrides (e.g. "group.protocol=classic;session.timeout.ms=6000"). */
kc_chaos_member_t *kc_chaos_member_new(kc_chaos_t *ch, const char *bootstrap, const char *group,
                                       const char *conf);
/* kc_close (orderly: commit, leave) and kc_destroy. A member that should vanish without leaving
 * is cut off by the proxy instead. */
void kc_chaos_member_close(kc_chaos_member_t *m);
/* The next `count` on_records calls (with records) each sleep ms: slow callbacks. */
void kc_chaos_member_set_slow(kc_chaos_member_t *m, int ms, int count);
/* The group's "rebalances" from the member's last stats event (-1 before one). */
long kc_chaos_member_rebalances(kc_chaos_member_t *m);
/* Partitions assigned now (on_assign minus on_revoke/on_lost), and on_lost calls so far. */
int kc_chaos_member_owned(kc_chaos_member_t *m);
int kc_chaos_member_lost(kc_chaos_member_t *m);
/* Prints the group part of the member's last stats event (failure reports). */
void kc_chaos_member_print_group(kc_chaos_member_t *m);
/* Records this member delivered. */
long kc_chaos_member_records(kc_chaos_member_t *m);

/* Records delivered so far (all members, duplicates included). */
long kc_chaos_delivered(kc_chaos_t *ch);
/* Reads the end offsets (the produced set) and waits up to timeout_ms until every offset below
 * them was delivered. True when complete. */
bool kc_chaos_wait_complete(kc_chaos_t *ch, int timeout_ms);
/* Prints the figures line and asserts the four properties. max_stall_ms: the stall bound.
 * Frees ch (close the members first). */
void kc_chaos_finish(kc_chaos_t *ch, long requested, int64_t max_stall_ms);

/* Runs "KC_TESTKIT ARGS --dir KC_CLUSTER_DIR" (e.g. "kill-broker 2"); fails the test on error. */
void kc_chaos_cluster(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
