// Buffers on a device reused by successive kernels of one purpose: the bf16/f16 copy of a GEMM's
// input, attention's per-split partial results. Every use is ordered on tach's one stream of the
// device, so a buffer is free again as soon as the kernel reading it is queued before the next
// writer; growing it frees the old one in stream order. Holding them, rather than allocating per
// call, is also what lets a captured CUDA graph replay: a capture must not allocate.
#pragma once

#include <cstddef>

namespace tach::cuda {

// dequantized_weight: an int8/NF4 weight in bf16 for a many-row GEMM (ops/linear_cuda.cc).
enum class ScratchUse { gemm_input, attention_partials, dequantized_weight, count };

// At least `bytes` of device memory for `use` on `device`, counted as workspace. Throws when it
// would have to grow while the stream is being captured (the capture would own the new buffer).
void* scratch(int device, ScratchUse use, size_t bytes);

}  // namespace tach::cuda
