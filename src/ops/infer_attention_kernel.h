// Which kernels an inference attention call runs on a CUDA device: cuDNN's fused flash attention
// (tensor cores, the model's bf16 or f16; right or left padding, sliding windows and MPNet's bias
// where cuDNN's version takes them) or tach's own kernels in the activation dtype (ops/attention.h
// and ops/causal_attention.h: tiles of 64 query rows, or one block per row with the keys split for
// decoding), and why. The choice is a pure function of the call's case, so that a unit test covers
// every branch on any machine; the ops make it per call, say it in their span's detail (the op
// table's "cudnn fused (bf16)", "tach tiles bf16", "tach rows f32") and note it for the run
// (infer_attention_kernels_since: a bench point's record).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>

#include "tach/device.h"
#include "tach/dtype.h"

namespace tach::ops {

// Where a batch's padding sits in its key mask, as the host saw it: no padding (every key real),
// right padding (each row's real keys first: cuDNN takes each row's length), left padding (a
// generation prompt's: real keys last; cuDNN starts each causal row at its first real token
// through ragged offsets), or unknown (a mask with holes, or one the host did not see): tach's
// kernels.
enum class KeyPadding { unknown, none, right, left };
const char* key_padding_name(KeyPadding p);  // "unknown", "none", "right", "left"

// mask: [B, T] i32 on the host, rows `stride` apart (1 = a real key). Rows of padding only count
// as right padding (their length is 0).
KeyPadding key_padding_of(const int32_t* mask, int64_t B, int64_t T, int64_t stride);

// What the model knows that the attention op cannot see in its f32 operands: the dtype its GEMMs
// compute in (ops::Linear::compute_dtype) and where its batch's padding sits.
struct InferAttentionFacts {
  DType compute = DType::f32;
  KeyPadding padding = KeyPadding::unknown;
};

enum class InferAttentionKernel { tach, cudnn };

// What decides it. The call's sizes and masks, then the environment's facts
// (infer_attention_case fills those).
struct InferAttentionCase {
  bool cuda = false;               // the call runs on a CUDA device
  DType compute = DType::f32;      // the model's GEMM dtype (the activations' when they are bf16 or f16)
  DType activations = DType::f32;  // q's, k's, v's and out's dtype as the op gets them
  // bf16/f16 activations go to cuDNN as they are: each pointer on 16 bytes and each row stride a
  // multiple of 8 elements (cudnn_can_read). f32 ones are packed into a fresh buffer first.
  bool aligned = true;
  bool forced_tach = false;   // TACH_INFER_ATTENTION=tach
  bool cudnn_loads = false;   // cuDNN 9 loads here
  std::string cudnn_missing;  // why it does not, when it does not
  int64_t cudnn_version = 0;  // cudnnGetVersion(): 91002 for 9.10.2
  int sm_major = 0;           // the GPU's compute capability, major (9: Hopper)
  int64_t heads = 0, kv_heads = 0, head_size = 0;
  int64_t queries = 0, keys = 0;  // per sequence; fewer queries than keys: a key/value cache before them
  bool causal = false;
  int64_t window = 0;       // a sliding window of keys (0: none)
  bool score_bias = false;  // a bias added to the scores (MPNet's relative positions)
  KeyPadding padding = KeyPadding::unknown;
};

// Whether cuDNN can read (or write) these operands in place: every pointer (null ones are skipped)
// on a 16-byte boundary and every row stride a multiple of 8 2-byte elements, as it declares
// every tensor 16-byte aligned and loads 16-byte vectors.
bool cudnn_can_read(std::initializer_list<const void*> pointers, std::initializer_list<int64_t> row_strides);

struct InferAttentionChoice {
  InferAttentionKernel kernel = InferAttentionKernel::tach;
  std::string why;           // tach's kernels: why cuDNN's did not run (empty: cuDNN runs)
  DType dtype = DType::f32;  // cuDNN's: the dtype q, k, v and the output are rounded to (bf16 or f16)
  bool cudnn() const { return kernel == InferAttentionKernel::cudnn; }
};

InferAttentionChoice choose_infer_attention(const InferAttentionCase& c);

// TACH_INFER_ATTENTION's value: unset, empty or "auto" (false: choose), "tach" (true: tach's
// kernels everywhere, for an A/B against cuDNN). Anything else is an error naming the choices.
bool infer_attention_forced_to_tach(const char* value);

// The environment's part of a case on `device` for a model computing in `compute`: whether cuDNN
// loads (and its version), and TACH_INFER_ATTENTION. The call's sizes are left for the caller.
InferAttentionCase infer_attention_case(Device device, DType compute);

// The kernel that ran, as the op table names it, with the dtype it read and wrote: "cudnn fused
// (bf16)", "cudnn fused (f16)", "tach tiles f32", "tach rows bf16".
enum class TachAttentionKernel { tiles, rows };
std::string cudnn_attention_words(DType dtype);
std::string tach_attention_words(TachAttentionKernel kernel, DType activations = DType::f32);

// cuDNN can refuse at run time a shape the choice accepted (no engine finalizes the graph on this
// GPU, driver or NVRTC; the execution fails). Runs `cudnn` unless cuDNN refused this shape before;
// returns true when it ran, false when the shape is refused, now (a tach::Error from `cudnn`:
// said once on stderr with cuDNN's reason, and noted for the run) or before: the caller then runs
// tach's kernel. tach::Stopped (Ctrl-C) passes through.
struct InferAttentionShape {
  int device = 0;
  int64_t B = 0, T = 0, H = 0, KVH = 0, D = 0;
  bool causal = false;
  DType dtype = DType::bf16;       // cuDNN's
  DType activations = DType::f32;  // the op's operands' (what tach's kernels then run in)
  int64_t window = 0;              // the sliding window given to cuDNN (0: none)
  bool score_bias = false, left_padded = false;
  // "[4, 128] x 14/2 heads of 64, causal, bf16", with ", window 4096", ", score bias", ", left-padded".
  std::string describe() const;
};
bool run_cudnn_infer_attention(const InferAttentionShape& shape, const std::function<void()>& cudnn);

// The run's record of the kernels inference attention ran on CUDA: a mark taken before (a bench
// point's measured runs), then what ran since, in words, in the order first seen, "; " between:
// "cudnn fused (bf16)", "tach tiles f32 (the model computes in f32)", "tach rows bf16 (one query
// row per sequence: decoding)", and "tach kernels, bf16 for [...] (cuDNN refused it at run time: ...)".
// Empty when no CUDA attention ran. note_infer_attention is the ops' side.
uint64_t infer_attention_mark();
std::string infer_attention_kernels_since(uint64_t mark);
void note_infer_attention(const std::string& words);

}  // namespace tach::ops
