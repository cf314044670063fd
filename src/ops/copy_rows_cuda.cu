// The CUDA side of copy_rows: a strided device-to-device copy, and the gather and scatter of
// rows by a device list of row ids; all ordered on tach's stream.
#include <cuda_runtime.h>

#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/copy_rows.h"

namespace tach::ops {
namespace {

// Blocks in a grid-stride loop over rows, threads over the columns.
constexpr int kThreads = 256;
unsigned row_blocks(int64_t rows) { return unsigned(rows < 1 ? 1 : (rows > 65535 ? 65535 : rows)); }

// dst [M, C] row m = src [N, C] row rows[m]. Device ids are checked on the host before they are
// copied; an id outside [0, N) gives a zero row rather than a read outside src.
__global__ void gather_rows_kernel(float* dst, const float* src, const int32_t* rows, int64_t M, int64_t C, int64_t N) {
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    const int32_t r = rows[m];
    const bool inside = r >= 0 && r < N;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) dst[m * C + c] = inside ? src[int64_t(r) * C + c] : 0.0f;
  }
}

// dst [N, C] row rows[m] = src [M, C] row m. Where rows repeats an id, the last m wins, as on the
// CPU (which copies in order): a block skips its m when a later m' has the same id, so no two
// blocks write one row. Ids outside [0, N) write nothing.
__global__ void scatter_rows_kernel(float* dst, const int32_t* rows, const float* src, int64_t M, int64_t C,
                                    int64_t N) {
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    const int32_t r = rows[m];
    int later = 0;
    for (int64_t j = m + 1 + threadIdx.x; j < M; j += blockDim.x) later |= rows[j] == r;
    if (__syncthreads_or(later) || r < 0 || r >= N) continue;  // the same answer in every thread
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) dst[int64_t(r) * C + c] = src[m * C + c];
  }
}

}  // namespace

void copy_rows_cuda(int device, float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                    int64_t cols) {
  cuda::check(
      cudaMemcpy2DAsync(dst, size_t(ld_dst) * sizeof(float), src, size_t(ld_src) * sizeof(float),
                        size_t(cols) * sizeof(float), size_t(rows), cudaMemcpyDeviceToDevice, cuda::stream(device)),
      "copy_rows (cudaMemcpy2DAsync)");
}

void gather_rows_cuda(int device, float* dst, const float* src, const int32_t* rows, int64_t M, int64_t C, int64_t N) {
  if (M == 0 || C == 0) return;
  gather_rows_kernel<<<row_blocks(M), kThreads, 0, cuda::stream(device)>>>(dst, src, rows, M, C, N);
  cuda::check_launch("gather_rows_kernel");
}

void scatter_rows_cuda(int device, float* dst, const int32_t* rows, const float* src, int64_t M, int64_t C, int64_t N) {
  if (M == 0 || C == 0) return;
  scatter_rows_kernel<<<row_blocks(M), kThreads, 0, cuda::stream(device)>>>(dst, rows, src, M, C, N);
  cuda::check_launch("scatter_rows_kernel");
}

}  // namespace tach::ops
