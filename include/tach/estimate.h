// How much memory a model needs, and whether it fits: weights, gradients, optimizer states,
// activations (from the architecture), the KV cache, LoRA and NF4 (QLoRA)
// overheads; a total with its peak phase; the fit check against the device.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tach/model.h"

namespace tach {

// A question-answering model's default row: MLPerf's BERT SQuAD shape (run_qa's max_seq_length).
constexpr int64_t kQuestionAnsweringTokens = 384;

struct EstimateInput {
  std::string model;  // preset:NAME, a directory, or a hub id in the HF cache (config only is read)
  // f32 | bf16 | f16: inference's weights and activations (training keeps f32 storage in either and
  // rounds the GEMMs' inputs); int8, nf4: the linears' weights, inference only.
  std::string dtype = "f32";
  int64_t batch = 1, seq_len = 128;
  // seq_len was not chosen (tach estimate without -s): a question-answering model is estimated
  // at kQuestionAnsweringTokens (MLPerf's BERT shape, as tach bench runs it), and a model whose
  // rows are shorter at its longest row (with the new tokens), not refused.
  bool seq_len_is_default = false;
  std::string mode = "inference";   // inference | train-full | train-lora | train-qlora
  std::string optimizer = "adamw";  // adamw: 2 f32 states per trained parameter
  int64_t lora_rank = 8;
  // q k v o (attention), up down gate (MLP). Empty: tach train's default, the family's
  // target_modules, which are every linear of a layer (q k v o up down, and gate where the MLP
  // is gated).
  std::vector<std::string> lora_targets;
  bool gradient_checkpointing = false;
  int64_t generate_tokens = 0;  // decoders: KV cache for seq_len + this many positions
  std::string device = "cpu";
  // > 0: the memory to fit into, in place of the device's free memory (tach estimate --available):
  // planning for a GPU this machine lacks. The margin applies to it too.
  int64_t available_bytes = 0;
  double margin = 0.10;  // fraction of the available memory kept free
  // The head counted, as LoadOptions::head builds it: std::nullopt, the checkpoint's own; another
  // (an encoder's or ModernBERT's) new, with new_head_labels outputs for a classifier (0: config.json's).
  std::optional<Head> head;
  int64_t new_head_labels = 0;
};

struct EstimateLine {
  std::string name;  // "weights", "gradients", ...
  int64_t bytes = 0;
  std::string how;  // the formula, in words
};

struct MemoryEstimate {
  std::string model, architecture;
  std::string note;  // how the architecture was read when tach does not build it (MoE, MLA, generic)
  int64_t parameters = 0, trainable_parameters = 0;
  int64_t seq_len = 0;       // the row length estimated (a default shortened to the model's rows, or a QA model's 384)
  std::string seq_len_note;  // why, when it is not the length given ("" when it is)
  std::vector<std::string> lora_targets;  // LoRA modes: the targets counted (the default resolved)
  std::vector<EstimateLine> lines;
  int64_t total_bytes = 0;       // the peak: what must fit at once
  std::string peak_phase;        // "forward", "backward", "optimizer step"
  int64_t available_bytes = 0;   // on the device, after the margin
  std::string available_source;  // "MemAvailable (/proc/meminfo)", "free memory of NAME (CUDA)", "given (--available)"
  bool fits = false;
  int64_t largest_batch_that_fits = 0;  // at this length and mode (0: not even 1)
};

MemoryEstimate estimate_memory(const EstimateInput& input);

// The free memory of a device (bytes) and where the figure comes from.
int64_t available_memory(const std::string& device, std::string* source);

}  // namespace tach
