// The optimizer over the parameter table: AdamW (train/adamw.h) per trainable parameter, its two
// moments in the optimizer_state memory category, and the step count bias correction uses.
#pragma once

#include <string>
#include <vector>

#include "tach/tensor.h"
#include "train/adamw.h"
#include "train/parameters.h"

namespace tach::train {

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

  // For checkpoints: the moments under "exp_avg.NAME" / "exp_avg_sq.NAME" (views, not copies),
  // and restoring them with the step count.
  std::vector<std::pair<std::string, Tensor>> state() const;
  void restore(int64_t steps);  // after the tensors from state() were overwritten
  int64_t state_bytes() const;

 private:
  struct Slot {
    Parameter* param;
    Tensor m, v;
    bool decay;
  };
  struct Chunk {
    size_t slot;
    int64_t begin, end;
  };
  std::vector<Slot> slots_;
  std::vector<Chunk> chunks_;  // fused: every parameter cut into pieces of at most 64K elements
  bool fused_ = false;
  AdamWConfig config_;
  int64_t steps_ = 0;
};

}  // namespace tach::train
