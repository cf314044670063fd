// The parameter table: every trainable tensor under its Hugging Face name, with its f32 master
// value, its gradient, whether it trains and whether weight decay applies. The weight binder
// fills it; the optimizer, gradient clipping, checkpoint saving and resuming iterate it. Values
// and gradients live on the table's device, the model's (TrainableModel::device).
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

#include <memory>

#include "cpu/nf4.h"
#include "tach/tensor.h"

namespace tach::train {

struct Parameter {
  std::string name;  // as in the checkpoint, e.g. "bert.encoder.layer.0.attention.self.query.weight"
  Tensor value;      // f32 master (category weights)
  Tensor grad;       // f32, value's shape (category gradients), zeroed by zero_grad()
  bool trainable = true;
  bool decay = true;      // weight decay applies to it
  std::string fused;      // the fused tensor this is a row slice of, or ""
  int64_t fused_row = 0;  // its first row there
  // QLoRA: a frozen linear weight kept in NF4 (then `value` is released and `shape` remembers
  // it). For a part of a fused tensor the NF4 copy is the fused tensor's.
  std::shared_ptr<const cpu::Nf4Matrix> nf4;
  Shape shape;
  int64_t numel() const { return value.defined() ? value.numel() : shape_numel(shape); }
};

struct FusedTensor {
  Tensor value, grad;  // [Σ rows, ...]
  std::string name;
  std::shared_ptr<const cpu::Nf4Matrix> nf4;  // QLoRA: the frozen weight in NF4, value released
};

class ParameterTable {
 public:
  explicit ParameterTable(Device device = Device::cpu()) : device_(device) {}
  Device device() const { return device_; }

  // A parameter with a new f32 master on the table's device copied from `init` (any float
  // dtype, a host tensor or view: a checkpoint's, or an initialiser's).
  Parameter& add(const std::string& name, const Tensor& init);
  // One fused master made of `parts` stacked by rows, in order; each part becomes a parameter
  // that views its rows. Returns the fused value and gradient for the engine's GEMMs.
  FusedTensor add_fused(const std::string& fused_name, const std::vector<std::pair<std::string, Tensor>>& parts);

  Parameter& at(const std::string& name);  // throws naming the parameter when absent
  const Parameter* find(const std::string& name) const;
  std::deque<Parameter>& entries() { return entries_; }
  const std::deque<Parameter>& entries() const { return entries_; }

  // QLoRA: a frozen linear weight to NF4, each Hugging Face tensor quantized on its own as
  // bitsandbytes quantizes each nn.Linear; the f32 master (and its parts' views) is released.
  // Returns how many Hugging Face weights (Linear4bit layers in bitsandbytes) the fused tensor
  // held: 3 for a BERT or Llama q, k, v; 1 for ModernBERT's Wqkv, stored fused.
  int64_t quantize_nf4(FusedTensor& fused);
  void quantize_nf4(Parameter& weight);
  // Bytes of the NF4 weights (codes, absmax values and scales).
  int64_t nf4_bytes() const;

  // Every gradient to 0 (one zero_grad op over them all).
  void zero_grad();
  // Parameters (elements), all or trainable only.
  int64_t count(bool trainable_only) const;

 private:
  Device device_;
  std::deque<Parameter> entries_;  // a deque: references stay valid as parameters are added
  std::map<std::string, size_t> index_;
  std::vector<Tensor> grad_list_;  // zero_grad's list, kept for its capacity (no allocation per step)
};

// Whether any parameter viewing `fused`'s gradient still trains (LoRA freezes the rest).
bool any_part_trainable(const ParameterTable& table, const FusedTensor& fused);

// transformers' Trainer excludes biases and LayerNorm weights from weight decay; this says
// whether a Hugging Face name is one of those.
bool trainer_decays(const std::string& name);

}  // namespace tach::train
