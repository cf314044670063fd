#include "prune/decoder_scores.h"

#include <cmath>

#include "tach/error.h"

namespace tach::prune {

std::string DecoderTensors::name(int64_t layer, const std::string& role, const char* what) const {
  return layer_prefix + std::to_string(layer) + "." + role + "." + what;
}

DecoderTensors decoder_tensors(const model::WeightStore& store, const model::ModelFamily& family,
                               const model::DecoderConfig& config) {
  DecoderTensors t;
  t.config = &config;
  t.names = &family.decoder->names;
  std::vector<std::string> prefixes = model::task_body_prefixes(family);
  prefixes.push_back("");  // a bare model: the body at the top level
  for (const std::string& p : prefixes)
    if (store.find(p + t.names->embed + ".weight")) {
      t.layer_prefix = p + "layers.";
      return t;
    }
  throw Error(
      "tach prune: the checkpoint has no " + t.names->embed + ".weight under any of " + family.body_prefix + ", " +
      (family.question_answering_body_prefix.empty() ? std::string("the top level")
                                                     : family.question_answering_body_prefix + " or the top level"));
}

GroupRows group_rows(const model::DecoderConfig& c, int64_t g) {
  const int64_t D = c.head_dim, G = c.num_heads / c.num_kv_heads;
  GroupRows r{};
  r.q0 = g * G * D, r.q_rows = G * D;
  r.k0 = g * D, r.v0 = g * D, r.kv_rows = D;
  return r;
}

UnitScores decoder_magnitude_scores(const model::WeightStore& store, const DecoderTensors& t) {
  const model::DecoderConfig& c = *t.config;
  const model::DecoderTensorNames& n = *t.names;
  const int64_t I = c.intermediate_size, HD = c.num_heads * c.head_dim, KD = c.num_kv_heads * c.head_dim;
  const bool fused_qkv = !n.qkv_fused.empty(), fused_ffn = !n.gate_up_fused.empty();
  UnitScores s;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    // q, k and v: their own tensors, or row blocks of the fused one at offsets 0, HD, HD + KD.
    Tensor q, k, v;
    int64_t k_at = 0, v_at = 0;
    if (fused_qkv) {
      q = k = v = f32_weight(store, t.name(l, n.qkv_fused));
      k_at = HD, v_at = HD + KD;
    } else {
      q = f32_weight(store, t.name(l, n.q)), k = f32_weight(store, t.name(l, n.k)),
      v = f32_weight(store, t.name(l, n.v));
    }
    const Tensor o = f32_weight(store, t.name(l, n.o));
    check(q.size(0) >= HD && k.size(0) >= k_at + KD && v.size(0) >= v_at + KD && o.size(1) == HD,
          t.name(l, fused_qkv ? n.qkv_fused : n.q) + " or " + t.name(l, n.o) + " does not hold " +
              std::to_string(c.num_heads) + " heads of " + std::to_string(c.head_dim) + " as config.json says");
    double layer = 0;
    std::vector<double> groups;
    for (int64_t g = 0; g < c.num_kv_heads; ++g) {
      const GroupRows r = group_rows(c, g);
      const double sq = rows_squared(q, r.q0, r.q_rows) + rows_squared(k, k_at + r.k0, r.kv_rows) +
                        rows_squared(v, v_at + r.v0, r.kv_rows) + columns_squared(o, r.q0, r.q_rows);
      groups.push_back(std::sqrt(sq));
      layer += sq;
    }
    // gate and up: their own tensors, or Wi's halves (rows j and I + j).
    Tensor gate, up;
    int64_t up_at = 0;
    if (fused_ffn) {
      gate = up = f32_weight(store, t.name(l, n.gate_up_fused));
      up_at = I;
    } else {
      gate = f32_weight(store, t.name(l, n.gate)), up = f32_weight(store, t.name(l, n.up));
    }
    const Tensor down = f32_weight(store, t.name(l, n.down));
    check(up.size(0) == up_at + I && down.size(1) == I, t.name(l, n.down) + " has " + std::to_string(down.size(1)) +
                                                            " neurons; config.json says " + std::to_string(I));
    std::vector<double> neurons(static_cast<size_t>(I));
    for (int64_t j = 0; j < I; ++j) {
      const double sq = rows_squared(gate, j, 1) + rows_squared(up, up_at + j, 1) + columns_squared(down, j, 1);
      neurons[size_t(j)] = std::sqrt(sq);
      layer += sq;
    }
    s.heads.push_back(std::move(groups));
    s.neurons.push_back(std::move(neurons));
    s.layers.push_back(std::sqrt(layer));
  }
  return s;
}

}  // namespace tach::prune
