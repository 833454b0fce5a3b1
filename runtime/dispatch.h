/*
 * The dispatcher: network thread -> per-partition rings -> run queue -> workers -> callbacks,
 * and completions back. This header is the interface the network thread (engine/) calls; the
 * public API maps onto it.
 *
 * Threads (see runtime/README.md for the picture):
 *   network thread  kc_rt_new/free, part_add/push/revoke/pause/resume/free, may_fetch, budget,
 *                   drain_completions, watchdog_check, shutdown. Exactly one thread: the batch
 *                   rings are single-producer.
 *   workers         run partitions (worker.c); never call the functions above.
 *   any thread      kc_rt_post_event, kc_rt_part_committable, kc_rt_part_store.
 *
 * ---- The partition scheduling protocol (the `sched` word) ----------------------------------
 *   bit SCHED  the partition is on the run queue or being run. Whoever flips it 0->1 pushes the
 *              partition on the run queue; so it is queued at most once and run by at most one
 *              worker (the one that popped it) until that worker clears it.
 *   bit DIRTY  new work or a state change arrived since the running worker last looked.
 *   kick(p):   old = fetch_or(sched, SCHED|DIRTY, acq_rel); if !(old & SCHED) push(p).
 *              The release half publishes what the kicker did before (ring enqueue, state
 *              change) to the worker whose acquire reads DIRTY.
 *   worker:    loop { fetch_and(sched, ~DIRTY, acquire); do work; }
 *              and to stop running p: CAS(sched, SCHED -> 0, acq_rel); if it fails DIRTY was
 *              set meanwhile, so loop again. A kick either lands before the CAS (CAS fails, the
 *              worker sees the work) or after it (the kicker sees SCHED clear and queues p):
 *              no lost wake-up. A worker that used its quantum re-queues p with SCHED still set.
 *   held:      a partition added held (kc_rt_part_add_held) starts with SCHED set by the network
 *              thread and not queued; kc_rt_part_unhold queues it, as a re-queueing worker does.
 *
 * ---- The lifecycle word (`life`) and the rebalance gate ------------------------------------
 *   ACTIVE -> REVOKING (network thread, kc_rt_part_revoke) -> REVOKED (worker, after on_revoke).
 *   Bit INCB is set by the worker, with a CAS that fails if REVOKING is set, right before it
 *   calls on_records, and cleared right after. So kc_rt_part_revoke's fetch_or linearises every
 *   callback: one whose CAS won is in flight (revoke reports it), none can start after. Then the
 *   worker drops queued batches (releasing buffers), runs on_revoke (or on_lost), stores
 *   REVOKED and posts one REVOKE_DONE completion; after that no thread but the network thread
 *   touches the partition, which frees it with kc_rt_part_free.
 *
 * ---- Seeks and the gate (bits KC_RT_GEN_SHIFT.. of `life`) ----------------------------------
 *   The upper bits of `life` count seeks (seek_gen modulo 2^26; seek.c bumps both). The INCB
 *   CAS expects the generation of the batch the view was decoded from, so the gate also fails
 *   for a view of a batch pushed before the last seek. The seek's bump and the gate's CAS are
 *   read-modify-writes of one word, so they are totally ordered (its modification order): a
 *   callback enters the gate either before the seek (it runs with the records it has, as a
 *   callback in flight during kc_seek does) or after it, and then with a batch pushed after
 *   it. kc_seek returns after the bump, so no callback that enters the gate after kc_seek
 *   returned sees a record from before the seek. No lock: the CAS is the one every callback
 *   already pays.
 *
 * ---- The self-fence (bit FENCED of `life`) --------------------------------------------------
 *   A group member cut off from its coordinator stops starting record callbacks before the
 *   coordinator may hand its partitions to another member (engine/group/self_fence.h), and starts
 *   again when the coordinator answers. kc_rt_part_fence sets FENCED with a fetch_or on `life`:
 *   the gate's CAS expects no flag, so it linearises callbacks exactly as REVOKING does (one whose
 *   CAS won is in flight and is reported, none starts after). Unlike a revoke nothing is
 *   dropped: the batch being delivered stays in `cur`, queued ones stay in the ring, the
 *   delivery floor does not move, so clearing FENCED (kc_rt_part_unfence, then a kick) resumes
 *   at the first record not yet delivered. It is a reason of its own, apart from `paused` (the
 *   application's kc_pause, KC_CB_PAUSE, KC_CB_STOP): delivery needs both clear, so kc_resume
 *   does not lift a self-fence and lifting one does not undo a kc_pause. on_revoke/on_lost are
 *   not gated by it (a coordinator's fence ends in on_lost while FENCED is set).
 *
 * ---- Parking (bit PARK of `life`) -----------------------------------------------------------
 *   The group-level rebalance callback (on_rebalance) runs between a partition's per-partition
 *   callbacks: after on_assign and before the first on_records of an assigned set, after the
 *   last on_records and before on_revoke/on_lost of a revoked one. The network thread sets PARK
 *   (kc_rt_part_add_held with park, or kc_rt_part_park before kc_rt_part_revoke); the gate's CAS
 *   fails while it is set, like FENCED, so the record callback in flight finishes and none
 *   starts. The worker that next runs the partition with PARK set runs on_assign first if it is
 *   due and not revoking (a revoking one drops its queued batches instead), posts one PARKED
 *   completion and leaves without clearing SCHED: from then on the network thread owns SCHED,
 *   as for a held partition, and kicks only set DIRTY. So PARKED means no callback of the
 *   partition is running and none starts until kc_rt_part_unpark clears PARK and queues it.
 *   Network-owned `park_want` says whether PARK is wanted now: a PARKED drained after an unpark
 *   that raced it (the worker read PARK before the unpark cleared it) re-queues the partition at
 *   once, and one drained while PARK is wanted marks it `parked`, which unpark then re-queues.
 *
 * ---- Share lanes (a share group's partition on several workers at once) --------------------
 *   In a share group the broker decides which records a member gets and in what order, so a
 *   partition's records need not wait for each other: with more than one worker, a share
 *   partition (the head) has kc_rt_workers - 1 lanes beside it. A lane is a kc_rt_part_t with its
 *   own ring, scheduling word and life word, run by the protocols above like any partition, so
 *   each lane runs one callback at a time and the lanes of a partition run side by side. The
 *   network thread's calls take the head and apply to every lane (push picks the lane with the
 *   fewest queued batches; revoke, fence, park, pause and resume set every lane's word, so the
 *   gate closes for all of them and the in-flight answer covers all). What stays the head's
 *   alone: on_assign and on_revoke/on_lost, the byte and frame accounting (kc_rt_may_fetch),
 *   REVOKE_DONE, the completions every lane posts (they name the head), and the kc_part_t that
 *   callbacks get. The order of callbacks across lanes:
 *   - no record before on_assign: a lane delivers only once `lanes_go` is set, which the head's
 *     worker stores (release) after on_assign and then kicks every lane; a lane reads it
 *     (acquire) after its DIRTY acquire, so a kick after its read makes it look again;
 *   - on_revoke after every record callback: a revoked lane drops its queue, stores REVOKED and
 *     posts LANE_REVOKED, touching nothing of the partition after; the head's worker waits (gives
 *     SCHED up) until `lanes_done`, which the network thread stores once it drained every lane's
 *     LANE_REVOKED, then kicks the head. The completion ring orders each lane's last writes (its
 *     verdicts too) before the head's on_revoke and its REVOKE_DONE;
 *   - parking: every lane posts PARKED like the head; kc_rt_drain_completions counts them and
 *     hands `fn` one PARKED naming the head once all of them arrived; unpark re-queues each.
 */
