/* Shared between group_consumer.c (commands, state) and group_consumer_hb.c (heartbeats,
 * actions). Not part of any interface. Owner: network thread. */
#ifndef KC_ENGINE_GROUP_CONSUMER_INT_H
#define KC_ENGINE_GROUP_CONSUMER_INT_H

#include "group_consumer.h"

#define KC_GC_EPOCH_LEAVE        (-1)
#define KC_GC_EPOCH_LEAVE_STATIC (-2)

void kc_gc__report(kc_gc_t *gc, bool fatal, int16_t kafka_code, const char *fmt,
                   const char *detail);
void kc_gc__forget_sent(kc_gc_t *gc);
bool kc_gc__reconcile_quiet(const kc_gc_t *gc);
void kc_gc__start_join(kc_gc_t *gc);
void kc_gc__update_state(kc_gc_t *gc);
void kc_gc__resolve_target(kc_gc_t *gc, bool request_metadata);

#endif
