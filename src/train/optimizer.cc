#include "train/optimizer.h"

#include "tach/error.h"

namespace tach::train {

AdamWOptimizer::AdamWOptimizer(ParameterTable& params, AdamWConfig config, DecayScope scope) : config_(config) {
  for (auto& p : params.entries()) {
    if (!p.trainable) continue;
    slots_.push_back({&p, Tensor::zeros(p.value.shape(), DType::f32, Device::cpu(), MemoryCategory::optimizer_state),
                      Tensor::zeros(p.value.shape(), DType::f32, Device::cpu(), MemoryCategory::optimizer_state),
                      scope == DecayScope::all || p.decay});
  }
}

void AdamWOptimizer::step(double lr) {
  ++steps_;
  AdamWConfig c = config_;
  c.lr = float(lr);
  for (auto& s : slots_)
    adamw_update(s.param->value.data<float>(), s.param->grad.data<float>(), s.m.data<float>(), s.v.data<float>(),
                 s.param->value.numel(), steps_, c, s.decay && c.weight_decay != 0.f);
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