#ifndef KC_RUNTIME_DISPATCH_H
#define KC_RUNTIME_DISPATCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/json.h"
#include "base/log.h"
#include "kconsume.h"
#include "record.h"
#include "ring.h"
#include "runq.h"

enum {
    KC_RT_SCHED = 1u,
    KC_RT_DIRTY = 2u,
};
enum {
    KC_RT_ACTIVE = 0u,
    KC_RT_REVOKING = 1u,
    KC_RT_LOST = 2u,      /* with REVOKING: on_lost instead of on_revoke */
    KC_RT_INCB = 4u,      /* a record callback is running */
    KC_RT_REVOKED = 8u,   /* on_revoke returned; REVOKE_DONE posted */
    KC_RT_FENCED = 16u,   /* self-fenced: no record callback starts (see above) */
    KC_RT_PARK = 32u,     /* parked for the group-level callback (see above) */
    KC_RT_GEN_SHIFT = 6u, /* bits from here up: the seek generation (see above) */
};
/* The generation bits of `life` for seek generation g. */
#define KC_RT_LIFE_GEN(g) ((unsigned)(g) << KC_RT_GEN_SHIFT)
#define KC_RT_LIFE_FLAGS  ((1u << KC_RT_GEN_SHIFT) - 1u)

/* The plug for record-batch decoding (io/batch's iterator): one context per worker, one batch
 * open per context at a time. All calls run on the worker owning the context. */
