// The CUDA side of the inference linear: for a few rows (decoding) tach's GEMVs, which read x
// and the weights as stored (packed int8/NF4 codes included); otherwise a cuBLASLt GEMM with the
// bias (and ReLU, or tanh-GELU) in its epilogue. Then erf-GELU or tanh as kernels (cuBLASLt's
// GELU epilogue is the tanh approximation, which transformers' BERT does not use), and tanh-GELU
// after a GEMV. A gated MLP's down projection over a few rows forms act(gate) · up as its GEMV
// loads x (linear_forward_gated). Compiled only with the CUDA backend.
//
// x and y are f32 or the layer's activation dtype (bf16 for bf16, int8 and nf4 weights, f16 for
// f16): a 16-bit x goes to the GEMM as it is and y comes out in it; an f32 x is converted first
// and y written in f32 (callers that still hold f32 activations).
#include <cstdlib>
#include <string>

#include "cuda/convert.h"
#include "cuda/cublaslt.h"
#include "cuda/gemv.h"
#include "cuda/quant_gemv.h"
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

bool quantized(const Linear& weight) {
  return weight.compute_dtype() == DType::i8 || weight.compute_dtype() == DType::nf4;
}

// The operands of one call.
struct Call {
  int device = 0;
  void* out = nullptr;
  int64_t ld_out = 0;
  const void* x = nullptr;
  int64_t ld_x = 0;
  int64_t M = 0;
  DType activation = DType::f32;
};

// The dense (f32, bf16, f16 weights) GEMV's arguments for a call; false when it does not take them.
bool dense_gemv_args(const Call& c, const Linear& weight, cuda::GemvGate gate, cuda::GemvArgs& g) {
  if (!gemv_allowed()) return false;
  g.M = c.M, g.N = weight.out_features(), g.K = weight.in_features(), g.ld_x = c.ld_x, g.ld_y = c.ld_out;
  g.relu = weight.activation() == cpu::FusedActivation::relu, g.activation = c.activation, g.gate = gate;
  switch (weight.compute_dtype()) {
    case DType::bf16: g.weights = cuda::GemvWeights::bf16; break;
    case DType::f16: g.weights = cuda::GemvWeights::f16; break;
    case DType::f32: g.weights = cuda::GemvWeights::f32; break;
    default: return false;  // int8/nf4: quant_gemv_args
  }
  return cuda::gemv_fits(g, c.x, weight.device_weight().raw());
}

cuda::GemvGate gemv_gate(GateActivation act) {
  switch (act) {
    case GateActivation::gelu_tanh: return cuda::GemvGate::gelu_tanh;
    case GateActivation::gelu: return cuda::GemvGate::gelu;
    default: return cuda::GemvGate::silu;
  }
}

// The quantized (int8, nf4 weights) GEMV's arguments for a call; false when it does not take them.
bool quant_gemv_args(const Call& c, const Linear& weight, cuda::GemvGate gate, cuda::QuantGemvArgs& q) {
  if (!gemv_allowed() || !quantized(weight)) return false;
  q.M = c.M, q.N = weight.out_features(), q.K = weight.in_features(), q.ld_x = c.ld_x, q.ld_y = c.ld_out;
  q.weights = weight.compute_dtype() == DType::i8 ? cuda::QuantWeights::int8 : cuda::QuantWeights::nf4;
  q.activation = c.activation, q.relu = weight.activation() == cpu::FusedActivation::relu, q.gate = gate;
  return cuda::quant_gemv_fits(q, c.x, weight.device_weight().raw());
}

// The few-rows path (x, or gate|up with a gate); false when no GEMV takes the shape or layout.
// With launch false it only answers.
bool try_gemv(const Call& c, const Linear& weight, cuda::GemvGate gate = cuda::GemvGate::none, bool launch = true) {
  const float* bias = weight.has_bias() ? weight.device_bias().data<float>() : nullptr;
  if (quantized(weight)) {
    cuda::QuantGemvArgs q;
    if (!quant_gemv_args(c, weight, gate, q)) return false;
    if (launch)
      cuda::quant_gemv(c.device, c.out, c.x, weight.device_weight().raw(), weight.device_scales().data<float>(), bias,
                       q);
    return true;
  }
  cuda::GemvArgs g;
  if (!dense_gemv_args(c, weight, gate, g)) return false;
  if (launch) cuda::gemv(c.device, c.out, c.x, weight.device_weight().raw(), bias, g);
  return true;
}

// The weight as the GEMM reads it: as stored, or an int8/NF4 weight dequantized into bf16 in the
// device's reused buffer. Dequantizing the whole weight before a bf16 GEMM costs one pass over
// N · K (a fraction of the GEMM's time at the many rows that come here) and keeps cuBLASLt's
// tensor-core GEMM, with the same numbers as the GEMV's products; a GEMM that dequantizes tiles
// as it loads them would save that pass, and is later work.
const void* gemm_weight(const Call& c, const Linear& weight) {
  if (!quantized(weight)) return weight.device_weight().raw();
  const int64_t N = weight.out_features(), K = weight.in_features();
  void* w = cuda::scratch(c.device, cuda::ScratchUse::dequantized_weight, size_t(N * K) * 2);
  cuda::dequantize_weight_bf16(c.device, w, weight.device_weight().raw(), weight.device_scales().data<float>(),
                               weight.compute_dtype() == DType::i8 ? cuda::QuantWeights::int8 : cuda::QuantWeights::nf4,
                               N, K);
  return w;
}

