// Binds the tensors an architecture needs to the tensors a checkpoint holds: finds the name
// prefix, checks every shape against the config, and afterwards reports what was left over.
// For presets it synthesises each tensor instead, deterministically from a seed and the name.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/peft_adapter.h"
#include "tach/tensor.h"

namespace tach::model {

class WeightBinder {
 public:
  // Reads from a checkpoint. `probe` is a tensor every checkpoint of the family has (the word
  // embeddings); the prefix under which it is found is used for the whole encoder.
  WeightBinder(const WeightStore& store, const std::vector<std::string>& prefixes, const std::string& probe,
               std::string config_source);
  // Synthesises: N(0, 0.02) for matrices and biases, ones and zeros for LayerNorm.
  // norms_at_zero: norm weights are 0 (Gemma's RMSNorm multiplies by 1 + w, so 0 is its identity).
  static WeightBinder synthetic(uint64_t seed, bool norms_at_zero = false);

  // An encoder tensor (prefixed). Throws naming the tensor, both shapes and the prefixes tried.
  Tensor take(const std::string& name, const Shape& shape);
  // A head tensor (never prefixed: Hugging Face keeps heads at the top level).
  Tensor take_head(const std::string& name, const Shape& shape);
  bool has_head(const std::string& name) const;
  // Whether the checkpoint holds an encoder tensor (under the prefix found).
  bool has(const std::string& name) const;
  // Whether it holds `name` (prefixed unless `head`) with this shape: synthetic weights hold
  // everything. A new head takes what the checkpoint has of it and makes the rest.
  bool holds(const std::string& name, const Shape& shape, bool head) const;

  // Tensors the checkpoint holds that nothing took: known extras (buffers such as position_ids,
  // heads of other tasks) are returned as notes; anything else is an error. Given the
  // architecture built and the checkpoint's place, the note is transformers' ("Some weights of
  // the model checkpoint at ... were not used when initializing ...: [...]"), buffers unnamed.
  std::vector<std::string> finish(const std::string& architecture = "", const std::string& checkpoint = "") const;

  // Merges a LoRA adapter into every weight it targets as it is bound, and takes the heads it
  // carries in place of the checkpoint's. `prefixes`: the family's task-model name prefixes;
  // `model_name` names the model in errors. finish() then checks that the adapter fit.
  void set_adapter(std::shared_ptr<PeftAdapter> adapter, std::vector<std::string> prefixes, std::string model_name);

  int64_t parameters() const { return parameters_; }
  std::string stored_dtypes() const;  // "f32", "bf16", or "f16+f32"
  const std::string& prefix() const { return prefix_; }

 private:
  WeightBinder() = default;
  Tensor bind(const std::string& full_name, const std::string& shown_name, const Shape& shape);
  Tensor bind_base(const std::string& full_name, const std::string& shown_name, const Shape& shape);
  Tensor synthesize(const std::string& name, const Shape& shape) const;

  const WeightStore* store_ = nullptr;
  std::vector<std::string> prefixes_;
  std::string prefix_;
  std::string config_source_;
  bool synthetic_ = false;
  bool norms_at_zero_ = false;
  uint64_t seed_ = 0;
  std::set<std::string> used_;
  std::set<std::string> dtypes_;
  std::shared_ptr<PeftAdapter> adapter_;
  std::vector<std::string> adapter_prefixes_;
  std::string adapter_model_name_;
  std::set<std::string> adapter_heads_used_;
  int64_t parameters_ = 0;
};

// t (f32, contiguous) = N(0, std), deterministic in (seed, name) and independent of the thread
// count: the synthetic weights of presets, and heads that training initialises.
void fill_normal(Tensor& t, float std, uint64_t seed, const std::string& name);

}  // namespace tach::model