typedef struct kc_rt_decoder {
    void *(*ctx_new)(void *opaque);
    void (*ctx_free)(void *opaque, void *ctx);
    /* Opens one Kafka batch (CRC check and decompression happen here, on the worker); sets
     * *facts from its header. */
    kc_err_t (*open)(void *ctx, const kc_part_t *p, const kc_rt_bref_t *b,
                     kc_rt_batch_facts_t *facts, kc_error_t *err);
    /* Next record into *rec: 1 = a record, 0 = end of batch, < 0 = decode error (kc_err_t). */
    int (*next)(void *ctx, kc_record_t *rec, kc_error_t *err);
    void *opaque;
} kc_rt_decoder_t;

/* The io/batch decoder (decode_batch.c). `conf` must outlive the dispatcher. */
typedef struct kc_rt_batch_decoder_conf {
    bool check_crcs;             /* check.crcs */
    size_t decompress_max_bytes; /* decompress.max.bytes (0: io/batch's default) */
} kc_rt_batch_decoder_conf_t;
kc_rt_decoder_t kc_rt_batch_decoder(const kc_rt_batch_decoder_conf_t *conf);

typedef struct kc_rt_opts {
    unsigned workers;
    unsigned ring_slots;  /* batch refs per partition ring */
    uint32_t max_records; /* callback.batch.max.records */
    unsigned quantum;     /* batches a worker runs of one partition before re-queueing it */
    int64_t queued_max_bytes;
    /* The largest response the fetch budget asks for (memory_budget.c: a partition held back by a
     * slow callback pins at most KC_RT_PART_MAX_FRAMES + 1 frames of this size). 0: no bound. */
    int64_t frame_max_bytes;
    int64_t max_poll_interval_ms;
    bool auto_store;    /* enable.auto.offset.store */
    bool partition_eof; /* enable.partition.eof: KC_EVENT_PARTITION_EOF (kc_rt_part_at_end) */
    /* A share group's dispatcher (group.type=share): every record delivered gets a verdict,
     * posted as KC_RT_CMPL_SHARE_ACK (worker.c: CONTINUE and PAUSE accept, RETRY and STOP
     * release, an undecodable batch is rejected, a revocation releases what was not delivered),
     * and batches carry delivery counts. */
    bool share;
    kc_callbacks_t cbs;
    kc_rt_decoder_t decoder;
    /* Installed by the network thread: wakes it when a completion is posted (and when the frame
     * hook sets frames_drained). Any thread, called after the completion is published; must be
     * cheap and async-safe with respect to the dispatcher (tests: a counter). A hook that skips
     * redundant wake-ups with a flag uses kc_rt_wake_claim / kc_rt_wake_rearm below. */
    void (*wake)(void *wake_ctx);
    void *wake_ctx;
    /* Called on the network thread right after kc_rt_part_revoke, kc_rt_part_fence or
     * kc_rt_part_seek closed p's gate (NULL: nothing to do). Pull mode (pull.c) wakes the worker
     * that waits with a view of p nobody has polled yet: that view passed the gate before, and
     * is now given back unprocessed (kc_rt_view_may_start). Must not call into the dispatcher. */
    void (*gate_closed)(void *wake_ctx, struct kc_rt_part *p);
    /* The workers log through it (base/log.h); NULL: the process-wide logger. Outlives them. */
    const kc_logger_t *log;
} kc_rt_opts_t;

