// LoRA fine-tuning on the training engine, as PEFT's LoraConfig sets it up: adapters A [r, in]
// (Kaiming-uniform, a = sqrt(5)) and B [out, r] (zeros) beside the linear layers named by
// target_modules, scale lora_alpha / r, dropout on the adapter's input; every base parameter is
// frozen (no gradient is kept or computed for it) except the modules_to_save (the head).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/model.h"
#include "tach/tensor.h"
#include "train/parameters.h"

namespace tach::model {
class PeftAdapter;
}

namespace tach::model {
struct ModelFamily;
}

namespace tach::train {

struct DropoutRates;
class TrainableModel;

struct LoraOptions {
  int64_t r = 8;
  float alpha = 8;
  float dropout = 0;
  std::vector<std::string> target_modules;   // last names of the linears (q_lin, query, q_proj, ...)
  std::vector<std::string> modules_to_save;  // trained in full and saved with the adapter (the head)
};

// One adapter, on the output rows [row0, row0 + out) of an engine linear (the engine's fused
// q|k|v linear carries up to three).
struct LoraAdapter {
  std::string module;      // the Hugging Face module path, e.g. distilbert.transformer.layer.0.attention.q_lin
  Parameter* A = nullptr;  // [r, in]
  Parameter* B = nullptr;  // [out, r]
  int64_t in = 0, out = 0, row0 = 0;
};

// A linear a family runs, as LoRA sees it: its Hugging Face module name, its shape, and the
// list of adapter indices the family's step reads for the engine linear it belongs to.
struct LinearSite {
  std::string module;
  int64_t in = 0, out = 0, row0 = 0;
  std::vector<int64_t>* adapters = nullptr;
};

// Saved by the forward for the backward: dropout(x) · Aᵀ [M, r] per adapter, and one scratch.
struct LoraActivations {
  std::vector<Tensor> xa;  // per adapter, [M, r] for the rows it saw
  Tensor scratch;          // [M * in + M * r] for the widest call
};

class LoraSet {
 public:
  LoraOptions options;
  float scale = 1;  // alpha / r
  std::vector<LoraAdapter> adapters;

  // y: the engine linear's output [M, ldy] f32 (rows contiguous or strided); each listed adapter
  // adds scale · B A dropout(x) to its columns [row0, row0 + out). x: [M, K] f32 contiguous.
  // Saves each adapter's xa (on x's device) for the backward.
  void forward(const std::vector<int64_t>& ids, const Tensor& y, const Tensor& x, LoraActivations& saved,
               const DropoutRates& dropout) const;
  // dy: the engine linear's output gradient [M, ldy]; x: as the forward saw it; every listed
  // adapter's dA, dB += ; dx: [M, K] += (undefined: nothing upstream trains).
  void backward(const std::vector<int64_t>& ids, const Tensor& dx, const Tensor& dy, const Tensor& x,
                LoraActivations& saved, const DropoutRates& dropout) const;
};

// Adds adapters to `model` where its linear sites match target_modules (an unknown name is an
// error listing the model's linear names), freezes the rest except modules_to_save, and frees
// the frozen parameters' gradients. init_seed draws A as PEFT does (Kaiming-uniform).
void attach_lora(TrainableModel& model, const LoraOptions& options, uint64_t init_seed);

// The options of an adapter peft (or tach) saved, to train it further. rsLoRA and per-module
// rank or alpha patterns are refused: the training engine scales every adapter by alpha / r.
LoraOptions lora_options_of(const model::PeftAdapter& adapter);

// The linears the workflow targets by default: every linear of the layers.
// The family row's defaults: every linear by PEFT's name, and the head's modules (PEFT's for the
// task: the classifier's, qa_outputs; none for the masked LM, which PEFT has no task type for).
std::vector<std::string> default_lora_targets(const model::ModelFamily& family);
std::vector<std::string> default_modules_to_save(const model::ModelFamily& family,
                                                 Head head = Head::sequence_classification);

// Writes DIR as peft's save_pretrained does: adapter_config.json (LORA, SEQ_CLS, the options,
// base_model_name_or_path) and adapter_model.safetensors (every trainable tensor, f32, under
// base_model.model.<name>), into a temporary directory renamed into place.
void save_peft_adapter(const std::string& dir, const TrainableModel& model, const std::string& base_model);

// Loads a PEFT adapter's tensors (DIR/adapter_model.safetensors, names as PEFT saves them:
// base_model.model.<module>.lora_A.weight, and the modules to save under their own names) into
// a model that attach_lora set up with the same options. A tensor the model lacks, or of another
// shape, is an error naming it.
void load_peft_adapter_weights(TrainableModel& model, const std::string& dir);

}  // namespace tach::train
