// Linear layer: out = act(x · Wᵀ + b), with W prepared once at load for the device it runs on:
// packed for oneDNN on the CPU (cpu/packed_linear.h), stored for cuBLASLt on a GPU.
#pragma once

#include <memory>

#include "cpu/nf4.h"
#include "cpu/packed_linear.h"
#include "ops/op_cost.h"
#include "ops/silu_gate.h"
#include "tach/tensor.h"

namespace tach::ops {

// Where a model's linear layers run, and the dtype their GEMMs take their inputs in
// (accumulation is f32 in every case; the outputs are in Linear::activation_dtype()).
struct LinearPlacement {
  Device device = Device::cpu();
  // f32, bf16 (CPU and CUDA), f16 (CUDA), i8 and nf4 (CPU: quantized GEMMs; CUDA: weight-only,
  // the weights stored quantized and multiplied with bf16 activations)
  DType compute = DType::f32;
  bool decoding = false;  // mostly a few rows per call (token-by-token generation): cpu::PackedLinear
  // CUDA, f32 compute: the GEMMs run on TF32 tensor cores (inputs rounded to 10 mantissa bits,
  // f32 accumulation). The few-row GEMV stays f32. An error on a CPU.
  bool tf32 = false;
};

// An inference linear layer's weights on one device.
//   CPU:  a cpu::PackedLinear (oneDNN's blocked layout, bias and activation as post-ops; or, where
//         oneDNN would repack per call, tach's panel kernels; or a quantized layer).
//   CUDA: W: [N, K] in the compute dtype on the device, b: [N] f32; cuBLASLt adds the bias (and
//         ReLU) in its epilogue; erf-GELU and tanh run as kernels after it. int8 and nf4 store
//         the weight quantized as the CPU quantizes it (ops/linear_quantized.h): int8 codes with
//         an f32 scale per output row, or NF4 codes with the f32 absmax of each 64-weight block;
//         a few rows run a GEMV over the packed codes, more rows dequantize into bf16 and run
//         the bf16 GEMM.
class Linear {
 public:
  // weight: [N, K] (any float dtype, any device)  bias: [N] or undefined
  Linear(const Tensor& weight, const Tensor& bias, const LinearPlacement& placement,
         cpu::FusedActivation activation = cpu::FusedActivation::none);
  ~Linear();
  Linear(const Linear&) = delete;
  Linear& operator=(const Linear&) = delete;

  int64_t in_features() const { return K_; }
  int64_t out_features() const { return N_; }
  DType compute_dtype() const { return placement_.compute; }
  // The dtype x and y are in on the layer's device: f32 on the CPU and for f32 (and TF32) weights;
  // on a GPU bf16 for bf16 weights and for the weight-only int8/nf4 ones, f16 for f16. A model
  // allocates its activations in its first layer's. (CUDA also takes f32 x and y for 16-bit and
  // quantized weights: x rounded to the GEMM's dtype, y written in f32.)
  DType activation_dtype() const;
  bool tf32() const { return placement_.tf32; }  // f32 GEMMs on TF32 tensor cores (CUDA)
  Device device() const { return placement_.device; }
  bool has_bias() const { return has_bias_; }
  // The least a call reads of its weights and bias: on the CPU PackedLinear::bytes_read (the
  // weight without its packed layout's padding, int8's scales with it), on a GPU the stored copy.
  int64_t weight_bytes() const;
  cpu::FusedActivation activation() const { return activation_; }
  const cpu::PackedLinear* packed() const { return packed_.get(); }  // CPU only
  const Tensor& device_weight() const { return weight_; }            // CUDA only (int8/nf4: the codes)
  const Tensor& device_bias() const { return bias_; }                // CUDA only, may be undefined
  // CUDA int8: f32 [N], each output row's scale; nf4: f32 [N · K / 64], each block's absmax.
  const Tensor& device_scales() const { return scales_; }
  // CUDA, activation_dtype() bf16/f16: the bias [N] in it, for the GEMM's epilogue when y is in it
  // too (cuBLASLt's bias takes y's dtype; as a bf16 model's own bias). May be undefined.
  const Tensor& device_activation_bias() const { return activation_bias_; }