typedef struct kc_rt kc_rt_t;

/* One assigned partition. Field owners noted per field. */
typedef struct kc_rt_part {
    kc_part_t pub; /* pub.app: owner = the worker running the partition */
    char *topic;   /* owned; pub.topic points here */
    kc_rt_t *rt;
    kc_rt_bring_t ring;          /* producer: network thread; consumer: the running worker */
    _Atomic unsigned sched;      /* scheduling protocol above */
    _Atomic unsigned life;       /* lifecycle word above, with the seek generation on top */
    _Atomic bool paused;         /* written by network thread and by the running worker (PAUSE) */
    _Atomic int64_t committable; /* written by the running worker (or kc_rt_part_store), read by
                                    the network thread for commits; release/acquire */
    _Atomic int64_t buffered;    /* bytes queued for this partition: + network, - worker */
    _Atomic int frames;          /* queued batches that start a response frame (memory_budget.c):
                                    + network, - worker */
    _Atomic int64_t start_pos;   /* the known start offset (e.g. the group's committed offset),
                                    -1 unknown; written by the network thread, read anywhere */
    _Atomic int last_worker;     /* id of the worker that last ran it (stats), -1 before */
    /* enable.partition.eof: eof_at is the end of the log the fetch position last reached
     * (network thread writes, -1 before), eof_said the end last reported (whoever reports it,
     * by compare-exchange, so each end is reported once; -1 before). */
    _Atomic int64_t eof_at, eof_said;
    struct kc_rt_part *rq_next; /* guarded by the run queue's mutex */
    /* Owner: the worker running the partition (handed over through `sched`). */
    bool assigned_cb_done;
    bool have_cur; /* `cur` holds a dequeued batch (or span) not yet fully delivered */
    size_t cur_at; /* bytes of cur's span delivered: its next batch starts there (worker.c) */
    kc_rt_bref_t cur;
    int64_t next_deliver; /* records below this offset are skipped (retry, start) */
    uint32_t seen_gen;    /* the seek generation the worker last applied (seek.c) */
    /* Owner: network thread writes (release), workers read (acquire); see seek.c. seek_to is
     * written before the generation bump that publishes it. */
    _Atomic uint32_t seek_gen;
    _Atomic int64_t seek_to; /* an offset seek's target, -1 when the engine resolves it */
    /* Owner: network thread. */
    bool fetch_blocked;  /* backpressure hysteresis state */
    uint64_t last_frame; /* seq of the frame this partition's last pushed batch came from */
    bool is_control;     /* the group-event pseudo-partition */
    bool held;           /* added held: SCHED is the network thread's until kc_rt_part_unhold */
    bool park_want;      /* PARK is set and wanted (see "Parking") */
    bool parked;         /* its PARKED was drained while wanted: SCHED is the network thread's */
    struct kc_rt_part *all_next, *all_prev, *done_next;
    /* Share lanes (see above). Set before any worker can see the partition, then read-only:
     * `lanes` (the head's: the nlanes - 1 other lanes; NULL when it has none) and `head` (a
     * lane's: its head; NULL on a head). Network thread: lane_next (the next lane a tie goes to),
     * lanes_left (lanes whose LANE_REVOKED was not drained yet), lanes_parked (PARKED drained
     * while parking, the head's own included). */
    struct kc_rt_part **lanes;
    struct kc_rt_part *head;
    unsigned nlanes, lane_next, lanes_left, lanes_parked;
    /* lanes_go: on_assign returned (the head's worker, release; lanes acquire). lanes_done: every
     * lane's revocation was drained (network thread, release; the head's worker acquires). */
    _Atomic bool lanes_go, lanes_done;
} kc_rt_part_t;

