#include "analyze/diagnosis.h"

#include <cstdio>

namespace tach::analyze {
namespace {

std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

std::string number(const char* format, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The autocast that puts f32 GEMMs on the GPU's tensor cores, without its closing parenthesis:
// bf16, or f16 on Volta (no bf16 there).
std::string autocast(const DiagnosisInput& in) {
  return in.peak_half == "f16" ? "f16 autocast (torch.autocast(\"cuda\", dtype=torch.float16), with a GradScaler"
                               : "bf16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16)";
}

// What bf16 autocast and TF32 would give the f32 GEMMs at most: their peak over the rate the GEMMs
// reached (the FLOPs they did over their time), where that peak is far (2x or more) above f32's.
std::string tensor_core_bound(const DiagnosisInput& in) {
  if (in.f32_gemm_flops <= 0 || in.f32_gemm_flops_ns <= 0 || in.peak_f32 <= 0) return "";
  const double rate = double(in.f32_gemm_flops) / (double(in.f32_gemm_flops_ns) * 1e-9);
  std::string out = " at " + percent(rate, in.peak_f32) + " of the " + in.peak_device + "'s f32 peak (" +
                    number("%.1f", in.peak_f32 * 1e-12) + " TFLOP/s)";
  std::vector<std::string> would;
  if (in.peak_bf16 >= 2 * in.peak_f32)
    would.push_back(autocast(in) + "; peak " + number("%.1f", in.peak_bf16 * 1e-12) +
                    " TFLOP/s) would make them at most " + number("%.1f", in.peak_bf16 / rate) + "x faster");
  if (in.peak_tf32 >= 2 * in.peak_f32)
    would.push_back("torch.backends.cuda.matmul.allow_tf32 = True (TF32 peak " + number("%.1f", in.peak_tf32 * 1e-12) +
                    " TFLOP/s) at most " + number("%.1f", in.peak_tf32 / rate) + "x");
  if (!would.empty()) out += "; " + listed(would);
  return out;
}

}  // namespace

bool is_gemm_op(const std::string& name) {
  for (const char* op : {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear", "aten::matmul"})
    if (name == op) return true;
  return false;
}

bool is_cuda_core_gemm_kernel(const std::string& name) {
  return (has(name, "gemm") || has(name, "GEMM")) && (has(name, "ffma") || has(name, "sgemm") || has(name, "dgemm"));
}

std::vector<std::string> diagnose(const DiagnosisInput& in) {
  std::vector<std::string> out;
  if (in.step_wall_ns > 0 && in.step_dataloader_ns * 10 >= in.step_wall_ns)
    out.push_back("input-bound: data loading takes " + percent(double(in.step_dataloader_ns), double(in.step_wall_ns)) +
                  " of the steps' wall time; more DataLoader workers (num_workers), pin_memory and prefetching, or "
                  "data prepared ahead, would shorten the steps");
  if (in.gpu && in.window_ns > 0) {
    const bool idle = in.idle_ns * 10 >= in.window_ns * 3;
    const bool short_kernels = in.kernels > 0 && in.short_kernels * 2 >= in.kernels;
    if (idle && short_kernels) {
      out.push_back("launch-bound: the GPU is idle " + percent(double(in.idle_ns), double(in.window_ns)) +
                    " of its window and " + percent(double(in.short_kernels), double(in.kernels)) +
                    " of the kernels run under 10 us, about what the host takes to launch one; CUDA graphs or "
                    "torch.compile (fewer, fused kernels) would keep the GPU fed");
    } else if (idle) {
      out.push_back("the GPU is idle " + percent(double(in.idle_ns), double(in.window_ns)) +
                    " of its window with no kernel running: the host (Python, synchronisations, data) holds it back");
    }
    const int64_t exposed = in.comm_ns - in.comm_overlapped_ns;
    if (exposed * 10 >= in.window_ns && in.comm_ns > 0)
      out.push_back("communication exposed: " + percent(double(exposed), double(in.window_ns)) +
                    " of the GPU window is communication no computation overlaps (" +
                    percent(double(in.comm_overlapped_ns), double(in.comm_ns)) +
                    " of it is overlapped); bucketed all-reduces started during the backward (DDP's default), or "
                    "larger batches per rank, would hide more of it");
    if (in.kernel_ns > 0 && in.memory_kernel_ns * 100 >= in.kernel_ns * 15)
      out.push_back("copies and sets take " + percent(double(in.memory_kernel_ns), double(in.kernel_ns)) +
                    " of kernel time: pinned host memory with non_blocking copies, and fewer .to() and .zero_() "
                    "calls, would shrink them");
  }
  if (!in.gpu && in.total_self_cpu_ns > 0 && in.top_self_cpu_ns * 4 >= in.total_self_cpu_ns)
    out.push_back(in.top_self_cpu_op + " takes " + percent(double(in.top_self_cpu_ns), double(in.total_self_cpu_ns)) +
                  " of all self CPU time: the first place to look");
  if (in.roofline_base_ns > 0 && !in.memory_bound_ops.empty() && in.memory_bound_ns * 5 >= in.roofline_base_ns) {
    const std::string names = listed(in.memory_bound_ops);
    char ridge[32], bandwidth[32];
    std::snprintf(ridge, sizeof ridge, "%.1f", in.ridge);
    std::snprintf(bandwidth, sizeof bandwidth, "%.0f%%", 100 * in.memory_bound_bandwidth_fraction);
    out.push_back("memory-bound: " + names + (in.memory_bound_ops.size() == 1 ? " does" : " do") +
                  " fewer FLOPs per byte moved than the ridge point (" + ridge + " FLOP/byte) and take " +
                  percent(double(in.memory_bound_ns), double(in.roofline_base_ns)) + " of " +
                  (in.gpu ? "kernel" : "self CPU") + " time, moving their bytes at " + bandwidth +
                  " of the memory bandwidth; fusing them (torch.compile) or keeping activations in bf16 would cut "
                  "the bytes they move");
  }
  if (in.gpu && in.kernel_ns > 0 && !in.f32_gemm_ops.empty() && in.f32_gemm_ns * 5 >= in.kernel_ns)
    out.push_back("f32 GEMMs: " + listed(in.f32_gemm_ops) +
                  (in.f32_gemm_ops.size() == 1 ? " runs on f32 inputs and takes " : " run on f32 inputs and take ") +
                  "" + percent(double(in.f32_gemm_ns), double(in.kernel_ns)) + " of kernel time" +
                  tensor_core_bound(in) +
                  (in.peak_half == "f16" ? "; where the accuracy allows, f16 would serve (this GPU has no bf16 or TF32)"
                                         : "; where the accuracy allows, bf16 or TF32 would serve"));
  if (in.gpu && in.kernel_ns > 0 && in.cuda_core_gemm_ns * 5 >= in.kernel_ns)
    out.push_back(
        "low tensor-core use: GEMM kernels that run on CUDA cores (FFMA, as " + in.cuda_core_gemm_kernel + ") take " +
        percent(double(in.cuda_core_gemm_ns), double(in.kernel_ns)) + " of kernel time; " +
        (in.peak_half == "f16"
             ? autocast(in) + ") would run them on tensor cores (the " + in.peak_device + " has no TF32 or bf16)"
             : std::string("TF32 (torch.backends.cuda.matmul.allow_tf32 = True, or "
                           "torch.set_float32_matmul_precision(\"high\")) or bf16 autocast would run them "
                           "on tensor cores")));
  if (out.empty()) out.push_back("no bottleneck stands out by these rules");
  return out;
}

}  // namespace tach::analyze
