// Any bytes given as tokenizer.json load into a tokenizer that then encodes a fixed text, or
// fail with tach::Error. Nothing else.
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "tach/error.h"
#include "tach/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/tach-fuzz-tokenizer-" + std::to_string(getpid()) + ".json";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  try {
    auto tok = tach::Tokenizer::load(path);
    const auto e = tok->encode("Hello, wörld! 12 tokens\tand \xff bytes", true);
    tok->decode(e.ids, false);
  } catch (const tach::Error&) {}
  return 0;
}