/* Whether the whole partition is parked (every lane's PARKED drained since the park). Network
 * thread. */
static inline bool kc_rt_part_parked(const kc_rt_part_t *p)
{
    return p->park_want && p->lanes_parked == p->nlanes;
}

/* The partition a lane belongs to (the head), or p itself. Any thread. */
static inline kc_rt_part_t *kc_rt_part_head(kc_rt_part_t *p)
{
    return p->head ? p->head : p;
}

/* Fills the options the configuration decides (workers, callback.batch.max.records,
 * queued.max.bytes, max.poll.interval.ms, enable.auto.offset.store); leaves the rest. */
void kc_rt_opts_from_conf(const kc_conf_t *c, kc_rt_opts_t *o);

/* Appends the "workers" array of the stats JSON ({"id","callbacks","records","busy_ns"} each).
 * Any thread. */
void kc_rt_stats_workers(const kc_rt_t *rt, kc_json_t *w);

/* Lifecycle of the dispatcher. Network thread (or whoever owns the consumer). */
kc_err_t kc_rt_new(const kc_rt_opts_t *o, kc_rt_t **out, kc_error_t *err);
/* The callbacks the dispatcher runs (kc_rt_opts_t.cbs). Any thread; constant. */
const kc_callbacks_t *kc_rt_callbacks(const kc_rt_t *rt);
/* True on a worker thread of any runtime, i.e. in callback context: the public API refuses the
 * calls that would wait for the network thread from there (consumer.c, kc_consumer_guard). */
bool kc_rt_in_worker(void);
/* Stops the workers. drain: deliver everything queued first; else drop queued batches. Waits up
 * to timeout_ms for in-flight callbacks; KC_ERR_TIMEOUT if some still run (they are not killed:
 * kc_rt_free then waits for them, since freeing under a running callback would be a
 * use-after-free). */
kc_err_t kc_rt_shutdown(kc_rt_t *rt, bool drain, int timeout_ms);
/* Joins what is left, releases every queued buffer, frees partitions and the dispatcher. */
void kc_rt_free(kc_rt_t *rt);

/* enable.partition.eof. Network thread: the engine's fetch position reached `end` (the high
 * watermark, or the last stable offset under read_committed). The event is posted once the
 * partition's queued batches are all delivered (their callbacks returned): here when nothing is
 * queued, else by the worker that releases the last one (kc_rt_part_eof_drained). The two sides
 * are a store-then-load pair with seq_cst fences, so at least one sees the other's write, and
 * eof_said's compare-exchange lets only one post. */
void kc_rt_part_at_end(kc_rt_part_t *p, int64_t end);
/* Worker, after its release of p's last queued batch; next_deliver is where delivery stands. */
void kc_rt_part_eof_drained(kc_rt_part_t *p);

/* Partitions. Network thread. `start_offset` is the first offset to deliver. The partition's
 * on_assign runs on a worker before any of its records. */
kc_rt_part_t *kc_rt_part_add(kc_rt_t *rt, const char *topic, int32_t partition,
                             int64_t start_offset);
/* Same, but with `held` nothing of it runs (no on_assign, no record) until kc_rt_part_unhold:
 * for a partition assigned again while an older copy of it is still being revoked, so that no
 * two callbacks of one topic-partition overlap. Batches may be pushed meanwhile (they wait in
 * the ring) and seek/pause/store work as usual. The network thread keeps the SCHED bit set
 * without queueing the partition, so kicks only set DIRTY; unhold queues it, handing SCHED to
 * the run queue (its mutex publishes everything done before). kc_rt_part_revoke of a held
 * partition unholds it: its worker then drops what is queued and posts REVOKE_DONE without any
 * callback (on_assign never ran). With `park`, PARK is set from the start (see "Parking"): its
 * on_assign runs, then it parks until kc_rt_part_unpark, with no record delivered before. */
