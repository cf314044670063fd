// Arbitrary bytes (valid UTF-8 or not) through both shared tokenizers: encode must not crash,
// offsets must lie inside the input, and decoding must not crash.
#include <cstdint>
#include <memory>
#include <string>

#include "tach/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto bert = tach::Tokenizer::load(std::string(TACH_SHARED_DIR) + "/tokenizers/bert-base-uncased");
  static const auto qwen = tach::Tokenizer::load(std::string(TACH_SHARED_DIR) + "/tokenizers/qwen2.5");
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const auto* tok : {bert.get(), qwen.get()}) {
    const tach::Encoding e = tok->encode(text, true);
    for (const auto& [a, b] : e.offsets)
      if (a > b || b > text.size()) __builtin_trap();
    tok->decode(e.ids, false);
  }
  return 0;
}
