// ops/attention_cudnn.h: tach's f32 activations through cuDNN's bf16 (or, for f16 models' inference,
// f16) fused attention, and bf16/f16 activations handed to it in place. The kernels here only move
// data: f32 -> bf16/f16 packing of q|k|v (and dout, out), bf16/f16 -> f32 unpacking of the output
// and gradients, each row's real keys from the mask, and ops/dropout's keep mask in bf16.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/cuda_error.h"
#include "cuda/cudnn_sdpa.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/attention_cudnn.h"
#include "ops/dropout_mask.h"
#include "tach/error.h"
#include "tach/tensor.h"

namespace tach::ops {
namespace {

constexpr int kThreads = 256;

// f32 rounded to nearest even into the 16-bit type, and back.
__device__ __forceinline__ void round_into(__nv_bfloat16* dst, float x) { *dst = __float2bfloat16_rn(x); }
__device__ __forceinline__ void round_into(__half* dst, float x) { *dst = __float2half_rn(x); }
__device__ __forceinline__ float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float widen(__half x) { return __half2float(x); }

// dst: [rows, HD + 2 KD] bf16 or f16 contiguous = q | k | v, each rounded to nearest even.
// q: [rows, HD] stride ld_q; k, v: rows of `tokens`-row sequences, row t of sequence b at
// b * kv_batch_stride + t * ld_kv ([rows, KD] stride ld_kv when kv_batch_stride = tokens * ld_kv).
template <typename Half>
__global__ void pack_kernel(Half* dst, const float* q, const float* k, const float* v, int64_t rows, int64_t tokens,
                            int64_t HD, int64_t KD, int64_t ld_q, int64_t ld_kv, int64_t kv_batch_stride) {
  const int64_t width = HD + 2 * KD, total = rows * width;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / width, c = e % width;
    const int64_t kv_row = (r / tokens) * kv_batch_stride + (r % tokens) * ld_kv;
    const float x = c < HD ? q[r * ld_q + c] : c < HD + KD ? k[kv_row + c - HD] : v[kv_row + c - HD - KD];
    round_into(dst + e, x);
  }
}

// dst: [rows, cols] bf16 contiguous from src: [rows, cols] f32 of row stride ld.
__global__ void to_bf16_kernel(__nv_bfloat16* dst, const float* src, int64_t rows, int64_t cols, int64_t ld) {
  const int64_t total = rows * cols;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x)
    dst[e] = __float2bfloat16_rn(src[(e / cols) * ld + e % cols]);
}

// dst: [rows, cols] f32 of row stride ld_dst from columns [first, first + cols) of src: [rows, ld_src]
// bf16 or f16.
template <typename Half>
__global__ void to_f32_kernel(float* dst, int64_t ld_dst, const Half* src, int64_t ld_src, int64_t first, int64_t rows,
                              int64_t cols) {
  const int64_t total = rows * cols;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / cols, c = e % cols;
    dst[r * ld_dst + c] = widen(src[r * ld_src + first + c]);
  }
}

// lengths[b]: the real keys of row b (its leading ones; at least 1, as cuDNN takes lengths in [1, T]).
// mask: rows `stride` apart.
__global__ void key_lengths_kernel(int32_t* lengths, const int32_t* mask, int64_t B, int64_t T, int64_t stride) {
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < B; b += int64_t(gridDim.x) * blockDim.x) {
    int64_t L = 0;
    while (L < T && mask[b * stride + L] != 0) ++L;
    lengths[b] = int32_t(L > 0 ? L : 1);
  }
}

// keep: [B, H, T, T] bf16, 1 where ops/dropout keeps element ((b*H + h)*T + i)*T + j, else 0.
__global__ void dropout_keep_kernel(__nv_bfloat16* keep, int64_t total, uint64_t key, uint32_t threshold) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x)
    keep[e] = __float2bfloat16_rn(dropout_keeps_at(key, e, threshold) ? 1.0f : 0.0f);
}

Tensor workspace(int device, const Shape& shape, DType dtype) {
  return Tensor::empty(shape, dtype, Device::cuda(device), MemoryCategory::workspace);
}

// What both directions launch on the way in: q|k|v in bf16 (or f16), each row's real keys, the keep mask.
struct Inputs {
  Tensor qkv, lengths, keep;
  cuda::SdpaArgs args;
  // Columns of the packed rows: bf16 and f16 both take 2 bytes.
  const void* q() const { return qkv.raw(); }
  const void* k() const { return static_cast<const uint16_t*>(qkv.raw()) + args.H * args.D; }
  const void* v() const { return static_cast<const uint16_t*>(qkv.raw()) + (args.H + args.H_kv) * args.D; }
  const int32_t* kv_lengths() const { return lengths.defined() ? lengths.data<int32_t>() : nullptr; }
  const void* dropout_mask() const { return keep.defined() ? keep.raw() : nullptr; }
};

