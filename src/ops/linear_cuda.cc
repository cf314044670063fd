// The CUDA side of the inference linear: cuBLASLt GEMM with the bias (and ReLU) in its epilogue,
// then erf-GELU or tanh as kernels (cuBLASLt's GELU epilogue is the tanh approximation, which
// transformers' BERT does not use). Compiled only with the CUDA backend.
#include "cuda/convert.h"
#include "cuda/cublaslt.h"
#include "ops/activation.h"
#include "ops/gelu.h"
#include "ops/linear.h"
#include "tach/error.h"

namespace tach::ops {

void linear_forward_cuda(int device, float* out, int64_t ld_out, const float* x, int64_t ld_x, int64_t M,
                         const Linear& weight) {
  const int64_t N = weight.out_features(), K = weight.in_features();
  if (M == 0) return;
  cuda::LinearArgs a;
  a.M = M, a.N = N, a.K = K, a.ld_y = ld_out;
  const void* input = x;
  Tensor converted;  // x in the compute dtype, for a bf16/f16 GEMM
  switch (weight.compute_dtype()) {
    case DType::bf16: a.precision = cuda::GemmPrecision::bf16; break;
    case DType::f16: a.precision = cuda::GemmPrecision::f16; break;
    default: a.precision = cuda::GemmPrecision::f32; break;
  }
  if (weight.compute_dtype() == DType::f32) {
    a.ld_x = ld_x;
  } else {
    converted = Tensor::empty({M, K}, weight.compute_dtype(), Device::cuda(device), MemoryCategory::activations);
    cuda::convert_from_f32(device, converted.raw(), weight.compute_dtype(), x, M, K, ld_x);
    input = converted.raw();
    a.ld_x = K;
  }
  const float* bias = weight.has_bias() ? weight.device_bias().data<float>() : nullptr;
  const cpu::FusedActivation act = weight.activation();
  a.epilogue = act == cpu::FusedActivation::relu ? cuda::Epilogue::bias_relu
               : bias                            ? cuda::Epilogue::bias
                                                 : cuda::Epilogue::none;
  cuda::linear(device, out, input, weight.device_weight().raw(), bias, a);
  if (act == cpu::FusedActivation::gelu_erf || act == cpu::FusedActivation::tanh) {
    // The activation runs over whole rows; with padded rows (ld_out > N) row by row would be
    // needed, and no caller passes such an output with an activation.
    check(ld_out == N, "linear on CUDA: an activation needs a contiguous output");
    if (act == cpu::FusedActivation::gelu_erf) gelu_forward_cuda(device, out, out, M * N);
    else tanh_forward_cuda(device, out, out, M * N);
  }
}

}  // namespace tach::ops
