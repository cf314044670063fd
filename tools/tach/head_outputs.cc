#include "head_outputs.h"

#include <algorithm>
#include <vector>

#include "format.h"
#include "tach/error.h"

namespace tach::cli {

namespace {

// The positions of row `row` its attention mask keeps.
std::vector<int64_t> real_positions(const TokenBatch& batch, int64_t row) {
  const int64_t T = batch.seq_len();
  const int32_t* mask = batch.attention_mask.data<int32_t>() + row * T;
  std::vector<int64_t> out;
  for (int64_t t = 0; t < T; ++t)
    if (mask[t] != 0) out.push_back(t);
  return out;
}

const float* at(const Tensor& logits, int64_t row, int64_t t) {
  return logits.data<float>() + (row * logits.size(1) + t) * logits.size(2);
}

int64_t argmax(const float* v, int64_t n) { return int64_t(std::max_element(v, v + n) - v); }

void check_shape(const Tensor& logits, const TokenBatch& batch) {
  check(logits.dim() == 3 && logits.size(0) == batch.batch() && logits.size(1) == batch.seq_len(),
        "per-token logits " + logits.describe() + " do not match the batch [" + std::to_string(batch.batch()) + ", " +
            std::to_string(batch.seq_len()) + "]");
}

}  // namespace

nlohmann::json per_token_outputs_json(Head head, const Tensor& logits, const TokenBatch& batch, int64_t row) {
  check_shape(logits, batch);
  const int64_t N = logits.size(2);
  const std::vector<int64_t> positions = real_positions(batch, row);
  if (head == Head::question_answering) {
    std::vector<float> start, end;
    for (int64_t t : positions) {
      start.push_back(at(logits, row, t)[0]);
      end.push_back(at(logits, row, t)[1]);
    }
    return {{"start_logits", start}, {"end_logits", end}};
  }
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t t : positions) rows.push_back(std::vector<float>(at(logits, row, t), at(logits, row, t) + N));
  return {{"logits", rows}};
}

std::string per_token_outputs_line(const ModelInfo& info, const Tensor& logits, const TokenBatch& batch, int64_t row) {
  check_shape(logits, batch);
  constexpr size_t kShown = 16;
  const int64_t N = logits.size(2);
  const std::vector<int64_t> positions = real_positions(batch, row);
  if (positions.empty()) return "no tokens";
  if (info.head == Head::question_answering) {
    int64_t s = 0, e = 0;
    for (size_t i = 1; i < positions.size(); ++i) {
      if (at(logits, row, positions[i])[0] > at(logits, row, positions[size_t(s)])[0]) s = int64_t(i);
      if (at(logits, row, positions[i])[1] > at(logits, row, positions[size_t(e)])[1]) e = int64_t(i);
    }
    return "best start token " + std::to_string(s) + " (logit " + fixed(at(logits, row, positions[size_t(s)])[0], 3) +
           "), best end token " + std::to_string(e) + " (logit " + fixed(at(logits, row, positions[size_t(e)])[1], 3) +
           ")";
  }
  std::string out = info.head == Head::masked_lm ? "most likely ids" : "labels";
  for (size_t i = 0; i < positions.size() && i < kShown; ++i) {
    const int64_t best = argmax(at(logits, row, positions[i]), N);
    out +=
        " " + (info.head == Head::token_classification && size_t(best) < info.labels.size() ? info.labels[size_t(best)]
                                                                                            : std::to_string(best));
  }
  if (positions.size() > kShown) out += " ... (" + std::to_string(positions.size()) + " tokens)";
  return out;
}

}  // namespace tach::cli