// [B] i32: each row's real keys, from a right-padded mask; undefined without a mask.
Tensor key_lengths(const CudnnAttention& a) {
  if (!a.key_mask) return Tensor();
  Tensor lengths = workspace(a.device, {a.B}, DType::i32);
  key_lengths_kernel<<<cuda::grid_for(a.B, 128), 128, 0, cuda::stream(a.device)>>>(
      lengths.data<int32_t>(), a.key_mask, a.B, a.T, a.mask_stride > 0 ? a.mask_stride : a.T);
  cuda::check_launch("key_lengths_kernel");
  return lengths;
}

Inputs prepare(const CudnnAttention& a) {
  tach::check(a.activations == DType::f32,
              "cuDNN's attention packs f32 q, k and v; got " + std::string(dtype_name(a.activations)));
  const cudaStream_t stream = cuda::stream(a.device);
  const auto* q = static_cast<const float*>(a.q);
  const auto* k = static_cast<const float*>(a.k);
  const auto* v = static_cast<const float*>(a.v);
  const int64_t N = a.B * a.T, HD = a.H * a.D, KD = a.KVH * a.D, width = HD + 2 * KD;
  Inputs in;
  in.args.B = a.B, in.args.T = a.T, in.args.H = a.H, in.args.H_kv = a.KVH, in.args.D = a.D;
  in.args.ld_in = in.args.ld_kv = width;
  in.args.ld_out = HD;
  in.args.scale = a.scale, in.args.causal = a.causal, in.args.dropout_p = a.dropout_p;
  const bool f16 = a.dtype == DType::f16;
  in.args.dtype = f16 ? cuda::SdpaDType::f16 : cuda::SdpaDType::bf16;
  in.qkv = workspace(a.device, {N, width}, f16 ? DType::f16 : DType::bf16);
  const int64_t kv_batch_stride = a.kv_batch_stride > 0 ? a.kv_batch_stride : a.T * a.ld_kv;
  const unsigned grid = cuda::grid_for(N * width, kThreads);
  if (f16)
    pack_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(in.qkv.raw()), q, k, v, N, a.T, HD, KD, a.ld_q,
                                               a.ld_kv, kv_batch_stride);
  else
    pack_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(in.qkv.raw()), q, k, v, N, a.T, HD, KD,
                                               a.ld_q, a.ld_kv, kv_batch_stride);
  cuda::check_launch("pack_kernel");
  if (!a.left_padded) in.lengths = key_lengths(a);
  if (a.dropout_p > 0.0f) {
    const int64_t total = a.B * a.H * a.T * a.T;
    in.keep = workspace(a.device, {a.B, a.H, a.T, a.T}, DType::bf16);
    dropout_keep_kernel<<<cuda::grid_for(total, kThreads), kThreads, 0, stream>>>(
        static_cast<__nv_bfloat16*>(in.keep.raw()), total, a.dropout_key, dropout_threshold(a.dropout_p));
    cuda::check_launch("dropout_keep_kernel");
  }
  return in;
}

Tensor to_bf16(int device, const float* src, int64_t rows, int64_t cols, int64_t ld) {
  Tensor t = workspace(device, {rows, cols}, DType::bf16);
  to_bf16_kernel<<<cuda::grid_for(rows * cols, kThreads), kThreads, 0, cuda::stream(device)>>>(
      static_cast<__nv_bfloat16*>(t.raw()), src, rows, cols, ld);
  cuda::check_launch("to_bf16_kernel");
  return t;
}

// src: bf16 or f16.
void to_f32(int device, float* dst, int64_t ld_dst, const Tensor& src, int64_t first, int64_t cols) {
  const int64_t rows = src.size(0);
  const unsigned grid = cuda::grid_for(rows * cols, kThreads);
  if (src.dtype() == DType::f16)
    to_f32_kernel<<<grid, kThreads, 0, cuda::stream(device)>>>(dst, ld_dst, static_cast<const __half*>(src.raw()),
                                                               src.size(1), first, rows, cols);
  else
    to_f32_kernel<<<grid, kThreads, 0, cuda::stream(device)>>>(
        dst, ld_dst, static_cast<const __nv_bfloat16*>(src.raw()), src.size(1), first, rows, cols);
  cuda::check_launch("to_f32_kernel");
}

}  // namespace

