#include "train/optimizer.h"

#include <algorithm>

#include "core/parallel.h"
#include "tach/error.h"
#include "train/step_support.h"

namespace tach::train {

namespace {

// Per element: ~12 flops (decay, two moments, bias corrections, the update); reads param, grad,
// m and v, writes param, m and v.
ops::OpCost adamw_cost(int64_t n) {
  ops::OpCost c;
  c.flops = 12.0 * double(n);
  c.bytes_read = 16.0 * double(n);
  c.bytes_written = 12.0 * double(n);
  return c;
}

}  // namespace

AdamWOptimizer::AdamWOptimizer(ParameterTable& params, AdamWConfig config, DecayScope scope, bool fused)
    : fused_(fused), config_(config) {
  for (auto& p : params.entries()) {
    if (!p.trainable) continue;
    slots_.push_back({&p, Tensor::zeros(p.value.shape(), DType::f32, Device::cpu(), MemoryCategory::optimizer_state),
                      Tensor::zeros(p.value.shape(), DType::f32, Device::cpu(), MemoryCategory::optimizer_state),
                      scope == DecayScope::all || p.decay});
  }
  constexpr int64_t kChunk = 1 << 16;
  for (size_t i = 0; i < slots_.size(); ++i)
    for (int64_t b = 0; b < slots_[i].param->value.numel(); b += kChunk)
      chunks_.push_back({i, b, std::min(slots_[i].param->value.numel(), b + kChunk)});
}

void AdamWOptimizer::step(double lr) {
  ++steps_;
  AdamWConfig c = config_;
  c.lr = float(lr);
  if (!fused_) {
    for (auto& s : slots_) {
      OpSpan o("adamw", adamw_cost(s.param->value.numel()));
      adamw_update(s.param->value.data<float>(), s.param->grad.data<float>(), s.m.data<float>(), s.v.data<float>(),
                   s.param->value.numel(), steps_, c, s.decay && c.weight_decay != 0.f);
    }
    return;
  }
  int64_t total = 0;
  for (const auto& s : slots_) total += s.param->value.numel();
  OpSpan o("adamw_fused", adamw_cost(total));
  core::parallel_for(int64_t(chunks_.size()), 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const Chunk& ch = chunks_[size_t(k)];
      Slot& s = slots_[ch.slot];
      adamw_update(s.param->value.data<float>() + ch.begin, s.param->grad.data<float>() + ch.begin,
                   s.m.data<float>() + ch.begin, s.v.data<float>() + ch.begin, ch.end - ch.begin, steps_, c,
                   s.decay && c.weight_decay != 0.f);
    }
  });
}

std::vector<std::pair<std::string, Tensor>> AdamWOptimizer::state() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& s : slots_) {
    out.emplace_back("exp_avg." + s.param->name, s.m);
    out.emplace_back("exp_avg_sq." + s.param->name, s.v);
  }
  return out;
}

void AdamWOptimizer::restore(int64_t steps) {
  check(steps >= 0, "optimizer state: negative step count");
  steps_ = steps;
}

int64_t AdamWOptimizer::state_bytes() const {
  int64_t n = 0;
  for (const auto& s : slots_) n += int64_t(s.m.nbytes() + s.v.nbytes());
  return n;
}

}  // namespace tach::train
