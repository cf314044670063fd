// The optimizer over the parameter table: AdamW (ops/adamw.h) over every trainable parameter as
// one multi-tensor update, its two moments on the model's device in the optimizer_state memory
// category, and the step count bias correction uses.
#pragma once

#include <string>
#include <vector>

#include "ops/adamw.h"
#include "tach/tensor.h"
#include "train/parameters.h"

namespace tach::train {

using AdamWConfig = ops::AdamWConfig;

enum class DecayScope {
  trainer,  // no decay on biases and LayerNorm weights, as transformers' Trainer
  all,      // every parameter, as torch.optim.AdamW(model.parameters())
};

class AdamWOptimizer {
 public:
  // fused: one parallel pass over every parameter's elements (--exec fused) instead of one
  // pass per parameter; the same arithmetic per element, so the same numbers.
  AdamWOptimizer(ParameterTable& params, AdamWConfig config, DecayScope scope, bool fused = false);
  // One update of every trainable parameter at learning rate lr.
  void step(double lr);
  int64_t steps() const { return steps_; }
  // The trainable parameters' gradients, in table order (what clipping reads and scales).
  const std::vector<Tensor>& grads() const { return tensors_.grads; }

  // For checkpoints: the moments under "exp_avg.NAME" / "exp_avg_sq.NAME" (views, not copies),
  // and restoring them with the step count.
  std::vector<std::pair<std::string, Tensor>> state() const;
  void restore(int64_t steps);  // after the tensors from state() were overwritten
  int64_t state_bytes() const;

 private:
  std::vector<const Parameter*> params_;  // the trainable ones, entry i of tensors_
  ops::AdamWTensors tensors_;
  bool fused_ = false;
  AdamWConfig config_;
  int64_t steps_ = 0;
};

}  // namespace tach::train
