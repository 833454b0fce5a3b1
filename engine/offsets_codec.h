/*
 * Between engine/offsets and the generated OffsetCommit / OffsetFetch: a kc_commit_req_t becomes
 * a kc_offset_commit_request_t (entries grouped per topic: by name before v10, by topic id from
 * v10), and a decoded response becomes per-partition verdicts; an OffsetFetch for one group is
 * written in both of its forms (one group before v8, a groups array from v8) and either form of
 * the answer is read the same way.
 *
 * Owner: network thread (the arena and messages belong to the caller). Pure; no I/O.
 */
#ifndef KC_ENGINE_OFFSETS_CODEC_H
#define KC_ENGINE_OFFSETS_CODEC_H

#include "offsets.h"
#include "proto/offset_commit.gen.h"
#include "proto/offset_fetch.gen.h"

/* Fills `m` for `req` at `version` (arrays from `a`; strings borrowed from `req`). v10 names
 * topics by id only: an entry without a topic id is KC_ERR_INVALID_ARG there. */
kc_err_t kc_offsets_codec_commit(kc_offset_commit_request_t *m, const kc_commit_req_t *req,
                                 int16_t version, kc_arena_t *a, kc_error_t *err);

/* Classifies every partition of a decoded OffsetCommit response (it has no top-level error:
 * NOT_COORDINATOR and friends come per partition). Scratch memory comes from `a`. */
kc_err_t kc_offsets_codec_commit_result(const kc_offset_commit_response_t *m, kc_arena_t *a,
                                        kc_offsets_result_t *out, kc_error_t *err);

/* One partition whose committed offset is asked for. */
typedef struct kc_offsets_tp {
    const char *topic;
    int32_t partition;
} kc_offsets_tp_t;

/* Fills `m` to ask `group` for the committed offsets of `tps` (a topic's partitions adjacent;
 * strings borrowed, arrays from `a`). `member_id` non-NULL names a member (KIP-848, v9+: the
 * broker checks it still belongs); NULL is the form brokers accept from anyone. Both forms are
 * filled; the encoder writes the one of its version. require_stable (v7+) is set: offsets of
 * transactions still open are not settled yet. */
kc_err_t kc_offsets_codec_fetch(kc_offset_fetch_request_t *m, const char *group,
                                const char *member_id, int32_t member_epoch,
                                const kc_offsets_tp_t *tps, size_t n, kc_arena_t *a,
                                kc_error_t *err);

/* One partition of an OffsetFetch answer. `topic` points into the response. */
typedef struct kc_offsets_fetched {
    kc_str_t topic;
    int32_t partition;
    int64_t offset;       /* -1: nothing committed */
    int32_t leader_epoch; /* -1 unknown (always before v5) */
    int16_t error_code;
    kc_str_t metadata; /* the string committed with the offset; len -1: null */
} kc_offsets_fetched_t;

/* Walks a decoded OffsetFetch answer of `version`: kc_offsets_codec_fetched_init (0 when the
 * answer does not hold exactly the one group asked about; *top gets the group's error code, 0
 * before v2, which has none), then kc_offsets_codec_fetched_next until it returns 0. */
typedef struct kc_offsets_fetched_iter {
    const kc_offset_fetch_response_t *m;
    int16_t version;
    int32_t topic, part;
} kc_offsets_fetched_iter_t;

int kc_offsets_codec_fetched_init(kc_offsets_fetched_iter_t *it,
                                  const kc_offset_fetch_response_t *m, int16_t version,
                                  int16_t *top);
int kc_offsets_codec_fetched_next(kc_offsets_fetched_iter_t *it, kc_offsets_fetched_t *out);

#endif