void cudnn_attention_forward(const CudnnAttention& a, float* out, float* stats) {
  const Inputs in = prepare(a);
  const int64_t N = a.B * a.T, HD = a.H * a.D;
  const Tensor o = workspace(a.device, {N, HD}, DType::bf16);
  cuda::sdpa_forward(a.device, in.args, o.raw(), stats, in.q(), in.k(), in.v(), in.kv_lengths(), in.dropout_mask());
  to_f32(a.device, out, a.ld_out, o, 0, HD);
}

namespace {

// dst [1, H, T, T] = table[bucket[i*T + j] * H + h] rounded to the half type: MPNet's relative
// position bias, the ScoreBias tach's kernels look up per score, as one tensor for cuDNN.
template <typename Half>
__global__ void score_bias_kernel(Half* dst, const float* table, const int32_t* bucket, int64_t H, int64_t T) {
  const int64_t total = H * T * T;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t h = e / (T * T), ij = e % (T * T);
    round_into(dst + e, table[int64_t(bucket[ij]) * H + h]);
  }
}

// A left-padded mask [B, T] (rows `stride` apart): lengths[b], the row's real tokens (at least 1),
// and offsets [3, B + 1]: the element offset of row b's first real token in q (rows ld_q, batches
// q_batch apart), in k and v (ld_kv, kv_batch) and in out (ld_out, out_batch); entry B is past
// the last batch row.
__global__ void left_padding_kernel(int32_t* lengths, int32_t* offsets, const int32_t* mask, int64_t B, int64_t T,
                                    int64_t stride, int64_t ld_q, int64_t q_batch, int64_t ld_kv, int64_t kv_batch,
                                    int64_t ld_out, int64_t out_batch) {
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b <= B; b += int64_t(gridDim.x) * blockDim.x) {
    int64_t first = 0;
    if (b < B)
      while (first < T - 1 && mask[b * stride + first] == 0) ++first;
    if (b < B) lengths[b] = int32_t(T - first);
    offsets[b] = int32_t(b * q_batch + first * ld_q);
    offsets[(B + 1) + b] = int32_t(b * kv_batch + first * ld_kv);
    offsets[2 * (B + 1) + b] = int32_t(b * out_batch + first * ld_out);
  }
}

// The inference graph's masks for a call: each row's real keys (right padding: its length; left
// padding: its length and the ragged offsets that start it at its first real token) and the
// score bias, laid out for q, k, v and out read with these strides (elements).
struct InferenceMasks {
  Tensor lengths, offsets, bias;
  cuda::SdpaMaskInputs inputs;
  const int32_t* kv_lengths() const { return lengths.defined() ? lengths.data<int32_t>() : nullptr; }
};

InferenceMasks inference_masks(const CudnnAttention& a, cuda::SdpaArgs& args, int64_t out_batch) {
  InferenceMasks m;
  const cudaStream_t stream = cuda::stream(a.device);
  args.window = a.window;
  args.bias = a.bias_table != nullptr;
  args.ragged = a.left_padded;
  if (a.left_padded) {
    tach::check(a.key_mask != nullptr, "cuDNN's attention: left padding needs the key mask");
    const int64_t q_batch = a.T * args.ld_in, kv_batch = args.kv_batch();
    // The ragged offsets are i32 elements.
    tach::check(std::max({a.B * q_batch, a.B * kv_batch, a.B * out_batch}) < (int64_t(1) << 31),
                "cuDNN's attention: a left-padded batch of more than 2^31 elements has no i32 ragged offsets");
    m.lengths = workspace(a.device, {a.B}, DType::i32);
    m.offsets = workspace(a.device, {3, a.B + 1}, DType::i32);
    int32_t* offsets = m.offsets.data<int32_t>();
    left_padding_kernel<<<cuda::grid_for(a.B + 1, 128), 128, 0, stream>>>(
        m.lengths.data<int32_t>(), offsets, a.key_mask, a.B, a.T, a.mask_stride > 0 ? a.mask_stride : a.T, args.ld_in,
        q_batch, args.kv_stride(), kv_batch, args.ld_out, out_batch);
    cuda::check_launch("left_padding_kernel");
    m.inputs.q_offsets = offsets, m.inputs.kv_offsets = offsets + (a.B + 1);
    m.inputs.out_offsets = offsets + 2 * (a.B + 1);
  } else {
    m.lengths = key_lengths(a);
  }
  if (a.bias_table) {
    const bool f16 = a.dtype == DType::f16;
    m.bias = workspace(a.device, {1, a.H, a.T, a.T}, f16 ? DType::f16 : DType::bf16);
    const unsigned grid = cuda::grid_for(a.H * a.T * a.T, kThreads);
    if (f16)
      score_bias_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(m.bias.raw()), a.bias_table, a.bias_bucket,
                                                       a.H, a.T);
    else
      score_bias_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(m.bias.raw()), a.bias_table,
                                                       a.bias_bucket, a.H, a.T);
    cuda::check_launch("score_bias_kernel");
    m.inputs.bias = m.bias.raw();
  }
  return m;
}