kc_rt_part_t *kc_rt_part_add_held(kc_rt_t *rt, const char *topic, int32_t partition,
                                  int64_t start_offset, bool held, bool park);
void kc_rt_part_unhold(kc_rt_part_t *p);
/* Parking (see above). Network thread. kc_rt_part_park sets PARK (before kc_rt_part_revoke, for
 * a revocation that waits for the group-level callback); kc_rt_part_unpark clears it and queues
 * the partition if it is parked. Both idempotent. kc_rt_drain_completions handles PARKED before
 * it reaches `fn`: `fn` sees it only when the partition is parked now (p->parked). */
void kc_rt_part_park(kc_rt_part_t *p);
void kc_rt_part_unpark(kc_rt_part_t *p);
/* Queues one batch, or a span of them (kc_rt_bref_t.span); takes over the slice's reference on
 * success. KC_ERR_QUEUE_FULL when the
 * ring is full, KC_ERR_STATE when revoking (the caller keeps the reference in both cases). */
kc_err_t kc_rt_part_push(kc_rt_part_t *p, const kc_rt_bref_t *b);
/* Starts the rebalance gate (see above). Returns true when a record callback was in flight at
 * the moment of the call. The partition's REVOKE_DONE completion follows. */
bool kc_rt_part_revoke(kc_rt_part_t *p, bool lost);
/* Frees a partition after its REVOKE_DONE completion was drained. */
void kc_rt_part_free(kc_rt_part_t *p);
void kc_rt_part_pause(kc_rt_part_t *p);
void kc_rt_part_resume(kc_rt_part_t *p);
/* The self-fence (see above). Network thread. kc_rt_part_fence returns true when a record
 * callback was in flight at the moment of the call (it finishes; none starts after). Both are
 * idempotent. */
bool kc_rt_part_fence(kc_rt_part_t *p);
void kc_rt_part_unfence(kc_rt_part_t *p);
bool kc_rt_part_fenced(const kc_rt_part_t *p);
/* Whether a view that entered the gate earlier (b: a view of the partition's open batch, its
 * worker blocked and not running it yet) could still enter it now: neither revoking nor fenced,
 * and no seek since its batch was pushed. Pull mode hands a queued view to kc_poll only while
 * this holds (not parked either: see "Parking"), so a view polled after kc_seek, kc_unassign or a
 * self-fence returned is never one from before. Any thread that synchronised with the view's worker
 * (pull.c: its mutex). */
bool kc_rt_view_may_start(const kc_records_t *b);
/* Share groups: whether the records of a view that has not started (as above) have surely lost
 * their acquisition lock by now (kc_rt_bref_t.lock_deadline): the broker has handed them out
 * again, so the view is not delivered. Pull mode gives such a view back with
 * KC_RT_CB_LAPSED; the worker then posts KC_RT_SHARE_LAPSED for it, as for a push view it did
 * not start. Same threads as kc_rt_view_may_start. */
bool kc_rt_view_lapsed(const kc_records_t *b);
/* A view's result that no callback gave: pull mode did not hand it out because its records'
 * lock ran out while it waited to be polled (kc_rt_view_lapsed). Never seen by the application. */
#define KC_RT_CB_LAPSED ((kc_cb_result_t)-1)
/* Committable offset (offset after the last processed record), -1 when none. Any thread. */
int64_t kc_rt_part_committable(const kc_rt_part_t *p);
/* Manual store. Any thread. */
void kc_rt_part_store(kc_rt_part_t *p, int64_t offset);
/* The partition topic/partition of rt when the calling thread is inside one of its callbacks
 * (on_assign, on_records, on_revoke, on_lost), else NULL. Any thread; no waiting. */