void gemm(const Call& c, const Linear& weight) {
  const int64_t N = weight.out_features(), K = weight.in_features();
  const DType gemm_dtype = weight.activation_dtype();  // the GEMM's inputs: f32, bf16 or f16
  cuda::LinearArgs a;
  a.M = c.M, a.N = N, a.K = K, a.ld_y = c.ld_out;
  switch (gemm_dtype) {
    case DType::bf16: a.precision = cuda::GemmPrecision::bf16; break;
    case DType::f16: a.precision = cuda::GemmPrecision::f16; break;
    default: a.precision = weight.tf32() ? cuda::GemmPrecision::tf32 : cuda::GemmPrecision::f32; break;
  }
  const void* input = c.x;
  a.ld_x = c.ld_x;
  if (gemm_dtype != DType::f32 && c.activation == DType::f32) {
    // x in the GEMM's dtype, in the device's reused GEMM-input buffer (the GEMM reads it before
    // the next conversion, on the same stream, writes it again).
    void* converted =
        cuda::scratch(c.device, cuda::ScratchUse::gemm_input, size_t(c.M * K) * dtype_bytes(gemm_dtype, 1));
    cuda::convert_from_f32(c.device, converted, gemm_dtype, static_cast<const float*>(c.x), c.M, K, c.ld_x);
    input = converted;
    a.ld_x = K;
  }
  a.y_in_input_type = c.activation != DType::f32;
  // The bias in y's dtype (cublaslt.h).
  const Tensor& b = a.y_in_input_type ? weight.device_activation_bias() : weight.device_bias();
  const void* bias = b.defined() ? b.raw() : nullptr;
  const cpu::FusedActivation act = weight.activation();
  a.epilogue = act == cpu::FusedActivation::relu        ? cuda::Epilogue::bias_relu
               : act == cpu::FusedActivation::gelu_tanh ? cuda::Epilogue::bias_gelu_tanh
               : bias                                   ? cuda::Epilogue::bias
                                                        : cuda::Epilogue::none;
  cuda::linear(c.device, c.out, input, gemm_weight(c, weight), bias, a);
}

// The layer's activation after its GEMM or GEMV (y [M, N], row stride ld_out): what neither applied.
void apply_layer_activation(int device, void* out, int64_t ld_out, int64_t M, DType activation, const Linear& weight,
                            bool gemv) {
  const int64_t N = weight.out_features();
  const cpu::FusedActivation act = weight.activation();
  if (act == cpu::FusedActivation::gelu_tanh && gemv) {  // the GEMM applied it in its epilogue
    linear_activation_cuda(device, out, activation, M, N, ld_out, act);
    return;
  }
  if (act != cpu::FusedActivation::gelu_erf && act != cpu::FusedActivation::tanh) return;
  if (activation != DType::f32) {
    linear_activation_cuda(device, out, activation, M, N, ld_out, act);
    return;
  }
  // The f32 kernels run over whole rows; with padded rows (ld_out > N) row by row would be
  // needed, and no caller passes such an output with an activation.
  check(ld_out == N, "linear on CUDA: an activation needs a contiguous output");
  float* y = static_cast<float*>(out);
  if (act == cpu::FusedActivation::gelu_erf) gelu_forward_cuda(device, y, y, M * N);
  else tanh_forward_cuda(device, y, y, M * N);
}

}  // namespace

void linear_forward_cuda(int device, void* out, int64_t ld_out, const void* x, int64_t ld_x, int64_t M,
                         DType activation, const Linear& weight) {
  if (M == 0) return;
  check(activation == DType::f32 || activation == weight.activation_dtype(),
        "linear on CUDA: activations in " + std::string(dtype_name(activation)) + ", the layer takes f32 or " +
            std::string(dtype_name(weight.activation_dtype())));
  const Call c{device, out, ld_out, x, ld_x, M, activation};
  const bool gemv = try_gemv(c, weight);
  if (!gemv) gemm(c, weight);
  apply_layer_activation(device, out, ld_out, M, activation, weight, gemv);
}

bool linear_gated_fits_cuda(const void* gate_up, int64_t ld_gate_up, int64_t M, DType activation, const Linear& weight,
                            GateActivation act) {
  if (activation != DType::f32 && activation != weight.activation_dtype()) return false;
  const Call c{weight.device().index, nullptr, weight.out_features(), gate_up, ld_gate_up, M, activation};
  return try_gemv(c, weight, gemv_gate(act), false);
}

void linear_forward_gated_cuda(int device, void* out, int64_t ld_out, const void* gate_up, int64_t ld_gate_up,
                               int64_t M, DType activation, const Linear& weight, GateActivation act) {
  const Call c{device, out, ld_out, gate_up, ld_gate_up, M, activation};
  const bool ran = try_gemv(c, weight, gemv_gate(act));
  check(ran, "linear with the gate on CUDA: no GEMV takes these operands (ask linear_gated_fits_cuda first)");
  apply_layer_activation(device, out, ld_out, M, activation, weight, true);
}
}  // namespace tach::ops
