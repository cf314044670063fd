// What a training step that ran out of memory is told: what tach estimate says it needs, the
// largest batch that fits the device's free memory, and each switch the estimate says needs less.
#pragma once

#include <string>

#include "tach/estimate.h"
#include "tach/train.h"

namespace tach {

// The spellings of the switches on the command that ran the step (tach bench --train's default).
struct MemorySwitches {
  std::string batch = "-b", seq_len = "-s", checkpointing = "--gradient-checkpointing on", method = "--method";
};

// "; tach estimate says the step needs ... ; the largest batch that fits is N (-b N); at this
// batch these need less: --gradient-checkpointing on (needs X MiB), ...", to follow the
// allocator's message; "" where the model has no estimate.
std::string out_of_memory_advice(const EstimateInput& in, const MemorySwitches& switches);

// What tach estimate is asked of tach train's step: one micro-batch at --max-length, the run's
// method, LoRA rank, checkpointing and device.
EstimateInput train_estimate_input(const TrainOptions& o, const std::string& device);

}  // namespace tach
