// The linear on an NF4 weight (QLoRA's frozen base): tiles of the weight's rows are dequantized
// into a workspace buffer of about 4 MiB and multiplied at the run's training precision
// (cpu/train_gemm.h), so no full f32 copy of the weight exists at any time. The base is frozen:
// there is a dX but never a dW.
#pragma once

#include <cstdint>

#include "cpu/nf4.h"

namespace tach::cpu {

// y [M, N] = x [M, K] · Wᵀ + b (b may be null); W: [N, K] in NF4.
void nf4_linear_forward(float* y, const float* x, const Nf4Matrix& W, const float* b, int64_t M, int64_t N, int64_t K);
// dx [M, K] += dy [M, N] · W [N, K].
void nf4_linear_backward_dx(float* dx, const float* dy, const Nf4Matrix& W, int64_t M, int64_t N, int64_t K);
// Rows per dequantized tile for a weight K wide (about 1M elements, a multiple of 16).
int64_t nf4_tile_rows(int64_t N, int64_t K);

}  // namespace tach::cpu
