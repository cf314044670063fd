// tach merge: a base checkpoint and a LoRA adapter (peft's format) written as one plain model
// directory, loadable without peft by transformers and every tach command.
#include <iostream>

#include "commands.h"
#include "format.h"
#include "tach/merge.h"

namespace tach::cli {

Command add_merge_command(CLI::App& app) {
  auto o = std::make_shared<MergeOptions>();
  CLI::App* sub =
      app.add_subcommand("merge", "Merge a LoRA adapter into its base model and write a plain Hugging Face checkpoint");
  sub->add_option("-m,--model", o->model, "The base model: a directory or a hub id in the HF cache")->required();
  sub->add_option("--adapter", o->adapter,
                  "The adapter directory as peft saves it (adapter_config.json, adapter_model.safetensors)")
      ->required();
  sub->add_option("-o,--output", o->output,
                  "Directory to write (config.json, model.safetensors, the tokenizer files); an existing one is "
                  "replaced only once the new one is complete")
      ->required();
  sub->add_option("--dtype", o->dtype,
                  "keep: each weight in its base tensor's dtype, as peft's merge_and_unload on a model loaded in "
                  "it (default); f32: every tensor f32")
      ->capture_default_str();
  sub->footer(
      "Each adapted weight becomes W + (lora_alpha / r) · B · A (alpha / sqrt(r) for rsLoRA), computed in f32;\n"
      "the adapter's modules_to_save (a classifier head) replace the base's. A head on a bare base model makes\n"
      "the output a sequence classifier, with the labels tach saved beside the adapter (LABEL_i otherwise).");
  return {sub, [o] {
            const MergeResult r = merge_adapter(*o);
            for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
            std::cout << "merged " << r.merged_weights << " weights (W + scale·B·A)";
            if (r.head_tensors) std::cout << ", took " << r.head_tensors << " head tensor(s) from the adapter";
            std::cout << "; wrote " << r.tensors << " tensors, " << fixed(double(r.bytes) / 1e6, 1) << " MB, as "
                      << r.architecture;
            if (!r.labels.empty()) {
              std::cout << " (labels:";
              for (const auto& l : r.labels) std::cout << " " << l;
              std::cout << ")";
            }
            std::cout << "\n  -> " << o->output << "\n";
            return 0;
          }};
}

}  // namespace tach::cli
