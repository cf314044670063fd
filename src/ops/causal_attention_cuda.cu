// Grouped-query attention on the GPU, causal (decoders) or bidirectional (ModernBERT), windowed or
// not: the fused online-softmax kernel, padded keys left out, in f32, bf16 or f16 activations (a.dtype).
#include "cuda/flash_attention.cuh"
#include "cuda/stream.h"
#include "ops/attention.h"
#include "ops/causal_attention.h"
#include "tach/error.h"

namespace tach::ops {

TachAttentionKernel causal_attention_forward_cuda(int device, void* out, const void* q, const void* k, const void* v,
                                                  const int32_t* key_mask, const CausalAttentionArgs& a) {
  cuda::FlashAttentionParams p;
  p.out = out, p.q = q, p.k = k, p.v = v, p.key_mask = key_mask, p.dtype = a.dtype;
  p.Tq = a.Tq, p.Tk = a.past + a.Tq, p.past = a.past, p.H = a.H, p.KVH = a.KVH;
  p.q_batch_stride = a.Tq * a.ld_q, p.ld_q = a.ld_q;
  p.kv_batch_stride = a.batch_stride_kv, p.ld_kv = a.ld_kv;
  p.out_batch_stride = a.Tq * a.ld_out, p.ld_out = a.ld_out;
  p.mask_stride = a.mask_stride, p.scale = a.scale, p.causal = a.causal, p.window = a.window;
  p.device_past = a.device_past;
  p.kernel = int(cuda_attention_kernel());
  const cuda::FlashAttentionLaunch ran = cuda::launch_flash_attention(device, p, a.B, a.D);
  check(ran != cuda::FlashAttentionLaunch::none,
        "causal_attention on CUDA: head size " + std::to_string(a.D) + " has no kernel (sizes up to 256 do)");
  return ran == cuda::FlashAttentionLaunch::tiles ? TachAttentionKernel::tiles : TachAttentionKernel::rows;
}

}  // namespace tach::ops
