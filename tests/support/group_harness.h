/*
 * Group members on the library's own driver (engine/group/group.h), against a real broker: each
 * member is an engine and a kc_group on one network thread the harness's members share, with
 * hooks that stand in for the runtime's workers:
 *   revoke   the partition stays held until its on_revoke "returns", `revoke_delay_ms` after it
 *            was asked (a slow callback; a timer on the network thread), then kc_group_revoked;
 *   assign   the partition joins `held`; a partition another member of the harness still holds
 *            fails the test (the rebalance gate's promise: a partition arrives only after its
 *            previous owner's on_revoke returned), and so does one this member is revoking;
 *   drop     counted; committable -1 (nothing was consumed); poll_over the test's `overrun`;
 *   error    kept (the last one, fatal or not); unexpected errors fail the test.
 * No records are fetched: the hooks add nothing to the engine's fetch sessions.
 *
 * The test thread reads a member through kc_gh_view (a call on the network thread), which fails
 * the test there when a hook found a violation (a hook cannot: cmocka's failure unwinds the
 * thread it runs on), and waits with kc_gh_run_until / kc_gh_settle.
 *
 * Owner: the network thread for everything the hooks touch; the test thread owns the handles.
 */
#ifndef KC_TEST_GROUP_HARNESS_H
#define KC_TEST_GROUP_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "group/group.h"

typedef struct kc_gh kc_gh_t;
typedef struct kc_gh_member kc_gh_member_t;

typedef struct kc_gh_opts {
    const kc_group_proto_t *proto; /* &kc_g848_proto, &kc_classic_proto */
    const char *group;
    const char *instance;  /* group.instance.id; NULL: dynamic */
    const char *assignors; /* classic: partition.assignment.strategy; NULL: range */
    int64_t revoke_delay_ms;
    bool expect_error;                                 /* errors are kept, not failures */
    int32_t session_timeout_ms, heartbeat_interval_ms; /* classic; 0: 10000 / 1000 */
} kc_gh_opts_t;

/* What a member looks like now. */
typedef struct kc_gh_tp {
    char topic[96];
    int32_t partition;
} kc_gh_tp_t;

#define KC_GH_MAX_PARTS 64

typedef struct kc_gh_view {
    int held;                          /* partitions the "application" holds */
    kc_gh_tp_t parts[KC_GH_MAX_PARTS]; /* those, by topic name then partition */
    long stray_assigns;                /* assigned partitions of topics not subscribed to */
    int32_t epoch;                     /* generation / member epoch (<= 0: not in the group) */
    char member_id[128];
    bool stable; /* in the group, no reconciliation running (kc_group_may_auto_commit); classic:
                    and no rejoin decided */
    bool closed; /* kc_group_closed */
    int revokes, loses, assigns, drops, errors;
    bool fatal;
    kc_error_t error; /* the last */
    /* the classic member's own: the group's leader; SyncGroup answers naming a topic it does not
     * subscribe to (not applied) */
    bool leader;
    uint64_t mismatched;
} kc_gh_view_t;

kc_gh_t *kc_gh_start(void);
/* Stops the network thread; every member must be closed (kc_gh_close) first. */
void kc_gh_stop(kc_gh_t *h);
/* A member subscribed to `topics` (or one regex: n = 1, "^..."); joins from now on. */
kc_gh_member_t *kc_gh_join(kc_gh_t *h, const kc_gh_opts_t *o, const char *const *topics, size_t n);
kc_gh_view_t kc_gh_view(kc_gh_member_t *m);
/* Until done(view of m) or `ms` pass, completing due revokes of every member; done's answer. */
bool kc_gh_run_until(kc_gh_member_t *m, bool (*done)(const kc_gh_view_t *v, void *arg), void *arg,
                     int64_t ms);
/* Every member in `ms` stable, holding `total` partitions together, for `stable_ms` on end
 * (waiting up to `ms_max`). */
bool kc_gh_settle(kc_gh_member_t *const *ms, int n, int total, int64_t stable_ms, int64_t ms_max);
/* A new subscription (kc_group_subscribe), as the application's kc_subscribe. */
void kc_gh_subscribe(kc_gh_member_t *m, const char *const *topics, size_t n);
/* The classic member's subscription changed while its JoinGroup (with its member id) waits at
 * the coordinator, checked and done in one step on the network thread: false, and nothing
 * changed, when no such JoinGroup is out right now. */
bool kc_gh_subscribe_during_join(kc_gh_member_t *m, const char *const *topics, size_t n);
/* The watchdog's count of callbacks past max.poll.interval.ms. */
void kc_gh_overrun(kc_gh_member_t *m, unsigned n);
/* Leaves (kc_group_close), waits up to `ms` for it to be over, frees the member. */
bool kc_gh_close(kc_gh_member_t *m, int64_t ms);

#endif
