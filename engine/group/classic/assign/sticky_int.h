/*
 * State shared by the sticky family (sticky.c: input preparation and the constrained builder;
 * sticky_general.c: the general builder). Mirrors the pieces of Java's AbstractStickyAssignor
 * that decide the result: member data, conflict resolution of claimed partitions, rack info.
 *
 * Owner: the network thread; lives for one kc_assign_* call.
 */
#ifndef KC_ENGINE_GROUP_CLASSIC_ASSIGN_STICKY_INT_H
#define KC_ENGINE_GROUP_CLASSIC_ASSIGN_STICKY_INT_H

#include "group/classic/assign/assign_int.h"

typedef struct kc_sticky {
    kc_actx_t c;
    bool coop;
    /* memberData(): the partitions a member claims and its generation */
    kc_ivec_t *md_parts; /* [nm] global indices, topics without metadata dropped */
    bool *md_has_gen;    /* [nm] */
    int32_t *md_gen;     /* [nm] */
    int32_t *sub_gen;    /* [nm]: the subscription's generation id, -1 when absent */
    int32_t max_gen;
    kc_ivec_t *owned; /* [nm]: consumerToOwnedPartitions after conflict resolution */
    bool *multi;      /* [total]: claimed by two members of one generation */
    bool all_equal;   /* every subscription lists the same topics */
    /* RackInfo */
    bool rack_aware;           /* consumerRacks/partitionRacks are non-empty */
    int32_t *n_rack_consumers; /* [total] numConsumersByPartition, NULL when empty */
    /* partitionsTransferringOwnership of the constrained builder: new owner or -1 */
    int32_t *transfer; /* [total] */
} kc_sticky_t;

/* racksMismatch(): the member has a rack (rack-aware mode only) that holds no replica. */
bool kc_sticky_racks_mismatch(const kc_sticky_t *s, size_t m, int32_t gp);
/* The member's rack when rack-aware mode is on, else NULL. */
const char *kc_sticky_rack(const kc_sticky_t *s, size_t m);

/* GeneralAssignmentBuilder.build(): fills s->c.out. KC_ERR_STATE where Java would throw. */
kc_err_t kc_sticky_general(kc_sticky_t *s, kc_error_t *err);

/* Prepares the input and runs the constrained or general builder; s->c.out holds the sticky
 * target. s->transfer is set when the constrained builder ran, NULL after the general one.
 * kc_sticky_free() in every case. */
kc_err_t kc_sticky_compute(kc_sticky_t *s, const kc_assign_input_t *in, bool coop, kc_error_t *err);
void kc_sticky_free(kc_sticky_t *s);

#endif
