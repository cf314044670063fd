#include "cuda/cuda_error.h"
#include "cuda/flash_attention.cuh"
#include "cuda/row_attention.cuh"

namespace tach::cuda {

namespace {

int multiprocessors() {
  static const int count = [] {
    int device = 0, n = 0;
    cudaGetDevice(&device);
    return cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) == cudaSuccess ? n : 1;
  }();
  return count;
}

bool launch_rows(const FlashAttentionParams& p, int64_t B, int64_t D, cudaStream_t stream) {
  const dim3 grid(unsigned(p.Tq), unsigned(p.H), unsigned(B));
  const int threads = kRowAttentionWarps * 32;
  if (D <= 32) row_attention_kernel<1><<<grid, threads, 0, stream>>>(p, int(D));
  else if (D <= 64) row_attention_kernel<2><<<grid, threads, 0, stream>>>(p, int(D));
  else if (D <= 128) row_attention_kernel<4><<<grid, threads, 0, stream>>>(p, int(D));
  else if (D <= 256) row_attention_kernel<8><<<grid, threads, 0, stream>>>(p, int(D));
  else return false;
  check_launch("row_attention_kernel");
  return true;
}

bool launch_tiles(const FlashAttentionParams& p, int64_t B, int64_t D, cudaStream_t stream) {
  const dim3 grid(unsigned((p.Tq + kFlashQueryRows - 1) / kFlashQueryRows), unsigned(p.H), unsigned(B));
  // Head sizes of the models tach loads (MiniLM 32, BERT/DistilBERT/Qwen2.5-0.5B 64, others up to
  // 128; 4 to 16 for the test fixtures and tiny presets); fewer keys per tile for large heads keep
  // q, the accumulator and the scores in registers.
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

}  // namespace

bool launch_flash_attention(const FlashAttentionParams& p, int64_t B, int64_t D, cudaStream_t stream) {
  if (p.Tq == 0 || B == 0) return true;
  if (p.kernel == 1) return launch_tiles(p, B, D, stream);
  if (p.kernel == 2) return launch_rows(p, B, D, stream);
  // Tiles of 64 query rows share each key they load, but a grid of fewer blocks than two per
  // multiprocessor leaves most of the GPU idle (decoding has one row per head): rows then.
  const int64_t tile_blocks = (p.Tq + kFlashQueryRows - 1) / kFlashQueryRows * p.H * B;
  if (tile_blocks >= 2 * multiprocessors() && launch_tiles(p, B, D, stream)) return true;
  return launch_rows(p, B, D, stream);
}

}  // namespace tach::cuda
