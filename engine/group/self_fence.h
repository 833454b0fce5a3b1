/*
 * The self-fence rule: when a group member, cut off from its coordinator, must stop starting
 * callbacks so that it is no longer delivering when the coordinator hands its partitions to
 * another member. Pure: no clock, no state; the group drivers (group/848/proto.c,
 * group/classic/proto.c) pass the time in.
 *
 * The coordinator restarts a member's session when it receives a heartbeat it answers, so it
 * cannot expire the member before `sent + session_ms`, where `sent` is OUR send time of the last
 * heartbeat that was answered (the coordinator received it no earlier). That is the one deadline
 * the member can compute without knowing the coordinator's clock. The member fences itself at
 * `sent + ratio * session_ms` (ratio in (0, 1)): the rest of the session is the margin for a
 * callback in flight to finish and for the network thread to notice. ratio <= 0 disables it.
 *
 * Owner: none (pure functions, any thread).
 */
#ifndef KC_ENGINE_GROUP_SELF_FENCE_H
#define KC_ENGINE_GROUP_SELF_FENCE_H

#include <stdbool.h>
#include <stdint.h>

/* The time at which the member fences itself, INT64_MAX when never: the rule is disabled
 * (ratio <= 0), the session is unknown (session_ms <= 0) or nothing was answered yet
 * (answered_sent_ms < 0: before the first answer the member holds nothing). */
int64_t kc_self_fence_at(int64_t answered_sent_ms, int64_t session_ms, double ratio);

/* true when the member must be fenced at now_ms. *next_ms (may be NULL): when to look again —
 * the fence time while not fenced yet, INT64_MAX once fenced or when the rule never fires (an
 * answer is what changes the verdict, and it wakes the driver). */
bool kc_self_fence_due(int64_t answered_sent_ms, int64_t session_ms, double ratio, int64_t now_ms,
                       int64_t *next_ms);

/* The ratio in force for a heartbeat interval the coordinator chose (KIP-848 sends it; classic
 * validates its own statically): the fence point is never before two intervals, nor before the
 * point halfway between the next heartbeat and the session's end when that comes first, so a
 * healthy member whose answer comes one interval after the last is not fenced at every
 * heartbeat (session 6000 with interval 5000: 0.8 would fence at 4800, before the 5000
 * heartbeat was even sent; the floor is 5500). ratio <= 0 stays disabled; an unknown interval or
 * session (<= 0) leaves the ratio as it is. */
double kc_self_fence_ratio(double ratio, int64_t session_ms, int64_t interval_ms);

/* The earliest time the coordinator may expire the member: answered_sent_ms + session_ms
 * (INT64_MAX when unknown). For the report. */
int64_t kc_self_fence_expiry(int64_t answered_sent_ms, int64_t session_ms);

#endif
