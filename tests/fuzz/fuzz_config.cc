// Any text given to the config parser yields a config the engine can size buffers from, or a
// tach::Error. Nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/config.h"
#include "tach/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto c = tach::model::parse_encoder_config_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    if (c.hidden_size <= 0 || c.num_heads <= 0 || c.hidden_size % c.num_heads != 0) __builtin_trap();
    if (c.num_labels() <= 0 || c.vocab_size <= 0) __builtin_trap();
  } catch (const tach::Error&) {
  }
  return 0;
}
