// Any bytes given to the safetensors parser either parse into a header whose every range lies
// inside the data, or throw tach::Error. Nothing else: no crash, no other exception, no UB.
#include <cstddef>
#include <cstdint>

#include "model/safetensors.h"
#include "tach/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto h = tach::model::parse_safetensors(data, size, "fuzz.safetensors");
    for (const auto& e : h.entries) {
      if (e.end > h.data_size || e.begin > e.end) __builtin_trap();  // validation let a bad range through
      if (tach::dtype_bytes(e.dtype, size_t(tach::shape_numel(e.shape))) != e.end - e.begin) __builtin_trap();
    }
  } catch (const tach::Error&) {}
  return 0;
}
