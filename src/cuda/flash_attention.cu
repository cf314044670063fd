#include "cuda/cuda_error.h"
#include "cuda/flash_attention.cuh"

namespace tach::cuda {

bool launch_flash_attention(const FlashAttentionParams& p, int64_t B, int64_t D, cudaStream_t stream) {
  if (p.Tq == 0 || B == 0) return true;
  const dim3 grid(unsigned((p.Tq + kFlashQueryRows - 1) / kFlashQueryRows), unsigned(p.H), unsigned(B));
  // Head sizes of the models tach loads (MiniLM 32, BERT/DistilBERT/Qwen2.5-0.5B 64, others up to
  // 128; 4 to 16 for the test fixtures and tiny presets); fewer keys per tile for large heads keep q, the accumulator and the scores in registers.
  switch (D) {
    case 4: flash_attention_kernel<4, 32><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 8: flash_attention_kernel<8, 32><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 16: flash_attention_kernel<16, 32><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 32: flash_attention_kernel<32, 32><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 64: flash_attention_kernel<64, 32><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 80: flash_attention_kernel<80, 16><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 96: flash_attention_kernel<96, 16><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 128: flash_attention_kernel<128, 16><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    default: return false;
  }
  check_launch("flash_attention_kernel");
  return true;
}

}  // namespace tach::cuda
