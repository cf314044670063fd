// The CUDA side of the inference linear: for a few rows (decoding) tach's GEMV, which reads f32
// activations and the weights as stored; otherwise a cuBLASLt GEMM with the bias (and ReLU) in its
// epilogue. Then erf-GELU or tanh as kernels (cuBLASLt's GELU epilogue is the tanh approximation,
// which transformers' BERT does not use). Compiled only with the CUDA backend.
#include <cstdlib>
#include <string>

#include "cuda/convert.h"
#include "cuda/cublaslt.h"
#include "cuda/gemv.h"
#include "cuda/scratch.h"
#include "ops/activation.h"
#include "ops/gelu.h"
#include "ops/linear.h"
#include "tach/error.h"

namespace tach::ops {

namespace {

// TACH_CUDA_GEMV=0 sends every linear to cuBLASLt, to compare the two.
bool gemv_allowed() {
  static const bool allowed = [] {
    const char* env = std::getenv("TACH_CUDA_GEMV");
    return !(env && std::string(env) == "0");
  }();
  return allowed;
}

// The few-rows path; false when the GEMV does not take the shape or layout.
bool try_gemv(int device, float* out, int64_t ld_out, const float* x, int64_t ld_x, int64_t M, const Linear& weight,
              const float* bias) {
  if (!gemv_allowed()) return false;
  cuda::GemvArgs g;
  g.M = M, g.N = weight.out_features(), g.K = weight.in_features(), g.ld_x = ld_x, g.ld_y = ld_out;
  g.relu = weight.activation() == cpu::FusedActivation::relu;
  switch (weight.compute_dtype()) {
    case DType::bf16: g.weights = cuda::GemvWeights::bf16; break;
    case DType::f16: g.weights = cuda::GemvWeights::f16; break;
    case DType::f32: g.weights = cuda::GemvWeights::f32; break;
    default: return false;
  }
  if (!cuda::gemv_fits(g, x, weight.device_weight().raw())) return false;
  cuda::gemv(device, out, x, weight.device_weight().raw(), bias, g);
  return true;
}

void gemm(int device, float* out, int64_t ld_out, const float* x, int64_t ld_x, int64_t M, const Linear& weight,
          const float* bias) {
  const int64_t N = weight.out_features(), K = weight.in_features();
  cuda::LinearArgs a;
  a.M = M, a.N = N, a.K = K, a.ld_y = ld_out;
  const void* input = x;
  switch (weight.compute_dtype()) {
    case DType::bf16: a.precision = cuda::GemmPrecision::bf16; break;
    case DType::f16: a.precision = cuda::GemmPrecision::f16; break;
    default: a.precision = weight.tf32() ? cuda::GemmPrecision::tf32 : cuda::GemmPrecision::f32; break;
  }
  if (weight.compute_dtype() == DType::f32) {
    a.ld_x = ld_x;
  } else {
    // x in the compute dtype, in the device's reused GEMM-input buffer (the GEMM reads it before
    // the next conversion, on the same stream, writes it again).
    void* converted =
        cuda::scratch(device, cuda::ScratchUse::gemm_input, size_t(M * K) * dtype_bytes(weight.compute_dtype(), 1));
    cuda::convert_from_f32(device, converted, weight.compute_dtype(), x, M, K, ld_x);
    input = converted;
    a.ld_x = K;
  }
  const cpu::FusedActivation act = weight.activation();
  a.epilogue = act == cpu::FusedActivation::relu ? cuda::Epilogue::bias_relu
               : bias                            ? cuda::Epilogue::bias
                                                 : cuda::Epilogue::none;
  cuda::linear(device, out, input, weight.device_weight().raw(), bias, a);
}

}  // namespace

void linear_forward_cuda(int device, float* out, int64_t ld_out, const float* x, int64_t ld_x, int64_t M,
                         const Linear& weight) {
  const int64_t N = weight.out_features();
  if (M == 0) return;
  const float* bias = weight.has_bias() ? weight.device_bias().data<float>() : nullptr;
  if (!try_gemv(device, out, ld_out, x, ld_x, M, weight, bias)) gemm(device, out, ld_out, x, ld_x, M, weight, bias);
  const cpu::FusedActivation act = weight.activation();
  if (act == cpu::FusedActivation::gelu_erf || act == cpu::FusedActivation::tanh) {
    // The activation runs over whole rows; with padded rows (ld_out > N) row by row would be
    // needed, and no caller passes such an output with an activation.
    check(ld_out == N, "linear on CUDA: an activation needs a contiguous output");
    if (act == cpu::FusedActivation::gelu_erf) gelu_forward_cuda(device, out, out, M * N);
    else tanh_forward_cuda(device, out, out, M * N);
  }
}

}  // namespace tach::ops
