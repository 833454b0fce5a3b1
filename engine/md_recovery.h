/*
 * Where metadata comes from: bootstrap.servers or the brokers the last answer named, and when to
 * go back to bootstrap.servers (KIP-899 metadata.recovery.strategy, KIP-1102). A pure state
 * machine: time is passed in, the engine (brokers.c) acts on its answers.
 *
 * The rule:
 *   - Until a metadata answer has named brokers, every metadata question goes to
 *     bootstrap.servers.
 *   - After it, only to the brokers named (a READY one first). bootstrap.servers may point at a
 *     load balancer, or at hosts that are no longer in the cluster: once the cluster has said who
 *     its brokers are, asking anyone else is a guess.
 *   - rebootstrap: when no named broker has been reachable for trigger.ms (none READY at every
 *     look across that span), or a broker answers REBOOTSTRAP_REQUIRED, the named brokers are
 *     forgotten and it starts again from bootstrap.servers, resolved again. That is how a client
 *     follows a cluster whose brokers were all replaced (new hosts behind a stable bootstrap
 *     name, a cluster failover); trigger.ms keeps a rolling restart or a short outage from
 *     sending it back.
 *   - none: never back to bootstrap.servers after the first answer. When no named broker has
 *     been reachable for trigger.ms it says so once (kc_mdr_stranded), and keeps trying them.
 *
 * Owner: the engine's network thread.
 */
#ifndef KC_ENGINE_MD_RECOVERY_H
#define KC_ENGINE_MD_RECOVERY_H

#include <stdint.h>

typedef enum kc_mdr_strategy {
    KC_MDR_STRATEGY_NONE = 0,
    KC_MDR_STRATEGY_REBOOTSTRAP = 1
} kc_mdr_strategy_t;

typedef enum kc_mdr_choice {
    KC_MDR_USE_BOOTSTRAP, /* ask bootstrap.servers */
    KC_MDR_USE_BROKERS,   /* ask a named broker (a READY one if there is one) */
    KC_MDR_REBOOTSTRAP,   /* forget the named brokers, then kc_mdr_rebootstrapped() */
} kc_mdr_choice_t;

typedef struct kc_mdr {
    kc_mdr_strategy_t strategy;
    int64_t trigger_ms;
    uint8_t bootstrapped;      /* an answer named brokers since the last (re)bootstrap */
    uint8_t required;          /* REBOOTSTRAP_REQUIRED answered (rebootstrap only) */
    uint8_t reported;          /* kc_mdr_stranded said it for this outage */
    int64_t unreachable_since; /* first look with no named broker READY; -1: one was */
    uint64_t rebootstraps;
} kc_mdr_t;

void kc_mdr_init(kc_mdr_t *r, kc_mdr_strategy_t strategy, int64_t trigger_ms);
/* A metadata answer naming `n_brokers` brokers was applied. */
void kc_mdr_on_metadata(kc_mdr_t *r, int n_brokers);
/* An answer said REBOOTSTRAP_REQUIRED: a rebootstrap follows (none still bootstrapping, as
 * bootstrap.servers said it). Returns 0 under none, which ignores it. */
int kc_mdr_on_required(kc_mdr_t *r);
/* Where to ask now, given whether a named broker's connection is READY. */
kc_mdr_choice_t kc_mdr_choose(kc_mdr_t *r, int broker_ready, int64_t now_ms);
/* The engine forgot the named brokers (after KC_MDR_REBOOTSTRAP). */
void kc_mdr_rebootstrapped(kc_mdr_t *r);
/* none: 1 once per outage, when no named broker has been reachable for trigger.ms. */
int kc_mdr_stranded(kc_mdr_t *r, int64_t now_ms);

#endif
