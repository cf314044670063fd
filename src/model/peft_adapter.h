// A LoRA adapter as peft saves it (adapter_config.json + adapter_model.safetensors), read for
// inference: every targeted weight becomes W + scale · B · A when the model binds it, and the
// modules_to_save (the head) replace the base model's. Merging at load costs one GEMM per
// adapted weight, once; the forward then runs at the base model's speed.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "model/safetensors.h"
#include "tach/tensor.h"

namespace tach::model {

class PeftAdapter {
 public:
  // Reads and validates DIR: peft_type LORA, a rank >= 1, a positive alpha, no DoRA and no
  // fan_in_fan_out, and every lora_A with its lora_B of matching rank. The safetensors file gets
  // the same checks as a checkpoint's.
  static std::shared_ptr<PeftAdapter> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const std::string& base_model() const { return base_model_; }  // base_model_name_or_path
  int64_t r() const { return r_; }
  float alpha() const { return alpha_; }
  bool rslora() const { return rslora_; }
  const std::vector<std::string>& target_modules() const { return target_modules_; }
  const std::vector<std::string>& modules_to_save() const { return modules_to_save_; }
  float lora_dropout() const { return dropout_; }
  bool has_patterns() const { return !rank_pattern_.empty() || !alpha_pattern_.empty(); }
  // The labels tach wrote beside a head it trained (safetensors metadata "tach.id2label"); empty
  // for adapters written by peft.
  const std::vector<std::string>& id2label() const { return id2label_; }
  int64_t adapted_modules() const { return int64_t(pairs_.size()); }
  // A full (non-LoRA) tensor the adapter carries, by its model name (classifier.weight): the
  // modules_to_save. Null when it has none of that name.
  const SafetensorsEntry* head_tensor(const std::string& name) const;
  Tensor load_head(const std::string& name) const;
  std::vector<std::string> modules_to_save_names() const;  // the full tensors' names
  // Rows of the head tensor `name` (the number of labels its classifier was trained for), or 0.
  int64_t head_rows(const std::string& name) const;

  // `tensor_name` is a weight's name in the base checkpoint (with or without the task model's
  // prefix, e.g. "transformer.layer.0.attention.q_lin.weight"); `prefixes` are the name prefixes
  // the family's task models use ("distilbert.", "bert.", "model."). Returns the merged f32 weight
  // W + scale · B · A when an adapter targets it, else an undefined tensor. A shape that does not
  // match is an error naming the adapter's base model and `model_name`.
  Tensor merged(const std::string& tensor_name, const Tensor& weight, const std::vector<std::string>& prefixes,
                const std::string& model_name);
  // Adapter modules that no weight of the model took: the adapter belongs to another model.
  // Throws naming the adapter's base model and `model_name`.
  void check_all_used(const std::string& model_name) const;
  std::string describe() const;  // "LoRA r=8, alpha=16 on 36 linears, head classifier (from DIR)"

 private:
  struct Pair {
    std::string module;  // as peft names it, without base_model.model.
    const SafetensorsEntry* A = nullptr;
    const SafetensorsEntry* B = nullptr;
    float scale = 1;
  };
  float scale_for(const std::string& module, int64_t rank) const;
  const Pair* find_pair(const std::string& tensor_name, const std::vector<std::string>& prefixes) const;

  std::string dir_, base_model_;
  int64_t r_ = 0;
  float alpha_ = 0, dropout_ = 0;
  bool rslora_ = false;
  std::vector<std::string> target_modules_, modules_to_save_, id2label_;
  std::map<std::string, int64_t> rank_pattern_;
  std::map<std::string, float> alpha_pattern_;
  std::unique_ptr<SafetensorsFile> file_;
  std::map<std::string, Pair> pairs_;                    // by module
  std::map<std::string, const SafetensorsEntry*> full_;  // modules_to_save tensors, by name
  std::set<std::string> used_;
};

// The labels a model loaded with `adapter` classifies into: the adapter's head `head_name` decides
// how many; their names are the ones tach saved with the adapter, else config.json's when the
// count agrees, else LABEL_0 … LABEL_{n-1} (as transformers names labels it was not given).
// Without such a head, config.json's labels stand.
std::vector<std::string> labels_with_adapter(const PeftAdapter& adapter, const std::string& head_name,
                                             const std::vector<std::string>& config_labels);

// The file metadata key tach writes a trained head's labels under (JSON list of names).
inline constexpr const char* kAdapterLabelsKey = "tach.id2label";

}  // namespace tach::model
