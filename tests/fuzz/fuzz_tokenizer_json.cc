// Any bytes given as tokenizer.json load into a tokenizer that then encodes a fixed text, or
// fail with tach::Error. Nothing else. The bytes are parsed where they lie (no file written and
// read back per run), and the corpus's inputs are small: a run costs what the input's structure
// does, not a 30,000-token vocabulary's parse.
#include <cstdint>
#include <string>

#include "tach/error.h"
#include "tokenizer/pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto tok = tach::tokenizer::make_tokenizer(
        tach::tokenizer::parse_tokenizer_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json"));
    const auto e = tok->encode("Hello, wörld! 12 tokens\tand \xff bytes", true);
    tok->decode(e.ids, false);
  } catch (const tach::Error&) {}
  return 0;
}
