// Inputs as the commands (and the Python module) feed a model: the tokenizer it ships, texts
// encoded for it, prompts padded for generation. One place, so that every way in gives the same ids.
#include <algorithm>

#include "tach/error.h"
#include "tach/model.h"
#include "tach/tokenizer.h"

namespace tach {

std::string missing_tokenizer_message(const std::string& model, const std::string& hint) {
  const std::string tokenizer = hint.empty() ? "its family's tokenizer" : hint;
  return model + " has synthetic weights and no tokenizer files: pass --tokenizer DIR, a directory with the " +
         "tokenizer.json of " + tokenizer + (hint.empty() ? "" : " (tach download " + hint + " prints one)");
}

std::string tokenizer_path_for(const ModelInfo& info, const std::string& given) {
  if (!given.empty()) return given;
  check(info.source.rfind("synthetic", 0) != 0, missing_tokenizer_message(info.spec, info.tokenizer_hint));
  return info.source.substr(0, info.source.find(" (revision"));
}

TokenBatch encode_texts_for(const Tokenizer& tokenizer, const ModelInfo& info, const std::vector<std::string>& texts) {
  check(!texts.empty(), "no texts to encode");
  EncodeOptions eo;
  if (info.max_positions > 0) {
    eo.truncation = Truncation{};
    eo.truncation->max_length = size_t(info.max_positions);
  }
  const auto encodings = tokenizer.encode_batch(texts, eo);
  std::vector<std::vector<int32_t>> rows, types;
  for (const auto& e : encodings) {
    rows.push_back(e.ids);
    types.push_back(e.type_ids);
  }
  return TokenBatch::from_rows(rows, info.pad_token_id, info.type_vocab_size > 0 ? types : decltype(types){});
}

TokenBatch TokenBatch::left_padded(const std::vector<std::vector<int32_t>>& rows, int32_t pad_id) {
  check(!rows.empty(), "empty batch: no prompts");
  size_t T = 0;
  for (const auto& r : rows) T = std::max(T, r.size());
  check(T > 0, "every prompt is empty");
  const auto B = int64_t(rows.size());
  TokenBatch b;
  b.input_ids = Tensor::empty({B, int64_t(T)}, DType::i32);
  b.attention_mask = Tensor::zeros({B, int64_t(T)}, DType::i32);
  for (int64_t r = 0; r < B; ++r) {
    const auto& row = rows[size_t(r)];
    const size_t off = T - row.size();
    int32_t* ids = b.input_ids.data<int32_t>() + r * int64_t(T);
    int32_t* mask = b.attention_mask.data<int32_t>() + r * int64_t(T);
    for (size_t t = 0; t < T; ++t) {
      ids[t] = t >= off ? row[t - off] : pad_id;
      mask[t] = t >= off ? 1 : 0;
    }
  }
  return b;
}

}  // namespace tach