kc_rt_part_t *kc_rt_own_part(const kc_rt_t *rt, const char *topic, int32_t partition);
/* Where delivery starts, once known (a committed offset or an explicit one): what position
 * reports before the first callback returned (the committable offset is -1 until then).
 * kc_rt_part_position: the committable offset, else that start, else -1. Any thread. */
void kc_rt_part_set_start(kc_rt_part_t *p, int64_t offset);
int64_t kc_rt_part_position(const kc_rt_part_t *p);

/* A seek moved the partition's position (network thread, right after the engine's seek): batches
 * pushed before it are dropped, and the delivery floor is reset so a backward seek re-delivers
 * (seek.c). `to`: the target of an offset seek (then also the committable offset, as Java's
 * position after seek() is what commitSync() commits), -1 when the engine resolves it
 * (beginning, end, timestamp). */
void kc_rt_part_seek(kc_rt_part_t *p, int64_t to);
/* Backpressure (network thread). May the fetcher ask for p now? Hysteresis: a partition stops
 * at its share (cap / partitions) and restarts below half of it; all stop while the total is at
 * the cap and restart below 3/4 of it — so a partition hovering at the limit does not flip in
 * and out of the fetch session every round. */
bool kc_rt_may_fetch(kc_rt_t *rt, kc_rt_part_t *p);
/* The engine's sink.fetch_gen (engine.h): changes whenever a yes of kc_rt_may_fetch may have
 * turned into a no (network thread; rt_internal.h says what counts). */
uint64_t kc_rt_fetch_gen(const kc_rt_t *rt);
void kc_rt_fetch_gen_bump(kc_rt_t *rt);
/* Bytes the next Fetch response may bring without passing the cap (its max_bytes). */
int64_t kc_rt_fetch_budget(const kc_rt_t *rt);
int64_t kc_rt_buffered_bytes(const kc_rt_t *rt);
/* Bytes of the response frames the partitions' queued batches keep alive (memory_budget.c): what
 * the queued.max.bytes cap bounds. Any thread (relaxed). */
int64_t kc_rt_frame_bytes(const kc_rt_t *rt);

/* Network thread. Share groups' verdict barrier, for a commit of acknowledgements: per worker
 * (kc_rt_workers entries), kc_rt_share_views reads how many views were handed to the
 * application (an on_records call started; in pull mode, kc_poll returned the view:
 * kc_rt_view_handed), and kc_rt_share_posted says whether every one of those has come back and
 * had its verdicts pushed on the worker's completion ring, so the next kc_rt_drain_completions
 * hands them over (the worker wakes the network thread again after counting, so a drain that
 * ran just before the count is followed by another). A view the caller of the commit saw come
 * back (under any synchronisation that orders it before the call) was counted before it was
 * handed out, which happens before the read here: by write-read coherence the read sees that
 * increment or a later one. The posted count's acquire load pairs with the worker's release
 * increment after the pushes. */
unsigned kc_rt_workers(const kc_rt_t *rt);
void kc_rt_share_views(kc_rt_t *rt, uint64_t *views);
bool kc_rt_share_posted(kc_rt_t *rt, const uint64_t *views);
/* Completions from every worker; calls fn for each. Network thread. Returns the count. */
unsigned kc_rt_drain_completions(kc_rt_t *rt, void (*fn)(void *ctx, const kc_rt_cmpl_t *c),
                                 void *ctx);

