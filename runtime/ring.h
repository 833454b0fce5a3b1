/*
 * Typed single-producer/single-consumer rings over libck's ck_ring, for the two cross-thread
 * handoffs that carry data: network thread -> partition (batch refs) and worker -> network
 * thread (completions). Entries are copied by value into the ring's slots (no allocation).
 *
 * SPSC only, by design (ck_ring's MPMC/MPSC enqueue spins when a producer is preempted, which
 * collapses throughput on a 2-vCPU box: measured in runtime/README.md). "Single consumer" for a
 * partition ring means "the one worker currently running the partition": the handover between
 * workers is ordered by the partition's `sched` word (dispatch.h), so at most one thread dequeues
 * at a time.
 *
 * Memory orders, in C11 terms (not x86-TSO). ck_ring's SPSC calls give less than a release /
 * acquire channel: enqueue is "write slot; ck_pr_fence_store; store p_tail" and dequeue is "load
 * p_tail; ck_pr_fence_load; read slot; ck_pr_fence_store; store c_head", with the indices read
 * and written by ck_pr_load/store_uint. Those fences are ck's own (inline asm, outside the C11
 * model), order only store->store and load->load by contract (dmb ishst / dmb ishld on ARM64),
 * and are compiler barriers only when ck was built for TSO. So nothing orders the producer's
 * earlier loads before the publish, nor the consumer's slot read before the c_head store that
 * lets the producer overwrite the slot. The wrappers below add C11 fences, treating the ck_pr
 * index accesses as relaxed atomics (aligned words, single-copy atomic, asm barriers to the
 * compiler), so each ring is a release/acquire channel by the fence rules of C11 7.17.4:
 *   push: reserve (load c_head) ; fence(acquire) ; write slot ; fence(release) ; commit (store
 *         p_tail)
 *   pop:  size (load p_tail) ; fence(acq_rel) ; dequeue (read slot, store c_head)
 *   - data: push's release fence pairs with pop's fence (its acquire half), which comes after
 *     the p_tail load that saw the entry: everything the producer did before the push (the
 *     slot, and e.g. REVOKED, paused, buffer contents) happens-before what the consumer does
 *     after the pop. kc_rt_drain_completions' REVOKE_DONE delay and kc_rt_part_free rely on it.
 *   - slot reuse: ck_ring keeps one slot empty, so the producer reuses the slot of entry i only
 *     after seeing c_head >= i + 2, which the pop of entry i + 1 stores after its fence; the
 *     release half of that fence, sequenced after the read of entry i (previous pop), pairs with
 *     push's acquire fence: the read of the old entry happens-before the slot is overwritten.
 * On x86 all three fences compile to nothing; on ARM64 to one dmb each. The look-ahead (size
 * before dequeue) exists so the acquire comes after the index that shows the entry: dequeue
 * reads the slot right after its own p_tail load, with no C11 fence in between.
 *
 * ThreadSanitizer sees neither ck's asm nor (reliably) C11 fences, so under KC_TSAN the same
 * happens-before edges are also told to it explicitly: producer release on the ring after writing
 * the slot / consumer acquire before reading it, and the reverse pair on slot reuse. Each
 * acquire comes after the index it depends on was seen (an entry present, a slot free): taken
 * earlier it can miss the matching release and TSan reports a race that is not there
 * (test_backpressure's frame writes did). These annotations change nothing outside TSan builds.
 */
#ifndef KC_RUNTIME_RING_H
#define KC_RUNTIME_RING_H

#include <ck_ring.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "kconsume.h"

#if defined(KC_TSAN)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define KC_TSAN_ACQUIRE(a) __tsan_acquire((void *)(a))
#define KC_TSAN_RELEASE(a) __tsan_release((void *)(a))
#else
#define KC_TSAN_ACQUIRE(a) ((void)0)
#define KC_TSAN_RELEASE(a) ((void)0)
#endif

struct kc_rt_part;

