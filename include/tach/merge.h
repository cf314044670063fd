// `tach merge`: a base checkpoint plus a LoRA adapter, written as one plain Hugging Face model
// directory (peft's merge_and_unload followed by save_pretrained), which transformers and every
// tach command load without peft.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tach {

struct MergeOptions {
  std::string model;    // the base: a directory or a hub id in the cache (not a preset)
  std::string adapter;  // the peft adapter directory
  std::string output;   // the directory to write (replaced atomically if it exists)
  // "keep": each merged weight in its base tensor's dtype (as merge_and_unload on a model loaded
  // in that dtype); "f32": every tensor f32.
  std::string dtype = "keep";
};

struct MergeResult {
  int64_t merged_weights = 0;       // base weights that took W + scale·B·A
  int64_t head_tensors = 0;         // tensors taken from the adapter (modules_to_save)
  int64_t tensors = 0;              // written in all
  int64_t bytes = 0;                // model.safetensors on disk
  std::vector<std::string> labels;  // the head's, when the output is a classifier
  std::string architecture;
  std::vector<std::string> notes;
};

MergeResult merge_adapter(const MergeOptions& options);

}  // namespace tach
