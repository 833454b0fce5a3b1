/*
 * Between engine/offsets and the generated OffsetCommit: a kc_commit_req_t becomes a
 * kc_offset_commit_request_t (entries grouped per topic: by name before v10, by topic id from
 * v10), and a decoded response becomes per-partition verdicts.
 *
 * Owner: network thread (the arena and messages belong to the caller). Pure; no I/O.
 */
#ifndef KC_ENGINE_OFFSETS_CODEC_H
#define KC_ENGINE_OFFSETS_CODEC_H

#include "offsets.h"
#include "proto/offset_commit.gen.h"

/* Fills `m` for `req` at `version` (arrays from `a`; strings borrowed from `req`). v10 names
 * topics by id only: an entry without a topic id is KC_ERR_INVALID_ARG there. */
kc_err_t kc_offsets_codec_commit(kc_offset_commit_request_t *m, const kc_commit_req_t *req,
                                 int16_t version, kc_arena_t *a, kc_error_t *err);

/* Classifies every partition of a decoded OffsetCommit response (it has no top-level error:
 * NOT_COORDINATOR and friends come per partition). Scratch memory comes from `a`. */
kc_err_t kc_offsets_codec_commit_result(const kc_offset_commit_response_t *m, kc_arena_t *a,
                                        kc_offsets_result_t *out, kc_error_t *err);

#endif
