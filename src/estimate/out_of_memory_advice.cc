// The advice for a training step that ran out of memory, from tach estimate's model of its memory.
#include "estimate/out_of_memory_advice.h"

#include <vector>

#include "tach/error.h"
#include "tach/plain_number.h"

namespace tach {

namespace {

std::string mib(int64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

std::string out_of_memory_advice(const EstimateInput& in, const MemorySwitches& switches) {
  try {
    const MemoryEstimate e = estimate_memory(in);
    std::string advice = "; tach estimate says the step needs " + mib(e.total_bytes) + " (its peak in the " +
                         e.peak_phase + ") and " + mib(e.available_bytes) + " are free (" + e.available_source + ", " +
                         plain_number(in.margin * 100) + "% kept back)";
    const std::string batch = std::to_string(e.largest_batch_that_fits);
    advice += e.largest_batch_that_fits > 0
                  ? "; the largest batch that fits is " + batch + " (" + switches.batch + " " + batch + ")"
                  : "; not even batch 1 fits at " + switches.seq_len + " " + std::to_string(e.seq_len);
    std::vector<std::string> less;
    const auto consider = [&](const std::string& flag, const EstimateInput& changed) {
      const MemoryEstimate c = estimate_memory(changed);
      if (c.total_bytes < e.total_bytes) less.push_back(flag + " (needs " + mib(c.total_bytes) + ")");
    };
    if (!in.gradient_checkpointing) {
      EstimateInput c = in;
      c.gradient_checkpointing = true;
      consider(switches.checkpointing, c);
    }
    // Full fine-tuning can adapt instead (LoRA), and LoRA can quantize its base (QLoRA).
    const std::vector<std::string> lighter = in.mode == "train-full"   ? std::vector<std::string>{"lora", "qlora"}
                                             : in.mode == "train-lora" ? std::vector<std::string>{"qlora"}
                                                                       : std::vector<std::string>{};
    for (const std::string& method : lighter) {
      EstimateInput c = in;
      c.mode = "train-" + method;
      consider(switches.method + " " + method, c);
    }
    if (e.seq_len > 64) {
      EstimateInput c = in;
      c.seq_len = e.seq_len / 2;
      consider(switches.seq_len + " " + std::to_string(c.seq_len), c);
    }
    if (!less.empty()) {
      advice += "; at this batch these need less:";
      for (size_t i = 0; i < less.size(); ++i) advice += (i ? ", " : " ") + less[i];
    }
    return advice;
  } catch (const Error&) {  // no estimate for this model: the allocator's facts alone
    return "";
  }
}

EstimateInput train_estimate_input(const TrainOptions& o, const std::string& device) {
  EstimateInput in;
  in.model = o.model;
  in.dtype = o.dtype;
  in.batch = o.batch_size;
  in.seq_len = o.max_length;
  in.mode = "train-" + o.method;
  in.lora_rank = o.lora_r;  // on the default targets, as the run's unless --lora-target-modules named others
  in.gradient_checkpointing = o.gradient_checkpointing;
  in.device = device;  // on CUDA in bf16 the attention may save cuDNN's log-sum-exp, not the probabilities
  return in;
}

}  // namespace tach
