#include <algorithm>

#include "cuda/cuda_error.h"
#include "cuda/flash_attention.cuh"
#include "cuda/row_attention.cuh"
#include "cuda/scratch.h"
#include "cuda/stream.h"
#include "tach/error.h"

#include <string>

namespace tach::cuda {

namespace {

// Keys one split should have at the least: 2 per warp. A warp walks its keys one dependent load
// after another (about a microsecond each on an H100), so fewer keys per warp is what shortens
// a decoding step's attention; the merge costs one small kernel.
constexpr int64_t kKeysPerSplit = 2 * kRowAttentionWarps;
constexpr int64_t kMaxSplits = 64;

// How many blocks share each row's keys: up to four blocks per multiprocessor, no more than the
// keys fill. Causal rows only (a bidirectional row of padding only needs every key in one block).
int row_splits(int device, const FlashAttentionParams& p, int64_t B) {
  const int64_t blocks = p.Tq * p.H * B;
  if (!p.causal || p.bias_bucket || blocks >= multiprocessors(device)) return 1;
  const int64_t by_keys = (p.past + p.Tq + kKeysPerSplit - 1) / kKeysPerSplit;
  const int64_t by_grid = (4 * multiprocessors(device) + blocks - 1) / blocks;
  return int(std::max<int64_t>(1, std::min({by_keys, by_grid, kMaxSplits})));
}

template <typename T>
FlashAttentionLaunch launch_rows(int device, FlashAttentionParams p, int64_t B, int64_t D, cudaStream_t stream) {
  p.splits = row_splits(device, p, B);
  if (p.splits > 1)
    p.partials = static_cast<float*>(
        scratch(device, ScratchUse::attention_partials, size_t(B * p.H * p.Tq * p.splits * (D + 2)) * sizeof(float)));
  const dim3 grid(unsigned(p.Tq * p.splits), unsigned(p.H), unsigned(B));
  const int threads = kRowAttentionWarps * 32;
  if (D <= 32) row_attention_kernel<T, 1><<<grid, threads, 0, stream>>>(p, int(D));
  else if (D <= 64) row_attention_kernel<T, 2><<<grid, threads, 0, stream>>>(p, int(D));
  else if (D <= 128) row_attention_kernel<T, 4><<<grid, threads, 0, stream>>>(p, int(D));
  else if (D <= 256) row_attention_kernel<T, 8><<<grid, threads, 0, stream>>>(p, int(D));
  else return FlashAttentionLaunch::none;
  check_launch("row_attention_kernel");
  if (p.splits > 1) {
    merge_row_partials<T><<<dim3(unsigned(p.Tq), unsigned(p.H), unsigned(B)), 64, 0, stream>>>(p, int(D));
    check_launch("merge_row_partials");
  }
  return FlashAttentionLaunch::rows;
}

template <typename T>
FlashAttentionLaunch launch_tiles(const FlashAttentionParams& p, int64_t B, int64_t D, cudaStream_t stream) {
  const dim3 grid(unsigned((p.Tq + kFlashQueryRows - 1) / kFlashQueryRows), unsigned(p.H), unsigned(B));
  // Head sizes of the models tach loads (MiniLM 32, BERT/DistilBERT/Qwen2.5-0.5B 64, others up to
  // 128; 4 to 16 for the test fixtures and tiny presets); fewer keys per tile for large heads keep
  // q, the accumulator and the scores in registers.
  switch (D) {
    case 4: flash_attention_kernel<T, 4, 32><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 8: flash_attention_kernel<T, 8, 32><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 16: flash_attention_kernel<T, 16, 32><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 32: flash_attention_kernel<T, 32, 32><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 64: flash_attention_kernel<T, 64, 32><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 80: flash_attention_kernel<T, 80, 16><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 96: flash_attention_kernel<T, 96, 16><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    case 128: flash_attention_kernel<T, 128, 16><<<grid, kFlashQueryRows, 0, stream>>>(p); break;
    default: return FlashAttentionLaunch::none;
  }
  check_launch("flash_attention_kernel");
  return FlashAttentionLaunch::tiles;
}

// The launcher for one element type T of q, k, v and out.
template <typename T>
FlashAttentionLaunch launch_typed(int device, const FlashAttentionParams& p, int64_t B, int64_t D) {
  cudaStream_t stream = cuda::stream(device);
  if (p.device_past) {  // the length is on the device: only the rows kernel reads it there
    tach::check(p.causal && !p.bias_bucket, "attention with the cache length on the device: causal rows only");
    return launch_rows<T>(device, p, B, D, stream);
  }
  if (p.kernel == 1) return launch_tiles<T>(p, B, D, stream);
  if (p.kernel == 2) return launch_rows<T>(device, p, B, D, stream);
  // Tiles of 64 query rows share each key they load, but a grid of fewer blocks than two per
  // multiprocessor leaves most of the GPU idle (decoding has one row per head): rows then.
  const int64_t tile_blocks = (p.Tq + kFlashQueryRows - 1) / kFlashQueryRows * p.H * B;
  if (tile_blocks >= 2 * multiprocessors(device)) {
    const FlashAttentionLaunch tiles = launch_tiles<T>(p, B, D, stream);
    if (tiles != FlashAttentionLaunch::none) return tiles;
  }
  return launch_rows<T>(device, p, B, D, stream);
}

}  // namespace

FlashAttentionLaunch launch_flash_attention(int device, FlashAttentionParams p, int64_t B, int64_t D) {
  if (p.Tq == 0 || B == 0) return FlashAttentionLaunch::rows;  // nothing to run: no kernel is missing
  switch (p.dtype) {
    case DType::f32: return launch_typed<float>(device, p, B, D);
    case DType::bf16: return launch_typed<__nv_bfloat16>(device, p, B, D);
    case DType::f16: return launch_typed<__half>(device, p, B, D);
    default:
      throw Error("attention on CUDA: q, k, v and out must be f32, bf16 or f16, got " +
                  std::string(dtype_name(p.dtype)));
  }
}

}  // namespace tach::cuda
