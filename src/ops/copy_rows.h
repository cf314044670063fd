// Copies a block of rows between two strided f32 buffers on one device: the key/value cache
// append (rows of the fused q|k|v output into the cache) and gathering one row per sequence
// (the token a head reads). An op so that the profile counts its bytes.
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/device.h"

namespace tach::ops {

// src: [rows, cols] f32 with row stride ld_src  dst: [rows, cols] f32 with row stride ld_dst,
// both on `device`; they must not overlap.
void copy_rows(Device device, float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols);
OpCost copy_rows_cost(int64_t rows, int64_t cols);

// CUDA: one cudaMemcpy2DAsync on tach's stream (ops/copy_rows_cuda.cc).
void copy_rows_cuda(int device, float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                    int64_t cols);

}  // namespace tach::ops