/*
 * One Kafka record batch of one partition as received, or a span of consecutive ones: a slice
 * of the Fetch response buffer (holding one reference) and the offsets it covers. The engine
 * hands a partition's complete batches of one response as one slice (engine/fetch/fetcher.c,
 * header parse only; CRC is checked by the worker); the worker takes a span apart one batch at a
 * time (worker.c, cur_batch), so that everything after the ring sees single batches.
 * `last_offset` may exceed the last record's offset (compaction), and the partition's position
 * moves past it anyway.
 */
typedef struct kc_rt_bref {
    kc_slice_t raw;
    int64_t base_offset;
    int64_t last_offset;
    uint32_t seek_gen; /* the partition's seek generation when pushed (seek.c) */
    int32_t broker;    /* the broker whose Fetch answer holds it */
    bool frame_first;  /* the partition's first entry from this response frame (memory_budget.c) */
    bool span;         /* raw holds one or more whole Kafka batches, taken apart by the worker, and
                          [base_offset, last_offset] covers them all; false: raw is one unit for the
                          decoder (share pieces, tests' own formats) */
    /* Share groups: every record in [base_offset, last_offset] was acquired by this member with
     * this delivery count (>= 1), and each gets a verdict (KC_RT_CMPL_SHARE_ACK). 0: not a share
     * partition's batch. */
    int16_t delivery_count;
    /* Share groups: when the records' acquisition lock has surely run out (kc_now_ms; 0: not
     * known). A view that has not started by then is not delivered: the broker hands its records
     * out again, and a verdict on them could not count (engine/share/held.h). */
    int64_t lock_deadline;
    /* Bytes counted against the partition's and the dispatcher's `buffered` for this ref (set by
     * kc_rt_part_push, subtracted at release): raw.len, or its share when one batch is queued as
     * several pieces (share lanes) that each hold a reference to the same bytes. A span's batches
     * give theirs back as each is delivered (worker.c), so it is what the undelivered ones hold. */
    int64_t counted;
    /* A piece after the first of a batch cut over share lanes: the batch's decode error is
     * reported by the first piece only (each piece rejects its own records). */
    bool split_tail;
} kc_rt_bref_t;

typedef enum kc_rt_cmpl_type {
    KC_RT_CMPL_REVOKE_DONE = 1,  /* on_revoke/on_lost returned; the part may be freed now */
    KC_RT_CMPL_DRAINED = 2,      /* buffered bytes fell below the low watermark: may fetch again */
    KC_RT_CMPL_PAUSED = 3,       /* a callback returned KC_CB_PAUSE: stop fetching the partition */
    KC_RT_CMPL_STOPPED = 4,      /* a callback returned KC_CB_STOP */
    KC_RT_CMPL_ERROR = 5,        /* decode error on a batch (code says which); batch skipped */
    KC_RT_CMPL_SHARE_ACK = 6,    /* share groups: verdict `ack` on acquired offsets offset..last */
    KC_RT_CMPL_PARKED = 7,       /* the partition reached its park point (dispatch.h, "Parking") */
    KC_RT_CMPL_REBALANCED = 8,   /* on_rebalance returned (kc_rt_post_rebalance); offset: token */
    KC_RT_CMPL_LANE_REVOKED = 9, /* a share lane's revocation is done (dispatch.h, "Share lanes");
                                    kc_rt_drain_completions consumes it */
} kc_rt_cmpl_type_t;

/* Worker -> network thread message. Processed offsets do not travel here: they are the
 * partition's atomic committable offset, which the network thread reads when it commits. */
typedef struct kc_rt_cmpl {
    kc_rt_cmpl_type_t type;
    kc_err_t code;
    struct kc_rt_part *part;
    int64_t offset; /* ERROR: the batch's base offset; SHARE_ACK: the first offset; REBALANCED:
                       the token kc_rt_post_rebalance was given */
    int64_t last;   /* SHARE_ACK: the last offset (inclusive) */
    int8_t ack;     /* SHARE_ACK: KC_SHARE_ACCEPT, KC_SHARE_RELEASE, KC_SHARE_REJECT, 0 (a gap) or
                       KC_RT_SHARE_LAPSED */
    int16_t delivery_count; /* SHARE_ACK: of the delivery judged (the batch's, kc_rt_bref_t) */
} kc_rt_cmpl_t;

