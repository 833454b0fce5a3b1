/* Shared between member.c (commands, state) and heartbeat.c (heartbeats,
 * actions). Not part of any interface. Owner: network thread. */
#ifndef KC_ENGINE_GROUP_848_MEMBER_INT_H
#define KC_ENGINE_GROUP_848_MEMBER_INT_H

#include "group/848/member.h"

#define KC_G848_EPOCH_LEAVE        (-1)
#define KC_G848_EPOCH_LEAVE_STATIC (-2)

void kc_g848_m_report(kc_g848_t *gc, bool fatal, int16_t kafka_code, const char *fmt,
                      const char *detail);
void kc_g848_m_forget_sent(kc_g848_t *gc);
bool kc_g848_m_reconcile_quiet(const kc_g848_t *gc);
void kc_g848_m_start_join(kc_g848_t *gc);
void kc_g848_m_update_state(kc_g848_t *gc);
void kc_g848_m_resolve_target(kc_g848_t *gc, bool request_metadata);

#endif
