// A linear layer whose weights are packed once, at load, into oneDNN's preferred blocked
// layout, with the bias and the activation fused into the GEMM as post-ops. This is where
// nearly all of an encoder's FLOPs go, so it is where the engine earns its speed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "tach/dtype.h"
#include "tach/tensor.h"

namespace tach::cpu {

enum class FusedActivation { none, gelu_erf, relu, tanh };

class PackedLinear {
 public:
  // weight: [N, K] (nn.Linear layout, any float dtype)  bias: [N] or undefined
  // compute: f32, or bf16 (weights and activations rounded to bf16, f32 accumulation and output)
  // packing_rows: the M oneDNN is asked to choose the weight layout for (every M reuses it).
  PackedLinear(const Tensor& weight, const Tensor& bias, DType compute, FusedActivation activation,
               int64_t packing_rows = 128);
  ~PackedLinear();
  PackedLinear(const PackedLinear&) = delete;
  PackedLinear& operator=(const PackedLinear&) = delete;

  // x: [M, K] f32 (row stride ldx)  y: [M, N] f32 (row stride ldy)
  void forward(const float* x, int64_t M, int64_t ldx, float* y, int64_t ldy) const;

  int64_t in_features() const { return K_; }
  int64_t out_features() const { return N_; }
  DType compute_dtype() const { return compute_; }
  bool has_bias() const { return has_bias_; }
  size_t packed_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int64_t N_ = 0, K_ = 0;
  DType compute_ = DType::f32;
  bool has_bias_ = false;
};

}  // namespace tach::cpu
