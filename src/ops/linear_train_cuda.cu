// Kernels of the training linear on CUDA besides its GEMMs: the bias gradient (a deterministic
// column sum in two passes) and NF4 dequantization with the CPU's exact arithmetic (cpu/nf4.cc).
#include <cuda_runtime.h>

#include <cstdint>

#include "cpu/nf4.h"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/linear.h"
#include "tach/error.h"

namespace tach::ops {

namespace {

// The CPU's two code books, passed by value (they live in the kernel's constant parameter bank).
struct Nf4CodeBooks {
  float nf4[16];
  float dynamic[256];
};

// out [n] = one NF4 tensor's elements in row-major order. Element e: its 4-bit code is the high
// nibble of byte e / 2 when e is even, the low one when odd; its 64-block b = e / 64 has
// absmax = dynamic[qabsmax[b]] · absmax2[b / 256] + offset. The explicit _rn intrinsics keep nvcc
// from fusing the multiply and add into an FMA, which the CPU (built with -ffp-contract=off for
// nf4.cc) does not do either: the values agree bit for bit.
__global__ void nf4_dequantize_kernel(float* out, const uint8_t* codes, const uint8_t* qabsmax, const float* absmax2,
                                      float offset, int64_t n, Nf4CodeBooks books) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const uint8_t byte = codes[e >> 1];
    const int code = (e & 1) ? (byte & 15) : (byte >> 4);
    const int64_t block = e / cpu::kNf4Block;
    const float absmax = __fadd_rn(__fmul_rn(books.dynamic[qabsmax[block]], absmax2[block / cpu::kNf4Block2]), offset);
    out[e] = __fmul_rn(books.nf4[code], absmax);
  }
}

// The bias gradient in two passes with a fixed order (no atomics: bitwise equal run to run).
// Pass 1: block (32, 8) over 32 columns and one chunk of kRowsPerChunk rows; lane y sums the
// chunk's rows y, y + 8, ... in order, then lane 0 adds the 8 lane sums in order:
// partial [chunks, N]. Pass 2: db[n] += the chunks' partials in chunk order.
constexpr int kSumColumns = 32, kSumLanes = 8;
constexpr int64_t kRowsPerChunk = 512;

__global__ void column_partial_sums_kernel(float* partial, const float* dy, int64_t M, int64_t N) {
  __shared__ float lanes[kSumLanes][kSumColumns + 1];
  const int64_t n = int64_t(blockIdx.x) * kSumColumns + threadIdx.x;
  const int64_t m0 = int64_t(blockIdx.y) * kRowsPerChunk;
  const int64_t m1 = m0 + kRowsPerChunk < M ? m0 + kRowsPerChunk : M;
  float acc = 0.0f;
  if (n < N)
    for (int64_t m = m0 + threadIdx.y; m < m1; m += kSumLanes) acc += dy[m * N + n];
  lanes[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && n < N) {
    float total = lanes[0][threadIdx.x];
    for (int lane = 1; lane < kSumLanes; ++lane) total += lanes[lane][threadIdx.x];
    partial[int64_t(blockIdx.y) * N + n] = total;
  }
}

__global__ void add_partial_sums_kernel(float* db, const float* partial, int64_t chunks, int64_t N) {
  for (int64_t n = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; n < N; n += int64_t(gridDim.x) * blockDim.x) {
    float total = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) total += partial[c * N + n];
    db[n] += total;
  }
}

}  // namespace

void linear_bias_grad_cuda(int device, float* db, const float* dy, int64_t M, int64_t N) {
  if (M == 0 || N == 0) return;
  const int64_t chunks = (M + kRowsPerChunk - 1) / kRowsPerChunk;
  check(chunks <= 65535, "linear_backward on CUDA: too many rows for the bias gradient's grid");
  // [chunks, N], freed in stream order once pass 2 is queued.
  const Tensor partial = Tensor::empty({chunks, N}, DType::f32, Device::cuda(device), MemoryCategory::workspace);
  const cudaStream_t s = cuda::stream(device);
  const dim3 grid(unsigned((N + kSumColumns - 1) / kSumColumns), unsigned(chunks));
  column_partial_sums_kernel<<<grid, dim3(kSumColumns, kSumLanes), 0, s>>>(partial.data<float>(), dy, M, N);
  cuda::check_launch("column_partial_sums_kernel");
  add_partial_sums_kernel<<<cuda::grid_for(N, 256), 256, 0, s>>>(db, partial.data<float>(), chunks, N);
  cuda::check_launch("add_partial_sums_kernel");
}

void nf4_dequantize_cuda(int device, float* out, const cpu::Nf4Matrix& W) {
  Nf4CodeBooks books;
  for (int i = 0; i < 16; ++i) books.nf4[i] = cpu::nf4_code_book()[i];
  for (int i = 0; i < 256; ++i) books.dynamic[i] = cpu::dynamic_code_book()[i];
  const Device where = Device::cuda(device);
  int64_t row = 0;
  for (const cpu::Nf4Tensor& part : W.parts) {
    check(part.cols == W.cols, "NF4 on CUDA: a part of the weight is not as wide as the weight");
    for (const Tensor* t : {&part.codes, &part.qabsmax, &part.absmax2})
      check(t->device() == where, "NF4 on CUDA: " + t->describe() + " is not on " + where.str());
    const int64_t n = part.rows * part.cols;
    if (n > 0) {
      nf4_dequantize_kernel<<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(
          out + row * W.cols, part.codes.data<uint8_t>(), part.qabsmax.data<uint8_t>(), part.absmax2.data<float>(),
          part.offset, n, books);
      cuda::check_launch("nf4_dequantize_kernel");
    }
    row += part.rows;
  }
  check(row == W.rows, "NF4 on CUDA: the parts' rows do not add up to the weight's");
}

}  // namespace tach::ops
