// The training method on a built model: full (nothing to do), LoRA (adapters beside the linears,
// the base frozen) or QLoRA (LoRA, and the frozen base's linear weights in NF4). tach train,
// TrainStepper (tach profile --train) and tach bench --train set a model up through this one
// function, so a method means the same thing in each.
#pragma once

#include <string>
#include <vector>

#include "model/family.h"
#include "model/peft_adapter.h"
#include "train/lora.h"
#include "train/trainable_model.h"

namespace tach::train {

struct MethodOptions {
  std::string method = "full";  // full | lora | qlora
  // Empty target_modules / modules_to_save: the family's defaults (every linear; the head).
  LoraOptions lora;
  // A peft adapter to continue training from (its options replace `lora`), with its directory.
  const model::PeftAdapter* adapter = nullptr;
  std::string adapter_dir;
};

// Attaches the adapters and quantizes the frozen base as the method asks. Returns what it did,
// in words with its numbers (adapters, trainable parameters, the NF4 bytes).
std::vector<std::string> apply_training_method(TrainableModel& model, const model::ModelFamily& family,
                                               const MethodOptions& options, uint64_t seed);

}  // namespace tach::train
