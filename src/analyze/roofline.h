// The roofline of a torch.profiler trace: each op's FLOP/s against the peak of its precision, and
// its bytes moved against the memory bandwidth, so that it is judged memory-bound or compute-bound.
// The peaks are the published ones of the GPU that deviceProperties names, or for CPU traces this
// machine's measured ceilings (tach info --ceilings: GEMM and STREAM triad).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/op_averages.h"
#include "analyze/trace.h"

namespace tach::analyze {

struct PeakFlops {
  std::string device;                  // as the table names it
  double f32 = 0, tf32 = 0, bf16 = 0;  // FLOP/s, dense (no structured sparsity)
  std::string source;
  double bytes_per_s = 0;  // memory bandwidth (HBM or GDDR on a GPU; STREAM triad on a CPU); 0 unknown
  std::string bandwidth_source;
  // The 16-bit type its tensor cores take: "bf16" from Ampere on; "f16" on Volta, which has
  // neither bf16 nor TF32 (its bf16 column is then the f16 rate, and tf32 equals f32).
  std::string half = "bf16";
};

// The peak of the GPU named (deviceProperties[].name, e.g. "NVIDIA H100 80GB HBM3"); nullopt for a
// name the table does not hold. Figures from NVIDIA's datasheets (dense tensor-core rates, and the
// memory bandwidth of the board named: the A100's 40 GB and 80 GB boards differ).
std::optional<PeakFlops> published_peak(const std::string& device_name);

// The precision an op's inputs say it ran at: "bf16", "f16", "f32", or "" when the types do not
// say (types: the trace's "Input type" as read, "[c10::BFloat16, c10::BFloat16]").
std::string gemm_precision(const std::string& types);

// The FLOPs and bytes of the op_cost.h model summed over an op name's calls in one trace. A call
// nested in a call of the same name on its thread (torch merges such a pair into one row) counts
// once; calls whose shapes the model does not take count in `calls` only.
struct NameCost {
  int64_t calls = 0, costed_calls = 0;
  int64_t flops = 0, bytes = 0;
  std::string precision;  // gemm_precision of the first costed call
};
void add_trace_costs(const Trace& trace, std::map<std::string, NameCost>& costs);

// roofline.ops[]: every op name whose calls the model costed (all of them), by time (its device
// time where it launched kernels, else its total CPU time, as % peak uses), longest first:
// {name, calls, time_us, flops, bytes, intensity, ridge, bound ("memory" | "compute"),
// flops_per_s, bytes_per_s, peak_fraction, bandwidth_fraction}. rows: the op table (any
// grouping: rows of one name are summed). Empty without a bandwidth.
nlohmann::ordered_json roofline_ops(const std::vector<OpRow>& rows, const std::map<std::string, NameCost>& costs,
                                    const PeakFlops& peak);

// The peak an op's precision runs against: bf16 and f16 against the bf16 (tensor-core) peak,
// anything else against f32.
double peak_at(const PeakFlops& peak, const std::string& precision);

}  // namespace tach::analyze