/* A SHARE_ACK that is no verdict: the records were not delivered, their lock having run out
 * first (kc_rt_bref_t.lock_deadline); nothing is sent, they are only held no more. */
#define KC_RT_SHARE_LAPSED (-1)

CK_RING_PROTOTYPE(kc_bref, kc_rt_bref)
CK_RING_PROTOTYPE(kc_cmpl, kc_rt_cmpl)

/*
 * A partition's batch ring grows: it starts at KC_RT_BRING_FIRST slots and doubles, up to the
 * size asked at init, when a push finds it full. A partition gets one entry per Fetch response
 * (its batches there are one span, cut only where an aborted transaction's batch was) and holds at
 * most a few responses' worth (memory_budget.c), so most partitions of a consumer with thousands of
 * them never hold more than an entry or two, and a ring of the full size made each of them cost a
 * resident page for its first slot (T4 in perf/README.md); a busy one grows within its first few
 * pushes and then stays at that size.
 *
 * Growth never moves an entry: the producer allocates a segment twice the size, links it from the
 * full one (`next`, a release store after the last push there) and pushes into it from then on.
 * The consumer drains the old segment first; when it finds that segment empty and `next` set
 * (acquire: every push into the old segment happens-before), it looks once more (an entry pushed
 * there before the link is visible now), then frees the old segment and moves on. The producer
 * never touches a segment after linking past it, so the consumer's free races with nothing.
 * Within a segment the ck_ring orders below hold unchanged.
 *
 * The bound is the full size's, whatever the segments: at most `max` - 1 entries queued, counted
 * as pushes (producer's) minus pops (the consumer's atomic, which the producer reads). A stale
 * count only understates the room. The pop's store is a release after its c_head store, and the
 * producer's load an acquire, so a push (or a size taken before it, dispatch.c's split_count)
 * that counts a pop also sees its c_head: a segment of the full size that the bound says has
 * room has room for the reserve too.
 */
#define KC_RT_BRING_FIRST 2u

typedef struct kc_rt_bseg {
    struct ck_ring ring;
    struct kc_rt_bseg *_Atomic next; /* the next, larger segment; set once by the producer */
    struct kc_rt_bref slots[];
} kc_rt_bseg_t;

/* Written out per type rather than generated, so every name is greppable. */
typedef struct kc_rt_bring {
    kc_rt_bseg_t *prod; /* producer: the segment pushed into */
    unsigned max;       /* the full size (a power of two) */
    unsigned pushed;    /* producer: entries pushed, wrapping */
    /* The producer's fields and the consumer's never share a cache line (each side writes its
     * own on every push or pop); malloc'd parts cannot promise _Alignas(64), padding can. */
    char pad_[64];
    kc_rt_bseg_t *cons;      /* consumer: the segment popped from (the oldest) */
    _Atomic unsigned popped; /* consumer writes (release), producer reads (acquire): pops */
    char hb_data, hb_slot;   /* TSan sync addresses: slot written->read, slot read->reused */
} kc_rt_bring_t;

/* The producer's slow path: a segment twice the size of the one it pushes into, linked behind
 * it. false when that one is already of the full size, or out of memory (then the push is
 * refused as when full). */
bool kc_rt_bring_grow(kc_rt_bring_t *r);

typedef struct kc_rt_cring {
    struct ck_ring ring;
    struct kc_rt_cmpl *slots;
    char hb_data, hb_slot;
} kc_rt_cring_t;

