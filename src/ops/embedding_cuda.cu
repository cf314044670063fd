// Embedding lookup on the GPU: out[n, :] (+)= table[ids[n], :], the table in its stored dtype and
// out in the activation dtype (f32, bf16, f16);
// and the training backward, a deterministic scatter-add into the table's gradient.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/embedding.h"
#include "tach/error.h"

namespace tach::ops {
namespace {

// An id outside [0, V) reads nothing and yields zeros: the ids were checked on the host before
// they were copied (model::check_batch), and a kernel must not read out of bounds regardless.
// Table: T (its stored dtype); out: O (the activation dtype), the sum in f32 rounded once to O.
template <typename T, typename O>
__global__ void embedding_kernel(O* out, const int32_t* ids, const T* table, int64_t N, int64_t C, int64_t V,
                                 bool accumulate) {
  const int64_t total = N * C;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = i / C, c = i % C;
    const int32_t id = ids[n];
    const float v = (id >= 0 && id < V) ? cuda::to_float(table[int64_t(id) * C + c]) : 0.0f;
    out[i] = cuda::from_float<O>(accumulate ? cuda::to_float(out[i]) + v : v);
  }
}

constexpr int kBackwardThreads = 256;  // a multiple of 32: the id scan works a warp at a time

// dtable [V, C] += the rows of dout [N, C] at their ids, deterministically and in the CPU's order.
// Grid (token n, column chunk): a block works for token n only when n is its id's first
// occurrence; it then owns that table row (no other block writes it) and adds every token's row
// with that id in token order to the row's old value, exactly the CPU's sequence of additions.
// Padding and out-of-range ids add nothing. Costs O(N²) id comparisons, cheap next to the rows.
__global__ void embedding_backward_kernel(float* dtable, const int32_t* ids, const float* dout, int64_t N, int64_t C,
                                          int64_t V, int32_t padding_idx) {
  __shared__ unsigned matches[kBackwardThreads / 32];  // one ballot per warp: which ids of a chunk match
  const int64_t c = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    const int32_t id = ids[n];
    if (id == padding_idx || id < 0 || id >= V) continue;  // the same in every thread of the block
    int earlier = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) earlier |= ids[j] == id;
    if (__syncthreads_or(earlier)) continue;  // another block owns this id
    float acc = c < C ? dtable[int64_t(id) * C + c] : 0.0f;
    for (int64_t base = n; base < N; base += blockDim.x) {
      const int64_t j = base + threadIdx.x;
      const unsigned ballot = __ballot_sync(0xffffffffu, j < N && ids[j] == id);
      if (lane == 0) matches[warp] = ballot;
      __syncthreads();
      if (c < C)
        for (int w = 0; w < warps; ++w)
          for (unsigned bits = matches[w]; bits; bits &= bits - 1)
            acc += dout[(base + w * 32 + __ffs(int(bits)) - 1) * C + c];
      __syncthreads();  // matches is rewritten by the next chunk
    }
    if (c < C) dtable[int64_t(id) * C + c] = acc;
  }
}

}  // namespace

void embedding_backward_cuda(int device, float* dtable, const int32_t* ids, const float* dout, int64_t N, int64_t C,
                             int64_t V, int32_t padding_idx) {
  if (N == 0 || C == 0) return;
  const dim3 grid(unsigned(N < (int64_t(1) << 30) ? N : (int64_t(1) << 30)),
                  unsigned((C + kBackwardThreads - 1) / kBackwardThreads));
  embedding_backward_kernel<<<grid, kBackwardThreads, 0, cuda::stream(device)>>>(dtable, ids, dout, N, C, V,
                                                                                 padding_idx);
  cuda::check_launch("embedding_backward_kernel");
}

void embedding_forward_cuda(int device, void* out, DType out_dtype, const int32_t* ids, const void* table,
                            DType table_dtype, int64_t N, int64_t C, int64_t V, bool accumulate) {
  if (N * C == 0) return;
  const unsigned grid = cuda::grid_for(N * C, 256);
  cudaStream_t s = cuda::stream(device);
  cuda::dispatch_activation(table_dtype, "embedding (table)", [&](auto table_tag) {
    using T = typename decltype(table_tag)::type;
    cuda::dispatch_activation(out_dtype, "embedding", [&](auto out_tag) {
      using O = typename decltype(out_tag)::type;
      embedding_kernel<<<grid, 256, 0, s>>>(static_cast<O*>(out), ids, static_cast<const T*>(table), N, C, V,
                                            accumulate);
    });
  });
  cuda::check_launch("embedding_kernel");
}

void embedding_forward_cuda(int device, float* out, const int32_t* ids, const void* table, DType table_dtype, int64_t N,
                            int64_t C, int64_t V, bool accumulate) {
  embedding_forward_cuda(device, static_cast<void*>(out), DType::f32, ids, table, table_dtype, N, C, V, accumulate);
}

}  // namespace tach::ops
