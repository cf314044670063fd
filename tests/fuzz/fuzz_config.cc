// Any text given to the config parsers (the encoders', the decoders' with every family's switches,
// and the estimate's reader of any decoder) yields a config the engine can size buffers from, or
// a tach::Error. Nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "estimate/architecture_reader.h"
#include "model/config.h"
#include "model/config_fields.h"
#include "model/decoder_config.h"
#include "tach/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto c = tach::model::parse_encoder_config_text(text, "fuzz");
    if (c.hidden_size <= 0 || c.num_heads <= 0 || c.hidden_size % c.num_heads != 0) __builtin_trap();
    if (c.num_labels() <= 0 || c.vocab_size <= 0) __builtin_trap();
  } catch (const tach::Error&) {}
  try {
    const auto d = tach::model::parse_decoder_config_text(text, "fuzz");
    if (d.head_dim <= 0 || d.head_dim % 2 != 0 || d.num_kv_heads <= 0 || d.num_heads % d.num_kv_heads != 0)
      __builtin_trap();
    if (int64_t(d.layer_window.size()) != d.num_layers || d.num_labels() <= 0) __builtin_trap();
    for (int64_t w : d.layer_window)
      if (w < 0) __builtin_trap();
  } catch (const tach::Error&) {}
  try {
    const nlohmann::json j = tach::model::parse_json_text(text, "fuzz");  // as tach estimate reads config.json
    const auto a = tach::estimate::describe_config(j, "fuzz");
    if (a.C <= 0 || a.L <= 0 || a.H <= 0 || a.moe_layers < 0 || a.moe_layers > a.L) __builtin_trap();
  } catch (const tach::Error&) {}
  return 0;
}
