// The optimizer over the parameter table: AdamW (ops/adamw.h) over every trainable parameter as
// one multi-tensor update (eager and fused alike), clipping by the global norm read inside it, its two moments on the model's device in the optimizer_state memory
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
  // One update of every trainable parameter at learning rate lr (no clipping).
  void step(double lr);
  // The step's optimizer phase as torch's clip_grad_norm_ then AdamW.step(), on the parameters'
  // device: the global gradient norm (one multi-tensor reduction, left on the device), then the
  // multi-tensor update reading it there, gradients scaled by min(1, max_norm / (norm + 1e-6))
  // as they are read (max_norm <= 0: measured, not clipped; the gradients in memory keep their
  // values). A norm that is not finite updates nothing and counts no step. Returns the norm, read
  // back once: on a GPU that read is the phase's one wait, for the update's end.
  double clip_and_step(double lr, double max_norm);
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
  Tensor norm_;  // f64 [1] on the parameters' device: clip_and_step's norm, allocated once
  AdamWConfig config_;
  int64_t steps_ = 0;
};

}  // namespace tach::train