/*
 * The completion wake-up, for a wake hook that posts one command to the network thread and skips
 * the post while one is pending (consumer.c). `pending` is 1 from a successful claim until the
 * command re-arms it. It is a store-buffer (Dekker) pattern across two locations:
 *   worker:  publish (ring push / frames_drained)  ; claim:  fence(seq_cst) ; xchg(pending, 1)
 *   network: rearm: store(pending, 0) ; fence(seq_cst) ; drain (load the rings' tails)
 * Release/acquire alone allows both loads to miss (the xchg reads the stale 1, the drain misses
 * the push): that strands a completion, e.g. a REVOKE_DONE, until some other one arrives. The
 * two seq_cst fences are ordered in the single total order S, and either way round nothing is
 * lost (C11 7.17.3: a fence-ordered store is seen by the other side's fence-ordered access;
 * the ring indices count as relaxed atomics, ring.h):
 *   - claim's fence first in S: the drain after rearm's fence sees the push;
 *   - rearm's fence first: the xchg sees the 0 (or a later 1 whose claimer posts a command that
 *     re-arms and drains after this push, so it is seen then) and posts.
 * Any thread may claim; rearm on the network thread at the start of the posted command, before
 * kc_rt_drain_completions. The xchg's acquire pairs with rearm's release store, so the caller's
 * re-post of the same command node happens-after the network thread popped it.
 */
bool kc_rt_wake_claim(atomic_int *pending);
void kc_rt_wake_rearm(atomic_int *pending);

/* Group-level events for on_event: copied; delivered on a worker, serialised, in post order.
 * Any thread. KC_ERR_QUEUE_FULL when too many are pending (the caller may retry later). */
kc_err_t kc_rt_post_event(kc_rt_t *rt, const kc_event_t *ev);
/* The same for events that come in bulk (KC_EVENT_SHARE_ACK: one per partition per answer):
 * KC_ERR_QUEUE_FULL already while fewer than KC_RT_EVQ_SPARE slots are free, so a burst of them
 * never takes the room errors and assignment changes need. */
#define KC_RT_EVQ_SPARE 64
kc_err_t kc_rt_post_bulk_event(kc_rt_t *rt, const kc_event_t *ev);
/* A KC_EVENT_STATS with the text `json` (heap): taken, not copied, and freed by the queue, at
 * once when it is full. */
kc_err_t kc_rt_post_stats(kc_rt_t *rt, char *json);
/* KC_EVENT_ASSIGNMENT with the whole assignment tps[0..n) (n 0: nothing assigned), the one
 * event every owner of an assignment (the manual table, the group) posts after a change. */
kc_err_t kc_rt_post_assignment(kc_rt_t *rt, const kc_topic_partition_t *tps, size_t n);

/* The group-level rebalance callback (kconsume.h on_rebalance) with a copy of tps[0..n), run on
 * the control worker: never at the same time as on_event or another call, in post order among
 * the calls (kc_rt_post_call's too), ahead of events already queued (the control worker runs
 * every pending call before the next event). When it returned, that worker posts a REBALANCED
 * completion carrying `token`. Any thread. Without an on_rebalance the completion is posted all
 * the same. */
kc_err_t kc_rt_post_rebalance(kc_rt_t *rt, kc_rebalance_t kind, const kc_topic_partition_t *tps,
                              size_t n, int64_t token);

/* Runs fn(arg) on a worker, serialised with on_event (the control pseudo-partition), e.g. the
 * kc_commit_async result callback. Never dropped (an unbounded list, unlike events). Any thread.
 * If the dispatcher is freed first, fn is called with run = 0 there so arg can be freed. */
kc_err_t kc_rt_post_call(kc_rt_t *rt, void (*fn)(void *arg, int run), void *arg);
/* max.poll.interval.ms detection: reports (once per callback) each callback running longer
 * via an error event and the poll_exceeded flag. Network thread, from a timer. Returns the
 * number of callbacks over the limit now. */
unsigned kc_rt_watchdog_check(kc_rt_t *rt, int64_t now_ns);
bool kc_rt_poll_exceeded(const kc_rt_t *rt);

/* Internal to runtime/ (worker.c, events.c, dispatch.c, seek.c). kc_rt_gate_closed calls the
 * gate_closed hook (kc_rt_opts_t) for p. */
void kc_rt_kick(kc_rt_part_t *p);
void kc_rt_gate_closed(kc_rt_part_t *p);
/* worker.c: a share group's view handed to the application (the verdict barrier above counts it
 * on the view's worker). The worker before on_records; pull.c when kc_poll returns the view. */
void kc_rt_view_handed(kc_records_t *b);

#endif
