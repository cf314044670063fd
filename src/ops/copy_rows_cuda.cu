// The CUDA side of copy_rows: a strided device-to-device copy, ordered on tach's stream.
#include <cuda_runtime.h>

#include "cuda/cuda_error.h"
#include "cuda/stream.h"
#include "ops/copy_rows.h"

namespace tach::ops {

void copy_rows_cuda(int device, float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                    int64_t cols) {
  cuda::check(
      cudaMemcpy2DAsync(dst, size_t(ld_dst) * sizeof(float), src, size_t(ld_src) * sizeof(float),
                        size_t(cols) * sizeof(float), size_t(rows), cudaMemcpyDeviceToDevice, cuda::stream(device)),
      "copy_rows (cudaMemcpy2DAsync)");
}

}  // namespace tach::ops
