// Any bytes as a precompiled_charsmap (sentencepiece's compiled normalization rules, which a
// tokenizer.json carries as base64) either parse or fail with tach::Error; a parsed map then
// normalizes texts that walk its trie, or fails with tach::Error. Nothing else.
#include <cstdint>
#include <string>

#include "tach/error.h"
#include "tokenizer/normalized.h"
#include "tokenizer/precompiled.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tach::tokenizer;
  try {
    auto n = make_precompiled(CharsMap(std::string_view(reinterpret_cast<const char*>(data), size)));
    for (const char* text : {"Ｆｕｌｌ ﬁ ① café cafe\xcc\x81 \xe2\x80\x8bzero", "plain ascii\tand\nspace",
                             "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", "\xe2\x80\x8b"}) {
      NormalizedString s(text, 0);
      n->normalize(s);
    }
  } catch (const tach::Error&) {}
  return 0;
}
