// write_embeddings: .npy (NumPy format 1.0, little-endian float32, C order) or .jsonl.
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "model/safetensors_writer.h"
#include "tach/embed.h"
#include "tach/error.h"

namespace tach {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The .npy header: magic, version 1.0, a little-endian u16 length, then a Python dict literal
// padded with spaces and a newline so that the data starts on a 64-byte boundary.
std::string npy_bytes(const Tensor& v) {
  const int64_t N = v.size(0), E = v.size(1);
  std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(N) + ", " + std::to_string(E) + "), }";
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  const auto len = uint16_t(dict.size());
  out += char(len & 0xff);
  out += char(len >> 8);
  out += dict;
  const size_t data = size_t(N * E) * sizeof(float);
  const size_t at = out.size();
  out.resize(at + data);
  std::memcpy(out.data() + at, v.data<float>(), data);  // x86 and ARM Linux are little-endian, as '<f4' says
  return out;
}

std::string jsonl_text(const Embeddings& e, const std::vector<std::string>& texts) {
  std::string out;
  const int64_t E = e.vectors.size(1);
  const float* p = e.vectors.data<float>();
  for (size_t i = 0; i < texts.size(); ++i) {
    nlohmann::json j = {{"index", i},
                        {"text", texts[i]},
                        {"tokens", e.tokens[i]},
                        {"truncated", bool(e.truncated[i])},
                        {"embedding", std::vector<float>(p + int64_t(i) * E, p + int64_t(i + 1) * E)}};
    out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return out;
}

}  // namespace

void write_embeddings(const std::string& path, const Embeddings& embeddings, const std::vector<std::string>& texts) {
  check(embeddings.vectors.dim() == 2 && size_t(embeddings.vectors.size(0)) == texts.size(),
        "write_embeddings: " + std::to_string(texts.size()) + " texts for " + embeddings.vectors.describe());
  if (ends_with(path, ".npy")) {
    model::write_file_atomically(path, npy_bytes(embeddings.vectors));
  } else if (ends_with(path, ".jsonl")) {
    model::write_file_atomically(path, jsonl_text(embeddings, texts));
  } else {
    throw Error("--output " + path + ": expected a .npy or .jsonl file name");
  }
}

}  // namespace tach
