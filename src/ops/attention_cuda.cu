// Encoder attention on the GPU: the fused online-softmax kernel, bidirectional, with MPNet's bias.
#include "cuda/flash_attention.cuh"
#include "cuda/stream.h"
#include "ops/attention.h"
#include "tach/error.h"

namespace tach::ops {

TachAttentionKernel attention_forward_cuda(int device, float* out, const float* q, const float* k, const float* v,
                                           const int32_t* mask, int64_t B, int64_t T, int64_t H, int64_t D,
                                           int64_t ld_in, int64_t ld_out, float scale, const ScoreBias& bias) {
  cuda::FlashAttentionParams p;
  p.out = out, p.q = q, p.k = k, p.v = v, p.key_mask = mask;
  p.Tq = T, p.Tk = T, p.past = 0, p.H = H, p.KVH = H;
  p.q_batch_stride = T * ld_in, p.ld_q = ld_in;
  p.kv_batch_stride = T * ld_in, p.ld_kv = ld_in;
  p.out_batch_stride = T * ld_out, p.ld_out = ld_out;
  p.mask_stride = T, p.scale = scale, p.causal = false;
  p.bias_bucket = bias.bucket, p.bias_table = bias.table;
  p.kernel = int(cuda_attention_kernel());
  const cuda::FlashAttentionLaunch ran = cuda::launch_flash_attention(device, p, B, D);
  check(ran != cuda::FlashAttentionLaunch::none,
        "attention on CUDA: head size " + std::to_string(D) + " has no kernel (sizes up to 256 do)");
  return ran == cuda::FlashAttentionLaunch::tiles ? TachAttentionKernel::tiles : TachAttentionKernel::rows;
}

}  // namespace tach::ops
