// A diagnosis in words of what torch.profiler traces show, as tach's own findings word theirs:
// each finding names the figure that triggered it and what would move it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tach::analyze {

// Sums over the traces analysed (ns; counts).
struct DiagnosisInput {
  int64_t step_wall_ns = 0, step_dataloader_ns = 0;
  bool gpu = false;
  int64_t window_ns = 0, idle_ns = 0;
  int64_t kernel_ns = 0, memory_kernel_ns = 0;
  int64_t comm_ns = 0, comm_overlapped_ns = 0;
  int64_t kernels = 0, short_kernels = 0;  // short: under kShortKernelNs
  std::string top_self_cpu_op;             // the op with the most self CPU time (not a step span)
  int64_t top_self_cpu_ns = 0, total_self_cpu_ns = 0;
  // The roofline's memory-bound ops (roofline.h): their self time (device time on GPU traces, CPU
  // time on CPU traces, so a linear over its addmm counts once), the time that is a share of
  // (all kernel time, or all self CPU time), the longest few by name, their bytes over their time
  // as a share of the bandwidth, and the ridge point (FLOP/byte) they fall under.
  int64_t memory_bound_ns = 0, roofline_base_ns = 0;
  std::vector<std::string> memory_bound_ops;
  double memory_bound_bandwidth_fraction = 0, ridge = 0;
  // GEMM ops (mm, addmm, bmm, baddbmm, linear, matmul) whose inputs were f32, on a GPU trace: their
  // self device time, their names (longest first), and the FLOPs and time of those whose FLOPs are
  // known, to say how far the tensor-core peaks are from the rate they reached.
  int64_t f32_gemm_ns = 0;
  std::vector<std::string> f32_gemm_ops;
  int64_t f32_gemm_flops = 0, f32_gemm_flops_ns = 0;
  // The published peaks of the GPU (FLOP/s; 0 where unknown) and its name as the table gives it.
  double peak_f32 = 0, peak_tf32 = 0, peak_bf16 = 0;
  std::string peak_device;
  std::string peak_half = "bf16";  // the 16-bit type the GPU's tensor cores take (PeakFlops::half)
  // GEMM kernels that run on CUDA cores (FFMA: cuBLAS's f32 kernels without TF32), and the longest.
  int64_t cuda_core_gemm_ns = 0;
  std::string cuda_core_gemm_kernel;
};

// A GEMM op by name (torch's aten:: matrix products).
bool is_gemm_op(const std::string& name);

// A GEMM kernel that runs on CUDA cores rather than tensor cores, by its name: cuBLAS's f32
// kernels say "ffma" (sm80_xmma_gemm_f32f32_..._ffma_...) or "sgemm" (ampere_sgemm_128x64_tn);
// TF32, bf16 and f16 kernels (..._tf32..., s16816gemm, nvjet_sm90_..., gmma) do not.
bool is_cuda_core_gemm_kernel(const std::string& name);

// A kernel under 10 µs is short: about the time a launch takes on the host, so a stream of them
// keeps the GPU waiting on the CPU.
inline constexpr int64_t kShortKernelNs = 10000;

// Thresholds, each a share where the cost is worth a user's attention:
//   input-bound: data loading ≥ 10% of the steps' wall time;
//   GPU idle ≥ 30% of its window; launch-bound when, besides, half the kernels are short;
//   communication exposed: communication not overlapped by computation ≥ 10% of the window;
//   copies and sets ≥ 15% of kernel time;
//   one op ≥ 25% of all self CPU time (CPU traces);
//   memory-bound ops ≥ 20% of kernel time (GPU traces) or of self CPU time (CPU traces);
//   f32 GEMMs ≥ 20% of kernel time (GPU traces); with the GPU's peaks, what TF32 and bf16 would give
//   at most where their peak is at least twice f32's;
//   low tensor-core use: GEMM kernels on CUDA cores ≥ 20% of kernel time.
std::vector<std::string> diagnose(const DiagnosisInput& in);

}  // namespace tach::analyze
