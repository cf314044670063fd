// f32 → bf16/f16 on the GPU: a GEMM in bf16 or f16 takes its activations in that dtype.
#pragma once

#include <cstdint>

#include "tach/dtype.h"

namespace tach::cuda {

// src: [rows, cols] f32 (row stride ld_src)  dst: [rows, cols] contiguous in dst_dtype (bf16 or
// f16), rounded to nearest even as torch's .to() does. On tach's stream of `device`.
void convert_from_f32(int device, void* dst, DType dst_dtype, const float* src, int64_t rows, int64_t cols,
                      int64_t ld_src);

}  // namespace tach::cuda