/* Producer side. false when full (nothing written). */
static inline bool kc_rt_bring_push(kc_rt_bring_t *r, const kc_rt_bref_t *e)
{
    if (r->pushed - atomic_load_explicit(&r->popped, memory_order_acquire) >= r->max - 1)
        return false;
    struct kc_rt_bref *slot = ck_ring_enqueue_reserve_spsc_kc_bref(&r->prod->ring, r->prod->slots);
    if (!slot) {
        if (!kc_rt_bring_grow(r))
            return false;
        slot = ck_ring_enqueue_reserve_spsc_kc_bref(&r->prod->ring, r->prod->slots);
    }
    /* acquire: pairs with the release half of _pop's fence (header: slot reuse) */
    atomic_thread_fence(memory_order_acquire);
    KC_TSAN_ACQUIRE(&r->hb_slot); /* after the reserve saw the consumer free the slot */
    *slot = *e;
    KC_TSAN_RELEASE(&r->hb_data); /* pairs with the consumer's acquire in _pop */
    /* release: pairs with the acquire half of _pop's fence (header: data) */
    atomic_thread_fence(memory_order_release);
    ck_ring_enqueue_commit_spsc(&r->prod->ring);
    r->pushed++;
    return true;
}

/* The consumer's move past a drained segment (growth, above); false when there is none. */
bool kc_rt_bring_next_segment(kc_rt_bring_t *r);

/* Consumer side. false when empty. */
static inline bool kc_rt_bring_pop(kc_rt_bring_t *r, kc_rt_bref_t *out)
{
    /* Acquire only once an entry is seen: an acquire taken while the ring still looked empty
     * would not cover the producer's release for an entry committed just after it. acq_rel:
     * acquire pairs with push's release fence (data); release orders the previous pop's slot
     * read before this pop's c_head store, pairing with push's acquire fence (slot reuse). */
    while (ck_ring_size(&r->cons->ring) == 0)
        if (!kc_rt_bring_next_segment(r))
            return false;
    atomic_thread_fence(memory_order_acq_rel);
    KC_TSAN_ACQUIRE(&r->hb_data);
    if (!ck_ring_dequeue_spsc_kc_bref(&r->cons->ring, r->cons->slots, out))
        return false;
    KC_TSAN_RELEASE(&r->hb_slot);
    /* one consumer at a time (header), so load-and-store; release: after the c_head store
     * (growth, above: the bound) */
    atomic_store_explicit(&r->popped, atomic_load_explicit(&r->popped, memory_order_relaxed) + 1,
                          memory_order_release);
    return true;
}

/* Entries queued. Producer side only (it reads the producer's count). */
static inline unsigned kc_rt_bring_size(const kc_rt_bring_t *r)
{
    return r->pushed - atomic_load_explicit(&r->popped, memory_order_acquire); /* as in push */
}

static inline bool kc_rt_cring_push(kc_rt_cring_t *r, const kc_rt_cmpl_t *e)
{
    struct kc_rt_cmpl *slot = ck_ring_enqueue_reserve_spsc_kc_cmpl(&r->ring, r->slots);
    if (!slot)
        return false;
    atomic_thread_fence(memory_order_acquire); /* as in kc_rt_bring_push */
    KC_TSAN_ACQUIRE(&r->hb_slot);
    *slot = *e;
    KC_TSAN_RELEASE(&r->hb_data);
    atomic_thread_fence(memory_order_release);
    ck_ring_enqueue_commit_spsc(&r->ring);
    return true;
}

static inline bool kc_rt_cring_pop(kc_rt_cring_t *r, kc_rt_cmpl_t *out)
{
    if (ck_ring_size(&r->ring) == 0) /* as in kc_rt_bring_pop */
        return false;
    atomic_thread_fence(memory_order_acq_rel);
    KC_TSAN_ACQUIRE(&r->hb_data);
    if (!ck_ring_dequeue_spsc_kc_cmpl(&r->ring, r->slots, out))
        return false;
    KC_TSAN_RELEASE(&r->hb_slot);
    return true;
}

/* A ring of `size` slots at most (rounded up to a power of two, >= 2), starting smaller (above).
 * KC_ERR_NOMEM on failure. */
kc_err_t kc_rt_bring_init(kc_rt_bring_t *r, unsigned size);
void kc_rt_bring_fini(kc_rt_bring_t *r);
kc_err_t kc_rt_cring_init(kc_rt_cring_t *r, unsigned size);
void kc_rt_cring_fini(kc_rt_cring_t *r);

#endif
