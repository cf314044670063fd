// The reference the linear-kernel tests check against: y = act(x · Wᵀ + b) in double, with W as the
// kernel under test should see it (rounded to bf16, dequantized from NF4, or as is).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/packed_linear.h"
#include "tach/tensor.h"

namespace tach::test {

// x: [M, K] f32 (row stride ldx)  w: [N, K] dense  b: [N] f32 or undefined  →  [M, N] dense
inline std::vector<double> linear_reference(const Tensor& x, int64_t ldx, int64_t M, const float* w, int64_t N,
                                            int64_t K, const Tensor& b, cpu::FusedActivation act) {
  std::vector<double> y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double v = b.defined() ? b.data<float>()[n] : 0.0;
      for (int64_t k = 0; k < K; ++k) v += double(x.data<float>()[m * ldx + k]) * w[n * K + k];
      if (act == cpu::FusedActivation::gelu_erf) v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      if (act == cpu::FusedActivation::relu) v = std::max(v, 0.0);
      if (act == cpu::FusedActivation::tanh) v = std::tanh(v);
      y[size_t(m * N + n)] = v;
    }
  return y;
}

}  // namespace tach::test
