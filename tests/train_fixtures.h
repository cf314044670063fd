// What the training golden tests share: the padded batches the fixture scripts wrote, one
// forward and backward with dropout off, and the per-tensor relative error.
#pragma once

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tach/model.h"
#include "train/classifier_loss.h"
#include "train/trainable_model.h"

namespace tach::test {

inline Tensor i32_matrix(const nlohmann::json& rows) {
  const int64_t B = int64_t(rows.size()), T = int64_t(rows[0].size());
  Tensor t = Tensor::empty({B, T}, DType::i32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i) t.data<int32_t>()[b * T + i] = rows[size_t(b)][size_t(i)].get<int32_t>();
  return t;
}

// batches.json: [{input_ids, attention_mask, token_type_ids?, labels}, ...]
inline void load_batches(const std::string& path, bool regression, std::vector<TokenBatch>* batches,
                         std::vector<train::Targets>* targets) {
  std::ifstream b(path);
  for (const auto& j : nlohmann::json::parse(b)) {
    TokenBatch batch;
    batch.input_ids = i32_matrix(j["input_ids"]);
    batch.attention_mask = i32_matrix(j["attention_mask"]);
    if (j.contains("token_type_ids")) batch.token_type_ids = i32_matrix(j["token_type_ids"]);
    train::Targets t;
    for (const auto& l : j["labels"]) {
      if (regression) t.values.push_back(l.get<float>());
      else t.classes.push_back(l.get<int32_t>());
    }
    batches->push_back(batch);
    targets->push_back(t);
  }
}

// One forward and backward (dropout off); gradients accumulate. Returns the loss.
inline double forward_backward(train::TrainableModel& m, train::ForwardState& state, const TokenBatch& batch,
                               const train::Targets& targets) {
  train::DropoutRates off;
  m.forward(state, batch, off);
  const Tensor dlogits = Tensor::zeros(state.logits.shape(), DType::f32, m.device);
  const std::string problem = m.num_labels() == 1 ? "regression" : "single_label_classification";
  const double loss = train::classifier_loss(
      problem, state.logits, train::loss_targets(targets, m.head(), batch.seq_len(), m.device), dlogits, 1.f);
  m.backward(state, batch, dlogits.data<float>(), off);
  return loss;
}

// Largest |a - b| over the tensor, relative to the largest |b|: a per-tensor relative error that
// near-zero elements cannot inflate.
inline double tensor_error(const Tensor& a, const Tensor& b) {
  Tensor bf = b.to(DType::f32);
  double num = 0, den = 1e-30;
  for (int64_t i = 0; i < a.numel(); ++i) {
    num = std::max(num, double(std::fabs(a.data<float>()[i] - bf.data<float>()[i])));
    den = std::max(den, double(std::fabs(bf.data<float>()[i])));
  }
  return num / den;
}

// A test-name suffix from a fixture name (gtest allows no '-').
inline std::string param_name(std::string n) {
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
}

}  // namespace tach::test