// Left padding: cuDNN writes each row from its first real token on; the rows of padding before
// it get zeros (tach's causal kernels give a row that sees no real key zeros). out: rows of
// `row_bytes` every `pitch` bytes, all B*T of them.
void zero_rows(int device, void* out, size_t pitch, size_t row_bytes, int64_t rows) {
  cuda::check(cudaMemset2DAsync(out, pitch, 0, row_bytes, size_t(rows), cuda::stream(device)),
              "cudaMemset2DAsync (left padding's rows)");
}

// q, k, v and out already in cuDNN's dtype: the graph reads and writes them where they are (the
// fused q|k|v rows, a key/value cache's rows), no packing or conversion kernel.
void inference_in_place(const CudnnAttention& a, void* out) {
  cuda::SdpaArgs args;
  args.B = a.B, args.T = a.T, args.H = a.H, args.H_kv = a.KVH, args.D = a.D;
  args.ld_in = a.ld_q, args.ld_kv = a.ld_kv, args.ld_out = a.ld_out;
  args.kv_batch_stride = a.kv_batch_stride;
  args.scale = a.scale, args.causal = a.causal;
  args.dtype = a.dtype == DType::f16 ? cuda::SdpaDType::f16 : cuda::SdpaDType::bf16;
  const InferenceMasks masks = inference_masks(a, args, a.T * a.ld_out);
  if (a.left_padded) zero_rows(a.device, out, size_t(a.ld_out) * 2, size_t(a.H * a.D) * 2, a.B * a.T);
  cuda::sdpa_forward(a.device, args, out, nullptr, a.q, a.k, a.v, masks.kv_lengths(), nullptr, masks.inputs);
}

}  // namespace

void cudnn_attention_inference(const CudnnAttention& a, void* out) {
  tach::check(a.dropout_p == 0.0f, "cuDNN's inference attention has no dropout");
  if (a.activations == a.dtype) return inference_in_place(a, out);
  Inputs in = prepare(a);
  const int64_t N = a.B * a.T, HD = a.H * a.D;
  const InferenceMasks masks = inference_masks(a, in.args, a.T * HD);
  const Tensor o = workspace(a.device, {N, HD}, in.qkv.dtype());
  if (a.left_padded) zero_rows(a.device, o.raw(), size_t(HD) * 2, size_t(HD) * 2, N);
  cuda::sdpa_forward(a.device, in.args, o.raw(), nullptr, in.q(), in.k(), in.v(), masks.kv_lengths(), nullptr,
                     masks.inputs);
  to_f32(a.device, static_cast<float*>(out), a.ld_out, o, 0, HD);
}

void cudnn_attention_backward(const CudnnAttention& a, float* dq, float* dk, float* dv, const float* dout,
                              const float* out, const float* stats) {
  const Inputs in = prepare(a);
  const int64_t N = a.B * a.T, HD = a.H * a.D, KD = a.KVH * a.D;
  // out holds the forward's bf16 O exactly (an f32 copy of it), so rounding it again gives O back.
  const Tensor o = to_bf16(a.device, out, N, HD, a.ld_out);
  const Tensor d_o = to_bf16(a.device, dout, N, HD, a.ld_out);
  const Tensor grads = workspace(a.device, {N, HD + 2 * KD}, DType::bf16);
  auto* g = static_cast<__nv_bfloat16*>(grads.raw());
  cuda::sdpa_backward(a.device, in.args, g, g + HD, g + HD + KD, d_o.raw(), o.raw(), stats, in.q(), in.k(), in.v(),
                      in.kv_lengths(), in.dropout_mask());
  to_f32(a.device, dq, a.ld_q, grads, 0, HD);
  to_f32(a.device, dk, a.ld_kv, grads, HD, KD);
  to_f32(a.device, dv, a.ld_kv, grads, HD + KD, KD);
}

}  // namespace tach::ops
