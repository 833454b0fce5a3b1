/* libFuzzer: every generated request decoder (the testkit's memory broker and fault proxy read
 * requests), chosen by (api key, version) from the first two bytes. Single-threaded. */
#include "fuzz_proto_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    return fz_api(data, len, 1);
}