 private:
  LinearPlacement placement_;
  int64_t N_ = 0, K_ = 0;
  bool has_bias_ = false;
  cpu::FusedActivation activation_ = cpu::FusedActivation::none;
  // Places the weight on a GPU: in its compute dtype, or quantized (int8, nf4).
  void place_on_cuda(const Tensor& host_w);

  std::unique_ptr<cpu::PackedLinear> packed_;
  Tensor weight_, bias_, scales_, activation_bias_;
};

// x: [M, K] (rows may be strided)  out: [M, N] (rows may be strided), both on the layer's device,
// both in the layer's activation_dtype() (or both f32 on a GPU, for any weight). Inference: the
// prepared weight is a cache over the master weight; nothing is saved.
void linear_forward(Tensor& out, const Tensor& x, const Linear& weight);
void linear_forward(Tensor& out, const Tensor& x, const cpu::PackedLinear& weight);

// A gated MLP's down projection: out = (act(gate) · up) · Wᵀ (+ b), the gate op then the layer.
// gate_up: [M, 2I] (gate in columns [0, I), up in [I, 2I); rows may be strided)  W: [N, I]
// out: [M, N], both in one activation dtype the layer takes (as linear_forward). On a GPU, for a
// few rows (decoding), the GEMV (dense or int8/nf4) forms act(gate) · up as it loads x, in f32
// rounded to the activation dtype as the gate op rounds act: the same numbers, without the gate's
// kernel or act's round trip through memory; one span "linear" that names the gate. Every other
// case (more rows, the CPU, TACH_CUDA_GEMV=0) runs the gate op into `act`
// ([M, I] in the activation dtype; allocated here when not given), then linear_forward.
void linear_forward_gated(Tensor& out, const Tensor& gate_up, const Linear& weight, GateActivation activation,
                          Tensor* act = nullptr);
// linear_cost with x replaced by gate|up [M, 2I] and the gate's arithmetic added.
OpCost linear_gated_cost(int64_t M, int64_t N, int64_t I, DType compute, bool has_bias, DType activation);

// CUDA kernel side of linear_forward: the GEMV for a few rows, else the GEMM through cuBLASLt
// (f32 x converted to the GEMM's dtype first when that is not f32; quantized weights dequantized
// into bf16 first), then the activation. x: [M, K] (row stride ld_x), out: [M, N] (row stride
// ld_out), both in `activation` (f32, or the layer's activation_dtype()), every pointer on `device`.
void linear_forward_cuda(int device, void* out, int64_t ld_out, const void* x, int64_t ld_x, int64_t M,
                         DType activation, const Linear& weight);
inline void linear_forward_cuda(int device, float* out, int64_t ld_out, const float* x, int64_t ld_x, int64_t M,
                                const Linear& weight) {
  linear_forward_cuda(device, static_cast<void*>(out), ld_out, static_cast<const void*>(x), ld_x, M, DType::f32,
                      weight);
}
// CUDA side of linear_forward_gated's fused path: whether the GEMV takes these operands (gate_up
// [M, 2I] with row stride ld_gate_up), and the call (out: [M, N], row stride ld_out).
bool linear_gated_fits_cuda(const void* gate_up, int64_t ld_gate_up, int64_t M, DType activation, const Linear& weight,
                            GateActivation act);
void linear_forward_gated_cuda(int device, void* out, int64_t ld_out, const void* gate_up, int64_t ld_gate_up,
                               int64_t M, DType activation, const Linear& weight, GateActivation act);
// y [M, N] = act(y) in place (row stride ld), y in f32, bf16 or f16: erf-GELU, tanh or tanh-GELU
// computed in f32 and rounded once, 16 bytes per thread where the rows allow
// (ops/linear_activation_cuda.cu).
void linear_activation_cuda(int device, void* y, DType dtype, int64_t M, int64_t N, int64_t ld,
                            cpu::FusedActivation activation);
// x and y counted at the activation dtype's size, the weight at the compute dtype's (packed for
// int8 and nf4, with their scales).
OpCost linear_cost(int64_t M, int64_t N, int64_t K, DType compute, bool has_bias, DType activation = DType::f32);

// Training works on the plain f32 master weight (the optimizer updates it in place, so a
// packed copy would have to be rebuilt after every step), or on QLoRA's frozen base in NF4,
// dequantized tile by tile (cpu/nf4_gemm.h). GEMMs run at the run's training precision
// (cpu/train_gemm.h: f32, or bf16 inputs with f32 accumulation).
struct TrainLinearWeight {
  TrainLinearWeight(const Tensor& w) : f32(&w) {}          // NOLINT: a master weight converts
  TrainLinearWeight(const cpu::Nf4Matrix& w) : nf4(&w) {}  // NOLINT: so does an NF4 one
  const Tensor* f32 = nullptr;                             // [N, K] f32
  const cpu::Nf4Matrix* nf4 = nullptr;                     // [N, K] NF4, frozen
};

// Training forward, the op "linear" (f32 weight) or "linear_nf4". Saves nothing: the caller
// keeps x for the backward.
// x: [M, K] f32  W: [N, K]  b: [N] f32 or undefined  y: [M, N] f32 (y = x · Wᵀ + b), all
// contiguous and on one device.
void linear_forward_train(const Tensor& y, const Tensor& x, TrainLinearWeight W, const Tensor& b);
// Its backward, "linear_backward" ("linear_nf4_backward": an NF4 weight is frozen, so no dW).
// dy: [M, N]  x: [M, K] (the forward's input)  W: the forward's weight
// dx: [M, K] += dy · W        dW: [N, K] += dyᵀ · x        db: [N] += Σ_m dy
// Each gradient undefined is skipped (a frozen weight, a first layer whose input needs none),
// and the declared cost counts only what runs.
void linear_backward(const Tensor& dx, const Tensor& dW, const Tensor& db, const Tensor& dy, const Tensor& x,
                     TrainLinearWeight W);

// Kernels.
// x: [M, K]  W: [N, K]  b: [N] or null  y: [M, N] (y = x · Wᵀ + b)
void linear_forward_cpu(float* y, const float* x, const float* W, const float* b, int64_t M, int64_t N, int64_t K);
// dy: [M, N]  x: [M, K] (saved input)  W: [N, K]
// dx: [M, K] += dy · W (skipped when null)   dW: [N, K] += dyᵀ · x (skipped when null: a frozen weight)
// db: [N] += Σ_m dy (when not null)
void linear_backward_cpu(float* dx, float* dW, float* db, const float* dy, const float* x, const float* W, int64_t M,
                         int64_t N, int64_t K);
OpCost linear_backward_cost(int64_t M, int64_t N, int64_t K, bool has_bias, bool needs_dx, bool needs_dw = true);

// CUDA kernels of the training linear (ops/linear_train_cuda.cc), the same functions as the CPU
// kernels above with the same accumulate rules, every pointer on `device`, on tach's stream. GEMMs
// through cuBLASLt at the run's training precision (cuda/train_gemm.h); the bias is added in the
// GEMM's epilogue; db is a deterministic column sum (no atomics: two runs agree bit for bit).
void linear_forward_train_cuda(int device, float* y, const float* x, const float* W, const float* b, int64_t M,
                               int64_t N, int64_t K);
void linear_backward_cuda(int device, float* dx, float* dW, float* db, const float* dy, const float* x, const float* W,
                          int64_t M, int64_t N, int64_t K);
// db: [N] += Σ_m dy [M, N] (ops/linear_train_cuda.cu).
void linear_bias_grad_cuda(int device, float* db, const float* dy, int64_t M, int64_t N);
// NF4 on a GPU (its parts' codes, absmax codes and scales on `device`): the whole weight is
// dequantized into a stream-ordered f32 [N, K] temporary, then multiplied as an f32 master weight.
// out: [W.rows, W.cols] f32 = the CPU's Nf4Matrix::dequantize_rows bit for bit (its code books,
// code · absmax with absmax = code2[q] · absmax2 + offset, neither contracted to an FMA).
void nf4_dequantize_cuda(int device, float* out, const cpu::Nf4Matrix& W);
// y [M, N] = x · Wᵀ + b (b may be null)        dx [M, K] += dy · W
void nf4_linear_forward_cuda(int device, float* y, const float* x, const cpu::Nf4Matrix& W, const float* b, int64_t M,
                             int64_t N, int64_t K);
void nf4_linear_backward_dx_cuda(int device, float* dx, const float* dy, const cpu::Nf4Matrix& W, int64_t M, int64_t N,
                                 int64_t K);

}  // namespace tach::ops
