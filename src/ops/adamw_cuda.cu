// AdamW on the GPU: one launch over the optimizer's chunk records (PyTorch's multi-tensor form),
// one block per chunk of at most 64K elements, one element per thread at a time. The arithmetic is
// the CPU kernel's, operation for operation, each rounded as written (the _rn intrinsics keep the
// compiler from fusing a multiply-add the CPU source does not spell), so a CUDA step and a CPU step
// agree to the last bits the CPU's own contractions leave.
#include "cuda/cuda_error.h"
#include "cuda/stream.h"
#include "ops/adamw.h"
#include "ops/grad_norm.h"

namespace tach::ops {
namespace {

// norm: null, or the global gradient norm (AdamWClip): not finite, nothing moves; else every
// gradient is read times the clip's coefficient, rounded as the stored product would be.
__global__ void adamw_chunks_kernel(const AdamWTensors::DeviceChunk* chunks, int64_t count, AdamWScalars s,
                                    const double* norm, double max_norm) {
  float scale = 1.0f;
  if (norm) {
    const double total = norm[0];
    if (!isfinite(total)) return;
    if (max_norm > 0) scale = clip_coefficient(total, max_norm);
  }
  for (int64_t k = blockIdx.x; k < count; k += gridDim.x) {
    const AdamWTensors::DeviceChunk c = chunks[k];
    const float keep = c.decay ? s.keep : 1.0f;
    for (int64_t i = threadIdx.x; i < c.n; i += blockDim.x) {
      const float g = __fmul_rn(c.grad[i], scale);
      const float p = __fmul_rn(c.param[i], keep);
      const float m = __fadd_rn(__fmul_rn(s.b1, c.m[i]), __fmul_rn(__fsub_rn(1.0f, s.b1), g));
      const float v = __fadd_rn(__fmul_rn(s.b2, c.v[i]), __fmul_rn(__fmul_rn(__fsub_rn(1.0f, s.b2), g), g));
      const float denom = __fadd_rn(__fmul_rn(__fsqrt_rn(v), s.inv_bc2), s.eps);
      c.m[i] = m;
      c.v[i] = v;
      c.param[i] = __fsub_rn(p, __fdiv_rn(__fmul_rn(s.step_size, m), denom));
    }
  }
}

}  // namespace

void adamw_update_cuda(int device, const AdamWTensors::DeviceChunk* chunks, int64_t count, const AdamWScalars& s,
                       const double* norm, double max_norm) {
  if (count == 0) return;
  const unsigned blocks = unsigned(count < 65535 ? count : 65535);
  adamw_chunks_kernel<<<blocks, 256, 0, cuda::stream(device)>>>(chunks, count, s, norm, max_norm);
  cuda::check_launch("adamw_chunks_kernel");
}

}  // namespace tach::ops
