/*
 * Shared internals of the assignors: the input indexed by integers (members by input position,
 * topics by Java string order, partitions by one global index), Java's string order and hash, and
 * the iteration order of Java's HashMap, which the sticky assignors' results depend on.
 *
 * Owner: the network thread; everything here lives for one kc_assign_* call.
 */
#ifndef KC_ENGINE_GROUP_CLASSIC_ASSIGN_ASSIGN_INT_H
#define KC_ENGINE_GROUP_CLASSIC_ASSIGN_ASSIGN_INT_H

#include "group/classic/assign/assign.h"

typedef struct kc_ivec {
    int32_t *v;
    size_t n, cap;
} kc_ivec_t;

/* Growth failures are recorded in *oom (sticky) instead of being checked at every push. */
void kc_ivec_push(kc_ivec_t *a, int32_t x, bool *oom);
void kc_ivec_free(kc_ivec_t *a);
ptrdiff_t kc_ivec_find(const kc_ivec_t *a, int32_t x);
bool kc_ivec_remove(kc_ivec_t *a, int32_t x); /* first occurrence, order kept */
void kc_ivec_remove_at(kc_ivec_t *a, size_t i);

typedef struct kc_actx {
    const kc_assign_input_t *in;
    size_t nm;
    size_t nt;                       /* topics with metadata that some member subscribes to */
    const kc_assign_topic_t **topic; /* [nt], sorted as Java sorts strings */
    int32_t *toff;                   /* [nt + 1]: first global partition index of topic t */
    int32_t total;                   /* partitions in all topics with metadata */
    int32_t *gp_topic;               /* [total] */
    const char ***gp_racks;          /* [total]: distinct non-null replica racks */
    size_t *gp_nracks;               /* [total] */
    const char **mrack;              /* [nm]: member rack, NULL when unset or "" */
    kc_ivec_t *subs;                 /* [nm]: subscribed topics with metadata, member's order */
    size_t *horder;                  /* [nm]: Java HashMap<memberId,..> iteration order */
    kc_ivec_t *out;                  /* [nm]: the assignment being built (global indices) */
    bool oom;
} kc_actx_t;

kc_err_t kc_actx_init(kc_actx_t *c, const kc_assign_input_t *in, kc_error_t *err);
void kc_actx_free(kc_actx_t *c);
/* Moves c->out into *r (sorted by topic, partition). */
kc_err_t kc_actx_finish(kc_actx_t *c, kc_assign_result_t *r, kc_error_t *err);

int kc_actx_topic(const kc_actx_t *c, const char *name);          /* -1 when absent */
int32_t kc_actx_gp(const kc_actx_t *c, const kc_assign_tp_t *tp); /* -1 when absent */
bool kc_actx_subscribes(const kc_actx_t *c, size_t m, int t);
bool kc_actx_gp_has_rack(const kc_actx_t *c, int32_t gp, const char *rack);
/* True when every partition in [from, to) has the same set of replica racks (the test in
 * Java's useRackAwareAssignment). */
bool kc_actx_racks_uniform(const kc_actx_t *c, int32_t from, int32_t to);
static inline int32_t kc_actx_pnum(const kc_actx_t *c, int32_t gp)
{
    return gp - c->toff[c->gp_topic[gp]];
}

/* Java's String.compareTo (UTF-16 code unit order) and String.hashCode over UTF-8 input. */
int kc_jstr_cmp(const char *a, const char *b);
int32_t kc_jstr_hash(const char *s);
/* TopicPartition.hashCode(). */
int32_t kc_jtp_hash(const char *topic, int32_t partition);
/* The bucket index java.util.HashMap gives a key hash in a table of `cap` slots. */
static inline uint32_t kc_jbucket(int32_t h, size_t cap)
{
    uint32_t u = (uint32_t)h;
    return (u ^ (u >> 16)) & (uint32_t)(cap - 1);
}
/* Table size of a default-constructed HashMap after it has held `n` entries at most. */
size_t kc_jmap_cap(size_t n);
/* Iteration order of a HashMap holding keys with hashes h[0..n) inserted in that order:
 * bucket by bucket, insertion order within a bucket (a resize splits buckets keeping it).
 * Bins long enough to be turned into trees (8+ colliding keys) are not modelled. */
void kc_jmap_order(const int32_t *h, size_t n, size_t cap, size_t *order);

/* Orders member indices as Java sorts MemberInfo: static members first (by group.instance.id),
 * then dynamic ones by member id. */
void kc_assign_sort_members(const kc_assign_member_t *members, size_t *idx, size_t n);

#endif
