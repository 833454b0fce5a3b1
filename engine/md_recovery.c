/* See md_recovery.h. Owner: the engine's network thread; pure. */
#include "md_recovery.h"

void kc_mdr_init(kc_mdr_t *r, kc_mdr_strategy_t strategy, int64_t trigger_ms)
{
    *r = (kc_mdr_t){.strategy = strategy, .trigger_ms = trigger_ms, .unreachable_since = -1};
}

void kc_mdr_on_metadata(kc_mdr_t *r, int n_brokers)
{
    if (n_brokers <= 0) /* an answer naming nobody leaves nobody to ask */
        return;
    r->bootstrapped = 1;
    r->unreachable_since = -1;
    r->reported = 0;
}

int kc_mdr_on_required(kc_mdr_t *r)
{
    if (r->strategy != KC_MDR_STRATEGY_REBOOTSTRAP)
        return 0;
    if (!r->bootstrapped) /* said by bootstrap.servers themselves: already there */
        return 1;
    r->required = 1;
    return 1;
}

kc_mdr_choice_t kc_mdr_choose(kc_mdr_t *r, int broker_ready, int64_t now_ms)
{
    if (!r->bootstrapped)
        return KC_MDR_USE_BOOTSTRAP;
    if (r->required)
        return KC_MDR_REBOOTSTRAP;
    if (broker_ready) {
        r->unreachable_since = -1;
        r->reported = 0;
        return KC_MDR_USE_BROKERS;
    }
    if (r->unreachable_since < 0)
        r->unreachable_since = now_ms;
    if (r->strategy == KC_MDR_STRATEGY_REBOOTSTRAP &&
        now_ms - r->unreachable_since >= r->trigger_ms)
        return KC_MDR_REBOOTSTRAP;
    return KC_MDR_USE_BROKERS;
}

void kc_mdr_rebootstrapped(kc_mdr_t *r)
{
    r->bootstrapped = 0;
    r->required = 0;
    r->reported = 0;
    r->unreachable_since = -1;
    r->rebootstraps++;
}

int kc_mdr_stranded(kc_mdr_t *r, int64_t now_ms)
{
    if (r->strategy != KC_MDR_STRATEGY_NONE || !r->bootstrapped || r->reported ||
        r->unreachable_since < 0 || now_ms - r->unreachable_since < r->trigger_ms)
        return 0;
    r->reported = 1;
    return 1;
}
