// tach profile --engine torch|torch-compile: the same workload as tach's own profile (model, batch,
// length, dtype, device, the same token ids), run in another engine's worker process under
// torch.profiler on tach profile's schedule; the worker writes each active window's Chrome trace,
// which tach analyze's library then reads (analyze_traces, tach/analyze.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/model.h"
#include "tach/profile.h"
#include "tach/tensor.h"

namespace tach {

struct EngineProfileOptions {
  std::string engine;  // torch | torch-compile
  std::string python;  // the worker's interpreter (--python; "" is python3)
  std::string model;   // as given (-m): a directory, or a hub id in the HF cache
  std::string dtype = "f32";
  Device device = Device::cpu();
  int threads = 0;  // 0: the library's default
  ProfileSchedule schedule;
  bool gzip = false;       // ENGINE.N.pt.trace.json.gz
  std::string output_dir;  // where the traces go (exists); the worker's log goes to engines/ENGINE.log in it
  // Training steps instead of forwards (the protocol's train request: transformers' Trainer step,
  // AdamW; LoRA through peft), on info's head with these targets: [B] classes, [B*T] token labels
  // (-100: none), or [B*2] start and end pairs for question answering.
  bool train = false;
  std::string method = "full";  // full | lora | qlora
  double lr = 5e-5, lora_alpha = 8;
  int64_t lora_r = 8, num_labels = 2;
  uint64_t seed = 0;
  std::vector<int32_t> labels;
};

struct EngineProfile {
  std::string engine, task;         // task as the worker protocol names it ("sequence-classification")
  std::string versions;             // "python 3.11.7, torch 2.5.1, transformers 4.46.0"
  std::vector<std::string> traces;  // one per profiler cycle, in order
  int64_t steps = 0;                // calls run under the profiler (skipped and waiting ones too)
  std::vector<double> step_s;       // each call's wall seconds, profiler on
  double load_s = 0, first_call_s = 0;
  std::string setup_kind = "none";  // "torch.compile"
  double setup_s = 0;
  std::string log;  // the worker's stderr log
};

// Usage errors (exit 2) before anything loads: an engine tach cannot profile, named with why
// (onnxruntime: its own profiler's JSON is not torch.profiler's; python-matmul: a stand-in, not the
// model), an unknown name, a model with synthetic weights, a dtype the worker does not run.
void check_profile_engine(const std::string& engine, const std::string& model, const std::string& dtype);

// The engine's worker started once and asked whether it can run, before a directory is made: an
// Error naming the missing packages with their pip command (exit 1), or a worker that does not start.
void check_engine_worker(const std::string& engine, const std::string& python);

// Starts the worker (EngineUnavailable names missing packages with their pip command), loads the
// model for info's head, sends batch's ids, makes the first call (a compile) outside the profile,
// then runs skip_first + repeat * (wait + warmup + active) calls under torch.profiler.
// info: tach's reading of the same model (its head picks the task). batch: the ids tach profiles.
EngineProfile profile_engine(const EngineProfileOptions& options, const ModelInfo& info, const TokenBatch& batch);

}  // namespace tach
