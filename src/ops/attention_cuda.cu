// Encoder attention on the GPU: the fused online-softmax kernel, bidirectional, with MPNet's bias,
// in f32, bf16 or f16 activations.
#include "cuda/cuda_error.h"
#include "cuda/flash_attention.cuh"
#include "cuda/stream.h"
#include "ops/attention.h"
#include "tach/error.h"

namespace tach::ops {

TachAttentionKernel attention_forward_cuda(int device, DType dtype, void* out, const void* q, const void* k,
                                           const void* v, const int32_t* mask, int64_t B, int64_t T, int64_t H,
                                           int64_t D, int64_t ld_in, int64_t ld_out, float scale, const ScoreBias& bias,
                                           int64_t Tq) {
  if (Tq < 0) Tq = T;
  cuda::FlashAttentionParams p;
  p.out = out, p.q = q, p.k = k, p.v = v, p.key_mask = mask, p.dtype = dtype;
  p.Tq = Tq, p.Tk = T, p.past = 0, p.H = H, p.KVH = H;
  p.q_batch_stride = T * ld_in, p.ld_q = ld_in;
  p.kv_batch_stride = T * ld_in, p.ld_kv = ld_in;
  p.out_batch_stride = Tq * ld_out, p.ld_out = ld_out;
  p.mask_stride = T, p.scale = scale, p.causal = false;
  p.bias_bucket = bias.bucket, p.bias_table = bias.table;
  p.kernel = int(cuda_attention_kernel());
  const cuda::FlashAttentionLaunch ran = cuda::launch_flash_attention(device, p, B, D);
  check(ran != cuda::FlashAttentionLaunch::none,
        "attention on CUDA: head size " + std::to_string(D) + " has no kernel (sizes up to 256 do)");
  return ran == cuda::FlashAttentionLaunch::tiles ? TachAttentionKernel::tiles : TachAttentionKernel::rows;
}

void copy_first_rows_cuda(int device, DType dtype, void* dst, const void* src, int64_t B, int64_t rows, int64_t T,
                          int64_t C) {
  // Each sequence's first rows are one contiguous run: B runs of rows*C elements, T*C apart.
  const size_t element = dtype_bytes(dtype, 1);
  cuda::check(cudaMemcpy2DAsync(dst, size_t(rows * C) * element, src, size_t(T * C) * element,
                                size_t(rows * C) * element, size_t(B), cudaMemcpyDeviceToDevice, cuda::stream(device)),
              "cudaMemcpy2DAsync (attention's first query rows)");
}

}  // namespace tach::ops
