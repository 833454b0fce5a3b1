/*
 * runtime/consumer.c and consumer_api.c share this: the consumer object and the synchronous call
 * onto the network thread. Ownership as documented in consumer.c.
 */
#ifndef KC_RUNTIME_CONSUMER_INT_H
#define KC_RUNTIME_CONSUMER_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "conf.h"
#include "dispatch.h"
#include "engine.h"
#include "netthread.h"

typedef struct kc_cpart {
    char *topic;
    int32_t partition;
    kc_rt_part_t *rtp;
} kc_cpart_t;

struct kc_consumer {
    kc_conf_t *conf;
    kc_callbacks_t cbs;
    kc_netthread_t *nt;
    kc_engine_t *e;
    kc_rt_t *rt;
    char *group;
    kc_cpart_t *parts; /* network thread */
    size_t n, cap;
    size_t revoking; /* partitions waiting for REVOKE_DONE */
    atomic_int wake_pending;
    atomic_int rt_live;
    kc_loop_cmd_t wake_cmd;
    kc_rt_batch_decoder_conf_t dec_conf; /* outlives the dispatcher (decode_batch.c) */
    atomic_int closed;
    struct kc_cgroup *grp; /* group.protocol=consumer after kc_subscribe (consumer_group.c);
                              network thread */
};

typedef struct kc_ccall {
    kc_consumer_t *c;
    int op;
    const kc_topic_partition_t *tps;
    size_t n;
    int kind, timeout_ms;
    int64_t value;
    const char *topic;
    int32_t partition;
    kc_err_t rc;
    kc_error_t err;
    /* for calls that finish later (commit, committed) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    kc_topic_partition_t *out;
} kc_ccall_t;

enum {
    KC_COP_NEW,
    KC_COP_ADD,
    KC_COP_UNASSIGN,
    KC_COP_SEEK,
    KC_COP_PAUSE,
    KC_COP_RESUME,
    KC_COP_COMMIT,
    KC_COP_COMMITTED,
    KC_COP_CLOSE,
    KC_COP_RT_DEAD,
    KC_COP_POSITION, /* value <- the partition's committable offset */
    KC_COP_STORE,    /* the partition's committable offset <- value */
    KC_COP_SUBSCRIBE,   /* consumer_group.c: out = the topic names, n */
    KC_COP_GROUP_CLOSE, /* consumer_group.c: revoke, commit, leave; done when left */
};

/* Runs `k` on the network thread and returns its result. Any app thread. */
kc_err_t kc_consumer_call(kc_consumer_t *c, kc_ccall_t *k, kc_error_t *err);
/* Same, then waits for the engine's callback (commit, committed). */
kc_err_t kc_consumer_call_wait(kc_consumer_t *c, kc_ccall_t *k, kc_error_t *err);

#endif
