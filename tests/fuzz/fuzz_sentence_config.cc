// Any modules.json, pooling config and sentence_bert_config.json yield a pipeline tach can run
// (at least one pooling mode, a non-negative max_seq_length) or a tach::Error. The input is the
// three files separated by NUL bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/sentence_config.h"
#include "tach/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  std::string parts[3];
  size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t end = i < 2 ? all.find('\0', at) : std::string::npos;
    parts[i] = all.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  auto read = [&](const std::string& p) -> std::optional<std::string> {
    if (p.size() >= 11 && p.compare(p.size() - 11, 11, "config.json") == 0 &&
        p.find("sentence_bert") == std::string::npos)
      return parts[1];
    if (p.find("sentence_bert_config.json") != std::string::npos) return parts[2];
    return std::nullopt;
  };
  try {
    const auto c = tach::model::parse_sentence_embedding_config(parts[0], read, "fuzz");
    if (c.modes.empty() || c.max_seq_length < 0) __builtin_trap();
  } catch (const tach::Error&) {}
  return 0;
}
