/*
 * The version range the engine speaks for each request it sends. Every request names its range
 * and the connection picks the newest version the broker offers within it (kc_conn_pick_version);
 * the generated codec writes and reads each version's own fields, so one request-building path
 * serves every version in the range.
 *
 * Each floor is the oldest version whose fields the engine relies on, and every floor is at or
 * below what Apache Kafka 2.1 offers (the oldest broker Java's 4.x client supports). A broker
 * with no version in a range gets that request refused at once, with a message naming the API,
 * the broker's range and ours (io/conn_wire.h kc_wire_version_refusal); nothing retries it in a
 * loop hoping for a different answer.
 *
 * The ceilings stop below versions the engine does not speak yet: OffsetCommit / OffsetFetch v10
 * name topics by id only and are unstable in Kafka 4.1 (a broker offers them only with
 * unstable.api.versions.enable).
 *
 * Owner: none (constants).
 */
#ifndef KC_ENGINE_VERSIONS_H
#define KC_ENGINE_VERSIONS_H

#include "proto/proto.h"

/* v7: each partition's leader epoch, which KIP-320 position validation needs. Topic ids come
 * with v10 (Kafka 2.8); before that the metadata cache gives each topic a synthetic id
 * (fetch/partition.h kc_tp_synthetic_id) so the engine keys partitions the same way. */
#define KC_ENG_METADATA_MIN 7
#define KC_ENG_METADATA_MAX 13

/* v7: KIP-227 fetch sessions (fetch/session.h has no sessionless-only mode). Topics by name up to
 * v12, by id from v13 (fetch/codec.h). */
#define KC_ENG_FETCH_MIN KC_FETCH_CODEC_MIN_VERSION
#define KC_ENG_FETCH_MAX KC_FETCH_REQUEST_MAX_VERSION

/* v2: isolation_level, so that under read_committed "latest" is the last stable offset. */
#define KC_ENG_LIST_OFFSETS_MIN 2
#define KC_ENG_LIST_OFFSETS_MAX KC_LIST_OFFSETS_REQUEST_MAX_VERSION

/* v2: the current leader epoch (KIP-320, Kafka 2.1), which is what validation sends. */
#define KC_ENG_OFFSET_FOR_LEADER_EPOCH_MIN 2
#define KC_ENG_OFFSET_FOR_LEADER_EPOCH_MAX KC_OFFSET_FOR_LEADER_EPOCH_REQUEST_MAX_VERSION

/* v0: one key per request; v4+ batches keys (KIP-699, Kafka 3.0). kc_eng_fc_encode/decode write
 * and read both forms. */
#define KC_ENG_FIND_COORDINATOR_MIN 0
#define KC_ENG_FIND_COORDINATOR_MAX KC_FIND_COORDINATOR_REQUEST_MAX_VERSION

/* The codec's floor (v2, member identity and retention time); the leader epoch comes with v6,
 * group.instance.id with v7. */
#define KC_ENG_OFFSET_COMMIT_MIN 2
#define KC_ENG_OFFSET_COMMIT_MAX 9

/* The codec's floor (v1); one group per request before v8, a groups array from v8
 * (offsets_codec.h writes and reads both), the committed leader epoch from v5. */
#define KC_ENG_OFFSET_FETCH_MIN 1
#define KC_ENG_OFFSET_FETCH_MAX 9

#endif
