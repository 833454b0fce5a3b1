/* KIP-848 acceptance tests with members as separate processes (g848_member.c).
 *
 * A test binary re-executes itself as a member: `<self> member BOOTSTRAP GROUP SUB LOG [INSTANCE]`
 * (kc_gm_maybe_member at the top of main). The member runs the public consumer with
 * group.protocol=consumer, subscribes to SUB (comma-separated names, or one '^' regex), and logs
 * every callback with CLOCK_MONOTONIC start/end (one write() per line, so a SIGKILL loses no
 * finished line):
 *   A topic p start end                 on_assign
 *   R topic p start end first last n    on_records (offsets first..last, n records)
 *   V topic p start end / L ...         on_revoke / on_lost
 *   E code start msg                    an error event;  S ts json   a stats event
 *   X rc                                kc_close returned rc (SIGTERM ends the member)
 *   W topic p start end                 the one slow callback (env KC_GM_SLOW_MS) returned
 * Env KC_GM_MAX_POLL_MS sets max.poll.interval.ms.
 * The parent reads the logs back (kc_gm_load) and checks ownership, overlap and delivery.
 * Owner: the test's thread (parent); the member's callbacks write with O_APPEND from workers. */
#ifndef KC_TEST_G848_MEMBER_H
#define KC_TEST_G848_MEMBER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Runs the member and exits when argv asks for it; returns otherwise. */
void kc_gm_maybe_member(int argc, char **argv);

int64_t kc_gm_now_ns(void);
/* Starts a member process; instance NULL for a dynamic member. */
pid_t kc_gm_spawn(const char *group, const char *sub, const char *log, const char *instance);
/* SIGTERM and wait (graceful close); returns the exit status (0 = closed cleanly). */
int kc_gm_stop(pid_t pid);
void kc_gm_kill9(pid_t pid);
/* Runs `$KC_TESTKIT <cmd> --dir $KC_CLUSTER_DIR` quietly; 0 on success. */
int kc_gm_testkit(const char *cmd);

typedef struct kc_gm_ev {
    char kind; /* A R V L E S X */
    int member;
    char topic[96];
    int32_t partition;
    int64_t start, end;
    int64_t first, last, n;
    char text[512]; /* E: message, S: json, X: kc_close's error message */
    long code;
} kc_gm_ev_t;

typedef struct kc_gm_log {
    kc_gm_ev_t *ev;
    size_t n, cap;
} kc_gm_log_t;

/* Appends the events of one member's log (member = its index). */
void kc_gm_load(kc_gm_log_t *lg, const char *path, int member);
void kc_gm_free(kc_gm_log_t *lg);

/* Ownership from the callbacks: member m owns (t,p) from its on_assign start to the end of its
 * on_revoke/on_lost (or `death[m]` when killed, INT64_MAX while alive). Samples every `step_ns`
 * in [from, to]: returns the largest pairwise intersection seen (0 = never two owners), counts
 * samples, and the number of samples after `settle_from` whose union missed a partition of
 * `parts` (names "topic/p"). */
typedef struct kc_gm_sample_result {
    long samples;
    int max_intersection;
    long uncovered_after_settle;
    char first_conflict[160];
} kc_gm_sample_result_t;
kc_gm_sample_result_t kc_gm_sample(const kc_gm_log_t *lg, int members, const int64_t *death,
                                   char parts[][96], int nparts, int64_t from, int64_t to,
                                   int64_t step_ns, int64_t settle_from);

/* Callback overlap: any two members with callbacks on the same partition whose [start, end]
 * intervals intersect. Returns the count; describes the first in `why`. */
long kc_gm_overlaps(const kc_gm_log_t *lg, char *why, size_t cap);

#endif
