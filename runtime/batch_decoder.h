/* io/batch plugged into the runtime's workers (kc_rt_decoder_t). Any thread may build one; each
 * context it makes is used by one worker. */
#ifndef KC_RUNTIME_BATCH_DECODER_H
#define KC_RUNTIME_BATCH_DECODER_H

#include "dispatch.h"

kc_rt_decoder_t kc_batch_decoder(int check_crcs);

#endif
