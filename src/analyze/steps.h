// Steps of a torch.profiler trace (ProfilerStep#N) and where each one's wall time went.
#pragma once

#include <cstdint>
#include <vector>

#include "analyze/trace.h"

namespace tach::analyze {

// Phases, each the time it covers inside the step (ns):
//   data loading: the DataLoader's spans ("enumerate(DataLoader)#...");
//   optimizer: "Optimizer.step#..." and "Optimizer.zero_grad#..." spans;
//   backward: the autograd engine's ops ("autograd::engine::evaluate_function: ..."), on any
//     thread (on a GPU the engine runs them on its own thread);
//   forward: from the end of the step's last data-loading span (or its start) to its first
//     backward op (or, with none, its end), less optimizer spans inside;
//   other: what is left (the step's own Python, c10d calls, logging).
// GPU busy: kernels, copies and sets on any stream during the step's wall-clock window; idle: the
// rest of that window. Both -1 for a trace without GPU events.
struct StepRow {
  int64_t number = 0;  // N of ProfilerStep#N
  int64_t start_ns = 0, wall_ns = 0;
  int64_t dataloader_ns = 0, forward_ns = 0, backward_ns = 0, optimizer_ns = 0, other_ns = 0;
  int64_t gpu_busy_ns = -1, gpu_idle_ns = -1;
};

std::vector<StepRow> step_breakdown(const Trace& trace);

}  // namespace tach::analyze
