#include "train/optimizer.h"

#include <cmath>

#include "ops/grad_norm.h"
#include "tach/error.h"

namespace tach::train {

AdamWOptimizer::AdamWOptimizer(ParameterTable& params, AdamWConfig config, DecayScope scope, bool fused)
    : fused_(fused), config_(config) {
  for (auto& p : params.entries()) {
    if (!p.trainable) continue;
    check(p.value.defined() && p.grad.defined(),
          "optimizer: trainable parameter '" + p.name + "' has no " + (p.value.defined() ? "gradient" : "value"));
    const Device device = p.value.device();
    params_.push_back(&p);
    tensors_.add(p.value, p.grad, Tensor::zeros(p.value.shape(), DType::f32, device, MemoryCategory::optimizer_state),
                 Tensor::zeros(p.value.shape(), DType::f32, device, MemoryCategory::optimizer_state),
                 scope == DecayScope::all || p.decay);
  }
}

void AdamWOptimizer::step(double lr) {
  ++steps_;
  AdamWConfig c = config_;
  c.lr = float(lr);
  ops::adamw_update(tensors_, steps_, c, fused_);
}

double AdamWOptimizer::clip_and_step(double lr, double max_norm) {
  if (!norm_.defined())
    norm_ = Tensor::zeros({1}, DType::f64, tensors_.size() ? tensors_.params.front().device() : Device::cpu(),
                          MemoryCategory::optimizer_state);
  ops::grad_norm(tensors_, norm_);
  AdamWConfig c = config_;
  c.lr = float(lr);
  // The update's bias correction counts this step; taken back below if the norm skipped it.
  ops::adamw_update(tensors_, steps_ + 1, c, fused_, {norm_, max_norm});
  const double norm = norm_.on(Device::cpu()).data<double>()[0];
  if (std::isfinite(norm)) ++steps_;
  return norm;
}

std::vector<std::pair<std::string, Tensor>> AdamWOptimizer::state() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    out.emplace_back("exp_avg." + params_[i]->name, tensors_.m[i]);
    out.emplace_back("exp_avg_sq." + params_[i]->name, tensors_.v[i]);
  }
  return out;
}

void AdamWOptimizer::restore(int64_t steps) {
  check(steps >= 0, "optimizer state: negative step count");
  steps_ = steps;
}

int64_t AdamWOptimizer::state_bytes() const {
  int64_t n = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) n += int64_t(tensors_.m[i].nbytes() + tensors_.v[i].nbytes());
  return n;
}

}  // namespace tach::train
