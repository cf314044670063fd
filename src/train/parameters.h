// The parameter table: every trainable tensor under its Hugging Face name, with its f32 master
// value, its gradient, whether it trains and whether weight decay applies. The weight binder
// fills it; the optimizer, gradient clipping, checkpoint saving and resuming iterate it.
//
// Tensors the engine fuses (BERT's query, key and value become one [3C, C] projection) are
// registered once as a fused master and gradient; each Hugging Face tensor is a row slice of
// them (a view, no copy), so the optimizer and the saver still see the names users know.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tach/tensor.h"

namespace tach::train {

struct Parameter {
  std::string name;          // as in the checkpoint, e.g. "bert.encoder.layer.0.attention.self.query.weight"
  Tensor value;              // f32 master (category weights)
  Tensor grad;               // f32, value's shape (category gradients), zeroed by zero_grad()
  bool trainable = true;
  bool decay = true;         // weight decay applies to it
  std::string fused;         // the fused tensor this is a row slice of, or ""
  int64_t fused_row = 0;     // its first row there
};

struct FusedTensor {
  Tensor value, grad;        // [Σ rows, ...]
};

class ParameterTable {
 public:
  // A parameter with a new f32 master copied from `init` (any float dtype, any device view).
  Parameter& add(const std::string& name, const Tensor& init);
  // One fused master made of `parts` stacked by rows, in order; each part becomes a parameter
  // that views its rows. Returns the fused value and gradient for the engine's GEMMs.
  FusedTensor add_fused(const std::string& fused_name, const std::vector<std::pair<std::string, Tensor>>& parts);

  Parameter& at(const std::string& name);  // throws naming the parameter when absent
  const Parameter* find(const std::string& name) const;
  std::deque<Parameter>& entries() { return entries_; }
  const std::deque<Parameter>& entries() const { return entries_; }

  void zero_grad();
  // Parameters (elements), all or trainable only.
  int64_t count(bool trainable_only) const;

 private:
  std::deque<Parameter> entries_;  // a deque: references stay valid as parameters are added
  std::map<std::string, size_t> index_;
};

// Whether any parameter viewing `fused`'s gradient still trains (LoRA freezes the rest).
bool any_part_trainable(const ParameterTable& table, const FusedTensor& fused);

// transformers' Trainer excludes biases and LayerNorm weights from weight decay; this says
// whether a Hugging Face name is one of those.
bool trainer_decays(const std::string& name);

}  // namespace tach::train
