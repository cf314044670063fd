#include "train/training_method.h"

#include "tach/error.h"
#include "tach/memory.h"
#include "tach/parameter_count.h"
#include "tach/plain_number.h"

namespace tach::train {

std::vector<std::string> apply_training_method(TrainableModel& model, const model::ModelFamily& family,
                                               const MethodOptions& o, uint64_t seed) {
  check(o.method == "full" || o.method == "lora" || o.method == "qlora",
        "method '" + o.method + "' is not one of full, lora, qlora");
  std::vector<std::string> notes;
  if (o.method == "full") return notes;
  LoraOptions lo = o.lora;
  if (lo.target_modules.empty()) lo.target_modules = default_lora_targets(family);
  if (lo.modules_to_save.empty()) lo.modules_to_save = default_modules_to_save(family, model.head());
  if (o.adapter) lo = lora_options_of(*o.adapter);
  attach_lora(model, lo, seed);
  if (o.adapter) {
    load_peft_adapter_weights(model, o.adapter_dir);
    const std::string d = o.adapter->describe();
    notes.push_back("LoRA: continuing " + d.substr(0, d.find(')') + 1) + "; its options replace the --lora-* flags");
  }
  notes.push_back("LoRA: r " + std::to_string(lo.r) + ", alpha " + plain_number(lo.alpha) + ", " +
                  std::to_string(model.lora->adapters.size()) + " adapters; " +
                  parameter_count_text(model.params.count(true)) + " of " +
                  parameter_count_text(model.params.count(false)) + " parameters train");
  if (o.method == "qlora") {
    const int64_t before = memory_stats(model.device).by_category[int(MemoryCategory::weights)].current;
    const int64_t matrices = model.quantize_base_nf4();
    release_cached_memory(model.device);
    const int64_t after = memory_stats(model.device).by_category[int(MemoryCategory::weights)].current;
    notes.push_back("QLoRA: " + std::to_string(matrices) + " frozen weight matrices in NF4 (blocks of 64, " +
                    "double-quantized absmax, as bitsandbytes): " + std::to_string(model.params.nf4_bytes() >> 20) +
                    " MiB; the weights category went from " + std::to_string(before >> 20) + " to " +
                    std::to_string(after >> 20) + " MiB");
  }
  return notes;
}

}  // namespace tach::train
