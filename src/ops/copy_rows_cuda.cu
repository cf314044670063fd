// The CUDA side of copy_rows: a strided device-to-device copy, and the gather and scatter of
// rows by a device list of row ids, for rows of any 4- or 2-byte element (f32, bf16, f16); all
// ordered on tach's stream.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/copy_rows.h"
#include "tach/error.h"

namespace tach::ops {
namespace {

// Blocks in a grid-stride loop over rows, threads over the columns.
constexpr int kThreads = 256;
unsigned row_blocks(int64_t rows) { return unsigned(rows < 1 ? 1 : (rows > 65535 ? 65535 : rows)); }

// dst [M, C] row m = src [N, C] row rows[m]. Device ids are checked on the host before they are
// copied; an id outside [0, N) gives a zero row rather than a read outside src.
// E: an unsigned integer of the element's size (rows are moved, not converted).
template <typename E>
__global__ void gather_rows_kernel(E* dst, const E* src, const int32_t* rows, int64_t M, int64_t C, int64_t N) {
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    const int32_t r = rows[m];
    const bool inside = r >= 0 && r < N;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) dst[m * C + c] = inside ? src[int64_t(r) * C + c] : E(0);
  }
}

// dst [N, C] row rows[m] = src [M, C] row m. Where rows repeats an id, the last m wins, as on the
// CPU (which copies in order): a block skips its m when a later m' has the same id, so no two
// blocks write one row. Ids outside [0, N) write nothing.
template <typename E>
__global__ void scatter_rows_kernel(E* dst, const int32_t* rows, const E* src, int64_t M, int64_t C, int64_t N) {
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    const int32_t r = rows[m];
    int later = 0;
    for (int64_t j = m + 1 + threadIdx.x; j < M; j += blockDim.x) later |= rows[j] == r;
    if (__syncthreads_or(later) || r < 0 || r >= N) continue;  // the same answer in every thread
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) dst[int64_t(r) * C + c] = src[m * C + c];
  }
}

}  // namespace

void copy_rows_cuda(int device, DType dtype, void* dst, int64_t ld_dst, const void* src, int64_t ld_src, int64_t rows,
                    int64_t cols) {
  const size_t element = dtype_bytes(dtype, 1);
  cuda::check(cudaMemcpy2DAsync(dst, size_t(ld_dst) * element, src, size_t(ld_src) * element, size_t(cols) * element,
                                size_t(rows), cudaMemcpyDeviceToDevice, cuda::stream(device)),
              "copy_rows (cudaMemcpy2DAsync)");
}

void copy_rows_cuda(int device, float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                    int64_t cols) {
  copy_rows_cuda(device, DType::f32, dst, ld_dst, src, ld_src, rows, cols);
}

namespace {

// Calls f(E{}) with E the unsigned integer of the dtype's element size (4 or 2 bytes).
template <typename F>
void by_element_size(DType dtype, const char* op, F&& f) {
  switch (dtype_bits(dtype)) {
    case 32: f(uint32_t{}); return;
    case 16: f(uint16_t{}); return;
    default: throw Error(std::string(op) + " on CUDA: no kernel for " + std::string(dtype_name(dtype)) + " rows");
  }
}

}  // namespace

void gather_rows_cuda(int device, DType dtype, void* dst, const void* src, const int32_t* rows, int64_t M, int64_t C,
                      int64_t N) {
  if (M == 0 || C == 0) return;
  by_element_size(dtype, "gather_rows", [&](auto e) {
    using E = decltype(e);
    gather_rows_kernel<<<row_blocks(M), kThreads, 0, cuda::stream(device)>>>(static_cast<E*>(dst),
                                                                             static_cast<const E*>(src), rows, M, C, N);
  });
  cuda::check_launch("gather_rows_kernel");
}

void scatter_rows_cuda(int device, DType dtype, void* dst, const int32_t* rows, const void* src, int64_t M, int64_t C,
                       int64_t N) {
  if (M == 0 || C == 0) return;
  by_element_size(dtype, "scatter_rows", [&](auto e) {
    using E = decltype(e);
    scatter_rows_kernel<<<row_blocks(M), kThreads, 0, cuda::stream(device)>>>(static_cast<E*>(dst), rows,
                                                                              static_cast<const E*>(src), M, C, N);
  });
  cuda::check_launch("scatter_rows_kernel");
}

void gather_rows_cuda(int device, float* dst, const float* src, const int32_t* rows, int64_t M, int64_t C, int64_t N) {
  gather_rows_cuda(device, DType::f32, dst, src, rows, M, C, N);
}

void scatter_rows_cuda(int device, float* dst, const int32_t* rows, const float* src, int64_t M, int64_t C, int64_t N) {
  scatter_rows_cuda(device, DType::f32, dst, rows, src, M, C, N);
}

}  // namespace tach::ops
