#include "prune/unit_scores.h"

#include <cmath>
#include <limits>

#include "model/family.h"
#include "tach/error.h"

namespace tach::prune {

std::string EncoderTensors::name(int64_t layer, const std::string& role, const char* what) const {
  return layer_prefix + std::to_string(layer) + "." + role + "." + what;
}

EncoderTensors encoder_tensors(const model::WeightStore& store, const model::ModelFamily& family,
                               const model::EncoderConfig& config) {
  EncoderTensors t;
  t.config = &config;
  const std::string& layer = config.family->names.layer;
  // A task model keeps the body under its prefix; a bare one at the top level.
  t.layer_prefix = store.find(family.body_prefix + family.probe) ? family.body_prefix + layer : layer;
  return t;
}

std::vector<int64_t> current_heads(const model::EncoderConfig& c, int64_t layer) {
  std::vector<int64_t> heads;
  for (int64_t h = 0; h < c.num_heads; ++h) {
    bool removed = false;
    if (!c.pruned_heads.empty())
      for (int64_t r : c.pruned_heads[size_t(layer)]) removed = removed || r == h;
    if (!removed) heads.push_back(h);
  }
  return heads;
}

// weight [rows, cols] as f32 on the host.
Tensor f32_weight(const model::WeightStore& store, const std::string& name) {
  const model::StoredTensor* st = store.find(name);
  check(st != nullptr, "the checkpoint has no tensor " + name);
  check(st->shape.size() == 2, name + " is not a matrix: " + shape_str(st->shape));
  return st->load().to(DType::f32, MemoryCategory::workspace).contiguous();
}

// Sum of squares of rows [r0, r0 + n) of w [R, K].
double rows_squared(const Tensor& w, int64_t r0, int64_t n) {
  const int64_t K = w.size(1);
  const float* p = w.data<float>() + r0 * K;
  double s = 0;
  for (int64_t i = 0; i < n * K; ++i) s += double(p[i]) * p[i];
  return s;
}

// Sum of squares of columns [c0, c0 + n) of w [R, K].
double columns_squared(const Tensor& w, int64_t c0, int64_t n) {
  const int64_t R = w.size(0), K = w.size(1);
  double s = 0;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = c0; c < c0 + n; ++c) s += double(w.data<float>()[r * K + c]) * w.data<float>()[r * K + c];
  return s;
}

UnitScores magnitude_scores(const model::WeightStore& store, const EncoderTensors& t) {
  const model::EncoderConfig& c = *t.config;
  const model::EncoderTensorNames& n = c.family->names;
  const int64_t D = c.head_dim(), I = c.intermediate_size;
  UnitScores s;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::vector<int64_t> heads = current_heads(c, l);
    const Tensor q = f32_weight(store, t.name(l, n.q)), k = f32_weight(store, t.name(l, n.k));
    const Tensor v = f32_weight(store, t.name(l, n.v)), o = f32_weight(store, t.name(l, n.out));
    const Tensor in = f32_weight(store, t.name(l, n.ffn_in)), out = f32_weight(store, t.name(l, n.ffn_out));
    check(in.size(0) == I && out.size(1) == I, t.name(l, n.ffn_in) + " has " + std::to_string(in.size(0)) +
                                                   " neurons; config.json says " + std::to_string(I));
    std::vector<double> head(size_t(c.num_heads), std::numeric_limits<double>::quiet_NaN());
    double layer = 0;
    for (size_t i = 0; i < heads.size(); ++i) {
      const int64_t r0 = int64_t(i) * D;  // the head's rows in the (pruned) tensors
      const double sq =
          rows_squared(q, r0, D) + rows_squared(k, r0, D) + rows_squared(v, r0, D) + columns_squared(o, r0, D);
      head[size_t(heads[i])] = std::sqrt(sq);
      layer += sq;
    }
    std::vector<double> neuron(static_cast<size_t>(I));
    for (int64_t j = 0; j < I; ++j) {
      const double sq = rows_squared(in, j, 1) + columns_squared(out, j, 1);
      neuron[size_t(j)] = std::sqrt(sq);
      layer += sq;
    }
    s.heads.push_back(std::move(head));
    s.neurons.push_back(std::move(neuron));
    s.layers.push_back(std::sqrt(layer));
  }
  return s;
}

}  // namespace tach::prune
